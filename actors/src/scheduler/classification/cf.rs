//! Collaborative filtering for application classification: the SVD plus
//! stochastic-gradient "PQ-reconstruction" of Paragon §2.1, as used for
//! heterogeneity (§2.2: applications × server configurations) and
//! interference (§2.3: applications × sources of interference).
//!
//! A [`UtilityMatrix`] holds the few scores measured per application (a dense
//! offline training set plus two profiled entries for every arrival).
//! [`reconstruct`] factors it into `R ≈ Q·Pᵀ` (one latent row `q_u` per
//! application, one `p_i` per column) and [`Factors::fold_in`] gives the dense
//! row of a newly arrived application from its known entries alone, keeping
//! `P` fixed, so the full reconstruction only has to run periodically.
//!
//! # What is computed
//!
//! 1. Column means `μ_i` of the known entries (0 for a column with none).
//!    Missing entries are filled with their column mean and the matrix is
//!    centred by the same means, so missing cells are 0 in the centred matrix.
//!    The centred values are divided by one scale `s`, the root mean square of
//!    the centred known entries, so that the learning rate and regularisation
//!    are dimensionless and work alike for scores in `[0, 1]` or in percent.
//! 2. SVD of that dense matrix, `U·Σ·Vᵀ`, truncated to the `rank` largest
//!    singular values. Paragon §2.1 starts from `Q = U`, `Pᵀ = Σ·Vᵀ`; here the
//!    same product is split evenly, `Q = c·U·Σ^½` and `P = V·Σ^½ / c` with
//!    `c = (rows / cols)^¼`, so that a typical `|q_u|` and `|p_i|` are of the
//!    same size. With the literal split the application factors are about
//!    `1/√rows` and the column factors about `σ`, so one learning rate is far
//!    too small for one side and unstable for the other.
//! 3. SGD over the known entries only, in row-major order (deterministic, no
//!    random shuffle): for each known `z_ui`, `ε = z_ui − b_i − q_u·p_i`, then
//!    `q_u += η(ε p_i − λ q_u)` and `p_i += η(ε q_u − λ p_i)`, both updates
//!    using the factors from before the step. Beyond Paragon, each column
//!    carries a learned offset `b_i` (starting at 0, `b_i += η(ε − λ b_i)`):
//!    when every column is known on a different subset of rows, the sample
//!    means miss the true column offsets by a different amount per column,
//!    which adds one more dimension to the centred matrix. Without `b_i`,
//!    rank-3 data recovered at rank 3 from a fifth of its entries kept about
//!    twice the error on the hidden entries.
//! 4. After every epoch the L2 error `√Σ ε²` over the known entries is
//!    measured on the current factors. SGD stops when an epoch improves it
//!    by less than `tolerance` (relative) or after `max_epochs` epochs. An
//!    epoch that makes it worse (or not finite) is undone and η halved for
//!    the epochs after it (at most 30 times, then SGD stops), so the factors
//!    returned are never worse than the SVD initialisation and a learning
//!    rate too large for some matrix does not make SGD diverge.
//!
//! Predictions are `μ_i + s·(b_i + q_u·p_i)`.
//!
//! # Determinism
//!
//! Everything here uses `+ − × ÷` and `libm::sqrt` in a fixed order. The SVD
//! is nalgebra's (Golub–Kahan bidiagonalisation with Householder reflections,
//! then implicit-shift QR with Givens rotations). Its scalar functions come
//! from simba's `ComplexField` for `f64`; with simba's default `std` backend
//! the 2×2 step calls `f64::hypot`, i.e. the platform's C libm, whose last bit
//! differs between C libraries. The workspace therefore enables nalgebra's
//! `libm-force` feature, which routes every simba scalar function (`hypot`,
//! `sqrt`, `abs`, …) through the pure-Rust `libm` crate. With it the SVD path
//! uses only IEEE basic operations, an exactly rounded square root and
//! `libm::hypot` (software, built from those). It multiplies matrices only
//! by vectors, in nalgebra's own loops, and never matrix by matrix, which for
//! dynamic sizes above 5 would go through `matrixmultiply`'s kernels, chosen
//! at run time by CPU features such as FMA. The initial factors are thus
//! bit-identical on IEEE-754 platforms, so they are not rounded. The residual
//! risk is a future nalgebra or simba release adding such a call;
//! `same_input_same_bits` cannot notice that on one machine. The feature is
//! set in the workspace `Cargo.toml`; dropping it brings back platform
//! `hypot`.

use nalgebra::{DMatrix, SVD};

