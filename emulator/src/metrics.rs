//! Turns what the actors reported into `metrics.json`: stable snake_case keys,
//! each documented in `docs/metrics.md`.
//!
//! Counters and totals pass through under their own names; each sample series
//! `x` becomes `x_mean`, `x_p10`, `x_p50`, `x_p95`, `x_p99` and `x_max` (null
//! when it has no observations); a few metrics are derived from others.

use dcemu_topology::SimTime;
use serde_json::Value;

use dcemu_actors::kernel::{Metrics, Steps};

use crate::engine::EngineOutput;

mod hpc;
mod values;

use values::opt;
pub use values::{MetricMap, percentile};

/// Metrics that appear in every run, 0 when nothing produced them (a flat
/// network has no switches), so `metrics.json` has the same keys everywhere.
const ALWAYS: &[&str] = &[
    "apps_completed",
    "apps_qos_met",
    "apps_submitted",
    "dropped_tasks",
    "evicted_tasks",
    "evictions_memory",
    "evictions_per_task_max",
    "evictions_priority",
    "evictions_total",
    "killed_containers",
    "packets_forwarded",
    "priority_evicted_tasks",
    "priority_evictions_per_task_max",
    "reimages",
    "replicas_lost_reimage",
    "server_reports",
    "tasks_acknowledged",
    "tasks_completed",
    "tasks_dispatched",
    "tasks_in_transit_end",
    "tasks_queued_end",
    "tasks_migrating_end",
    "tasks_requeued",
    "tasks_running_end",
    "tasks_submitted",
    "tasks_waiting_wake_end",
    "wake_ups_server",
    "wake_ups_switch",
];

/// Step series that appear in every run (see [`Metrics::step`]).
const ALWAYS_STEPS: &[&str] = &["servers_on", "switches_on"];

/// `a` of the weights `w = K + a` of the V metric (thesis eq. 6.5 asks for
/// `a > 2` so that class 0 still counts).
pub const V_WEIGHT_OFFSET: f64 = 3.0;

/// The thesis's V (eq. 6.5): mean over the priority classes that completed
/// tasks of `(class + a) × R(class)`, independent of how many tasks each
/// class has.
fn v_metric(by_class: &serde_json::Map<String, Value>) -> Option<f64> {
    let terms: Vec<f64> = by_class
        .iter()
        .filter_map(|(class, mean)| {
            let class: f64 = class.parse::<u8>().ok()?.into();
            Some((class + V_WEIGHT_OFFSET) * mean.as_f64()?)
        })
        .collect();
    (!terms.is_empty()).then(|| terms.iter().sum::<f64>() / terms.len() as f64)
}

