//! The clustering service of YARN-H (harvesting §4.1, §5.3): it groups the
//! primary tenants into utilisation *classes* that the class selection of
//! Algorithm 1 (`scheduler/harvest.rs`) chooses among.
//!
//! **Series.** Like AutoPilot (§3.2) the service keeps, for each primary
//! tenant, the utilisation of its "average server" every two minutes: the
//! mean of `primary_cores / cores` over the tenant's servers, from their
//! latest reports to the scheduler. The scheduler is told at build time
//! which servers each tenant owns (what AutoPilot knows). The last
//! `scheduler.cluster_window` of samples is kept.
//!
//! **Pattern** ([`label`], §3.2). The series' power spectrum comes from an
//! FFT (`rustfft`); its inverse FFT is the series' autocorrelation
//! (Wiener–Khinchin). A tenant is
//! - *periodic* if its utilisation repeats itself: past the first zero
//!   crossing, the (biased) autocorrelation climbs back to at least
//!   [`PERIODIC_ACF`] at some lag within the first half of the window (so
//!   the window holds two cycles or more — a noisy cycle needs about
//!   three to clear the threshold — as a month holds 31 days in
//!   Figure 1b), in a series of at least [`PERIODIC_MIN_SAMPLES`];
//! - otherwise *constant* if its coefficient of variation (standard
//!   deviation over mean) is at most [`CONSTANT_CV`];
//! - otherwise *unpredictable*.
//!
//! A plain "strongest bin holds most of the energy" rule cannot tell a
//! slow random walk (whose spectrum falls as 1/f², Figure 1d) from one
//! cycle of a daily pattern; asking for a repetition can.
//!
//! **Classes.** Within each pattern, k-means (Lloyd's algorithm, seeded by
//! k-means++ from the scheduler's random stream) clusters the tenants by
//! (average, peak) utilisation into at most `scheduler.cluster_classes`
//! classes; a class is tagged with its pattern and the centroid's average
//! and peak (§4.1). k-means is written out here (a few dozen lines over 2-D
//! points) rather than taken from a crate: the crates that offer it bring
//! ndarray-sized dependency trees or their own random sources, and the
//! model must draw only from its actor's stream.
//!
//! **Refresh and prior.** The service re-clusters every
//! `scheduler.cluster_every` (the paper does it daily). A tenant's tags
//! come from its observed series only once the series spans the whole
//! `cluster_window`; before that — and so before the first refresh — they
//! are its configured pattern, average and peak: the history AutoPilot
//! would already hold about a tenant (the paper clusters a month of it),
//! which a few hours of a run cannot replace.
//!
//! **Platform independence.** rustfft computes its twiddle factors with the
//! platform's `sin`/`cos`, so spectra may differ in the last bits between
//! C libraries. The scalar planner is used (no CPU-dependent SIMD paths),
//! and the statistics compared with thresholds are rounded to 1e-9 first,
//! so a label can only differ at an exact tie with a threshold.

use std::collections::VecDeque;

use dcemu_topology::SimTime;
use rand::RngCore;
use rustfft::FftPlannerScalar;
use rustfft::num_complex::Complex;

use crate::config::{PrimaryTenantConfig, UtilPattern};
use crate::sampling::{index, uniform_open0};

/// AutoPilot records the utilisation every two minutes (§3.2).
pub const SAMPLE_NS: SimTime = 120_000_000_000;

/// Autocorrelation a periodic series climbs back to after its first zero
/// crossing.
pub const PERIODIC_ACF: f64 = 0.4;

/// Highest coefficient of variation of a (roughly) constant series.
pub const CONSTANT_CV: f64 = 0.4;

/// Fewest samples a series needs to be labelled.
pub const MIN_SAMPLES: usize = 16;

/// Fewest samples a series needs to be labelled periodic (4 h of
/// two-minute samples): in shorter ones chance correlations reach
/// [`PERIODIC_ACF`].
pub const PERIODIC_MIN_SAMPLES: usize = 120;

/// Lloyd iterations at most.
const MAX_ITERATIONS: usize = 100;

