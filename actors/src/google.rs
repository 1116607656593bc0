//! Per-priority statistics of the Google cluster trace (thesis Table 5.2),
//! as generators of task demands: the trace's own per-class figures
//! ([`draw`]), the synthetic workloads of thesis Table 9.4
//! ([`Synthetic::draw`], W-D and W-E), and jobs of such tasks with CPU
//! requirements and flow sizes, the MapReduce-like workload of thesis §4
//! ([`MapReduce`]); and TPC-DS-like DAG jobs for the harvesting testbed
//! ([`DagJobs`], harvesting §4.1, §6.1).
//!
//! All draw a task's priority class in proportion to the class's share of
//! tasks in Table 5.2. Class 7 has no demand figures in the table and is left
//! out; the classes with "≤ 0.01 %" of tasks are given 0.01 %.
//!
//! **Work.** The thesis runs a task until its CPU demand Δ (cpu·s, in units
//! of the normalised capacity of the largest machine) is consumed at the CPU
//! rate its slot gets, at most one core's worth (§6.2.4.1, eq. 6.1–6.2): on
//! the reference machine (normalised capacity 1.0 over `N_c` cores) a task
//! alone on a core finishes after `Δ · N_c` seconds. That is the work a
//! [`crate::task::Task`] carries (`service_ns`: time alone on one reference
//! core of speed 1), so both generators return `Δ · reference_cores`. The
//! trace's wall durations (demand over recorded usage, 2,305 s for class 0)
//! are not what the thesis' simulator runs; its class response times
//! (§7.3, Table 7.2) fit `Δ · N_c`.

use rand::RngCore;
use serde::{Deserialize, Serialize};

pub use crate::config::{ClassMix, MAX_TASKS_PER_JOB, REFERENCE_CORES};
use crate::flow_sizes;
use crate::sampling::{exponential, hyperexponential, index, to_nanos, uniform_open0};

/// One row of Table 5.2: class, share of tasks (%), CPU demand (cpu·s),
/// memory demand (ram·s), CPU usage, memory usage (both normalised).
pub type Row = (u8, f64, f64, f64, f64, f64);

/// The rows of Table 5.2 with demand figures (all but class 7).
pub const TABLE_5_2: [Row; 11] = [
    (0, 23.29, 15.408, 9.1068, 0.0066832, 0.0035707),
    (1, 12.78, 40.758, 33.47, 0.012176, 0.0049097),
    (2, 0.39, 382.12, 204.4, 0.018668, 0.0061447),
    (3, 0.01, 0.24663, 0.025122, 0.0034657, 0.00036929),
    (4, 59.94, 49.768, 27.721, 0.019338, 0.0064713),
    (5, 0.01, 0.15221, 0.023401, 0.0034661, 0.00041077),
    (6, 1.28, 12.628, 4.6929, 0.020213, 0.00298),
    (8, 1.10, 25.975, 39.625, 0.0037737, 0.003922),
    (9, 1.19, 269.47, 230.65, 0.0071297, 0.0042992),
    (10, 0.01, 66.186, 85.448, 0.0092705, 0.0042258),
    (11, 0.01, 1506.8, 1413.6, 0.010355, 0.014984),
];

/// Mean interarrival time of each class with demand figures, seconds
/// (thesis Table 5.2, column "Interarrival time"; class 7's 2,243.9 s is
/// left out with its row). Their rates sum to the "All" row's 1/0.038519 s.
pub const INTERARRIVAL_S: [(u8, f64); 11] = [
    (0, 0.059153),
    (1, 0.43635),
    (2, 14.586),
    (3, 17876.0),
    (4, 0.16401),
    (5, 30601.0),
    (6, 7.5633),
    (8, 9.0927),
    (9, 2.9024),
    (10, 86.006),
    (11, 1144.3),
];

impl ClassMix {
    /// A class's weight (any scale) in this mix.
    pub fn weight(self, row: &Row) -> f64 {
        match self {
            ClassMix::Tasks => row.1,
            ClassMix::Arrivals => INTERARRIVAL_S
                .iter()
                .find(|(p, _)| *p == row.0)
                .map_or(0.0, |(_, ia)| 1.0 / ia),
        }
    }
}

/// A task drawn from Table 5.2 or Table 9.4.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoogleTask {
    pub priority: u8,
    /// CPU demand Δ, cpu·s of the normalised capacity.
    pub cpu_demand: f64,
    /// Work: seconds alone on one reference core of speed 1, `Δ · reference_cores`.
    pub work_s: f64,
    pub memory_gb: f64,
}

impl GoogleTask {
    /// The same task with its CPU demand, and so its work, times `factor`
    /// (`google_demand_scale`). An exponential draw scales with its mean, so
    /// this is the draw the class's mean times `factor` would have given
    /// from the same random numbers.
    pub fn with_demand_scaled(mut self, factor: f64) -> Self {
        self.cpu_demand *= factor;
        self.work_s *= factor;
        self
    }

