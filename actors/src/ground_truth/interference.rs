//! How co-runners slow an application: the one place that defines it.

use super::{AppProfile, Phase, SOURCES};

/// Extra execution time per unit of overload: 1.0 means every point of
/// pressure beyond the tolerated score adds 1 % of the isolated execution time.
pub const SLOPE: f64 = 1.0;

/// Lowest progress-rate multiplier: an application never runs more than
/// 5 times slower than alone, whatever its co-runners do.
pub const FLOOR: f64 = 0.2;

/// Share of its isolated performance at which an application violates its
/// QoS, and so the rate at which Paragon §2.3 records a sensitivity score
/// ("progressively tune up [the microbenchmark's] intensity until the
/// application violates its QoS, which is set at 95% of the performance
/// achieved in isolation").
pub const SCORE_RATE: f64 = 0.95;

/// Score points before the tolerated score at which contention starts to
/// cost: chosen so that contention equal to the tolerated score on one
/// source leaves exactly [`SCORE_RATE`], as §2.3 defines the score:
/// `1 / (1 + SLOPE · KNEE / 100) = SCORE_RATE`, about 5.26 points.
pub const KNEE: f64 = 100.0 * (1.0 / SCORE_RATE - 1.0) / SLOPE;

/// Progress-rate multiplier in [`FLOOR`, 1] for `app` in `phase` when its
/// co-runners cause `pressure[s]` (the sum of their caused scores, phase
/// scaled, see [`AppProfile::caused_in`]) on each source `s`.
///
/// ```text
/// knee_s     = max(0, tolerated_s(phase) − KNEE)
/// overload_s = max(0, pressure_s − knee_s) / 100
/// factor     = max(FLOOR, 1 / (1 + SLOPE · Σ_s overload_s))
/// ```
///
/// Why this shape:
///
/// * **The tolerated score is the 95 % point.** Paragon §2.3 records the
///   sensitivity score as the microbenchmark intensity at which the
///   application falls to 95 % of its isolated performance, and its
///   sensitivity curves (Fig. 3) are flat, then fall. So the factor is 1.0
///   up to a knee [`KNEE`] points before the tolerated score and
///   [`SCORE_RATE`] at it (on one source): a colocation with D1, D2 ≥ 0 on
///   every source but one keeps QoS, as §3.2 reads non-negative D1 and D2.
///   An application that tolerates less than `KNEE` has its knee at 0.
/// * **Linear in the overload, added in time.** Past the knee each extra
///   point of contention costs stall time in proportion, and stalls on
///   different resources (cycles waiting for memory, for the disk, for the
///   core) add up in execution time rather than multiply: time grows as
///   `1 + SLOPE · Σ overload`, and the rate is its inverse. A maximum over
///   sources would make a second contended resource free; a product of
///   per-source rates would count the same stall time twice.
/// * **A floor.** Paragon's microbenchmarks saturate at 100 % intensity, and a
///   real application keeps making some progress under any load; a rate that
///   reached zero would also never let a task finish in virtual time.
///
/// Pressure is a plain sum of co-runners' scores on Paragon's scale (scores
/// measured on a high-end class, §2.4); `NaN` or negative pressure counts as
/// none.
pub fn interference_factor(app: &AppProfile, phase: &Phase, pressure: &[f64; SOURCES]) -> f64 {
    let tolerated = app.tolerated_in(phase);
    let mut overload = 0.0;
    for (p, t) in pressure.iter().zip(&tolerated) {
        // `f64::max` returns the other operand for NaN: NaN pressure is none.
        overload += (p - (t - KNEE).max(0.0)).max(0.0) / 100.0;
    }
    (1.0 / (1.0 + SLOPE * overload)).max(FLOOR)
}
