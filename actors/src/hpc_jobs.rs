//! A log's jobs as HPC schedulers grade them (issue 41): per job (a task,
//! or a parallel job's parts together) its wait, response and bounded
//! slowdown, from its parts' `Done`s, the way Feitelson and Rudolph's
//! metrics are computed on Parallel Workloads Archive logs; the same split
//! by job size; and the machine's utilisation over time, as busy
//! processors in fixed bins ([`Busy`], `utilisation.csv`).

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::kernel::{ActorId, Metrics};
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

/// At most this many utilisation bins over a run ([`bin_width`]).
pub const MAX_BINS: u64 = 2000;

/// The widths a utilisation bin may take, s: round numbers, from a second
/// to a day.
const BIN_WIDTHS_S: [u64; 18] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
];

const NS: u64 = 1_000_000_000;

/// The width of the utilisation bins of a run ending at `run_end`: the
/// smallest of [`BIN_WIDTHS_S`] that covers the run in at most
/// [`MAX_BINS`] bins, or else whole days. It depends on the run's end
/// alone, so every actor that counts busy processors bins them alike.
pub fn bin_width(run_end: SimTime) -> SimTime {
    let s = run_end.div_ceil(NS).max(1);
    let fits = BIN_WIDTHS_S.iter().find(|&&w| s.div_ceil(w) <= MAX_BINS);
    let w = fits
        .copied()
        .unwrap_or_else(|| s.div_ceil(MAX_BINS).div_ceil(86_400) * 86_400);
    w.saturating_mul(NS)
}

/// Busy processor-time per utilisation bin, proc·ns, over `[0, run_end)`:
/// at most [`MAX_BINS`] entries whatever the number of jobs. Written as
/// rows of the table `utilisation` (key: bin, line: proc·ns), summed over
/// actors into `utilisation.csv` by the emulator.
#[derive(Clone, Debug)]
pub struct Busy {
    width: SimTime,
    run_end: SimTime,
    bins: BTreeMap<u64, u128>,
}

impl Busy {
    pub fn new(run_end: SimTime) -> Self {
        Busy {
            width: bin_width(run_end),
            run_end,
            bins: BTreeMap::new(),
        }
    }

    /// `procs` processors busy over `[from, to)` (clipped to the run).
    pub fn add(&mut self, procs: u32, from: SimTime, to: SimTime) {
        let to = to.min(self.run_end);
        if procs == 0 || from >= to {
            return;
        }
        for bin in from / self.width..=(to - 1) / self.width {
            let lo = from.max(bin * self.width);
            let hi = to.min((bin + 1).saturating_mul(self.width));
            *self.bins.entry(bin).or_insert(0) += u128::from(procs) * u128::from(hi - lo);
        }
    }

    /// Busy processor-time of every bin so far, proc·ns, by bin.
    pub fn bins(&self) -> &BTreeMap<u64, u128> {
        &self.bins
    }

    fn rows(&self, out: &mut Metrics) {
        for (&bin, &proc_ns) in &self.bins {
            out.row("utilisation", bin, proc_ns.to_string());
        }
    }
}

/// What the servers add to a log's utilisation at the end of a run: the
/// tasks of the tenants replaying an SWF log (`hpc_tenants`, sorted) still
/// running then, as `(tenant, processors, started)`, busy up to `end`.
/// The tenant cannot count them, as it learns of a task only when it ends.
pub fn running_at_end(
    hpc_tenants: &[ActorId],
    running: impl Iterator<Item = (ActorId, u32, SimTime)>,
    end: SimTime,
    out: &mut Metrics,
) {
    if hpc_tenants.is_empty() {
        return;
    }
    let mut busy = Busy::new(end);
    for (tenant, procs, started) in running {
        if hpc_tenants.binary_search(&tenant).is_ok() {
            busy.add(procs, started, end);
        }
    }
    busy.rows(out);
}

/// Job size classes by processors, powers of four (1, 2-4, 5-16, 17-64,
/// 65-256, 257-1024, more): each class's largest size and name.
pub const SIZE_CLASSES: [(u32, &str); 7] = [
    (1, "1"),
    (4, "2-4"),
    (16, "5-16"),
    (64, "17-64"),
    (256, "65-256"),
    (1024, "257-1024"),
    (u32::MAX, "1025+"),
];

