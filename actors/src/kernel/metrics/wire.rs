//! `Metrics` as data other processes can send: a multi-process run gathers
//! every actor's metrics from the node that hosted it.
//!
//! Metric names are `&'static str` (actors name them with literals). A
//! received name is interned once per process, so decoding needs no leak
//! per message; a process accepts at most [`MAX_NAMES`] distinct names, so a
//! peer cannot make it grow without bound.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Metrics, Steps};

/// Distinct metric names one process interns at most.
pub const MAX_NAMES: usize = 4096;

/// Longest metric name accepted from a peer.
const MAX_NAME_LEN: usize = 256;

static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn intern(name: String) -> Result<&'static str, String> {
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "metric name of {} bytes (at most {MAX_NAME_LEN})",
            name.len()
        ));
    }
    let mut names = NAMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(known) = names.get(name.as_str()) {
        return Ok(known);
    }
    if names.len() >= MAX_NAMES {
        return Err(format!("more than {MAX_NAMES} distinct metric names"));
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}

#[derive(Serialize)]
struct WireRef<'a> {
    counters: &'a BTreeMap<&'static str, u64>,
    samples: &'a BTreeMap<&'static str, Vec<f64>>,
    tallies: &'a BTreeMap<&'static str, Vec<(f64, u64)>>,
    sums: &'a BTreeMap<&'static str, f64>,
    steps: &'a BTreeMap<&'static str, Steps>,
    rows: &'a BTreeMap<&'static str, Vec<(u64, String)>>,
    wall: &'a BTreeMap<&'static str, Vec<f64>>,
}

#[derive(Deserialize)]
struct Wire {
    counters: BTreeMap<String, u64>,
    samples: BTreeMap<String, Vec<f64>>,
    tallies: BTreeMap<String, Vec<(f64, u64)>>,
    sums: BTreeMap<String, f64>,
    steps: BTreeMap<String, Steps>,
    rows: BTreeMap<String, Vec<(u64, String)>>,
    wall: BTreeMap<String, Vec<f64>>,
}

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireRef {
            counters: &self.counters,
            samples: &self.samples,
            tallies: &self.tallies,
            sums: &self.sums,
            steps: &self.steps,
            rows: &self.rows,
            wall: &self.wall,
        }
        .serialize(serializer)
    }
}

fn interned<'de, D: Deserializer<'de>, V>(
    entries: BTreeMap<String, V>,
) -> Result<BTreeMap<&'static str, V>, D::Error> {
    entries
        .into_iter()
        .map(|(k, v)| intern(k).map(|k| (k, v)).map_err(D::Error::custom))
        .collect()
}

impl<'de> Deserialize<'de> for Metrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(deserializer)?;
        Ok(Metrics {
            counters: interned::<D, _>(w.counters)?,
            samples: interned::<D, _>(w.samples)?,
            tallies: interned::<D, _>(w.tallies)?,
            sums: interned::<D, _>(w.sums)?,
            steps: interned::<D, _>(w.steps)?,
            rows: interned::<D, _>(w.rows)?,
            wall: interned::<D, _>(w.wall)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_survive_a_round_trip_through_json() {
        let mut m = Metrics::default();
        m.add("tasks", 3);
        m.sample("rt", 0.1 + 0.2);
        m.tally("latency_us", 5.0, 3);
        m.add_f64("busy", 1.5);
        m.step("servers_on", 10, crate::kernel::Step::Down);
        m.row("apps", 7, "7,a".into());
        m.wall_sample("decision_us", 2.0);
        let text = serde_json::to_string(&m).unwrap();
        let back: Metrics = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn overlong_names_are_refused() {
        let text = format!(
            r#"{{"counters":{{"{}":1}},"samples":{{}},"tallies":{{}},"sums":{{}},"steps":{{}},"rows":{{}},"wall":{{}}}}"#,
            "x".repeat(MAX_NAME_LEN + 1)
        );
        assert!(serde_json::from_str::<Metrics>(&text).is_err());
    }
}
