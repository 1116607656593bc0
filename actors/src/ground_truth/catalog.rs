//! The catalog generator: low-rank heterogeneity and interference plus noise.
//!
//! See the module documentation of [`super`] for the model and
//! `docs/ground-truth.md` for every parameter and constant.

use dcemu_topology::Duration;
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::{AppProfile, Family, Phase, SOURCES, ServerClass, argmax};
use crate::config::Problem;
use crate::sampling::{index, normal, uniform_open0};

/// Largest accepted `rank`: the interference matrices have ten columns.
pub const MAX_RANK: u32 = SOURCES as u32;

/// Named hardware traits, in the order `rank` takes them: ln GHz, ln cores,
/// ln LLC MB, ln memory GB. Ranks above this add hidden class traits.
const TRAITS: usize = 4;

/// Index of the `ln GHz`, `ln cores` and `ln LLC` traits in a class's
/// trait vector.
const CLOCK_TRAIT: usize = 0;
const CORES_TRAIT: usize = 1;
const CACHE_TRAIT: usize = 2;
const MEMORY_TRAIT: usize = 3;

/// Default standard deviation of a hidden class trait (ranks above
/// [`TRAITS`]): what the four numbers do not say about a class
/// (microarchitecture, memory technology), drawn per host processor;
/// `hidden_sd` in a scenario. Applications load on it N(0, 1) (before
/// their family's `het_scale`): only the product of the two spreads
/// matters, so one is a parameter.
const HIDDEN_TRAIT_SD: f64 = 0.2;

/// Named interference concepts, in the order `rank` takes them: compute,
/// memory, I/O, cache. Ranks above this add concepts with random loadings.
const CONCEPTS: usize = 4;

/// How strongly each named concept loads each source (Paragon Table II order:
/// memory capacity, memory bandwidth, LLC capacity, LLC bandwidth, L1 i-cache,
/// L1 d-cache, TLB, core, network bandwidth, storage bandwidth).
const LOADINGS: [[f64; SOURCES]; CONCEPTS] = [
    // compute: the core and the structures next to it
    [0.0, 0.0, 0.2, 0.1, 0.8, 0.7, 0.4, 1.0, 0.0, 0.0],
    // memory: capacity and bandwidth, and the LLC traffic that feeds them
    [0.9, 1.0, 0.4, 0.7, 0.0, 0.1, 0.4, 0.0, 0.0, 0.0],
    // I/O: storage and network streams, with their buffers
    [0.1, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.9, 1.0],
    // cache: working sets that live in the cache hierarchy
    [0.1, 0.2, 1.0, 0.8, 0.2, 0.5, 0.5, 0.1, 0.0, 0.0],
];

/// Intensity of an application on a random concept (ranks above
/// [`CONCEPTS`]): max(0, mean + sd · N(0, 1)).
const EXTRA_INTENSITY: Prior = p(0.05, 0.05);

/// Sensitivity gain `g` per concept, uniform in this range: sensitivity =
/// intensity · g, so heavy users of a resource suffer most from contention
/// on it (Paragon §2.3, Fig. 3: mcf is sensitive to memory, not network).
const GAIN: (f64, f64) = (0.5, 1.0);

/// An application's peak memory is at most this share of its best class's
/// memory, so it fits there with room for a co-runner.
const MEMORY_FIT: f64 = 0.75;

/// Where the high phase of a phased application starts and ends, as
/// fractions of its work, each uniform in its range.
const HIGH_FROM: (f64, f64) = (0.2, 0.4);
const HIGH_TO: (f64, f64) = (0.6, 0.8);

/// `max(min, mean + sd · N(0, 1))`.
#[derive(Clone, Copy)]
struct Prior {
    mean: f64,
    sd: f64,
    min: f64,
}

impl Prior {
    /// A draw with the standard deviation multiplied by `spread` (the
    /// catalog's calibrated `elasticity_spread` / `intensity_spread`).
    fn draw_spread(self, spread: f64, rng: &mut impl RngCore) -> f64 {
        (self.mean + self.sd * spread * normal(rng)).max(self.min)
    }
}

/// A prior clamped at 0.
const fn p(mean: f64, sd: f64) -> Prior {
    Prior { mean, sd, min: 0.0 }
}

