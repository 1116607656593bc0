//! Invariants every scenario in `scenarios/` must keep: it loads, it runs, no
//! task is lost, time in each actor's log never goes backwards, and every
//! metric it reports is documented. The same runs are the regression guard
//! of the scheduler's stages: each scenario's digest and metrics must match
//! `tests/golden/catalog.txt` (see [`GOLDEN`]).

use std::path::{Path, PathBuf};

use dcemu::run::{RunOptions, execute};
use dcemu::scenario::load;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scenario_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // scenarios/reproduce/ and scenarios/sweeps/ hold experiment
            // and sweep files, not scenarios
            if path.is_dir() && !path.ends_with("reproduce") && !path.ends_with("sweeps") {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("scenarios"), &mut out);
    out.sort();
    assert!(!out.is_empty());
    out
}

/// Scenarios longer than this (4 h, in ns) run only this long here.
const LONGEST_NS: u64 = 4 * 3600 * 1_000_000_000;
/// ... and scenarios with more servers than this (the scale study's
/// 10,000) only 20 minutes.
const LARGEST_SERVERS: u32 = 5_000;
const LARGE_LONGEST_NS: u64 = 20 * 60 * 1_000_000_000;
/// Scenarios over this many servers run at [`SHRUNK_TO`].
const SHRUNK_ABOVE: u32 = 20_000;
const SHRUNK_TO: u32 = 1_000;

/// The digest and a SHA-256 of `metrics.json` of every catalog scenario, run
/// as [`every_scenario_runs_without_losing_a_task`] runs it. A change in a
/// model that is meant to move results is recorded by running the test with
/// `DCEMU_BLESS=1`, and its commit says why; any other change fails.
const GOLDEN: &str = "tests/golden/catalog.txt";

/// One line of [`GOLDEN`]: scenario path, digest, metrics hash.
fn golden_line(path: &Path, out: &dcemu::run::Outcome) -> String {
    use sha2::{Digest, Sha256};
    let rel = path.strip_prefix(root()).unwrap_or(path);
    let metrics = serde_json::to_string(&out.metrics).unwrap();
    let hash: String = Sha256::digest(metrics.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{} {} {}", rel.display(), out.digest, &hash[..16])
}

/// Compares the lines with [`GOLDEN`], or rewrites it under `DCEMU_BLESS=1`.
fn check_golden(lines: &[String]) {
    let file = root().join(GOLDEN);
    let header = "# scenario digest metrics-sha256[..16]; runs of every_scenario_runs_without_losing_a_task\n# (2 partitions, cut at 4 h / 20 min). Rewrite with DCEMU_BLESS=1 and say why in the commit.\n";
    if std::env::var_os("DCEMU_BLESS").is_some() {
        std::fs::write(&file, format!("{header}{}\n", lines.join("\n"))).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}; record it with DCEMU_BLESS=1", file.display()));
    let recorded: std::collections::BTreeMap<&str, &str> = recorded
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once(' '))
        .collect();
    let mut changed = Vec::new();
    for line in lines {
        let (name, now) = line.split_once(' ').unwrap();
        match recorded.get(name) {
            Some(before) if *before == now => {}
            Some(before) => {
                let metrics_same = before.split(' ').nth(1) == now.split(' ').nth(1);
                changed.push(format!(
                    "{name}: {before} -> {now} ({})",
                    if metrics_same {
                        "same metrics, other logs"
                    } else {
                        "metrics changed"
                    }
                ));
            }
            None => changed.push(format!("{name}: not recorded")),
        }
    }
    for name in recorded.keys() {
        if !lines.iter().any(|l| l.split(' ').next() == Some(*name)) {
            changed.push(format!("{name}: recorded but no longer in scenarios/"));
        }
    }
    assert!(
        changed.is_empty(),
        "results moved against {GOLDEN} (rerun with DCEMU_BLESS=1 only if on purpose):\n{}",
        changed.join("\n")
    );
}

