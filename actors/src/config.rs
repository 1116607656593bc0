//! The parts of a scenario that configure model actors: `[[server_types]]`,
//! `[[tenants]]` and `[scheduler]`. Every field, its default and its unit is
//! documented in `scenarios/README.md`.

use dcemu_topology::{Bandwidth, Duration, ServerPower};

use serde::{Deserialize, Serialize};

use crate::trace_formats::TraceFormat;

/// A field-level problem: dotted path relative to the section, and why.
pub type Problem = (String, String);

/// `[[server_types]]`: a group of identical servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTypeConfig {
    /// Label of the configuration (e.g. `"standard"`); appears in logs.
    pub name: String,
    /// How many servers of this type the datacenter has.
    pub count: u32,
    /// Tasks a server runs at once; a task takes exactly one slot.
    #[serde(default = "one")]
    pub slots: u32,
    /// Cores; running tasks share them, at most one core each (thesis eq. 6.2).
    /// Default: as many as slots, so every task has a core of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// Speed of one core relative to the reference core a task's work is
    /// measured on.
    #[serde(default = "unit_speed")]
    pub core_speed: f64,
    /// Clock frequency of a core, GHz (shapes applications' speed on this
    /// configuration in the ground truth). Default 2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_ghz: Option<f64>,
    /// Memory of the server, GB. Default 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb: Option<f64>,
    /// Last-level cache, MB. Default 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_mb: Option<f64>,
    /// Disk space for harvested storage (block replicas), GB. Default 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_gb: Option<f64>,
    /// Power figures of a server type of thesis Table 3.1 (`"A"` … `"D"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<ServerPreset>,
    /// Power figures in watts; override `preset`. Default: type A.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<ServerPower>,
}

/// The four dominant server types of the Google trace (thesis Table 3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerPreset {
    A,
    B,
    C,
    D,
}

impl ServerPreset {
    pub fn power(self) -> ServerPower {
        match self {
            ServerPreset::A => ServerPower::THESIS_A,
            ServerPreset::B => ServerPower::THESIS_B,
            ServerPreset::C => ServerPower::THESIS_C,
            ServerPreset::D => ServerPower::THESIS_D,
        }
    }
}