/// Parameters of the reconstruction (scenario keys `scheduler.cf_rank` etc.
/// map onto these). Learning rate and regularisation apply to the centred and
/// scaled data (see the module documentation), so they do not depend on the
/// unit of the scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CfParams {
    /// Latent dimensions kept from the SVD. Default 4.
    pub rank: usize,
    /// SGD learning rate η. Default 0.1: on the scaled data it converges in
    /// well under 200 epochs where 0.01–0.02 still improves after 500, and an
    /// epoch that overshoots halves it (see [`reconstruct`]).
    pub learning_rate: f64,
    /// SGD regularisation λ, applied at every visit of an entry. Default
    /// 0.02: smaller values fit noiseless data a little better, larger ones
    /// noisy data, and 0.02 is close to the best for both. Fold-in relies on
    /// it: with two known entries and rank 4 the fit is underdetermined.
    pub regularization: f64,
    /// Hard bound on the number of SGD epochs. Default 200.
    pub max_epochs: u32,
    /// Stop when an epoch improves the L2 error over the known entries by
    /// less than this fraction. Default 1e-4.
    pub tolerance: f64,
}

impl Default for CfParams {
    fn default() -> Self {
        Self {
            rank: 4,
            learning_rate: 0.1,
            regularization: 0.02,
            max_epochs: 200,
            tolerance: 1e-4,
        }
    }
}

/// A sparse utility matrix (Paragon §2.1): one row per application, one
/// column per server configuration or source of interference; each cell is a
/// measured score or unknown.
#[derive(Clone, Debug, PartialEq)]
pub struct UtilityMatrix {
    cols: usize,
    rows: usize,
    /// Row-major, `rows × cols`.
    cells: Vec<Option<f64>>,
}

impl UtilityMatrix {
    /// An empty matrix with `cols` columns and no rows.
    pub fn new(cols: usize) -> Self {
        Self {
            cols,
            rows: 0,
            cells: Vec::new(),
        }
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends a row with the given known entries `(col, value)`; returns its
    /// index. A column given twice keeps the last value.
    ///
    /// # Panics
    /// If a column is out of range or a value is not finite.
    pub fn push_row(&mut self, known: &[(usize, f64)]) -> usize {
        let row = self.rows;
        self.cells.resize(self.cells.len() + self.cols, None);
        self.rows += 1;
        for &(col, value) in known {
            self.set(row, col, Some(value));
        }
        row
    }

    pub fn get(&self, row: usize, col: usize) -> Option<f64> {
        assert!(row < self.rows && col < self.cols, "cell out of range");
        self.cells[row * self.cols + col]
    }

    /// Sets or clears one cell (e.g. after re-profiling an application).
    ///
    /// # Panics
    /// If the cell is out of range or the value is not finite.
    pub fn set(&mut self, row: usize, col: usize, value: Option<f64>) {
        assert!(
            row < self.rows && col < self.cols,
            "cell ({row}, {col}) out of range of a {}×{} utility matrix",
            self.rows,
            self.cols
        );
        if let Some(v) = value {
            assert!(v.is_finite(), "utility matrix entries must be finite");
        }
        self.cells[row * self.cols + col] = value;
    }

    /// Number of known entries.
    pub fn known(&self) -> usize {
        self.cells.iter().filter(|c| c.is_some()).count()
    }
}

/// The result of [`reconstruct`]: dense factors `Q` (rows × rank) and `P`
/// (cols × rank) of the centred, scaled matrix, with the column offsets
/// (means plus learned biases) and the scale needed to map predictions back
/// to score units.
#[derive(Clone, Debug, PartialEq)]
pub struct Factors {
    rank: usize,
    rows: usize,
    cols: usize,
    /// Row-major `rows × rank`.
    q: Vec<f64>,
    /// Root mean square of each latent coordinate over the dense rows (all
    /// rows when none is dense): the whitening of [`Factors::fold_in`].
    prior_sd: Vec<f64>,
    /// Row-major `cols × rank`.
    p: Vec<f64>,
    /// Learned column offsets on top of `col_mean`, in scaled units.
    bias: Vec<f64>,
    col_mean: Vec<f64>,
    scale: f64,
    epochs: u32,
    l2_error: f64,
    initial_l2_error: f64,
}

impl Factors {
    /// Reconstructed score of a row of the training matrix in a column.
    pub fn predict(&self, row: usize, col: usize) -> f64 {
        assert!(row < self.rows && col < self.cols, "cell out of range");
        let k = self.rank;
        self.col_mean[col]
            + self.scale
                * (self.bias[col]
                    + dot(&self.q[row * k..row * k + k], &self.p[col * k..col * k + k]))
    }

    /// All columns of a row of the training matrix, reconstructed (known
    /// cells included: these are the model's values, not the measurements).
    pub fn row(&self, row: usize) -> Vec<f64> {
        assert!(row < self.rows, "row out of range");
        let k = self.rank;
        self.dense(&self.q[row * k..row * k + k])
    }

    /// SGD epochs run (an epoch undone by the stopping rule still counts).
    pub fn epochs(&self) -> u32 {
        self.epochs
    }

    /// `√Σ ε²` over the known entries, in score units, of these factors.
    pub fn l2_error(&self) -> f64 {
        self.l2_error
    }

    /// The same error for the SVD initialisation, before any SGD.
    pub fn initial_l2_error(&self) -> f64 {
        self.initial_l2_error
    }

    /// Latent dimensions actually used: `min(params.rank, rows, cols)`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Means of the known entries per column (0 where a column had none).
    pub fn column_means(&self) -> &[f64] {
        &self.col_mean
    }

