//! The profiling lab: the one place on the scheduler's side that touches the
//! ground truth, the way a real profiling cluster touches real hardware.
//!
//! Paragon never reads an application's true profile; it runs the
//! application for about a minute on two server configurations and against
//! two contentious microbenchmarks on a high-end configuration, and gets
//! noisy measurements (Paragon §2.2–§2.4). A small set of applications is
//! profiled offline on every configuration and every source (§2.2). This
//! module produces those measurements from the catalog, with noise drawn
//! from the scheduler's own random stream, and nothing else: the scheduler
//! learns everything else through collaborative filtering.
//!
//! It also keeps the score of the classification against the truth (the
//! validation of Paragon Tables I and III). That bookkeeping only reaches
//! metrics; no decision reads it.

use std::sync::Arc;

use rand::RngCore;

use crate::ground_truth::{AppProfile, SOURCES};
use crate::kernel::Metrics;
use crate::sampling::{index, normal};
use crate::task::Kind;
use crate::world::World;

/// What the scheduler believes about one application once classified:
/// speed per server configuration relative to its predicted best (1.0),
/// and the interference it tolerates and causes, on Paragon's 0–100 scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub speed: Vec<f64>,
    pub tolerated: [f64; SOURCES],
    pub caused: [f64; SOURCES],
}

impl Profile {
    /// The configuration with the highest predicted speed (first of equals).
    pub fn best_class(&self) -> usize {
        crate::ground_truth::argmax(&self.speed)
    }
}

/// The measurements of one online profiling run (§2.4).
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// (configuration, ln IPS) for the two configurations profiled.
    pub ln_ips: Vec<(usize, f64)>,
    /// (source, score) against the two microbenchmarks.
    pub tolerated: Vec<(usize, f64)>,
    pub caused: Vec<(usize, f64)>,
}

/// A fully profiled application of the offline training set (§2.2).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingRow {
    pub ln_ips: Vec<f64>,
    pub tolerated: [f64; SOURCES],
    pub caused: [f64; SOURCES],
}

/// Configurations profiled per application online (§2.2) and
/// microbenchmarks run against it (§2.3).
pub const PROFILED_CLASSES: usize = 2;
pub const PROFILED_SOURCES: usize = 2;

pub struct Lab {
    world: Arc<World>,
    /// Relative noise: sd of ln IPS and of a score in units of 100 points.
    noise: f64,
    classes: usize,
    /// Column means of the training set's scores: the naive predictor the
    /// classification is compared with.
    column_mean: [[f64; SOURCES]; 2],
    /// Grades of the catalog applications' classifications, and of the
    /// kinds of tasks without a catalog entry (kept apart, so that Tables
    /// I and III's validation stays over the catalog).
    apps: Grades,
    kinds: Grades,
}

/// The validation of classifications against the truth (Paragon Tables I
/// and III).
#[derive(Default)]
struct Grades {
    classified: u64,
    best_hits: u64,
    within_5pct: u64,
    /// Applications whose predicted ranking of configurations has every
    /// position right, all but one exchange of two (at most two positions
    /// wrong: §2.2's "almost correct", Table I's 90 % row), at least half
    /// (Table I).
    rank_exact: u64,
    rank_almost: u64,
    rank_50pct: u64,
    /// |predicted / true speed − 1| for every configuration (§2.2's
    /// deviation of predicted from measured performance).
    speed_errors: Vec<f64>,
    /// Expected hits of a uniformly random pick of configuration.
    chance_hits: f64,
    errors: Vec<f64>,
    naive_errors: Vec<f64>,
}

impl Grades {
    /// Scores `predicted` against `truth`: best configuration chosen, one
    /// within 5 % of the best, the ranking, and the absolute error of every
    /// sensitivity score (and of the naive `column_mean` predictor).
    fn grade(
        &mut self,
        truth: &AppProfile,
        predicted: &Profile,
        column_mean: &[[f64; SOURCES]; 2],
    ) {
        self.classified += 1;
        let chosen = truth
            .speed
            .get(predicted.best_class())
            .copied()
            .unwrap_or(0.0);
        self.best_hits += u64::from(chosen >= 1.0 - 1e-12);
        self.within_5pct += u64::from(chosen >= 0.95);
        let right = ranking_positions_right(&truth.speed, &predicted.speed);
        let n = truth.speed.len().max(1) as f64;
        self.rank_exact += u64::from(right == truth.speed.len());
        self.rank_almost += u64::from(right + 2 >= truth.speed.len());
        self.rank_50pct += u64::from(right as f64 >= 0.5 * n);
        for (t, p) in truth.speed.iter().zip(&predicted.speed) {
            if *t > 0.0 {
                self.speed_errors.push((p / t - 1.0).abs());
            }
        }
        let best = truth.speed.iter().filter(|&&s| s >= 1.0 - 1e-12).count();
        self.chance_hits += best as f64 / truth.speed.len().max(1) as f64;
        let [mean_tolerated, mean_caused] = column_mean;
        for s in 0..SOURCES {
            self.errors
                .push((predicted.tolerated[s] - truth.tolerated[s]).abs());
            self.errors
                .push((predicted.caused[s] - truth.caused[s]).abs());
            self.naive_errors
                .push((mean_tolerated[s] - truth.tolerated[s]).abs());
            self.naive_errors
                .push((mean_caused[s] - truth.caused[s]).abs());
        }
    }
}