/// Default steepness of heterogeneity per family (single-threaded,
/// multithreaded, multiprogrammed, I/O-bound; `het_scale` in a scenario):
/// every elasticity an application draws, hidden traits included, is
/// multiplied by its family's factor. Scaling ln speed
/// keeps each application's ranking of configurations and sets only how much
/// the best one gains. Calibrated to Paragon §2.2's validation on its local
/// cluster (Table V): placing applications on the configuration the
/// recommendation picks improves performance by 24 % (ST), 20 % (MT), 38 %
/// (MP) and 40 % (I/O) on average, against a heterogeneity-oblivious
/// placement; [`super::stats::het_benefit`] measures that benefit and the
/// test `heterogeneity_benefit_matches_paragon_2_2` holds it within 5 points.
pub const HET_SCALE: [f64; 4] = [0.53, 0.67, 1.3, 0.94];

/// What distinguishes a family (Paragon §5).
struct FamilyPrior {
    /// Elasticity of speed to each named trait (ln GHz, ln cores, ln LLC,
    /// ln memory): alone, speed ∝ GHz^e0 · cores^e1 · LLC^e2 · memory^e3.
    /// Clamped at 0 (more of a resource never hurts) except where noted.
    elasticity: [Prior; TRAITS],
    /// Caused intensity on each named concept (compute, memory, I/O, cache).
    intensity: [Prior; CONCEPTS],
    /// Cores, one chosen uniformly (then capped at the best class's cores).
    cores: &'static [u32],
    /// Memory footprint in GB, log-uniform in this range (then capped).
    memory_gb: (f64, f64),
}

const fn prior(family: Family) -> FamilyPrior {
    match family {
        // SPEC CPU2006-like: frequency and caches, one core (so the cores
        // trait, ln min(cores, 1), is 0 on every class and its elasticity
        // never matters; it is still drawn, to keep the draw order).
        Family::SingleThreaded => FamilyPrior {
            elasticity: [p(0.8, 0.15), p(0.0, 0.0), p(0.08, 0.06), p(0.03, 0.03)],
            intensity: [p(0.45, 0.15), p(0.25, 0.15), p(0.02, 0.02), p(0.30, 0.15)],
            cores: &[1],
            memory_gb: (0.25, 2.0),
        },
        // PARSEC / SPLASH-2 / SPECjbb-like: scale with cores, memory heavy.
        Family::Multithreaded => FamilyPrior {
            elasticity: [p(0.5, 0.15), p(0.45, 0.15), p(0.10, 0.06), p(0.10, 0.05)],
            intensity: [p(0.35, 0.15), p(0.55, 0.15), p(0.03, 0.03), p(0.40, 0.15)],
            cores: &[2, 4, 8],
            memory_gb: (0.5, 4.0),
        },
        // Mixes of four programs: a bit of everything, on four cores.
        Family::Multiprogrammed => FamilyPrior {
            elasticity: [p(0.6, 0.15), p(0.30, 0.10), p(0.12, 0.06), p(0.06, 0.04)],
            intensity: [p(0.40, 0.15), p(0.40, 0.15), p(0.03, 0.03), p(0.40, 0.15)],
            cores: &[4],
            memory_gb: (1.0, 6.0),
        },
        // Single-node data mining: storage and network, page cache.
        Family::IoBound => FamilyPrior {
            elasticity: [p(0.15, 0.08), p(0.08, 0.05), p(0.03, 0.03), p(0.20, 0.08)],
            intensity: [p(0.10, 0.05), p(0.15, 0.10), p(0.60, 0.15), p(0.10, 0.05)],
            cores: &[1, 2],
            memory_gb: (1.0, 8.0),
        },
    }
}

/// Shares of the four families in a catalog; they need not sum to 1. When
/// `mix` is given, a family it leaves out has share 0; when `mix` is left
/// out, all four have share 0.25 (Paragon §5 replicates its workloads "with
/// equal likelihood").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FamilyMix {
    #[serde(default)]
    pub single_threaded: f64,
    #[serde(default)]
    pub multithreaded: f64,
    #[serde(default)]
    pub multiprogrammed: f64,
    #[serde(default)]
    pub io_bound: f64,
}

impl Default for FamilyMix {
    fn default() -> Self {
        FamilyMix {
            single_threaded: 0.25,
            multithreaded: 0.25,
            multiprogrammed: 0.25,
            io_bound: 0.25,
        }
    }
}

impl FamilyMix {
    /// Paragon's own pool (§5): 29 single-threaded, 22 multithreaded, 350
    /// multiprogrammed and 25 I/O-bound workloads.
    pub const PARAGON_POOL: FamilyMix = FamilyMix {
        single_threaded: 29.0,
        multithreaded: 22.0,
        multiprogrammed: 350.0,
        io_bound: 25.0,
    };