    /// Fold-in: the dense row of a NEW application from its `known` entries
    /// `(col, value)` alone, with the column factors `P` held fixed.
    ///
    /// The fit runs in whitened coordinates `q = d ∘ w`, where `d_f` is the
    /// root mean square of latent coordinate `f` over the dense rows of the
    /// matrix (the offline training set; all rows if none is dense), and
    /// `P_K` below is `P_K ∘ d`. Paragon §2.1 starts from `Q = U`,
    /// `Pᵀ = Σ·Vᵀ`: there the training rows' coordinates have the same
    /// spread on every concept, so SGD's `λ‖q‖²` is the same prior on each.
    /// [`reconstruct`] splits `Σ` evenly instead (module documentation, step
    /// 2), which leaves a concept's coordinates spread in proportion to
    /// `√σ_f`; an isotropic `λ‖q‖²` there lets a two-entry row load weak
    /// concepts as freely as strong ones. With two profiling runs and more
    /// latent dimensions than entries the fit is underdetermined, and that
    /// made predictions worse as the rank grew (measured in
    /// docs/ground-truth.md, "Classifying on EC2"); whitening restores
    /// Paragon's prior and makes them insensitive to the rank.
    ///
    /// `w` starts from the regularised least-squares fit to the known entries,
    /// `(P_Kᵀ P_K + λ|K| I)⁻¹ P_Kᵀ z_K` (the point the per-entry SGD steps
    /// aim at), then SGD of Paragon §2.1 runs on `w` only, with the same η, λ
    /// and stopping rule as [`reconstruct`]. With no known entry `q` is 0 and
    /// the result the column offsets `μ_i + s·b_i`. Every column, known ones
    /// included, is the model's prediction, not the measurement. Cost:
    /// `O(|K|·rank² + rank³ + cols·rank)` plus `O(|K|·rank)` per epoch, with
    /// a handful of small allocations.
    ///
    /// # Panics
    /// If a column is out of range or a value is not finite.
    pub fn fold_in(&self, known: &[(usize, f64)], params: &CfParams) -> Vec<f64> {
        let k = self.rank;
        for &(col, value) in known {
            assert!(col < self.cols, "fold-in column {col} out of range");
            assert!(value.is_finite(), "fold-in values must be finite");
        }
        let mut q = vec![0.0; k];
        if k == 0 || known.is_empty() {
            return self.dense(&q);
        }
        let z: Vec<f64> = known
            .iter()
            .map(|&(col, value)| (value - self.col_mean[col]) / self.scale - self.bias[col])
            .collect();
        // Whitened column factors: q = d ∘ w, with w given the same prior
        // on every concept (see the documentation of this function).
        let d = &self.prior_sd;
        let pw: Vec<f64> = known
            .iter()
            .flat_map(|&(col, _)| (0..k).map(move |f| (col, f)))
            .map(|(col, f)| self.p[col * k + f] * d[f])
            .collect();

        // Regularised normal equations, upper triangle mirrored.
        let lambda = params.regularization;
        let mut a = vec![0.0; k * k];
        let mut b = vec![0.0; k];
        for (j, &zj) in z.iter().enumerate() {
            let pj = &pw[j * k..j * k + k];
            for r in 0..k {
                b[r] += zj * pj[r];
                for c in r..k {
                    a[r * k + c] += pj[r] * pj[c];
                }
            }
        }
        let ridge = lambda * known.len() as f64;
        for r in 0..k {
            a[r * k + r] += ridge;
            for c in 0..r {
                a[r * k + c] = a[c * k + r];
            }
        }
        solve_in_place(&mut a, &mut b, k);
        q.copy_from_slice(&b);

        let error = |q: &[f64]| {
            let mut sum = 0.0;
            for (j, &zj) in z.iter().enumerate() {
                let e = zj - dot(q, &pw[j * k..j * k + k]);
                sum += e * e;
            }
            libm::sqrt(sum)
        };
        let mut schedule = Schedule::new(params, error(&q));
        let mut prev = q.clone();
        for _ in 0..params.max_epochs {
            prev.copy_from_slice(&q);
            let eta = schedule.eta;
            for (j, &zj) in z.iter().enumerate() {
                let pj = &pw[j * k..j * k + k];
                let e = zj - dot(&q, pj);
                for f in 0..k {
                    q[f] += eta * (e * pj[f] - lambda * q[f]);
                }
            }
            let verdict = schedule.after_epoch(error(&q));
            if verdict.undo {
                q.copy_from_slice(&prev);
            }
            if verdict.stop {
                break;
            }
        }
        for f in 0..k {
            q[f] *= d[f];
        }
        self.dense(&q)
    }