/// Rounds a statistic before it meets a threshold (see the module doc).
fn settle(x: f64) -> f64 {
    libm::round(x * 1e9) / 1e9
}

/// The pattern of a utilisation series (see the module doc); `None` for
/// fewer than [`MIN_SAMPLES`] samples.
pub fn label(series: &[f64]) -> Option<UtilPattern> {
    let n = series.len();
    if n < MIN_SAMPLES {
        return None;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let var = series.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    if var <= 1e-12 {
        return Some(UtilPattern::Constant);
    }
    if n >= PERIODIC_MIN_SAMPLES && settle(repetition(series, mean)) >= PERIODIC_ACF {
        return Some(UtilPattern::Periodic);
    }
    let cv = libm::sqrt(var) / mean.abs().max(1e-9);
    Some(if settle(cv) <= CONSTANT_CV {
        UtilPattern::Constant
    } else {
        UtilPattern::Unpredictable
    })
}

/// The highest autocorrelation past the first zero crossing, at lags up
/// to half the series; 0 if it never crosses zero there.
pub fn repetition(series: &[f64], mean: f64) -> f64 {
    let acf = autocorrelation(series, mean);
    let half = series.len() / 2;
    let Some(first_negative) = (1..=half).find(|&k| acf[k] < 0.0) else {
        return 0.0;
    };
    (first_negative..=half).map(|k| acf[k]).fold(0.0, f64::max)
}

/// Autocorrelation of `series` (mean removed) at lags `0..n`, normalised
/// so lag 0 is 1, every lag's sum divided by `n` (the biased estimator,
/// which damps the few products of long lags), from the power spectrum of
/// the zero-padded series.
pub fn autocorrelation(series: &[f64], mean: f64) -> Vec<f64> {
    let n = series.len();
    let len = 2 * n;
    let mut buf: Vec<Complex<f64>> = series
        .iter()
        .map(|&x| Complex::new(x - mean, 0.0))
        .chain(std::iter::repeat_n(Complex::new(0.0, 0.0), n))
        .collect();
    let mut planner = FftPlannerScalar::<f64>::new();
    planner.plan_fft_forward(len).process(&mut buf);
    for c in &mut buf {
        *c = Complex::new(c.norm_sqr(), 0.0);
    }
    planner.plan_fft_inverse(len).process(&mut buf);
    let zero = buf[0].re / n as f64;
    (0..n)
        .map(|k| {
            let cov = buf[k].re / n as f64;
            if zero > 0.0 { cov / zero } else { 0.0 }
        })
        .collect()
}

/// A tenant's pattern, average and peak utilisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tags {
    pub pattern: UtilPattern,
    pub avg: f64,
    pub peak: f64,
}

/// What a tenant's configuration says of it: the history AutoPilot would
/// hold. Average: `mean` (for an unpredictable tenant raised by its share
/// of time in spikes); peak: the top of its cycle (periodic) or its spikes
/// (unpredictable), plus two standard deviations of noise; both scaled as
/// the tenant scales them (§6.1).
pub fn prior(cfg: &PrimaryTenantConfig) -> Tags {
    let noisy = cfg.mean + 2.0 * cfg.noise;
    let (avg, peak) = match cfg.pattern {
        UtilPattern::Constant => (cfg.mean, noisy),
        UtilPattern::Periodic => (cfg.mean, noisy + cfg.amplitude),
        UtilPattern::Unpredictable => {
            let avg = cfg.nominal_mean();
            let peak = if cfg.spikes_per_day > 0.0 {
                noisy.max(cfg.spike_util)
            } else {
                noisy
            };
            (avg, peak)
        }
    };
    Tags {
        pattern: cfg.pattern,
        avg: cfg.scaled(avg),
        peak: cfg.scaled(peak),
    }
}