/// `[[tenants]]`: who submits work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// Label; actors are named `tenant-<name>-<i>`.
    pub name: String,
    #[serde(default)]
    pub kind: TenantKind,
    /// Identical tenants of this kind, each with its own random stream.
    #[serde(default = "one")]
    pub count: u32,
    pub arrivals: ArrivalConfig,
    /// Service times of plain tasks; exclusive with `applications`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceConfig>,
    /// Draw each task's priority class, CPU demand and memory from the
    /// per-priority statistics of the Google trace (thesis Table 5.2), with
    /// normalised memory 1.0 standing for `google_memory_gb`; exclusive with
    /// `service`, `applications`, `synthetic` and `priority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_memory_gb: Option<f64>,
    /// Table 5.2 generator: cores of the reference machine (normalised CPU
    /// 1.0); a task's work is its CPU demand times this (thesis eq. 6.1).
    /// Default 8 (type D of Table 7.1); only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_reference_cores: Option<u32>,
    /// Table 5.2 generator: which column gives the classes' shares, `tasks`
    /// ("% of tasks", the default) or `arrivals` (the classes' arrival
    /// rates, which the table's "All" row averages over;
    /// [`ClassMix`]). Only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_class_mix: Option<ClassMix>,
    /// Table 5.2 generator: factor on every class's mean CPU demand, for a
    /// window of the trace whose demand is not the one-week mean the table
    /// reports (the thesis publishes no per-class demand of its 15-h
    /// trace; `thesis/google-15h.toml` says how its value is calibrated).
    /// Default 1; only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_demand_scale: Option<f64>,
    /// Table 5.2 generator: coefficient of variation of each class's CPU
    /// demand around its mean, ≥ 1 (a two-phase hyperexponential,
    /// [`crate::sampling::hyperexponential`]; 1, the default, is the
    /// exponential). Table 5.2 gives means only; the Google trace's task
    /// lengths are heavy-tailed. No committed scenario sets it yet: fitted
    /// beside the demand level it made the thesis's WASC runs bistable
    /// across seeds (issue 38's note). Only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_demand_cv: Option<f64>,
    /// Draw each task from the synthetic generator of thesis Table 9.4
    /// (W-D, W-E); exclusive with `service`, `applications`,
    /// `google_memory_gb` and `priority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticConfig>,
    /// Each arrival is one MapReduce-like job of Table 5.2 tasks with CPU
    /// requirements and flow sizes (thesis §4.2.1–4.2.2,
    /// [`crate::google::MapReduce`]); exclusive with `service`,
    /// `applications`, `google_memory_gb`, `synthetic`, `priority`,
    /// `flow_bandwidth` and trace arrivals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapreduce: Option<MapReduceConfig>,
    /// Each arrival is one TPC-DS-like DAG job drawn from a set of job
    /// templates, submitted stage by stage (harvesting §4.1, §6.1,
    /// [`crate::google::DagJobs`]); exclusive with `service`,
    /// `applications`, `google_memory_gb`, `synthetic`, `mapreduce`,
    /// `priority`, `flow_bandwidth` and trace arrivals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag_jobs: Option<DagJobsConfig>,
    /// Submit applications of the `[applications]` catalog instead of plain
    /// tasks: in catalog order (`sequential`) or drawn at random (`random`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applications: Option<AppOrder>,
    /// First submission no earlier than this.
    #[serde(default)]
    pub start: Duration,
    /// No submission at or after this (default: the end of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// Priority class of its tasks, 0 (lowest) to 11 (thesis Table 5.2);
    /// a trace's rows carry their own. Default 0.
    #[serde(default)]
    pub priority: u8,
    /// Bandwidth each task's traffic to the outside world needs while it
    /// runs, reserved from a core switch to its server (three-tier only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_bandwidth: Option<Bandwidth>,
    /// Each arrival submits the `[workload]` mix of distributed
    /// applications (ASPLOS'16 §5, Table 5), once per mix round.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub distributed: bool,
}

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
    fn problems(&self) -> Vec<Problem> {
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
    fn problems(&self) -> Vec<Problem> {
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
    fn problems(&self) -> Vec<Problem> {
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

/// `tenants.applications`: which catalog application each submission runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppOrder {
    /// Application 0, 1, 2, … (wrapping around).
    Sequential,
    /// Uniformly at random from the catalog.
    Random,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TenantKind {
    /// Submits tasks from a generator.
    #[default]
    Workload,
}

/// `[tenants.arrivals]`: when tasks are submitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalConfig {
    pub process: ArrivalProcess,
    /// Mean submissions per second of virtual time (not with `trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Standard deviation of the gap between submissions (`gaussian` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_stddev: Option<Duration>,
    /// Bursty: submissions per second during a burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_rate_per_s: Option<f64>,
    /// Multiplies every rate of the process (`rate_per_s` and, when bursty,
    /// `burst_rate_per_s`): the load's level with its shape held, which is
    /// what a calibration fits when a paper gives no arrival rate (GEMS,
    /// thesis §4.2.1). Not with `trace`. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_scale: Option<f64>,
    /// Bursty: mean time from the end of one burst to the start of the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_every: Option<Duration>,
    /// Bursty: mean length of a burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_length: Option<Duration>,
    /// Trace to replay (`trace` only; docs/traces.md), relative to the
    /// scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The trace's format: dcemu's own `csv` (default) or a public format
    /// read as a stream (docs/traces.md).
    #[serde(default, skip_serializing_if = "is_csv")]
    pub format: TraceFormat,
    /// The trace's machine table, relative to the scenario file: builds the
    /// server list (`server_types` becomes one type per capacity, from the
    /// scenario's single server type as template). For `swf`, `"header"`
    /// reads the trace's own `MaxNodes` / `MaxProcs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<String>,
    /// Google 2019: the trace's `collection_events` table (JSON lines, in
    /// time order, relative to the scenario file), read beside the
    /// instances for each job's `max_per_machine`: a job with 1 never has
    /// two running tasks on one server (docs/traces.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collections: Option<String>,
    /// `alibaba-2018-instance`: a `machine_meta` table whose machine ids
    /// every row's `machine_id` should be among (a known defect otherwise),
    /// without building servers from it. The scenario as run records
    /// `machines` this way, its servers being built already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_ids: Option<String>,
    /// Cores of one unit of the trace's CPU (default: the largest server
    /// type's cores for the normalised Google formats, 1 otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_per_unit: Option<f64>,
    /// GB of one unit of the trace's memory (default: the largest server
    /// type's memory for Google and Alibaba, 1 for Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gb_per_unit: Option<f64>,
    /// Google formats: how long a task may stay unresolved after its
    /// submission before it is released (default 1 h); bounds memory.
    /// Google and Alibaba formats: how long a job whose tasks all ended
    /// stays open for more before its response time is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookahead: Option<Duration>,
    /// Skip bad rows of a streamed trace and count them
    /// (`trace_rows_skipped`) instead of stopping; `dcemu run --lenient`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lenient: bool,
    /// SWF: a job that ran longer than it requested (field 4 over field 9)
    /// is killed at its requested time, as the log's machine would have,
    /// rather than run its whole recorded time (counted in
    /// `trace_tasks_killed_at_request`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub kill_at_request: bool,
}

fn is_csv(f: &TraceFormat) -> bool {
    *f == TraceFormat::Csv
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Default of `arrivals.lookahead`.
pub const DEFAULT_LOOKAHEAD: Duration = Duration::from_secs(3_600);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalProcess {
    /// Exponential inter-arrival times (a Poisson process).
    Poisson,
    /// Exactly `1 / rate_per_s` apart.
    Constant,
    /// Gaps drawn from a normal distribution with mean `1 / rate_per_s` and
    /// standard deviation `gap_stddev`, negative draws taken as 0 (Paragon
    /// §5's medium load: μ = 10 s, σ² = 1).
    Gaussian,
    /// The rows of the `trace` file, at their arrival times.
    Trace,
    /// A Poisson process at `rate_per_s` interrupted by bursts at
    /// `burst_rate_per_s`; gaps between bursts and burst lengths are
    /// exponential with means `burst_every` and `burst_length` (thesis
    /// Table 9.4's semi-synthetic workloads).
    Bursty,
}

/// `[tenants.service]`: how long a task runs once it has a slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub distribution: ServiceDistribution,
    pub mean: Duration,
    /// Average memory each task uses once grown, GB. Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceDistribution {
    Exponential,
    Constant,
}

/// `[scheduler]`: the scheduler's pipeline stages (admission, placement,
/// slots) and what its classification engine does (Paragon §2–§4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Admission stage: `fifo` (one queue, head of line) or `arq` (Paragon §4).
    #[serde(default)]
    pub admission: AdmissionKind,
    #[serde(default)]
    pub placement: PlacementKind,
    /// Slot stage; `none` is the only one today (priority policies come with
    /// the thesis's slot scheduler).
    #[serde(default)]
    pub slots: SlotPolicy,
    /// How long a task killed for a primary tenant (or evicted) waits before
    /// it is placed again (a node manager's heartbeat, harvesting §5). Default 1s.
    #[serde(default = "default_resubmit")]
    pub resubmit_delay: Duration,
    /// Memory eviction policy (thesis §6.2.3.4): `lsf`, `lpf`, or `none`
    /// (memory is not enforced). Default none.
    #[serde(default)]
    pub memory_eviction: MemoryEviction,
    /// Evicted tasks resume where they stopped (true) or start over (false:
    /// their work so far is wasted). Default false.
    #[serde(default)]
    pub resume: bool,
    /// How often each server reports its state to the scheduler; "0s" (the
    /// default) turns reports off. Reports keep a run going until its end,
    /// so they are on only where a policy reads them.
    #[serde(default = "default_report")]
    pub report_interval: Duration,
    /// Paragon §3.2 greedy search or §3.3 hash-sampled statistical selection.
    #[serde(default)]
    pub selection: SelectionKind,
    /// Servers the statistical selection samples (§3.3, Fig. 5: 16–128).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// Bound on the greedy search's server examinations (§3.2 timeout).
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// Length of the profiling runs of a new application (§2.4: about a
    /// minute on two configurations and against two microbenchmarks, in
    /// parallel). Part of its response time.
    #[serde(default = "default_profile_time")]
    pub profile_time: Duration,
    /// The profiling and classification overhead as a share of the
    /// application's declared ideal time instead of `profile_time`
    /// (Paragon §6.1, Fig. 12: training 1.2 % and classification 0.09 % of
    /// an application's run). Issue 37 decides the conflict between §5's
    /// 1-6 minute applications and §3's one-minute profiling this way, so
    /// that ARQ's slack `1.05·CT − P` (§4.2) stays positive. Unset (the
    /// default): `profile_time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_share: Option<f64>,
    /// Relative noise of a profiling measurement: the standard deviation of
    /// ln IPS, and of a sensitivity score in units of 100 points.
    #[serde(default = "default_profile_noise")]
    pub profile_noise: f64,
    /// Applications profiled offline on every configuration and source
    /// (§2.2: 20 for the 40-server cluster, 30 for 1,000 servers).
    #[serde(default = "default_training_apps")]
    pub training_apps: u32,
    /// Applications declaring an ideal time below this skip profiling and go
    /// to a random server among the least loaded, least interfering (§3.5).
    /// "0s" (default): none does.
    #[serde(default = "default_zero")]
    pub short_job: Duration,
    /// Latent dimensions of the collaborative filtering (§2.1).
    #[serde(default = "default_cf_rank")]
    pub cf_rank: u32,
    /// SGD learning rate η (§2.1).
    #[serde(default = "default_cf_learning_rate")]
    pub cf_learning_rate: f64,
    /// SGD regularisation λ (§2.1).
    #[serde(default = "default_cf_regularization")]
    pub cf_regularization: f64,
    /// Most SGD epochs of one reconstruction.
    #[serde(default = "default_cf_max_epochs")]
    pub cf_max_epochs: u32,
    /// SGD stops when an epoch improves the L2 error by less than this share.
    #[serde(default = "default_cf_tolerance")]
    pub cf_tolerance: f64,
    /// Every this many newly classified applications the whole utility
    /// matrix is reconstructed again (in between, new rows are folded in).
    #[serde(default = "default_cf_retrain_every")]
    pub cf_retrain_every: u32,
    /// Reactive phase detection (§3.4): an application progressing at less
    /// than `1 − reclassify_below` of its expected rate is reclassified in
    /// vivo and possibly migrated. 0 turns it off. Needs `report_interval`.
    #[serde(default = "default_reclassify_below")]
    pub reclassify_below: f64,
    /// How long an in-vivo reclassification takes (§3.4).
    #[serde(default = "default_reclassify_time")]
    pub reclassify_time: Duration,
    /// How long a migration stops an application (§3.4: live migration).
    #[serde(default = "default_migration_time")]
    pub migration_time: Duration,
    /// How the scheduler sums co-runners' caused scores on a server:
    /// `server` weighs them by what the server's hardware passes on (shared
    /// resources grow with √cores; per-core ones are private while every
    /// thread has a core), `sum` is Paragon's plain sum (§3.2).
    #[serde(default)]
    pub contention: Contention,
    /// ARQ: number of classes, queues and server pools (§4.1: ten).
    #[serde(default = "default_arq_classes")]
    pub arq_classes: u32,
    /// ARQ: an application still in its own queue takes only a server
    /// where no interference constraint is violated and its predicted speed
    /// is at least `arq_speed` × 0.95 (0: interference alone decides, the
    /// resource quality of ARQ §3.1; 1: the configuration must meet QoS too).
    #[serde(default)]
    pub arq_speed: f64,
    /// ARQ: order within a queue, `fifo`, `sjf` or `priority` (§4.4).
    #[serde(default)]
    pub arq_order: ArqOrder,
    /// ARQ: how long an application waits for its own pool (§4.1-4.2).
    #[serde(default, skip_serializing_if = "ArqHold::is_default")]
    pub arq_hold: ArqHold,
    /// How a server's CPU is shared among its running tasks: eq. 6.2's
    /// equal core shares (default), or GEMS's §4.2.5 model, where each task
    /// gets its CPU requirement plus an equal share of what the
    /// requirements leave free.
    #[serde(default, skip_serializing_if = "CpuSharing::is_default")]
    pub cpu_sharing: CpuSharing,
    /// Slot stages: which running task of the lowest priority a priority
    /// eviction picks (thesis §6.2.3.3).
    #[serde(default)]
    pub eviction: EvictionPolicy,
    /// Slot stages: a task evicted more than this many times is dropped
    /// (thesis §7.3.4, `mrs5`); 0 never drops.
    #[serde(default)]
    pub eviction_threshold: u32,
    /// HYBRID: size of the pool of sticky slots (thesis §9.2.1).
    #[serde(default)]
    pub sticky_slots: u32,
    /// HYBRID: which queued tasks phase I may put on a sticky slot
    /// (thesis §9.2.1, read two ways; [`StickyPhase`]). Left out of the
    /// scenario as run when it is the default, so that runs recorded
    /// before the setting existed keep their digests.
    #[serde(default, skip_serializing_if = "StickyPhase::is_default")]
    pub sticky_phase: StickyPhase,
    /// Slot stages: the servers' slot counts (thesis Table 8.1).
    #[serde(default)]
    pub slot_config: SlotConfig,
    /// Slot stages: the scheduler's time slot (thesis §6.2.3.2: 1 s).
    #[serde(default = "default_slot_interval")]
    pub slot_interval: Duration,
    /// Lowest priority class of the production group (thesis §5.1.1:
    /// 9–11 production, 2–8 middle, 0–1 gratis).
    #[serde(default = "default_production_priority")]
    pub production_priority: u8,
    /// Lowest priority class of the middle group.
    #[serde(default = "default_middle_priority")]
    pub middle_priority: u8,
    /// BEPS: the dimension its queue is sorted by (thesis §3.3.1).
    #[serde(default)]
    pub sort_by: SortKey,
    /// YARN-H: how often the clustering service re-clusters the primary
    /// tenants (harvesting §4.1 does it daily; default 1h).
    #[serde(default = "default_cluster_every")]
    pub cluster_every: Duration,
    /// YARN-H: the utilisation history the clustering looks at (default
    /// 24h); a tenant keeps its configured pattern, average and peak until
    /// a whole window of it has been observed.
    #[serde(default = "default_cluster_window")]
    pub cluster_window: Duration,
    /// YARN-H: most k-means classes within each pattern (default 4).
    #[serde(default = "default_cluster_classes")]
    pub cluster_classes: u32,
    /// YARN-H: weights of the first, second and third ranked pattern for a
    /// job's length type (Algorithm 1's W; default 3, 2, 1).
    #[serde(default = "default_rank_weights")]
    pub rank_weights: [f64; 3],
    /// `annealing` (ASPLOS'16 §4–§5): its goal, the model it predicts with,
    /// the profiling algorithm and its noise, the share of a production
    /// run one profiling run lasts, and the annealing steps
    /// (`scenarios/README.md`).
    #[serde(default)]
    pub annealing_goal: AnnealingGoal,
    #[serde(default)]
    pub interference_model: InterferenceModel,
    #[serde(default)]
    pub dist_profiling: Algorithm,
    #[serde(default = "default_iterations")]
    pub annealing_iterations: u32,
    /// `annealing`: independent walks per placement pass, each of
    /// `annealing_iterations` swaps from its own random start; the best
    /// end is kept (ASPLOS'16 §5.1 gives no schedule; restarts escape the
    /// local minima one walk can end in).
    #[serde(
        default = "default_restarts",
        skip_serializing_if = "is_default_restarts"
    )]
    pub annealing_restarts: u32,
    #[serde(default = "default_dist_noise")]
    pub dist_profile_noise: f64,
    #[serde(default = "default_dist_scale")]
    pub dist_profile_scale: f64,
    /// `[scheduler.external]`: a program outside dcemu that takes the
    /// decisions of the stages it names (docs/external-scheduler.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalConfig>,
}

