//! The parts of a scenario that configure model actors: `[[server_types]]`,
//! `[[tenants]]` and `[scheduler]`. Every field, its default and its unit is
//! documented in `scenarios/README.md`.

use dcemu_topology::{Bandwidth, Duration, ServerPower};

use crate::ground_truth::ServerClass;
use serde::{Deserialize, Serialize};

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
    /// Bandwidth each task's traffic to the outside world needs while it
    /// runs, reserved from a core switch to its server (three-tier only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_bandwidth: Option<Bandwidth>,
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
    /// CSV trace to replay (`trace` only; docs/traces.md), relative to the
    /// scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

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
}

/// `[tenants.service]`: how long a task runs once it has a slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub distribution: ServiceDistribution,
    pub mean: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceDistribution {
    Exponential,
    Constant,
}

/// `[scheduler]`: the scheduler's pipeline stages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    #[serde(default)]
    pub placement: PlacementKind,
}

/// `scheduler.placement`: how a server is chosen for a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Uniformly among servers with a free slot.
    #[default]
    Random,
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
        match (a.process, &a.trace) {
            (ArrivalProcess::Trace, None) => out.push((
                "arrivals.trace".into(),
                "required with process = \"trace\"".into(),
            )),
            (ArrivalProcess::Trace, Some(_)) => {
                if self.service.is_some() || self.applications.is_some() {
                    out.push((
                        "arrivals.trace".into(),
                        "a trace gives every task's duration and application: remove `service` and `applications`".into(),
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
        match (&self.service, self.applications) {
            _ if a.process == ArrivalProcess::Trace => {}
            (Some(service), None) if service.mean == Duration::ZERO => {
                out.push(("service.mean".into(), "must be greater than 0".into()));
            }
            (None, None) => out.push((
                "service".into(),
                "a tenant submits plain tasks (give `service`) or catalog applications (give `applications`)".into(),
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
