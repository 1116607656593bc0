//! `[[server_types]]`: server configurations and their classes, as the
//! application ground truth sees them.

use dcemu_topology::ServerPower;
use serde::{Deserialize, Serialize};

use super::{Problem, name_problem, one, unit_speed};

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
