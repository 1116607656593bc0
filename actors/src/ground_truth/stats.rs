//! What a catalog looks like against a cluster: the input statistics the
//! papers report about their workloads, measured on the ground truth so that
//! `docs/reproduction.md` can show them next to the outputs.
//!
//! Grading only: these numbers reach metrics (`truth_*`, docs/metrics.md),
//! never a scheduler's decision.

use super::{AppProfile, Family};

/// One server configuration of a cluster: its catalog class index, cores
/// and how many servers of it there are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterType {
    pub class: usize,
    pub cores: u32,
    pub count: u32,
}

/// Paragon §2.2's benefit of heterogeneity-aware placement, per family (in
/// [`Family::ALL`] order): the mean over the family's applications of
/// `speed(best) / speed(random server) − 1`, where the random server is
/// drawn uniformly from the servers of `cluster` with at least the
/// application's threads in cores (where a heterogeneity-oblivious scheduler
/// could put it). `None` for a family without applications.
pub fn het_benefit(catalog: &[AppProfile], cluster: &[ClusterType]) -> [Option<f64>; 4] {
    per_family(catalog, |app| {
        let (mut sum, mut n) = (0.0, 0u64);
        for t in cluster.iter().filter(|t| t.cores >= app.cores) {
            sum += app.speed.get(t.class).copied()? * f64::from(t.count);
            n += u64::from(t.count);
        }
        (n > 0 && sum > 0.0).then(|| n as f64 / sum - 1.0)
    })
}

/// Share of each family's applications whose fastest configuration runs them
/// at least twice as fast as their slowest one, among the configurations
/// with room for their threads (Paragon §2.2: "some applications have a 2×
/// performance difference").
pub fn het_2x_share(catalog: &[AppProfile], cluster: &[ClusterType]) -> [Option<f64>; 4] {
    per_family(catalog, |app| {
        let speeds: Vec<f64> = cluster
            .iter()
            .filter(|t| t.cores >= app.cores)
            .filter_map(|t| app.speed.get(t.class).copied())
            .collect();
        let lo = speeds.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = speeds.iter().copied().fold(0.0, f64::max);
        (lo > 0.0 && lo.is_finite()).then(|| f64::from(u8::from(hi >= 2.0 * lo)))
    })
}

/// The share of the catalog whose best configuration is the most common best
/// configuration, and that configuration's share of the cluster's cores: how
/// concentrated the demand for best configurations is against their supply.
pub fn best_config_concentration(
    catalog: &[AppProfile],
    cluster: &[ClusterType],
) -> Option<(f64, f64)> {
    let classes = cluster.iter().map(|t| t.class + 1).max()?;
    let mut count = vec![0u64; classes];
    for app in catalog {
        if let Some(c) = count.get_mut(app.best_class()) {
            *c += 1;
        }
    }
    let (top, &n) = count
        .iter()
        .enumerate()
        .max_by_key(|&(i, n)| (*n, usize::MAX - i))?;
    let cores = |t: &ClusterType| u64::from(t.cores) * u64::from(t.count);
    let all: u64 = cluster.iter().map(cores).sum();
    let there: u64 = cluster.iter().filter(|t| t.class == top).map(cores).sum();
    (!catalog.is_empty() && all > 0)
        .then(|| (n as f64 / catalog.len() as f64, there as f64 / all as f64))
}

/// Every statistic above as `truth_*` metrics (docs/metrics.md); empty
/// without a catalog.
pub fn metrics(catalog: &[AppProfile], cluster: &[ClusterType]) -> Vec<(&'static str, f64)> {
    const BENEFIT: [&str; 4] = [
        "truth_het_benefit_single_threaded",
        "truth_het_benefit_multithreaded",
        "truth_het_benefit_multiprogrammed",
        "truth_het_benefit_io_bound",
    ];
    let mut out = Vec::new();
    if catalog.is_empty() {
        return out;
    }
    for (name, b) in BENEFIT.iter().zip(het_benefit(catalog, cluster)) {
        if let Some(b) = b {
            out.push((*name, b));
        }
    }
    let two_x: Vec<f64> = het_2x_share(catalog, cluster)
        .into_iter()
        .flatten()
        .collect();
    let counts: Vec<f64> = Family::ALL
        .iter()
        .map(|f| catalog.iter().filter(|a| a.family == *f).count() as f64)
        .collect();
    let weighted: f64 = het_2x_share(catalog, cluster)
        .iter()
        .zip(&counts)
        .filter_map(|(s, n)| s.map(|s| s * n))
        .sum();
    if !two_x.is_empty() {
        out.push(("truth_het_2x_fraction", weighted / catalog.len() as f64));
    }
    if let Some((apps, cores)) = best_config_concentration(catalog, cluster) {
        out.push(("truth_best_config_top_fraction", apps));
        out.push(("truth_best_config_top_cores_fraction", cores));
    }
    out
}

fn per_family(
    catalog: &[AppProfile],
    value: impl Fn(&AppProfile) -> Option<f64>,
) -> [Option<f64>; 4] {
    std::array::from_fn(|i| {
        let family = Family::ALL[i];
        let values: Vec<f64> = catalog
            .iter()
            .filter(|a| a.family == family)
            .filter_map(&value)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    })
}
