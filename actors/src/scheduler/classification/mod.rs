//! Paragon's classification engine (§2): three utility matrices filled by
//! collaborative filtering, one for heterogeneity (applications ×
//! configurations, ratings ln IPS, §2.2) and two for interference
//! (applications × sources of interference, tolerated and caused scores,
//! §2.3).
//!
//! The offline training set gives dense rows. Each new application adds a
//! sparse row with its profiling measurements; its missing entries come from
//! folding the row into the current factors, and every `retrain_every` new
//! rows the factors are reconstructed from the training rows and the most
//! recent online rows (SVD, then SGD, §2.1), so accuracy improves as the
//! matrix fills up.

pub mod cf;

use crate::ground_truth::SOURCES;
use crate::profiling::{Measurement, Profile, TrainingRow};

use cf::{CfParams, Factors, UtilityMatrix, reconstruct};

/// Online rows kept for reconstructions: enough for the matrix to gain
/// density, few enough that a reconstruction stays in the milliseconds.
pub const ONLINE_ROWS_KEPT: usize = 1500;

/// One utility matrix: its dense training rows, recent online rows, and the
/// current factors.
struct Matrix {
    cols: usize,
    training: Vec<Vec<(usize, f64)>>,
    online: std::collections::VecDeque<Vec<(usize, f64)>>,
    factors: Factors,
}

impl Matrix {
    fn new(cols: usize, training: Vec<Vec<(usize, f64)>>, params: &CfParams) -> Self {
        let factors = Self::fit(cols, &training, std::iter::empty(), params);
        Matrix {
            cols,
            training,
            online: std::collections::VecDeque::new(),
            factors,
        }
    }

    fn fit<'a>(
        cols: usize,
        training: &'a [Vec<(usize, f64)>],
        online: impl Iterator<Item = &'a Vec<(usize, f64)>>,
        params: &CfParams,
    ) -> Factors {
        let mut a = UtilityMatrix::new(cols);
        for row in training.iter().chain(online) {
            a.push_row(row);
        }
        reconstruct(&a, params)
    }

    /// The dense row of a new application with `known` entries; measured
    /// entries keep their measured values.
    fn classify(&mut self, known: Vec<(usize, f64)>, params: &CfParams) -> Vec<f64> {
        let mut row = self.factors.fold_in(&known, params);
        row.resize(self.cols, 0.0);
        for &(c, v) in &known {
            if let Some(x) = row.get_mut(c) {
                *x = v;
            }
        }
        if self.online.len() == ONLINE_ROWS_KEPT {
            self.online.pop_front();
        }
        self.online.push_back(known);
        row
    }

    fn refit(&mut self, params: &CfParams) {
        self.factors = Self::fit(self.cols, &self.training, self.online.iter(), params);
    }
}

pub struct Classifier {
    params: CfParams,
    retrain_every: u32,
    since_retrain: u32,
    heterogeneity: Matrix,
    tolerated: Matrix,
    caused: Matrix,
    reconstructions: u64,
}

impl Classifier {
    /// Builds the three matrices from the offline training set (§2.2) over
    /// `classes` server configurations.
    pub fn new(
        training: &[TrainingRow],
        classes: usize,
        params: CfParams,
        retrain_every: u32,
    ) -> Self {
        let dense = |f: &dyn Fn(&TrainingRow) -> Vec<f64>| -> Vec<Vec<(usize, f64)>> {
            training
                .iter()
                .map(|r| f(r).into_iter().enumerate().collect())
                .collect()
        };
        let het = dense(&|r| r.ln_ips.clone());
        let tol = dense(&|r| r.tolerated.iter().map(|s| s / 100.0).collect());
        let cau = dense(&|r| r.caused.iter().map(|s| s / 100.0).collect());
        Classifier {
            heterogeneity: Matrix::new(classes, het, &params),
            tolerated: Matrix::new(SOURCES, tol, &params),
            caused: Matrix::new(SOURCES, cau, &params),
            params,
            retrain_every: retrain_every.max(1),
            since_retrain: 0,
            reconstructions: 3,
        }
    }

    /// Classifies a newly profiled application (§2.4): heterogeneity and
    /// interference in parallel, from two measurements each.
    pub fn classify(&mut self, m: &Measurement) -> Profile {
        let p = self.params;
        let ln_ips = self.heterogeneity.classify(m.ln_ips.clone(), &p);
        let scale = |v: &[(usize, f64)]| v.iter().map(|&(s, x)| (s, x / 100.0)).collect();
        let tolerated = self.tolerated.classify(scale(&m.tolerated), &p);
        let caused = self.caused.classify(scale(&m.caused), &p);
        self.since_retrain += 1;
        if self.since_retrain >= self.retrain_every {
            self.since_retrain = 0;
            self.heterogeneity.refit(&p);
            self.tolerated.refit(&p);
            self.caused.refit(&p);
            self.reconstructions += 3;
        }
        profile_from(&ln_ips, &tolerated, &caused)
    }

    /// Reconstructions of a whole utility matrix so far.
    pub fn reconstructions(&self) -> u64 {
        self.reconstructions
    }
}

/// Relative speeds `exp(r_c − max r)` and scores back on the 0–100 scale.
fn profile_from(ln_ips: &[f64], tolerated: &[f64], caused: &[f64]) -> Profile {
    let max = ln_ips.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let speed = ln_ips.iter().map(|&r| libm::exp(r - max)).collect();
    let score = |v: &[f64], s: usize| (v.get(s).copied().unwrap_or(0.5) * 100.0).clamp(0.0, 100.0);
    Profile {
        speed,
        tolerated: std::array::from_fn(|s| score(tolerated, s)),
        caused: std::array::from_fn(|s| score(caused, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_relative_to_the_predicted_best() {
        let p = profile_from(&[1.0, 2.0, 0.5], &[0.5; SOURCES], &[1.2; SOURCES]);
        assert_eq!(p.best_class(), 1);
        assert_eq!(p.speed[1], 1.0);
        assert!(p.speed[0] < 1.0 && p.speed[2] < p.speed[0]);
        assert_eq!(p.tolerated[3], 50.0);
        assert_eq!(p.caused[0], 100.0, "clamped to the score range");
    }
}
