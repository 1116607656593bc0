//! The hidden side of distributed parallel applications (ASPLOS'16, Han et
//! al., `003_9b9f1a6a49fd0128.txt`): how interference on some of an
//! application's nodes sets the whole application's runtime.
//!
//! An application runs as `m` units (groups of VMs, one group per host,
//! §3.1). Its ground truth is
//! - a **bubble score** (§2.1, Table 4): the pressure one of its units puts
//!   on a co-runner on the same host;
//! - a **propagation curve family** `T(p, k)` (§3.2, Figure 3): its runtime,
//!   normalised to no interference, when `k` of its `m` units suffer the
//!   same pressure `p`; high, proportional or low propagation;
//! - a **heterogeneity mapping policy** (§3.3, Table 2): how different
//!   pressures on its units fold into one homogeneous setting `(p, k)`.
//!
//! Servers read this (through `World::distributed`); the scheduler never
//! does: it learns curves and policies through modeled profiling runs
//! (`super::profile`).

use serde::{Deserialize, Serialize};

/// Bubble pressure levels profiled (§3.2: "bubble pressures from 1 to 8").
pub const LEVELS: usize = 8;

/// How interference on a few nodes spreads to the whole run (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Propagation {
    /// One or two slow nodes already slow everything (M.milc, M.lesl,
    /// M.lmps): synchronisation makes every node wait for the slowest.
    High,
    /// Runtime grows in proportion to the interfering nodes (M.Gems, few
    /// collectives; independent batch instances behave the same).
    Proportional,
    /// Little sensitivity at all (H.KM, S.PR: small LLC and bandwidth needs).
    Low,
}

/// Heterogeneous pressures → one homogeneous setting (§3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MappingPolicy {
    /// Only the nodes at the highest pressure count.
    NMax,
    /// The nodes at the highest pressure, plus one more at that pressure
    /// standing for all the other interfering nodes.
    NPlus1Max,
    /// The highest pressure, on every node.
    AllMax,
    /// The mean pressure over all nodes, on every node.
    Interpolate,
}

impl MappingPolicy {
    pub const ALL: [MappingPolicy; 4] = [
        MappingPolicy::NMax,
        MappingPolicy::NPlus1Max,
        MappingPolicy::AllMax,
        MappingPolicy::Interpolate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MappingPolicy::NMax => "n-max",
            MappingPolicy::NPlus1Max => "n+1-max",
            MappingPolicy::AllMax => "all-max",
            MappingPolicy::Interpolate => "interpolate",
        }
    }

    /// The homogeneous setting `(pressure, interfering nodes)` standing for
    /// the per-node `pressures` (0: no interference on that node), §3.3.
    /// Example of §3.4: pressures 3,2,1,1 under N+1 max become 3 on two
    /// nodes (3,3,0,0).
    pub fn map(self, pressures: &[f64]) -> (f64, usize) {
        let m = pressures.len();
        let top = pressures.iter().copied().fold(0.0, f64::max);
        if top <= 0.0 {
            return (0.0, 0);
        }
        let at_top = pressures.iter().filter(|&&p| p >= top - 1e-9).count();
        let others = pressures
            .iter()
            .filter(|&&p| p > 0.0 && p < top - 1e-9)
            .count();
        match self {
            MappingPolicy::NMax => (top, at_top),
            MappingPolicy::NPlus1Max => (top, (at_top + usize::from(others > 0)).min(m)),
            MappingPolicy::AllMax => (top, m),
            MappingPolicy::Interpolate => (pressures.iter().sum::<f64>() / m as f64, m),
        }
    }
}

/// One application's hidden profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistApp {
    /// The paper's abbreviation (Table 1), e.g. `M.milc`.
    pub name: &'static str,
    pub propagation: Propagation,
    pub policy: MappingPolicy,
    /// Pressure its units cause on co-runners (Table 4).
    pub bubble: f64,
    /// Normalised runtime minus 1 with the maximum pressure on every node.
    pub amplitude: f64,
    /// Steepness of the propagation curve at the maximum pressure (high and
    /// low propagation); proportional curves ignore it.
    pub steepness: f64,
    /// Runtime alone, seconds.
    pub solo_s: f64,
}

