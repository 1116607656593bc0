//! Memory growth and memory evictions (thesis §6.2.3.4): a task that cannot
//! get all its memory at start gets what is left and a checkpoint; at the
//! checkpoint it needs the rest, and the eviction policy makes room.

use dcemu::run::Outcome;
use dcemu_tests::{kind, log, metric, run_text};

/// One 16 GB server; task 0 (priority 0, 10 GB) at 100 s, task 1000000000
/// (priority 5, 10 GB) at 101 s, both 1,000 s long.
fn run(overrides: &[&str]) -> Outcome {
    let text = r#"
[run]
name = "memory"
end = "6000s"

[[server_types]]
name = "box"
count = 1
slots = 2
memory_gb = 16.0

[[tenants]]
name = "low"
priority = 0
start = "99s"
stop = "100.5s"
arrivals = { process = "constant", rate_per_s = 1.0 }
service = { distribution = "constant", mean = "1000s", memory_gb = 10.0 }

[[tenants]]
name = "high"
priority = 5
start = "100s"
stop = "101.5s"
arrivals = { process = "constant", rate_per_s = 1.0 }
service = { distribution = "constant", mean = "1000s", memory_gb = 10.0 }
"#;
    run_text("memory.toml", text, overrides)
}

const LOW: u64 = 0;
const HIGH: u64 = 1_000_000_000;

fn evicted(o: &Outcome) -> Vec<u64> {
    kind(&log(o, "server-0000"), "evict_memory")
        .iter()
        .map(|v| v["task"].as_u64().unwrap())
        .collect()
}

fn m(o: &Outcome, key: &str) -> f64 {
    metric(o, key)
}

#[test]
fn lsf_evicts_the_last_started_task_whose_memory_is_short() {
    let o = run(&["scheduler.memory_eviction=lsf"]);
    let victims = evicted(&o);
    assert_eq!(victims.first(), Some(&HIGH), "{victims:?}");
    assert!(
        victims.iter().all(|&v| v == HIGH),
        "the satisfied task is never chosen: {victims:?}"
    );
    assert_eq!(m(&o, "tasks_completed"), 2.0, "both finish in the end");
    assert_eq!(m(&o, "evictions_memory"), victims.len() as f64);
    assert!(
        m(&o, "wasted_cpu_s") > 0.0,
        "non-resume loses the work done"
    );
}

#[test]
fn lpf_evicts_the_lowest_priority_first() {
    let o = run(&["scheduler.memory_eviction=lpf"]);
    let victims = evicted(&o);
    assert_eq!(victims.first(), Some(&LOW), "{victims:?}");
    assert_eq!(m(&o, "tasks_completed"), 2.0);
}

#[test]
fn resumed_tasks_waste_nothing() {
    let lost = run(&["scheduler.memory_eviction=lpf"]);
    let resumed = run(&["scheduler.memory_eviction=lpf", "scheduler.resume=true"]);
    assert!(m(&resumed, "evictions_memory") > 0.0);
    assert_eq!(m(&resumed, "wasted_cpu_s"), 0.0);
    assert!(m(&lost, "wasted_cpu_s") > 0.0);
    assert!(m(&resumed, "response_s_mean") <= m(&lost, "response_s_mean"));
}

#[test]
fn without_a_policy_memory_is_not_enforced() {
    let o = run(&[]);
    assert_eq!(m(&o, "evictions_memory"), 0.0);
    assert!(evicted(&o).is_empty());
}

#[test]
fn response_times_are_reported_per_priority_class() {
    let o = run(&["scheduler.memory_eviction=lpf"]);
    assert!(o.metrics.contains_key("response_s_class_0_mean"));
    assert!(o.metrics.contains_key("response_s_class_5_mean"));
    assert!(
        !o.metrics.contains_key("response_s_class_3_mean"),
        "no class-3 tasks"
    );
    // LPF favours the high class: it finishes first
    assert!(m(&o, "response_s_class_5_mean") < m(&o, "response_s_class_0_mean"));
    let by_class = &o.metrics["response_s_by_class"];
    assert_eq!(
        by_class["5"].as_f64(),
        o.metrics["response_s_class_5_mean"].as_f64()
    );
    assert_eq!(by_class.as_object().unwrap().len(), 2);
}
