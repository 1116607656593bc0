//! Flow sizes of MapReduce-like tasks (thesis §4.2.2).
//!
//! The thesis has no network figures in its trace, so it draws each task's
//! two flow sizes (traffic with the outside world, and with the job's master)
//! from the flow-size distribution that Benson, Akella and Maltz measured in
//! data centers running MapReduce-style work ("Network traffic
//! characteristics of data centers in the wild", IMC 2010; the thesis's
//! reference [42]). That paper gives the distribution only as a plotted CDF:
//! most flows are small (about 80 % under 10 KB) and a thin tail reaches
//! about 100 MB, carrying most of the bytes.
//!
//! [`KNOTS`] approximates that curve as a piecewise log-linear CDF: between
//! two knots `(x_i, F_i)` and `(x_{i+1}, F_{i+1})` the CDF is linear in
//! `log x`, i.e. given that a flow falls in the segment, `log x` is uniform
//! on `[log x_i, log x_{i+1}]`. No flow is smaller than the first knot or
//! larger than the last. The knots are a reading of the curve, not the
//! paper's data.
//!
//! The mean follows in closed form: a segment contributes
//! `(F_{i+1} − F_i) · (x_{i+1} − x_i) / ln(x_{i+1} / x_i)` ([`mean_bytes`]),
//! 572,559 bytes with these knots, nearly all of it (96 %) from the 5 % of
//! flows above 1 MB.

use rand::RngCore;

use crate::sampling::uniform_open0;

/// `(bytes, CDF)` knots of the flow-size distribution, increasing in both;
/// the first has CDF 0, the last 1.
pub const KNOTS: [(f64, f64); 7] = [
    (100.0, 0.0),
    (1e3, 0.35),
    (1e4, 0.80),
    (1e5, 0.90),
    (1e6, 0.95),
    (1e7, 0.99),
    (1e8, 1.0),
];

/// The flow size at CDF `u` (clamped to [0, 1]), bytes: the inverse of the
/// piecewise log-linear CDF.
pub fn quantile(u: f64) -> f64 {
    let u = u.clamp(0.0, 1.0);
    for pair in KNOTS.windows(2) {
        let ((x0, f0), (x1, f1)) = (pair[0], pair[1]);
        if u <= f1 {
            let t = (u - f0) / (f1 - f0);
            return libm::exp(libm::log(x0) + t * (libm::log(x1) - libm::log(x0)));
        }
    }
    KNOTS[KNOTS.len() - 1].0
}

/// The CDF at `bytes`: 0 below the first knot, 1 from the last.
pub fn cdf(bytes: f64) -> f64 {
    let (first, last) = (KNOTS[0], KNOTS[KNOTS.len() - 1]);
    if bytes <= first.0 {
        return 0.0;
    }
    if bytes >= last.0 {
        return 1.0;
    }
    for pair in KNOTS.windows(2) {
        let ((x0, f0), (x1, f1)) = (pair[0], pair[1]);
        if bytes <= x1 {
            let t = (libm::log(bytes) - libm::log(x0)) / (libm::log(x1) - libm::log(x0));
            return f0 + t * (f1 - f0);
        }
    }
    1.0
}

/// The distribution's mean, bytes, in closed form (see the module docs).
pub fn mean_bytes() -> f64 {
    KNOTS
        .windows(2)
        .map(|pair| {
            let ((x0, f0), (x1, f1)) = (pair[0], pair[1]);
            (f1 - f0) * (x1 - x0) / libm::log(x1 / x0)
        })
        .sum()
}

/// One flow size, whole bytes, by inversion of a uniform draw.
pub fn draw(rng: &mut impl RngCore) -> u64 {
    libm::round(quantile(uniform_open0(rng))) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    #[test]
    fn knots_are_a_distribution() {
        assert_eq!(KNOTS[0].1, 0.0);
        assert_eq!(KNOTS[KNOTS.len() - 1].1, 1.0);
        for pair in KNOTS.windows(2) {
            assert!(pair[0].0 < pair[1].0 && pair[0].1 < pair[1].1, "{pair:?}");
        }
    }

    #[test]
    fn quantiles_land_on_the_knots_and_invert_the_cdf() {
        for (bytes, f) in KNOTS {
            assert!(
                (quantile(f) / bytes - 1.0).abs() < 1e-12,
                "{f}: {}",
                quantile(f)
            );
            assert!((cdf(bytes) - f).abs() < 1e-12, "{bytes}: {}", cdf(bytes));
        }
        // the median: 0.15 of the 0.45 between 1 KB and 10 KB, a third of a decade
        assert!((quantile(0.5) - 1e3 * libm::pow(10.0, 1.0 / 3.0)).abs() < 1e-6);
        for u in [0.01, 0.2, 0.5, 0.85, 0.93, 0.97, 0.995] {
            assert!((cdf(quantile(u)) - u).abs() < 1e-12, "{u}");
        }
        assert_eq!(cdf(1.0), 0.0);
        assert_eq!(cdf(1e9), 1.0);
    }

    #[test]
    fn the_closed_form_mean_matches_the_quantile_integral() {
        let mean = mean_bytes();
        assert!((mean - 572_559.0).abs() < 1.0, "{mean}");
        // E[X] = ∫₀¹ Q(u) du by the midpoint rule
        let n = 1_000_000;
        let integral = (0..n)
            .map(|i| quantile((f64::from(i) + 0.5) / f64::from(n)))
            .sum::<f64>()
            / f64::from(n);
        assert!((integral / mean - 1.0).abs() < 1e-4, "{integral} vs {mean}");
    }

    #[test]
    fn draws_follow_the_cdf() {
        let mut rng = actor_rng(7, "flows");
        let n = 400_000u32;
        let draws: Vec<u64> = (0..n).map(|_| draw(&mut rng)).collect();
        let below = |b: u64| draws.iter().filter(|&&x| x < b).count() as f64 / f64::from(n);
        assert!((below(1_000) - 0.35).abs() < 0.005, "{}", below(1_000));
        assert!((below(10_000) - 0.80).abs() < 0.005, "{}", below(10_000));
        assert!((below(1_000_000) - 0.95).abs() < 0.003);
        assert!(draws.iter().all(|&x| (100..=100_000_000).contains(&x)));
        let mean = draws.iter().map(|&x| x as f64).sum::<f64>() / f64::from(n);
        // the tail makes the sample mean noisy: its standard error is ~1.3 %
        assert!((mean / mean_bytes() - 1.0).abs() < 0.06, "{mean}");
    }
}
