//! A log's jobs as HPC schedulers grade them (issue 41): per job (a task,
//! or a parallel job's parts together) its wait, response and bounded
//! slowdown, from its parts' `Done`s, the way Feitelson and Rudolph's
//! metrics are computed on Parallel Workloads Archive logs.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::kernel::Metrics;
use crate::task::TaskId;

/// The run time below which bounded slowdown counts a job as this long
/// (the customary 10 s), ns.
pub const SLOWDOWN_BOUND_NS: SimTime = 10_000_000_000;

#[derive(Clone, Copy, Debug)]
struct Open {
    /// Parts not done yet, of `parts`.
    left: u32,
    parts: u32,
    procs: u32,
    submitted: SimTime,
    /// The latest start and end of its parts so far: a parallel job runs
    /// once all its parts do, and ends with them.
    start: SimTime,
    end: SimTime,
}

/// One finished job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Graded {
    pub wait_s: f64,
    pub run_s: f64,
    pub response_s: f64,
    pub bounded_slowdown: f64,
}

/// The jobs of one tenant: submitted with consecutive task ids (a job of
/// `parts` parts holds `first .. first + parts`).
#[derive(Debug, Default)]
pub struct HpcJobs {
    open: BTreeMap<TaskId, Open>,
    done: u64,
    wait_s: Vec<f64>,
    response_s: Vec<f64>,
    slowdown: Vec<f64>,
    rows: Vec<(u64, String)>,
}

/// Bounded slowdown: `max(1, (wait + run) / max(run, bound))`.
pub fn bounded_slowdown(wait: SimTime, run: SimTime) -> f64 {
    let response = wait.saturating_add(run) as f64;
    (response / run.max(SLOWDOWN_BOUND_NS) as f64).max(1.0)
}

impl HpcJobs {
    /// A job of `procs` processors in `parts` parts, whose first task is
    /// `first`, was submitted at `at`.
    pub fn submitted(&mut self, first: TaskId, parts: u32, procs: u32, at: SimTime) {
        self.open.insert(
            first,
            Open {
                left: parts.max(1),
                parts: parts.max(1),
                procs,
                submitted: at,
                start: 0,
                end: 0,
            },
        );
    }

    /// Task `task` (a job's part) started at `started` and ended at
    /// `finished`; returns its job's grades once all its parts are done.
    pub fn done(&mut self, task: TaskId, started: SimTime, finished: SimTime) -> Option<Graded> {
        let (&first, job) = self.open.range_mut(..=task).next_back()?;
        if task >= first + u64::from(job.parts) {
            return None;
        }
        job.start = job.start.max(started);
        job.end = job.end.max(finished);
        job.left -= 1;
        if job.left > 0 {
            return None;
        }
        let job = self.open.remove(&first)?;
        let wait = job.start.saturating_sub(job.submitted);
        let run = job.end.saturating_sub(job.start);
        let g = Graded {
            wait_s: wait as f64 / 1e9,
            run_s: run as f64 / 1e9,
            response_s: job.end.saturating_sub(job.submitted) as f64 / 1e9,
            bounded_slowdown: bounded_slowdown(wait, run),
        };
        self.done += 1;
        self.wait_s.push(g.wait_s);
        self.response_s.push(g.response_s);
        self.slowdown.push(g.bounded_slowdown);
        self.rows.push((
            first,
            format!(
                "{first},{},{},{},{},{},{}",
                job.procs,
                job.submitted as f64 / 1e9,
                g.wait_s,
                g.run_s,
                g.response_s,
                g.bounded_slowdown
            ),
        ));
        Some(g)
    }

    pub fn finish(&mut self, out: &mut Metrics) {
        out.add("hpc_jobs_completed", self.done);
        out.add("hpc_jobs_running_end", self.open.len() as u64);
        out.append_samples("hpc_job_wait_s", std::mem::take(&mut self.wait_s));
        out.append_samples("hpc_job_response_s", std::mem::take(&mut self.response_s));
        out.append_samples(
            "hpc_job_bounded_slowdown",
            std::mem::take(&mut self.slowdown),
        );
        for (key, line) in self.rows.drain(..) {
            out.row("jobs", key, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: SimTime = 1_000_000_000;

    #[test]
    fn a_parallel_job_is_graded_once_all_its_parts_are_done() {
        let mut j = HpcJobs::default();
        j.submitted(10, 3, 12, 5 * S);
        j.submitted(13, 1, 1, 6 * S);
        assert_eq!(j.done(11, 20 * S, 120 * S), None);
        assert_eq!(
            j.done(13, 6 * S, 8 * S).map(|g| g.bounded_slowdown),
            Some(1.0)
        );
        assert_eq!(j.done(10, 21 * S, 121 * S), None);
        let g = j.done(12, 21 * S, 121 * S).expect("last part");
        assert_eq!(g.wait_s, 16.0);
        assert_eq!(g.run_s, 100.0);
        assert_eq!(g.response_s, 116.0);
        assert!((g.bounded_slowdown - 1.16).abs() < 1e-12);
        assert_eq!(j.done(99, 0, 1), None, "no such job");
    }

    #[test]
    fn bounded_slowdown_counts_short_jobs_as_ten_seconds() {
        assert_eq!(bounded_slowdown(0, S), 1.0);
        assert!((bounded_slowdown(20 * S, S) - 2.1).abs() < 1e-12);
        assert_eq!(bounded_slowdown(30 * S, 30 * S), 2.0);
    }
}
