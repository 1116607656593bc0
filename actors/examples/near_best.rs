//! How a scenario's catalog spreads its applications' near-best
//! configurations over Paragon's local cluster (Table V): for each
//! configuration, the share of applications for which it is within 5 % of
//! their best, and the mean share of the cluster's cores an application
//! finds within 5 % of its best. Grading and diagnosis only.
//!
//!     cargo run --release -p dcemu-actors --example near_best -- \
//!         scenarios/paragon/local-medium.toml [apps] [seed]
use dcemu_actors::ground_truth::{CatalogSpec, generate, paragon_local_cluster};
use dcemu_actors::kernel::actor_rng;

const TABLE_V_COUNTS: [u32; 10] = [1, 2, 2, 1, 5, 8, 8, 7, 5, 1];

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("give a scenario file")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let table: toml::Table = text.parse().map_err(|e| format!("{path}: {e}"))?;
    let apps_table = table.get("applications").ok_or("no [applications]")?;
    let mut spec: CatalogSpec = apps_table
        .clone()
        .try_into()
        .map_err(|e| format!("{path}: [applications]: {e}"))?;
    if let Some(n) = args.get(2) {
        spec.apps = n.parse().map_err(|e| format!("apps: {e}"))?;
    }
    let seed: u64 = args
        .get(3)
        .map_or(Ok(1), |s| s.parse())
        .map_err(|e| format!("seed: {e}"))?;
    let classes = paragon_local_cluster();
    let catalog =
        generate(&spec, &classes, &mut actor_rng(seed, "catalog")).map_err(|p| format!("{p:?}"))?;
    let total: u32 = classes
        .iter()
        .zip(TABLE_V_COUNTS)
        .map(|(c, n)| c.cores * n)
        .sum();
    let mut near = vec![0u32; classes.len()];
    let mut best = vec![0u32; classes.len()];
    let mut cores_share = 0.0;
    for app in &catalog {
        let mut cores = 0;
        for (c, &s) in app.speed.iter().enumerate() {
            if s >= 0.95 && classes[c].cores >= app.cores {
                near[c] += 1;
                cores += classes[c].cores * TABLE_V_COUNTS[c];
            }
            if s >= 1.0 - 1e-12 {
                best[c] += 1;
            }
        }
        cores_share += f64::from(cores) / f64::from(total);
    }
    let n = catalog.len() as f64;
    println!("configuration, cores in the cluster, best of, within 5 % of best for");
    for (c, class) in classes.iter().enumerate() {
        println!(
            "{:12} {:4} {:6.3} {:6.3}",
            class.name,
            class.cores * TABLE_V_COUNTS[c],
            f64::from(best[c]) / n,
            f64::from(near[c]) / n
        );
    }
    println!(
        "mean share of the cores within 5 % of an application's best: {:.3}",
        cores_share / n
    );
    Ok(())
}
