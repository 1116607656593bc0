//! The generators of thesis-style workloads a tenant may draw from:
//! `tenants.synthetic` (Table 9.4), `tenants.mapreduce` (§4.2.1-4.2.2) and
//! `tenants.dag_jobs` (harvesting §6.1), each with its defaults and checks.

use dcemu_topology::Duration;
use serde::{Deserialize, Serialize};

use super::Problem;
use super::servers::REFERENCE_CORES;

/// `tenants.synthetic`: the synthetic Google-like generator of thesis
/// §9.3.4 (Table 9.4). Classes come in Table 5.2's proportions; a task's
/// normalised CPU usage, execution time at that usage and normalised memory
/// usage are exponential with the means below, production classes
/// (`production_priority` and up) with their own. The defaults are Table 9.4's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticConfig {
    /// GB that normalised memory usage 1.0 stands for (the reference machine).
    pub memory_gb: f64,
    /// Cores of the reference machine: work = CPU usage × execution × this.
    #[serde(default = "default_reference_cores")]
    pub reference_cores: u32,
    #[serde(default = "default_synthetic_usage")]
    pub cpu_usage: f64,
    #[serde(default = "default_synthetic_usage")]
    pub memory_usage: f64,
    #[serde(default = "default_synthetic_execution")]
    pub execution: Duration,
    #[serde(default = "default_production_usage")]
    pub production_cpu_usage: f64,
    #[serde(default = "default_production_usage")]
    pub production_memory_usage: f64,
    #[serde(default = "default_production_execution")]
    pub production_execution: Duration,
    /// Lowest production class (thesis §5.1.1: 9–11).
    #[serde(default = "default_synthetic_production_priority")]
    pub production_priority: u8,
}

fn default_reference_cores() -> u32 {
    REFERENCE_CORES
}

fn default_synthetic_usage() -> f64 {
    0.01
}

fn default_production_usage() -> f64 {
    0.02
}

fn default_synthetic_execution() -> Duration {
    Duration::from_secs(3400)
}

fn default_production_execution() -> Duration {
    Duration::from_secs(27200)
}

fn default_synthetic_production_priority() -> u8 {
    9
}

impl SyntheticConfig {
    /// Field problems, relative to `synthetic`.
    pub(super) fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if !(self.memory_gb.is_finite() && self.memory_gb > 0.0) {
            out.push((
                "synthetic.memory_gb".into(),
                format!("must be a positive number of GB, got {}", self.memory_gb),
            ));
        }
        if self.reference_cores == 0 {
            out.push((
                "synthetic.reference_cores".into(),
                "must be at least 1".into(),
            ));
        }
        for (field, u) in [
            ("synthetic.cpu_usage", self.cpu_usage),
            ("synthetic.production_cpu_usage", self.production_cpu_usage),
        ] {
            if !(u.is_finite() && u > 0.0) {
                out.push((
                    field.into(),
                    format!("must be a positive mean normalised usage, got {u}"),
                ));
            }
        }
        for (field, u) in [
            ("synthetic.memory_usage", self.memory_usage),
            (
                "synthetic.production_memory_usage",
                self.production_memory_usage,
            ),
        ] {
            if !(u.is_finite() && u >= 0.0) {
                out.push((
                    field.into(),
                    format!("must be a non-negative mean normalised usage, got {u}"),
                ));
            }
        }
        for (field, d) in [
            ("synthetic.execution", self.execution),
            ("synthetic.production_execution", self.production_execution),
        ] {
            if d == Duration::ZERO {
                out.push((field.into(), "must be greater than 0".into()));
            }
        }
        if self.production_priority > 11 {
            out.push((
                "synthetic.production_priority".into(),
                format!("must be between 0 and 11, got {}", self.production_priority),
            ));
        }
        out
    }
}

/// `tenants.mapreduce`: MapReduce-like jobs (thesis §4.2.1–4.2.2). Each
/// arrival of the tenant's process is one job of `K ≥ 1` tasks submitted at
/// once, `K` geometric with mean `tasks_per_job`; every task is drawn from
/// Table 5.2 as with `google_memory_gb`, with a CPU requirement and two flow
/// sizes (see [`crate::google::MapReduce`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapReduceConfig {
    /// GB that normalised memory usage 1.0 stands for (the reference machine).
    pub memory_gb: f64,
    /// Cores of the reference machine: work = CPU demand × this.
    #[serde(default = "default_reference_cores")]
    pub reference_cores: u32,
    /// Mean tasks per job, 1 to 10,000.
    #[serde(default = "default_tasks_per_job")]
    pub tasks_per_job: f64,
}

