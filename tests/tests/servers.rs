//! Servers end to end: processor sharing (thesis eq. 6.2) through the whole
//! model, messages and all.

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{Override, load};
use serde_json::Value;

const S: u64 = 1_000_000_000;
/// Tenant → scheduler → server: two links of 50 us in a flat network.
const DISPATCH_DELAY: u64 = 100_000;

/// One server with `cores` cores and two slots; tenant `a` submits one
/// 100 s task at 100 s, tenant `b` one at 150 s.
fn run(cores: u32, speed: f64) -> Outcome {
    let text = format!(
        r#"
[run]
name = "sharing"
end = "1000s"

[[server_types]]
name = "one-core"
count = 1
slots = 2
cores = {cores}
core_speed = {speed:?}

[[tenants]]
name = "a"
stop = "101s"
arrivals = {{ process = "constant", rate_per_s = 0.01 }}
service = {{ distribution = "constant", mean = "100s" }}

[[tenants]]
name = "b"
start = "50s"
stop = "151s"
arrivals = {{ process = "constant", rate_per_s = 0.01 }}
service = {{ distribution = "constant", mean = "100s" }}
"#
    );
    let overrides: Vec<Override> = Vec::new();
    let scenario = load("sharing.toml", &text, &overrides).unwrap_or_else(|e| panic!("{e}"));
    execute(&scenario, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn ends(o: &Outcome) -> Vec<(u64, u64)> {
    let log = o.results.read("actors/server-0000.jsonl").unwrap().unwrap();
    String::from_utf8(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "task_end")
        .map(|v| (v["task"].as_u64().unwrap(), v["t_ns"].as_u64().unwrap()))
        .collect()
}

#[test]
fn two_tasks_on_a_one_core_server_finish_when_eq_6_2_says() {
    let o = run(1, 1.0);
    // a runs alone for 50 s, then both at half speed: a has 50 s of work
    // left, done after 100 s; b then has 50 s left alone.
    let (a, b) = (0, 1_000_000_000);
    assert_eq!(
        ends(&o),
        vec![(a, 250 * S + DISPATCH_DELAY), (b, 300 * S + DISPATCH_DELAY)]
    );
}

#[test]
fn with_a_core_each_tasks_do_not_slow_each_other() {
    let o = run(2, 1.0);
    let (a, b) = (0, 1_000_000_000);
    assert_eq!(
        ends(&o),
        vec![(a, 200 * S + DISPATCH_DELAY), (b, 250 * S + DISPATCH_DELAY)]
    );
}

#[test]
fn faster_cores_run_the_same_work_sooner() {
    let o = run(2, 2.0);
    let (a, b) = (0, 1_000_000_000);
    assert_eq!(
        ends(&o),
        vec![(a, 150 * S + DISPATCH_DELAY), (b, 200 * S + DISPATCH_DELAY)]
    );
    let response = o.metrics["response_s_mean"].as_f64().unwrap();
    assert!((response - 50.0001).abs() < 1e-6, "{response}");
}

#[test]
fn gaussian_arrivals_have_the_requested_mean_gap() {
    let text = r#"
[run]
name = "gauss"
end = "2000s"

[[server_types]]
name = "a"
count = 4
slots = 4

[[tenants]]
name = "medium"
arrivals = { process = "gaussian", rate_per_s = 0.1, gap_stddev = "1s" }
service = { distribution = "constant", mean = "5s" }
"#;
    let overrides: Vec<Override> = Vec::new();
    let s = load("gauss.toml", text, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let o = execute(&s, &RunOptions::default()).unwrap();
    let submitted = o.metrics["tasks_submitted"].as_u64().unwrap();
    assert!(
        (195..=200).contains(&submitted),
        "{submitted} submissions in 2000 s at ~10 s apart"
    );
    let missing = text.replace(", gap_stddev = \"1s\"", "");
    let err = load("gauss.toml", &missing, &overrides)
        .unwrap_err()
        .to_string();
    assert!(err.contains("tenants[0].arrivals.gap_stddev"), "{err}");
}

#[test]
fn bursty_arrivals_alternate_normal_and_burst_rates() {
    // thesis Table 9.4, W-B: 6 s apart normally, 0.6 s in bursts, 6 min between bursts
    let text = r#"
[run]
name = "bursty"
end = "10h"

[[server_types]]
name = "a"
count = 20
slots = 10

[[tenants]]
name = "wb"
arrivals = { process = "bursty", rate_per_s = 0.16666666666666666, burst_rate_per_s = 1.6666666666666667, burst_every = "6m", burst_length = "1m" }
service = { distribution = "constant", mean = "1s" }
"#;
    let overrides: Vec<Override> = Vec::new();
    let s = load("bursty.toml", text, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let o = execute(&s, &RunOptions::default()).unwrap();
    // a seventh of the time in bursts (1 min of every 7): 6/7 * 1/6 + 1/7 * 1/0.6 per second
    let expected = 36_000.0 * (6.0 / 7.0 / 6.0 + 1.0 / 7.0 / 0.6);
    let submitted = o.metrics["tasks_submitted"].as_f64().unwrap();
    assert!(
        (submitted / expected - 1.0).abs() < 0.2,
        "{submitted} vs {expected:.0}"
    );
    let log =
        String::from_utf8(o.results.read("actors/tenant-wb-0.jsonl").unwrap().unwrap()).unwrap();
    let mut per_minute = std::collections::BTreeMap::<u64, u32>::new();
    for line in log.lines().filter(|l| l.contains("\"task_submit\"")) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *per_minute
            .entry(v["t_ns"].as_u64().unwrap() / 60_000_000_000)
            .or_default() += 1;
    }
    let busiest = per_minute.values().copied().max().unwrap_or(0);
    let mean = submitted / 600.0;
    assert!(
        !o.metrics.contains_key("arrivals_max_1min")
            && !o.metrics.contains_key("task_share_class_0"),
        "only Google-like generators report what they drew"
    );
    assert!(
        f64::from(busiest) > 3.0 * mean,
        "busiest minute {busiest}, mean {mean:.1}"
    );
    let missing = text.replace(", burst_length = \"1m\"", "");
    let err = load("bursty.toml", &missing, &overrides)
        .unwrap_err()
        .to_string();
    assert!(err.contains("tenants[0].arrivals.burst_length"), "{err}");
}

#[test]
fn a_google_like_tenant_draws_classes_times_and_memory_from_table_5_2() {
    let text = r#"
[run]
name = "google"
end = "2h"

[scheduler]
memory_eviction = "lsf"

[[server_types]]
name = "a"
count = 40
slots = 16
cores = 8
memory_gb = 64.0

[[tenants]]
name = "google"
google_memory_gb = 64.0
arrivals = { process = "poisson", rate_per_s = 0.5 }
"#;
    let overrides: Vec<Override> = Vec::new();
    let s = load("google.toml", text, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let o = execute(&s, &RunOptions::default()).unwrap();
    let log =
        String::from_utf8(o.results.read("actors/scheduler.jsonl").unwrap().unwrap()).unwrap();
    assert!(log.contains("task_arrive"));
    for class in [0, 1, 4] {
        assert!(
            o.metrics
                .contains_key(&format!("response_s_class_{class}_mean")),
            "class {class} is common in Table 5.2"
        );
    }
    let submitted = o.metrics["tasks_submitted"].as_f64().unwrap();
    assert!((submitted / 3600.0 - 1.0).abs() < 0.1, "{submitted}");
    // what the generator drew, for `dcemu reproduce thesis`'s input rows:
    // Table 5.2's "% of tasks" (standard error ~0.007 over 3,600 tasks),
    // its share-weighted mean demand (43.9 cpu·s), and a Poisson stream's
    // peaks: 30 a minute on average, mean gap 2 s
    let m = |k: &str| {
        o.metrics
            .get(k)
            .and_then(|v| v.as_f64())
            .unwrap_or_else(|| panic!("{k} missing"))
    };
    assert!((m("task_share_class_0") - 0.2329).abs() < 0.03);
    assert!((m("task_share_class_4") - 0.5994).abs() < 0.03);
    let demand = m("task_cpu_demand_s_mean");
    assert!((demand / 43.93 - 1.0).abs() < 0.15, "{demand}");
    let n = |k: &str| o.metrics.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let total: u64 = (0..12)
        .map(|c| n(&format!("tasks_submitted_class_{c}")))
        .sum();
    assert_eq!(total as f64, submitted, "every task has a class");
    assert_eq!(n("tasks_submitted_class_7"), 0, "class 7 has no figures");
    let peak = m("arrivals_max_1min");
    assert!((35.0..=70.0).contains(&peak), "{peak}");
    assert!(m("arrivals_max_10min") >= peak);
    let gap = m("arrival_gap_s_max");
    assert!((8.0..=40.0).contains(&gap), "{gap}");
    let both = text.replace(
        "google_memory_gb = 64.0",
        "google_memory_gb = 64.0\npriority = 3",
    );
    let err = load("google.toml", &both, &overrides)
        .unwrap_err()
        .to_string();
    assert!(err.contains("tenants[0].google_memory_gb"), "{err}");
}

#[test]
fn servers_report_every_interval_while_busy_then_fall_quiet() {
    let text = r#"
[run]
name = "reports"
end = "1000s"

[scheduler]
report_interval = "10s"

[[server_types]]
name = "a"
count = 3
slots = 2

[[tenants]]
name = "t"
stop = "95s"
arrivals = { process = "constant", rate_per_s = 0.1 }
service = { distribution = "constant", mean = "30s" }
"#;
    let overrides: Vec<Override> = Vec::new();
    let s = load("reports.toml", text, &overrides).unwrap();
    let o = execute(&s, &RunOptions::default()).unwrap();
    let reports = o.metrics["server_reports"].as_u64().unwrap();
    // 9 tasks of 30 s from 10 s to 90 s: busy servers report every 10 s
    // until about 130 s; once idle each sends one last report and stops,
    // so the run ends long before run.end.
    assert!(
        (9..=3 * 15).contains(&reports),
        "{reports} reports while busy"
    );
    let end = o.metrics["virtual_end_s"].as_f64().unwrap();
    assert!(
        end < 200.0,
        "reports stop when the cluster is idle: ended at {end} s"
    );
    let off = load(
        "reports.toml",
        text,
        &["scheduler.report_interval=0s".parse().unwrap()],
    )
    .unwrap();
    let o = execute(&off, &RunOptions::default()).unwrap();
    assert_eq!(o.metrics["server_reports"].as_u64().unwrap(), 0);
}
