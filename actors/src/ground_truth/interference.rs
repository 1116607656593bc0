//! How co-runners slow an application: the one place that defines it.

use super::{AppProfile, Phase, SOURCES};

/// Extra execution time per unit of overload: 1.0 means every point of
/// pressure beyond the tolerated score adds 1 % of the isolated execution time.
pub const SLOPE: f64 = 1.0;

/// Lowest progress-rate multiplier: an application never runs more than
/// 5 times slower than alone, whatever its co-runners do.
pub const FLOOR: f64 = 0.2;

/// Progress-rate multiplier in [`FLOOR`, 1] for `app` in `phase` when its
/// co-runners cause `pressure[s]` (the sum of their caused scores, phase
/// scaled, see [`AppProfile::caused_in`]) on each source `s`.
///
/// ```text
/// overload_s = max(0, pressure_s − tolerated_s(phase)) / 100
/// factor     = max(FLOOR, 1 / (1 + SLOPE · Σ_s overload_s))
/// ```
///
/// Why this shape:
///
/// * **A knee at the tolerated score.** Paragon §2.3 defines the tolerated
///   score as the contention intensity an application absorbs before it loses
///   quality of service; its sensitivity curves (Fig. 3) are flat, then fall.
///   Below the knee the factor is exactly 1.0, on every source at once, so
///   co-locating applications whose pressure stays within each other's
///   tolerance is free, which is the bet an interference-aware scheduler
///   makes. (Paragon's score marks the 95 % point; with `SLOPE` 1.0 that point
///   lies 5.3 score points past our knee, within its classification error,
///   Table III.)
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
        overload += (p - t).max(0.0) / 100.0;
    }
    (1.0 / (1.0 + SLOPE * overload)).max(FLOOR)
}