    pub fn share(&self, family: Family) -> f64 {
        match family {
            Family::SingleThreaded => self.single_threaded,
            Family::Multithreaded => self.multithreaded,
            Family::Multiprogrammed => self.multiprogrammed,
            Family::IoBound => self.io_bound,
        }
    }

    /// How many of `apps` applications each family gets: the largest
    /// remainder method, ties to the earlier family in [`Family::ALL`].
    pub fn counts(&self, apps: u32) -> [u32; 4] {
        let total: f64 = Family::ALL.iter().map(|&f| self.share(f)).sum();
        let mut counts = [0u32; 4];
        let mut rest = [0.0f64; 4];
        for (i, &f) in Family::ALL.iter().enumerate() {
            let exact = f64::from(apps) * self.share(f) / total;
            counts[i] = exact.floor() as u32;
            rest[i] = exact - exact.floor();
        }
        let mut left = apps.saturating_sub(counts.iter().sum::<u32>());
        while left > 0 {
            let mut best = 0;
            for i in 1..4 {
                if rest[i] > rest[best] {
                    best = i;
                }
            }
            counts[best] += 1;
            rest[best] = -1.0;
            left -= 1;
        }
        counts
    }
}

/// A value per family, each optional: `{ multiprogrammed = 0.3 }` sets one
/// family's and leaves the others at their defaults. The catalog's free
/// parameters per family (`het_scale`, `clock_elasticity`,
/// `cache_elasticity`) take this form; `scenarios/reproduce/paragon.toml`
/// declares which are fitted, to what.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PerFamily {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_threaded: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multithreaded: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiprogrammed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_bound: Option<f64>,
}

impl PerFamily {
    /// The value set for `family`, if any.
    pub fn get(&self, family: Family) -> Option<f64> {
        match family {
            Family::SingleThreaded => self.single_threaded,
            Family::Multithreaded => self.multithreaded,
            Family::Multiprogrammed => self.multiprogrammed,
            Family::IoBound => self.io_bound,
        }
    }

    /// The value for `family`, else `defaults[family]`.
    pub fn or(&self, family: Family, defaults: [f64; 4]) -> f64 {
        self.get(family).unwrap_or(defaults[family as usize])
    }

    fn is_empty(&self) -> bool {
        *self == PerFamily::default()
    }
}

