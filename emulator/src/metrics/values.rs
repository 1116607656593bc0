//! What `metrics.rs` and `metrics/hpc.rs` both build with: the metric map,
//! percentiles, and a number as a JSON value (a leaf, so that neither
//! imports the other's helpers).

use std::collections::BTreeMap;

use serde_json::Value;

/// Every metric of a run, sorted by key.
pub type MetricMap = BTreeMap<String, Value>;

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A finite number, else null.
pub(super) fn opt(x: Option<f64>) -> Value {
    x.filter(|v| v.is_finite()).map_or(Value::Null, Value::from)
}