    fn dense(&self, q: &[f64]) -> Vec<f64> {
        let k = self.rank;
        (0..self.cols)
            .map(|col| {
                self.col_mean[col]
                    + self.scale * (self.bias[col] + dot(q, &self.p[col * k..col * k + k]))
            })
            .collect()
    }
}

/// SVD initialisation plus SGD over the known entries (Paragon §2.1); see the
/// module documentation for the centring, scaling and stopping rule.
pub fn reconstruct(a: &UtilityMatrix, params: &CfParams) -> Factors {
    let (rows, cols) = (a.rows, a.cols);

    // Column means of the known entries.
    let mut col_mean = vec![0.0; cols];
    let mut col_count = vec![0u32; cols];
    for (i, cell) in a.cells.iter().enumerate() {
        if let Some(v) = *cell {
            col_mean[i % cols] += v;
            col_count[i % cols] += 1;
        }
    }
    for (mean, &n) in col_mean.iter_mut().zip(&col_count) {
        if n > 0 {
            *mean /= f64::from(n);
        }
    }

    // Known entries, row-major, centred; then one scale for all.
    let mut entries: Vec<(usize, usize, f64)> = Vec::new();
    for (i, cell) in a.cells.iter().enumerate() {
        if let Some(v) = *cell {
            let (row, col) = (i / cols, i % cols);
            entries.push((row, col, v - col_mean[col]));
        }
    }
    let mut sum_sq = 0.0;
    for &(_, _, z) in &entries {
        sum_sq += z * z;
    }
    let scale = if sum_sq > 0.0 {
        libm::sqrt(sum_sq / entries.len() as f64)
    } else {
        1.0
    };
    for entry in &mut entries {
        entry.2 /= scale;
    }

    let rank = params.rank.min(rows).min(cols);
    let (mut q, mut p) = svd_init(rows, cols, rank, &entries);

    let lambda = params.regularization;
    let mut bias = vec![0.0; cols];

    let initial = l2(&q, &p, &bias, rank, &entries);
    let mut schedule = Schedule::new(params, initial);
    let mut epochs = 0;
    let (mut prev_q, mut prev_p, mut prev_bias) = (q.clone(), p.clone(), bias.clone());
    while epochs < params.max_epochs && !entries.is_empty() {
        prev_q.copy_from_slice(&q);
        prev_p.copy_from_slice(&p);
        prev_bias.copy_from_slice(&bias);
        let step = Step {
            eta: schedule.eta,
            lambda,
        };
        match rank {
            3 => step.epoch_of::<3>(&mut q, &mut p, &mut bias, &entries),
            4 => step.epoch_of::<4>(&mut q, &mut p, &mut bias, &entries),
            _ => step.epoch(&mut q, &mut p, &mut bias, rank, &entries),
        }
        epochs += 1;
        let verdict = schedule.after_epoch(l2(&q, &p, &bias, rank, &entries));
        if verdict.undo {
            q.copy_from_slice(&prev_q);
            p.copy_from_slice(&prev_p);
            bias.copy_from_slice(&prev_bias);
        }
        if verdict.stop {
            break;
        }
    }

    // Spread of each latent coordinate over the dense rows (the offline
    // training set), all rows if there is none.
    let mut dense_row = vec![0usize; rows];
    for &(row, _, _) in &entries {
        dense_row[row] += 1;
    }
    let any_dense = dense_row.contains(&cols);
    let mut prior_sd = vec![0.0; rank];
    let mut counted = 0usize;
    for (row, &n) in dense_row.iter().enumerate() {
        if any_dense && n != cols {
            continue;
        }
        counted += 1;
        for f in 0..rank {
            prior_sd[f] += q[row * rank + f] * q[row * rank + f];
        }
    }
    for v in &mut prior_sd {
        *v = libm::sqrt(*v / counted.max(1) as f64).max(1e-9);
    }

    Factors {
        rank,
        rows,
        cols,
        q,
        prior_sd,
        p,
        bias,
        col_mean,
        scale,
        epochs,
        l2_error: schedule.err * scale,
        initial_l2_error: initial * scale,
    }
}

/// One SGD epoch over the known entries (Paragon §2.1): for each, the
/// error against the current factors, then the bias and both factor rows
/// moved against it. The arithmetic is the same, in the same order, at
/// every rank; the fixed ranks (3: the heterogeneity matrix over three
/// configurations; 4: the default) only let the compiler unroll the inner
/// loops, which matters because refits are a third of a Paragon run's time
/// at scale (docs/performance.md).
struct Step {
    eta: f64,
    lambda: f64,
}

impl Step {
    fn epoch(
        &self,
        q: &mut [f64],
        p: &mut [f64],
        bias: &mut [f64],
        rank: usize,
        entries: &[(usize, usize, f64)],
    ) {
        let (eta, lambda) = (self.eta, self.lambda);
        for &(row, col, z) in entries {
            let qu = &mut q[row * rank..row * rank + rank];
            let pi = &mut p[col * rank..col * rank + rank];
            let e = z - bias[col] - dot(qu, pi);
            bias[col] += eta * (e - lambda * bias[col]);
            for f in 0..rank {
                let (qf, pf) = (qu[f], pi[f]);
                qu[f] = qf + eta * (e * pf - lambda * qf);
                pi[f] = pf + eta * (e * qf - lambda * pf);
            }
        }
    }