fn default_tasks_per_job() -> f64 {
    10.0
}

impl MapReduceConfig {
    /// Field problems, relative to `mapreduce`.
    pub(super) fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if !(self.memory_gb.is_finite() && self.memory_gb > 0.0) {
            out.push((
                "mapreduce.memory_gb".into(),
                format!("must be a positive number of GB, got {}", self.memory_gb),
            ));
        }
        if self.reference_cores == 0 {
            out.push((
                "mapreduce.reference_cores".into(),
                "must be at least 1".into(),
            ));
        }
        let max = MAX_TASKS_PER_JOB;
        if !(self.tasks_per_job >= 1.0 && self.tasks_per_job <= max) {
            out.push((
                "mapreduce.tasks_per_job".into(),
                format!(
                    "must be a mean number of tasks between 1 and {max}, got {}",
                    self.tasks_per_job
                ),
            ));
        }
        out
    }
}

/// `tenants.dag_jobs`: TPC-DS-like DAG jobs (harvesting §4.1, §6.1). At
/// start the tenant draws `templates` job templates, each a DAG of stages
/// with a task count and a per-task work drawn once (log-uniform in the
/// ranges below); every arrival runs one template picked uniformly. A
/// stage's tasks are submitted when all its parent stages are done. Each
/// task tells the scheduler its job, the job's maximum concurrency (BFS
/// over the DAG) and the job's length type from the template's last run
/// (short below `short_below`, long from `long_from`, medium between and
/// before any run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DagJobsConfig {
    /// Distinct job templates (the testbed's 52 TPC-DS queries, §6.1).
    pub templates: u32,
    /// Stages per template, uniform in `[stages_min, stages_max]`.
    #[serde(default = "default_dag_stages_min")]
    pub stages_min: u32,
    #[serde(default = "default_dag_stages_max")]
    pub stages_max: u32,
    /// Tasks per stage, log-uniform in `[tasks_min, tasks_max]`.
    #[serde(default = "default_dag_tasks_min")]
    pub tasks_min: u32,
    #[serde(default = "default_dag_tasks_max")]
    pub tasks_max: u32,
    /// Work of each task of a stage (alone on one core of speed 1),
    /// log-uniform in `[task_time_min, task_time_max]`.
    #[serde(default = "default_dag_task_time_min")]
    pub task_time_min: Duration,
    #[serde(default = "default_dag_task_time_max")]
    pub task_time_max: Duration,
    /// Factor on both ends of the stage width (`tasks_min`, `tasks_max`,
    /// rounded, at least 1): the queries' sizes, which the harvesting paper
    /// does not give (§6.1), as one number a calibration can fit. Default 1.
    #[serde(default = "unit_factor", skip_serializing_if = "is_unit_factor")]
    pub width_scale: f64,
    /// Factor on both ends of the task work (`task_time_min`,
    /// `task_time_max`): the queries' lengths, likewise. Default 1.
    #[serde(default = "unit_factor", skip_serializing_if = "is_unit_factor")]
    pub time_scale: f64,
    /// Memory of every task, GB. Default 0.
    #[serde(default)]
    pub memory_gb: f64,
    /// A template whose last run took less than this is a short job (§6.1: 173 s).
    #[serde(default = "default_short_below")]
    pub short_below: Duration,
    /// ... and from this on a long one (§6.1: 433 s).
    #[serde(default = "default_long_from")]
    pub long_from: Duration,
    /// What the tenant knows of its templates before their first run:
    /// `none` (each first run is a medium job, §4.1) or `ideal` (as if each
    /// had run once alone on an idle cluster: its critical path).
    #[serde(default)]
    pub history: DagHistory,
}

/// `tenants.dag_jobs.history`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DagHistory {
    #[default]
    None,
    Ideal,
}

fn default_dag_stages_min() -> u32 {
    2
}

fn default_dag_stages_max() -> u32 {
    8
}

fn default_dag_tasks_min() -> u32 {
    4
}

fn default_dag_tasks_max() -> u32 {
    100
}

fn default_dag_task_time_min() -> Duration {
    Duration::from_secs(10)
}

fn default_dag_task_time_max() -> Duration {
    Duration::from_secs(300)
}

fn default_short_below() -> Duration {
    Duration::from_secs(173)
}

fn default_long_from() -> Duration {
    Duration::from_secs(433)
}