/// `[workload.catalog]`: how to generate the application catalog. Every
/// field but `apps` has a default; `docs/ground-truth.md` explains each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogSpec {
    /// Applications in the catalog (ids `0..apps`).
    pub apps: u32,
    /// Shares of the four families. Default: 0.25 each.
    #[serde(default)]
    pub mix: FamilyMix,
    /// Latent dimensions of both the heterogeneity and the interference
    /// structure, 1..=10. Default 4: the four named hardware traits and the
    /// four named interference concepts.
    #[serde(default = "default_rank")]
    pub rank: u32,
    /// Relative noise on top of the low-rank structure, 0..=1: the standard
    /// deviation of ln speed, and of scores in units of 100 points.
    /// Default 0.05 (Paragon's classification errors are about 5 %, Table III).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// Share of applications with the medium / high / medium memory phases,
    /// 0..=1. Default 0 (Paragon's phases scenario, §5, is 1).
    #[serde(default)]
    pub phased: f64,
    /// Scale of the high phase, 1..=10: caused memory scores and footprint ×
    /// `phase_high`, tolerated memory scores ÷ `phase_high`. Default 1.5.
    #[serde(default = "default_phase_high")]
    pub phase_high: f64,
    /// Shortest ideal execution time (alone on the best class). Default 1m.
    #[serde(default = "default_ideal_min")]
    pub ideal_min: Duration,
    /// Longest ideal execution time; drawn log-uniform in between. Default 1h
    /// (Paragon §5: "minutes to hours").
    #[serde(default = "default_ideal_max")]
    pub ideal_max: Duration,
    /// The hidden truth of the run's tasks that are not catalog
    /// applications (Google-like priority classes, MapReduce and DAG jobs,
    /// trace rows without an application). Default `"workloads"`: each
    /// recurring kind of such tasks is an unknown workload with a hidden
    /// profile drawn over the catalog's latent structure, which Paragon
    /// profiles like any other (§2, §3.5). `"plain"`: they run at the
    /// server's core speed and neither suffer nor cause interference.
    #[serde(default, skip_serializing_if = "NonCatalog::is_default")]
    pub non_catalog: NonCatalog,
    /// Heterogeneity scale per family (`h_f`). Default [`HET_SCALE`].
    #[serde(default, skip_serializing_if = "PerFamily::is_empty")]
    pub het_scale: PerFamily,
    /// Mean elasticity of speed to the clock (ln GHz) per family, before
    /// `het_scale`. Defaults: the family priors (0.8 / 0.5 / 0.6 / 0.15).
    #[serde(default, skip_serializing_if = "PerFamily::is_empty")]
    pub clock_elasticity: PerFamily,
    /// Mean elasticity of speed to the last-level cache (ln LLC MB) per
    /// family, before `het_scale`. Defaults: the family priors (0.08 /
    /// 0.10 / 0.12 / 0.03).
    #[serde(default, skip_serializing_if = "PerFamily::is_empty")]
    pub cache_elasticity: PerFamily,
    /// Mean elasticity of speed to memory (ln memory GB) per family, before
    /// `het_scale`. Defaults: the family priors (0.03 / 0.10 / 0.06 / 0.20).
    #[serde(default, skip_serializing_if = "PerFamily::is_empty")]
    pub memory_elasticity: PerFamily,
    /// Multiplier of the standard deviation of every named elasticity
    /// prior, 0..=3: how much applications of one family differ in how
    /// they use clock, cores, cache and memory. Default 1.
    #[serde(default = "default_one", skip_serializing_if = "is_one")]
    pub elasticity_spread: f64,
    /// Standard deviation of each hidden class trait (ranks above 4), per
    /// host processor, 0..=2. Default 0.2.
    #[serde(default = "default_hidden_sd", skip_serializing_if = "is_hidden_sd")]
    pub hidden_sd: f64,
    /// Multiplier of the standard deviation of every caused-intensity
    /// prior, 0..=3: how much applications of one family differ in the
    /// interference they cause and tolerate. Default 1.
    #[serde(default = "default_one", skip_serializing_if = "is_one")]
    pub intensity_spread: f64,
    /// Noise on the interference scores, in units of 100 points, 0..=1.
    /// Default: `noise`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_noise: Option<f64>,
    /// How far an application gains from a class's memory. Default
    /// `"unbounded"`: speed grows with ln memory GB on every class.
    /// `"up-to-footprint"`: only up to the application's own memory
    /// footprint, as the cores trait stops at its threads.
    #[serde(default, skip_serializing_if = "MemoryBenefit::is_default")]
    pub memory_benefit: MemoryBenefit,
}

/// `[applications] memory_benefit`: whether memory beyond an application's
/// footprint still speeds it up.
///
/// Paragon's applications (§5: SPEC CPU2006, PARSEC, SPLASH-2, mixes,
/// Hadoop-style data mining) use a few GB; a class's memory speeds one up
/// only while the application can use it (page cache, fewer faults), and
/// not past its own footprint: a 2 GB benchmark runs no faster on EC2's
/// 244 GB cr1.8xlarge than on a 7.5 GB m1.large of the same processor.
/// With `Unbounded`, ln memory enters speed over Table VI's 1.7-244 GB and
/// makes the largest instance type the best for most applications
/// (docs/ground-truth.md, "Memory beyond the footprint").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryBenefit {
    /// ln memory GB of the class, however large (the model before issue 37's
    /// EC2 finding; catalogs without the field keep it bit for bit).
    #[default]
    Unbounded,
    /// ln min(class memory GB, the application's footprint): the
    /// footprint is drawn before the speeds, so the draw order differs.
    UpToFootprint,
}

impl MemoryBenefit {
    fn is_default(&self) -> bool {
        *self == MemoryBenefit::default()
    }
}

/// `[applications] non_catalog`: what tasks without a catalog entry are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonCatalog {
    /// Unknown workloads with a hidden profile per recurring kind
    /// (docs/ground-truth.md "Tasks without a catalog entry").
    #[default]
    Workloads,
    /// Plain work at the core speed, no interference (the model before
    /// issue 22's item).
    Plain,
}

impl NonCatalog {
    fn is_default(&self) -> bool {
        *self == NonCatalog::default()
    }
}