/// `[scheduler.external]`: the scheduler program dcemu starts and asks, over
/// protocols v1 to v3 (JSON Lines on its stdin and stdout,
/// docs/external-scheduler.md), for the decisions of `stages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {
    /// The program and its arguments, run from the scenario file's
    /// directory, e.g. `["python3", "my_scheduler.py"]`.
    pub command: Vec<String>,
    /// The stages it decides: `placement` (the default), `preemption`
    /// under a slot stage (with `placement`, or alone beside a built-in
    /// `placement`), and with `placement` `power` (servers' sleep and
    /// wake-up) and `migration`.
    #[serde(default = "default_external_stages")]
    pub stages: Vec<ExternalStage>,
    /// Virtual time a decision takes: its dispatch leaves the scheduler this
    /// long after the request (decisions leave in order). Default 0s.
    #[serde(default = "default_zero")]
    pub decision_latency: Duration,
    /// Virtual time a decision takes on top of `decision_latency`, per
    /// server the request lists. Default 0s.
    #[serde(default = "default_zero")]
    pub latency_per_server: Duration,
    /// Wall-clock time the program may take to answer one message before
    /// the run stops with an error. Default 30s.
    #[serde(default = "default_external_timeout")]
    pub timeout: Duration,
}

/// A stage an external program may decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExternalStage {
    /// Where each task runs (the placement stage's `place`).
    Placement,
    /// Which running task a task that found no free slot evicts, among
    /// those the slot stage admits (protocol v2's `preempt`), under a slot
    /// stage; with `placement`, or alone beside a built-in placement.
    Preemption,
    /// The servers' power: the program puts idle servers to sleep and
    /// wakes them (protocol v3's `power` orders); with `placement`, under
    /// `power.policy = "idle"` (the program is then the only one that
    /// sleeps servers).
    Power,
    /// Migrations: the program moves running tasks to other servers with
    /// their progress (protocol v3's `migrate` orders; Paragon §3.4's
    /// mechanism and `migration_time`); with `placement`, with or without
    /// a slot stage (under one, the stage holds the target's slot from the
    /// order on).
    Migration,
    /// The network: the program chooses the path each task's flow
    /// reserves from a core switch down to its server (thesis §4.2.2,
    /// GEMS's joint choice of server and path, §4.3), among every
    /// shortest path (protocol v3's `paths` and `path`); with `placement`,
    /// on a three-tier topology.
    Network,
}

impl ExternalStage {
    /// Its name in `stages` and in the `hello`.
    pub fn name(self) -> &'static str {
        match self {
            ExternalStage::Placement => "placement",
            ExternalStage::Preemption => "preemption",
            ExternalStage::Power => "power",
            ExternalStage::Migration => "migration",
            ExternalStage::Network => "network",
        }
    }
}

fn default_external_stages() -> Vec<ExternalStage> {
    vec![ExternalStage::Placement]
}

fn default_external_timeout() -> Duration {
    Duration::from_secs(30)
}

impl ExternalConfig {
    /// The virtual time a decision over a request listing `servers`
    /// servers takes, in ns.
    pub fn latency_ns(&self, servers: usize) -> u64 {
        let per = self.latency_per_server.as_nanos();
        self.decision_latency
            .as_nanos()
            .saturating_add(per.saturating_mul(servers as u64))
    }

    /// The command as one line, for error messages.
    pub fn shown(&self) -> String {
        self.command.join(" ")
    }
}

fn default_cluster_every() -> Duration {
    Duration::from_secs(3600)
}
fn default_cluster_window() -> Duration {
    Duration::from_secs(24 * 3600)
}
fn default_cluster_classes() -> u32 {
    4
}
fn default_rank_weights() -> [f64; 3] {
    [3.0, 2.0, 1.0]
}

fn default_slot_interval() -> Duration {
    Duration::from_nanos(1_000_000_000)
}
fn default_production_priority() -> u8 {
    9
}
fn default_middle_priority() -> u8 {
    2
}

fn default_report() -> Duration {
    Duration::ZERO
}
fn default_zero() -> Duration {
    Duration::ZERO
}
fn default_samples() -> u32 {
    64
}
fn default_max_steps() -> u32 {
    20_000
}
fn default_profile_time() -> Duration {
    Duration::from_nanos(60_000_000_000)
}
fn default_profile_noise() -> f64 {
    0.03
}
fn default_training_apps() -> u32 {
    20
}
fn default_cf_rank() -> u32 {
    5
}
fn default_cf_learning_rate() -> f64 {
    CfDefaults::LEARNING_RATE
}
fn default_cf_regularization() -> f64 {
    CfDefaults::REGULARIZATION
}
fn default_cf_max_epochs() -> u32 {
    CfDefaults::MAX_EPOCHS
}
fn default_cf_tolerance() -> f64 {
    CfDefaults::TOLERANCE
}
fn default_cf_retrain_every() -> u32 {
    200
}
fn default_reclassify_below() -> f64 {
    0.10
}
fn default_reclassify_time() -> Duration {
    Duration::from_nanos(10_000_000_000)
}
fn default_migration_time() -> Duration {
    Duration::from_nanos(10_000_000_000)
}
fn default_arq_classes() -> u32 {
    10
}

/// Defaults of the SGD reconstruction.
pub struct CfDefaults;
impl CfDefaults {
    pub const LEARNING_RATE: f64 = 0.02;
    pub const REGULARIZATION: f64 = 0.02;
    pub const MAX_EPOCHS: u32 = 200;
    pub const TOLERANCE: f64 = 1e-4;
}

/// `scheduler.memory_eviction` (thesis §6.2.3.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryEviction {
    /// Memory is not enforced: tasks always get what they use.
    #[default]
    None,
    /// Last Started First: evict the last started task whose memory is not
    /// yet satisfied, whatever its priority.
    Lsf,
    /// Lowest Priority First: evict the lowest priority tasks, most recently
    /// started first, until the task at its checkpoint has its memory.
    Lpf,
}

fn default_resubmit() -> Duration {
    Duration::from_nanos(1_000_000_000)
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            admission: AdmissionKind::default(),
            placement: PlacementKind::default(),
            slots: SlotPolicy::default(),
            resubmit_delay: default_resubmit(),
            memory_eviction: MemoryEviction::default(),
            resume: false,
            report_interval: default_report(),
            selection: SelectionKind::default(),
            samples: default_samples(),
            max_steps: default_max_steps(),
            profile_time: default_profile_time(),
            profile_share: None,
            profile_noise: default_profile_noise(),
            training_apps: default_training_apps(),
            short_job: default_zero(),
            cf_rank: default_cf_rank(),
            cf_learning_rate: default_cf_learning_rate(),
            cf_regularization: default_cf_regularization(),
            cf_max_epochs: default_cf_max_epochs(),
            cf_tolerance: default_cf_tolerance(),
            cf_retrain_every: default_cf_retrain_every(),
            reclassify_below: default_reclassify_below(),
            reclassify_time: default_reclassify_time(),
            migration_time: default_migration_time(),
            contention: Contention::default(),
            arq_classes: default_arq_classes(),
            arq_speed: 0.0,
            arq_order: ArqOrder::default(),
            arq_hold: ArqHold::default(),
            cpu_sharing: CpuSharing::default(),
            eviction: EvictionPolicy::default(),
            eviction_threshold: 0,
            sticky_slots: 0,
            sticky_phase: StickyPhase::default(),
            slot_config: SlotConfig::default(),
            slot_interval: default_slot_interval(),
            production_priority: default_production_priority(),
            middle_priority: default_middle_priority(),
            sort_by: SortKey::default(),
            cluster_every: default_cluster_every(),
            cluster_window: default_cluster_window(),
            cluster_classes: default_cluster_classes(),
            rank_weights: default_rank_weights(),
            annealing_goal: Default::default(),
            interference_model: Default::default(),
            dist_profiling: Default::default(),
            annealing_iterations: default_iterations(),
            annealing_restarts: default_restarts(),
            dist_profile_noise: default_dist_noise(),
            dist_profile_scale: default_dist_scale(),
            external: None,
        }
    }
}

impl SchedulerConfig {
    /// Whether the pipeline classifies applications (Paragon §2): the
    /// Paragon placements and ARQ admission need their profiles.
    pub fn classifies(&self) -> bool {
        self.admission == AdmissionKind::Arq
            || matches!(
                self.placement,
                PlacementKind::Paragon | PlacementKind::ParagonNh | PlacementKind::ParagonNi
            )
    }