fn unit_factor() -> f64 {
    1.0
}

/// Left out of a run's `scenario.toml` at its default, so that adding the
/// setting left every earlier digest as it was.
fn is_unit_factor(k: &f64) -> bool {
    *k == 1.0
}

impl DagJobsConfig {
    /// Tasks per stage after `width_scale`: `(min, max)`, each rounded and
    /// at least 1.
    pub fn widths(&self) -> (u32, u32) {
        let scaled = |n: u32| (libm::round(f64::from(n) * self.width_scale) as u32).max(1);
        (scaled(self.tasks_min), scaled(self.tasks_max))
    }

    /// Work per task after `time_scale`: `(min, max)` in ns, at least 1.
    pub fn work_ns(&self) -> (u64, u64) {
        let scaled = |d: Duration| {
            if self.time_scale == 1.0 {
                d.as_nanos()
            } else {
                crate::sampling::to_nanos(d.as_nanos() as f64 * self.time_scale).max(1)
            }
        };
        (scaled(self.task_time_min), scaled(self.task_time_max))
    }
}

/// Most templates, stages per template and tasks per stage of `dag_jobs`.
pub const MAX_DAG_TEMPLATES: u32 = 10_000;

pub const MAX_DAG_STAGES: u32 = 64;

pub const MAX_DAG_TASKS: u32 = 100_000;

impl DagJobsConfig {
    /// Field problems, relative to `dag_jobs`.
    pub(super) fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut push = |f: &str, p: String| out.push((format!("dag_jobs.{f}"), p));
        if !(1..=MAX_DAG_TEMPLATES).contains(&self.templates) {
            push(
                "templates",
                format!(
                    "must be between 1 and {MAX_DAG_TEMPLATES}, got {}",
                    self.templates
                ),
            );
        }
        if !(1..=MAX_DAG_STAGES).contains(&self.stages_min) {
            push(
                "stages_min",
                format!(
                    "must be between 1 and {MAX_DAG_STAGES}, got {}",
                    self.stages_min
                ),
            );
        }
        if !(self.stages_min..=MAX_DAG_STAGES).contains(&self.stages_max) {
            push(
                "stages_max",
                format!(
                    "must be between stages_min ({}) and {MAX_DAG_STAGES}, got {}",
                    self.stages_min, self.stages_max
                ),
            );
        }
        if !(1..=MAX_DAG_TASKS).contains(&self.tasks_min) {
            push(
                "tasks_min",
                format!(
                    "must be between 1 and {MAX_DAG_TASKS}, got {}",
                    self.tasks_min
                ),
            );
        }
        if !(self.tasks_min..=MAX_DAG_TASKS).contains(&self.tasks_max) {
            push(
                "tasks_max",
                format!(
                    "must be between tasks_min ({}) and {MAX_DAG_TASKS}, got {}",
                    self.tasks_min, self.tasks_max
                ),
            );
        }
        for (field, k) in [
            ("width_scale", self.width_scale),
            ("time_scale", self.time_scale),
        ] {
            if !(k.is_finite() && k > 0.0) {
                push(field, format!("must be a positive factor, got {k}"));
            }
        }
        if self.width_scale.is_finite()
            && self.width_scale > 0.0
            && f64::from(self.tasks_max) * self.width_scale > f64::from(MAX_DAG_TASKS)
        {
            push(
                "width_scale",
                format!(
                    "tasks_max x width_scale must be at most {MAX_DAG_TASKS}, got {} x {}",
                    self.tasks_max, self.width_scale
                ),
            );
        }
        if self.task_time_min == Duration::ZERO {
            push("task_time_min", "must be greater than 0".into());
        }
        if self.task_time_max < self.task_time_min {
            push(
                "task_time_max",
                format!(
                    "must be at least task_time_min ({}), got {}",
                    self.task_time_min, self.task_time_max
                ),
            );
        }
        if !(self.memory_gb.is_finite() && self.memory_gb >= 0.0) {
            push(
                "memory_gb",
                format!(
                    "must be a non-negative number of GB, got {}",
                    self.memory_gb
                ),
            );
        }
        if self.long_from <= self.short_below {
            push(
                "long_from",
                format!(
                    "must be after short_below ({}), got {}",
                    self.short_below, self.long_from
                ),
            );
        }
        out
    }
}

/// Most tasks one job may average (`tasks_per_job`): a job's tasks are
/// submitted in one handler call.
pub const MAX_TASKS_PER_JOB: f64 = 10_000.0;
