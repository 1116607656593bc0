//! `dcemu sweep` as a user meets it (issue 42): the same CSVs whatever
//! `--jobs`, `--resume` redoing only what did not finish, and a bad axis
//! refused before anything runs, naming every cell it touches.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{dcemu, python};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A small sweep over the two-tenant cluster: 2 placements × 2 rates ×
/// 2 seeds, 5 minutes each.
const SWEEP: &str = r#"
scenario = "base.toml"
seeds = [1, 2]
metrics = ["response_s_mean", "tasks_completed"]
set = ["run.end=5m", "output.actor_logs=false"]

[[axis]]
name = "placement"
values = [
  { label = "random", set = ["scheduler.placement=random"] },
  { label = "best-fit", set = ["scheduler.placement=best-fit"] },
]

[[axis]]
name = "rate"
key = "tenants.0.arrivals.rate_per_s"
values = [1.0, 2.5]
"#;

fn setup(sweep: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("scenarios/basic/two-tenants.toml"),
        dir.path().join("base.toml"),
    )
    .unwrap();
    std::fs::write(dir.path().join("s.toml"), sweep).unwrap();
    dir
}

/// Each of `files` is byte-identical in output directories `a` and `b`.
fn assert_same_files(dir: &Path, a: &str, b: &str, files: &[&str]) {
    for f in files {
        assert_eq!(
            read(&dir.join(a), f),
            read(&dir.join(b), f),
            "{a} and {b}: {f}"
        );
    }
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn jobs_do_not_change_the_csvs_and_summary_has_a_row_per_cell_and_metric() {
    let dir = setup(SWEEP);
    let one = dcemu(
        dir.path(),
        &["sweep", "s.toml", "--jobs", "1", "--out", "one"],
    );
    assert!(one.status.success(), "{}", text(&one));
    assert!(
        text(&one).contains("4 cells × 2 seeds: 8 runs (0 reused)"),
        "{}",
        text(&one)
    );
    let two = dcemu(
        dir.path(),
        &["sweep", "s.toml", "--jobs", "2", "--out", "two"],
    );
    assert!(two.status.success(), "{}", text(&two));
    assert_same_files(
        dir.path(),
        "one",
        "two",
        &["sweep.csv", "summary.csv", "report.html"],
    );
    let page = read(&dir.path().join("one"), "report.html");
    assert_eq!(page.matches("<svg").count(), 2, "a figure per metric");
    for legend in ["placement=random", "placement=best-fit", ">rate<"] {
        assert!(page.contains(legend), "{legend} missing from the figure");
    }
    let tidy = read(&dir.path().join("one"), "sweep.csv");
    let mut lines = tidy.lines();
    assert_eq!(lines.next(), Some("placement,rate,seed,metric,value"));
    assert_eq!(lines.count(), 4 * 2 * 2, "cells × seeds × metrics");
    let summary = read(&dir.path().join("one"), "summary.csv");
    assert!(summary.starts_with("placement,rate,metric,n,mean,sd,ci95_low,ci95_high,min,max\n"));
    let row = summary
        .lines()
        .find(|l| l.starts_with("best-fit,2.5,tasks_completed,"))
        .expect("a row per cell and metric");
    let f: Vec<f64> = row.split(',').skip(3).map(|x| x.parse().unwrap()).collect();
    let (n, mean, low, high, min, max) = (f[0], f[1], f[3], f[4], f[5], f[6]);
    assert_eq!(n, 2.0);
    assert!(
        low <= mean && mean <= high && min <= mean && mean <= max,
        "{row}"
    );
}

#[test]
fn resume_redoes_only_the_runs_that_did_not_finish() {
    let dir = setup(SWEEP);
    let first = dcemu(
        dir.path(),
        &["sweep", "s.toml", "--jobs", "2", "--out", "out"],
    );
    assert!(first.status.success(), "{}", text(&first));
    let before = read(&dir.path().join("out"), "summary.csv");
    let runs = dir.path().join("out/runs");
    // As a sweep killed midway leaves it: one run never started, one
    // stopped before its digest (written last); the rest are complete.
    std::fs::remove_dir_all(runs.join("random_1-0_s1")).unwrap();
    std::fs::remove_file(runs.join("best-fit_2-5_s2/digest")).unwrap();
    std::fs::write(runs.join("random_2-5_s2/kept"), "").unwrap();
    let again = dcemu(
        dir.path(),
        &["sweep", "s.toml", "--jobs", "2", "--out", "out", "--resume"],
    );
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("8 runs (6 reused)"),
        "{}",
        text(&again)
    );
    assert!(
        runs.join("random_2-5_s2/kept").exists(),
        "a complete run was redone"
    );
    assert!(runs.join("random_1-0_s1/digest").exists());
    assert_eq!(read(&dir.path().join("out"), "summary.csv"), before);
}