    /// [`GoogleTask::with_demand_scaled`] for a task of class 0 only
    /// (`google_class0_demand_scale`); any other class is returned as it
    /// is. Scaling after the draw leaves every random draw, and so every
    /// other task, as it was.
    pub fn with_class0_demand_scaled(self, factor: f64) -> Self {
        if self.priority == 0 {
            self.with_demand_scaled(factor)
        } else {
            self
        }
    }
}

/// Mean work of a class on one reference core, in seconds: its mean CPU
/// demand times the reference machine's cores (123 s for class 0 on 8).
pub fn mean_work_s(row: &Row, reference_cores: u32) -> f64 {
    row.2 * f64::from(reference_cores)
}

/// A row of Table 5.2 with probability proportional to its share of tasks.
fn draw_class(rng: &mut impl RngCore) -> &'static Row {
    draw_class_in(rng, ClassMix::Tasks)
}

/// A row of Table 5.2 with probability proportional to its weight in `mix`.
fn draw_class_in(rng: &mut impl RngCore, mix: ClassMix) -> &'static Row {
    let total: f64 = TABLE_5_2.iter().map(|r| mix.weight(r)).sum();
    let mut pick = uniform_open0(rng) * total;
    for row in &TABLE_5_2 {
        let w = mix.weight(row);
        if pick <= w {
            return row;
        }
        pick -= w;
    }
    &TABLE_5_2[TABLE_5_2.len() - 1]
}

/// Draws one task from Table 5.2: its class, a CPU demand Δ exponential with
/// the class's mean (column "CPU demand"), work `Δ · reference_cores`, and a
/// memory usage exponential with the class's mean usage, times
/// `reference_memory_gb` (the memory normalised usage 1.0 stands for). The
/// table gives only means; the exponential spread is the one the thesis
/// uses for its synthetic traces (Table 9.4), and without a spread memory
/// could never run out (§6.2.3.4's memory evictions need some tasks to
/// use well over their class mean).
pub fn draw(rng: &mut impl RngCore, reference_memory_gb: f64, reference_cores: u32) -> GoogleTask {
    draw_with_row(
        rng,
        reference_memory_gb,
        reference_cores,
        ClassMix::Tasks,
        DemandSpread::EXPONENTIAL,
    )
    .1
}

/// How widely each class's CPU demand spreads around its mean: coefficients
/// of variation ≥ 1 for [`hyperexponential`] (1 is the exponential).
/// Table 5.2 gives one-week means only; the 15-hour window's spread is
/// left open (`google_demand_cv`, `google_class0_demand_cv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemandSpread {
    /// Every class's.
    pub all: f64,
    /// Class 0's, in place of `all` where given.
    pub class0: Option<f64>,
}

impl DemandSpread {
    /// The exponential for every class, as [`draw`] draws.
    pub const EXPONENTIAL: Self = Self {
        all: 1.0,
        class0: None,
    };

    fn of(&self, class: u8) -> f64 {
        match (class, self.class0) {
            (0, Some(cv)) => cv,
            _ => self.all,
        }
    }
}

/// [`draw`] with the classes in `mix`'s proportions and each class's CPU
/// demand drawn with the coefficient of variation `demand_cv` gives it.
pub fn draw_in(
    rng: &mut impl RngCore,
    reference_memory_gb: f64,
    reference_cores: u32,
    mix: ClassMix,
    demand_cv: DemandSpread,
) -> GoogleTask {
    draw_with_row(rng, reference_memory_gb, reference_cores, mix, demand_cv).1
}

/// [`draw_in`], with the row of the class drawn.
fn draw_with_row(
    rng: &mut impl RngCore,
    reference_memory_gb: f64,
    reference_cores: u32,
    mix: ClassMix,
    demand_cv: DemandSpread,
) -> (&'static Row, GoogleTask) {
    let class = draw_class_in(rng, mix);
    let cpu_demand = hyperexponential(rng, class.2, demand_cv.of(class.0));
    let task = GoogleTask {
        priority: class.0,
        cpu_demand,
        work_s: cpu_demand * f64::from(reference_cores),
        memory_gb: exponential(rng, class.5) * reference_memory_gb,
    };
    (class, task)
}

/// Smallest normalised CPU requirement a [`MapReduce`] task declares: an
/// exponential draw can come arbitrarily close to 0, and a requirement of
/// nothing would let a placement stack tasks on a server without bound.
pub const MIN_CPU_USAGE: f64 = 1e-4;

