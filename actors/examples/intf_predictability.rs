//! How much of an application's interference profile two microbenchmark
//! runs can determine (Paragon §2.3, Table III), measured on the ground
//! truth alone.
//!
//! For the local cluster's catalog it applies the best linear predictor
//! that knows the catalog's true mean and covariance of the ten tolerated
//! and ten caused sensitivity scores to what Paragon measures of a new
//! application: both scores on two random sources of interference, with the
//! profiling noise (3 points). It reports the absolute error over all twenty
//! scores (as `class_sensitivity_error_*`): mean, 90th and 99th percentile.
//! "separate" predicts the tolerated scores from the two tolerated
//! measurements and the caused ones from the caused, as Paragon runs its
//! collaborative filtering twice (§2.3); "joint" uses all four measurements
//! for every score. No linear method on the same measurements does better
//! on average.
//!
//! Grading and diagnosis only; no scheduler uses this.
//!
//!     cargo run --release -p dcemu-actors --example intf_predictability -- [apps] [seed] [catalog noise]
//!
//! The optional catalog noise replaces `CatalogSpec::noise` (0.05), to show
//! what the per-score noise on top of the low-rank structure costs.
use dcemu_actors::ground_truth::{
    CatalogSpec, FamilyMix, SOURCES, generate, paragon_local_cluster,
};
use dcemu_actors::kernel::actor_rng;
use dcemu_actors::sampling::{index, normal};

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            for (x, p) in row.iter_mut().zip(pivot_row).skip(col) {
                *x -= f * p;
            }
            b[col + 1 + offset] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    x
}

/// Percentile `p` of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let apps: u32 = args.get(1).map_or(1000, |s| s.parse().unwrap_or(1000));
    let seed: u64 = args.get(2).map_or(1, |s| s.parse().unwrap_or(1));
    let catalog_noise: Option<f64> = args.get(3).and_then(|s| s.parse().ok());
    let classes = paragon_local_cluster();
    let mut spec = CatalogSpec::new(apps);
    spec.mix = FamilyMix::PARAGON_POOL;
    if let Some(noise) = catalog_noise {
        spec.noise = noise;
    }
    let Ok(catalog) = generate(&spec, &classes, &mut actor_rng(seed, "catalog")) else {
        eprintln!("could not generate the catalog");
        std::process::exit(2);
    };
    // Rows: tolerated scores 0..SOURCES, then caused scores.
    let rows: Vec<Vec<f64>> = catalog
        .iter()
        .map(|a| a.tolerated.iter().chain(&a.caused).copied().collect())
        .collect();
    let d = 2 * SOURCES;
    let m = rows.len() as f64;
    let mu: Vec<f64> = (0..d)
        .map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / m)
        .collect();
    let mut cov = vec![vec![0.0; d]; d];
    for r in &rows {
        for i in 0..d {
            for j in 0..d {
                cov[i][j] += (r[i] - mu[i]) * (r[j] - mu[j]) / m;
            }
        }
    }
    let noise = 3.0; // scheduler.profile_noise 0.03, in points of 100
    let mut rng = actor_rng(seed, "probe");
    let mut separate = Vec::new();
    let mut joint = Vec::new();
    for r in &rows {
        let a = index(&mut rng, SOURCES as u32) as usize;
        let mut b = index(&mut rng, (SOURCES - 1) as u32) as usize;
        if b >= a {
            b += 1;
        }
        let observed = [a, b, SOURCES + a, SOURCES + b];
        let y: Vec<f64> = observed
            .iter()
            .map(|&k| (r[k] + noise * normal(&mut rng)).clamp(0.0, 100.0))
            .collect();
        let predict = |seen: &[usize]| -> Vec<f64> {
            let s: Vec<Vec<f64>> = seen
                .iter()
                .map(|&i| {
                    seen.iter()
                        .map(|&j| {
                            cov[observed[i]][observed[j]] + if i == j { noise * noise } else { 0.0 }
                        })
                        .collect()
                })
                .collect();
            let w = solve(s, seen.iter().map(|&i| y[i] - mu[observed[i]]).collect());
            (0..d)
                .map(|c| {
                    let v: f64 = seen
                        .iter()
                        .zip(&w)
                        .map(|(&i, wi)| cov[c][observed[i]] * wi)
                        .sum();
                    (mu[c] + v).clamp(0.0, 100.0)
                })
                .collect()
        };
        let tolerated = predict(&[0, 1]);
        let caused = predict(&[2, 3]);
        let both = predict(&[0, 1, 2, 3]);
        for c in 0..d {
            let own = if c < SOURCES { tolerated[c] } else { caused[c] };
            separate.push((own - r[c]).abs());
            joint.push((both[c] - r[c]).abs());
        }
    }
    for (name, errors) in [("separate", &mut separate), ("joint", &mut joint)] {
        errors.sort_by(f64::total_cmp);
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        println!(
            "local seed {seed} {name}: mean {mean:.2} p90 {:.2} p99 {:.2} (Table III: 5.3 / 10.5 / 18.6)",
            percentile(errors, 0.9),
            percentile(errors, 0.99)
        );
    }
}
