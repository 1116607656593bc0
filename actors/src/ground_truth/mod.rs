//! Application ground truth: what every application really is, hidden from
//! schedulers (MODEL.md §4).
//!
//! An [`AppProfile`] holds an application's speed on every server class
//! (heterogeneity), the interference it tolerates and causes on the ten
//! sources of interference of Paragon Table II ([`Source`]), its phases, its
//! memory, cores and ideal execution time. Servers compute real progress from
//! it with [`interference_factor`]; schedulers never read it; they learn it
//! through modelled profiling, as Paragon does with collaborative filtering
//! (Paragon §2.1–2.3). Classification accuracy is measured against it.
//!
//! [`generate`] draws a catalog of profiles with *low-rank structure plus
//! noise*, so that collaborative filtering has something real to find:
//!
//! * **Heterogeneity** (Paragon §2.2). Each class `c` has a trait vector
//!   `f_c` = (ln GHz, ln cores, ln LLC MB, ln memory GB, hidden traits…),
//!   truncated to `rank` entries; each application `a` has an elasticity
//!   vector `u_a` drawn from its family's prior. Then
//!   `x_ac = u_a · f_c + noise · ε_ac` and `speed_ac = exp(x_ac − max_c' x_ac')`,
//!   so the best class has speed exactly 1.0. Without noise the row-centred
//!   log-speed matrix has rank ≤ `rank` (normalisation only shifts each row).
//! * **Interference** (Paragon §2.3). `rank` interference concepts (compute,
//!   memory, I/O, cache, then random ones) each load the ten sources with a
//!   fixed vector `L_k`. An application has caused intensities `z_a` (family
//!   prior) and sensitivities `s_a = z_a ∘ g_a` (who uses a resource suffers
//!   from contention on it). `caused = 100 · clamp(z_a · L + noise · ε)`,
//!   `tolerated = 100 · clamp(1 − s_a · L + noise · ε')`: two rank-`rank`
//!   matrices before clamping and noise, on Paragon's 0–100 score scale.
//! * **Families** (Paragon §5): single-threaded (SPEC-like), multithreaded
//!   (PARSEC/SPLASH-like), multiprogrammed (mixes of four), I/O-bound (single
//!   node Hadoop/Matlab data mining), each with its own priors, cores and
//!   memory range.
//! * **Phases** (Paragon §3.4, §5): a share of applications goes through a
//!   medium / high / medium memory load; the high phase scales the memory
//!   sources' caused and tolerated scores and the memory footprint.
//! * **Co-runners** ([`interference_factor`], the one place this is defined):
//!   per source, the overload `max(0, pressure − max(0, tolerated − KNEE))
//!   / 100` of the co-runners' summed caused scores past the app's knee,
//!   `KNEE` points before its tolerated score so that contention at the
//!   score leaves 95 % (§2.3); the overloads add up in execution time, and
//!   the progress rate is `max(FLOOR, 1 / (1 + SLOPE · Σ overload))`.
//!
//! Every parameter and its default is listed in `docs/ground-truth.md`.
//! Generation is deterministic: the same spec, classes and random stream give
//! the same catalog bit for bit (MODEL.md §2). It iterates only `Vec`s and
//! arrays, draws only from the stream it is given, in a documented order, and
//! takes transcendental functions from `libm`.

mod catalog;
mod interference;
pub mod stats;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use crate::config::ServerClass;
pub use catalog::{
    CatalogSpec, FamilyMix, Latent, MAX_RANK, MemoryBenefit, NonCatalog, PerFamily, class_problems,
    generate, generate_with_latent, paragon_local_cluster,
};
pub use interference::{FLOOR, KNEE, SCORE_RATE, SLOPE, interference_factor};

/// Number of sources of interference (Paragon Table II).
pub const SOURCES: usize = 10;

/// A shared resource co-runners contend on: the ten contentious
/// microbenchmarks of Paragon Table II (§2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    MemoryCapacity,
    MemoryBandwidth,
    LlcCapacity,
    LlcBandwidth,
    L1iCache,
    L1dCache,
    Tlb,
    Core,
    NetworkBandwidth,
    StorageBandwidth,
}

impl Source {
    /// All sources, in the index order of the score arrays.
    pub const ALL: [Source; SOURCES] = [
        Source::MemoryCapacity,
        Source::MemoryBandwidth,
        Source::LlcCapacity,
        Source::LlcBandwidth,
        Source::L1iCache,
        Source::L1dCache,
        Source::Tlb,
        Source::Core,
        Source::NetworkBandwidth,
        Source::StorageBandwidth,
    ];

    /// The sources a memory phase scales (Paragon §5: medium / high / medium
    /// memory load): memory capacity and memory bandwidth.
    pub const MEMORY: [Source; 2] = [Source::MemoryCapacity, Source::MemoryBandwidth];

    /// Index into `tolerated`, `caused` and pressure arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// snake_case name, as in logs and serialised profiles.
    pub const fn name(self) -> &'static str {
        match self {
            Source::MemoryCapacity => "memory_capacity",
            Source::MemoryBandwidth => "memory_bandwidth",
            Source::LlcCapacity => "llc_capacity",
            Source::LlcBandwidth => "llc_bandwidth",
            Source::L1iCache => "l1i_cache",
            Source::L1dCache => "l1d_cache",
            Source::Tlb => "tlb",
            Source::Core => "core",
            Source::NetworkBandwidth => "network_bandwidth",
            Source::StorageBandwidth => "storage_bandwidth",
        }
    }

    /// Whether a memory phase scales this source.
    pub const fn is_memory(self) -> bool {
        matches!(self, Source::MemoryCapacity | Source::MemoryBandwidth)
    }
}

