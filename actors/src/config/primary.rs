//! `[[primary_tenants]]`: the servers' owners, their load patterns and
//! reimages (harvesting §3.2-3.3).

use dcemu_topology::Duration;
use serde::{Deserialize, Serialize};

use super::{Problem, name_problem};

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
    /// Tenants like this one, each owning its own `servers`: a real
    /// datacenter's thousands of services without a table each. The
    /// scenario holds them expanded ([`expand_copies`]), named
    /// `<name>-1` … `<name>-<copies>`. Default 1.
    #[serde(default = "default_copies", skip_serializing_if = "is_one")]
    pub copies: u32,
}

/// At most this many copies of one tenant.
pub const MAX_COPIES: u32 = 100_000;

fn default_copies() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The tenants with every `copies` expanded, in order, copies next to one
/// another, and for each expanded tenant the index of the table it came
/// from (so that problems name the line the user wrote).
pub fn expand_copies(tenants: &[PrimaryTenantConfig]) -> (Vec<PrimaryTenantConfig>, Vec<usize>) {
    let mut out = Vec::with_capacity(tenants.len());
    let mut origin = Vec::with_capacity(tenants.len());
    for (i, t) in tenants.iter().enumerate() {
        if t.copies <= 1 || t.copies > MAX_COPIES {
            out.push(t.clone());
            origin.push(i);
            continue;
        }
        for k in 1..=t.copies {
            let mut c = t.clone();
            c.name = format!("{}-{k}", t.name);
            c.copies = 1;
            out.push(c);
            origin.push(i);
        }
    }
    (out, origin)
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
        if !(1..=MAX_COPIES).contains(&self.copies) {
            out.push((
                "copies".into(),
                format!("must be between 1 and {MAX_COPIES}, got {}", self.copies),
            ));
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