/// Summarises a run over `[0, horizon)` (the run's end) from its merged
/// metrics (see [`EngineOutput::take_metrics`]), and samples every step
/// series each `interval` for `timeseries.csv`.
pub fn summarize(
    out: &EngineOutput,
    mut merged: Metrics,
    horizon: SimTime,
    interval: SimTime,
) -> (MetricMap, Vec<u8>) {
    let mut m = MetricMap::new();
    m.insert("events".into(), out.events.into());
    m.insert("virtual_end_s".into(), seconds(out.virtual_end).into());
    for name in ALWAYS {
        m.insert((*name).into(), 0.into());
    }
    for (name, value) in merged.counters() {
        m.insert(name.into(), value.into());
    }
    for (name, value) in merged.sums() {
        m.insert(name.into(), finite(value));
    }
    for (name, values) in merged.samples() {
        if name == "task_done_last_s" || hpc::internal(name) {
            continue;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = (!sorted.is_empty()).then(|| sorted.iter().sum::<f64>() / sorted.len() as f64);
        insert_distribution(&mut m, name, mean, |q| percentile(&sorted, q));
    }
    for (name, pairs) in merged.tallies() {
        let mut sorted = pairs.to_vec();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n: u64 = sorted.iter().map(|&(_, c)| c).sum();
        let mean =
            (n > 0).then(|| sorted.iter().map(|&(v, c)| v * c as f64).sum::<f64>() / n as f64);
        insert_distribution(&mut m, name, mean, |q| tallied_percentile(&sorted, n, q));
    }
    let by_class: serde_json::Map<String, Value> = merged
        .samples()
        .filter_map(|(name, values)| {
            let class = name.strip_prefix("response_s_class_")?;
            let mean =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            Some((class.to_string(), opt(mean)))
        })
        .collect();
    m.insert("v_metric".into(), opt(v_metric(&by_class)));
    m.insert("response_s_by_class".into(), Value::Object(by_class));
    m.insert(
        "evictions_per_evicted_task_mean".into(),
        opt(counter_ratio(&merged, "evictions_total", "evicted_tasks")),
    );
    m.insert(
        "priority_evictions_per_evicted_task_mean".into(),
        opt(counter_ratio(
            &merged,
            "evictions_priority",
            "priority_evicted_tasks",
        )),
    );
    // share of the slot stage's priority evictions that hit class 0
    // (thesis §8.2.1, §9.3.1: all of them on SC3, SC4 and WASC); null
    // when the slot stage preempted nothing
    if merged.counters().any(|(name, _)| name == "preemptions") {
        m.insert(
            "preemptions_class0_victim_fraction".into(),
            opt(counter_ratio(
                &merged,
                "preemptions_class0_victim",
                "preemptions",
            )),
        );
    }
    // each class's share of the tasks a Google-like generator drew
    // (thesis Table 5.2's class mix); only where one ran
    for (name, n) in merged.counters() {
        if let Some(class) = name.strip_prefix("tasks_submitted_class_") {
            let total = merged.counter("tasks_submitted");
            if total > 0 {
                m.insert(
                    format!("task_share_class_{class}"),
                    finite(n as f64 / total as f64),
                );
            }
        }
    }
    let mut steps = merged.take_steps();
    for name in ALWAYS_STEPS {
        steps.entry(name).or_default();
    }
    let series: Vec<(&str, Steps)> = steps.into_iter().collect();
    for (name, changes) in &series {
        let (mean, max) = sweep(changes, horizon);
        m.insert(format!("{name}_mean"), finite(mean));
        m.insert(format!("{name}_max"), max.into());
    }
    // thesis Table 4.2's "average on switches": in on mode, not idle
    if merged.sums().any(|(name, _)| name == "switch_active_s") && horizon > 0 {
        m.insert(
            "switches_active_mean".into(),
            finite(merged.sum("switch_active_s") / seconds(horizon)),
        );
    }
    let capacity = merged.counter("slots_total") as f64 * seconds(horizon);
    let utilization = (capacity > 0.0).then(|| merged.sum("slot_busy_s") / capacity);
    m.insert("slot_utilization_mean".into(), opt(utilization));
    m.insert("wasted_cpu_s".into(), finite(merged.sum("wasted_cpu_s")));
    let core_capacity = merged.counter("cores_total") as f64 * seconds(horizon);
    let cpu = (core_capacity > 0.0).then(|| merged.sum("cpu_busy_core_s") / core_capacity);
    m.insert("utilization_cpu_mean".into(), opt(cpu));
    let primary_capacity = merged.counter("primary_cores_total") as f64 * seconds(horizon);
    let primary = (primary_capacity > 0.0).then(|| merged.sum("primary_core_s") / primary_capacity);
    m.insert("primary_utilization_mean".into(), opt(primary));
    let sum_ratio = |num: &str, den: &str| {
        let d = merged.sum(den);
        (d > 0.0).then(|| merged.sum(num) / d)
    };
    m.insert(
        "utilization_cpu_on_mean".into(),
        opt(sum_ratio("cpu_busy_core_s", "on_core_s")),
    );
    m.insert(
        "utilization_mem_on_mean".into(),
        opt(sum_ratio("memory_used_mb_s", "on_memory_mb_s")),
    );
    // harvesting §6.3's primary tail latency, by proxy: the mean share of
    // its reserve a primary tenant found held by containers when its use
    // changed (docs/metrics.md)
    let updates = merged.counter("primary_updates");
    let taken = (updates > 0).then(|| merged.sum("primary_reserve_taken") / updates as f64);
    m.insert("primary_tail_latency_proxy".into(), opt(taken));
    if merged.counter("primary_tenants") > 0 {
        // harvesting §3.2-3.3's input statistics (docs/metrics.md)
        for class in ["periodic", "constant", "unpredictable"] {
            m.insert(
                format!("primary_tenants_{class}_fraction"),
                opt(counter_ratio(
                    &merged,
                    &format!("primary_tenants_{class}"),
                    "primary_tenants",
                )),
            );
            m.insert(
                format!("primary_servers_{class}_fraction"),
                opt(counter_ratio(
                    &merged,
                    &format!("primary_servers_{class}"),
                    "primary_servers",
                )),
            );
        }
        let predictable =
            merged.counter("primary_servers_periodic") + merged.counter("primary_servers_constant");
        let servers = merged.counter("primary_servers");
        m.insert(
            "primary_servers_predictable_fraction".into(),
            opt((servers > 0).then(|| predictable as f64 / servers as f64)),
        );
        m.insert(
            "reimage_servers_monthly_or_less_fraction".into(),
            opt(counter_ratio(
                &merged,
                "reimage_servers_monthly_or_less",
                "primary_servers",
            )),
        );
        m.insert(
            "reimage_tenants_monthly_or_less_fraction".into(),
            opt(counter_ratio(
                &merged,
                "reimage_tenants_monthly_or_less",
                "primary_tenants",
            )),
        );
    }
    if m.contains_key("dist_settings_total") {
        // distributed applications (ASPLOS'16 §4.2, §5.2)
        let total = merged.counter("dist_settings_total");
        let cost =
            (total > 0).then(|| merged.counter("dist_settings_measured") as f64 / total as f64);
        m.insert("dist_profiling_cost_fraction".into(), opt(cost));
        let targets = merged.counter("dist_qos_targets");
        let met =
            (targets > 0).then(|| merged.counter("dist_qos_targets_met") as f64 / targets as f64);
        m.insert("dist_qos_met".into(), opt(met));
    }
    let apps = merged.counter("apps_completed");
    let qos = (apps > 0).then(|| merged.counter("apps_qos_met") as f64 / apps as f64);
    m.insert("qos_met_fraction".into(), opt(qos));
    for (count, key) in [
        ("apps_het_ok", "decision_het_ok_fraction"),
        ("apps_intf_ok", "decision_intf_ok_fraction"),
    ] {
        if apps > 0 && m.contains_key(count) {
            m.insert(
                key.into(),
                opt(Some(merged.counter(count) as f64 / apps as f64)),
            );
        }
    }
    if m.contains_key("blocks_total") {
        // harvested storage (harvesting §6.4): only with a name node
        m.insert(
            "blocks_lost_fraction".into(),
            opt(counter_ratio(&merged, "blocks_lost", "blocks_total")),
        );
        m.insert(
            "failed_access_fraction".into(),
            opt(counter_ratio(&merged, "failed_accesses", "block_reads")),
        );
    }
    let perf = merged.samples_of("perf_norm");
    let degraded = (!perf.is_empty())
        .then(|| perf.iter().filter(|&&p| p < 0.9).count() as f64 / perf.len() as f64);
    m.insert("degraded_over_10pct_fraction".into(), opt(degraded));
    let response = merged.samples_of("perf_norm_response");
    let share_of = |pred: &dyn Fn(f64) -> bool| {
        (!response.is_empty())
            .then(|| response.iter().filter(|&&p| pred(p)).count() as f64 / response.len() as f64)
    };
    m.insert(
        "qos_met_response_fraction".into(),
        opt(share_of(&|p| p >= 0.95)),
    );
    m.insert(
        "degraded_over_10pct_response_fraction".into(),
        opt(share_of(&|p| p < 0.9)),
    );
    let classified = merged.counter("apps_classified");
    let share = |hits: f64| (classified > 0).then(|| hits / classified as f64);
    m.insert(
        "class_best_config_fraction".into(),
        opt(share(merged.counter("class_best_config_hits") as f64)),
    );
    m.insert(
        "class_within_5pct_fraction".into(),
        opt(share(merged.counter("class_within_5pct_hits") as f64)),
    );
    // Only where something was classified, so that runs without a catalog
    // keep the metrics (and digests) they had before these grades existed.
    if classified > 0 {
        for (key, hits) in [
            ("class_rank_exact_fraction", "class_rank_exact_hits"),
            ("class_rank_almost_fraction", "class_rank_almost_hits"),
            ("class_rank_50pct_fraction", "class_rank_50pct_hits"),
        ] {
            m.insert(key.into(), opt(share(merged.counter(hits) as f64)));
        }
    }
    m.insert(
        "class_best_config_chance_fraction".into(),
        opt(share(merged.sum("class_best_config_chance_hits"))),
    );
    let server_j = merged.sum("energy_j_server");
    let network_j = merged.sum("energy_j_network");
    m.insert("energy_kwh_server".into(), finite(server_j / 3.6e6));
    m.insert("energy_kwh_network".into(), finite(network_j / 3.6e6));
    for tier in ["core", "aggregation", "access"] {
        let j = merged.sum(&format!("energy_j_switch_{tier}"));
        m.insert(format!("energy_kwh_network_{tier}"), finite(j / 3.6e6));
    }
    m.insert(
        "energy_kwh_total".into(),
        finite((server_j + network_j) / 3.6e6),
    );
    hpc::insert(&mut m, &merged);
    active_figures(&mut m, &merged, out.virtual_end, horizon);
    (m, timeseries(&series, horizon, interval))
}

/// What a run that ran out of events did while it was active: every
/// total and mean above covers `[0, horizon)` (`horizon_s`, the scenario's
/// `run.end`), idle tail included. `makespan_s` is when the last task
/// finished; the `_active` figures cover `[0, virtual_end)`, up to the
/// run's last event (its last completion and what followed it: the
/// release, servers going to sleep). Nothing changes after the last event,
/// so each is its total less what the devices drew, and the cores and
/// slots held, at the end, over the idle tail.
fn active_figures(m: &mut MetricMap, merged: &Metrics, virtual_end: SimTime, horizon: SimTime) {
    let total_s = seconds(horizon);
    let active_s = seconds(virtual_end.min(horizon));
    let tail_s = total_s - active_s;
    m.insert("horizon_s".into(), finite(total_s));
    let last = merged
        .samples_of("task_done_last_s")
        .iter()
        .copied()
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    m.insert("makespan_s".into(), opt(last));
    let power_end = merged.sum("power_w_end_server") + merged.sum("power_w_end_network");
    let joules = merged.sum("energy_j_server") + merged.sum("energy_j_network");
    m.insert(
        "energy_kwh_total_active".into(),
        finite((joules - power_end * tail_s).max(0.0) / 3.6e6),
    );
    let mean_over = |busy: f64, at_end: f64, capacity: f64| {
        (capacity > 0.0 && active_s > 0.0)
            .then(|| ((busy - at_end * tail_s) / (capacity * active_s)).max(0.0))
    };
    m.insert(
        "utilization_cpu_mean_active".into(),
        opt(mean_over(
            merged.sum("cpu_busy_core_s"),
            merged.sum("busy_cores_end"),
            merged.counter("cores_total") as f64,
        )),
    );
    m.insert(
        "slot_utilization_mean_active".into(),
        opt(mean_over(
            merged.sum("slot_busy_s"),
            merged.counter("tasks_running_end") as f64,
            merged.counter("slots_total") as f64,
        )),
    );
}

/// Means of the wall-clock series the actors measured, as `<name>_mean`
/// (for `run.json`: machine-dependent, never digested).
pub fn wall_means(merged: &Metrics) -> MetricMap {
    merged
        .walls()
        .map(|(name, values)| {
            let mean =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            (format!("{name}_mean"), opt(mean))
        })
        .collect()
}

/// Header of each table of rows the actors report (see
/// [`dcemu_actors::kernel::Metrics::row`]).
pub fn table_header(name: &str) -> Option<&'static str> {
    match name {
        "applications" => Some("task,app,family,server,server_type,ran_ns,perf_norm,speed"),
        "distributed" => {
            Some("run,app,name,units,servers,qos_perf,solo_s,runtime_s,norm_runtime,qos_met")
        }
        "reservations" => Some("task,reserved_s"),
        "jobs" => Some("job,procs,submit_s,wait_s,run_s,response_s,bounded_slowdown"),
        "utilisation" => Some(hpc::UTILISATION_HEADER),
        _ => None,
    }
}