    /// Whether reactive phase detection runs (Paragon §3.4): only Paragon
    /// itself reclassifies and migrates (its baselines of §5 do not), and
    /// only with server reports to detect from. Under a slot stage a
    /// migrating task takes a free slot of its new server and cannot be
    /// evicted until it runs there (`SlotStage::begin_move`).
    pub fn detects_phases(&self) -> bool {
        self.placement == PlacementKind::Paragon
            && self.reclassify_below > 0.0
            && self.report_interval.as_nanos() > 0
    }

    /// `[scheduler.external]` naming the placement stage selects the
    /// external placement, as `placement = "external"` does; the scenario
    /// loader calls this before [`SchedulerConfig::problems`].
    pub fn select_external(&mut self) {
        let decides = self
            .external
            .as_ref()
            .is_some_and(|e| e.stages.contains(&ExternalStage::Placement));
        if decides && self.placement == PlacementKind::Random {
            self.placement = PlacementKind::External;
        }
    }

    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = Vec::new();
        let mut push = |f: &str, p: String| out.push((f.to_string(), p));
        match (&self.external, self.placement) {
            (None, PlacementKind::External) => push(
                "placement",
                "\"external\" needs a [scheduler.external] section with the program's `command`"
                    .into(),
            ),
            (Some(e), p) => {
                if e.command.is_empty() || e.command[0].trim().is_empty() {
                    push(
                        "external.command",
                        "must name a program, e.g. [\"python3\", \"my_scheduler.py\"]".into(),
                    );
                }
                if e.stages.is_empty() {
                    push("external.stages", "must name at least one stage".into());
                }
                if e.stages.contains(&ExternalStage::Placement) && p != PlacementKind::External {
                    push(
                        "placement",
                        format!(
                            "is {:?} but scheduler.external.stages names the placement stage: \
                             remove one of them",
                            p.name()
                        ),
                    );
                }
                if !e.stages.contains(&ExternalStage::Placement) && p == PlacementKind::External {
                    push(
                        "placement",
                        "is \"external\" but scheduler.external.stages does not name the \
                         placement stage: name the built-in placement that places beside the \
                         program (e.g. \"least-loaded\"), or add \"placement\" to the stages"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Preemption) && self.slots == SlotPolicy::None {
                    push(
                        "external.stages",
                        "names \"preemption\" but scheduler.slots is \"none\": there is no \
                         preemption stage to hand out (choose \"priority\", \"wasp\" or \
                         \"hybrid\")"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Power)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"power\" without \"placement\": the program decides power \
                         in its answers to placement requests, so it decides both: \
                         [\"placement\", \"power\"]"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Migration)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"migration\" without \"placement\": the program orders \
                         migrations in its answers to placement requests, so it decides both: \
                         [\"placement\", \"migration\"]"
                            .into(),
                    );
                }
                if e.stages.contains(&ExternalStage::Network)
                    && !e.stages.contains(&ExternalStage::Placement)
                {
                    push(
                        "external.stages",
                        "names \"network\" without \"placement\": the program names a task's \
                         path with its server, in its answers to placement requests, so it \
                         decides both: [\"placement\", \"network\"]"
                            .into(),
                    );
                }
                if e.timeout.as_nanos() == 0 {
                    push("external.timeout", "must be above 0s".into());
                }
            }
            (None, _) => {}
        }
        if self.samples == 0 {
            push("samples", "must be at least 1".into());
        }
        if self.max_steps == 0 {
            push("max_steps", "must be at least 1".into());
        }
        if let Some(share) = self.profile_share
            && !(share.is_finite() && (0.0..=1.0).contains(&share))
        {
            push(
                "profile_share",
                format!("must be a share between 0 and 1, got {share}"),
            );
        }
        if !(self.profile_noise.is_finite() && (0.0..=1.0).contains(&self.profile_noise)) {
            push(
                "profile_noise",
                format!("must be between 0 and 1, got {}", self.profile_noise),
            );
        }
        if self.cf_rank == 0 || self.cf_rank > 20 {
            push(
                "cf_rank",
                format!("must be between 1 and 20, got {}", self.cf_rank),
            );
        }
        for (f, v) in [
            ("cf_learning_rate", self.cf_learning_rate),
            ("cf_regularization", self.cf_regularization),
            ("cf_tolerance", self.cf_tolerance),
        ] {
            if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                push(f, format!("must be at least 0 and below 1, got {v}"));
            }
        }
        if self.cf_learning_rate == 0.0 {
            push("cf_learning_rate", "must be greater than 0".into());
        }
        if self.cf_max_epochs == 0 || self.cf_max_epochs > 100_000 {
            push(
                "cf_max_epochs",
                format!("must be between 1 and 100000, got {}", self.cf_max_epochs),
            );
        }
        if self.cf_retrain_every == 0 {
            push("cf_retrain_every", "must be at least 1".into());
        }
        if !(self.reclassify_below.is_finite() && (0.0..1.0).contains(&self.reclassify_below)) {
            push(
                "reclassify_below",
                format!(
                    "must be at least 0 and below 1, got {}",
                    self.reclassify_below
                ),
            );
        }
        if !(self.arq_speed.is_finite() && (0.0..=1.0).contains(&self.arq_speed)) {
            push(
                "arq_speed",
                format!("must be between 0 and 1, got {}", self.arq_speed),
            );
        }
        if self.arq_classes == 0 || self.arq_classes > 100 {
            push(
                "arq_classes",
                format!("must be between 1 and 100, got {}", self.arq_classes),
            );
        }
        if self.slots.slotted() && self.slot_interval.as_nanos() == 0 {
            push("slot_interval", "must be longer than 0s".into());
        }
        if self.placement.energy_aware()
            && !self.slots.slotted()
            && self.slot_interval.as_nanos() == 0
        {
            // they batch per time slot (thesis §4.2.5), behind any stage
            push("slot_interval", "must be longer than 0s".into());
        }
        if self.cluster_every.as_nanos() == 0 {
            push("cluster_every", "must be longer than 0s".into());
        }
        if self.cluster_window.as_nanos() == 0 {
            push("cluster_window", "must be longer than 0s".into());
        }
        if !(1..=100).contains(&self.cluster_classes) {
            push(
                "cluster_classes",
                format!("must be between 1 and 100, got {}", self.cluster_classes),
            );
        }
        let w = self.rank_weights;
        if !(w.iter().all(|v| v.is_finite() && *v > 0.0) && w[0] >= w[1] && w[1] >= w[2]) {
            push(
                "rank_weights",
                format!(
                    "must be three positive numbers, highest rank first (non-increasing), got {w:?}"
                ),
            );
        }
        if self.middle_priority > self.production_priority {
            push(
                "middle_priority",
                format!(
                    "must not be above production_priority ({}), got {}",
                    self.production_priority, self.middle_priority
                ),
            );
        }
        out
    }
}

impl SlotPolicy {
    pub fn name(self) -> &'static str {
        match self {
            SlotPolicy::None => "none",
            SlotPolicy::Priority => "priority",
            SlotPolicy::Wasp => "wasp",
            SlotPolicy::Hybrid => "hybrid",
        }
    }
}

/// `scheduler.admission` (Paragon §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdmissionKind {
    /// One queue in arrival order; the head waits for a server (Paragon's
    /// application-agnostic admission, ARQ §2).
    #[default]
    Fifo,
    /// ARQ: queues per resource-quality class with server pools, diverted
    /// up or down to bound waiting (Paragon §4, ARQ).
    Arq,
    /// EASY backfilling: FCFS whose blocked head gets a reservation by the
    /// running tasks' requested times; later tasks start now where they do
    /// not delay it (Lifka 1995; Mu'alem and Feitelson 2001).
    EasyBackfill,
}

/// `scheduler.arq_order` (Paragon §4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArqOrder {
    #[default]
    Fifo,
    /// Shortest declared computation time first, within each queue.
    Sjf,
    /// Higher priority first, within each queue.
    Priority,
}

/// `scheduler.arq_hold`: how long ARQ holds an application for a server
/// of its own pool before diverting it to a lower one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArqHold {
    /// Paragon §4.2: the switching rule, within the queueing budget
    /// `0.05·CT − P` (issue 37's reading of the slack `S = 1.05·CT − P`).
    #[default]
    Budget,
    /// Paragon §4.1's first reading: "the system waits for a server of
    /// appropriate quality to be freed before it schedules that workload".
    /// Never diverted down; it still takes a better pool whose queue is
    /// empty (queue bypassing upwards, §4.1).
    UntilSuitable,
}

impl ArqHold {
    fn is_default(&self) -> bool {
        *self == ArqHold::default()
    }
}

/// `scheduler.cpu_sharing`: how a server's CPU is shared among the tasks
/// it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSharing {
    /// Thesis §6.2.4.1, eq. 6.2: the cores are shared equally among the
    /// running tasks' threads, at most one core per thread.
    #[default]
    Cores,
    /// Thesis §4.2.5 (GEMS's response-time model): processor sharing of
    /// the server's capacity in which every task gets its CPU requirement
    /// (`cpu_ppm` of the strongest server; one core per thread if it
    /// declares none) and the capacity the requirements leave free is
    /// split equally among the tasks. A task alone finishes capacity /
    /// requirement times faster than at its requirement, and never slower
    /// than at it while the requirements fit the server.
    FreeCapacity,
}

impl CpuSharing {
    fn is_default(&self) -> bool {
        *self == CpuSharing::default()
    }
}

/// `scheduler.contention`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contention {
    #[default]
    Server,
    Sum,
}