/// MapReduce-like jobs (thesis §4.2.1–4.2.2): each arrival is a job of `K`
/// tasks that arrive together, the first being the job's master.
///
/// `K` is geometric on 1, 2, … with mean `tasks_per_job` (`P(K > k) =
/// q^k`, `q = 1 − 1/tasks_per_job`). The thesis's trace does not say how
/// many tasks its jobs have (§4.2.1); the geometric is the maximum-entropy
/// choice for a given mean and has the long right tail of real job sizes
/// (most jobs small, a few large).
///
/// Every task is a [`draw`] of Table 5.2 (class, CPU demand Δ, work
/// `Δ · reference_cores`, memory), plus
/// - a CPU requirement: the normalised CPU usage it declares (§3.2's
///   `α^c`, §4.2.5), exponential with the class's mean usage (Table 5.2
///   column "CPU usage") and clamped to `[MIN_CPU_USAGE, 1]`;
/// - two flow sizes drawn independently from [`flow_sizes`] (§4.2.2):
///   its traffic with the outside world (reserved from a core switch) and
///   with its master (reserved from the master's server); the master's
///   internal flow is 0, it is the other end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapReduce {
    /// GB that normalised memory usage 1.0 stands for.
    pub memory_gb: f64,
    /// Cores of the reference machine (normalised CPU 1.0).
    pub reference_cores: u32,
    /// Mean tasks per job, at least 1.
    pub tasks_per_job: f64,
}

/// One task of a [`MapReduce`] job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobTask {
    pub task: GoogleTask,
    /// Normalised CPU requirement, in `[MIN_CPU_USAGE, 1]`.
    pub cpu_usage: f64,
    /// Flow size of its traffic with the outside world, bytes.
    pub external_bytes: u64,
    /// Flow size of its traffic with the job's master, bytes (0 for the master).
    pub internal_bytes: u64,
}

impl MapReduce {
    /// Tasks in the next job: geometric on 1, 2, … with mean `tasks_per_job`.
    pub fn job_size(&self, rng: &mut impl RngCore) -> u32 {
        let mean = self.tasks_per_job.min(MAX_TASKS_PER_JOB);
        if mean.is_nan() || mean <= 1.0 {
            return 1;
        }
        let q = 1.0 - 1.0 / mean;
        // P(floor(ln U / ln q) >= j) = P(U <= q^j) = q^j
        let extra = libm::floor(libm::log(uniform_open0(rng)) / libm::log(q));
        1 + extra.min(f64::from(u32::MAX - 1)) as u32
    }

    /// One task of a job; `master` is the job's first.
    pub fn draw_task(&self, rng: &mut impl RngCore, master: bool) -> JobTask {
        let (class, task) = draw_with_row(
            rng,
            self.memory_gb,
            self.reference_cores,
            ClassMix::Tasks,
            DemandSpread::EXPONENTIAL,
        );
        let cpu_usage = exponential(rng, class.4).clamp(MIN_CPU_USAGE, 1.0);
        let external_bytes = flow_sizes::draw(rng);
        let internal_bytes = if master { 0 } else { flow_sizes::draw(rng) };
        JobTask {
            task,
            cpu_usage,
            external_bytes,
            internal_bytes,
        }
    }

    /// The tasks of the next job, master first.
    pub fn draw_job(&self, rng: &mut impl RngCore) -> Vec<JobTask> {
        let k = self.job_size(rng);
        (0..k).map(|i| self.draw_task(rng, i == 0)).collect()
    }
}

/// The synthetic generator of thesis §9.3.4 (Table 9.4, workloads W-D and
/// W-E): classes in Table 5.2's proportions, but usages and execution times
/// exponential with one mean for production classes and one for the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Synthetic {
    /// Mean normalised CPU usage of a non-production task.
    pub cpu_usage: f64,
    /// Mean normalised memory usage of a non-production task.
    pub memory_usage: f64,
    /// Mean execution time of a non-production task at its usage, seconds.
    pub execution_s: f64,
    pub production_cpu_usage: f64,
    pub production_memory_usage: f64,
    pub production_execution_s: f64,
    /// Classes at or above this are production.
    pub production_priority: u8,
    /// GB that normalised memory usage 1.0 stands for.
    pub memory_gb: f64,
    /// Cores of the reference machine.
    pub reference_cores: u32,
}

impl Synthetic {
    /// Draws one task: its class, a CPU usage `u` and an execution time `T`
    /// at that usage (both exponential with the class group's means), so a
    /// CPU demand `Δ = u · T` and work `Δ · reference_cores`; and a memory
    /// usage (exponential) times `memory_gb`.
    pub fn draw(&self, rng: &mut impl RngCore) -> GoogleTask {
        let priority = draw_class(rng).0;
        let (cpu, execution, memory) = if priority >= self.production_priority {
            (
                self.production_cpu_usage,
                self.production_execution_s,
                self.production_memory_usage,
            )
        } else {
            (self.cpu_usage, self.execution_s, self.memory_usage)
        };
        let usage = exponential(rng, cpu);
        let cpu_demand = usage * exponential(rng, execution);
        GoogleTask {
            priority,
            cpu_demand,
            work_s: cpu_demand * f64::from(self.reference_cores),
            memory_gb: exponential(rng, memory) * self.memory_gb,
        }
    }
}

/// A DAG job's length type (harvesting §4.1, Algorithm 1 line 3): how
/// long the last run of its template took against two thresholds; a
/// template that never ran is medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobLength {
    Short,
    Medium,
    Long,
}

impl JobLength {
    pub const ALL: [JobLength; 3] = [JobLength::Short, JobLength::Medium, JobLength::Long];

