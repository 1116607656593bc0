//! Random variates for model code, bit-for-bit identical on every platform.
//!
//! `f64::ln` and friends call the platform's libm, whose last-bit rounding
//! differs between C libraries; one differing bit in a sampled delay changes
//! every event after it. Model code therefore uses the `libm` crate (a pure-Rust
//! port of musl's libm) for transcendental functions and derives uniforms from
//! raw 53-bit integers. This is also why the samplers here are not taken from
//! `rand_distr`, whose ziggurat tails call the platform `ln`/`exp`.

use dcemu_topology::SimTime;
use rand::RngCore;

/// Uniform on (0, 1], never 0, from the top 53 bits of one draw.
pub fn uniform_open0(rng: &mut impl RngCore) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Exponentially distributed with the given mean (same unit as `mean`).
pub fn exponential(rng: &mut impl RngCore, mean: f64) -> f64 {
    -mean * libm::log(uniform_open0(rng))
}

/// A two-phase hyperexponential with the given mean and coefficient of
/// variation `cv` (≥ 1), with balanced means (each phase carries half the
/// mean; Whitt 1982's standard two-moment fit): with probability `p` an
/// exponential of mean `mean / (2p)`, else one of mean `mean / (2(1 − p))`,
/// `p = (1 + √((cv² − 1) / (cv² + 1))) / 2`. At `cv = 1` it is
/// [`exponential`], from the same single draw; above it most draws are
/// short and a few very long, the shape of heavy-tailed task durations.
///
/// Every `cv` takes exactly one uniform: the phase is whether `u ≤ p`, and
/// the exponential is drawn from `u` rescaled within its phase (uniform on
/// (0, 1] again, independent of the phase). So a stream's later draws do
/// not depend on `cv`: a calibration comparing two spreads compares the
/// same arrivals and the same other tasks (common random numbers), not a
/// new realisation of the bursts.
pub fn hyperexponential(rng: &mut impl RngCore, mean: f64, cv: f64) -> f64 {
    let u = uniform_open0(rng);
    if cv <= 1.0 {
        return -mean * libm::log(u);
    }
    let c2 = cv * cv;
    let p = 0.5 * (1.0 + libm::sqrt((c2 - 1.0) / (c2 + 1.0)));
    let (phase_p, v) = if u <= p {
        (p, u / p)
    } else {
        (1.0 - p, (u - p) / (1.0 - p))
    };
    -(mean / (2.0 * phase_p)) * libm::log(v.clamp(f64::MIN_POSITIVE, 1.0))
}

/// Standard normal by Box–Muller from two uniforms in (0, 1], with `libm`
/// so the value is the same on every platform.
pub fn normal(rng: &mut impl RngCore) -> f64 {
    let u1 = uniform_open0(rng);
    let u2 = uniform_open0(rng);
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2)
}

/// Uniform integer in `0..n` (n > 0) by Lemire's multiply-shift with rejection;
/// defined on `u32` so the result does not depend on the platform's `usize`.
pub fn index(rng: &mut impl RngCore, n: u32) -> u32 {
    debug_assert!(n > 0);
    let n64 = u64::from(n);
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = u64::from(rng.next_u32()) * n64;
        if (m as u32) >= threshold {
            return (m >> 32) as u32;
        }
    }
}

/// Nanoseconds nearest to a non-negative number of nanoseconds as a float,
/// saturating at the end of representable time.
pub fn to_nanos(ns: f64) -> SimTime {
    if ns.is_nan() || ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        libm::round(ns) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    #[test]
    fn exponential_has_the_requested_mean() {
        let mut rng = actor_rng(3, "t");
        let n = 200_000;
        let mean = (0..n).map(|_| exponential(&mut rng, 10.0)).sum::<f64>() / n as f64;
        assert!((mean - 10.0).abs() < 0.1, "mean {mean}");
    }

    #[test]
    fn hyperexponential_has_the_requested_mean_and_spread() {
        for cv in [1.5, 3.0] {
            let mut rng = actor_rng(5, "h");
            let n = 400_000;
            let xs: Vec<f64> = (0..n)
                .map(|_| hyperexponential(&mut rng, 10.0, cv))
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let got_cv = var.sqrt() / mean;
            assert!((mean - 10.0).abs() < 0.25, "cv {cv}: mean {mean}");
            assert!((got_cv - cv).abs() < 0.1 * cv, "cv {cv}: got {got_cv}");
        }
    }

    #[test]
    fn hyperexponential_at_cv_one_is_the_exponential_draw_for_draw() {
        let mut a = actor_rng(9, "h");
        let mut b = actor_rng(9, "h");
        for _ in 0..100 {
            assert_eq!(
                hyperexponential(&mut a, 4.0, 1.0).to_bits(),
                exponential(&mut b, 4.0).to_bits()
            );
        }
    }

    #[test]
    fn hyperexponential_takes_one_uniform_whatever_its_spread() {
        for cv in [1.0, 1.03, 2.0, 6.0] {
            let mut a = actor_rng(11, "h");
            let mut b = actor_rng(11, "h");
            for _ in 0..50 {
                hyperexponential(&mut a, 4.0, cv);
                uniform_open0(&mut b);
            }
            assert_eq!(a.next_u64(), b.next_u64(), "cv {cv}");
        }
    }

    #[test]
    fn uniform_never_returns_zero_and_index_stays_in_range() {
        let mut rng = actor_rng(3, "u");
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            let u = uniform_open0(&mut rng);
            assert!(u > 0.0 && u <= 1.0);
            counts[index(&mut rng, 3) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn normal_has_mean_zero_and_unit_variance() {
        let mut rng = actor_rng(5, "n");
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| normal(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
            "{mean} {var}"
        );
    }

    #[test]
    fn to_nanos_rounds_and_saturates() {
        assert_eq!(to_nanos(1.4), 1);
        assert_eq!(to_nanos(1.6), 2);
        assert_eq!(to_nanos(-3.0), 0);
        assert_eq!(to_nanos(f64::INFINITY), u64::MAX);
    }
}
