//! Power models of servers and switches, and exact energy accounting.
//!
//! Devices have three operating modes, *on*, *idle* and *sleep*
//! (thesis §4.2.4, §6.2.5). An on server draws
//! `P_idle + P_cpu·U_cpu + P_mem·U_mem` (thesis eq. 4.1 / 6.3); its peak is
//! `P_idle + P_cpu + P_mem` (eq. 4.2 / 6.4). Waking from sleep takes a wake-up
//! time at peak power (thesis §3.1.2.1: activation cost `P_peak·ρ`); going to
//! sleep is free. A switch draws a fixed power per mode (Tables 3.2, 4.1) and
//! wakes at its on power.

use serde::{Deserialize, Serialize};

use crate::units::{Duration, SimTime};

/// Power figures of a server configuration, in watts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPower {
    pub idle_w: f64,
    /// Extra power at full CPU utilisation.
    pub cpu_w: f64,
    /// Extra power at full memory utilisation.
    pub mem_w: f64,
    pub sleep_w: f64,
}

impl ServerPower {
    /// Thesis Table 3.1, server types A–D of the Google trace.
    pub const THESIS_A: ServerPower = ServerPower {
        idle_w: 162.0,
        cpu_w: 51.5,
        mem_w: 18.0,
        sleep_w: 46.25,
    };
    pub const THESIS_B: ServerPower = ServerPower {
        idle_w: 162.0,
        cpu_w: 51.5,
        mem_w: 9.0,
        sleep_w: 44.5,
    };
    pub const THESIS_C: ServerPower = ServerPower {
        idle_w: 162.0,
        cpu_w: 51.5,
        mem_w: 24.0,
        sleep_w: 47.5,
    };
    pub const THESIS_D: ServerPower = ServerPower {
        idle_w: 162.0,
        cpu_w: 103.0,
        mem_w: 36.0,
        sleep_w: 60.2,
    };

    /// Power of an on server at the given utilisations in [0, 1] (thesis eq. 4.1).
    pub fn on(&self, u_cpu: f64, u_mem: f64) -> f64 {
        self.idle_w + self.cpu_w * u_cpu.clamp(0.0, 1.0) + self.mem_w * u_mem.clamp(0.0, 1.0)
    }

    /// Peak power, drawn while waking up (thesis eq. 4.2).
    pub fn peak(&self) -> f64 {
        self.idle_w + self.cpu_w + self.mem_w
    }

    /// `(field, problem)` pairs for values that make no physical sense.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        watt_problems(&[
            ("idle_w", self.idle_w),
            ("cpu_w", self.cpu_w),
            ("mem_w", self.mem_w),
            ("sleep_w", self.sleep_w),
        ])
    }
}

/// Power figures of a switch, in watts (links' power included, thesis §4.2.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchPower {
    pub on_w: f64,
    pub idle_w: f64,
    pub sleep_w: f64,
}

impl SwitchPower {
    /// Thesis Table 4.1 (the on power matches Table 3.2).
    pub const CORE: SwitchPower = SwitchPower {
        on_w: 25.0,
        idle_w: 16.6,
        sleep_w: 5.0,
    };
    pub const AGGREGATION: SwitchPower = SwitchPower {
        on_w: 51.0,
        idle_w: 34.0,
        sleep_w: 10.2,
    };
    pub const ACCESS: SwitchPower = SwitchPower {
        on_w: 75.0,
        idle_w: 50.0,
        sleep_w: 15.0,
    };

    pub fn problems(&self) -> Vec<(&'static str, String)> {
        watt_problems(&[
            ("on_w", self.on_w),
            ("idle_w", self.idle_w),
            ("sleep_w", self.sleep_w),
        ])
    }
}