/// The tables of rows as CSV files (`<name>.csv`), rows sorted by key; a
/// run over `[0, horizon)`.
pub fn tables(merged: &Metrics, horizon: SimTime) -> Vec<(String, Vec<u8>)> {
    merged
        .rows()
        .filter_map(|(name, rows)| {
            if name == "perf_over_time" {
                return Some((format!("{name}.csv"), perf_over_time(rows)));
            }
            if name == "utilisation" {
                return Some((
                    format!("{name}.csv"),
                    hpc::utilisation_csv(merged, horizon)?,
                ));
            }
            let header = table_header(name)?;
            let mut rows = rows.to_vec();
            rows.sort_by_key(|(key, _)| *key);
            let mut text = format!("{header}\n");
            for (_, line) in rows {
                text.push_str(&line);
                text.push('\n');
            }
            Some((format!("{name}.csv"), text.into_bytes()))
        })
        .collect()
}

/// `perf_over_time.csv` (Paragon Fig. 10(d)): per bin of
/// [`PERF_BIN`](dcemu_actors::server::PERF_BIN), the running applications'
/// mean performance normalised to ideal, from the servers' `sum,samples`
/// rows, summed in merge order (actor-id order) so the floats do not depend
/// on the partitioning.
fn perf_over_time(rows: &[(u64, String)]) -> Vec<u8> {
    let mut bins: std::collections::BTreeMap<u64, (f64, u64)> = Default::default();
    for (bin, line) in rows {
        let mut fields = line.split(',');
        let sum: f64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0.0);
        let n: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        let e = bins.entry(*bin).or_insert((0.0, 0));
        e.0 += sum;
        e.1 += n;
    }
    let width = dcemu_actors::server::PERF_BIN as f64 / 1e9;
    let mut text = String::from("time_s,samples,perf_mean\n");
    for (bin, (sum, n)) in bins {
        text.push_str(&format!(
            "{},{n},{}\n",
            bin as f64 * width,
            sum / n.max(1) as f64
        ));
    }
    text.into_bytes()
}