    /// The type of a job whose template last ran for `last_ns` (none: never
    /// ran): short below `short_below_ns`, long from `long_from_ns`.
    pub fn of(last_ns: Option<u64>, short_below_ns: u64, long_from_ns: u64) -> JobLength {
        match last_ns {
            None => JobLength::Medium,
            Some(t) if t < short_below_ns => JobLength::Short,
            Some(t) if t >= long_from_ns => JobLength::Long,
            Some(_) => JobLength::Medium,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobLength::Short => "short",
            JobLength::Medium => "medium",
            JobLength::Long => "long",
        }
    }
}

/// A task's place in a DAG job, as the job's application master (Tez-H,
/// harvesting §5.3) tells the resource manager with each container request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagRef {
    /// The job: the id of its first task.
    pub job: u64,
    pub template: u32,
    pub stage: u32,
    /// J.req: the most containers the job runs at once, by a
    /// breadth-first traversal of its DAG (§4.1, Algorithm 1 line 4).
    pub req: u32,
    /// J.type (§4.1, Algorithm 1 line 3).
    pub length: JobLength,
}

/// One stage (a Tez vertex) of a job template: `tasks` tasks of `work_ns`
/// each, which start once all `parents` are done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    pub tasks: u32,
    pub work_ns: u64,
    /// Earlier stages (indices below this one's) whose output it reads.
    pub parents: Vec<u32>,
}

/// A job template: stages in topological order (every parent before its
/// children), one sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub stages: Vec<Stage>,
}

impl Template {
    /// Each stage's children.
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.stages.len()];
        for (j, s) in self.stages.iter().enumerate() {
            for &p in &s.parents {
                out[p as usize].push(j as u32);
            }
        }
        out
    }

    /// The wave of each stage in a breadth-first traversal that visits a
    /// stage once all its parents were visited (Kahn's algorithm): sources
    /// are wave 0, a stage is one wave after its last parent. The stages of
    /// one wave can run at the same time.
    pub fn waves(&self) -> Vec<u32> {
        let mut wave = vec![0u32; self.stages.len()];
        for (j, s) in self.stages.iter().enumerate() {
            wave[j] = s
                .parents
                .iter()
                .map(|&p| wave[p as usize] + 1)
                .max()
                .unwrap_or(0);
        }
        wave
    }

    /// J.req (harvesting §4.1, Algorithm 1 line 4): the most tasks of one
    /// breadth-first wave, the estimate of the containers the job needs at
    /// once.
    pub fn max_concurrency(&self) -> u32 {
        let waves = self.waves();
        let mut per_wave = vec![0u32; waves.iter().max().map_or(0, |w| *w as usize + 1)];
        for (s, &w) in self.stages.iter().zip(&waves) {
            per_wave[w as usize] = per_wave[w as usize].saturating_add(s.tasks);
        }
        per_wave.into_iter().max().unwrap_or(0)
    }

    /// The job's time alone on an idle cluster: its longest chain of
    /// stages, each taking its tasks' work (all tasks at once, speed 1).
    pub fn critical_path_ns(&self) -> u64 {
        let mut done = vec![0u64; self.stages.len()];
        for (j, s) in self.stages.iter().enumerate() {
            let start = s
                .parents
                .iter()
                .map(|&p| done[p as usize])
                .max()
                .unwrap_or(0);
            done[j] = start.saturating_add(s.work_ns);
        }
        done.into_iter().max().unwrap_or(0)
    }

    /// Tasks of all stages.
    pub fn tasks(&self) -> u64 {
        self.stages.iter().map(|s| u64::from(s.tasks)).sum()
    }
}

/// TPC-DS-like DAG jobs (harvesting §6.1: Hive queries that Tez runs as
/// DAGs of relational tasks, Figure 7). A template has `S` stages, `S`
/// uniform in `stages`: the first `1 + U{0, ⌊S/2⌋ − 1}` are scans (no
/// parents; at least one stage is left to join them when `S ≥ 2`), each
/// later stage reads the most recent unconsumed stage and, with
/// probability 0.7, one more unconsumed stage drawn uniformly (a join),
/// and the last stage reads every stage nobody read yet, so the DAG has one
/// sink. Each stage's task count is log-uniform in `tasks` and its tasks'
/// work log-uniform in `work_ns`, drawn once per template. The paper gives
/// only the example of Figure 7 (query 19) and the job times of Figure 11;
/// these shapes and ranges are this model's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DagJobs {
    pub stages: (u32, u32),
    pub tasks: (u32, u32),
    pub work_ns: (u64, u64),
}

/// `exp` of a uniform draw between `ln lo` and `ln hi`.
fn log_uniform(rng: &mut impl RngCore, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    let (a, b) = (libm::log(lo), libm::log(hi));
    libm::exp(a + (b - a) * uniform_open0(rng)).clamp(lo, hi)
}

