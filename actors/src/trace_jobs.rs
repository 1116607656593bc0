//! A trace's jobs, run as the systems that wrote the trace ran them
//! (issue 41), and graded as jobs: the tenant's ledger of each job's tasks.
//!
//! - **DAGs** (Alibaba 2018, `task_name`): a task arrives at its recorded
//!   start but is submitted only once every instance of the tasks it names
//!   has ended here; until then it is *held*. A parent the trace never
//!   showed before the child (a defect of the published tables: the file is
//!   in start order and a parent ends before its child starts) binds
//!   nothing and is counted (`dag_parents_missing`).
//! - **Job response** (Alibaba's job completion time; Google's job-level
//!   response): from the arrival of a job's first task to the end of its
//!   last. The file is streamed, so a job is known complete only when none
//!   of its tasks is held or running and none arrived for `grace` of trace
//!   time since its last ended (`arrivals.lookahead`); a later task with
//!   the same key then starts a new job. At the end of the run every job
//!   with nothing outstanding is complete; the others are counted open.
//!
//! Memory holds the open jobs only (and each one's DAG task numbers), not
//! the file's.

use std::collections::{BTreeMap, BTreeSet};

use dcemu_topology::SimTime;

use crate::kernel::Metrics;
use crate::task::TaskId;
use crate::trace::TraceJob;

/// One open job.
#[derive(Debug)]
struct Job<P> {
    first: SimTime,
    last_end: SimTime,
    /// Tasks arrived and not done (held or submitted).
    outstanding: u32,
    /// Instances not done yet, per DAG task number seen.
    left: BTreeMap<u32, u32>,
    /// Tasks waiting for their parents, in arrival order.
    held: Vec<Held<P>>,
    /// When it closes if nothing else arrives (set while nothing is outstanding).
    closes_at: Option<SimTime>,
}

#[derive(Debug)]
struct Held<P> {
    after: Vec<u32>,
    payload: P,
}

/// The open jobs of one tenant's trace; `P` is what the tenant submits
/// for a task (held here while its parents run).
#[derive(Debug)]
pub struct TraceJobs<P> {
    jobs: BTreeMap<u64, Job<P>>,
    /// Submitted tasks not done: their job and DAG task number.
    running: BTreeMap<TaskId, (u64, Option<u32>)>,
    /// Jobs with nothing outstanding, by when they close.
    idle: BTreeSet<(SimTime, u64)>,
    grace: SimTime,
    completed: u64,
    response_s: Vec<f64>,
    held_now: u64,
    held_total: u64,
    parents_missing: u64,
}

impl<P> TraceJobs<P> {
    /// A ledger closing a job `grace` after its last task ended.
    pub fn new(grace: SimTime) -> Self {
        TraceJobs {
            jobs: BTreeMap::new(),
            running: BTreeMap::new(),
            idle: BTreeSet::new(),
            grace,
            completed: 0,
            response_s: Vec::new(),
            held_now: 0,
            held_total: 0,
            parents_missing: 0,
        }
    }

    /// A task of `job` arrives at `now`: `Some(payload)` to submit now,
    /// `None` when it is held until its parents end ([`TraceJobs::done`]
    /// hands it back).
    pub fn arrive(&mut self, job: &TraceJob, now: SimTime, payload: P) -> Option<P> {
        self.close_until(now);
        let j = self.jobs.entry(job.key).or_insert_with(|| Job {
            first: now,
            last_end: now,
            outstanding: 0,
            left: BTreeMap::new(),
            held: Vec::new(),
            closes_at: None,
        });
        if let Some(at) = j.closes_at.take() {
            self.idle.remove(&(at, job.key));
        }
        j.outstanding += 1;
        let Some(dag) = &job.dag else {
            return Some(payload);
        };
        let mut after = Vec::new();
        for &p in dag.after.iter().filter(|&&p| p != dag.task) {
            match j.left.get(&p) {
                None => self.parents_missing += 1,
                Some(0) => {}
                Some(_) => after.push(p),
            }
        }
        *j.left.entry(dag.task).or_insert(0) += 1;
        if after.is_empty() {
            return Some(payload);
        }
        j.held.push(Held { after, payload });
        self.held_now += 1;
        self.held_total += 1;
        None
    }

    /// Task `task` of `job` was submitted.
    pub fn submitted(&mut self, task: TaskId, job: &TraceJob) {
        self.running
            .insert(task, (job.key, job.dag.as_ref().map(|d| d.task)));
    }