#[test]
fn a_bad_axis_is_refused_before_any_run_naming_every_cell_it_touches() {
    let bad = SWEEP.replace("values = [1.0, 2.5]", "values = [1.0, -3]");
    let dir = setup(&bad);
    let o = dcemu(dir.path(), &["sweep", "s.toml", "--out", "out"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    for cell in ["placement=random, rate=-3", "placement=best-fit, rate=-3"] {
        assert!(t.contains(cell), "{cell} not named: {t}");
    }
    assert!(!t.contains("rate=1.0:"), "a good cell was named: {t}");
    assert!(!dir.path().join("out/runs").exists(), "something ran");
    let unparsable = SWEEP.replace("\"scheduler.placement=random\"", "\"nokey\"");
    std::fs::write(dir.path().join("s.toml"), unparsable).unwrap();
    let o = dcemu(dir.path(), &["sweep", "s.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("s.toml:10:"), "file:line: {}", text(&o));
    let missing = SWEEP.replace("\"tasks_completed\"", "\"tasks_complete\"");
    std::fs::write(dir.path().join("s.toml"), missing).unwrap();
    let o = dcemu(dir.path(), &["sweep", "s.toml", "--out", "m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("did you mean \"tasks_completed\""),
        "{}",
        text(&o)
    );
}

#[test]
fn three_shards_merged_give_the_unsharded_csvs() {
    let dir = setup(SWEEP);
    let whole = dcemu(dir.path(), &["sweep", "s.toml", "--out", "whole"]);
    assert!(whole.status.success(), "{}", text(&whole));
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let out = format!("shard{k}");
        let o = dcemu(
            dir.path(),
            &["sweep", "s.toml", "--shard", &shard, "--out", &out],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("shard {k}/3: ")), "{}", text(&o));
        assert!(
            !dir.path().join(&out).join("sweep.csv").exists(),
            "a shard writes no CSVs"
        );
    }
    let short = dcemu(
        dir.path(),
        &["sweep", "merge", "shard1", "shard3", "--out", "m"],
    );
    assert_eq!(short.status.code(), Some(2), "{}", text(&short));
    assert!(
        text(&short).contains("shard 2/3 is given 0 times"),
        "{}",
        text(&short)
    );
    let merged = dcemu(
        dir.path(),
        &[
            "sweep", "merge", "shard1", "shard2", "shard3", "--out", "merged",
        ],
    );
    assert!(merged.status.success(), "{}", text(&merged));
    assert_same_files(dir.path(), "whole", "merged", &["sweep.csv", "summary.csv"]);
}

#[test]
fn the_python_client_loads_a_sweep_and_its_runs() {
    if !python() {
        return;
    }
    let dir = setup(SWEEP);
    let o = dcemu(dir.path(), &["sweep", "s.toml", "--out", "out"]);
    assert!(o.status.success(), "{}", text(&o));
    let script = r#"
import sys
from dcemu_scheduler.results import load_sweep
s = load_sweep("out", as_pandas=False)
assert s.axes == ["placement", "rate"], s.axes
assert len(s.runs) == 16, len(s.runs)
row = [r for r in s.summary if r["placement"] == "best-fit" and r["rate"] == 2.5 and r["metric"] == "tasks_completed"][0]
values = [r["value"] for r in s.runs if r["placement"] == "best-fit" and r["rate"] == 2.5 and r["metric"] == "tasks_completed"]
assert abs(row["mean"] - sum(values) / len(values)) < 1e-9, (row, values)
run = s.run("best-fit_2-5_s1", as_pandas=False)
assert run.metrics["tasks_completed"] == [v for v in values][0], run.metrics["tasks_completed"]
assert "timeseries" in run.tables and len(run.digest) == 64
print("ok", row["n"])
"#;
    let client = root().join("clients/python");
    let py = Command::new("python3")
        .arg("-c")
        .arg(script)
        .env("PYTHONPATH", &client)
        .current_dir(dir.path())
        .output()
        .expect("python3 runs");
    assert!(py.status.success(), "{}", text(&py));
    assert_eq!(String::from_utf8_lossy(&py.stdout).trim(), "ok 2");
}

#[test]
fn the_slurm_array_script_runs_shards_that_merge_into_the_sweep() {
    let dir = setup(SWEEP);
    let whole = dcemu(dir.path(), &["sweep", "s.toml", "--out", "whole"]);
    assert!(whole.status.success(), "{}", text(&whole));
    let bin = Path::new(env!("CARGO_BIN_EXE_dcemu"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = root().join("scenarios/sweeps/slurm.sbatch");
    for k in 1..=3 {
        let o = Command::new("bash")
            .arg(&script)
            .arg("s.toml")
            .arg("sh")
            .env("PATH", &path)
            .env("SLURM_ARRAY_TASK_ID", k.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", "3")
            .current_dir(dir.path())
            .output()
            .expect("bash runs");
        assert!(o.status.success(), "{}", text(&o));
    }
    let merged = dcemu(
        dir.path(),
        &["sweep", "merge", "sh-1", "sh-2", "sh-3", "--out", "merged"],
    );
    assert!(merged.status.success(), "{}", text(&merged));
    assert_same_files(dir.path(), "whole", "merged", &["sweep.csv", "summary.csv"]);
}

#[test]
fn a_baseline_gives_seed_by_seed_differences() {
    let with_baseline = |b: &str| {
        SWEEP.replacen(
            "[[axis]]",
            &format!("baseline = {{ axis = \"{b}\", value = \"random\" }}\n\n[[axis]]"),
            1,
        )
    };
    let with = with_baseline("placement");
    let dir = setup(&with);
    let o = dcemu(dir.path(), &["sweep", "s.toml", "--out", "out"]);
    assert!(o.status.success(), "{}", text(&o));
    let tidy = read(&dir.path().join("out"), "sweep.csv");
    let v = |placement: &str, seed: &str| -> f64 {
        tidy.lines()
            .find(|l| l.starts_with(&format!("{placement},2.5,{seed},response_s_mean,")))
            .and_then(|l| l.rsplit(',').next())
            .and_then(|x| x.parse().ok())
            .expect("value")
    };
    let diffs = [
        v("best-fit", "1") - v("random", "1"),
        v("best-fit", "2") - v("random", "2"),
    ];
    let paired = read(&dir.path().join("out"), "paired.csv");
    assert!(
        paired.starts_with(
            "placement,rate,metric,baseline,n,mean_diff,sd,ci95_low,ci95_high,min,max\n"
        )
    );
    assert_eq!(
        paired.lines().count(),
        1 + 2 * 2,
        "best-fit's two rates × two metrics"
    );
    let row = paired
        .lines()
        .find(|l| l.starts_with("best-fit,2.5,response_s_mean,random,2,"))
        .expect("the paired row");
    let mean: f64 = row.split(',').nth(5).unwrap().parse().unwrap();
    assert!(
        (mean - (diffs[0] + diffs[1]) / 2.0).abs() < 1e-9,
        "{row} vs {diffs:?}"
    );
    assert!(
        read(&dir.path().join("out"), "report.html")
            .contains("Paired, seed by seed, against placement=random")
    );
    let bad = with_baseline("placment");
    std::fs::write(dir.path().join("s.toml"), bad).unwrap();
    let o = dcemu(dir.path(), &["sweep", "s.toml", "--out", "bad"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("did you mean \"placement\""),
        "{}",
        text(&o)
    );
}

/// The ready-made Paragon sweep (issue 42's acceptance): Paragon meets QoS
/// for more applications than least-loaded at every arrival rate, with
/// intervals apart at the medium rate, and its report renders in a browser.
#[test]
fn the_paragon_sweep_shows_p_above_ll_and_its_report_renders() {
    let dir = tempfile::tempdir().unwrap();
    let file = root().join("scenarios/sweeps/paragon-load.toml");
    let o = dcemu(
        dir.path(),
        &[
            "sweep",
            &file.display().to_string(),
            "--jobs",
            "2",
            "--out",
            "out",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let summary = read(&dir.path().join("out"), "summary.csv");
    let cell = |placement: &str, rate: &str| -> (f64, f64, f64) {
        let row = summary
            .lines()
            .find(|l| l.starts_with(&format!("{placement},{rate},qos_met_fraction,")))
            .unwrap_or_else(|| panic!("no {placement} {rate} row"));
        let f: Vec<f64> = row.split(',').skip(3).map(|x| x.parse().unwrap()).collect();
        (f[1], f[3], f[4])
    };
    for rate in ["0.05", "0.1", "0.15", "0.2"] {
        let (p, ll) = (cell("P", rate), cell("LL", rate));
        assert!(p.0 > ll.0, "rate {rate}: P {p:?} not above LL {ll:?}");
    }
    let (p, ll) = (cell("P", "0.1"), cell("LL", "0.1"));
    assert!(
        p.1 > ll.2,
        "medium rate: P's interval {p:?} overlaps LL's {ll:?}"
    );
    let detail = read(&dir.path().join("out/detail"), "report.html");
    assert!(
        detail.matches("<svg").count() >= 3
            && detail.contains("P / 0.1")
            && detail.contains("LL / 0.1"),
        "the detail report of the chosen cells"
    );
    let html = read(&dir.path().join("out"), "report.html");
    assert!(html.contains("href=\"detail/report.html\""));
    if let Some(probe) = common::render_in_chromium(&html, dir.path()) {
        let svgs = probe["svgs"].as_array().unwrap();
        assert_eq!(svgs.len(), 4, "a figure per metric: {probe}");
        assert!(svgs.iter().all(|v| v == true), "an empty figure: {probe}");
    }
}

/// The ready-made external sweep: an axis value may run a scenario of its
/// own (here one with a Python placement), and the Python least-loaded
/// decides as the built-in does, seed by seed.
#[test]
fn a_python_least_loaded_matches_the_built_in_in_a_sweep() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = root().join("scenarios/sweeps/external-ll.toml");
    let o = dcemu(
        dir.path(),
        &[
            "sweep",
            &file.display().to_string(),
            "--jobs",
            "2",
            "--seeds",
            "1,2",
            "--out",
            "out",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let runs = dir.path().join("out/runs");
    let placed = std::fs::read_to_string(runs.join("python_2-0_s1/scenario.toml")).unwrap();
    assert!(
        placed.contains("least_loaded.py"),
        "the python cell ran its own scenario"
    );
    let paired = read(&dir.path().join("out"), "paired.csv");
    assert_eq!(paired.lines().count(), 1 + 3 * 4, "{paired}");
    for row in paired.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(
            (f[4], f[5]),
            ("2", "0"),
            "python differs from the built-in: {row}"
        );
    }
}
