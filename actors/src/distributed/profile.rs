//! Profiling a distributed application's propagation curves with few runs
//! (ASPLOS'16 §4.1, Algorithms 1 and 2; §4.2's random baselines), and the
//! model the scheduler builds from them (§3.4).
//!
//! `T[i][j]` is the runtime normalised to no interference with `j` of the
//! `m` units under bubble pressure `i + 1`. Each algorithm fills it from a
//! `measure(pressure, nodes)` closure (a modeled profiling run) and
//! interpolates the rest. Pure functions: the scheduler passes a closure
//! backed by the profiling lab; tests pass the ground truth directly.

use rand::RngCore;

use super::truth::{LEVELS, MappingPolicy};
pub use crate::config::{Algorithm, InterferenceModel};
use crate::sampling::index;

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [
        Algorithm::BinaryBrute,
        Algorithm::BinaryOptimized,
        Algorithm::Random30,
        Algorithm::Random50,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::BinaryBrute => "binary-brute",
            Algorithm::BinaryOptimized => "binary-optimized",
            Algorithm::Random30 => "random-30",
            Algorithm::Random50 => "random-50",
        }
    }
}

/// Normalised runtimes closer than this need no run in between (the
/// "small enough" difference of `profile_binary_row`, §4.1).
pub const BINARY_TOLERANCE: f64 = 0.03;

/// A curve family as profiled: `t[i][j]` for pressure `i + 1` on `j` units.
#[derive(Clone, Debug, PartialEq)]
pub struct Curves {
    pub t: Vec<Vec<f64>>,
    /// Settings with interference that were measured (`j ≥ 1`).
    pub measured: usize,
}

impl Curves {
    /// Units the curves were profiled on.
    pub fn units(&self) -> usize {
        self.t.first().map_or(0, |r| r.len().saturating_sub(1))
    }

    /// Settings with interference: `n × m` (the no-interference run is the
    /// baseline of every algorithm and is not counted).
    pub fn settings(&self) -> usize {
        self.t.len() * self.units()
    }

    /// Share of settings measured (§4.2's profiling cost).
    pub fn cost(&self) -> f64 {
        self.measured as f64 / self.settings().max(1) as f64
    }

    /// `T(p, k)` for a real pressure: linear between the profiled levels,
    /// 1 at pressure 0, the top level above it.
    pub fn at(&self, p: f64, k: usize) -> f64 {
        let n = self.t.len();
        if p <= 0.0 || k == 0 || n == 0 {
            return 1.0;
        }
        let k = k.min(self.units());
        let p = p.min(n as f64);
        let hi = libm::ceil(p) as usize; // 1..=n
        let lo = hi - 1; // level below, 0 = no pressure
        let t_hi = self.t[hi - 1][k];
        let t_lo = if lo == 0 { 1.0 } else { self.t[lo - 1][k] };
        let w = p - lo as f64;
        t_lo + (t_hi - t_lo) * w
    }

    /// Mean relative error against the true curves over every setting
    /// with interference (§4.2's accuracy).
    pub fn error(&self, truth: &dyn Fn(usize, usize) -> f64) -> f64 {
        let mut sum = 0.0;
        let mut n = 0usize;
        for (i, row) in self.t.iter().enumerate() {
            for (j, &v) in row.iter().enumerate().skip(1) {
                let t = truth(i + 1, j);
                sum += (v - t).abs() / t;
                n += 1;
            }
        }
        sum / n.max(1) as f64
    }
}

/// The working matrix: `None` until measured or inferred.
struct Matrix {
    t: Vec<Vec<Option<f64>>>,
    measured: usize,
}

impl Matrix {
    fn new(n: usize, m: usize) -> Self {
        let mut t = vec![vec![None; m + 1]; n];
        for row in &mut t {
            row[0] = Some(1.0);
        }
        Matrix { t, measured: 0 }
    }

    fn measure(&mut self, i: usize, j: usize, t0: f64, run: &mut dyn FnMut(usize, usize) -> f64) {
        if self.t[i][j].is_none() {
            self.t[i][j] = Some(run(i + 1, j) / t0);
            self.measured += 1;
        }
    }

    /// `profile_binary_row` (Algorithm 1): measure the middle of `[lo, hi]`
    /// on row `i` while its ends differ by more than the tolerance.
    fn binary_row(
        &mut self,
        i: usize,
        lo: usize,
        hi: usize,
        t0: f64,
        run: &mut dyn FnMut(usize, usize) -> f64,
    ) {
        self.binary(&|k| (i, k), lo, hi, t0, run);
    }

