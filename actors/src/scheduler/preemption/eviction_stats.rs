//! Per-task eviction statistics of the slot stages (thesis Table 7.3,
//! Table 9.1).

use crate::kernel::Metrics;
use crate::task::Task;

/// Per-task eviction statistics (thesis Table 7.3, Table 9.1), from the
/// evicted tasks that come back to the scheduler: each carries its counts.
#[derive(Clone, Debug, Default)]
pub struct EvictionStats {
    evicted_tasks: u64,
    max_evictions: u32,
    priority_evicted_tasks: u64,
    max_priority_evictions: u32,
}

impl EvictionStats {
    /// Records a task just evicted (its counters include this eviction).
    pub fn record(&mut self, task: &Task, priority_eviction: bool) {
        if task.evictions == 1 {
            self.evicted_tasks += 1;
        }
        if priority_eviction && task.priority_evictions == 1 {
            self.priority_evicted_tasks += 1;
        }
        self.max_evictions = self.max_evictions.max(task.evictions);
        self.max_priority_evictions = self.max_priority_evictions.max(task.priority_evictions);
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("evicted_tasks", self.evicted_tasks);
        out.add("priority_evicted_tasks", self.priority_evicted_tasks);
        out.add("evictions_per_task_max", u64::from(self.max_evictions));
        out.add(
            "priority_evictions_per_task_max",
            u64::from(self.max_priority_evictions),
        );
    }
}