impl DistApp {
    /// Normalised runtime with pressure `p` (any real ≥ 0, clamped to
    /// [`LEVELS`]) on `k` of `m` units: `1 + s(p)·f_p(k/m)`, with
    /// `s(p) = amplitude·(p/8)^1.3` and `f_p` concave for high propagation,
    /// growing steeper with the pressure ("the high propagation property
    /// becomes stronger with higher bubble pressures", §3.2), linear for
    /// proportional propagation.
    pub fn curve(&self, p: f64, k: usize, m: usize) -> f64 {
        if p <= 0.0 || k == 0 || m == 0 {
            return 1.0;
        }
        let p = p.min(LEVELS as f64);
        let level = p / LEVELS as f64;
        let s = self.amplitude * libm::pow(level, 1.3);
        let x = k.min(m) as f64 / m as f64;
        let f = match self.propagation {
            Propagation::Proportional => x,
            Propagation::High | Propagation::Low => {
                let b = self.steepness * (0.3 + 0.7 * level * level);
                (1.0 - libm::exp(-b * x)) / (1.0 - libm::exp(-b))
            }
        };
        1.0 + s * f
    }

    /// Normalised runtime under per-unit `pressures` (the ground truth:
    /// the application's own policy applied to its own curves).
    pub fn runtime(&self, pressures: &[f64]) -> f64 {
        let (p, k) = self.policy.map(pressures);
        self.curve(p, k, pressures.len())
    }
}

const fn app(
    name: &'static str,
    propagation: Propagation,
    policy: MappingPolicy,
    bubble: f64,
    amplitude: f64,
    steepness: f64,
    solo_s: f64,
) -> DistApp {
    DistApp {
        name,
        propagation,
        policy,
        bubble,
        amplitude,
        steepness,
        solo_s,
    }
}

/// The catalog: the paper's distributed applications (Table 1), with their
/// bubble scores (Table 4), best mapping policies (Table 2) and propagation
/// types (§3.2; M.zeus, M.lu, N.cg, N.mg read as high from Figure 3's
/// description of "the majority"), and the SPEC CPU2006 batch co-runners of
/// §5 (32 independent instances each: proportional, interpolate).
/// Amplitudes, steepness and solo times are ours.
pub fn catalog() -> Vec<DistApp> {
    use MappingPolicy::*;
    use Propagation::*;
    vec![
        app("M.milc", High, NPlus1Max, 4.3, 0.9, 9.0, 600.0),
        app("M.lesl", High, NPlus1Max, 3.9, 0.8, 8.0, 600.0),
        app("M.Gems", Proportional, Interpolate, 2.4, 0.7, 1.0, 600.0),
        app("M.lmps", High, NPlus1Max, 1.0, 1.0, 10.0, 600.0),
        app("M.zeus", High, NPlus1Max, 1.4, 0.5, 7.0, 600.0),
        app("M.lu", High, NPlus1Max, 4.6, 0.8, 8.0, 600.0),
        app("N.cg", High, NPlus1Max, 3.9, 0.9, 6.0, 600.0),
        app("N.mg", High, NPlus1Max, 5.0, 1.1, 7.0, 600.0),
        app("H.KM", Low, Interpolate, 0.2, 0.08, 2.0, 600.0),
        app("S.WC", Low, NMax, 0.3, 0.1, 3.0, 600.0),
        app("S.CF", Low, NMax, 0.5, 0.12, 3.0, 600.0),
        app("S.PR", Low, NPlus1Max, 0.7, 0.15, 4.0, 600.0),
        app("C.gcc", Proportional, Interpolate, 4.8, 0.35, 1.0, 600.0),
        app("C.mcf", Proportional, Interpolate, 5.4, 0.6, 1.0, 600.0),
        app("C.cact", Proportional, Interpolate, 3.8, 0.45, 1.0, 600.0),
        app("C.sopl", Proportional, Interpolate, 4.9, 0.5, 1.0, 600.0),
        app("C.libq", Proportional, Interpolate, 6.6, 0.3, 1.0, 600.0),
        app("C.xbmk", Proportional, Interpolate, 4.3, 0.45, 1.0, 600.0),
    ]
}

/// The index of `name` in [`catalog`].
pub fn find(name: &str) -> Option<usize> {
    catalog().iter().position(|a| a.name == name)
}

/// The workload mixes of Table 5 (§5.3), by index name.
pub const MIXES: [(&str, [&str; 4]); 10] = [
    ("HW1", ["N.mg", "N.cg", "H.KM", "M.lmps"]),
    ("HW2", ["M.zeus", "C.libq", "H.KM", "M.Gems"]),
    ("HW3", ["C.libq", "N.cg", "H.KM", "S.PR"]),
    ("HM1", ["M.zeus", "S.WC", "M.Gems", "S.PR"]),
    ("HM2", ["H.KM", "M.Gems", "M.lu", "C.xbmk"]),
    ("HM3", ["S.CF", "H.KM", "M.Gems", "M.Gems"]),
    ("MW", ["N.mg", "H.KM", "H.KM", "M.lesl"]),
    ("MM", ["C.cact", "C.libq", "M.Gems", "M.lmps"]),
    ("MB", ["N.cg", "M.milc", "C.libq", "C.xbmk"]),
    ("L", ["M.lesl", "M.zeus", "M.zeus", "N.mg"]),
];

