//! Distributed runs under a placement other than `annealing` (ASPLOS'16
//! §5, issue 22): a run's units are tasks of `unit_cores` slots each that
//! the placement stage places one by one, on distinct hosts (a unit never
//! goes where its run already has one: Figure 5's one unit per node), and
//! the run starts only when every unit is placed (gang start, as the
//! annealer places a run whole). A run waits in the admission stage as its
//! unit 0; the others wait here.
//!
//! A unit that comes back unfinished (killed for a primary tenant,
//! harvesting §5.3, or evicted) ends its run's attempt: the run cannot
//! progress without it (its coordinator's rate needs every unit, §3.2), so
//! its other units are stopped, and once all are back the run queues again
//! from the start, as YARN's application master re-starts killed tasks
//! (harvesting §5.1). That rule is `run_ledger.rs`'s, shared with
//! `annealing`.

use std::collections::BTreeMap;

use super::run_ledger::{Ended, RunLedger};
use crate::kernel::{ActorId, Metrics};
use crate::task::{Task, TaskId};

/// What the scheduler must do after a unit came back unfinished.
#[derive(Debug, Default, PartialEq)]
pub struct GangLost {
    /// The run's other units to stop: (server, task, attempt).
    pub stop: Vec<(ActorId, TaskId, u32)>,
    /// The run's unit 0, to queue again (the run is whole again).
    pub requeue: Option<Task>,
    /// How many units go back to the queue with it.
    pub requeued: usize,
}

/// The distributed runs of a scheduler whose placement is not `annealing`.
#[derive(Debug, Default)]
pub struct Gangs {
    /// Units of runs not complete yet, by run.
    arriving: BTreeMap<TaskId, Vec<Task>>,
    /// Runs queued in the admission stage: unit 0's task → the others.
    queued: BTreeMap<TaskId, Vec<Task>>,
    /// Placed runs' attempts ([`RunLedger`]).
    ledger: RunLedger,
}

impl Gangs {
    /// A unit arrives: once its run is complete, returns its unit 0, to
    /// queue for the run.
    pub fn arrive(&mut self, task: Task) -> Option<Task> {
        let d = task.dist?;
        let units = self.arriving.entry(d.run).or_default();
        units.push(task);
        if units.len() < usize::from(d.units) {
            return None;
        }
        let units = self.arriving.remove(&d.run)?;
        self.queue(units)
    }

    /// Queues a run's units as its unit 0 (returned, for the admission
    /// stage), the others waiting here.
    fn queue(&mut self, mut units: Vec<Task>) -> Option<Task> {
        units.sort_by_key(|t| t.dist.map_or(0, |d| d.unit));
        if units.is_empty() {
            return None;
        }
        let first = units.remove(0);
        self.queued.insert(first.id, units);
        Some(first)
    }

    /// The threads of the other units of every queued run, by unit 0.
    pub fn queued_parts(&self) -> BTreeMap<TaskId, Vec<u32>> {
        self.queued
            .iter()
            .map(|(&id, rest)| (id, rest.iter().map(|t| t.cores).collect()))
            .collect()
    }

    /// The other units of the run whose unit 0 is `task`, if it is one.
    pub fn rest(&self, task: TaskId) -> Option<&[Task]> {
        self.queued.get(&task).map(Vec::as_slice)
    }

    /// Hands the other units of the run whose unit 0 is `task` over to a
    /// stage that queues runs whole itself (a slot stage,
    /// `preemption/gang.rs`): they no longer wait here.
    pub fn take_rest(&mut self, task: TaskId) -> Option<Vec<Task>> {
        self.queued.remove(&task)
    }

    /// The attempt the run of `run` starts as.
    pub fn attempt(&self, run: TaskId) -> u32 {
        self.ledger.attempt(run)
    }

    /// The run whose unit 0 is `first` started: each unit's task and
    /// server, by unit.
    pub fn started(&mut self, first: TaskId, run: TaskId, units: Vec<(TaskId, ActorId)>) {
        self.queued.remove(&first);
        self.ledger.started(run, units);
    }

    /// Whether `task` is a placed unit.
    pub fn owns(&self, task: TaskId) -> bool {
        self.ledger.owns(task)
    }

    /// Units waiting: of runs not complete, of runs queued (beside their
    /// unit 0, which the admission stage counts), and handed back.
    pub fn waiting(&self) -> usize {
        let arriving: usize = self.arriving.values().map(Vec::len).sum();
        let queued: usize = self.queued.values().map(Vec::len).sum();
        arriving + queued + self.ledger.waiting()
    }

    /// A unit finished: its coordinator ended the run, work done.
    pub fn finished(&mut self, task: TaskId) {
        self.ledger.finished(task);
    }

    /// A unit came back unfinished ([`RunLedger::lost`]): once all of its
    /// run's are back, the run's unit 0 goes back to the queue, the others
    /// wait here for it again.
    pub fn lost(&mut self, task: Task) -> GangLost {
        let Some(lost) = self.ledger.lost(task) else {
            return GangLost::default();
        };
        let mut out = GangLost {
            stop: lost.stop,
            ..GangLost::default()
        };
        if let Ended::Restart(units) = lost.ended {
            let requeued = units.len();
            out.requeue = self.queue(units);
            if out.requeue.is_some() {
                out.requeued = requeued;
            }
        }
        out
    }

    pub fn finish(&self, out: &mut Metrics) {
        self.ledger.finish(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::run_ledger::tests::unit;

    fn placed() -> Gangs {
        let mut g = Gangs::default();
        assert!(g.arrive(unit(10, 2)).is_none());
        assert!(g.arrive(unit(10, 0)).is_none());
        let first = g.arrive(unit(10, 1)).expect("the run is complete");
        assert_eq!(first.id, 10, "the run queues as its unit 0");
        assert_eq!(g.rest(10).map(<[Task]>::len), Some(2));
        assert_eq!(g.waiting(), 2);
        let servers = (0..3).map(|u| (10 + u, ActorId(20 + u as u32))).collect();
        g.started(10, 10, servers);
        assert_eq!(g.waiting(), 0);
        g
    }

    /// A killed unit stops the run's other units; when they are back the
    /// run queues again whole, as its next attempt.
    #[test]
    fn a_lost_unit_stops_its_run_and_queues_it_again_whole() {
        let mut g = placed();
        let lost = g.lost(unit(10, 1));
        assert_eq!(lost.stop, vec![(ActorId(20), 10, 0), (ActorId(22), 12, 0)]);
        assert!(lost.requeue.is_none());
        assert!(g.lost(unit(10, 2)).stop.is_empty(), "stopped once");
        let last = g.lost(unit(10, 0));
        assert_eq!(last.requeue.map(|t| t.id), Some(10));
        assert_eq!(last.requeued, 3);
        assert_eq!(g.rest(10).map(<[Task]>::len), Some(2));
        assert_eq!(g.attempt(10), 1);
        let mut m = Metrics::default();
        g.finish(&mut m);
        assert_eq!(m.counter("dist_runs_restarted"), 1);
    }

    /// A unit lost after another finished (the run ended) is not run again.
    #[test]
    fn a_unit_lost_after_its_run_ended_is_counted_not_rerun() {
        let mut g = placed();
        g.finished(10);
        g.finished(12);
        let lost = g.lost(unit(10, 1));
        assert_eq!(lost, GangLost::default());
        assert!(!g.owns(11) && g.waiting() == 0);
        let mut m = Metrics::default();
        g.finish(&mut m);
        assert_eq!(m.counter("dropped_tasks"), 1);
    }
}