    fn epoch_of<const R: usize>(
        &self,
        q: &mut [f64],
        p: &mut [f64],
        bias: &mut [f64],
        entries: &[(usize, usize, f64)],
    ) {
        let (eta, lambda) = (self.eta, self.lambda);
        for &(row, col, z) in entries {
            let qu: &mut [f64; R] = (&mut q[row * R..row * R + R])
                .try_into()
                .expect("a factor row holds R values");
            let pi: &mut [f64; R] = (&mut p[col * R..col * R + R])
                .try_into()
                .expect("a factor row holds R values");
            let mut d = 0.0;
            for f in 0..R {
                d += qu[f] * pi[f];
            }
            let e = z - bias[col] - d;
            bias[col] += eta * (e - lambda * bias[col]);
            for f in 0..R {
                let (qf, pf) = (qu[f], pi[f]);
                qu[f] = qf + eta * (e * pf - lambda * qf);
                pi[f] = pf + eta * (e * qf - lambda * pf);
            }
        }
    }
}

/// How many times an epoch that made the error worse may halve the learning
/// rate before SGD gives up.
const MAX_HALVINGS: u32 = 30;

/// The stopping rule of Paragon §2.1 (stop once the L2 error over the known
/// entries no longer improves by a useful amount) with a step-size safeguard:
/// an epoch that makes the error worse, or not finite, is undone and the
/// learning rate halved, so an η too large for some matrix degrades into
/// smaller steps instead of diverging.
struct Schedule {
    eta: f64,
    tolerance: f64,
    /// L2 error of the factors currently kept.
    err: f64,
    halvings: u32,
}

struct Verdict {
    /// Restore the factors from before the epoch.
    undo: bool,
    stop: bool,
}

impl Schedule {
    fn new(params: &CfParams, initial_error: f64) -> Self {
        Self {
            eta: params.learning_rate,
            tolerance: params.tolerance,
            err: initial_error,
            halvings: 0,
        }
    }