impl Lab {
    pub fn new(world: Arc<World>, classes: usize, noise: f64) -> Self {
        Lab {
            world,
            noise,
            classes,
            column_mean: [[50.0; SOURCES]; 2],
            apps: Grades::default(),
            kinds: Grades::default(),
        }
    }

    fn app(&self, app: u32) -> Option<&AppProfile> {
        self.world.catalog.get(app as usize)
    }

    /// ln of what a profiling run measures on configuration `class`: the
    /// application's IPS there. Its absolute level differs per application
    /// (instructions per unit of work are unknown to the scheduler), so
    /// only ratios between configurations carry information.
    fn ln_ips(&self, app: &AppProfile, level: f64, class: usize, rng: &mut impl RngCore) -> f64 {
        let speed = app.speed.get(class).copied().unwrap_or(1.0).max(1e-9);
        libm::log(speed) + level + self.noise * normal(rng)
    }

    fn score(&self, truth: f64, rng: &mut impl RngCore) -> f64 {
        (truth + 100.0 * self.noise * normal(rng)).clamp(0.0, 100.0)
    }

    /// The offline training set: `n` distinct applications (at most the
    /// catalog), profiled on every configuration and source (§2.2).
    pub fn training_set(&mut self, n: u32, rng: &mut impl RngCore) -> Vec<TrainingRow> {
        let apps = self.world.catalog.len() as u32;
        let mut ids: Vec<u32> = (0..apps).collect();
        let n = n.min(apps) as usize;
        for i in 0..n {
            let j = i + index(rng, apps - i as u32) as usize;
            ids.swap(i, j);
        }
        let mut rows = Vec::with_capacity(n);
        for &id in &ids[..n] {
            let Some(app) = self.app(id) else { continue };
            let ln_ips = (0..self.classes)
                .map(|c| self.ln_ips(app, app_level(app.id), c, rng))
                .collect();
            let tolerated = std::array::from_fn(|s| self.score(app.tolerated[s], rng));
            let caused = std::array::from_fn(|s| self.score(app.caused[s], rng));
            rows.push(TrainingRow {
                ln_ips,
                tolerated,
                caused,
            });
        }
        if !rows.is_empty() {
            let n = rows.len() as f64;
            for s in 0..SOURCES {
                self.column_mean[0][s] = rows.iter().map(|r| r.tolerated[s]).sum::<f64>() / n;
                self.column_mean[1][s] = rows.iter().map(|r| r.caused[s]).sum::<f64>() / n;
            }
        }
        rows
    }

    /// Whether the lab can run tasks without a catalog entry: their kinds
    /// are workloads with a profile (`non_catalog = "workloads"`), not the
    /// model's plain units of work.
    pub fn profiles_kinds(&self) -> bool {
        self.world.kinds.is_some()
    }

    /// One online profiling run of catalog application `app` (§2.4): two
    /// random configurations for heterogeneity, two random microbenchmarks on
    /// a high-end configuration for interference. `None` for an application
    /// outside the catalog.
    pub fn profile(&self, app: u32, rng: &mut impl RngCore) -> Option<Measurement> {
        let app = self.app(app)?;
        Some(self.measure(app, app_level(app.id), rng))
    }

    /// The same profiling run of a task without a catalog entry (§2.4: an
    /// unknown workload is profiled like any other), against its kind's
    /// hidden profile; its absolute IPS level is fixed per kind. `None`
    /// when the run's tasks without a catalog entry have no profile
    /// (`non_catalog = "plain"`).
    pub fn profile_kind(&self, kind: Kind, rng: &mut impl RngCore) -> Option<Measurement> {
        let truth = self.world.kind_truth(kind)?;
        let level = name_level(&self.world.kind_name(kind));
        Some(self.measure(&truth, level, rng))
    }

    fn measure(&self, app: &AppProfile, level: f64, rng: &mut impl RngCore) -> Measurement {
        let classes = distinct(rng, self.classes, PROFILED_CLASSES);
        let sources = distinct(rng, SOURCES, PROFILED_SOURCES);
        let ln_ips = classes
            .iter()
            .map(|&c| (c, self.ln_ips(app, level, c, rng)))
            .collect();
        let tolerated = sources
            .iter()
            .map(|&s| (s, self.score(app.tolerated[s], rng)))
            .collect();
        let caused = sources
            .iter()
            .map(|&s| (s, self.score(app.caused[s], rng)))
            .collect();
        Measurement {
            ln_ips,
            tolerated,
            caused,
        }
    }