/// `scheduler.slots`: the slot and preemption stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotPolicy {
    /// A task takes as many slots as it has threads; no preemption.
    #[default]
    None,
    /// Thesis §6.2.3: one slot per task, a central queue by priority then
    /// first arrival, scheduled every `slot_interval`; a task that finds no
    /// free slot evicts one of the lowest running priority (`eviction`).
    Priority,
    /// Thesis §8.1.2 (WASP): `priority`, with production tasks on the most
    /// powerful free slot (others on a random one) and production
    /// evictions freeing the most powerful slot.
    Wasp,
    /// Thesis §9.2 (HYBRID): first-arrival order onto `sticky_slots`
    /// uninterruptible slots (phase I), then WASP on the rest (phase II).
    Hybrid,
}

impl SlotPolicy {
    /// Whether the thesis's slot scheduler runs (one slot per task,
    /// time-slotted, priority queue).
    pub fn slotted(self) -> bool {
        self != SlotPolicy::None
    }
}

/// `scheduler.sticky_phase`: which queued tasks HYBRID's phase I takes
/// onto its sticky slots, in first-arrival order (thesis §9.2.1). The
/// section says both that phase I sorts "the waiting tasks" by arrival and
/// that it serves "mainly long waited and/or evicted low priorities"; the
/// two readings differ only for a task that arrived in the current time
/// slot and was never evicted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StickyPhase {
    /// Every queued task, new arrivals included: between bursts the
    /// sticky slots go to whatever arrives.
    #[default]
    FirstArrival,
    /// Only tasks that were already queued at the previous time slot
    /// (waited at least `slot_interval`) or were evicted before; new
    /// arrivals go to phase II.
    Waited,
}

impl StickyPhase {
    fn is_default(&self) -> bool {
        *self == StickyPhase::default()
    }
}

/// `scheduler.eviction`: which task of the lowest running priority a
/// priority eviction picks (thesis §6.2.3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionPolicy {
    /// Most recently started.
    #[default]
    Mrs,
    /// Uniformly random.
    Rnd,
    /// Least recently started.
    Lrs,
}

/// `scheduler.slot_config`: the servers' slot counts (thesis Table 8.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotConfig {
    /// The `slots` of each server type in the scenario.
    #[default]
    Scenario,
    /// CPU-based homogeneous slots: `k` slots per core on the slowest
    /// servers' CPU capacity, scaled by each server's capacity (SC1–SC4).
    Sc1,
    Sc2,
    Sc3,
    Sc4,
    /// Workload-aware slot configuration (thesis §8.1.1, eq. 8.1–8.5).
    Wasc,
}

/// `scheduler.selection` (Paragon §3.2, §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelectionKind {
    /// Greedy D1/D2 filtering with backtracking over all candidates.
    #[default]
    Greedy,
    /// Hash-sampled candidates ranked by colocation quality.
    Statistical,
}

/// `scheduler.placement`: how a server is chosen for a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Uniformly among servers with a free slot.
    #[default]
    Random,
    /// The server with the lowest share of slots taken that has the task's
    /// cores and memory free (Paragon §5's LL baseline).
    LeastLoaded,
    /// Bin packing: the server left with the fewest free slots that has the
    /// task's cores and memory free (consolidates, so that others sleep).
    BestFit,
    /// Heterogeneity- and interference-aware (Paragon §3).
    Paragon,
    /// Interference-aware only: no view of server configurations (NH).
    ParagonNh,
    /// Heterogeneity-aware only: no view of interference (NI).
    ParagonNi,
    /// GEMS (thesis §4.3): each time slot, tasks by memory ascending take
    /// the minimum-energy path from a core switch to a server (eq. 4.4),
    /// then the minimum-energy path to their master's server.
    Gems,
    /// GEMS with servers and switches idling instead of sleeping (§4.4.1).
    GemsNosleep,
    /// GEMS on server energy alone, with random paths (§4.4.2).
    GemsNonetwork,
    /// Best Energy Path Scheduling (thesis §3.3.1).
    Beps,
    /// Best Resource Fit Scheduling with the dot-product fit (§3.3.2).
    BrfsDot,
    /// Best Resource Fit Scheduling with the norm-based fit (§3.3.2).
    BrfsNorm,
    /// Round Robin Scheduling with best energy paths (§3.3.3).
    Rrs,
    /// Stock YARN (harvesting §6.1): blind to primary tenants; a container
    /// goes to a server with a free slot, with probability proportional to
    /// its free slots. Its node managers do not kill for primary tenants.
    YarnStock,
    /// Primary-tenant-aware YARN (§5.3, §6.1): a server's primary use and
    /// reserve (from its reports) are unavailable; placement proportional
    /// to what is left.
    YarnPt,
    /// YARN-H/Tez-H (§4.1, §5.3): Algorithm 1 picks utilisation classes
    /// per job, then YARN-PT's placement within them.
    YarnH,
    /// Distributed applications by simulated annealing over the profiled
    /// interference model (ASPLOS'16 §5): `scheduler.annealing_goal`.
    Annealing,
    /// A program outside dcemu decides (`[scheduler.external]`,
    /// docs/external-scheduler.md).
    External,
}

impl PlacementKind {
    /// Whether the placement reads the primary tenants' use from the
    /// servers' reports (YARN-PT, YARN-H).
    pub fn reads_primary_use(self) -> bool {
        matches!(self, PlacementKind::YarnPt | PlacementKind::YarnH)
    }

    /// The value as written in a scenario.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Whether this is one of the thesis's energy-aware placements, which
    /// admit by CPU, memory and bandwidth and reserve network paths.
    pub fn energy_aware(self) -> bool {
        matches!(
            self,
            PlacementKind::Gems
                | PlacementKind::GemsNosleep
                | PlacementKind::GemsNonetwork
                | PlacementKind::Beps
                | PlacementKind::BrfsDot
                | PlacementKind::BrfsNorm
                | PlacementKind::Rrs
        )
    }
}

/// `scheduler.sort_by`: the task dimension BEPS sorts its queue by,
/// ascending (thesis §3.3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SortKey {
    #[default]
    Memory,
    Cpu,
    Network,
}

fn one() -> u32 {
    1
}

fn unit_speed() -> f64 {
    1.0
}

/// Names must be usable in actor names and file names.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(format!(
            "{name:?} may only contain ASCII letters, digits, '-' and '_'"
        ));
    }
    None
}

impl ServerTypeConfig {
    /// The configuration as the application ground truth sees it.
    pub fn class(&self) -> ServerClass {
        ServerClass {
            name: self.name.clone(),
            cores: self.cores(),
            core_ghz: self.core_ghz.unwrap_or(2.0),
            memory_gb: self.memory_gb.unwrap_or(16.0),
            llc_mb: self.llc_mb.unwrap_or(8.0),
        }
    }

    /// Memory of one server, MB (`memory_gb`, default 16 GB).
    pub fn memory_mb(&self) -> u64 {
        crate::sampling::to_nanos(self.memory_gb.unwrap_or(16.0) * 1024.0)
    }

    /// Cores in effect (`cores`, else one per slot).
    pub fn cores(&self) -> u32 {
        self.cores.unwrap_or(self.slots)
    }

    /// The power figures in effect: `power`, else the preset's, else type A.
    pub fn power(&self) -> ServerPower {
        self.power
            .or(self.preset.map(ServerPreset::power))
            .unwrap_or(ServerPower::THESIS_A)
    }

    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        for (field, p) in self.power().problems() {
            out.push((format!("power.{field}"), p));
        }
        if let Some(p) = name_problem(&self.name) {
            out.push(("name".into(), p));
        }
        if self.slots == 0 {
            out.push(("slots".into(), "must be at least 1".into()));
        }
        if self.cores == Some(0) {
            out.push(("cores".into(), "must be at least 1".into()));
        }
        for (field, v) in [
            ("core_ghz", self.core_ghz),
            ("memory_gb", self.memory_gb),
            ("llc_mb", self.llc_mb),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                out.push((field.into(), format!("must be a positive number, got {v}")));
            }
        }
        if !(self.core_speed.is_finite() && self.core_speed > 0.0) {
            out.push((
                "core_speed".into(),
                format!("must be a positive number, got {}", self.core_speed),
            ));
        }
        out
    }
}

