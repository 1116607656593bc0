use std::collections::BTreeMap;

use dcemu_topology::SimTime;

mod merge;
mod steps;
mod wire;

use merge::extend_or_take;

pub use steps::{Step, Steps};

/// What actors report at the end of a run: counters and samples by metric
/// name. The engine merges every actor's `Metrics` in actor-id order, so the
/// merged result (and the floats computed from it) is the same however the
/// actors were partitioned.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Metrics {
    counters: BTreeMap<&'static str, u64>,
    samples: BTreeMap<&'static str, Vec<f64>>,
    /// Distributions kept as `(value, count)`: observations that repeat a
    /// lot (every message's latency) at a memory cost of distinct values.
    tallies: BTreeMap<&'static str, Vec<(f64, u64)>>,
    sums: BTreeMap<&'static str, f64>,
    steps: BTreeMap<&'static str, Steps>,
    rows: BTreeMap<&'static str, Vec<(u64, String)>>,
    /// Wall-clock measurements (e.g. the cost of a scheduling decision):
    /// machine-dependent, so they go to `run.json`, never to the digest.
    wall: BTreeMap<&'static str, Vec<f64>>,
}

impl Metrics {
    /// Heap bytes these metrics hold, counted from their collections'
    /// capacities (each map entry as its key and value; a map's own nodes
    /// are left out): the share of an actor's memory that `finish` moved
    /// into its metrics.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        fn entries<K, V>(m: &BTreeMap<K, V>) -> usize {
            m.len() * (size_of::<K>() + size_of::<V>())
        }
        fn values<K, T>(m: &BTreeMap<K, Vec<T>>) -> usize {
            m.values().map(|v| v.capacity() * size_of::<T>()).sum()
        }
        entries(&self.counters)
            + entries(&self.samples)
            + values(&self.samples)
            + entries(&self.tallies)
            + values(&self.tallies)
            + entries(&self.sums)
            + entries(&self.steps)
            + self.steps.values().map(Steps::heap_bytes).sum::<usize>()
            + entries(&self.rows)
            + values(&self.rows)
            + self
                .rows
                .values()
                .flatten()
                .map(|(_, s)| s.capacity())
                .sum::<usize>()
            + entries(&self.wall)
            + values(&self.wall)
    }

    /// Adds to a counter (creating it at 0).
    pub fn add(&mut self, name: &'static str, value: u64) {
        *self.counters.entry(name).or_insert(0) += value;
    }

    /// Records one observation of a distribution (summarised as mean and
    /// percentiles in `metrics.json`).
    pub fn sample(&mut self, name: &'static str, value: f64) {
        self.samples.entry(name).or_default().push(value);
    }

    /// Records `count` observations of `value` in a distribution summarised
    /// like [`Self::sample`]'s (mean and nearest-rank percentiles).
    pub fn tally(&mut self, name: &'static str, value: f64, count: u64) {
        let t = self.tallies.entry(name).or_default();
        if count > 0 {
            t.push((value, count));
        }
    }

    /// Appends observations of a distribution kept elsewhere during the run,
    /// without copying them when `name` has none yet. Like
    /// [`Self::declare_samples`], it creates the series even from no values.
    pub fn append_samples(&mut self, name: &'static str, values: Vec<f64>) {
        extend_or_take(self.samples.entry(name).or_default(), values);
    }

    /// Ensures a distribution exists even if it got no observations.
    pub fn declare_samples(&mut self, name: &'static str) {
        self.samples.entry(name).or_default();
    }

    /// Adds to a floating-point total (e.g. busy slot-seconds).
    pub fn add_f64(&mut self, name: &'static str, value: f64) {
        *self.sums.entry(name).or_insert(0.0) += value;
    }

    /// Records that a count (e.g. of powered servers) changes by one at `t`;
    /// summed over actors it gives the count over time.
    pub fn step(&mut self, name: &'static str, t: SimTime, step: Step) {
        self.steps.entry(name).or_default().push(t, step);
    }

    /// Appends a whole history of changes to the count `name`, without
    /// copying it when `name` has none yet (and creates the series even
    /// from no changes).
    pub fn append_steps(&mut self, name: &'static str, steps: Steps) {
        self.steps.entry(name).or_default().append(steps);
    }

    /// Ensures a step series exists even if nothing changed.
    pub fn declare_steps(&mut self, name: &'static str) {
        self.steps.entry(name).or_default();
    }

    /// Adds a row (CSV fields, no newline) to the table `name`; tables are
    /// written sorted by `key` (e.g. a task id).
    pub fn row(&mut self, name: &'static str, key: u64, line: String) {
        self.rows.entry(name).or_default().push((key, line));
    }

    /// Records a wall-clock observation (kept out of the digested results).
    pub fn wall_sample(&mut self, name: &'static str, value: f64) {
        self.wall.entry(name).or_default().push(value);
    }

    /// Appends wall-clock observations kept elsewhere during the run (and
    /// creates the series even from no values).
    pub fn append_wall_samples(&mut self, name: &'static str, values: Vec<f64>) {
        extend_or_take(self.wall.entry(name).or_default(), values);
    }

    /// Wall-clock series, in merge order.
    pub fn walls(&self) -> impl Iterator<Item = (&'static str, &[f64])> + '_ {
        self.wall.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    /// Tables of rows, unsorted.
    pub fn rows(&self) -> impl Iterator<Item = (&'static str, &[(u64, String)])> + '_ {
        self.rows.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    /// Appends `other` to `self`; callers merge in actor-id order. Series
    /// `self` does not have yet are moved, not copied.
    pub fn merge(&mut self, other: Metrics) {
        for (name, value) in other.counters {
            self.add(name, value);
        }
        for (name, values) in other.samples {
            extend_or_take(self.samples.entry(name).or_default(), values);
        }
        for (name, values) in other.tallies {
            extend_or_take(self.tallies.entry(name).or_default(), values);
        }
        for (name, value) in other.sums {
            self.add_f64(name, value);
        }
        for (name, values) in other.steps {
            self.append_steps(name, values);
        }
        for (name, rows) in other.rows {
            extend_or_take(self.rows.entry(name).or_default(), rows);
        }
        for (name, values) in other.wall {
            extend_or_take(self.wall.entry(name).or_default(), values);
        }
    }

    /// Takes the step series out (the largest part of a long energy run's
    /// metrics), leaving none.
    pub fn take_steps(&mut self) -> BTreeMap<&'static str, Steps> {
        std::mem::take(&mut self.steps)
    }

    pub fn sums(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.sums.iter().map(|(k, v)| (*k, *v))
    }

    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    pub fn sum(&self, name: &str) -> f64 {
        self.sums.get(name).copied().unwrap_or(0.0)
    }

    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.counters.iter().map(|(k, v)| (*k, *v))
    }

    pub fn samples(&self) -> impl Iterator<Item = (&'static str, &[f64])> + '_ {
        self.samples.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    /// Tallied distributions: `(value, count)` pairs in merge order.
    pub fn tallies(&self) -> impl Iterator<Item = (&'static str, &[(f64, u64)])> + '_ {
        self.tallies.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    pub fn samples_of(&self, name: &str) -> &[f64] {
        self.samples.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counters_and_concatenates_samples_in_order() {
        let mut a = Metrics::default();
        a.add("tasks", 2);
        a.sample("rt", 1.0);
        let mut b = Metrics::default();
        b.add("tasks", 3);
        b.sample("rt", 2.0);
        b.add_f64("busy", 1.5);
        a.merge(b);
        assert_eq!(a.counter("tasks"), 5);
        assert_eq!(a.samples_of("rt"), &[1.0, 2.0]);
        assert_eq!(a.sum("busy"), 1.5);
        assert_eq!(a.counter("missing"), 0);
    }
}