/// Time-weighted mean over `[0, horizon)` and exact maximum of a count given
/// by sorted changes (at equal times decreases come first, so a device going
/// to sleep as another wakes never counts twice).
fn sweep(changes: &Steps, horizon: SimTime) -> (f64, i64) {
    let (mut count, mut max, mut last, mut area) = (0i64, 0i64, 0u64, 0f64);
    for (t, d) in changes.iter() {
        let t = t.min(horizon);
        area += count as f64 * (t - last) as f64;
        last = t;
        count += d;
        max = max.max(count);
    }
    area += count as f64 * horizon.saturating_sub(last) as f64;
    let mean = if horizon > 0 {
        area / horizon as f64
    } else {
        0.0
    };
    (mean, max)
}

/// `time_s,<series>...`: each series' count at `0, interval, 2·interval, …, horizon`.
fn timeseries(series: &[(&str, Steps)], horizon: SimTime, interval: SimTime) -> Vec<u8> {
    let mut out = String::from("time_s");
    for (name, _) in series {
        out.push(',');
        out.push_str(name);
    }
    out.push('\n');
    let interval = interval.max(1);
    let mut cursors: Vec<_> = series
        .iter()
        .map(|(_, changes)| (changes.iter().peekable(), 0i64))
        .collect();
    let mut t = 0u64;
    loop {
        out.push_str(&format!("{}", seconds(t)));
        for (changes, count) in &mut cursors {
            while let Some((_, d)) = changes.next_if(|&(at, _)| at <= t) {
                *count += d;
            }
            out.push_str(&format!(",{count}"));
        }
        out.push('\n');
        match t.checked_add(interval) {
            Some(next) if next <= horizon => t = next,
            _ => break,
        }
    }
    out.into_bytes()
}

