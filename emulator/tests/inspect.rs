//! `dcemu logs`, `dcemu replay` and `dcemu report` end to end, through the
//! binary (exit codes and output are part of what is tested).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn dcemu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .output()
        .expect("the dcemu binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `scenario` (relative to the repository, or "" for quickstart) with
/// overrides into `out`.
fn run(scenario: &str, sets: &[&str], out: &Path) {
    let mut args = vec!["run".to_string()];
    if !scenario.is_empty() {
        args.push(format!("{ROOT}/scenarios/{scenario}"));
    }
    for s in sets {
        args.push("--set".into());
        args.push((*s).into());
    }
    args.extend(["--out".into(), out.display().to_string(), "-q".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = dcemu(&refs);
    assert!(o.status.success(), "run {scenario}: {}", text(&o.stderr));
}

fn jsonl(o: &Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON Lines"))
        .collect()
}

/// CI's replay smoke set: short runs of scenarios of every kind of model
/// (flat and three-tier networks, slots with evictions, applications with
/// migrations, primary tenants, energy-aware placement).
const SMOKE: &[(&str, &[&str])] = &[
    ("", &["run.end=10m"]),
    ("network/thesis-small-dc.toml", &["run.end=20m"]),
    ("thesis/google-15h.toml", &["run.end=65m"]),
    ("paragon/local-phases.toml", &["run.end=20m"]),
    ("harvest/primary-tenants.toml", &["run.end=1h"]),
    ("gems/small-dc-2h.toml", &["run.end=20m"]),
];

#[test]
fn replay_is_identical_on_the_smoke_set_and_finds_a_tampered_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (scenario, sets)) in SMOKE.iter().enumerate() {
        let dir = tmp.path().join(format!("r{i}"));
        run(scenario, sets, &dir);
        let o = dcemu(&["replay", dir.to_str().unwrap(), "--partitions", "2"]);
        let out = text(&o.stdout);
        assert!(
            o.status.success() && out.contains("identical"),
            "replay of {scenario}: {out}{}",
            text(&o.stderr)
        );
    }
    // Tamper one event of the slot run: the kind of its 3rd line.
    let dir = tmp.path().join("r2");
    let log = dir.join("actors/server-0003.jsonl");
    let original = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    assert!(
        lines.len() > 3,
        "server-0003 handled too few events to tamper with"
    );
    lines[2] = lines[2].replacen("\"kind\":\"", "\"kind\":\"x", 1);
    assert_ne!(
        lines[2],
        original.lines().nth(2).unwrap(),
        "no field to tamper with"
    );
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = dcemu(&["replay", dir.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("first differing actor: server-0003, event 3 of actors/server-0003.jsonl"),
        "{err}"
    );
    assert!(err.contains(&lines[2]), "the tampered line is shown: {err}");
    // A changed summary file is named too.
    std::fs::write(&log, original).unwrap();
    let metrics = dir.join("metrics.csv");
    let m = std::fs::read_to_string(&metrics).unwrap();
    std::fs::write(&metrics, m.replacen("events,", "events,1", 1)).unwrap();
    let o = dcemu(&["replay", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("metrics.csv differs at line"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn replay_until_compares_the_prefix_and_dumps_server_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    run("basic/two-tenants.toml", &["run.end=20m"], &dir);
    let o = dcemu(&[
        "replay",
        dir.to_str().unwrap(),
        "--until",
        "10m",
        "--dump",
        "server-000[12]",
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("identical"), "{out}");
    let states: Vec<(&str, Value)> = out
        .lines()
        .filter_map(|l| {
            l.split_once(": {")
                .map(|(n, rest)| (n, serde_json::from_str(&format!("{{{rest}")).unwrap()))
        })
        .collect();
    assert_eq!(
        states.iter().map(|s| s.0).collect::<Vec<_>>(),
        ["server-0001", "server-0002"]
    );
    // The two tenants keep each server's 4 slots busy: the dump lists the tasks on
    // each, all started before 10 min, as their task_start events say.
    for (name, state) in &states {
        let running = state["running"].as_array().unwrap();
        assert!(!running.is_empty() && running.len() <= 4, "{name}: {state}");
        for r in running {
            let task = r["task"].as_u64().unwrap().to_string();
            let since = r["since_ns"].as_u64().unwrap();
            assert!(since < 600_000_000_000);
            let life = jsonl(&dcemu(&[
                "logs",
                dir.to_str().unwrap(),
                "--task",
                &task,
                "--actor",
                name,
                "--kind",
                "task_start",
                "--format",
                "jsonl",
            ]));
            assert_eq!(life.len(), 1, "{name} {task}");
        }
    }
    let o = dcemu(&["replay", dir.to_str().unwrap(), "--until", "30m"]);
    assert_eq!(o.status.code(), Some(2), "past the end is bad input");
}

#[test]
fn logs_follow_an_evicted_task_through_its_whole_life() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    run("thesis/google-15h.toml", &["run.end=75m"], &dir);
    let d = dir.to_str().unwrap();
    let starts = jsonl(&dcemu(&[
        "logs",
        d,
        "--kind",
        "task_start",
        "--format",
        "jsonl",
    ]));
    let mut count = std::collections::BTreeMap::<u64, u32>::new();
    for s in &starts {
        *count.entry(s["task"].as_u64().unwrap()).or_default() += 1;
    }
    let evicted = jsonl(&dcemu(&[
        "logs",
        d,
        "--kind",
        "task_evicted",
        "--format",
        "jsonl",
    ]));
    let task = evicted
        .iter()
        .map(|e| e["task"].as_u64().unwrap())
        .find(|t| count.get(t).copied().unwrap_or(0) >= 2)
        .expect("an evicted task that started again");
    let life = jsonl(&dcemu(&[
        "logs",
        d,
        "--task",
        &task.to_string(),
        "--format",
        "jsonl",
    ]));
    let kinds: Vec<&str> = life.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let times: Vec<u64> = life.iter().map(|e| e["t_ns"].as_u64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "in time order: {life:?}"
    );
    let pos = |k: &str, from: usize| kinds[from..].iter().position(|x| *x == k).map(|p| p + from);
    let submit = pos("task_submit", 0).expect("submitted");
    let arrive = pos("task_arrive", submit).expect("arrived");
    let start1 = pos("task_start", arrive).expect("started");
    let evict = pos("evict_priority", start1).expect("evicted on the server");
    let back = pos("task_evicted", evict).expect("back at the scheduler");
    let start2 = pos("task_start", back).expect("started again");
    assert!(
        life[submit]["actor"]
            .as_str()
            .unwrap()
            .starts_with("tenant-")
    );
    assert_eq!(life[arrive]["actor"], "scheduler");
    assert_eq!(life[back]["actor"], "scheduler");
    assert_eq!(life[start1]["actor"], life[evict]["actor"]);
    assert!(
        life[start2]["actor"]
            .as_str()
            .unwrap()
            .starts_with("server-")
    );
    // The preempt that chose it names it as the victim.
    assert!(
        life.iter()
            .any(|e| e["kind"] == "preempt" && e["victim"] == task)
    );
    // The table shows the same events, aligned.
    let o = dcemu(&["logs", d, "--task", &task.to_string(), "--format", "table"]);
    let table = text(&o.stdout);
    assert_eq!(table.lines().count(), life.len() + 1, "{table}");
    assert!(table.lines().nth(1).unwrap().contains("task_submit"));
    // Bad flags are bad input.
    assert_eq!(
        dcemu(&["logs", d, "--actor", "nobody-*"]).status.code(),
        Some(2)
    );
    assert_eq!(dcemu(&["logs", d, "--from", "soon"]).status.code(), Some(2));
}

/// Every `<svg>…</svg>` of a page.
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

/// Issue 41: a report of the SWF sample under FCFS and EASY draws the
/// machine's utilisation over time and the jobs' wait and bounded-slowdown
/// CDFs, one line per run, as well-formed SVG.
#[test]
fn report_of_an_swf_log_plots_utilisation_over_time_and_wait_and_slowdown_cdfs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("fcfs");
    let b = tmp.path().join("easy");
    run("traces/swf.toml", &["run.end=1h"], &a);
    run(
        "traces/swf.toml",
        &["run.end=1h", "scheduler.admission=easy-backfill"],
        &b,
    );
    let out = tmp.path().join("report");
    let o = dcemu(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for id in ["hpc-utilisation", "hpc-wait-cdf", "hpc-slowdown-cdf"] {
        let start = html
            .find(&format!("<figure id=\"{id}\">"))
            .unwrap_or_else(|| panic!("figure {id} missing"));
        let figure = &html[start..start + html[start..].find("</figure>").unwrap()];
        let svg = svgs(figure)[0];
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{id}: {e}"));
        let lines = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "polyline")
            .count();
        assert!(lines >= 2, "{id}: {lines} lines, one per run expected");
    }
    assert!(
        !html.contains("(SWF logs): no run"),
        "nothing of the log skipped"
    );
}

#[test]
fn report_of_two_ec2_policies_renders_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("ec2-paragon");
    let b = tmp.path().join("ec2-least-loaded");
    run("paragon/ec2-low.toml", &["run.end=10m"], &a);
    run(
        "paragon/ec2-low.toml",
        &["run.end=10m", "scheduler.placement=least-loaded"],
        &b,
    );
    let out = tmp.path().join("report");
    let o = dcemu(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for id in [
        "perf-norm",
        "waiting-cdf",
        "servers-on",
        "energy",
        "heat-0",
        "heat-1",
    ] {
        assert!(
            html.contains(&format!("<figure id=\"{id}\">")),
            "figure {id} missing"
        );
    }
    assert!(html.contains("Plots skipped") && html.contains("no run has harvested storage"));
    // no SWF log: its plots are skipped, each with its reason
    for id in ["hpc-utilisation", "hpc-wait-cdf", "hpc-slowdown-cdf"] {
        assert!(!html.contains(&format!("<figure id=\"{id}\">")), "{id}");
    }
    assert!(html.contains(
        "Utilisation of the machine over time (SWF logs): no run replayed an SWF log (utilisation.csv)"
    ));
    assert!(html.contains(
        "CDF of bounded slowdown (SWF logs): no run has finished jobs of an SWF log (jobs.csv)"
    ));
    assert!(
        !html.contains("http://") || !html.contains("src=\"http"),
        "no external resources"
    );
    let md = std::fs::read_to_string(out.join("headline.md")).unwrap();
    assert!(
        md.starts_with(
            "| metric | paragon-ec2-low s1 scheduler.placement=paragon | paragon-ec2-low s1 scheduler.placement=least-loaded |"
        ),
        "{md}"
    );
    let csv = std::fs::read_to_string(out.join("headline.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.starts_with("qos_met_fraction,")),
        "{csv}"
    );

    // Well-formed, non-empty SVGs, each with drawn content.
    let all = svgs(&html);
    assert_eq!(all.len(), 6);
    for svg in &all {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("ill-formed SVG: {e}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let drawn = root
            .descendants()
            .filter(|n| matches!(n.tag_name().name(), "rect" | "polyline" | "path" | "line"))
            .count();
        assert!(drawn > 10, "an almost empty SVG ({drawn} shapes)");
    }

    let Some(probe) = common::render_in_chromium(&html, &out) else {
        return;
    };
    let rendered = probe["svgs"].as_array().unwrap();
    assert_eq!(rendered.len(), 6, "{probe}");
    assert!(
        rendered.iter().all(|v| v == true),
        "an SVG rendered empty: {probe}"
    );
}