impl TenantConfig {
    pub fn problems(&self, run_end: Duration) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Some(p) = name_problem(&self.name) {
            out.push(("name".into(), p));
        }
        if self.priority > 11 {
            out.push((
                "priority".into(),
                format!("must be between 0 and 11, got {}", self.priority),
            ));
        }
        if let Some(m) = self.service.as_ref().and_then(|s| s.memory_gb) {
            if !(m.is_finite() && m >= 0.0) {
                out.push((
                    "service.memory_gb".into(),
                    format!("must be a non-negative number of GB, got {m}"),
                ));
            }
        }
        let a = &self.arrivals;
        let needs_rate = a.process != ArrivalProcess::Trace;
        match (a.rate_per_s, needs_rate) {
            (None, true) => out.push((
                "arrivals.rate_per_s".into(),
                "required: mean submissions per second".into(),
            )),
            (Some(_), false) => out.push((
                "arrivals.rate_per_s".into(),
                "a trace sets its own arrival times: remove rate_per_s".into(),
            )),
            (Some(rate), true) if !(rate.is_finite() && rate > 0.0) => out.push((
                "arrivals.rate_per_s".into(),
                format!("must be a positive number of submissions per second, got {rate}"),
            )),
            (Some(rate), true) if rate > 1e9 => out.push((
                "arrivals.rate_per_s".into(),
                format!("{rate} per second is finer than the 1 ns resolution of virtual time"),
            )),
            _ => {}
        }
        match (a.rate_scale, needs_rate) {
            (Some(k), true) if !(k.is_finite() && k > 0.0) => out.push((
                "arrivals.rate_scale".into(),
                format!("must be a positive factor, got {k}"),
            )),
            (Some(_), false) => out.push((
                "arrivals.rate_scale".into(),
                "a trace sets its own arrival times: remove rate_scale".into(),
            )),
            _ => {}
        }
        match (a.process, a.gap_stddev.is_some()) {
            (ArrivalProcess::Gaussian, false) => out.push((
                "arrivals.gap_stddev".into(),
                "required with process = \"gaussian\"".into(),
            )),
            (ArrivalProcess::Gaussian, true) | (_, false) => {}
            (_, true) => out.push((
                "arrivals.gap_stddev".into(),
                "only for process = \"gaussian\"".into(),
            )),
        }
        let burst_fields = [
            ("arrivals.burst_rate_per_s", a.burst_rate_per_s.is_some()),
            ("arrivals.burst_every", a.burst_every.is_some()),
            ("arrivals.burst_length", a.burst_length.is_some()),
        ];
        for (field, present) in burst_fields {
            match (a.process == ArrivalProcess::Bursty, present) {
                (true, false) => {
                    out.push((field.into(), "required with process = \"bursty\"".into()))
                }
                (false, true) => out.push((field.into(), "only for process = \"bursty\"".into())),
                _ => {}
            }
        }
        if let Some(r) = a
            .burst_rate_per_s
            .filter(|r| !(r.is_finite() && *r > 0.0 && *r <= 1e9))
        {
            out.push((
                "arrivals.burst_rate_per_s".into(),
                format!("must be a positive number of submissions per second, got {r}"),
            ));
        }
        for (field, d) in [
            ("arrivals.burst_every", a.burst_every),
            ("arrivals.burst_length", a.burst_length),
        ] {
            if d == Some(Duration::ZERO) {
                out.push((field.into(), "must be greater than 0".into()));
            }
        }
        match (a.process, &a.trace) {
            (ArrivalProcess::Trace, None) => out.push((
                "arrivals.trace".into(),
                "required with process = \"trace\"".into(),
            )),
            (ArrivalProcess::Trace, Some(_)) => {
                if self.service.is_some()
                    || self.applications.is_some()
                    || self.google_memory_gb.is_some()
                    || self.synthetic.is_some()
                    || self.mapreduce.is_some()
                    || self.dag_jobs.is_some()
                {
                    out.push((
                        "arrivals.trace".into(),
                        "a trace gives every task's duration and application: remove `service`, `applications`, `google_memory_gb`, `synthetic`, `mapreduce` and `dag_jobs`".into(),
                    ));
                }
                if self.count != 1 {
                    out.push((
                        "count".into(),
                        "a tenant replaying a trace must have count = 1".into(),
                    ));
                }
            }
            (_, Some(_)) => out.push((
                "arrivals.trace".into(),
                "only for process = \"trace\"".into(),
            )),
            _ => {}
        }
        out.extend(trace_format_problems(a));
        if let Some(gb) = self.google_memory_gb {
            if !(gb.is_finite() && gb > 0.0) {
                out.push((
                    "google_memory_gb".into(),
                    format!("must be a positive number of GB, got {gb}"),
                ));
            }
            if self.service.is_some()
                || self.applications.is_some()
                || self.synthetic.is_some()
                || self.priority != 0
            {
                out.push((
                    "google_memory_gb".into(),
                    "Table 5.2 sets every task's class, time and memory: remove `service`, `applications`, `synthetic` and `priority`".into(),
                ));
            }
        }
        match (self.google_reference_cores, self.google_memory_gb) {
            (Some(0), _) => {
                out.push(("google_reference_cores".into(), "must be at least 1".into()))
            }
            (Some(_), None) => out.push((
                "google_reference_cores".into(),
                "only with `google_memory_gb` (the Table 5.2 generator)".into(),
            )),
            _ => {}
        }
        match (self.google_demand_scale, self.google_memory_gb) {
            (Some(k), _) if !(k.is_finite() && k > 0.0) => out.push((
                "google_demand_scale".into(),
                format!("must be a positive factor, got {k}"),
            )),
            (Some(_), None) => out.push((
                "google_demand_scale".into(),
                "only with `google_memory_gb` (the Table 5.2 generator)".into(),
            )),
            _ => {}
        }
        match (self.google_demand_cv, self.google_memory_gb) {
            (Some(c), _) if !(c.is_finite() && c >= 1.0) => out.push((
                "google_demand_cv".into(),
                format!(
                    "must be a coefficient of variation of at least 1 (1 is the exponential), got {c}"
                ),
            )),
            (Some(_), None) => out.push((
                "google_demand_cv".into(),
                "only with `google_memory_gb` (the Table 5.2 generator)".into(),
            )),
            _ => {}
        }
        if self.google_class_mix.is_some() && self.google_memory_gb.is_none() {
            out.push((
                "google_class_mix".into(),
                "only with `google_memory_gb` (the Table 5.2 generator)".into(),
            ));
        }
        if let Some(synthetic) = &self.synthetic {
            out.extend(synthetic.problems());
            if self.service.is_some() || self.applications.is_some() || self.priority != 0 {
                out.push((
                    "synthetic".into(),
                    "the synthetic generator sets every task's class, time and memory: remove `service`, `applications` and `priority`".into(),
                ));
            }
        }
        if let Some(mapreduce) = &self.mapreduce {
            out.extend(mapreduce.problems());
            if self.service.is_some()
                || self.applications.is_some()
                || self.google_memory_gb.is_some()
                || self.synthetic.is_some()
                || self.priority != 0
            {
                out.push((
                    "mapreduce".into(),
                    "a job's tasks draw their class, work and memory from Table 5.2: remove `service`, `applications`, `google_memory_gb`, `synthetic` and `priority`".into(),
                ));
            }
            if self.flow_bandwidth.is_some() {
                out.push((
                    "flow_bandwidth".into(),
                    "a job's tasks carry their own flow sizes (thesis §4.2.2): remove `flow_bandwidth`".into(),
                ));
            }
        }
        if let Some(dag) = &self.dag_jobs {
            out.extend(dag.problems());
            if self.service.is_some()
                || self.applications.is_some()
                || self.google_memory_gb.is_some()
                || self.synthetic.is_some()
                || self.mapreduce.is_some()
                || self.priority != 0
            {
                out.push((
                    "dag_jobs".into(),
                    "a DAG job's templates set its tasks' work: remove `service`, `applications`, `google_memory_gb`, `synthetic`, `mapreduce` and `priority`".into(),
                ));
            }
            if self.flow_bandwidth.is_some() {
                out.push((
                    "flow_bandwidth".into(),
                    "DAG jobs reserve no bandwidth: remove `flow_bandwidth`".into(),
                ));
            }
        }
        match (&self.service, self.applications) {
            _ if a.process == ArrivalProcess::Trace
                || self.google_memory_gb.is_some()
                || self.synthetic.is_some()
                || self.mapreduce.is_some()
                || self.dag_jobs.is_some()
                || self.distributed => {}
            (Some(service), None) if service.mean == Duration::ZERO => {
                out.push(("service.mean".into(), "must be greater than 0".into()));
            }
            (None, None) => out.push((
                "service".into(),
                "a tenant submits plain tasks (give `service`), catalog applications (`applications`) or generated tasks (`google_memory_gb`, `synthetic`, `mapreduce`)".into(),
            )),
            (Some(_), Some(_)) => out.push((
                "applications".into(),
                "applications bring their own execution times: remove `service`".into(),
            )),
            _ => {}
        }
        if let Some(stop) = self.stop {
            if stop <= self.start {
                out.push((
                    "stop".into(),
                    format!("must be after start ({}), got {stop}", self.start),
                ));
            }
        }
        if self.start >= run_end {
            out.push((
                "start".into(),
                format!(
                    "must be before the end of the run ({run_end}), got {}",
                    self.start
                ),
            ));
        }
        out
    }
}

/// `[[primary_tenants]]`: a service that owns a group of servers and whose
/// load the batch work must make room for (harvesting §3, §5.3, §6.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimaryTenantConfig {
    /// Label; the actor is named `primary-<name>`.
    pub name: String,
    /// Servers it owns: the next `servers` servers in id order, after those
    /// of the primary tenants before it.
    pub servers: u32,
    /// Shape of its CPU utilisation over time (harvesting §3.2).
    pub pattern: UtilPattern,
    /// Mean CPU utilisation, as a share of a server's cores, before scaling.
    pub mean: f64,
    /// Periodic: half the peak-to-valley swing around `mean`. Default 0.2.
    #[serde(default = "default_amplitude")]
    pub amplitude: f64,
    /// Periodic: length of one cycle. Default 24h (diurnal).
    #[serde(default = "default_period")]
    pub period: Duration,
    /// Unpredictable: mean load spikes per day (Poisson). Default 4.
    #[serde(default = "default_spikes")]
    pub spikes_per_day: f64,
    /// Unpredictable: utilisation during a spike. Default 0.9.
    #[serde(default = "default_spike_util")]
    pub spike_util: f64,
    /// Unpredictable: mean spike length (exponential). Default 15m.
    #[serde(default = "default_spike_duration")]
    pub spike_duration: Duration,
    /// Standard deviation of the utilisation's noise at each update. Default 0.05.
    #[serde(default = "default_util_noise")]
    pub noise: f64,
    /// How often the utilisation changes (AutoPilot samples every 2 minutes, §3.2).
    #[serde(default = "default_update")]
    pub update_interval: Duration,
    /// Cores kept free on each server for the primary tenant to spike into
    /// (§6.1: 4 of 12). Default 4.
    #[serde(default = "default_reserve")]
    pub reserve_cores: u32,
    /// How utilisations are scaled to study other load levels (§6.1):
    /// `linear` multiplies by `scale` and saturates at 1; `root` takes the
    /// `scale`-th root (higher loads change less). Unset, they come from
    /// `[primary_scaling]` (default linear, scale 1); see [`Self::scaled`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<UtilScaling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Disk reimages per server per month on average (§3.3). Default 1.
    #[serde(default = "default_reimages")]
    pub reimages_per_month: f64,
    /// Share of reimage events that hit all of the tenant's servers at once
    /// (correlated reimages, §3.3); the others hit one server. Default 0.3.
    #[serde(default = "default_correlation")]
    pub reimage_correlation: f64,
    /// AutoPilot environment it belongs to (harvesting §3.1); HDFS-H puts no
    /// two replicas of a block in one environment (§4.2). Default: its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

