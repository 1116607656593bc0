//! The profiling lab for distributed applications: the one place on the
//! scheduler's side that touches their ground truth, the way a profiling
//! cluster with a bubble touches real hardware (ASPLOS'16 §3.4, §4.1).
//!
//! One profiling of an application over `m` units is: a run alone (t0),
//! the homogeneous settings the chosen algorithm asks for, one run against
//! the bubble to measure its bubble score (§2.1), and 60 random
//! heterogeneous settings to pick its mapping policy (§3.3). Every run's
//! runtime carries multiplicative noise from the scheduler's own stream,
//! and its modeled time counts (scaled by `dist_profile_scale`). The error
//! of the profiled curves against the truth is grading for metrics only.

use rand::{RngCore, SeedableRng};

use super::profile::{Algorithm, AppModel, best_policy, profile};
use super::truth::{LEVELS, catalog};
use crate::kernel::ActorRng;
use crate::sampling::{index, normal, to_nanos};

/// Heterogeneous settings sampled to choose a mapping policy (§3.3).
pub const POLICY_SAMPLES: usize = 60;

/// What one profiling gives the scheduler, and its grading.
#[derive(Clone, Debug)]
pub struct Profiled {
    pub model: AppModel,
    /// Modeled time of all its runs, ns.
    pub time_ns: u64,
    /// Homogeneous settings measured, of `settings`.
    pub measured: usize,
    pub settings: usize,
    /// Mean relative error of the curves against the truth (metrics only).
    pub error: f64,
}

/// Profiles catalog application `app` over `m` units; `None` if unknown.
pub fn profile_app(
    app: usize,
    m: usize,
    algorithm: Algorithm,
    noise: f64,
    scale: f64,
    rng: &mut impl RngCore,
) -> Option<Profiled> {
    let truth = catalog().into_iter().nth(app)?;
    let m = m.max(1);
    let solo = truth.solo_s;
    let mut time_s = 0.0;
    // the algorithm's runs draw their noise from a stream split off the
    // scheduler's, which itself picks the random baselines' settings
    let mut noise_rng = ActorRng::seed_from_u64(rng.next_u64());
    let mut draws: Vec<f64> = Vec::new();
    let mut curves = {
        let mut run = |p: usize, k: usize| {
            let t = (solo * truth.curve(p as f64, k, m) * (1.0 + noise * normal(&mut noise_rng)))
                .max(1e-9);
            draws.push(t);
            t
        };
        profile(algorithm, m, &mut run, rng)
    };
    time_s += draws.iter().sum::<f64>();
    let t0 = draws.first().copied().unwrap_or(solo);
    // the bubble score: one run next to the bubble (§2.1)
    let bubble = (truth.bubble * (1.0 + noise * normal(rng))).max(0.0);
    time_s += solo;
    let samples: Vec<(Vec<f64>, f64)> = (0..POLICY_SAMPLES)
        .map(|_| {
            let p: Vec<f64> = (0..m)
                .map(|_| f64::from(index(rng, LEVELS as u32 + 1)))
                .collect();
            let t = (solo * truth.runtime(&p) * (1.0 + noise * normal(rng))).max(1e-9);
            time_s += t;
            (p, t / t0)
        })
        .collect();
    let policy = best_policy(&curves, &samples);
    let error = curves.error(&|p, k| truth.curve(p as f64, k, m));
    curves.t.shrink_to_fit();
    Some(Profiled {
        measured: curves.measured,
        settings: curves.settings(),
        model: AppModel {
            curves,
            policy,
            bubble,
        },
        time_ns: to_nanos(time_s * scale * 1e9),
        error,
    })
}