/// `<name>_mean`, `_p10` … `_p99` and `_max` of a distribution.
fn insert_distribution(
    m: &mut MetricMap,
    name: &str,
    mean: Option<f64>,
    quantile: impl Fn(f64) -> Option<f64>,
) {
    m.insert(format!("{name}_mean"), opt(mean));
    for (suffix, q) in [
        ("p10", 0.10),
        ("p50", 0.50),
        ("p90", 0.90),
        ("p95", 0.95),
        ("p99", 0.99),
        ("max", 1.0),
    ] {
        m.insert(format!("{name}_{suffix}"), opt(quantile(q)));
    }
}

/// Nearest-rank percentile of `(value, count)` pairs sorted by value,
/// `n` observations in all: what [`percentile`] gives on the expanded values.
pub fn tallied_percentile(sorted: &[(f64, u64)], n: u64, q: f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for &(v, c) in sorted {
        seen += c;
        if seen >= rank {
            return Some(v);
        }
    }
    sorted.last().map(|&(v, _)| v)
}

fn seconds(t: SimTime) -> f64 {
    t as f64 / 1e9
}

fn finite(x: f64) -> Value {
    opt(Some(x))
}

/// `metrics.json`: pretty-printed, keys sorted, trailing newline.
pub fn to_json(m: &MetricMap) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(m).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// `metrics.csv`: `metric,value` rows in key order (empty value for null;
/// an object such as `response_s_by_class` as quoted JSON).
pub fn to_csv(m: &MetricMap) -> Vec<u8> {
    let mut out = String::from("metric,value\n");
    for (k, v) in m {
        let v = match v {
            Value::Null => String::new(),
            Value::Object(_) | Value::Array(_) => {
                format!("\"{}\"", v.to_string().replace('"', "\"\""))
            }
            other => other.to_string(),
        };
        out.push_str(&format!("{k},{v}\n"));
    }
    out.into_bytes()
}