    /// Task `task` ended at `now`: the held tasks it was the last parent
    /// of, in their arrival order, to submit now.
    pub fn done(&mut self, task: TaskId, now: SimTime) -> Vec<P> {
        let Some((key, dag)) = self.running.remove(&task) else {
            return Vec::new();
        };
        let Some(j) = self.jobs.get_mut(&key) else {
            return Vec::new();
        };
        j.last_end = j.last_end.max(now);
        j.outstanding = j.outstanding.saturating_sub(1);
        let mut ready = Vec::new();
        if let Some(n) = dag.and_then(|t| j.left.get_mut(&t)) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                let left = &j.left;
                let (go, stay): (Vec<_>, Vec<_>) = std::mem::take(&mut j.held)
                    .into_iter()
                    .partition(|h| h.after.iter().all(|p| left.get(p).is_none_or(|&n| n == 0)));
                j.held = stay;
                self.held_now -= go.len() as u64;
                ready = go.into_iter().map(|h| h.payload).collect();
            }
        }
        if j.outstanding == 0 {
            let at = now.saturating_add(self.grace);
            j.closes_at = Some(at);
            self.idle.insert((at, key));
        }
        ready
    }

    /// Closes the idle jobs whose grace ended by `now`.
    fn close_until(&mut self, now: SimTime) {
        while let Some(&(at, key)) = self.idle.first() {
            if at > now {
                break;
            }
            self.idle.pop_first();
            if let Some(j) = self.jobs.remove(&key) {
                self.complete(&j);
            }
        }
    }

    fn complete(&mut self, j: &Job<P>) {
        self.completed += 1;
        self.response_s
            .push(j.last_end.saturating_sub(j.first) as f64 / 1e9);
    }

    /// Tasks held for their parents now.
    pub fn held(&self) -> u64 {
        self.held_now
    }

    /// The metrics, every job with nothing outstanding being complete.
    pub fn finish(&mut self, out: &mut Metrics) {
        self.idle.clear();
        let jobs = std::mem::take(&mut self.jobs);
        let mut open = 0;
        for j in jobs.values() {
            match j.outstanding {
                0 => self.complete(j),
                _ => open += 1,
            }
        }
        out.add("trace_jobs_completed", self.completed);
        out.add("trace_jobs_open_end", open);
        out.append_samples("trace_job_response_s", std::mem::take(&mut self.response_s));
        if self.held_total > 0 || self.parents_missing > 0 {
            out.add("dag_tasks_held", self.held_total);
            out.add("dag_tasks_held_end", self.held_now);
            out.add("dag_parents_missing", self.parents_missing);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::DagTask;

    const S: SimTime = 1_000_000_000;

    fn job(key: u64, task: u32, after: &[u32]) -> TraceJob {
        TraceJob {
            key,
            dag: Some(DagTask {
                task,
                after: after.to_vec(),
            }),
            apart: false,
        }
    }

    #[test]
    fn a_child_waits_for_every_instance_of_each_parent() {
        let mut j = TraceJobs::new(60 * S);
        let (m1, m2, r3) = (job(7, 1, &[]), job(7, 2, &[]), job(7, 3, &[1, 2]));
        assert_eq!(j.arrive(&m1, 0, "m1a"), Some("m1a"));
        j.submitted(10, &m1);
        assert_eq!(j.arrive(&m1, 0, "m1b"), Some("m1b"));
        j.submitted(11, &m1);
        assert_eq!(j.arrive(&m2, S, "m2"), Some("m2"));
        j.submitted(12, &m2);
        assert_eq!(j.arrive(&r3, 2 * S, "r3"), None, "its parents run");
        assert_eq!(j.held(), 1);
        assert!(j.done(10, 3 * S).is_empty(), "one instance of task 1 left");
        assert!(j.done(12, 4 * S).is_empty(), "task 1 not done");
        assert_eq!(j.done(11, 5 * S), vec!["r3"]);
        assert_eq!(j.held(), 0);
    }

    #[test]
    fn a_parent_never_seen_binds_nothing_and_is_counted() {
        let mut j = TraceJobs::new(60 * S);
        assert_eq!(j.arrive(&job(1, 4, &[2, 4]), 0, ()), Some(()));
        assert_eq!(j.parents_missing, 1, "task 2 never arrived; 4 is itself");
    }

    #[test]
    fn a_done_parent_does_not_hold_a_later_child() {
        let mut j = TraceJobs::new(60 * S);
        let m1 = job(1, 1, &[]);
        j.arrive(&m1, 0, ());
        j.submitted(1, &m1);
        j.done(1, S);
        assert_eq!(j.arrive(&job(1, 2, &[1]), 2 * S, ()), Some(()));
    }

    #[test]
    fn a_job_closes_after_its_grace_with_its_response() {
        let mut j = TraceJobs::<()>::new(10 * S);
        let a = TraceJob {
            key: 5,
            ..TraceJob::default()
        };
        j.arrive(&a, 2 * S, ());
        j.submitted(1, &a);
        j.done(1, 9 * S);
        j.arrive(&a, 15 * S, ());
        j.submitted(2, &a);
        j.done(2, 30 * S);
        j.arrive(&a, 41 * S, ());
        j.submitted(3, &a);
        j.done(3, 44 * S);
        assert_eq!(j.response_s, vec![28.0], "first job: 2 s to 30 s");
        let b = TraceJob {
            key: 6,
            ..TraceJob::default()
        };
        j.arrive(&b, 50 * S, ());
        j.submitted(4, &b);
        let mut m = Metrics::default();
        j.finish(&mut m);
        assert_eq!(
            m.counter("trace_jobs_completed"),
            2,
            "key 5 again, done at the end"
        );
        assert_eq!(m.counter("trace_jobs_open_end"), 1, "key 6 still runs");
        assert_eq!(m.samples_of("trace_job_response_s"), &[28.0, 3.0]);
    }
}