/// Workload family (Paragon §5). Each has its own priors in [`generate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// SPEC CPU2006-like: one core, sensitive to frequency, core, L1 and LLC.
    SingleThreaded,
    /// PARSEC / SPLASH-2 / SPECjbb-like: several cores, memory-bandwidth and
    /// LLC heavy, faster with more cores.
    Multithreaded,
    /// Mixes of four single-threaded programs: a bit of everything.
    Multiprogrammed,
    /// Single-node data mining (Hadoop, Matlab): storage and network heavy,
    /// little sensitivity to the CPU.
    IoBound,
}

impl Family {
    pub const ALL: [Family; 4] = [
        Family::SingleThreaded,
        Family::Multithreaded,
        Family::Multiprogrammed,
        Family::IoBound,
    ];

    /// kebab-case name, as in scenario files.
    pub const fn name(self) -> &'static str {
        match self {
            Family::SingleThreaded => "single-threaded",
            Family::Multithreaded => "multithreaded",
            Family::Multiprogrammed => "multiprogrammed",
            Family::IoBound => "io-bound",
        }
    }
}

impl ServerClass {
    /// Classes from rows of `(name, cores, GHz, memory GB, LLC MB)`, as
    /// the papers' server tables print them.
    pub fn table(rows: &[(&str, u32, f64, f64, f64)]) -> Vec<ServerClass> {
        rows.iter()
            .map(|&(name, cores, core_ghz, memory_gb, llc_mb)| ServerClass {
                name: name.into(),
                cores,
                core_ghz,
                memory_gb,
                llc_mb,
            })
            .collect()
    }
}

/// One phase of an application's execution (Paragon §3.4, §5).
///
/// The scales apply to the memory sources ([`Source::MEMORY`]) and to the
/// memory footprint; the application's base profile is its first phase, whose
/// scales are all 1.0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Fraction of the work done when the phase starts, 0.0 for the first.
    pub from: f64,
    /// Multiplies the caused scores of the memory sources (capped at 100).
    pub caused_scale: f64,
    /// Multiplies the tolerated scores of the memory sources (capped at 100).
    pub tolerated_scale: f64,
    /// Multiplies `memory_gb`.
    pub memory_scale: f64,
}

impl Phase {
    /// A phase that changes nothing, starting at `from`.
    pub const fn neutral(from: f64) -> Self {
        Phase {
            from,
            caused_scale: 1.0,
            tolerated_scale: 1.0,
            memory_scale: 1.0,
        }
    }
}

/// The hidden truth about one application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppProfile {
    pub id: u32,
    pub family: Family,
    /// Speed on each server class (index = class), relative to the app's best
    /// class = 1.0 (heterogeneity, Paragon §2.2). Alone on class `c` the app
    /// needs `ideal_s / speed[c]`.
    pub speed: Vec<f64>,
    /// Interference the app tolerates per source, 0..=100 (Paragon §2.3
    /// sensitivity scores: the contention at which it starts to lose
    /// performance; high = robust).
    pub tolerated: [f64; SOURCES],
    /// Interference the app causes per source, 0..=100 (high = aggressive).
    pub caused: [f64; SOURCES],
    /// Cores the app uses (its threads); always fits its best class.
    pub cores: u32,
    /// Memory footprint in its first phase, GB; its peak over all phases fits
    /// its best class.
    pub memory_gb: f64,
    /// Execution time alone on its best class, seconds.
    pub ideal_s: f64,
    /// At least one; the first has `from == 0.0`, `from` strictly increases.
    pub phases: Vec<Phase>,
}

impl AppProfile {
    /// The phase the app is in once `done_fraction` of its work is done: the
    /// last phase whose `from` is at or below it (the first for anything
    /// below 0 or NaN).
    pub fn phase_at(&self, done_fraction: f64) -> &Phase {
        self.phases
            .iter()
            .rev()
            .find(|p| p.from <= done_fraction)
            .unwrap_or(&self.phases[0])
    }

    /// The class it runs fastest on (the first of equals).
    pub fn best_class(&self) -> usize {
        argmax(&self.speed)
    }

    /// Caused scores in `phase`: the memory sources scaled by
    /// `phase.caused_scale`, capped at 100. Summed over co-runners this is
    /// the pressure [`interference_factor`] takes.
    pub fn caused_in(&self, phase: &Phase) -> [f64; SOURCES] {
        scaled(&self.caused, phase.caused_scale)
    }

    /// Tolerated scores in `phase`: the memory sources scaled by
    /// `phase.tolerated_scale`, capped at 100.
    pub fn tolerated_in(&self, phase: &Phase) -> [f64; SOURCES] {
        scaled(&self.tolerated, phase.tolerated_scale)
    }

    /// Memory footprint in `phase`, GB.
    pub fn memory_in(&self, phase: &Phase) -> f64 {
        self.memory_gb * phase.memory_scale
    }

    /// Largest memory footprint over all phases, GB.
    pub fn peak_memory_gb(&self) -> f64 {
        self.phases
            .iter()
            .map(|p| self.memory_in(p))
            .fold(0.0, f64::max)
    }
}

/// Index of the largest value, the first of equals (0 for an empty slice).
pub(crate) fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

fn scaled(scores: &[f64; SOURCES], scale: f64) -> [f64; SOURCES] {
    let mut out = *scores;
    for s in Source::MEMORY {
        out[s.index()] = (out[s.index()] * scale).clamp(0.0, 100.0);
    }
    out
}
