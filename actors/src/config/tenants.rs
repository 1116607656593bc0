//! `[[tenants]]`: workload tenants, their arrivals (generators and traces)
//! and service times, MapReduce and DAG jobs.

use crate::trace_formats::TraceFormat;
use dcemu_topology::{Bandwidth, Duration};
use serde::{Deserialize, Serialize};

use super::jobs::{DagJobsConfig, MapReduceConfig, SyntheticConfig};
use super::servers::ClassMix;
use super::{Problem, is_false, name_problem, one};

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
    /// Table 5.2 generator: a further factor on class 0's mean CPU demand
    /// (on top of `google_demand_scale`). Table 5.2 averages the demands
    /// of tasks that arrived and finished within its week (§5.2.3), and
    /// class 0 takes 92.73 % of the trace's evictions while only 38.09 %
    /// of evicted tasks ever finish (§5.2.2): the long class-0 tasks are
    /// the ones the table most likely leaves out, so its class-0 mean
    /// need not be the window's. Default 1; only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_class0_demand_scale: Option<f64>,
    /// Table 5.2 generator: coefficient of variation of each class's CPU
    /// demand around its mean, ≥ 1 (a two-phase hyperexponential,
    /// [`crate::sampling::hyperexponential`]; 1, the default, is the
    /// exponential). Table 5.2 gives means only; the Google trace's task
    /// lengths are heavy-tailed. No committed scenario sets it yet: fitted
    /// beside the demand level it made the thesis's WASC runs bistable
    /// across seeds (issue 38's note). Only with `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_demand_cv: Option<f64>,
    /// Table 5.2 generator: class 0's own coefficient of variation of CPU
    /// demand (≥ 1, in place of `google_demand_cv` for class 0 alone).
    /// The table's class-0 mean averages tasks that finished within its
    /// week (§5.2.3) while class 0 takes 92.73 % of the evictions and
    /// most evicted tasks never finish (§5.2.2): the window's class 0 may
    /// hold a long tail the table leaves out, beside short tasks as the
    /// table gives them. Default: `google_demand_cv`; only with
    /// `google_memory_gb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_class0_demand_cv: Option<f64>,
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
        for (field, factor) in [
            ("google_demand_scale", self.google_demand_scale),
            (
                "google_class0_demand_scale",
                self.google_class0_demand_scale,
            ),
        ] {
            match (factor, self.google_memory_gb) {
                (Some(k), _) if !(k.is_finite() && k > 0.0) => {
                    out.push((field.into(), format!("must be a positive factor, got {k}")))
                }
                (Some(_), None) => out.push((
                    field.into(),
                    "only with `google_memory_gb` (the Table 5.2 generator)".into(),
                )),
                _ => {}
            }
        }
        for (field, cv) in [
            ("google_demand_cv", self.google_demand_cv),
            ("google_class0_demand_cv", self.google_class0_demand_cv),
        ] {
            match (cv, self.google_memory_gb) {
                (Some(c), _) if !(c.is_finite() && c >= 1.0) => out.push((
                    field.into(),
                    format!(
                        "must be a coefficient of variation of at least 1 (1 is the exponential), got {c}"
                    ),
                )),
                (Some(_), None) => out.push((
                    field.into(),
                    "only with `google_memory_gb` (the Table 5.2 generator)".into(),
                )),
                _ => {}
            }
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