impl PrimaryTenantConfig {
    /// `u`, a raw utilisation of the tenant's average server, scaled the way
    /// the tenant is (harvesting §6.1): multiplied by `scale` and saturated
    /// at 1 (`linear`), or its `scale`-th root (`root`).
    pub fn scaled(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let scale = self.scale.unwrap_or(1.0);
        match self.scaling.unwrap_or_default() {
            UtilScaling::Linear => (u * scale).min(1.0),
            UtilScaling::Root => libm::pow(u, 1.0 / scale).min(1.0),
        }
    }

    /// The long-run mean of the raw utilisation its pattern describes:
    /// `mean`, raised for an unpredictable tenant by its expected share of
    /// time in spikes.
    pub fn nominal_mean(&self) -> f64 {
        match self.pattern {
            UtilPattern::Constant | UtilPattern::Periodic => self.mean,
            UtilPattern::Unpredictable => {
                let day = 86_400e9;
                let share = (self.spikes_per_day * self.spike_duration.as_nanos() as f64 / day)
                    .clamp(0.0, 1.0);
                self.mean * (1.0 - share) + self.spike_util * share
            }
        }
    }
}

/// `[primary_scaling]`: one utilisation scaling for every primary tenant
/// that does not set its own `scaling` / `scale`, to study a datacenter at
/// other load levels (harvesting §6.1, Figures 13, 14 and 16). Either give
/// the `factor` or the `target` mean utilisation it should reach.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimaryScalingConfig {
    /// `linear` (multiply, saturate at 1) or `root` (`factor`-th root).
    #[serde(default)]
    pub method: UtilScaling,
    /// The multiplier (`linear`) or the root's degree (`root`). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// The primary tenants' mean utilisation to reach, nominally: the
    /// server-weighted mean of their scaled [`PrimaryTenantConfig::nominal_mean`]s
    /// (noise and the saturation of individual samples make the measured
    /// `primary_utilization_mean` differ a little). Solves `factor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

impl PrimaryScalingConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Some(f) = self.factor
            && !(f.is_finite() && f > 0.0)
        {
            out.push((
                "factor".into(),
                format!("must be a positive number, got {f}"),
            ));
        }
        if let Some(t) = self.target {
            if !(t > 0.0 && t < 1.0) {
                out.push((
                    "target".into(),
                    format!("must be a utilisation strictly between 0 and 1, got {t}"),
                ));
            }
            if self.factor.is_some() {
                out.push((
                    "target".into(),
                    "give either factor or target, not both (target solves factor)".into(),
                ));
            }
        }
        out
    }

    /// Sets `scaling` and `scale` on every tenant that leaves them unset, and
    /// returns the factor used. With a `target`, the factor is found by
    /// bisection over the tenants' nominal means (in log space, a fixed
    /// number of steps: deterministic everywhere); a target the scaling
    /// cannot reach is an error naming it.
    pub fn apply(&self, tenants: &mut [PrimaryTenantConfig]) -> Result<f64, String> {
        let factor = match self.target {
            None => self.factor.unwrap_or(1.0),
            Some(target) => self.solve(tenants, target)?,
        };
        for t in tenants.iter_mut() {
            if t.scaling.is_none() && t.scale.is_none() {
                t.scaling = Some(self.method);
                t.scale = Some(factor);
            }
        }
        Ok(factor)
    }

    fn solve(&self, tenants: &[PrimaryTenantConfig], target: f64) -> Result<f64, String> {
        let servers: f64 = tenants.iter().map(|t| f64::from(t.servers)).sum();
        let mean_at = |factor: f64| {
            tenants
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    if t.scaling.is_none() && t.scale.is_none() {
                        t.scaling = Some(self.method);
                        t.scale = Some(factor);
                    }
                    f64::from(t.servers) * t.scaled(t.nominal_mean())
                })
                .sum::<f64>()
                / servers
        };
        let (mut lo, mut hi) = (-12.0f64, 12.0f64);
        let (low, high) = (mean_at(libm::exp(lo)), mean_at(libm::exp(hi)));
        if servers == 0.0 || !(low <= target && target <= high) {
            return Err(format!(
                "the primary tenants' nominal mean utilisation can only reach {low:.3} to {high:.3} with {} scaling, not {target}",
                match self.method {
                    UtilScaling::Linear => "linear",
                    UtilScaling::Root => "root",
                }
            ));
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if mean_at(libm::exp(mid)) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(libm::exp(0.5 * (lo + hi)))
    }
}

/// `primary_tenants.pattern` (harvesting §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UtilPattern {
    /// A daily cycle: user-facing services.
    Periodic,
    /// Roughly flat: crawlers, scrubbers.
    Constant,
    /// A random walk with spikes: testing and development.
    Unpredictable,
}

/// `primary_tenants.scaling` (harvesting §6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UtilScaling {
    #[default]
    Linear,
    Root,
}

fn default_amplitude() -> f64 {
    0.2
}
fn default_period() -> Duration {
    Duration::from_secs(24 * 3600)
}
fn default_spikes() -> f64 {
    4.0
}
fn default_spike_util() -> f64 {
    0.9
}
fn default_spike_duration() -> Duration {
    Duration::from_secs(15 * 60)
}
fn default_util_noise() -> f64 {
    0.05
}
fn default_update() -> Duration {
    Duration::from_secs(120)
}
fn default_reserve() -> u32 {
    4
}
fn default_reimages() -> f64 {
    1.0
}
fn default_correlation() -> f64 {
    0.3
}

impl PrimaryTenantConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Some(p) = name_problem(&self.name) {
            out.push(("name".into(), p));
        }
        if let Some(p) = self.environment.as_deref().and_then(name_problem) {
            out.push(("environment".into(), p));
        }
        if self.servers == 0 {
            out.push(("servers".into(), "must be at least 1".into()));
        }
        let fractions = [
            ("mean", self.mean),
            ("amplitude", self.amplitude),
            ("spike_util", self.spike_util),
            ("noise", self.noise),
            ("reimage_correlation", self.reimage_correlation),
        ];
        for (field, v) in fractions {
            if !(0.0..=1.0).contains(&v) {
                out.push((field.into(), format!("must be between 0 and 1, got {v}")));
            }
        }
        for (field, v) in [
            ("spikes_per_day", self.spikes_per_day),
            ("reimages_per_month", self.reimages_per_month),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                out.push((
                    field.into(),
                    format!("must be a non-negative number, got {v}"),
                ));
            }
        }
        if let Some(scale) = self.scale
            && !(scale.is_finite() && scale > 0.0)
        {
            out.push((
                "scale".into(),
                format!("must be a positive number, got {scale}"),
            ));
        }
        for (field, d) in [
            ("period", self.period),
            ("update_interval", self.update_interval),
            ("spike_duration", self.spike_duration),
        ] {
            if d == Duration::ZERO {
                out.push((field.into(), "must be greater than 0".into()));
            }
        }
        out
    }
}

/// `[storage]`: harvested block storage and its name node (harvesting §4.2,
/// §5.1, §5.4, §6.4). Every field is documented in `scenarios/README.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Replica placement: stock HDFS, HDFS-PT or HDFS-H.
    #[serde(default)]
    pub placement: StoragePlacement,
    /// Replicas per block (§6.4 studies 3 and 4).
    #[serde(default = "default_storage_replicas")]
    pub replicas: u32,
    /// Blocks created at time 0, each by a random server.
    pub blocks: u64,
    /// Size of a block, MB (HDFS: 256, §5.1).
    #[serde(default = "default_block_mb")]
    pub block_mb: u64,
    /// Re-replication budget per source server, blocks per hour (§5.1: 30).
    #[serde(default = "default_rereplicate")]
    pub rereplicate_per_hour: u32,
    /// Client reads of uniformly random blocks per second (0: none).
    #[serde(default)]
    pub read_rate_per_s: f64,
    /// A data node is busy (denies accesses, §5.4) while its primary tenant
    /// uses more than this share of its cores; default: while it eats into
    /// its reserve (more than cores − reserve_cores in use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_above: Option<f64>,
    /// Servers per rack in a flat network (three-tier: the access switch).
    #[serde(default = "default_rack_size")]
    pub rack_size: u32,
}

/// `storage.placement`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoragePlacement {
    /// Rack-aware default of stock HDFS (§5.1), blind to primary tenants.
    #[default]
    HdfsStock,
    /// The same, never on (or from) a busy data node (§5.4).
    HdfsPt,
    /// Algorithm 2 (§4.2) on top of HDFS-PT's busy awareness.
    HdfsH,
}

impl StoragePlacement {
    pub fn name(self) -> &'static str {
        match self {
            StoragePlacement::HdfsStock => "hdfs-stock",
            StoragePlacement::HdfsPt => "hdfs-pt",
            StoragePlacement::HdfsH => "hdfs-h",
        }
    }

    /// Whether busy data nodes are left out as destinations and sources.
    pub fn avoids_busy(self) -> bool {
        self != StoragePlacement::HdfsStock
    }
}

