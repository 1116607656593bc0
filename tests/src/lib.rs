//! Helpers shared by the cross-crate tests in `tests/`: load a scenario from
//! text, run it, and read what it produced. Failures panic with the
//! scenario's own error message, which is what a failing test should show.

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{Override, Scenario, load};
use serde_json::Value;

/// `scenarios/basic/two-tenants.toml`: a flat cluster of 32 servers shared
/// by a batch and an interactive tenant, nothing else (the embedded default
/// before issue 22). Tests that want a plain, fast scenario use it.
pub const TWO_TENANTS: &str = include_str!("../../scenarios/basic/two-tenants.toml");

/// Loads a scenario from `text` with `--set`-style overrides.
pub fn scenario(label: &str, text: &str, overrides: &[&str]) -> Scenario {
    let overrides: Vec<Override> = overrides
        .iter()
        .map(|s| s.parse().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    load(label, text, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario on `partitions` threads, logs kept in memory.
pub fn run_with(s: &Scenario, partitions: usize) -> Outcome {
    let options = RunOptions {
        partitions,
        ..RunOptions::default()
    };
    execute(s, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads and runs scenario text on one partition.
pub fn run_text(label: &str, text: &str, overrides: &[&str]) -> Outcome {
    run_with(&scenario(label, text, overrides), 1)
}

/// The task ledger balances: submitted = completed + running + queued +
/// waiting for a wake-up + in transit + dropped.
pub fn assert_no_task_lost(o: &Outcome, label: &str) {
    let m = |k: &str| {
        o.metrics[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{label}: no {k}"))
    };
    let accounted = m("tasks_completed")
        + m("tasks_running_end")
        + m("tasks_queued_end")
        + m("tasks_waiting_wake_end")
        + m("tasks_in_transit_end")
        + m("dropped_tasks");
    assert_eq!(m("tasks_submitted"), accounted, "{label}: a task was lost");
}

/// A numeric metric of a run.
pub fn metric(o: &Outcome, key: &str) -> f64 {
    o.metrics[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {key}"))
}

/// Every log line of one actor.
pub fn log(o: &Outcome, actor: &str) -> Vec<Value> {
    let bytes = o
        .results
        .read(&format!("actors/{actor}.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no log for {actor}"));
    String::from_utf8(bytes)
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The lines of `lines` of one kind.
pub fn kind<'a>(lines: &'a [Value], k: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["kind"] == k).collect()
}

/// The virtual time of a log line.
pub fn t(v: &Value) -> u64 {
    v["t_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("no t_ns in {v}"))
}
