//! A replayed SWF log's machine-level figures (issue 41), from what the
//! tenants and servers reported ([`dcemu_actors::hpc_jobs`]): busy
//! processors over time (`utilisation.csv`), the log's utilisation, and
//! its jobs' wait, response and bounded slowdown per size class.

use dcemu_actors::hpc_jobs::{
    RESPONSE_BY_SIZE, SIZE_CLASSES, SLOWDOWN_BY_SIZE, WAIT_BY_SIZE, bin_width,
};
use dcemu_actors::kernel::Metrics;
use dcemu_topology::SimTime;
use serde_json::Value;

use super::values::{MetricMap, opt, percentile};

/// Header of `utilisation.csv`.
pub const UTILISATION_HEADER: &str = "t_s,busy_procs,utilisation";

/// Sample series that only feed the figures here, never `metrics.json`
/// directly: the span's ends and the per-size series (nested instead).
pub(super) fn internal(name: &str) -> bool {
    matches!(name, "hpc_first_submit_s" | "hpc_last_end_s")
        || WAIT_BY_SIZE.contains(&name)
        || RESPONSE_BY_SIZE.contains(&name)
        || SLOWDOWN_BY_SIZE.contains(&name)
}

/// Busy processor-time per bin, proc·ns, summed over the actors' rows of
/// the table `utilisation` (integers: exact whatever the merge order).
fn bins(merged: &Metrics) -> Option<std::collections::BTreeMap<u64, u128>> {
    let (_, rows) = merged.rows().find(|(name, _)| *name == "utilisation")?;
    let mut bins = std::collections::BTreeMap::new();
    for (bin, line) in rows {
        *bins.entry(*bin).or_insert(0u128) += line.parse::<u128>().unwrap_or(0);
    }
    Some(bins)
}

/// `utilisation.csv` of a run over `[0, horizon)`, when an SWF log was
/// replayed: per bin of [`bin_width`], its start, the mean number of busy
/// processors over it, and that over the machine's processors (the
/// servers' cores, `cores_total`).
pub(super) fn utilisation_csv(merged: &Metrics, horizon: SimTime) -> Option<Vec<u8>> {
    let bins = bins(merged)?;
    let width = bin_width(horizon);
    let procs = merged.counter("cores_total") as f64;
    let n = horizon.div_ceil(width).max(1);
    let mut text = format!("{UTILISATION_HEADER}\n");
    for bin in 0..n {
        let from = bin * width;
        let len = (horizon.saturating_sub(from)).clamp(1, width);
        let busy = bins.get(&bin).copied().unwrap_or(0) as f64 / len as f64;
        let share = if procs > 0.0 {
            (busy / procs).to_string()
        } else {
            String::new()
        };
        text.push_str(&format!("{},{busy},{share}\n", from as f64 / 1e9));
    }
    Some(text.into_bytes())
}

/// Inserts, when an SWF log was replayed, `hpc_busy_proc_s` (processor-
/// seconds of its jobs: the finished ones over their run, those running at
/// the end up to it), `hpc_span_s` (first submission to last end, or to
/// the run's end when jobs were left unfinished), `hpc_utilisation` (busy
/// over processors × span, as the Parallel Workloads Archive rates a log)
/// and `hpc_jobs_by_size`.
pub(super) fn insert(m: &mut MetricMap, merged: &Metrics) {
    if let Some(bins) = bins(merged) {
        let busy_ns: u128 = bins.values().sum();
        let busy_s = busy_ns as f64 / 1e9;
        m.insert("hpc_busy_proc_s".into(), opt(Some(busy_s)));
        let first = merged
            .samples_of("hpc_first_submit_s")
            .iter()
            .copied()
            .reduce(f64::min);
        let last = merged
            .samples_of("hpc_last_end_s")
            .iter()
            .copied()
            .reduce(f64::max);
        let span = first.zip(last).map(|(a, b)| b - a);
        m.insert("hpc_span_s".into(), opt(span));
        let procs = merged.counter("cores_total") as f64;
        let share = span
            .filter(|&s| s > 0.0 && procs > 0.0)
            .map(|s| busy_s / (procs * s));
        m.insert("hpc_utilisation".into(), opt(share));
    }
    if merged.samples().any(|(name, _)| name == WAIT_BY_SIZE[0]) {
        let by_size = SIZE_CLASSES
            .iter()
            .enumerate()
            .map(|(i, (_, class))| {
                let mut c = serde_json::Map::new();
                let waits = merged.samples_of(WAIT_BY_SIZE[i]);
                c.insert("jobs".into(), waits.len().into());
                for (name, series) in [
                    ("wait_s", WAIT_BY_SIZE[i]),
                    ("response_s", RESPONSE_BY_SIZE[i]),
                    ("bounded_slowdown", SLOWDOWN_BY_SIZE[i]),
                ] {
                    let mut sorted = merged.samples_of(series).to_vec();
                    sorted.sort_by(f64::total_cmp);
                    let mean = (!sorted.is_empty())
                        .then(|| sorted.iter().sum::<f64>() / sorted.len() as f64);
                    c.insert(format!("{name}_mean"), opt(mean));
                    c.insert(format!("{name}_p50"), opt(percentile(&sorted, 0.5)));
                    c.insert(format!("{name}_p95"), opt(percentile(&sorted, 0.95)));
                }
                ((*class).to_string(), Value::Object(c))
            })
            .collect();
        m.insert("hpc_jobs_by_size".into(), Value::Object(by_size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: SimTime = 1_000_000_000;

    #[test]
    fn utilisation_sums_the_actors_rows_per_bin_over_the_machine() {
        let mut m = Metrics::default();
        m.add("cores_total", 4);
        m.row("utilisation", 0, (4 * S).to_string());
        m.row("utilisation", 2, (2 * S).to_string());
        m.row("utilisation", 0, (2 * S).to_string());
        m.sample("hpc_first_submit_s", 0.0);
        m.sample("hpc_last_end_s", 3.0);
        let csv = String::from_utf8(utilisation_csv(&m, 3 * S / 2 + S).expect("csv")).unwrap();
        assert_eq!(
            csv, "t_s,busy_procs,utilisation\n0,6,1.5\n1,0,0\n2,4,1\n",
            "the last bin is half a second long"
        );
        let mut out = MetricMap::new();
        insert(&mut out, &m);
        assert_eq!(out["hpc_busy_proc_s"], 8.0);
        assert_eq!(out["hpc_span_s"], 3.0);
        assert_eq!(out["hpc_utilisation"], 8.0 / 12.0);
        assert!(!out.contains_key("hpc_jobs_by_size"));
        assert!(utilisation_csv(&Metrics::default(), S).is_none());
    }
}