fn default_rank() -> u32 {
    4
}
fn default_one() -> f64 {
    1.0
}
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one(v: &f64) -> bool {
    *v == 1.0
}
fn default_hidden_sd() -> f64 {
    HIDDEN_TRAIT_SD
}
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_hidden_sd(v: &f64) -> bool {
    *v == HIDDEN_TRAIT_SD
}
fn default_noise() -> f64 {
    0.05
}
fn default_phase_high() -> f64 {
    1.5
}
fn default_ideal_min() -> Duration {
    Duration::from_secs(60)
}
fn default_ideal_max() -> Duration {
    Duration::from_secs(3600)
}

impl CatalogSpec {
    /// `apps` applications with every other field at its default.
    pub fn new(apps: u32) -> Self {
        CatalogSpec {
            apps,
            mix: FamilyMix::default(),
            rank: default_rank(),
            noise: default_noise(),
            phased: 0.0,
            phase_high: default_phase_high(),
            ideal_min: default_ideal_min(),
            ideal_max: default_ideal_max(),
            non_catalog: NonCatalog::default(),
            het_scale: PerFamily::default(),
            clock_elasticity: PerFamily::default(),
            cache_elasticity: PerFamily::default(),
            memory_elasticity: PerFamily::default(),
            elasticity_spread: 1.0,
            hidden_sd: HIDDEN_TRAIT_SD,
            intensity_spread: 1.0,
            score_noise: None,
            memory_benefit: MemoryBenefit::default(),
        }
    }

    /// The noise on interference scores: `score_noise`, else `noise`.
    pub fn score_noise(&self) -> f64 {
        self.score_noise.unwrap_or(self.noise)
    }

    /// Field-level problems (field, why); empty when the spec is usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = Vec::new();
        let mut push = |field: &str, why: String| out.push((field.to_string(), why));
        if self.apps == 0 {
            push("apps", "must be at least 1".into());
        }
        let mut mix_ok = true;
        for f in Family::ALL {
            let share = self.mix.share(f);
            if !(share.is_finite() && share >= 0.0) {
                mix_ok = false;
                push(
                    &format!("mix.{}", f.name()),
                    format!("must be a share of at least 0, got {share}"),
                );
            }
        }
        let total: f64 = Family::ALL.iter().map(|&f| self.mix.share(f)).sum();
        if mix_ok && total == 0.0 {
            push("mix", "at least one family needs a positive share".into());
        } else if mix_ok && !total.is_finite() {
            push("mix", "shares are too large to add up".into());
        }
        if !(1..=MAX_RANK).contains(&self.rank) {
            push(
                "rank",
                format!("must be between 1 and {MAX_RANK}, got {}", self.rank),
            );
        }
        if !(self.noise.is_finite() && (0.0..=1.0).contains(&self.noise)) {
            push(
                "noise",
                format!("must be between 0 and 1, got {}", self.noise),
            );
        }
        for (field, v, hi) in [
            ("elasticity_spread", self.elasticity_spread, 3.0),
            ("hidden_sd", self.hidden_sd, 2.0),
            ("intensity_spread", self.intensity_spread, 3.0),
            ("score_noise", self.score_noise.unwrap_or(0.0), 1.0),
        ] {
            if !(v.is_finite() && (0.0..=hi).contains(&v)) {
                push(field, format!("must be between 0 and {hi}, got {v}"));
            }
        }
        for (table, values, hi) in [
            ("het_scale", &self.het_scale, 5.0),
            ("clock_elasticity", &self.clock_elasticity, 3.0),
            ("cache_elasticity", &self.cache_elasticity, 3.0),
            ("memory_elasticity", &self.memory_elasticity, 3.0),
        ] {
            for f in Family::ALL {
                if let Some(v) = values.get(f)
                    && !(v.is_finite() && (0.0..=hi).contains(&v))
                {
                    push(
                        &format!("{table}.{}", f.name()),
                        format!("must be between 0 and {hi}, got {v}"),
                    );
                }
            }
        }
        if !(self.phased.is_finite() && (0.0..=1.0).contains(&self.phased)) {
            push(
                "phased",
                format!("must be a share between 0 and 1, got {}", self.phased),
            );
        }
        if !(self.phase_high.is_finite() && (1.0..=10.0).contains(&self.phase_high)) {
            push(
                "phase_high",
                format!("must be between 1 and 10, got {}", self.phase_high),
            );
        }
        if self.ideal_min == Duration::ZERO {
            push("ideal_min", "must be greater than 0".into());
        }
        if self.ideal_max < self.ideal_min {
            push(
                "ideal_max",
                format!(
                    "must be at least ideal_min ({}), got {}",
                    self.ideal_min, self.ideal_max
                ),
            );
        }
        out
    }
}

