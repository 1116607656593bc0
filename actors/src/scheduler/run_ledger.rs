//! The attempts of placed distributed runs (ASPLOS'16, issue 22), kept
//! once for every placement: `annealing.rs` places runs itself and
//! `gang.rs` has the placement stage place them unit by unit, but both
//! follow this one rule for what happens after a run starts.
//!
//! A run progresses only while all its units run (its coordinator's rate
//! needs every unit, §3.2). So the first unit that comes back unfinished
//! (killed for a primary tenant, harvesting §5.3, evicted, or stopped)
//! ends the run's attempt: its other units are to be stopped
//! (`Body::DistStop`), and once all are back the run queues again whole,
//! as its next attempt, as YARN's application master re-starts killed
//! tasks (harvesting §5.1). A unit that finishes means its coordinator
//! ended the run with its work done: units handed back after that are not
//! run again, only counted (`dist_units_lost_after_end`, `dropped_tasks`).
//! When the next attempt queues (after `resubmit_delay`) and where its
//! units go is the caller's.

use std::collections::BTreeMap;

use crate::kernel::{ActorId, Metrics};
use crate::task::{Task, TaskId};

/// A placed run's current attempt.
#[derive(Debug, Default)]
struct Attempt {
    /// Each unit's task and server, by unit.
    units: Vec<(TaskId, ActorId)>,
    /// Units still on their servers.
    live: usize,
    attempt: u32,
    /// A unit was lost; the others are being stopped.
    aborting: bool,
    /// A unit finished: the coordinator ended the run, work done.
    done: bool,
    /// Units handed back, to run again.
    back: Vec<Task>,
}

/// Where a run stands after one of its units came back.
#[derive(Debug, PartialEq)]
pub enum Ended {
    /// Units of the attempt are still on their servers.
    Running,
    /// The run's work is done and no unit is on a server: the ledger has
    /// forgotten the run, and so should its caller.
    Over,
    /// The attempt ended unfinished: the run's units, in unit order, queue
    /// again as its next attempt.
    Restart(Vec<Task>),
}

/// What the scheduler must do after a unit came back unfinished.
#[derive(Debug, PartialEq)]
pub struct Lost {
    /// The unit's run.
    pub run: TaskId,
    /// The run's other units to stop: (server, task, attempt).
    pub stop: Vec<(ActorId, TaskId, u32)>,
    pub ended: Ended,
}

/// The attempts of the placed distributed runs of one placement stage.
#[derive(Debug, Default)]
pub struct RunLedger {
    /// Runs placed at least once and not over, by run.
    runs: BTreeMap<TaskId, Attempt>,
    /// Units on their servers → their run.
    units: BTreeMap<TaskId, TaskId>,
    /// Attempts ended by a lost unit and started again.
    restarts: u64,
    /// Units handed back after their run's work was done (in the instant
    /// the coordinator's end travels to them): nothing to run again.
    lost_after_end: u64,
}

impl RunLedger {
    /// The attempt `run` starts (or runs) as: 0 until a unit of it is lost.
    pub fn attempt(&self, run: TaskId) -> u32 {
        self.runs.get(&run).map_or(0, |a| a.attempt)
    }

    /// Run `run` started its attempt: each unit's task and server, by unit.
    pub fn started(&mut self, run: TaskId, units: Vec<(TaskId, ActorId)>) {
        for &(id, _) in &units {
            self.units.insert(id, run);
        }
        let a = self.runs.entry(run).or_default();
        a.live = units.len();
        a.units = units;
    }

    /// Whether `task` is a unit on its server.
    pub fn owns(&self, task: TaskId) -> bool {
        self.units.contains_key(&task)
    }

    /// Units handed back that wait for the rest of their run's attempt.
    pub fn waiting(&self) -> usize {
        self.runs.values().map(|a| a.back.len()).sum()
    }

    /// A unit finished: its coordinator ended the run, work done. Returns
    /// its run and where the run stands (`None` if `task` is no unit).
    pub fn finished(&mut self, task: TaskId) -> Option<(TaskId, Ended)> {
        let run = self.units.remove(&task)?;
        if let Some(a) = self.runs.get_mut(&run) {
            a.done = true;
            a.live = a.live.saturating_sub(1);
        }
        Some((run, self.end_attempt(run)))
    }

    /// A unit came back unfinished: the first of an attempt ends it (the
    /// others are to be stopped, once); once all are back the run restarts,
    /// unless its coordinator ended it already (a unit finished). `None`
    /// if `task` is no unit on its server.
    pub fn lost(&mut self, task: Task) -> Option<Lost> {
        let run = self.units.remove(&task.id)?;
        let a = self.runs.get_mut(&run)?;
        a.live = a.live.saturating_sub(1);
        a.back.push(task);
        let mut stop = Vec::new();
        if !a.aborting && !a.done {
            a.aborting = true;
            for &(id, server) in &a.units {
                if self.units.contains_key(&id) {
                    stop.push((server, id, a.attempt));
                }
            }
        }
        let ended = self.end_attempt(run);
        Some(Lost { run, stop, ended })
    }