/// A real datacenter's size is for the bench: a scenario over
/// [`SHRUNK_ABOVE`] servers runs here as the bench's smallest size runs it
/// (`dcemu bench --suite scale`), its load per server kept.
fn shrunk(label: &str, text: &str, servers: u32) -> Vec<String> {
    if servers <= SHRUNK_ABOVE {
        return Vec::new();
    }
    dcemu::bench::scale::shrink(label, text, SHRUNK_TO).unwrap_or_else(|e| panic!("{label}: {e}"))
}

#[test]
fn every_scenario_runs_without_losing_a_task() {
    let mut golden = Vec::new();
    for path in scenario_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let label = path.display().to_string();
        let mut scenario = load(&label, &text, &[]).unwrap_or_else(|e| panic!("{e}"));
        let servers: u32 = scenario.server_types.iter().map(|t| t.count).sum();
        let mut sets = shrunk(&label, &text, servers);
        let longest = if servers > LARGEST_SERVERS {
            LARGE_LONGEST_NS
        } else {
            LONGEST_NS
        };
        if scenario.run.end.as_nanos() > longest {
            // Day-long runs repeat their first hours; the ledger is the same.
            sets.push(format!("run.end={longest}ns"));
        }
        if !sets.is_empty() {
            let overrides: Vec<_> = sets.iter().map(|s| s.parse().unwrap()).collect();
            scenario = load(&label, &text, &overrides).unwrap_or_else(|e| panic!("{e}"));
        }
        let out = execute(
            &scenario,
            &RunOptions {
                partitions: 2,
                ..RunOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        let m = |k: &str| {
            out.metrics[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{label}: no {k}"))
        };
        let submitted = m("tasks_submitted");
        let accounted = m("tasks_completed")
            + m("tasks_running_end")
            + m("tasks_queued_end")
            + m("tasks_waiting_wake_end")
            + m("tasks_in_transit_end")
            + m("dropped_tasks");
        assert!(submitted > 0, "{label} submits work");
        assert_eq!(
            submitted, accounted,
            "{label}: every submitted task is accounted for"
        );
        let reached = m("tasks_completed")
            + m("tasks_running_end")
            + m("tasks_waiting_wake_end")
            + m("killed_containers")
            + m("evictions_memory")
            + m("evictions_priority")
            // distributed units stopped with their run (docs/scheduler.md)
            + out.metrics.get("dist_units_stopped").and_then(|v| v.as_u64()).unwrap_or(0);
        assert!(
            m("tasks_dispatched") >= reached,
            "{label}: a task reached a server without a dispatch"
        );
        assert!(
            m("tasks_dispatched") - reached <= m("tasks_in_transit_end") + m("tasks_migrating_end"),
            "{label}: dispatched tasks that never reached their server must still be in transit"
        );
        let energy = out.metrics["energy_kwh_total"].as_f64().unwrap();
        assert!(energy > 0.0, "{label}: energy {energy}");
        let on_mean = out.metrics["servers_on_mean"].as_f64().unwrap();
        let on_max = out.metrics["servers_on_max"].as_f64().unwrap();
        assert!(
            on_mean <= on_max + 1e-9,
            "{label}: mean {on_mean} above max {on_max}"
        );
        let util = out.metrics["slot_utilization_mean"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&util), "{label}: utilisation {util}");

        for file in out.results.paths().filter(|p| p.starts_with("actors/")) {
            let content = out.results.read(file).unwrap().unwrap();
            let mut last = 0u64;
            for (n, line) in std::str::from_utf8(&content).unwrap().lines().enumerate() {
                let v: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{label} {file}:{}: {e}", n + 1));
                let t = v["t_ns"].as_u64().expect("t_ns");
                assert!(v["kind"].is_string(), "{file}:{}", n + 1);
                assert!(t >= last, "{label} {file}:{}: time went backwards", n + 1);
                last = t;
            }
        }
        golden.push(golden_line(&path, &out));
    }
    check_golden(&golden);
}

#[test]
fn every_metric_is_documented() {
    let docs = std::fs::read_to_string(root().join("docs/metrics.md")).unwrap();
    for path in scenario_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let label = path.display().to_string();
        // five minutes show every metric; scenarios whose tenants start later run whole
        let whole = load(&label, &text, &[]).unwrap_or_else(|e| panic!("{e}"));
        let servers: u32 = whole.server_types.iter().map(|t| t.count).sum();
        let sets = shrunk(&label, &text, servers);
        let parse = |sets: &[String]| -> Vec<dcemu::scenario::Override> {
            sets.iter().map(|s| s.parse().unwrap()).collect()
        };
        let mut five = sets.clone();
        five.push("run.end=5m".into());
        let scenario = load(&label, &text, &parse(&five))
            .or_else(|_| load(&label, &text, &parse(&sets)))
            .unwrap_or_else(|e| panic!("{e}"));
        let out = execute(&scenario, &RunOptions::default()).unwrap();
        for key in out.metrics.keys() {
            // per-class series are documented once, as <prefix><p>...
            let key = [
                "response_s_class_",
                "tasks_submitted_class_",
                "task_share_class_",
            ]
            .iter()
            .find_map(|prefix| {
                key.strip_prefix(prefix).map(|rest| {
                    format!(
                        "{prefix}<p>{}",
                        rest.trim_start_matches(|c: char| c.is_ascii_digit())
                    )
                })
            })
            .unwrap_or_else(|| key.clone());
            assert!(
                docs.contains(&format!("`{key}`")),
                "metric `{key}` of {} is not documented in docs/metrics.md",
                path.display()
            );
        }
    }
}

