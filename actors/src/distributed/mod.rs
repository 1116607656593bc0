//! Distributed parallel applications under interference (ASPLOS'16, Han et
//! al., `003_9b9f1a6a49fd0128.txt`): the ground truth ([`truth`]: bubble
//! scores, propagation curves, heterogeneity mapping policies), profiling
//! ([`profile`]: Algorithms 1 and 2, random baselines, the scheduler's model),
//! the run-time side on servers ([`runtime`]) and the `[workload]` section.
//!
//! At run time an application instance (a *run*) is `units` tasks, one per
//! group of VMs, each holding `unit_cores` slots on one server. Servers know
//! their own co-runners; each server tells the run's *coordinator* (the
//! server of unit 0, named by the scheduler in every unit's [`DistRef`])
//! the pressure each of the run's units there suffers. The coordinator
//! turns the per-unit pressures into the run's progress rate through the
//! ground truth, and ends the run on every unit's server when its work is
//! done (`DistDone`).

pub mod lab;
pub mod profile;
pub mod runtime;
pub mod truth;

use serde::{Deserialize, Serialize};

pub use crate::config::{
    AnnealingGoal, default_dist_noise, default_dist_scale, default_iterations,
};
pub use crate::task::DistRef;

fn default_qos_perf() -> f64 {
    0.8
}

fn default_units() -> u32 {
    4
}

fn default_unit_cores() -> u32 {
    8
}

fn one() -> u32 {
    1
}

/// `[workload]`: the distributed applications a `distributed` tenant submits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// A mix of Table 5 (`HW1` … `L`) or a comma-separated list of catalog
    /// names (`M.milc,N.cg`).
    pub mix: String,
    /// Index in the mix of the application with a QoS bound (§5.2).
    #[serde(default)]
    pub qos_target: u32,
    /// Its bound: at least this share of its solo performance (default 0.8).
    #[serde(default = "default_qos_perf")]
    pub qos_perf: f64,
    /// Units (VM groups, one host each) per application (default 4).
    #[serde(default = "default_units")]
    pub units_per_app: u32,
    /// Slots (cores) per unit (default 8: four dual-core VMs, §3.1).
    #[serde(default = "default_unit_cores")]
    pub unit_cores: u32,
    /// The mix is submitted this many times over at each arrival, side by
    /// side (a larger cluster); the QoS target is in the first copy only.
    #[serde(default = "one")]
    pub copies: u32,
    /// Arrivals that submit the mix (default 1); later arrivals submit nothing.
    #[serde(default = "one")]
    pub rounds: u32,
}

impl WorkloadConfig {
    /// Problems with the section, as `(field, problem)`.
    pub fn validate(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        match truth::resolve_mix(&self.mix) {
            Err(e) => out.push(("mix", e)),
            Ok(apps) if self.qos_target as usize >= apps.len() => out.push((
                "qos_target",
                format!("the mix has {} applications (0-based index)", apps.len()),
            )),
            Ok(_) => {}
        }
        if !(self.qos_perf > 0.0 && self.qos_perf <= 1.0) {
            out.push(("qos_perf", "must be in (0, 1]".into()));
        }
        if !(1..=64).contains(&self.units_per_app) {
            out.push(("units_per_app", "must be 1 to 64".into()));
        }
        if self.unit_cores == 0 {
            out.push(("unit_cores", "must be at least 1".into()));
        }
        if !(1..=1000).contains(&self.copies) {
            out.push(("copies", "must be 1 to 1000".into()));
        }
        if self.rounds == 0 {
            out.push(("rounds", "must be at least 1".into()));
        }
        out
    }
}

/// What servers and tenants know of distributed applications: the ground
/// truth and the workload (never read by the scheduler).
#[derive(Clone, Debug)]
pub struct DistWorld {
    pub catalog: Vec<truth::DistApp>,
    pub workload: WorkloadConfig,
}