/// Most replicas per block.
pub const MAX_REPLICAS: u32 = 8;
/// Most replicas a run may hold in all (memory guard: 4 bytes each, twice).
pub const MAX_STORED_REPLICAS: u64 = 200_000_000;

fn default_storage_replicas() -> u32 {
    3
}
fn default_block_mb() -> u64 {
    256
}
fn default_rereplicate() -> u32 {
    30
}
fn default_rack_size() -> u32 {
    20
}

impl StorageConfig {
    /// Field problems, relative to `storage`.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = Vec::new();
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            out.push((
                "replicas".into(),
                format!(
                    "must be between 1 and {MAX_REPLICAS}, got {}",
                    self.replicas
                ),
            ));
        }
        if self.blocks > u64::from(u32::MAX - 1) {
            out.push((
                "blocks".into(),
                format!("must be below {}, got {}", u32::MAX - 1, self.blocks),
            ));
        } else if self.blocks.saturating_mul(u64::from(self.replicas)) > MAX_STORED_REPLICAS {
            out.push((
                "blocks".into(),
                format!(
                    "{} blocks × {} replicas exceed the limit of {MAX_STORED_REPLICAS} replicas",
                    self.blocks, self.replicas
                ),
            ));
        }
        if self.block_mb == 0 {
            out.push(("block_mb".into(), "must be at least 1".into()));
        }
        if !(1..=3600).contains(&self.rereplicate_per_hour) {
            out.push((
                "rereplicate_per_hour".into(),
                format!(
                    "must be between 1 and 3600 blocks per hour per server, got {}",
                    self.rereplicate_per_hour
                ),
            ));
        }
        if !(self.read_rate_per_s.is_finite() && (0.0..=1e6).contains(&self.read_rate_per_s)) {
            out.push((
                "read_rate_per_s".into(),
                format!(
                    "must be between 0 and 1000000 reads per second, got {}",
                    self.read_rate_per_s
                ),
            ));
        }
        if let Some(b) = self
            .busy_above
            .filter(|b| !(b.is_finite() && (0.0..=1.0).contains(b)))
        {
            out.push((
                "busy_above".into(),
                format!("must be between 0 and 1 (a share of the cores), got {b}"),
            ));
        }
        if self.rack_size == 0 {
            out.push(("rack_size".into(), "must be at least 1".into()));
        }
        out
    }
}

// Vocabulary the model modules give meaning to: the types and defaults
// their sections name, kept here so that scenario data imports no model
// module (ARCHITECTURE.md, "Layers").

/// What the catalog generator needs to know about a server configuration
/// (a Paragon "SC", Tables V and VI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerClass {
    pub name: String,
    /// Cores of the whole server (all sockets).
    pub cores: u32,
    /// Clock frequency of one core, GHz.
    pub core_ghz: f64,
    /// Memory of the whole server, GB.
    pub memory_gb: f64,
    /// Last-level cache, MB.
    pub llc_mb: f64,
}

/// Which column of Table 5.2 gives each class's share of the generated
/// tasks.
///
/// The two columns disagree: by "% of tasks" class 4 is 60 % and class 0
/// 23 %; by the classes' arrival rates (1 / "Interarrival time") class 0 is
/// 65 % and class 4 23 %. The table's "All" row sides with the arrival
/// rates: weighting the class means by them gives a mean CPU demand of
/// 30.2 cpu·s, memory demand 19.3 ram·s, CPU usage 0.0102 and memory usage
/// 0.0044 (the row: 30.236, 19.249, 0.010376, 0.0044162), while weighting
/// by "% of tasks" gives 43.9, 27.2, 0.0152 and 0.0055.
/// (`tests::all_row_follows_the_arrival_rates` checks this.) The
/// interarrival column counts submissions, and the trace resubmits a task
/// after each eviction (class 0 takes 92.7 % of them), which is why its
/// class 0 is so much larger; a model that makes its own evictions draws
/// each task once, in the "% of tasks" mix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassMix {
    /// Column "% of tasks" (classes with "≤ 0.01 %" at 0.01 %).
    #[default]
    Tasks,
    /// Each class's arrival rate, 1 / "Interarrival time": the mix the
    /// "All" row's means are averages over, so the mean demand is the
    /// row's 30.2 cpu·s.
    Arrivals,
}

/// Cores of the reference machine (type D of Table 7.1: normalised CPU 1.0
/// over 8 cores), the default `reference_cores`.
pub const REFERENCE_CORES: u32 = 8;

/// Most tasks one job may average (`tasks_per_job`): a job's tasks are
/// submitted in one handler call.
pub const MAX_TASKS_PER_JOB: f64 = 10_000.0;

/// `scheduler.annealing_goal` (ASPLOS'16 §5.2, §5.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnnealingGoal {
    /// Lowest sum of predicted normalised runtimes (§5.3).
    #[default]
    Throughput,
    /// First the QoS bound of the runs that carry one, then the lowest sum
    /// (§5.2).
    Qos,
    /// The highest sum: §5.3's *Worst* placement, the baseline Figure 11's
    /// speedups are measured against.
    Worst,
    /// A random placement that keeps each run on distinct hosts, the
    /// model ignored: §5.3's *Random* (Figure 11 averages five; here one
    /// per seed).
    Random,
}

pub fn default_iterations() -> u32 {
    20000
}

pub fn default_restarts() -> u32 {
    4
}

/// Left out of a run's `scenario.toml` at its default: runs without the
/// annealing placement keep their digests.
fn is_default_restarts(n: &u32) -> bool {
    *n == default_restarts()
}

pub fn default_dist_noise() -> f64 {
    0.01
}

/// Profiling runs use an input this share of the production one (our
/// assumption: the paper profiles offline, once per application).
pub fn default_dist_scale() -> f64 {
    0.01
}

/// A profiling algorithm (`scheduler.dist_profiling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Algorithm 1: a binary search along every pressure's curve.
    BinaryBrute,
    /// Algorithm 2: the top curve and the all-nodes column only; the rest
    /// by proportion (`interpolate_all`).
    #[default]
    BinaryOptimized,
    /// 30 % of the settings at random, always with every pressure's
    /// all-nodes setting (§4.2).
    #[serde(rename = "random-30")]
    Random30,
    /// 50 % of the settings at random, likewise.
    #[serde(rename = "random-50")]
    Random50,
}

/// How the scheduler predicts a distributed application's runtime
/// (`scheduler.interference_model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterferenceModel {
    /// The profiled curves under the profiled mapping policy (§3.4).
    #[default]
    Proposed,
    /// §5.2's comparison: N+1 max for every application, then the
    /// slowdown of all nodes scaled by the share of interfering nodes
    /// (Figure 2's proportional expectation).
    Naive,
}

/// The streamed-trace fields of `[tenants.arrivals]` (docs/traces.md).
fn trace_format_problems(a: &ArrivalConfig) -> Vec<Problem> {
    let mut out = Vec::new();
    let f = a.format;
    let field = |name: &str| format!("arrivals.{name}");
    if f.is_public() && a.process != ArrivalProcess::Trace {
        out.push((field("format"), "only for process = \"trace\"".into()));
    }
    let streamed_only = [
        ("machines", a.machines.is_some()),
        ("cores_per_unit", a.cores_per_unit.is_some()),
        ("gb_per_unit", a.gb_per_unit.is_some()),
        ("lookahead", a.lookahead.is_some()),
        ("lenient", a.lenient),
    ];
    for (name, set) in streamed_only {
        if set && !f.is_public() {
            out.push((
                field(name),
                "only for a streamed trace format (format = \"google-2011\", \"google-2019\", \"alibaba-2018\", \"alibaba-2018-instance\", \"swf\" or \"azure-vm\"); the csv format is checked whole when the scenario loads and stops at its first bad row".into(),
            ));
        }
    }
    if !f.is_public() {
        return out;
    }
    if a.machines.is_some() && !f.has_machines() {
        out.push((
            field("machines"),
            format!("format {:?} has no machine table", f.name()),
        ));
    }
    if a.machine_ids.is_some() && f != TraceFormat::Alibaba2018Instance {
        out.push((
            field("machine_ids"),
            "only for format = \"alibaba-2018-instance\" (the table with a machine_id column)"
                .into(),
        ));
    }
    if a.machine_ids.is_some() && a.machines.is_some() {
        out.push((
            field("machine_ids"),
            "`machines` already reads the table's machine ids: give one of the two".into(),
        ));
    }
    if a.collections.is_some() && f != TraceFormat::Google2019 {
        out.push((
            field("collections"),
            "only for format = \"google-2019\" (its collection_events table)".into(),
        ));
    }
    if a.kill_at_request && f != TraceFormat::Swf {
        out.push((
            field("kill_at_request"),
            "only for format = \"swf\" (the format that records requested times)".into(),
        ));
    }
    if a.machines.as_deref() == Some("header") && f != TraceFormat::Swf {
        out.push((
            field("machines"),
            "\"header\" is for swf only: name the machine table's file".into(),
        ));
    }
    for (name, v) in [
        ("cores_per_unit", a.cores_per_unit),
        ("gb_per_unit", a.gb_per_unit),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            out.push((field(name), format!("must be a positive number, got {v}")));
        }
    }
    match a.lookahead {
        Some(_) if !f.has_jobs() => out.push((
            field("lookahead"),
            "only for the Google and Alibaba formats (google-2011, google-2019, alibaba-2018, alibaba-2018-instance)".into(),
        )),
        Some(d) if d == Duration::ZERO => {
            out.push((field("lookahead"), "must be greater than 0".into()))
        }
        _ => {}
    }
    out
}