impl DagJobs {
    /// Draws one template.
    pub fn template(&self, rng: &mut impl RngCore) -> Template {
        let (lo, hi) = (
            self.stages.0.max(1),
            self.stages.1.max(self.stages.0.max(1)),
        );
        let n = lo + index(rng, hi - lo + 1);
        let scans = if n < 2 {
            1
        } else {
            1 + index(rng, (n / 2).max(1))
        };
        let mut open: Vec<u32> = Vec::new();
        let mut stages = Vec::with_capacity(n as usize);
        for j in 0..n {
            let parents = if j < scans {
                Vec::new()
            } else if j == n - 1 {
                std::mem::take(&mut open)
            } else {
                let mut parents = vec![open.pop().unwrap_or(j - 1)];
                if !open.is_empty() && uniform_open0(rng) <= 0.7 {
                    let k = index(rng, open.len() as u32) as usize;
                    parents.push(open.remove(k));
                }
                parents.sort_unstable();
                parents
            };
            let tasks = libm::round(log_uniform(
                rng,
                f64::from(self.tasks.0.max(1)),
                f64::from(self.tasks.1.max(self.tasks.0.max(1))),
            )) as u32;
            let work = log_uniform(rng, self.work_ns.0.max(1) as f64, self.work_ns.1 as f64);
            stages.push(Stage {
                tasks: tasks.max(1),
                work_ns: to_nanos(work).max(1),
                parents,
            });
            open.push(j);
        }
        Template { stages }
    }
}

