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
    /// Draw each task's priority class, execution time and memory from the
    /// per-priority statistics of the Google trace (thesis Table 5.2), with
    /// normalised memory 1.0 standing for `google_memory_gb`; exclusive with
    /// `service`, `applications` and `priority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google_memory_gb: Option<f64>,
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
    /// Bursty: mean time from the end of one burst to the start of the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_every: Option<Duration>,
    /// Bursty: mean length of a burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_length: Option<Duration>,
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

/// `[scheduler]`: the scheduler's pipeline stages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    #[serde(default)]
    pub placement: PlacementKind,
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
}

fn default_report() -> Duration {
    Duration::ZERO
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
    Duration::from_secs(1)
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            placement: PlacementKind::default(),
            resubmit_delay: default_resubmit(),
            memory_eviction: MemoryEviction::default(),
            resume: false,
            report_interval: default_report(),
        }
    }
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
        if let Some(gb) = self.google_memory_gb {
            if !(gb.is_finite() && gb > 0.0) {
                out.push((
                    "google_memory_gb".into(),
                    format!("must be a positive number of GB, got {gb}"),
                ));
            }
            if self.service.is_some() || self.applications.is_some() || self.priority != 0 {
                out.push((
                    "google_memory_gb".into(),
                    "Table 5.2 sets every task's class, time and memory: remove `service`, `applications` and `priority`".into(),
                ));
            }
        }
        match (&self.service, self.applications) {
            _ if a.process == ArrivalProcess::Trace || self.google_memory_gb.is_some() => {}
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
    /// `scale`-th root (higher loads change less). Default linear, scale 1.
    #[serde(default)]
    pub scaling: UtilScaling,
    #[serde(default = "unit_speed")]
    pub scale: f64,
    /// Disk reimages per server per month on average (§3.3). Default 1.
    #[serde(default = "default_reimages")]
    pub reimages_per_month: f64,
    /// Share of reimage events that hit all of the tenant's servers at once
    /// (correlated reimages, §3.3); the others hit one server. Default 0.3.
    #[serde(default = "default_correlation")]
    pub reimage_correlation: f64,
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
        if !(self.scale.is_finite() && self.scale > 0.0) {
            out.push((
                "scale".into(),
                format!("must be a positive number, got {}", self.scale),
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