/// Counter `num` over counter `den`; none while `den` is 0.
fn counter_ratio(merged: &Metrics, num: &str, den: &str) -> Option<f64> {
    let d = merged.counter(den);
    (d > 0).then(|| merged.counter(num) as f64 / d as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcemu_actors::kernel::Step::{self, Down, Up};

    fn steps(changes: &[(SimTime, Step)]) -> Steps {
        let mut s = Steps::default();
        for &(t, step) in changes {
            s.push(t, step);
        }
        s
    }

    #[test]
    fn performance_over_time_sums_servers_per_bin() {
        let rows = vec![
            (1, "1.5,2".to_string()),
            (0, "0.5,1".to_string()),
            (1, "0.5,2".to_string()),
        ];
        let csv = String::from_utf8(perf_over_time(&rows)).unwrap();
        assert_eq!(csv, "time_s,samples,perf_mean\n0,1,0.5\n60,4,0.5\n");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&[7.0], 0.0), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn sweep_gives_exact_time_weighted_mean_and_max() {
        // one device on for [0, 10), another for [5, 20), horizon 20
        let changes = steps(&[(0, Up), (10, Down), (5, Up), (20, Down)]);
        let (mean, max) = sweep(&changes, 20);
        assert_eq!(max, 2);
        assert_eq!(mean, (10.0 + 15.0) / 20.0);
        // a hand-over at the same instant between two devices is not an
        // overlap: decreases come first at equal times
        let mut changes = steps(&[(0, Up), (7, Down)]);
        changes.append(steps(&[(7, Up)]));
        let (mean, max) = sweep(&changes, 20);
        assert_eq!(max, 1);
        assert_eq!(mean, 1.0);
    }

    #[test]
    fn timeseries_samples_the_count_at_each_interval() {
        let series = vec![(
            "servers_on",
            steps(&[(0, Up), (0, Up), (1_500_000_000, Down)]),
        )];
        let csv = String::from_utf8(timeseries(&series, 3_000_000_000, 1_000_000_000)).unwrap();
        assert_eq!(csv, "time_s,servers_on\n0,2\n1,2\n2,1\n3,1\n");
    }

    #[test]
    fn csv_quotes_objects() {
        let mut m = MetricMap::new();
        m.insert("by".into(), serde_json::json!({"0": 1.5}));
        assert_eq!(
            String::from_utf8(to_csv(&m)).unwrap(),
            "metric,value\nby,\"{\"\"0\"\":1.5}\"\n"
        );
    }

    #[test]
    fn csv_has_one_row_per_metric_and_blank_nulls() {
        let mut m = MetricMap::new();
        m.insert("a".into(), 1.into());
        m.insert("b".into(), Value::Null);
        assert_eq!(
            String::from_utf8(to_csv(&m)).unwrap(),
            "metric,value\na,1\nb,\n"
        );
    }
}