/// Lloyd's k-means over 2-D points with k-means++ seeding: the cluster of
/// each point and the centroids. `k` is capped by the number of distinct
/// points; ties go to the lowest centroid index, so the result depends only
/// on the points and the random stream.
pub fn kmeans(
    points: &[[f64; 2]],
    k: usize,
    rng: &mut impl RngCore,
) -> (Vec<usize>, Vec<[f64; 2]>) {
    let mut distinct: Vec<[f64; 2]> = Vec::new();
    for p in points {
        if !distinct.contains(p) {
            distinct.push(*p);
        }
    }
    let k = k.min(distinct.len());
    if k == 0 {
        return (Vec::new(), Vec::new());
    }
    let dist = |a: &[f64; 2], b: &[f64; 2]| (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2);
    // k-means++: the first centre uniformly, then each with probability
    // proportional to its squared distance to the nearest centre so far
    let mut centroids = vec![distinct[index(rng, distinct.len() as u32) as usize]];
    while centroids.len() < k {
        let d: Vec<f64> = distinct
            .iter()
            .map(|p| {
                centroids
                    .iter()
                    .map(|c| dist(p, c))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let total: f64 = d.iter().sum();
        let mut pick = uniform_open0(rng) * total;
        let mut chosen = d.iter().rposition(|&x| x > 0.0).unwrap_or(0);
        for (i, &x) in d.iter().enumerate() {
            if x > 0.0 && pick <= x {
                chosen = i;
                break;
            }
            pick -= x;
        }
        centroids.push(distinct[chosen]);
    }
    let nearest = |p: &[f64; 2], centroids: &[[f64; 2]]| {
        let mut best = 0;
        for (j, c) in centroids.iter().enumerate() {
            if dist(p, c) < dist(p, &centroids[best]) {
                best = j;
            }
        }
        best
    };
    let mut assign: Vec<usize> = points.iter().map(|p| nearest(p, &centroids)).collect();
    for _ in 0..MAX_ITERATIONS {
        for (j, c) in centroids.iter_mut().enumerate() {
            let members: Vec<&[f64; 2]> = points
                .iter()
                .zip(&assign)
                .filter(|(_, a)| **a == j)
                .map(|(p, _)| p)
                .collect();
            if !members.is_empty() {
                let m = members.len() as f64;
                *c = [
                    members.iter().map(|p| p[0]).sum::<f64>() / m,
                    members.iter().map(|p| p[1]).sum::<f64>() / m,
                ];
            }
        }
        let next: Vec<usize> = points.iter().map(|p| nearest(p, &centroids)).collect();
        if next == assign {
            break;
        }
        assign = next;
    }
    (assign, centroids)
}

/// A utilisation class: tenants of one pattern with similar average and
/// peak utilisation (§4.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub pattern: UtilPattern,
    /// The centroid: average and peak utilisation of the class.
    pub avg: f64,
    pub peak: f64,
    /// Indices of its primary tenants.
    pub tenants: Vec<usize>,
}

/// Clusters tenants with `tags` into classes: k-means on (average, peak)
/// within each pattern, at most `max_k` classes per pattern; classes come
/// periodic, constant, unpredictable, then by centroid.
pub fn cluster(tags: &[Tags], max_k: usize, rng: &mut impl RngCore) -> Vec<Class> {
    let mut classes = Vec::new();
    for pattern in [
        UtilPattern::Periodic,
        UtilPattern::Constant,
        UtilPattern::Unpredictable,
    ] {
        let members: Vec<usize> = (0..tags.len())
            .filter(|&t| tags[t].pattern == pattern)
            .collect();
        let points: Vec<[f64; 2]> = members
            .iter()
            .map(|&t| [tags[t].avg, tags[t].peak])
            .collect();
        let (assign, centroids) = kmeans(&points, max_k.max(1), rng);
        let mut found: Vec<Class> = centroids
            .iter()
            .enumerate()
            .map(|(j, c)| Class {
                pattern,
                avg: c[0],
                peak: c[1],
                tenants: members
                    .iter()
                    .zip(&assign)
                    .filter(|(_, a)| **a == j)
                    .map(|(&t, _)| t)
                    .collect(),
            })
            .filter(|c| !c.tenants.is_empty())
            .collect();
        found.sort_by(|a, b| {
            a.avg
                .total_cmp(&b.avg)
                .then(a.peak.total_cmp(&b.peak))
                .then(a.tenants.cmp(&b.tenants))
        });
        classes.extend(found);
    }
    classes
}

/// The clustering service: each tenant's series, its tags, and the classes
/// of the latest refresh.
#[derive(Clone, Debug)]
pub struct ClusteringService {
    priors: Vec<Tags>,
    series: Vec<VecDeque<f64>>,
    /// Samples in a full window.
    window: usize,
    every: SimTime,
    max_k: usize,
    next_sample: SimTime,
    next_refresh: Option<SimTime>,
    tags: Vec<Tags>,
    classes: Vec<Class>,
    refreshes: u64,
}

impl ClusteringService {
    /// A service for tenants with these priors, re-clustering every
    /// `every_ns` over a window of `window_ns`, with at most `max_k`
    /// classes per pattern.
    pub fn new(priors: Vec<Tags>, window_ns: SimTime, every_ns: SimTime, max_k: u32) -> Self {
        ClusteringService {
            series: vec![VecDeque::new(); priors.len()],
            tags: priors.clone(),
            priors,
            window: (window_ns / SAMPLE_NS).max(1) as usize,
            every: every_ns.max(1),
            max_k: max_k.max(1) as usize,
            next_sample: 0,
            next_refresh: None,
            classes: Vec::new(),
            refreshes: 0,
        }
    }

    /// Takes a sample of every tenant if one is due (`util(t)`: tenant
    /// `t`'s utilisation now, `None` if unknown), and re-clusters if a
    /// refresh is due (the first one at once). Returns whether it
    /// re-clustered.
    pub fn advance(
        &mut self,
        now: SimTime,
        util: impl Fn(usize) -> Option<f64>,
        rng: &mut impl RngCore,
    ) -> bool {
        if now >= self.next_sample {
            for (t, series) in self.series.iter_mut().enumerate() {
                if let Some(u) = util(t) {
                    series.push_back(u);
                    if series.len() > self.window {
                        series.pop_front();
                    }
                }
            }
            self.next_sample = (now / SAMPLE_NS + 1) * SAMPLE_NS;
        }
        if self.next_refresh.is_some_and(|at| now < at) {
            return false;
        }
        self.refresh(rng);
        self.next_refresh = Some((now / self.every + 1) * self.every);
        true
    }

    /// Clusters once from the priors if it never did.
    pub fn ensure(&mut self, rng: &mut impl RngCore) {
        if self.next_refresh.is_none() {
            self.refresh(rng);
            self.next_refresh = Some(self.every);
        }
    }

    /// Tags every tenant (from a full window of observations, else from
    /// its prior) and clusters them.
    pub fn refresh(&mut self, rng: &mut impl RngCore) {
        for t in 0..self.priors.len() {
            let series = &self.series[t];
            self.tags[t] = if series.len() >= self.window {
                let s: Vec<f64> = series.iter().copied().collect();
                let avg = s.iter().sum::<f64>() / s.len() as f64;
                Tags {
                    pattern: label(&s).unwrap_or(self.priors[t].pattern),
                    avg,
                    peak: s.iter().copied().fold(0.0, f64::max),
                }
            } else {
                self.priors[t]
            };
        }
        self.classes = cluster(&self.tags, self.max_k, rng);
        self.refreshes += 1;
    }

    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The tags of the latest refresh.
    pub fn tags(&self) -> &[Tags] {
        &self.tags
    }

    pub fn refreshes(&self) -> u64 {
        self.refreshes
    }

    /// Tenants whose tags came from observations at the latest refresh.
    pub fn observed(&self) -> usize {
        self.series
            .iter()
            .filter(|s| s.len() >= self.window)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;
    use crate::sampling::normal;

    /// `n` two-minute samples of a diurnal pattern, 0.5 ± 0.3, with noise.
    fn sine(n: usize, noise: f64, seed: u64) -> Vec<f64> {
        let mut rng = actor_rng(seed, "sine");
        (0..n)
            .map(|i| {
                let phase = i as f64 * SAMPLE_NS as f64 / 86_400e9;
                0.5 + 0.3 * libm::sin(2.0 * std::f64::consts::PI * phase) + noise * normal(&mut rng)
            })
            .collect()
    }

    /// The unpredictable pattern of `primary.rs`: a mean-reverting random
    /// walk, with spikes.
    fn walk(n: usize, seed: u64, spikes: bool) -> Vec<f64> {
        let mut rng = actor_rng(seed, "walk");
        let mut level: f64 = 0.2;
        let mut spike_left = 0;
        (0..n)
            .map(|_| {
                level = (level + 0.2 * (0.2 - level) + 0.08 * normal(&mut rng)).clamp(0.0, 1.0);
                if spikes && spike_left == 0 && uniform_open0(&mut rng) < 1.0 / 60.0 {
                    spike_left = 8;
                }
                if spike_left > 0 {
                    spike_left -= 1;
                    0.95
                } else {
                    level
                }
            })
            .collect()
    }

    #[test]
    fn a_repeating_daily_cycle_is_periodic() {
        // three days of samples every two minutes, as in Figure 1a
        for seed in 0..10 {
            assert_eq!(
                label(&sine(3 * 720, 0.05, seed)),
                Some(UtilPattern::Periodic),
                "seed {seed}"
            );
        }
        // the testbed's periodic tenants: 0.2 ± 0.1, noise 0.05, quantised
        // to whole cores of 12, over a week
        let mut rng = actor_rng(1, "tenant");
        let tenant: Vec<f64> = (0..7 * 720)
            .map(|i| {
                let phase = i as f64 * SAMPLE_NS as f64 / 86_400e9;
                let u = 0.2
                    + 0.1 * libm::sin(2.0 * std::f64::consts::PI * phase)
                    + 0.05 * normal(&mut rng);
                libm::ceil(u.clamp(0.0, 1.0) * 12.0) / 12.0
            })
            .collect();
        assert_eq!(label(&tenant), Some(UtilPattern::Periodic));
    }

    #[test]
    fn a_flat_noisy_series_is_constant() {
        for seed in 0..10 {
            let mut rng = actor_rng(seed, "flat");
            let flat: Vec<f64> = (0..720).map(|_| 0.4 + 0.03 * normal(&mut rng)).collect();
            assert_eq!(label(&flat), Some(UtilPattern::Constant), "seed {seed}");
        }
        assert_eq!(label(&[0.25; 100]), Some(UtilPattern::Constant));
    }

    #[test]
    fn a_random_walk_is_unpredictable() {
        for seed in 0..10 {
            for spikes in [false, true] {
                assert_eq!(
                    label(&walk(720, seed, spikes)),
                    Some(UtilPattern::Unpredictable),
                    "seed {seed}, spikes {spikes}"
                );
            }
        }
    }

    #[test]
    fn a_pure_random_walk_is_not_taken_for_periodic() {
        // its spectrum falls as 1/f² (Figure 1d): one slow swing holds most
        // of the energy, but nothing repeats
        for seed in 0..40 {
            let mut rng = actor_rng(seed, "pure");
            let mut level: f64 = 0.3;
            let w: Vec<f64> = (0..720)
                .map(|_| {
                    level = (level + 0.02 * normal(&mut rng)).clamp(0.0, 1.0);
                    level
                })
                .collect();
            assert_ne!(label(&w), Some(UtilPattern::Periodic), "seed {seed}");
        }
    }

    #[test]
    fn short_series_are_not_labelled() {
        assert_eq!(label(&[0.1; 15]), None);
    }

    #[test]
    fn autocorrelation_matches_the_direct_sum() {
        let s = sine(200, 0.1, 3);
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        let acf = autocorrelation(&s, mean);
        let direct = |k: usize| {
            (0..s.len() - k)
                .map(|i| (s[i] - mean) * (s[i + k] - mean))
                .sum::<f64>()
                / s.len() as f64
        };
        for k in [0, 1, 7, 50, 150] {
            assert!((acf[k] - direct(k) / direct(0)).abs() < 1e-9, "lag {k}");
        }
    }

    #[test]
    fn kmeans_recovers_two_obvious_clusters() {
        let mut rng = actor_rng(4, "points");
        let mut points = Vec::new();
        for i in 0..40 {
            let (cx, cy) = if i % 2 == 0 { (0.1, 0.2) } else { (0.7, 0.9) };
            points.push([cx + 0.02 * normal(&mut rng), cy + 0.02 * normal(&mut rng)]);
        }
        for seed in 0..5 {
            let (assign, centroids) = kmeans(&points, 2, &mut actor_rng(seed, "kmeans"));
            assert_eq!(centroids.len(), 2);
            for i in 0..points.len() {
                assert_eq!(assign[i] == assign[0], i % 2 == 0, "seed {seed}, point {i}");
            }
            let low = assign[0];
            assert!((centroids[low][0] - 0.1).abs() < 0.02);
            assert!((centroids[1 - low][1] - 0.9).abs() < 0.02);
        }
        // identical points make one cluster whatever k
        let (assign, centroids) = kmeans(&[[0.2, 0.3]; 5], 3, &mut actor_rng(1, "k"));
        assert_eq!((assign, centroids.len()), (vec![0; 5], 1));
    }

    fn cfg(pattern: UtilPattern) -> PrimaryTenantConfig {
        let name = match pattern {
            UtilPattern::Periodic => "periodic",
            UtilPattern::Constant => "constant",
            UtilPattern::Unpredictable => "unpredictable",
        };
        toml::from_str(&format!(
            r#"
name = "t"
servers = 1
pattern = "{name}"
mean = 0.2
amplitude = 0.1
spikes_per_day = 12.0
spike_util = 0.95
spike_duration = "15m"
noise = 0.05
"#
        ))
        .unwrap()
    }

    #[test]
    fn priors_follow_the_configuration() {
        let p = prior(&cfg(UtilPattern::Periodic));
        assert!((p.avg - 0.2).abs() < 1e-12 && (p.peak - 0.4).abs() < 1e-12);
        let c = prior(&cfg(UtilPattern::Constant));
        assert!((c.peak - 0.3).abs() < 1e-12);
        let u = prior(&cfg(UtilPattern::Unpredictable));
        // 12 spikes of 15 min a day: 12.5 % of the time at 0.95
        assert!((u.avg - (0.2 * 0.875 + 0.95 * 0.125)).abs() < 1e-12);
        assert!((u.peak - 0.95).abs() < 1e-12);
        let mut doubled = cfg(UtilPattern::Constant);
        doubled.scale = Some(2.0);
        assert!((prior(&doubled).avg - 0.4).abs() < 1e-12);
    }

    #[test]
    fn the_service_uses_priors_until_a_window_is_observed() {
        let priors = vec![
            prior(&cfg(UtilPattern::Periodic)),
            prior(&cfg(UtilPattern::Constant)),
            prior(&cfg(UtilPattern::Unpredictable)),
            prior(&cfg(UtilPattern::Periodic)),
        ];
        let hour = 3_600_000_000_000;
        let mut s = ClusteringService::new(priors, 2 * hour, hour, 4);
        let mut rng = actor_rng(1, "scheduler");
        assert!(
            s.advance(0, |_| Some(0.5), &mut rng),
            "the first refresh is at once"
        );
        let patterns: Vec<UtilPattern> = s.classes().iter().map(|c| c.pattern).collect();
        assert_eq!(
            patterns,
            vec![
                UtilPattern::Periodic,
                UtilPattern::Constant,
                UtilPattern::Unpredictable
            ],
            "identical periodic priors make one class"
        );
        assert_eq!(s.classes()[0].tenants, vec![0, 3]);
        let mut t = 0;
        let mut refreshed = 0;
        while t < 3 * hour {
            t += 3_000_000_000;
            refreshed += u32::from(s.advance(t, |_| Some(0.5), &mut rng));
        }
        assert_eq!(refreshed, 3);
        assert_eq!(s.observed(), 4);
        // a flat observed series: every tenant is now constant at 0.5
        assert!(
            s.tags()
                .iter()
                .all(|t| t.pattern == UtilPattern::Constant && t.avg == 0.5 && t.peak == 0.5)
        );
        assert_eq!(s.classes().len(), 1);
        assert_eq!(s.refreshes(), 4);
    }
}