/// Sample series of each size class's wait, response and bounded slowdown
/// (nested under `hpc_jobs_by_size` in `metrics.json`).
pub const WAIT_BY_SIZE: [&str; 7] = [
    "hpc_job_wait_s_size_1",
    "hpc_job_wait_s_size_2-4",
    "hpc_job_wait_s_size_5-16",
    "hpc_job_wait_s_size_17-64",
    "hpc_job_wait_s_size_65-256",
    "hpc_job_wait_s_size_257-1024",
    "hpc_job_wait_s_size_1025+",
];
pub const RESPONSE_BY_SIZE: [&str; 7] = [
    "hpc_job_response_s_size_1",
    "hpc_job_response_s_size_2-4",
    "hpc_job_response_s_size_5-16",
    "hpc_job_response_s_size_17-64",
    "hpc_job_response_s_size_65-256",
    "hpc_job_response_s_size_257-1024",
    "hpc_job_response_s_size_1025+",
];
pub const SLOWDOWN_BY_SIZE: [&str; 7] = [
    "hpc_job_bounded_slowdown_size_1",
    "hpc_job_bounded_slowdown_size_2-4",
    "hpc_job_bounded_slowdown_size_5-16",
    "hpc_job_bounded_slowdown_size_17-64",
    "hpc_job_bounded_slowdown_size_65-256",
    "hpc_job_bounded_slowdown_size_257-1024",
    "hpc_job_bounded_slowdown_size_1025+",
];