    /// `profile_binary_col`: the same along column `j` over pressures.
    fn binary_col(
        &mut self,
        j: usize,
        lo: usize,
        hi: usize,
        t0: f64,
        run: &mut dyn FnMut(usize, usize) -> f64,
    ) {
        self.binary(&|k| (k, j), lo, hi, t0, run);
    }

    /// Binary refinement along a line of cells, `cell(k)` its k-th.
    fn binary(
        &mut self,
        cell: &dyn Fn(usize) -> (usize, usize),
        lo: usize,
        hi: usize,
        t0: f64,
        run: &mut dyn FnMut(usize, usize) -> f64,
    ) {
        if hi <= lo + 1 {
            return;
        }
        let at = |k: usize| {
            let (i, j) = cell(k);
            self.t[i][j]
        };
        let (Some(a), Some(b)) = (at(lo), at(hi)) else {
            return;
        };
        if (b - a).abs() <= BINARY_TOLERANCE {
            return;
        }
        let mid = (lo + hi) / 2;
        let (i, j) = cell(mid);
        self.measure(i, j, t0, run);
        self.binary(cell, lo, mid, t0, run);
        self.binary(cell, mid, hi, t0, run);
    }

    /// `interpolate_row`: linear between the known points of row `i`.
    fn interpolate_row(&mut self, i: usize) {
        let known: Vec<(usize, f64)> = (0..self.t[i].len())
            .filter_map(|j| self.t[i][j].map(|v| (j, v)))
            .collect();
        fill_between(&known, |j, v| self.t[i][j] = Some(v));
    }

    /// `interpolate_col`: linear between the known points of column `j`.
    fn interpolate_col(&mut self, j: usize) {
        let known: Vec<(usize, f64)> = (0..self.t.len())
            .filter_map(|i| self.t[i][j].map(|v| (i, v)))
            .collect();
        let mut fills = Vec::new();
        fill_between(&known, |i, v| fills.push((i, v)));
        for (i, v) in fills {
            self.t[i][j] = Some(v);
        }
    }

    /// `interpolate_all` (§4.1): every unknown `T[i][j]` from the top
    /// curve and the all-nodes column by proportion.
    fn interpolate_all(&mut self) {
        let n = self.t.len();
        let m = self.t[0].len() - 1;
        let top: Vec<f64> = self.t[n - 1].iter().map(|v| v.unwrap_or(1.0)).collect();
        for i in 0..n {
            let col = self.t[i][m].unwrap_or(1.0);
            for j in 0..=m {
                if self.t[i][j].is_none() {
                    self.t[i][j] = Some(interpolate_all(col, top[j], top[m], j, m));
                }
            }
        }
    }

    fn done(self) -> Curves {
        Curves {
            t: self
                .t
                .into_iter()
                .map(|r| r.into_iter().map(|v| v.unwrap_or(1.0)).collect())
                .collect(),
            measured: self.measured,
        }
    }
}

/// `T[i][j] := 1 + (T[i][m] − 1)(T[n−1][j] − 1) / (T[n−1][m] − 1)`
/// (§4.1's `interpolate_all`); when the top curve is flat (an insensitive
/// application) its shape carries no information and the row grows
/// linearly instead.
pub fn interpolate_all(t_im: f64, t_top_j: f64, t_top_m: f64, j: usize, m: usize) -> f64 {
    let span = t_top_m - 1.0;
    if span.abs() < 1e-9 {
        return 1.0 + (t_im - 1.0) * j as f64 / m.max(1) as f64;
    }
    1.0 + (t_im - 1.0) * (t_top_j - 1.0) / span
}

/// Calls `set(x, v)` for every x strictly between consecutive known
/// points, linearly.
fn fill_between(known: &[(usize, f64)], mut set: impl FnMut(usize, f64)) {
    for w in known.windows(2) {
        let ((a, va), (b, vb)) = (w[0], w[1]);
        for x in a + 1..b {
            set(x, va + (vb - va) * (x - a) as f64 / (b - a) as f64);
        }
    }
}