/// Power figures must be finite and non-negative.
fn watt_problems(fields: &[(&'static str, f64)]) -> Vec<(&'static str, String)> {
    fields
        .iter()
        .filter(|(_, v)| !(v.is_finite() && *v >= 0.0))
        .map(|&(name, v)| {
            (
                name,
                format!("must be a non-negative number of watts, got {v}"),
            )
        })
        .collect()
}

/// `power.policy`: what a device does when it has nothing to do
/// (thesis §6.2.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerPolicy {
    /// IDL: stay idle, ready at once.
    #[default]
    Idle,
    /// SLP: sleep as soon as idle with nothing queued; wake on demand.
    Sleep,
}

/// `[power]` in a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerConfig {
    #[serde(default)]
    pub policy: PowerPolicy,
    /// Time a server takes from sleep to on, at peak power (thesis §4.2.5: 30 s).
    #[serde(default = "default_server_wake")]
    pub server_wake: Duration,
    /// Time a switch takes from sleep to on, at on power (thesis §4.2.5: 0 s).
    #[serde(default)]
    pub switch_wake: Duration,
    /// Sampling interval of `timeseries.csv` (on servers and switches).
    #[serde(default = "default_sample")]
    pub sample_interval: Duration,
}

fn default_server_wake() -> Duration {
    Duration::from_secs(30)
}

fn default_sample() -> Duration {
    Duration::from_secs(60)
}

impl Default for PowerConfig {
    fn default() -> Self {
        PowerConfig {
            policy: PowerPolicy::default(),
            server_wake: default_server_wake(),
            switch_wake: Duration::ZERO,
            sample_interval: default_sample(),
        }
    }
}

impl PowerConfig {
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.sample_interval == Duration::ZERO {
            out.push(("sample_interval", "must be greater than 0".into()));
        }
        out
    }
}

/// Integrates piecewise-constant power exactly over virtual time.
///
/// Power changes only at events, so energy is the sum of `power × duration`
/// over the intervals between changes; no sampling is involved. Sums are
/// accumulated in the order of the device's own events, so the result is
/// bit-identical however the run is partitioned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnergyMeter {
    since: SimTime,
    watts: f64,
    joules: f64,
}

impl EnergyMeter {
    pub fn new(at: SimTime, watts: f64) -> Self {
        EnergyMeter {
            since: at,
            watts,
            joules: 0.0,
        }
    }

    /// Power changes to `watts` at `now`.
    pub fn set(&mut self, now: SimTime, watts: f64) {
        self.advance(now);
        self.watts = watts;
    }

    /// Energy up to `now`, in joules.
    pub fn joules_at(&self, now: SimTime) -> f64 {
        self.joules + self.watts * now.saturating_sub(self.since) as f64 / 1e9
    }

    pub fn watts(&self) -> f64 {
        self.watts
    }

    fn advance(&mut self, now: SimTime) {
        self.joules = self.joules_at(now);
        self.since = self.since.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: SimTime = 1_000_000_000;

    #[test]
    fn on_power_follows_eq_4_1_and_peak_eq_4_2() {
        let a = ServerPower::THESIS_A;
        assert_eq!(a.on(0.0, 0.0), 162.0);
        assert_eq!(a.on(1.0, 1.0), a.peak());
        assert_eq!(a.peak(), 231.5);
        assert_eq!(ServerPower::THESIS_D.peak(), 301.0);
        assert_eq!(a.on(0.5, 0.25), 162.0 + 25.75 + 4.5);
    }

    #[test]
    fn energy_integrates_piecewise_constant_power_exactly() {
        let a = ServerPower::THESIS_A;
        let mut m = EnergyMeter::new(0, a.sleep_w);
        m.set(100 * S, a.peak());
        m.set(130 * S, a.on(0.5, 0.5));
        let expected = 46.25 * 100.0 + 231.5 * 30.0 + a.on(0.5, 0.5) * 3600.0;
        assert!((m.joules_at(3730 * S) - expected).abs() < 1e-6);
        assert_eq!(EnergyMeter::new(5 * S, 100.0).joules_at(5 * S), 0.0);
    }
}