/// The size class of a job of `procs` processors (0 counts as 1).
pub fn size_class(procs: u32) -> usize {
    SIZE_CLASSES
        .iter()
        .position(|&(max, _)| procs <= max)
        .unwrap_or(SIZE_CLASSES.len() - 1)
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
#[derive(Debug)]
pub struct HpcJobs {
    open: BTreeMap<TaskId, Open>,
    done: u64,
    wait_s: Vec<f64>,
    response_s: Vec<f64>,
    slowdown: Vec<f64>,
    /// The same, per size class ([`SIZE_CLASSES`]).
    by_size: [[Vec<f64>; 3]; 7],
    rows: Vec<(u64, String)>,
    /// Finished jobs' processors over their run, per bin.
    busy: Busy,
    first_submit: Option<SimTime>,
    last_end: SimTime,
}

/// Bounded slowdown: `max(1, (wait + run) / max(run, bound))`.
pub fn bounded_slowdown(wait: SimTime, run: SimTime) -> f64 {
    let response = wait.saturating_add(run) as f64;
    (response / run.max(SLOWDOWN_BOUND_NS) as f64).max(1.0)
}

impl HpcJobs {
    /// No jobs yet, in a run that ends at `run_end`.
    pub fn new(run_end: SimTime) -> Self {
        HpcJobs {
            open: BTreeMap::new(),
            done: 0,
            wait_s: Vec::new(),
            response_s: Vec::new(),
            slowdown: Vec::new(),
            by_size: Default::default(),
            rows: Vec::new(),
            busy: Busy::new(run_end),
            first_submit: None,
            last_end: 0,
        }
    }

    /// A job of `procs` processors in `parts` parts, whose first task is
    /// `first`, was submitted at `at`.
    pub fn submitted(&mut self, first: TaskId, parts: u32, procs: u32, at: SimTime) {
        self.first_submit = Some(self.first_submit.map_or(at, |f| f.min(at)));
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
        let [w, r, b] = &mut self.by_size[size_class(job.procs)];
        w.push(g.wait_s);
        r.push(g.response_s);
        b.push(g.bounded_slowdown);
        self.busy.add(job.procs, job.start, job.end);
        self.last_end = self.last_end.max(job.end);
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

    /// Busy processor-time of the finished jobs per bin, proc·ns.
    pub fn busy(&self) -> &Busy {
        &self.busy
    }

    /// Reports the jobs: their counts, distributions (overall and per size
    /// class), `jobs.csv`'s rows and the finished jobs' busy bins (bin 0
    /// always, so that `utilisation.csv` exists). The span the utilisation
    /// is taken over starts at the first submission and ends at the last
    /// job's end, or at the run's end when jobs are left unfinished.
    pub fn finish(&mut self, out: &mut Metrics) {
        out.add("hpc_jobs_completed", self.done);
        for (i, [w, r, b]) in self.by_size.iter_mut().enumerate() {
            out.append_samples(WAIT_BY_SIZE[i], std::mem::take(w));
            out.append_samples(RESPONSE_BY_SIZE[i], std::mem::take(r));
            out.append_samples(SLOWDOWN_BY_SIZE[i], std::mem::take(b));
        }
        self.busy.bins.entry(0).or_insert(0);
        self.busy.rows(out);
        if let Some(first) = self.first_submit {
            let last = if self.open.is_empty() {
                self.last_end
            } else {
                self.busy.run_end
            };
            out.sample("hpc_first_submit_s", first as f64 / 1e9);
            out.sample("hpc_last_end_s", last.max(first) as f64 / 1e9);
        }
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
        let mut j = HpcJobs::new(1000 * S);
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

    #[test]
    fn bins_are_round_widths_that_fit_the_run_in_at_most_max_bins() {
        assert_eq!(bin_width(600 * S), S);
        assert_eq!(bin_width(2 * 3600 * S), 5 * S);
        assert_eq!(bin_width(365 * 86_400 * S), 21_600 * S);
        assert_eq!(bin_width(20 * 365 * 86_400 * S), 4 * 86_400 * S);
        assert_eq!(bin_width(0), S);
        for end in [1, 999, 7 * S + 1, 86_400 * S, 9_999_999 * S] {
            assert!(end.div_ceil(bin_width(end)) <= MAX_BINS, "{end}");
        }
    }

    /// Run of 10 s in 1 s bins: a 2-processor job over [0.5 s, 2.5 s)
    /// spans three bins; a 3-processor one over [2 s, 3 s) fills bin 2;
    /// one past the run's end is cut at it.
    #[test]
    fn busy_bins_split_a_job_at_bin_edges_exactly() {
        let mut b = Busy::new(10 * S);
        b.add(2, S / 2, 5 * S / 2);
        b.add(3, 2 * S, 3 * S);
        b.add(4, 9 * S, 12 * S);
        b.add(0, 0, S);
        b.add(5, 3 * S, 3 * S);
        let want: BTreeMap<u64, u128> = [
            (0, u128::from(S)),
            (1, 2 * u128::from(S)),
            (2, u128::from(S) + 3 * u128::from(S)),
            (9, 4 * u128::from(S)),
        ]
        .into();
        assert_eq!(b.bins(), &want);
    }

    #[test]
    fn finished_jobs_fill_the_bins_and_running_tasks_are_counted_to_the_end() {
        let mut j = HpcJobs::new(10 * S);
        j.submitted(0, 2, 6, S);
        j.submitted(2, 1, 1, 2 * S);
        j.submitted(3, 1, 8, 3 * S);
        j.done(0, 2 * S, 4 * S);
        j.done(1, 2 * S, 4 * S);
        j.done(2, 3 * S, 3 * S + S / 2);
        let busy: u128 = j.busy().bins().values().sum();
        assert_eq!(busy, 6 * 2 * u128::from(S) + u128::from(S) / 2);
        let mut out = Metrics::default();
        j.finish(&mut out);
        assert_eq!(out.samples_of("hpc_first_submit_s"), &[1.0]);
        // job 3 is still open: the span runs to the run's end
        assert_eq!(out.samples_of("hpc_last_end_s"), &[10.0]);
        assert_eq!(out.samples_of(WAIT_BY_SIZE[0]), &[1.0]);
        assert_eq!(out.samples_of(WAIT_BY_SIZE[2]), &[1.0]);
        assert!(out.samples_of(WAIT_BY_SIZE[1]).is_empty());
        // job 3's task, running since 5 s on a server, and another
        // tenant's task, which does not count
        let mut end = Metrics::default();
        running_at_end(
            &[ActorId(1)],
            [(ActorId(1), 8, 5 * S), (ActorId(2), 4, 0)].into_iter(),
            10 * S,
            &mut end,
        );
        out.merge(end);
        let rows: u128 = out
            .rows()
            .filter(|(name, _)| *name == "utilisation")
            .flat_map(|(_, rows)| rows.iter())
            .map(|(_, line)| line.parse::<u128>().expect("proc·ns"))
            .sum();
        assert_eq!(rows, busy + 8 * 5 * u128::from(S));
    }

    #[test]
    fn size_classes_are_powers_of_four() {
        let classes: Vec<&str> = [
            0,
            1,
            2,
            4,
            5,
            16,
            17,
            64,
            65,
            256,
            257,
            1024,
            1025,
            u32::MAX,
        ]
        .iter()
        .map(|&p| SIZE_CLASSES[size_class(p)].1)
        .collect();
        assert_eq!(
            classes,
            [
                "1", "1", "2-4", "2-4", "5-16", "5-16", "17-64", "17-64", "65-256", "65-256",
                "257-1024", "257-1024", "1025+", "1025+"
            ]
        );
        for (i, (_, name)) in SIZE_CLASSES.iter().enumerate() {
            assert!(WAIT_BY_SIZE[i].ends_with(&format!("_size_{name}")));
            assert!(RESPONSE_BY_SIZE[i].ends_with(&format!("_size_{name}")));
            assert!(SLOWDOWN_BY_SIZE[i].ends_with(&format!("_size_{name}")));
        }
    }
}