/// Profiles curves over `m` units with `algorithm`. `run(p, k)` is one
/// modeled run with pressure `p` (1..=8, 0 = none) on `k` units and
/// returns its runtime; `rng` picks the random baselines' settings.
pub fn profile(
    algorithm: Algorithm,
    m: usize,
    run: &mut dyn FnMut(usize, usize) -> f64,
    rng: &mut impl RngCore,
) -> Curves {
    let n = LEVELS;
    let m = m.max(1);
    let mut mat = Matrix::new(n, m);
    let t0 = run(0, 0).max(1e-12);
    match algorithm {
        // Algorithm 1
        Algorithm::BinaryBrute => {
            for i in 0..n {
                mat.measure(i, m, t0, run);
                mat.binary_row(i, 0, m, t0, run);
                mat.interpolate_row(i);
            }
        }
        // Algorithm 2
        Algorithm::BinaryOptimized => {
            mat.measure(0, m, t0, run);
            mat.measure(n - 1, m, t0, run);
            mat.binary_row(n - 1, 0, m, t0, run);
            mat.interpolate_row(n - 1);
            mat.binary_col(m, 0, n - 1, t0, run);
            mat.interpolate_col(m);
            mat.interpolate_all();
        }
        Algorithm::Random30 | Algorithm::Random50 => {
            let share = if algorithm == Algorithm::Random30 {
                0.3
            } else {
                0.5
            };
            for i in 0..n {
                mat.measure(i, m, t0, run);
            }
            let want = libm::round(share * (n * m) as f64) as usize;
            let mut rest: Vec<(usize, usize)> =
                (0..n).flat_map(|i| (1..m).map(move |j| (i, j))).collect();
            while mat.measured < want && !rest.is_empty() {
                let pick = index(rng, rest.len() as u32) as usize;
                let (i, j) = rest.swap_remove(pick);
                mat.measure(i, j, t0, run);
            }
            for i in 0..n {
                mat.interpolate_row(i);
            }
        }
    }
    mat.done()
}

/// What the scheduler believes about one application (§3.4, Figure 5):
/// its curves, its mapping policy and its bubble score.
#[derive(Clone, Debug, PartialEq)]
pub struct AppModel {
    pub curves: Curves,
    pub policy: MappingPolicy,
    pub bubble: f64,
}

impl AppModel {
    /// Predicted normalised runtime under per-unit `pressures`.
    pub fn predict(&self, pressures: &[f64], model: InterferenceModel) -> f64 {
        let m = pressures.len();
        match model {
            InterferenceModel::Proposed => {
                let (p, k) = self.policy.map(pressures);
                self.curves.at(p, scale(k, m, self.curves.units()))
            }
            InterferenceModel::Naive => {
                let (p, k) = MappingPolicy::NPlus1Max.map(pressures);
                let all = self.curves.at(p, self.curves.units());
                1.0 + (all - 1.0) * k as f64 / m.max(1) as f64
            }
        }
    }
}

/// `k` of `m` units, on curves profiled over `units` units.
fn scale(k: usize, m: usize, units: usize) -> usize {
    if m == units || m == 0 {
        return k;
    }
    libm::round(k as f64 * units as f64 / m as f64) as usize
}