    /// Once no unit of `run`'s attempt is on a server: over if a unit
    /// finished (units handed back then counted in `lost_after_end`), else
    /// the next attempt's units.
    fn end_attempt(&mut self, run: TaskId) -> Ended {
        let Some(a) = self.runs.get_mut(&run) else {
            return Ended::Running;
        };
        if a.live > 0 {
            return Ended::Running;
        }
        if a.done {
            self.lost_after_end += a.back.len() as u64;
            self.runs.remove(&run);
            return Ended::Over;
        }
        let mut units = std::mem::take(&mut a.back);
        units.sort_by_key(|t| t.dist.map_or(0, |d| d.unit));
        a.attempt += 1;
        a.aborting = false;
        a.units.clear();
        self.restarts += 1;
        Ended::Restart(units)
    }

    pub fn finish(&self, out: &mut Metrics) {
        // only runs whose units were lost have these
        if self.restarts + self.lost_after_end > 0 {
            out.add("dist_runs_restarted", self.restarts);
            out.add("dist_units_lost_after_end", self.lost_after_end);
            out.add("dropped_tasks", self.lost_after_end);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::distributed::DistRef;

    /// Unit `unit` of run `run` (task `run + unit`), of three units of
    /// eight slots: also `gang.rs`'s tests' unit.
    pub(in crate::scheduler) fn unit(run: TaskId, unit: u16) -> Task {
        Task {
            cores: 8,
            dist: Some(DistRef {
                app: 3,
                run,
                unit,
                units: 3,
                qos_ppm: 0,
                coordinator: None,
                attempt: 0,
                fixed_ns: 0,
            }),
            ..Task::new(run + u64::from(unit), ActorId(1), 0, 1_000)
        }
    }

    /// Run 10 of three units (tasks 10–12) on servers 20–22.
    fn started() -> RunLedger {
        let mut l = RunLedger::default();
        l.started(
            10,
            (0..3).map(|u| (10 + u, ActorId(20 + u as u32))).collect(),
        );
        assert!((10..13).all(|id| l.owns(id)));
        l
    }

    fn metrics(l: &RunLedger) -> Metrics {
        let mut m = Metrics::default();
        l.finish(&mut m);
        m
    }

    /// The first lost unit stops the others, once; the last one back
    /// restarts the run with every unit, in unit order, as attempt 1.
    #[test]
    fn a_lost_unit_stops_the_others_once_and_restarts_the_run_whole() {
        let mut l = started();
        let first = l.lost(unit(10, 1)).expect("a unit of the run");
        assert_eq!(first.run, 10);
        assert_eq!(first.stop, vec![(ActorId(20), 10, 0), (ActorId(22), 12, 0)]);
        assert_eq!(first.ended, Ended::Running);
        assert_eq!(l.waiting(), 1);
        let second = l.lost(unit(10, 2)).expect("a unit of the run");
        assert!(second.stop.is_empty(), "stopped once");
        assert_eq!(second.ended, Ended::Running);
        let last = l.lost(unit(10, 0)).expect("a unit of the run");
        let Ended::Restart(units) = last.ended else {
            panic!("the run restarts: {:?}", last.ended);
        };
        let ids: Vec<TaskId> = units.iter().map(|t| t.id).collect();
        assert_eq!(ids, vec![10, 11, 12]);
        assert_eq!((l.attempt(10), l.waiting()), (1, 0));
        assert!(!l.owns(10));
        assert_eq!(metrics(&l).counter("dist_runs_restarted"), 1);
        // the next attempt is stopped with its own number
        l.started(
            10,
            (0..3).map(|u| (10 + u, ActorId(30 + u as u32))).collect(),
        );
        let again = l.lost(unit(10, 0)).expect("a unit of the run");
        assert_eq!(again.stop, vec![(ActorId(31), 11, 1), (ActorId(32), 12, 1)]);
    }

    /// Units that all finish end the run: nothing is counted.
    #[test]
    fn a_run_whose_units_finish_is_over() {
        let mut l = started();
        assert_eq!(l.finished(10), Some((10, Ended::Running)));
        assert_eq!(l.finished(11), Some((10, Ended::Running)));
        assert_eq!(l.finished(12), Some((10, Ended::Over)));
        assert_eq!(l.attempt(10), 0);
        assert_eq!(metrics(&l).counters().count(), 0);
    }

    /// A unit lost after another finished is not run again, and stops
    /// nothing: the run's work is done.
    #[test]
    fn a_unit_lost_after_its_run_ended_is_counted_not_rerun() {
        let mut l = started();
        l.finished(10);
        let lost = l.lost(unit(10, 1)).expect("a unit of the run");
        assert!(lost.stop.is_empty());
        assert_eq!(lost.ended, Ended::Running);
        assert_eq!(l.finished(12), Some((10, Ended::Over)));
        let m = metrics(&l);
        assert_eq!(m.counter("dist_units_lost_after_end"), 1);
        assert_eq!(m.counter("dropped_tasks"), 1);
        assert_eq!(m.counter("dist_runs_restarted"), 0);
    }

    /// What is not a unit on its server is not the ledger's.
    #[test]
    fn unknown_units_are_ignored() {
        let mut l = started();
        assert_eq!(l.finished(99), None);
        assert_eq!(l.lost(unit(99, 0)), None);
        l.lost(unit(10, 0));
        assert_eq!(l.lost(unit(10, 0)), None, "already back");
    }
}