#[test]
fn every_event_kind_is_documented() {
    let docs = std::fs::read_to_string(root().join("docs/events.md")).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    let quickstart = load(
        "quickstart",
        dcemu::scenario::QUICKSTART,
        &["run.end=20m".parse().unwrap()],
    )
    .unwrap();
    let network_text =
        std::fs::read_to_string(root().join("scenarios/network/thesis-small-dc.toml")).unwrap();
    let network = load(
        "thesis-small-dc",
        &network_text,
        &[
            "run.end=20m".parse().unwrap(),
            "output.packet_logs=true".parse().unwrap(),
            "power.switch_wake=1ms".parse().unwrap(),
            "tenants.0.stop=10m".parse().unwrap(),
            "tenants.0.flow_bandwidth=600Mbps".parse().unwrap(),
            "tenants.0.arrivals.rate_per_s=2".parse().unwrap(),
        ],
    )
    .unwrap();
    let paragon_text =
        std::fs::read_to_string(root().join("scenarios/paragon/local-phases.toml")).unwrap();
    let paragon = load(
        "local-phases",
        &paragon_text,
        &["scheduler.reclassify_below=0.05".parse().unwrap()],
    )
    .unwrap();
    for scenario in [quickstart, network, paragon] {
        let out = execute(&scenario, &RunOptions::default()).unwrap();
        for file in out.results.paths().filter(|p| p.starts_with("actors/")) {
            let content = out.results.read(file).unwrap().unwrap();
            for line in std::str::from_utf8(&content).unwrap().lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                kinds.insert(v["kind"].as_str().unwrap().to_string());
            }
        }
    }
    for expected in [
        "wake_start",
        "wake_done",
        "sleep",
        "forward",
        "net_deliver",
        "tenant_stop",
        "training_set",
        "profile_start",
        "classify",
        "reclassify",
        "reclassified",
        "migrate_start",
        "migrate_out",
        "migrate_done",
        "isolate",
    ] {
        assert!(
            kinds.contains(expected),
            "no `{expected}` event seen: {kinds:?}"
        );
    }
    for kind in kinds {
        assert!(
            docs.contains(&format!("`{kind}`")),
            "event kind `{kind}` is not in docs/events.md"
        );
    }
}