/// Catalog indices of a mix: a Table 5 name, or a comma-separated list of
/// catalog names. `Err` names what is unknown.
pub fn resolve_mix(mix: &str) -> Result<Vec<usize>, String> {
    if let Some((_, apps)) = MIXES.iter().find(|(n, _)| *n == mix) {
        return apps
            .iter()
            .map(|a| find(a).ok_or_else(|| format!("unknown application `{a}`")))
            .collect();
    }
    let names: Vec<&str> = mix
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if names.is_empty() {
        return Err("empty mix".into());
    }
    names
        .iter()
        .map(|n| {
            find(n).ok_or_else(|| {
                let known: Vec<&str> = MIXES.iter().map(|(m, _)| *m).collect();
                format!(
                    "`{n}` is neither a mix of Table 5 ({}) nor an application of the catalog",
                    known.join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_example_under_each_policy() {
        // §3.4, Figure 5: workload A receives pressures 3,2,1,1.
        let p = [3.0, 2.0, 1.0, 1.0];
        assert_eq!(MappingPolicy::NMax.map(&p), (3.0, 1));
        assert_eq!(MappingPolicy::NPlus1Max.map(&p), (3.0, 2));
        assert_eq!(MappingPolicy::AllMax.map(&p), (3.0, 4));
        assert_eq!(MappingPolicy::Interpolate.map(&p), (1.75, 4));
        // §3.3's example: two nodes at a high pressure, two lower → N+1: 3 nodes
        let q = [5.0, 5.0, 2.0, 1.0, 0.0, 0.0];
        assert_eq!(MappingPolicy::NMax.map(&q), (5.0, 2));
        assert_eq!(MappingPolicy::NPlus1Max.map(&q), (5.0, 3));
        assert_eq!(MappingPolicy::AllMax.map(&q), (5.0, 6));
        assert_eq!(MappingPolicy::Interpolate.map(&q), (13.0 / 6.0, 6));
        for policy in MappingPolicy::ALL {
            assert_eq!(policy.map(&[0.0, 0.0]), (0.0, 0));
        }
    }

    #[test]
    fn propagation_types_have_the_papers_shapes() {
        let cat = catalog();
        let get = |n: &str| cat[find(n).unwrap()].clone();
        let m = 8;
        // high: one node of eight costs over half of all eight
        let milc = get("M.milc");
        let one = milc.curve(8.0, 1, m) - 1.0;
        let all = milc.curve(8.0, m, m) - 1.0;
        assert!(one > 0.5 * all, "{one} vs {all}");
        // and more so at high pressure than at low pressure
        let low_share = (milc.curve(2.0, 1, m) - 1.0) / (milc.curve(2.0, m, m) - 1.0);
        assert!(one / all > low_share);
        // proportional: linear in the interfering nodes
        let gems = get("M.Gems");
        let half = gems.curve(8.0, 4, m) - 1.0;
        assert!((half - 0.5 * (gems.curve(8.0, m, m) - 1.0)).abs() < 1e-12);
        // low: barely affected even at the maximum pressure everywhere
        assert!(get("H.KM").curve(8.0, m, m) < 1.1);
        // monotone in nodes and pressure
        for a in &cat {
            for p in 1..=LEVELS {
                for k in 1..=m {
                    assert!(a.curve(p as f64, k, m) >= a.curve(p as f64, k - 1, m));
                    assert!(a.curve(p as f64, k, m) >= a.curve(p as f64 - 1.0, k, m));
                }
            }
        }
    }

    #[test]
    fn bubble_scores_are_table_4s() {
        let cat = catalog();
        let lo = cat.iter().map(|a| a.bubble).fold(f64::MAX, f64::min);
        let hi = cat.iter().map(|a| a.bubble).fold(0.0, f64::max);
        assert_eq!((lo, hi), (0.2, 6.6));
    }

    #[test]
    fn every_mix_resolves() {
        for (name, apps) in MIXES {
            assert_eq!(resolve_mix(name).unwrap().len(), apps.len());
        }
        assert_eq!(resolve_mix("M.milc, N.cg").unwrap().len(), 2);
        assert!(resolve_mix("HW9").unwrap_err().contains("HW9"));
    }
}