/// Problems with the server classes a catalog is generated for, with fields
/// named `classes[i].<field>`; empty when they are usable.
pub fn class_problems(classes: &[ServerClass]) -> Vec<Problem> {
    let mut out = Vec::new();
    if classes.is_empty() {
        out.push((
            "classes".into(),
            "at least one server class is needed".into(),
        ));
    }
    for (i, c) in classes.iter().enumerate() {
        if c.cores == 0 {
            out.push((format!("classes[{i}].cores"), "must be at least 1".into()));
        }
        for (field, v) in [
            ("core_ghz", c.core_ghz),
            ("memory_gb", c.memory_gb),
            ("llc_mb", c.llc_mb),
        ] {
            if !(v.is_finite() && v > 0.0) {
                out.push((
                    format!("classes[{i}].{field}"),
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
    }
    out
}

/// The ten server classes of Paragon's local cluster (Table V): cores are
/// the server's total, LLC and memory as listed.
pub fn paragon_local_cluster() -> Vec<ServerClass> {
    let rows: [(&str, u32, f64, f64, f64); 10] = [
        ("xeon-l5609", 8, 1.87, 24.0, 12.0),
        ("xeon-x5650", 12, 2.67, 24.0, 12.0),
        ("xeon-x5670", 12, 2.93, 48.0, 12.0),
        ("xeon-l5640", 12, 2.27, 48.0, 12.0),
        ("xeon-mp", 4, 3.16, 8.0, 1.0),
        ("xeon-e5345", 4, 2.33, 32.0, 8.0),
        ("xeon-e5335", 4, 2.00, 16.0, 8.0),
        ("opteron-240", 2, 1.80, 4.0, 2.0),
        ("atom-330", 2, 1.60, 4.0, 1.0),
        ("atom-d510", 2, 1.66, 8.0, 1.0),
    ];
    ServerClass::table(&rows)
}

/// Generates `spec.apps` application profiles for `classes`, drawing only
/// from `rng`. Same spec, classes and stream ⇒ the same catalog, bit for bit.
///
/// Draw order (changing it changes every catalog): the family order
/// (Fisher–Yates), hidden class traits (per class, per rank above 4), random
/// concept loadings (per rank above 4, per source), then per application in
/// id order: elasticities (per rank), speed noise (per class), intensities
/// (per rank), sensitivity gains (per rank), caused then tolerated noise (per
/// source), cores, memory, ideal time, phased?, high-phase start, end. Every
/// variate is drawn whatever `noise` and `phased` are, so catalogs that
/// differ only in those share all their latent factors.
///
/// # Errors
///
/// The problems of `spec.problems()` and `class_problems(classes)`, if any.
pub fn generate(
    spec: &CatalogSpec,
    classes: &[ServerClass],
    rng: &mut impl RngCore,
) -> Result<Vec<AppProfile>, Vec<Problem>> {
    generate_with_latent(spec, classes, rng).map(|(apps, _)| apps)
}

/// [`generate`], and the latent structure the catalog was drawn over, from
/// which more applications of the same run can be drawn
/// ([`Latent::app`]: the workloads of tasks without a catalog entry,
/// docs/ground-truth.md "Tasks without a catalog entry").
///
/// # Errors
///
/// As [`generate`].
pub fn generate_with_latent(
    spec: &CatalogSpec,
    classes: &[ServerClass],
    rng: &mut impl RngCore,
) -> Result<(Vec<AppProfile>, Latent), Vec<Problem>> {
    let problems: Vec<Problem> = spec
        .problems()
        .into_iter()
        .chain(class_problems(classes))
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }

    // Families, in the exact proportions of the mix, randomly interleaved.
    let mut families = Vec::with_capacity(spec.apps as usize);
    for (f, n) in Family::ALL.iter().zip(spec.mix.counts(spec.apps)) {
        families.extend(std::iter::repeat_n(*f, n as usize));
    }
    for i in (1..families.len()).rev() {
        let j = index(rng, (i + 1) as u32) as usize;
        families.swap(i, j);
    }
    let latent = Latent::draw(spec.rank as usize, spec.hidden_sd, classes, rng);
    let apps = families
        .iter()
        .enumerate()
        .map(|(id, &family)| latent.app(id as u32, family, spec, rng))
        .collect();
    Ok((apps, latent))
}

/// What every application of a run shares: the classes' trait vectors
/// `f_c` (the columns of the heterogeneity utility matrix, Paragon §2.2)
/// and the interference concepts' loadings `L_k` (the columns of the two
/// interference matrices, §2.3). An application is a draw of its own
/// factors over them ([`Latent::app`]), so any two applications of a run,
/// catalog or not, have the low-rank structure collaborative filtering
/// finds.
#[derive(Clone, Debug, PartialEq)]
pub struct Latent {
    traits: Vec<Vec<f64>>,
    loadings: Vec<[f64; SOURCES]>,
    classes: Vec<ServerClass>,
}

impl Latent {
    /// Draws the hidden class traits (per class, per rank above 4) and the
    /// random concept loadings (per rank above 4, per source), in that
    /// order; with `rank` ≤ 4 nothing is drawn.
    fn draw(rank: usize, hidden_sd: f64, classes: &[ServerClass], rng: &mut impl RngCore) -> Self {
        // Class trait vectors f_c (Paragon §2.2: the columns of the utility
        // matrix), truncated to `rank`.
        // Hidden traits belong to the processor (microarchitecture, memory
        // technology), not to the instance type cut from it: classes with the
        // same clock and LLC run on the same host processor and share them
        // (scenarios/paragon/ec2-*.toml name six host processors for Table VI's
        // fourteen types). They are drawn once per processor, in the order of
        // its first class; where every class has its own processor (Table V)
        // this is one draw per class, as before.
        let mut traits: Vec<Vec<f64>> = Vec::with_capacity(classes.len());
        for (i, c) in classes.iter().enumerate() {
            let named = [
                libm::log(c.core_ghz),
                libm::log(f64::from(c.cores)),
                libm::log(c.llc_mb),
                libm::log(c.memory_gb),
            ];
            let mut f: Vec<f64> = named.iter().copied().take(rank).collect();
            match classes[..i].iter().position(|o| same_processor(o, c)) {
                Some(j) => f.extend_from_slice(&traits[j][f.len()..]),
                None => {
                    for _ in TRAITS..rank {
                        f.push(hidden_sd * normal(rng));
                    }
                }
            }
            traits.push(f);
        }

        // Concept loadings L_k over the ten sources (Paragon §2.3: the columns of
        // the two interference utility matrices), truncated to `rank`.
        let mut loadings: Vec<[f64; SOURCES]> = LOADINGS.iter().copied().take(rank).collect();
        for _ in CONCEPTS..rank {
            let mut l = [0.0; SOURCES];
            for x in &mut l {
                *x = uniform_open0(rng);
            }
            loadings.push(l);
        }
        Latent {
            traits,
            loadings,
            classes: classes.to_vec(),
        }
    }

    /// One application `id` of `family` over this structure (the draw order
    /// of [`generate`]'s per-application step).
    pub fn app(
        &self,
        id: u32,
        family: Family,
        spec: &CatalogSpec,
        rng: &mut impl RngCore,
    ) -> AppProfile {
        let (traits, loadings, classes) = (&self.traits, &self.loadings, &self.classes[..]);
        let rank = loadings.len();
        let ideal = (spec.ideal_min.as_secs_f64(), spec.ideal_max.as_secs_f64());
        let widest = classes.iter().map(|c| c.cores).max().unwrap_or(1);
        let mut fp = prior(family);
        if let Some(m) = spec.clock_elasticity.get(family) {
            fp.elasticity[CLOCK_TRAIT].mean = m;
        }
        if let Some(m) = spec.cache_elasticity.get(family) {
            fp.elasticity[CACHE_TRAIT].mean = m;
        }
        if let Some(m) = spec.memory_elasticity.get(family) {
            fp.elasticity[MEMORY_TRAIT].mean = m;
        }

        // Heterogeneity: x_ac = u_a · f_ac + noise · ε, speed = exp(x − max),
        // computed once the application's threads are known (below).
        let u: Vec<f64> = (0..rank)
            .map(|k| {
                spec.het_scale.or(family, HET_SCALE)
                    * match fp.elasticity.get(k) {
                        Some(pr) => pr.draw_spread(spec.elasticity_spread, rng),
                        None => normal(rng),
                    }
            })
            .collect();
        let eps: Vec<f64> = traits.iter().map(|_| normal(rng)).collect();

        // Interference: caused intensities z and sensitivities s = z ∘ g.
        let z: Vec<f64> = (0..rank)
            .map(|k| {
                fp.intensity
                    .get(k)
                    .copied()
                    .unwrap_or(EXTRA_INTENSITY)
                    .draw_spread(spec.intensity_spread, rng)
            })
            .collect();
        let sens: Vec<f64> = z
            .iter()
            .map(|&zk| zk * (GAIN.0 + (GAIN.1 - GAIN.0) * uniform_open0(rng)))
            .collect();
        let mut caused = [0.0; SOURCES];
        for (s, out) in caused.iter_mut().enumerate() {
            let v = combine(&z, loadings, s) + spec.score_noise() * normal(rng);
            *out = 100.0 * v.clamp(0.0, 1.0);
        }
        let mut tolerated = [0.0; SOURCES];
        for (s, out) in tolerated.iter_mut().enumerate() {
            let v = 1.0 - combine(&sens, loadings, s) + spec.score_noise() * normal(rng);
            *out = 100.0 * v.clamp(0.0, 1.0);
        }

        // Threads first: the cores trait counts only the cores the
        // application can use, min(class cores, threads).
        let pick = fp.cores[index(rng, fp.cores.len() as u32) as usize];
        let threads = pick.min(widest);
        let footprint = (spec.memory_benefit == MemoryBenefit::UpToFootprint)
            .then(|| log_uniform(rng, fp.memory_gb));
        let x: Vec<f64> = traits
            .iter()
            .zip(classes)
            .zip(&eps)
            .map(|((f, c), e)| {
                let dot: f64 = u
                    .iter()
                    .zip(f)
                    .enumerate()
                    .map(|(k, (a, b))| {
                        a * match (k, footprint) {
                            (CORES_TRAIT, _) => usable_cores(c, threads),
                            (MEMORY_TRAIT, Some(m)) => libm::log(c.memory_gb.min(m)),
                            _ => *b,
                        }
                    })
                    .sum();
                dot + spec.noise * e
            })
            .collect();
        let top = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let speed: Vec<f64> = x.iter().map(|&v| libm::exp(v - top)).collect();

        // Size: fits the best class, peak phase included.
        let best = argmax(&speed);
        let class = &classes[best];
        let cores = pick.min(class.cores);
        let memory_draw = footprint.unwrap_or_else(|| log_uniform(rng, fp.memory_gb));
        let ideal_s = log_uniform(rng, ideal);

        // Phases: medium / high / medium memory load (Paragon §5).
        let is_phased = uniform_open0(rng) <= spec.phased;
        let from = lerp(HIGH_FROM, uniform_open0(rng));
        let to = lerp(HIGH_TO, uniform_open0(rng));
        let (phases, peak_scale) = if is_phased {
            let h = spec.phase_high;
            let high = Phase {
                from,
                caused_scale: h,
                tolerated_scale: 1.0 / h,
                memory_scale: h,
            };
            (vec![Phase::neutral(0.0), high, Phase::neutral(to)], h)
        } else {
            (vec![Phase::neutral(0.0)], 1.0)
        };
        let memory_gb = memory_draw.min(MEMORY_FIT * class.memory_gb / peak_scale);

        AppProfile {
            id,
            family,
            speed,
            tolerated,
            caused,
            cores,
            memory_gb,
            ideal_s,
            phases,
        }
    }
}

/// Whether two classes run on the same host processor: same clock and the
/// same last-level cache (the two numbers a class gives of its processor).
fn same_processor(a: &ServerClass, b: &ServerClass) -> bool {
    a.core_ghz == b.core_ghz && a.llc_mb == b.llc_mb
}

/// ln of the cores of class `c` an application with `threads` threads can
/// use: a four-thread mix runs no faster on 32 cores than on 4 (Paragon §5's
/// applications take the cores of their threads, no more).
fn usable_cores(c: &ServerClass, threads: u32) -> f64 {
    libm::log(f64::from(c.cores.min(threads).max(1)))
}

/// Σ_k weights_k · L_k[s].
fn combine(weights: &[f64], loadings: &[[f64; SOURCES]], s: usize) -> f64 {
    weights.iter().zip(loadings).map(|(w, l)| w * l[s]).sum()
}

/// Log-uniform in `[lo, hi]`.
fn log_uniform(rng: &mut impl RngCore, (lo, hi): (f64, f64)) -> f64 {
    let u = uniform_open0(rng);
    (lo * libm::exp(u * libm::log(hi / lo))).clamp(lo, hi)
}

fn lerp((lo, hi): (f64, f64), u: f64) -> f64 {
    lo + (hi - lo) * u
}