/// The mapping policy whose predictions over the sampled heterogeneous
/// settings are closest to what was measured (§3.3: 60 random settings);
/// `samples` holds `(per-unit pressures, measured normalised runtime)`.
/// Ties go to the first policy in [`MappingPolicy::ALL`].
pub fn best_policy(curves: &Curves, samples: &[(Vec<f64>, f64)]) -> MappingPolicy {
    let mut best = (f64::MAX, MappingPolicy::NPlus1Max);
    for policy in MappingPolicy::ALL {
        let model = AppModel {
            curves: curves.clone(),
            policy,
            bubble: 0.0,
        };
        let err: f64 = samples
            .iter()
            .map(|(p, t)| (model.predict(p, InterferenceModel::Proposed) - t).abs() / t)
            .sum();
        if err < best.0 - 1e-12 {
            best = (err, policy);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::super::truth::{catalog, find};
    use super::*;
    use crate::kernel::actor_rng;
    use crate::sampling::normal;

    #[test]
    fn interpolate_all_is_the_papers_formula() {
        // T[i][j] = 1 + (T[i][m]-1)(T[n-1][j]-1)/(T[n-1][m]-1)
        let v = interpolate_all(1.4, 1.6, 1.8, 3, 8);
        assert!((v - (1.0 + 0.4 * 0.6 / 0.8)).abs() < 1e-12);
        // the top row and the last column reproduce themselves
        assert!((interpolate_all(1.8, 1.6, 1.8, 3, 8) - 1.6).abs() < 1e-12);
        assert!((interpolate_all(1.4, 1.8, 1.8, 8, 8) - 1.4).abs() < 1e-12);
        // flat top curve: linear in the nodes
        assert!((interpolate_all(1.2, 1.0, 1.0, 2, 8) - 1.05).abs() < 1e-12);
    }

    #[test]
    fn binary_optimized_fills_with_interpolate_all() {
        let app = &catalog()[find("M.milc").unwrap()];
        let m = 8;
        let mut run = |p: usize, k: usize| 600.0 * app.curve(p as f64, k, m);
        let c = profile(
            Algorithm::BinaryOptimized,
            m,
            &mut run,
            &mut actor_rng(1, "t"),
        );
        let n = c.t.len();
        for i in 0..n {
            for j in 0..=m {
                let expect = interpolate_all(c.t[i][m], c.t[n - 1][j], c.t[n - 1][m], j, m);
                assert!((c.t[i][j] - expect).abs() < 1e-9, "T[{i}][{j}]");
            }
        }
        // the measured corner is exact
        assert!((c.t[n - 1][m] - app.curve(8.0, m, m)).abs() < 1e-12);
    }

    /// Table 3's shape, over the distributed applications of the catalog
    /// (§4.2 profiles those, not the batch co-runners), 1 % noise.
    #[test]
    fn cost_and_error_have_table_3s_shape() {
        let mut rng = actor_rng(7, "profiling-test");
        let mut noise = actor_rng(8, "noise");
        let m = 8;
        let mut cost = [0.0; 4];
        let mut err = [0.0; 4];
        let cat: Vec<_> = catalog()
            .into_iter()
            .filter(|a| !a.name.starts_with("C."))
            .collect();
        for app in &cat {
            for (a, alg) in Algorithm::ALL.iter().enumerate() {
                let mut run = |p: usize, k: usize| {
                    600.0 * app.curve(p as f64, k, m) * (1.0 + 0.01 * normal(&mut noise))
                };
                let c = profile(*alg, m, &mut run, &mut rng);
                cost[a] += c.cost() / cat.len() as f64;
                err[a] += c.error(&|p, k| app.curve(p as f64, k, m)) / cat.len() as f64;
            }
        }
        let [brute, opt, r30, r50] = [0, 1, 2, 3];
        assert!(cost[opt] < 0.5 * cost[brute], "{cost:?}");
        assert!(err[opt] > err[brute], "{err:?}");
        assert!(err[opt] < 0.08, "{err:?}");
        assert!(
            cost[opt] <= cost[r30] && err[opt] < err[r30],
            "{cost:?} {err:?}"
        );
        assert!(err[brute] < err[r50] && err[brute] < err[r30], "{err:?}");
        assert!((cost[r30] - 0.3).abs() < 0.02 && (cost[r50] - 0.5).abs() < 0.02);
    }

    #[test]
    fn models_predict_the_truth_and_naive_misses_high_propagation() {
        let cat = catalog();
        let app = &cat[find("M.lmps").unwrap()];
        let m = 4;
        let mut run = |p: usize, k: usize| app.curve(p as f64, k, m);
        let curves = profile(Algorithm::BinaryBrute, m, &mut run, &mut actor_rng(3, "x"));
        let model = AppModel {
            curves,
            policy: app.policy,
            bubble: app.bubble,
        };
        let p = [5.0, 0.0, 0.0, 0.0];
        let truth = app.runtime(&p);
        let proposed = model.predict(&p, InterferenceModel::Proposed);
        let naive = model.predict(&p, InterferenceModel::Naive);
        assert!(
            (proposed - truth).abs() / truth < 0.02,
            "{proposed} {truth}"
        );
        assert!(naive < truth - 0.1, "naive {naive} truth {truth}");
    }

    #[test]
    fn best_policy_recovers_the_truth() {
        let cat = catalog();
        let mut rng = actor_rng(5, "policy");
        for name in ["M.milc", "S.WC", "M.Gems"] {
            let app = &cat[find(name).unwrap()];
            let m = 8;
            let mut run = |p: usize, k: usize| app.curve(p as f64, k, m);
            let curves = profile(Algorithm::BinaryBrute, m, &mut run, &mut rng);
            let samples: Vec<(Vec<f64>, f64)> = (0..60)
                .map(|_| {
                    let p: Vec<f64> = (0..m).map(|_| f64::from(index(&mut rng, 9))).collect();
                    let t = app.runtime(&p);
                    (p, t)
                })
                .collect();
            assert_eq!(best_policy(&curves, &samples), app.policy, "{name}");
        }
    }
}