    /// Scores a classification against the truth, as Paragon Tables I and
    /// III validate theirs: best configuration chosen, one within 5 % of the
    /// best, and the absolute error of every sensitivity score.
    pub fn grade(&mut self, app: u32, predicted: &Profile) {
        let Some(truth) = self.world.catalog.get(app as usize) else {
            return;
        };
        self.apps.grade(truth, predicted, &self.column_mean);
    }

    /// The same for a kind of tasks without a catalog entry; its grades
    /// reach metrics of their own (`kinds_classified`, `kind_class_*`).
    pub fn grade_kind(&mut self, kind: Kind, predicted: &Profile) {
        if let Some(truth) = self.world.kind_truth(kind) {
            self.kinds.grade(&truth, predicted, &self.column_mean);
        }
    }

    /// The grades into `out`; their errors move there rather than being
    /// copied (one per classified application and source: at 100,000
    /// servers the copy was the scheduler's largest allocation at the end).
    pub fn finish(&mut self, out: &mut Metrics) {
        let g = &mut self.apps;
        out.add("apps_classified", g.classified);
        out.add("class_best_config_hits", g.best_hits);
        out.add("class_within_5pct_hits", g.within_5pct);
        out.add("class_rank_exact_hits", g.rank_exact);
        out.add("class_rank_almost_hits", g.rank_almost);
        out.add("class_rank_50pct_hits", g.rank_50pct);
        out.add_f64("class_best_config_chance_hits", g.chance_hits);
        out.append_samples("class_sensitivity_error", std::mem::take(&mut g.errors));
        out.append_samples(
            "class_sensitivity_error_colmean",
            std::mem::take(&mut g.naive_errors),
        );
        out.append_samples("class_speed_error", std::mem::take(&mut g.speed_errors));
        // only runs that classified a kind have these
        let k = &mut self.kinds;
        if k.classified > 0 {
            out.add("kinds_classified", k.classified);
            out.add("kind_class_best_config_hits", k.best_hits);
            out.add("kind_class_within_5pct_hits", k.within_5pct);
            out.append_samples(
                "kind_class_speed_error",
                std::mem::take(&mut k.speed_errors),
            );
            out.append_samples(
                "kind_class_sensitivity_error",
                std::mem::take(&mut k.errors),
            );
        }
    }
}

/// Positions of the best-to-worst ranking of configurations that the
/// predicted speeds get right (Paragon Table I's "correct SC ranking"): the
/// configuration predicted at position `k` is as fast, in truth, as the
/// one truly at position `k` (so ties in the truth never count as errors).
pub fn ranking_positions_right(truth: &[f64], predicted: &[f64]) -> usize {
    let order = |v: &[f64]| {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
        idx
    };
    let (t, p) = (order(truth), order(predicted));
    t.iter()
        .zip(&p)
        .filter(|&(&ti, &pi)| {
            (truth[ti] - truth.get(pi).copied().unwrap_or(f64::NAN)).abs() <= 1e-12
        })
        .count()
}

/// A fixed per-application offset of ln IPS in [−1, 1] (splitmix64 of the
/// id): the absolute level a profiling run sees and a scheduler cannot
/// know in advance.
fn app_level(id: u32) -> f64 {
    level(u64::from(id))
}

/// The same offset for a kind of tasks without a catalog entry, from its
/// name (FNV-1a, then splitmix64).
fn name_level(name: &str) -> f64 {
    let hash = name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    });
    level(hash)
}

/// splitmix64 of `key`, mapped to [−1, 1].
fn level(key: u64) -> f64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// `k` distinct indices in `0..n` (all of them if `n <= k`), in draw order.
fn distinct(rng: &mut impl RngCore, n: usize, k: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    let k = k.min(n);
    for i in 0..k {
        let j = i + index(rng, (n - i) as u32) as usize;
        all.swap(i, j);
    }
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::kernel::actor_rng;

    #[test]
    fn ranking_positions_count_ties_in_the_truth_as_right() {
        let truth = [1.0, 0.8, 0.8, 0.5];
        assert_eq!(ranking_positions_right(&truth, &[0.9, 0.7, 0.75, 0.1]), 4);
        assert_eq!(ranking_positions_right(&truth, &[0.5, 0.9, 0.7, 0.1]), 2);
        // reversed: only the tied middle pair still lands on equal speeds
        assert_eq!(ranking_positions_right(&truth, &[0.1, 0.2, 0.3, 0.4]), 2);
    }

    #[test]
    fn app_levels_are_spread_and_fixed() {
        let levels: Vec<f64> = (0..1000).map(app_level).collect();
        assert!(levels.iter().all(|l| (-1.0..=1.0).contains(l)));
        let mean = levels.iter().sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.1, "{mean}");
        assert_eq!(app_level(7), app_level(7));
    }

    #[test]
    fn distinct_draws_distinct_indices() {
        let mut rng = actor_rng(1, "lab");
        for _ in 0..100 {
            let d = distinct(&mut rng, 10, 2);
            assert_eq!(d.len(), 2);
            assert_ne!(d[0], d[1]);
            assert!(d.iter().all(|&i| i < 10));
        }
        assert_eq!(distinct(&mut rng, 1, 2), vec![0]);
    }
}
