//! Processor sharing of a server's cores among its running tasks
//! (thesis §6.2.4.1, eq. 6.2).
//!
//! A server with `N_c` cores of speed `s` running `N_r` tasks gives each task
//! the rate `s · min(1, N_c / N_r)`: the cores are shared equally, but a task
//! runs on at most one core. A task's work is the time it needs alone on one
//! core of speed 1, so it finishes when the integral of its rate reaches its
//! work (`Δ_C = ∫ Γ_c(t) dt`). Rates change only when a task starts or ends,
//! so progress is advanced exactly between those events, and the next
//! completion is the earliest `remaining / rate`.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::model::TaskId;

#[derive(Clone, Debug)]
pub struct CpuShare {
    cores: u32,
    speed: f64,
    /// Time up to which `remaining` is accurate.
    last: SimTime,
    /// Work left per running task, in ns on a core of speed 1.
    remaining: BTreeMap<TaskId, f64>,
}

impl CpuShare {
    pub fn new(cores: u32, speed: f64) -> Self {
        CpuShare {
            cores: cores.max(1),
            speed,
            last: 0,
            remaining: BTreeMap::new(),
        }
    }

    /// Rate of each task when `n` run (eq. 6.2), in work-ns per ns.
    pub fn rate(&self, n: usize) -> f64 {
        if n == 0 {
            return self.speed;
        }
        self.speed * (f64::from(self.cores) / n as f64).min(1.0)
    }

    pub fn running(&self) -> usize {
        self.remaining.len()
    }

    /// Cores in use: one per task, up to all of them.
    pub fn busy_cores(&self) -> u32 {
        (self.remaining.len() as u32).min(self.cores)
    }

    pub fn cores(&self) -> u32 {
        self.cores
    }

    /// Starts `task` with `work` ns of work at `now`.
    pub fn add(&mut self, now: SimTime, task: TaskId, work: u64) {
        self.advance(now);
        self.remaining.insert(task, work as f64);
    }

    /// Stops `task` at `now`; returns the work it had left.
    pub fn remove(&mut self, now: SimTime, task: TaskId) -> Option<f64> {
        self.advance(now);
        self.remaining.remove(&task)
    }

    /// When the next task finishes at the current rates, if any runs.
    pub fn next_finish(&self) -> Option<SimTime> {
        let least = self.remaining.values().copied().reduce(f64::min)?;
        let rate = self.rate(self.remaining.len());
        let ns = libm::ceil(least.max(0.0) / rate);
        Some(self.last.saturating_add(if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        }))
    }

    /// Removes and returns, in id order, the tasks whose work is done by `now`
    /// (less than one nanosecond of running left: the clock's resolution).
    pub fn finished(&mut self, now: SimTime) -> Vec<TaskId> {
        self.advance(now);
        let rate = self.rate(self.remaining.len());
        let done: Vec<TaskId> = self
            .remaining
            .iter()
            .filter(|&(_, &left)| left < rate)
            .map(|(&id, _)| id)
            .collect();
        for id in &done {
            self.remaining.remove(id);
        }
        done
    }

    fn advance(&mut self, now: SimTime) {
        if now > self.last && !self.remaining.is_empty() {
            let progress = self.rate(self.remaining.len()) * (now - self.last) as f64;
            for left in self.remaining.values_mut() {
                *left -= progress;
            }
        }
        self.last = self.last.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Runs the share until every task has finished; returns (task, finish time).
    fn finish_times(
        mut share: CpuShare,
        arrivals: &[(SimTime, TaskId, u64)],
    ) -> Vec<(TaskId, SimTime)> {
        let mut pending: Vec<_> = arrivals.to_vec();
        pending.reverse();
        let mut out = Vec::new();
        loop {
            let next_arrival = pending.last().map(|a| a.0);
            match (share.next_finish(), next_arrival) {
                (None, None) => return out,
                (Some(f), a) if a.is_none_or(|a| f <= a) => {
                    out.extend(share.finished(f).into_iter().map(|id| (id, f)));
                }
                _ => {
                    let (t, id, work) = pending.pop().expect("an arrival is pending");
                    share.add(t, id, work);
                }
            }
        }
    }

    #[test]
    fn two_tasks_on_one_core_share_it_as_eq_6_2_says() {
        // together from 0: each at rate 1/2, both done at 200 s
        let both = finish_times(CpuShare::new(1, 1.0), &[(0, 1, 100 * S), (0, 2, 100 * S)]);
        assert_eq!(both, vec![(1, 200 * S), (2, 200 * S)]);
        // the second starts at 50 s: task 1 has 50 s left at rate 1/2 → 150 s;
        // task 2 then has 50 s left alone at rate 1 → 200 s
        let staggered = finish_times(
            CpuShare::new(1, 1.0),
            &[(0, 1, 100 * S), (50 * S, 2, 100 * S)],
        );
        assert_eq!(staggered, vec![(1, 150 * S), (2, 200 * S)]);
    }

    #[test]
    fn a_task_never_gets_more_than_one_core() {
        let share = CpuShare::new(8, 1.0);
        assert_eq!(share.rate(1), 1.0);
        assert_eq!(share.rate(8), 1.0);
        assert_eq!(share.rate(16), 0.5);
        // eq. 6.1: with N_s slots full the task takes N_s/N_c times its work
        let full = finish_times(
            CpuShare::new(2, 1.0),
            &[
                (0, 1, 10 * S),
                (0, 2, 10 * S),
                (0, 3, 10 * S),
                (0, 4, 10 * S),
            ],
        );
        assert!(full.iter().all(|&(_, t)| t == 20 * S), "{full:?}");
    }

    #[test]
    fn faster_cores_finish_sooner() {
        let fast = finish_times(CpuShare::new(1, 2.0), &[(0, 1, 100 * S)]);
        assert_eq!(fast, vec![(1, 50 * S)]);
    }

    #[test]
    fn removing_a_task_returns_its_remaining_work_and_speeds_up_the_rest() {
        let mut share = CpuShare::new(1, 1.0);
        share.add(0, 1, 100 * S);
        share.add(0, 2, 100 * S);
        let left = share.remove(40 * S, 2).unwrap();
        assert!((left - 80.0 * S as f64).abs() < 1.0);
        assert_eq!(share.next_finish(), Some(120 * S));
        assert_eq!(share.busy_cores(), 1);
    }
}
