//! How much of an application's heterogeneity row two profiling runs can
//! determine (Paragon §2.2), measured on the ground truth alone.
//!
//! For a catalog generated for a cluster's classes, it reports the share of
//! applications whose best configuration is the catalog-wide most common one
//! (the prior), and the accuracy (best configuration, within 5 %) of the
//! Bayes-optimal linear predictor from two measured ln IPS on random
//! distinct configurations, each with the unknown per-application level
//! (uniform in [−1, 1], as the profiling lab draws it) and profiling noise.
//! That predictor knows the true mean and covariance of the catalog's
//! ln-speed rows, so no collaborative filtering can beat it on average: it is
//! an upper bound for Paragon's classifier with these inputs. It also
//! reports that predictor's mean speed error (|predicted / true − 1| over
//! every configuration, speeds relative to the best, as
//! `class_speed_error_mean`) and its share of exactly right rankings.
//!
//! Grading and diagnosis only; no scheduler uses this.
//!
//!     cargo run --release -p dcemu-actors --example het_predictability -- \
//!         <ec2|local> <rank> [apps] [seed]
//!
//! With `NO_LEVEL` set in the environment the per-application level is
//! known (0), which shows what the unknown level costs.
use dcemu_actors::ground_truth::{
    CatalogSpec, FamilyMix, ServerClass, generate, paragon_local_cluster,
};
use dcemu_actors::kernel::actor_rng;
use dcemu_actors::profiling::ranking_positions_right;
use dcemu_actors::sampling::{index, normal, uniform_open0};

fn ec2() -> Vec<ServerClass> {
    // Paragon Table VI with the host processors of scenarios/paragon/ec2-*.toml.
    let rows: [(&str, u32, f64, f64, f64); 14] = [
        ("m1-small", 1, 2.0, 1.7, 20.0),
        ("m1-medium", 1, 2.0, 3.75, 20.0),
        ("m1-large", 2, 2.0, 7.5, 20.0),
        ("m1-xlarge", 4, 2.0, 15.0, 20.0),
        ("m3-xlarge", 4, 2.6, 15.0, 20.0),
        ("m3-2xlarge", 8, 2.6, 30.0, 20.0),
        ("c1-medium", 2, 2.33, 1.7, 12.0),
        ("c1-xlarge", 8, 2.33, 7.0, 12.0),
        ("m2-xlarge", 2, 2.67, 17.1, 8.0),
        ("m2-2xlarge", 4, 2.67, 34.2, 8.0),
        ("m2-4xlarge", 8, 2.67, 68.4, 8.0),
        ("cr1-8xlarge", 32, 2.6, 244.0, 20.0),
        ("hi1-4xlarge", 16, 2.4, 60.5, 12.0),
        ("hs1-8xlarge", 16, 2.0, 117.0, 20.0),
    ];
    ServerClass::table(&rows)
}

fn solve2(a: [[f64; 2]; 2], b: [f64; 2]) -> [f64; 2] {
    let det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
    [
        (a[1][1] * b[0] - a[0][1] * b[1]) / det,
        (a[0][0] * b[1] - a[1][0] * b[0]) / det,
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cluster = args.get(1).map_or("ec2", |s| s.as_str());
    let rank: u32 = args.get(2).map_or(6, |s| s.parse().unwrap());
    let apps: u32 = args.get(3).map_or(1000, |s| s.parse().unwrap());
    let seed: u64 = args.get(4).map_or(1, |s| s.parse().unwrap());
    let (classes, mix) = match cluster {
        "local" => (paragon_local_cluster(), FamilyMix::PARAGON_POOL),
        _ => (ec2(), FamilyMix::default()),
    };
    let mut spec = CatalogSpec::new(apps);
    spec.rank = rank;
    spec.mix = mix;
    let catalog = generate(&spec, &classes, &mut actor_rng(seed, "catalog")).unwrap();
    let n = classes.len();
    let rows: Vec<Vec<f64>> = catalog
        .iter()
        .map(|a| a.speed.iter().map(|s| libm::log(*s)).collect())
        .collect();
    let m = rows.len() as f64;
    let mu: Vec<f64> = (0..n)
        .map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / m)
        .collect();
    let mut cov = vec![vec![0.0; n]; n];
    for r in &rows {
        for i in 0..n {
            for j in 0..n {
                cov[i][j] += (r[i] - mu[i]) * (r[j] - mu[j]) / m;
            }
        }
    }
    let no_level = std::env::var("NO_LEVEL").is_ok();
    let level_var = if no_level { 0.0 } else { 1.0 / 3.0 }; // uniform in [-1, 1]
    let noise = 0.03; // scheduler.profile_noise default
    let prior_best = (0..n).max_by(|&a, &b| mu[a].total_cmp(&mu[b])).unwrap();
    let mut rng = actor_rng(seed, "probe");
    let (mut prior_hit, mut prior_w5, mut hit, mut w5, mut ties) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut speed_error, mut errors, mut exact) = (0.0, 0.0, 0.0);
    let draws = 5;
    for r in &rows {
        let speed = |c: usize| libm::exp(r[c]);
        prior_hit += f64::from(u8::from(speed(prior_best) >= 1.0 - 1e-12));
        prior_w5 += f64::from(u8::from(speed(prior_best) >= 0.95));
        let second = r
            .iter()
            .copied()
            .filter(|&x| x < -1e-12)
            .fold(f64::NEG_INFINITY, f64::max);
        ties += f64::from(u8::from(libm::exp(second) >= 0.95));
        for _ in 0..draws {
            let a = index(&mut rng, n as u32) as usize;
            let mut b = index(&mut rng, (n - 1) as u32) as usize;
            if b >= a {
                b += 1;
            }
            let level = if no_level {
                0.0
            } else {
                2.0 * uniform_open0(&mut rng) - 1.0
            };
            let y = [
                r[a] + level + noise * normal(&mut rng),
                r[b] + level + noise * normal(&mut rng),
            ];
            let k = [a, b];
            let mut s = [[0.0; 2]; 2];
            for i in 0..2 {
                for j in 0..2 {
                    s[i][j] =
                        cov[k[i]][k[j]] + level_var + if i == j { noise * noise } else { 0.0 };
                }
            }
            let w = solve2(s, [y[0] - mu[a], y[1] - mu[b]]);
            let pred: Vec<f64> = (0..n)
                .map(|c| mu[c] + cov[c][a] * w[0] + cov[c][b] * w[1])
                .collect();
            let best = (0..n).max_by(|&x, &y| pred[x].total_cmp(&pred[y])).unwrap();
            hit += f64::from(u8::from(speed(best) >= 1.0 - 1e-12));
            w5 += f64::from(u8::from(speed(best) >= 0.95));
            let top = pred[best];
            let predicted: Vec<f64> = pred.iter().map(|p| libm::exp(p - top)).collect();
            for (c, p) in predicted.iter().enumerate() {
                speed_error += (p / speed(c) - 1.0).abs();
                errors += 1.0;
            }
            let truth: Vec<f64> = (0..n).map(speed).collect();
            exact += f64::from(u8::from(ranking_positions_right(&truth, &predicted) == n));
        }
    }
    let d = f64::from(draws) * m;
    println!(
        "{cluster} rank {rank} seed {seed}: prior best {:.3} w5 {:.3} | oracle-linear best {:.3} w5 {:.3} speed error {:.3} ranking exact {:.3} | second within 5% {:.3} | prior class {}",
        prior_hit / m,
        prior_w5 / m,
        hit / d,
        w5 / d,
        speed_error / errors,
        exact / d,
        ties / m,
        classes[prior_best].name
    );
}