impl crate::config::MapReduceConfig {
    /// The generator this configures.
    pub fn generator(&self) -> MapReduce {
        MapReduce {
            memory_gb: self.memory_gb,
            reference_cores: self.reference_cores,
            tasks_per_job: self.tasks_per_job,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    fn class(p: u8) -> Row {
        TABLE_5_2.iter().find(|r| r.0 == p).copied().unwrap()
    }

    #[test]
    fn classes_come_in_the_tables_proportions() {
        let mut rng = actor_rng(1, "google");
        let n = 100_000;
        let mut counts = [0u32; 12];
        for _ in 0..n {
            counts[draw(&mut rng, 64.0, 8).priority as usize] += 1;
        }
        let share = |p: usize| f64::from(counts[p]) / n as f64 * 100.0;
        assert!((share(4) - 59.94).abs() < 0.6, "{}", share(4));
        assert!((share(0) - 23.29).abs() < 0.5, "{}", share(0));
        assert!((share(1) - 12.78).abs() < 0.4, "{}", share(1));
        assert_eq!(counts[7], 0, "class 7 has no demand figures");
    }

    #[test]
    fn a_demand_scale_multiplies_demand_and_work_and_keeps_class_and_memory() {
        let mut a = actor_rng(4, "google");
        let mut b = actor_rng(4, "google");
        for _ in 0..1_000 {
            let t = draw(&mut a, 64.0, 8);
            let s = draw(&mut b, 64.0, 8).with_demand_scaled(1.3);
            assert_eq!((s.priority, s.memory_gb), (t.priority, t.memory_gb));
            assert!((s.cpu_demand - 1.3 * t.cpu_demand).abs() <= 1e-12 * s.cpu_demand);
            assert!((s.work_s - 8.0 * s.cpu_demand).abs() <= 1e-9 * s.work_s.max(1.0));
        }
    }

    #[test]
    fn a_class0_demand_scale_moves_class_0_alone() {
        let mut a = actor_rng(5, "google");
        let mut b = actor_rng(5, "google");
        let (mut zeros, mut others) = (0, 0);
        for _ in 0..2_000 {
            let t = draw(&mut a, 64.0, 8);
            let s = draw(&mut b, 64.0, 8).with_class0_demand_scaled(4.0);
            assert_eq!((s.priority, s.memory_gb), (t.priority, t.memory_gb));
            if t.priority == 0 {
                zeros += 1;
                assert!((s.cpu_demand - 4.0 * t.cpu_demand).abs() <= 1e-12 * s.cpu_demand);
                assert!((s.work_s - 4.0 * t.work_s).abs() <= 1e-9 * s.work_s.max(1.0));
            } else {
                others += 1;
                assert_eq!((s.cpu_demand, s.work_s), (t.cpu_demand, t.work_s));
            }
        }
        assert!(zeros > 300 && others > 1_000, "{zeros} {others}");
    }

    #[test]
    fn a_class0_spread_moves_class_0_alone_and_keeps_the_stream() {
        let heavy = DemandSpread {
            all: 1.0,
            class0: Some(3.0),
        };
        let mut a = actor_rng(6, "google");
        let mut b = actor_rng(6, "google");
        let mut zeros = Vec::new();
        for _ in 0..20_000 {
            let t = draw_in(&mut a, 64.0, 8, ClassMix::Tasks, DemandSpread::EXPONENTIAL);
            let s = draw_in(&mut b, 64.0, 8, ClassMix::Tasks, heavy);
            assert_eq!((s.priority, s.memory_gb), (t.priority, t.memory_gb));
            if t.priority == 0 {
                zeros.push(s.cpu_demand);
            } else {
                assert_eq!((s.cpu_demand, s.work_s), (t.cpu_demand, t.work_s));
            }
        }
        assert_eq!(a.next_u64(), b.next_u64(), "the spread took more draws");
        let n = zeros.len() as f64;
        let mean = zeros.iter().sum::<f64>() / n;
        let sd = (zeros.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((mean / 15.41 - 1.0).abs() < 0.1, "class-0 mean {mean}");
        assert!(sd / mean > 2.4, "class-0 cv {}", sd / mean);
    }

    #[test]
    fn work_is_the_cpu_demand_on_one_core_of_the_reference_machine() {
        let mut rng = actor_rng(2, "google");
        let (mut sum, mut n, mut all, mut memory0) = (0.0, 0u32, 0.0, 0.0);
        let draws = 200_000;
        for _ in 0..draws {
            let t = draw(&mut rng, 64.0, 8);
            assert!((t.work_s - 8.0 * t.cpu_demand).abs() < 1e-9 * t.work_s.max(1.0));
            all += t.work_s;
            if t.priority == 0 {
                sum += t.work_s;
                n += 1;
                memory0 += t.memory_gb;
            }
        }
        let memory0 = memory0 / f64::from(n);
        assert!(
            (memory0 / (0.0035707 * 64.0) - 1.0).abs() < 0.03,
            "class 0 memory mean {memory0} GB"
        );
        let mean0 = sum / f64::from(n);
        let want = 15.408 * 8.0;
        assert!(
            (mean0 / want - 1.0).abs() < 0.03,
            "class 0 mean {mean0}, want {want}"
        );
        // the share-weighted mean of the rows: 43.93 cpu·s, 351 s of work
        let overall = all / f64::from(draws);
        assert!(
            (overall / 351.4 - 1.0).abs() < 0.05,
            "overall mean {overall}"
        );
        let mut rng = actor_rng(2, "google");
        let on4 = draw(&mut rng, 64.0, 4);
        let mut rng = actor_rng(2, "google");
        let on8 = draw(&mut rng, 64.0, 8);
        assert!((on8.work_s - 2.0 * on4.work_s).abs() < 1e-9 * on8.work_s);
    }

    #[test]
    fn high_classes_run_longer_and_use_more_memory() {
        assert!((mean_work_s(&class(0), 8) - 123.264).abs() < 1e-9);
        assert!(mean_work_s(&class(11), 8) > 50.0 * mean_work_s(&class(0), 8));
        assert!(class(11).5 > class(0).5);
    }

    /// Share-weighted mean of a column of Table 5.2 under `mix`.
    fn all_row(mix: ClassMix, column: impl Fn(&Row) -> f64) -> f64 {
        let total: f64 = TABLE_5_2.iter().map(|r| mix.weight(r)).sum();
        TABLE_5_2
            .iter()
            .map(|r| mix.weight(r) * column(r))
            .sum::<f64>()
            / total
    }

    #[test]
    fn all_row_follows_the_arrival_rates() {
        // Table 5.2's "All" row: interarrival 0.038519 s, CPU demand
        // 30.236 cpu·s, memory demand 19.249 ram·s, CPU usage 0.010376,
        // memory usage 0.0044162.
        let rate: f64 = INTERARRIVAL_S.iter().map(|(_, ia)| 1.0 / ia).sum();
        assert!((1.0 / rate / 0.038519 - 1.0).abs() < 0.01, "{}", 1.0 / rate);
        let near = |got: f64, want: f64, tol: f64| (got / want - 1.0).abs() < tol;
        let a = ClassMix::Arrivals;
        assert!(near(all_row(a, |r| r.2), 30.236, 0.01));
        assert!(near(all_row(a, |r| r.3), 19.249, 0.01));
        assert!(near(all_row(a, |r| r.4), 0.010376, 0.02));
        assert!(near(all_row(a, |r| r.5), 0.0044162, 0.01));
        // "% of tasks" misses every one of them by more than 20 %
        let t = ClassMix::Tasks;
        assert!(all_row(t, |r| r.2) / 30.236 > 1.4);
        assert!(all_row(t, |r| r.3) / 19.249 > 1.4);
        assert!(all_row(t, |r| r.4) / 0.010376 > 1.4);
        assert!(all_row(t, |r| r.5) / 0.0044162 > 1.2);
    }

    #[test]
    fn the_arrival_mix_draws_class_0_most() {
        let mut rng = actor_rng(1, "google");
        let n = 100_000;
        let mut counts = [0u32; 12];
        for _ in 0..n {
            counts[draw_in(
                &mut rng,
                64.0,
                8,
                ClassMix::Arrivals,
                DemandSpread::EXPONENTIAL,
            )
            .priority as usize] += 1;
        }
        let share = |p: usize| f64::from(counts[p]) / f64::from(n);
        // 1/0.059153 and 1/0.16401 of 1/0.038519 (less class 7's sliver)
        assert!((share(0) - 0.6512).abs() < 0.006, "{}", share(0));
        assert!((share(4) - 0.2349).abs() < 0.006, "{}", share(4));
        assert_eq!(counts[7], 0);
    }

    fn table_9_4() -> Synthetic {
        Synthetic {
            cpu_usage: 0.01,
            memory_usage: 0.01,
            execution_s: 3400.0,
            production_cpu_usage: 0.02,
            production_memory_usage: 0.02,
            production_execution_s: 27200.0,
            production_priority: 9,
            memory_gb: 64.0,
            reference_cores: 8,
        }
    }

    #[test]
    fn synthetic_tasks_have_the_means_of_table_9_4_by_group() {
        let g = table_9_4();
        let mut rng = actor_rng(3, "synthetic");
        // (count, Σ work, Σ memory) for non-production and production
        let mut acc = [(0u32, 0.0, 0.0); 2];
        let mut counts = [0u32; 12];
        let n = 400_000;
        for _ in 0..n {
            let t = g.draw(&mut rng);
            counts[t.priority as usize] += 1;
            let a = &mut acc[usize::from(t.priority >= 9)];
            a.0 += 1;
            a.1 += t.work_s;
            a.2 += t.memory_gb;
        }
        assert_eq!(counts[7], 0);
        let share0 = f64::from(counts[0]) / f64::from(n) * 100.0;
        assert!((share0 - 23.29).abs() < 0.5, "{share0}");
        let mean = |a: (u32, f64, f64)| (a.1 / f64::from(a.0), a.2 / f64::from(a.0));
        let (work, memory) = mean(acc[0]);
        // E[u·T] = E[u]·E[T] for independent draws: 0.01 · 3400 · 8 cores
        assert!((work / 272.0 - 1.0).abs() < 0.03, "work {work}");
        assert!((memory / 0.64 - 1.0).abs() < 0.03, "memory {memory}");
        let (work, memory) = mean(acc[1]);
        assert!((work / 4352.0 - 1.0).abs() < 0.1, "production work {work}");
        assert!(
            (memory / 1.28 - 1.0).abs() < 0.1,
            "production memory {memory}"
        );
    }

    #[test]
    fn the_production_threshold_moves_classes_between_groups() {
        let mut g = table_9_4();
        g.production_priority = 0;
        let mut rng = actor_rng(4, "synthetic");
        let n = 50_000;
        let work: f64 = (0..n).map(|_| g.draw(&mut rng).work_s).sum::<f64>() / f64::from(n);
        assert!((work / 4352.0 - 1.0).abs() < 0.05, "all production: {work}");
    }

    fn mapreduce(tasks_per_job: f64) -> MapReduce {
        MapReduce {
            memory_gb: 64.0,
            reference_cores: 8,
            tasks_per_job,
        }
    }

    #[test]
    fn job_sizes_are_geometric_with_the_requested_mean() {
        let g = mapreduce(10.0);
        let mut rng = actor_rng(5, "mapreduce");
        let n = 200_000u32;
        let sizes: Vec<u32> = (0..n).map(|_| g.job_size(&mut rng)).collect();
        assert!(sizes.iter().all(|&k| k >= 1));
        let mean = sizes.iter().map(|&k| f64::from(k)).sum::<f64>() / f64::from(n);
        assert!((mean / 10.0 - 1.0).abs() < 0.02, "mean {mean}");
        // P(K = 1) = 1 / mean, P(K > 10) = 0.9^10
        let share =
            |f: &dyn Fn(u32) -> bool| sizes.iter().filter(|&&k| f(k)).count() as f64 / f64::from(n);
        assert!((share(&|k| k == 1) - 0.1).abs() < 0.005);
        assert!((share(&|k| k > 10) - libm::pow(0.9, 10.0)).abs() < 0.005);
        let one = mapreduce(1.0);
        assert!((0..1000).all(|_| one.job_size(&mut rng) == 1));
    }

    #[test]
    fn a_job_has_one_master_first_and_every_task_a_requirement_and_flows() {
        let g = mapreduce(6.0);
        let mut rng = actor_rng(6, "mapreduce");
        let mut tasks = 0;
        for _ in 0..5_000 {
            let job = g.draw_job(&mut rng);
            assert!(!job.is_empty());
            assert_eq!(job[0].internal_bytes, 0, "the master is the other end");
            for t in &job {
                assert!((MIN_CPU_USAGE..=1.0).contains(&t.cpu_usage), "{t:?}");
                assert!((100..=100_000_000).contains(&t.external_bytes), "{t:?}");
                assert!(
                    (t.task.work_s - 8.0 * t.task.cpu_demand).abs() <= 1e-9 * t.task.work_s,
                    "work is Δ · reference_cores as draw() makes it"
                );
            }
            for t in &job[1..] {
                assert!((100..=100_000_000).contains(&t.internal_bytes), "{t:?}");
            }
            tasks += job.len();
        }
        assert!((tasks as f64 / 5_000.0 / 6.0 - 1.0).abs() < 0.05, "{tasks}");
    }

    #[test]
    fn cpu_requirements_have_the_class_mean_usage() {
        let g = mapreduce(10.0);
        let mut rng = actor_rng(7, "mapreduce");
        // (count, Σ usage) per class
        let mut acc = [(0u32, 0.0); 12];
        for _ in 0..300_000 {
            let t = g.draw_task(&mut rng, false);
            let a = &mut acc[t.task.priority as usize];
            a.0 += 1;
            a.1 += t.cpu_usage;
        }
        for p in [0u8, 1, 4] {
            let (n, sum) = acc[p as usize];
            let mean = sum / f64::from(n);
            let want = class(p).4;
            // the clamp at 1e-4 lifts the mean by under 0.05 %
            assert!(
                (mean / want - 1.0).abs() < 0.03,
                "class {p}: mean usage {mean}, want {want}"
            );
        }
    }

    #[test]
    fn job_tasks_draw_like_the_table_5_2_generator() {
        // the task part of a job's task is exactly draw()'s, from the same stream
        let g = mapreduce(3.0);
        let mut a = actor_rng(8, "mapreduce");
        let mut b = actor_rng(8, "mapreduce");
        let t = g.draw_task(&mut a, true);
        assert_eq!(t.task, draw(&mut b, 64.0, 8));
    }

    #[test]
    fn max_concurrency_is_the_widest_breadth_first_wave() {
        let stage = |tasks: u32, parents: &[u32]| Stage {
            tasks,
            work_ns: 1,
            parents: parents.to_vec(),
        };
        // scans 0 (10), 1 (20), 2 (30); 3 joins 0 and 1 (5 tasks); 4 joins
        // 3 and 2 (40): waves {0,1,2} = 60, {3} = 5, {4} = 40.
        let t = Template {
            stages: vec![
                stage(10, &[]),
                stage(20, &[]),
                stage(30, &[]),
                stage(5, &[0, 1]),
                stage(40, &[2, 3]),
            ],
        };
        assert_eq!(t.waves(), vec![0, 0, 0, 1, 2]);
        assert_eq!(t.max_concurrency(), 60);
        // stage 4 waits for 3 (wave 2) even though scan 2 feeds it directly
        let t = Template {
            stages: vec![
                stage(10, &[]),
                stage(20, &[0]),
                stage(30, &[]),
                stage(25, &[1]),
                stage(15, &[3, 2]),
            ],
        };
        assert_eq!(t.waves(), vec![0, 1, 0, 2, 3]);
        assert_eq!(t.max_concurrency(), 40, "wave 0: 10 + 30");
        let timed = Template {
            stages: vec![
                Stage {
                    work_ns: 5,
                    ..stage(1, &[])
                },
                Stage {
                    work_ns: 7,
                    ..stage(1, &[0])
                },
                Stage {
                    work_ns: 20,
                    ..stage(1, &[])
                },
                Stage {
                    work_ns: 1,
                    ..stage(1, &[1, 2])
                },
            ],
        };
        assert_eq!(timed.critical_path_ns(), 21, "20 + 1 beats 5 + 7 + 1");
        assert_eq!(t.tasks(), 100);
        let chain = Template {
            stages: vec![stage(3, &[]), stage(7, &[0]), stage(2, &[1])],
        };
        assert_eq!(chain.max_concurrency(), 7);
    }

    #[test]
    fn templates_are_connected_dags_with_one_sink_within_the_ranges() {
        let g = DagJobs {
            stages: (1, 8),
            tasks: (4, 100),
            work_ns: (10_000_000_000, 300_000_000_000),
        };
        let mut rng = actor_rng(9, "dag");
        let mut sizes = [0u32; 9];
        for _ in 0..2_000 {
            let t = g.template(&mut rng);
            let n = t.stages.len();
            sizes[n] += 1;
            assert!((1..=8).contains(&n));
            for (j, s) in t.stages.iter().enumerate() {
                assert!(s.parents.iter().all(|&p| (p as usize) < j), "{t:?}");
                assert!((4..=100).contains(&s.tasks));
                assert!((10_000_000_000..=300_000_000_000).contains(&s.work_ns));
            }
            let children = t.children();
            let sinks = children.iter().filter(|c| c.is_empty()).count();
            assert_eq!(sinks, 1, "one sink: {t:?}");
            assert!(children[n - 1].is_empty());
            assert!(n < 2 || !t.stages[n - 1].parents.is_empty());
            let req = t.max_concurrency();
            assert!(req >= t.stages.iter().map(|s| s.tasks).max().unwrap());
            assert!(u64::from(req) <= t.tasks());
        }
        assert!(sizes[1..].iter().all(|&c| c > 150), "{sizes:?}");
    }

    #[test]
    fn a_job_is_short_medium_or_long_by_its_last_run_and_medium_before() {
        let (s, l) = (173_000_000_000, 433_000_000_000);
        assert_eq!(JobLength::of(None, s, l), JobLength::Medium);
        assert_eq!(JobLength::of(Some(s - 1), s, l), JobLength::Short);
        assert_eq!(JobLength::of(Some(s), s, l), JobLength::Medium);
        assert_eq!(JobLength::of(Some(l - 1), s, l), JobLength::Medium);
        assert_eq!(JobLength::of(Some(l), s, l), JobLength::Long);
    }
}
