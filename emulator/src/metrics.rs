//! Turns what the actors reported into `metrics.json`: stable snake_case keys,
//! each documented in `docs/metrics.md`.
//!
//! Counters and totals pass through under their own names; each sample series
//! `x` becomes `x_mean`, `x_p50`, `x_p95`, `x_p99` and `x_max` (null when it
//! has no observations); a few metrics are derived from others.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;
use serde_json::Value;

use crate::engine::EngineOutput;

/// Every metric of a run, sorted by key.
pub type MetricMap = BTreeMap<String, Value>;

pub fn summarize(out: &EngineOutput) -> MetricMap {
    let merged = out.merged_metrics();
    let mut m = MetricMap::new();
    m.insert("events".into(), out.events.into());
    m.insert("virtual_end_s".into(), seconds(out.virtual_end).into());
    for (name, value) in merged.counters() {
        m.insert(name.into(), value.into());
    }
    m.insert("slot_busy_s".into(), finite(merged.sum("slot_busy_s")));
    for (name, values) in merged.samples() {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = (!sorted.is_empty()).then(|| sorted.iter().sum::<f64>() / sorted.len() as f64);
        m.insert(format!("{name}_mean"), opt(mean));
        for (suffix, q) in [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)] {
            m.insert(format!("{name}_{suffix}"), opt(percentile(&sorted, q)));
        }
        m.insert(format!("{name}_max"), opt(sorted.last().copied()));
    }
    let capacity = merged.counter("slots_total") as f64 * seconds(out.virtual_end);
    let utilization = (capacity > 0.0).then(|| merged.sum("slot_busy_s") / capacity);
    m.insert("slot_utilization_mean".into(), opt(utilization));
    m
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn seconds(t: SimTime) -> f64 {
    t as f64 / 1e9
}

fn finite(x: f64) -> Value {
    opt(Some(x))
}

fn opt(x: Option<f64>) -> Value {
    x.filter(|v| v.is_finite()).map_or(Value::Null, Value::from)
}

/// `metrics.json`: pretty-printed, keys sorted, trailing newline.
pub fn to_json(m: &MetricMap) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(m).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// `metrics.csv`: `metric,value` rows in key order (empty value for null).
pub fn to_csv(m: &MetricMap) -> Vec<u8> {
    let mut out = String::from("metric,value\n");
    for (k, v) in m {
        let v = match v {
            Value::Null => String::new(),
            other => other.to_string(),
        };
        out.push_str(&format!("{k},{v}\n"));
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

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