    fn after_epoch(&mut self, new: f64) -> Verdict {
        if !(new.is_finite() && new <= self.err) {
            self.eta *= 0.5;
            self.halvings += 1;
            return Verdict {
                undo: true,
                stop: self.halvings > MAX_HALVINGS,
            };
        }
        let improvement = self.err - new;
        let stop = improvement <= self.tolerance * self.err;
        self.err = new;
        Verdict { undo: false, stop }
    }
}

/// Balanced initial factors from the truncated SVD of the centred, scaled,
/// zero-filled matrix. Row-major `rows × rank` and `cols × rank`.
fn svd_init(
    rows: usize,
    cols: usize,
    rank: usize,
    entries: &[(usize, usize, f64)],
) -> (Vec<f64>, Vec<f64>) {
    let mut q = vec![0.0; rows * rank];
    let mut p = vec![0.0; cols * rank];
    if rank == 0 {
        return (q, p);
    }
    let mut dense = DMatrix::<f64>::zeros(rows, cols);
    for &(row, col, z) in entries {
        dense[(row, col)] = z;
    }
    // nalgebra's own `svd()` iterates without bound; bound it generously so
    // that a pathological input cannot hang the simulation.
    let max_iter = 1000 * rows.max(cols);
    let Some(svd) = SVD::try_new(dense, true, true, f64::EPSILON, max_iter) else {
        // Not expected; fall back to P = first unit vectors, Q = 0, from which
        // SGD can still move (the gradient for Q is non-zero).
        for f in 0..rank {
            p[f * rank + f] = 1.0;
        }
        return (q, p);
    };
    let (Some(u), Some(v_t)) = (svd.u, svd.v_t) else {
        unreachable!("SVD computed with U and Vᵀ");
    };
    let c = libm::sqrt(libm::sqrt(rows as f64 / cols as f64));
    for f in 0..rank {
        let root = libm::sqrt(svd.singular_values[f]);
        for row in 0..rows {
            q[row * rank + f] = u[(row, f)] * root * c;
        }
        for col in 0..cols {
            p[col * rank + f] = v_t[(f, col)] * root / c;
        }
    }
    (q, p)
}

/// `√Σ ε²` over the (scaled) known entries.
fn l2(q: &[f64], p: &[f64], bias: &[f64], rank: usize, entries: &[(usize, usize, f64)]) -> f64 {
    match rank {
        3 => l2_of::<3>(q, p, bias, entries),
        4 => l2_of::<4>(q, p, bias, entries),
        _ => l2_any(q, p, bias, rank, entries),
    }
}

/// [`l2`] at a fixed rank: the same sums in the same order.
fn l2_of<const R: usize>(
    q: &[f64],
    p: &[f64],
    bias: &[f64],
    entries: &[(usize, usize, f64)],
) -> f64 {
    let mut sum = 0.0;
    for &(row, col, z) in entries {
        let qu = &q[row * R..row * R + R];
        let pi = &p[col * R..col * R + R];
        let mut d = 0.0;
        for f in 0..R {
            d += qu[f] * pi[f];
        }
        let e = z - bias[col] - d;
        sum += e * e;
    }
    libm::sqrt(sum)
}

fn l2_any(q: &[f64], p: &[f64], bias: &[f64], rank: usize, entries: &[(usize, usize, f64)]) -> f64 {
    let mut sum = 0.0;
    for &(row, col, z) in entries {
        let e = z
            - bias[col]
            - dot(
                &q[row * rank..row * rank + rank],
                &p[col * rank..col * rank + rank],
            );
        sum += e * e;
    }
    libm::sqrt(sum)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (x, y) in a.iter().zip(b) {
        sum += x * y;
    }
    sum
}

/// Solves `a·x = b` for a `k × k` row-major `a` by Gaussian elimination with
/// partial pivoting; `x` replaces `b`. A (numerically) singular direction is
/// set to 0 rather than dividing by nothing.
fn solve_in_place(a: &mut [f64], b: &mut [f64], k: usize) {
    let mut scale = 0.0f64;
    for &v in a.iter() {
        scale = scale.max(v.abs());
    }
    let tiny = scale * 1e-12;
    let mut singular = vec![false; k];
    for col in 0..k {
        let mut pivot = col;
        for r in col + 1..k {
            if a[r * k + col].abs() > a[pivot * k + col].abs() {
                pivot = r;
            }
        }
        if a[pivot * k + col].abs() <= tiny {
            singular[col] = true;
            continue;
        }
        if pivot != col {
            for c in 0..k {
                a.swap(col * k + c, pivot * k + c);
            }
            b.swap(col, pivot);
        }
        let d = a[col * k + col];
        for r in col + 1..k {
            let factor = a[r * k + col] / d;
            if factor != 0.0 {
                for c in col..k {
                    a[r * k + c] -= factor * a[col * k + c];
                }
                b[r] -= factor * b[col];
            }
        }
    }
    for col in (0..k).rev() {
        if singular[col] {
            b[col] = 0.0;
            continue;
        }
        let mut sum = b[col];
        for c in col + 1..k {
            sum -= a[col * k + c] * b[c];
        }
        b[col] = sum / a[col * k + col];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{ActorRng, actor_rng};
    use crate::sampling::{index, normal};

    /// A `rows × cols` matrix: normal column offsets of standard deviation
    /// `spread` plus the product of standard-normal factors of rank `rank`.
    fn low_rank(
        rng: &mut ActorRng,
        rows: usize,
        cols: usize,
        rank: usize,
        spread: f64,
    ) -> Vec<Vec<f64>> {
        let offset: Vec<f64> = (0..cols).map(|_| spread * normal(rng)).collect();
        let y: Vec<Vec<f64>> = (0..cols)
            .map(|_| (0..rank).map(|_| normal(rng)).collect())
            .collect();
        (0..rows)
            .map(|_| {
                let x: Vec<f64> = (0..rank).map(|_| normal(rng)).collect();
                (0..cols).map(|j| offset[j] + dot(&x, &y[j])).collect()
            })
            .collect()
    }

    /// `n` distinct columns of `0..cols`, uniformly (partial Fisher–Yates).
    fn pick(rng: &mut ActorRng, cols: usize, n: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..cols).collect();
        for i in 0..n {
            let j = i + index(rng, (cols - i) as u32) as usize;
            all.swap(i, j);
        }
        all.truncate(n);
        all.sort_unstable();
        all
    }

    fn argmax(v: &[f64]) -> usize {
        let mut best = 0;
        for (i, &x) in v.iter().enumerate() {
            if x > v[best] {
                best = i;
            }
        }
        best
    }

    #[test]
    fn recovers_a_low_rank_matrix_from_a_fifth_of_its_entries() {
        // 200 × 25 of rank 3 from 5 entries per row: 1,000 known values for
        // 3·(200 + 25 − 3) = 666 degrees of freedom.
        let (rows, cols, per_row) = (200, 25, 5);
        let mut rng = actor_rng(1, "cf-test");
        let truth = low_rank(&mut rng, rows, cols, 3, 2.0);
        let mut a = UtilityMatrix::new(cols);
        for t in &truth {
            let known: Vec<(usize, f64)> = pick(&mut rng, cols, per_row)
                .into_iter()
                .map(|j| (j, t[j]))
                .collect();
            a.push_row(&known);
        }
        for j in 0..cols {
            let n = (0..rows).filter(|&i| a.get(i, j).is_some()).count();
            assert!(n >= 2, "column {j} kept only {n} entries");
        }
        assert_eq!(a.known(), rows * per_row);

        let params = CfParams {
            rank: 3,
            ..CfParams::default()
        };
        let f = reconstruct(&a, &params);
        let (mut sq_model, mut sq_mean, mut hidden) = (0.0, 0.0, 0usize);
        for (i, t) in truth.iter().enumerate() {
            for (j, &v) in t.iter().enumerate() {
                if a.get(i, j).is_none() {
                    let e = f.predict(i, j) - v;
                    let m = f.column_means()[j] - v;
                    sq_model += e * e;
                    sq_mean += m * m;
                    hidden += 1;
                }
            }
        }
        let rmse_model = libm::sqrt(sq_model / hidden as f64);
        let rmse_mean = libm::sqrt(sq_mean / hidden as f64);
        let report = format!(
            "hidden-entry RMSE {rmse_model:.4} vs column-mean RMSE {rmse_mean:.4} \
             (ratio {:.3}) after {} epochs, L2 {:.3} -> {:.3}",
            rmse_model / rmse_mean,
            f.epochs(),
            f.initial_l2_error(),
            f.l2_error()
        );
        eprintln!("{report}");
        assert!(rmse_model < 0.25 * rmse_mean, "{report}");
    }

    #[test]
    fn fold_in_predicts_a_new_row_from_two_entries() {
        // Paragon §2.2: a few tens of fully profiled applications offline,
        // then every arrival profiled on two configurations only.
        let (train, arrivals, cols) = (30, 400, 10);
        let mut rng = actor_rng(1, "cf-test");
        let truth = low_rank(&mut rng, train + arrivals, cols, 3, 1.0);
        let mut a = UtilityMatrix::new(cols);
        for t in &truth[..train] {
            let known: Vec<(usize, f64)> = t.iter().copied().enumerate().collect();
            a.push_row(&known);
        }
        let params = CfParams::default();
        let f = reconstruct(&a, &params);

        let (mut hits, mut mean_hits) = (0, 0);
        let (mut abs_model, mut abs_mean, mut hidden) = (0.0, 0.0, 0usize);
        let mean_best = argmax(f.column_means());
        for t in &truth[train..] {
            let cols_known = pick(&mut rng, cols, 2);
            let known: Vec<(usize, f64)> = cols_known.iter().map(|&j| (j, t[j])).collect();
            let row = f.fold_in(&known, &params);
            let best = argmax(t);
            hits += usize::from(argmax(&row) == best);
            mean_hits += usize::from(mean_best == best);
            for j in (0..cols).filter(|j| !cols_known.contains(j)) {
                abs_model += (row[j] - t[j]).abs();
                abs_mean += (f.column_means()[j] - t[j]).abs();
                hidden += 1;
            }
        }
        let hit_rate = hits as f64 / arrivals as f64;
        let mean_hit_rate = mean_hits as f64 / arrivals as f64;
        let chance = 1.0 / cols as f64;
        let mae_model = abs_model / hidden as f64;
        let mae_mean = abs_mean / hidden as f64;
        let report = format!(
            "best column hit rate {hit_rate:.3} (column means {mean_hit_rate:.3}, chance \
             {chance:.3}); hidden MAE {mae_model:.4} vs column means {mae_mean:.4}"
        );
        eprintln!("{report}");
        assert!(hit_rate > 2.5 * chance, "{report}");
        assert!(hit_rate > mean_hit_rate, "{report}");
        assert!(mae_model < 0.8 * mae_mean, "{report}");
    }

    /// Two profiled entries cannot pin down more latent dimensions than two;
    /// a higher rank must then not make fold-in worse than the rank the data
    /// have, because weak concepts get the prior the training rows give them
    /// (whitened fold-in). Measured: rank 2 0.369, rank 10 0.367; without
    /// the whitening rank 10 gave 0.410, 11 % worse than rank 2.
    #[test]
    fn fold_in_is_not_hurt_by_a_rank_above_the_data() {
        let (train, arrivals, cols) = (30, 400, 10);
        let mut rng = actor_rng(3, "cf-test");
        // One strong concept, one weaker, then small ones: a decaying
        // spectrum like a utility matrix of applications × configurations.
        let weights = [1.0, 0.5, 0.15, 0.1, 0.05];
        let y: Vec<Vec<f64>> = (0..cols)
            .map(|_| weights.iter().map(|w| w * normal(&mut rng)).collect())
            .collect();
        let truth: Vec<Vec<f64>> = (0..train + arrivals)
            .map(|_| {
                let x: Vec<f64> = weights.iter().map(|_| normal(&mut rng)).collect();
                (0..cols).map(|j| dot(&x, &y[j])).collect()
            })
            .collect();
        let mut a = UtilityMatrix::new(cols);
        for t in &truth[..train] {
            let known: Vec<(usize, f64)> = t.iter().copied().enumerate().collect();
            a.push_row(&known);
        }
        let probes: Vec<Vec<usize>> = (0..arrivals).map(|_| pick(&mut rng, cols, 2)).collect();
        let mae = |rank: usize| {
            let params = CfParams {
                rank,
                ..CfParams::default()
            };
            let f = reconstruct(&a, &params);
            let (mut sum, mut n) = (0.0, 0usize);
            for (t, known_cols) in truth[train..].iter().zip(&probes) {
                let known: Vec<(usize, f64)> = known_cols.iter().map(|&j| (j, t[j])).collect();
                let row = f.fold_in(&known, &params);
                for j in (0..cols).filter(|j| !known_cols.contains(j)) {
                    sum += (row[j] - t[j]).abs();
                    n += 1;
                }
            }
            sum / n as f64
        };
        let (low, high) = (mae(2), mae(10));
        let report = format!("hidden MAE rank 2 {low:.4}, rank 10 {high:.4}");
        eprintln!("{report}");
        assert!(high < 1.05 * low, "{report}");
    }

    #[test]
    fn same_input_same_bits() {
        let mut rng = actor_rng(2, "cf-test");
        let truth = low_rank(&mut rng, 80, 14, 4, 2.0);
        let mut a = UtilityMatrix::new(14);
        for t in &truth {
            let known: Vec<(usize, f64)> = pick(&mut rng, 14, 4)
                .into_iter()
                .map(|j| (j, t[j]))
                .collect();
            a.push_row(&known);
        }
        let params = CfParams::default();
        let bits = |f: &Factors| -> Vec<u64> {
            let probe = f.fold_in(&[(1, 0.5), (7, -1.25)], &params);
            f.q.iter()
                .chain(&f.p)
                .chain(&f.col_mean)
                .chain(&probe)
                .chain(&[f.scale, f.l2_error, f.initial_l2_error])
                .map(|x| x.to_bits())
                .collect()
        };
        let (f1, f2) = (reconstruct(&a, &params), reconstruct(&a, &params));
        assert!(f1.epochs() > 0);
        assert_eq!(f1.epochs(), f2.epochs());
        assert_eq!(bits(&f1), bits(&f2));
    }

    #[test]
    fn sgd_stops_within_bounds_and_improves_on_the_svd() {
        let mut rng = actor_rng(3, "cf-test");
        let truth = low_rank(&mut rng, 120, 12, 3, 2.0);
        let mut a = UtilityMatrix::new(12);
        for t in &truth {
            let known: Vec<(usize, f64)> = pick(&mut rng, 12, 4)
                .into_iter()
                .map(|j| (j, t[j]))
                .collect();
            a.push_row(&known);
        }
        let svd_only = reconstruct(
            &a,
            &CfParams {
                max_epochs: 0,
                ..CfParams::default()
            },
        );
        assert_eq!(svd_only.epochs(), 0);
        assert_eq!(svd_only.l2_error(), svd_only.initial_l2_error());

        for max_epochs in [1, 5, 200] {
            let params = CfParams {
                max_epochs,
                ..CfParams::default()
            };
            let f = reconstruct(&a, &params);
            assert!(
                f.epochs() >= 1 && f.epochs() <= max_epochs,
                "{}",
                f.epochs()
            );
            assert_eq!(f.initial_l2_error(), svd_only.l2_error());
            assert!(
                f.l2_error() < svd_only.l2_error(),
                "{max_epochs} epochs: L2 {} vs SVD-only {}",
                f.l2_error(),
                svd_only.l2_error()
            );
        }
        // A loose tolerance, not the bound, ends the run.
        let f = reconstruct(&a, &CfParams::default());
        let loose = reconstruct(
            &a,
            &CfParams {
                tolerance: 0.01,
                ..CfParams::default()
            },
        );
        assert!(
            loose.epochs() < f.epochs().min(200),
            "tolerance 0.01: {} epochs, 1e-4: {}",
            loose.epochs(),
            f.epochs()
        );
        assert!(loose.l2_error() > f.l2_error());

        // A learning rate far too large is halved until epochs improve.
        for eta in [10.0, 1e6] {
            let wild = reconstruct(
                &a,
                &CfParams {
                    learning_rate: eta,
                    ..CfParams::default()
                },
            );
            assert!(
                wild.l2_error().is_finite() && wild.l2_error() < 0.5 * svd_only.l2_error(),
                "η {eta}: L2 {} vs SVD-only {}",
                wild.l2_error(),
                svd_only.l2_error()
            );
            let row = wild.fold_in(
                &[(0, 1.0), (5, -1.0)],
                &CfParams {
                    learning_rate: eta,
                    ..CfParams::default()
                },
            );
            assert!(row.iter().all(|x| x.is_finite()), "{row:?}");
        }
    }

    #[test]
    fn utility_matrix_and_degenerate_inputs() {
        let mut a = UtilityMatrix::new(3);
        assert_eq!(a.push_row(&[(0, 1.0), (2, 3.0)]), 0);
        assert_eq!(a.push_row(&[(1, 5.0), (1, 6.0)]), 1);
        assert_eq!((a.rows(), a.cols(), a.known()), (2, 3, 3));
        assert_eq!(a.get(0, 1), None);
        assert_eq!(a.get(1, 1), Some(6.0));

        // No rows: predictions are the column means (0), fold-in too.
        let empty = reconstruct(&UtilityMatrix::new(4), &CfParams::default());
        assert_eq!(empty.rank(), 0);
        assert_eq!(
            empty.fold_in(&[(0, 2.0)], &CfParams::default()),
            vec![0.0; 4]
        );

        // No known entries in a fold-in: the column means.
        let f = reconstruct(&a, &CfParams::default());
        assert_eq!(f.fold_in(&[], &CfParams::default()), vec![1.0, 6.0, 3.0]);
    }
}
