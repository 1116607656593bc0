//! The `dcemu` binary as a user meets it: exit codes, files, messages.

use std::path::Path;
use std::process::{Command, Output};

fn dcemu(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the dcemu binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `python3` runs here; says so when it does not (the tests of an
/// external program in Python are then skipped).
fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("*** SKIP: python3 not installed ***");
    }
    ok
}

fn scenario(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const SMALL: &str = r#"
[run]
name = "small"
end = "10m"

[[server_types]]
name = "a"
count = 3
slots = 2

[[tenants]]
name = "w"
arrivals = { process = "poisson", rate_per_s = 0.5 }
service = { distribution = "exponential", mean = "5s" }
"#;

#[test]
fn run_without_arguments_writes_a_complete_results_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let o = dcemu(tmp.path(), &["run", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("results/quickstart-s1");
    for f in [
        "scenario.toml",
        "metrics.json",
        "metrics.csv",
        "digest",
        "run.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let logs = std::fs::read_dir(dir.join("actors")).unwrap().count();
    assert_eq!(
        logs, 69,
        "one log per actor: scheduler, name node, 3 tenants, 2 primary tenants, 14 switches, 48 servers"
    );
    assert!(dir.join("actors/server-0017.jsonl").is_file());
    assert!(dir.join("actors/switch-core-000.jsonl").is_file());
    assert!(dir.join("actors/tenant-google-0.jsonl").is_file());
    let digest = std::fs::read_to_string(dir.join("digest")).unwrap();
    let digest = digest.trim();
    assert!(digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(digest, dcemu::results::digest_dir(&dir).unwrap());
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).unwrap()).unwrap();
    for key in [
        "events",
        "virtual_end_s",
        "tasks_submitted",
        "tasks_completed",
    ] {
        assert!(metrics[key].as_f64().unwrap() > 0.0, "{key}");
    }
    assert!(stdout(&o).is_empty(), "--quiet prints nothing");
}

#[test]
fn the_summary_names_the_results_and_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    let o = dcemu(tmp.path(), &["run", &path, "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let digest = std::fs::read_to_string(tmp.path().join("out/digest")).unwrap();
    assert!(text.contains(digest.trim()), "{text}");
    assert!(text.contains("tasks"), "{text}");
}

/// A run leaves its measured work beside its results; a later run of the
/// same scenario cut by it gets the same digest, and one of another
/// scenario is refused (exit 2, the file and the line named) leaving no
/// results behind.
#[test]
fn balance_from_an_earlier_run_keeps_the_digest_and_refuses_another_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let o = dcemu(tmp.path(), &["run", "--quiet", "--out", "first"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let work = std::fs::read_to_string(tmp.path().join("first/work.csv")).unwrap();
    assert!(
        work.starts_with("actor,events,busy_ns,held_bytes\nscheduler,"),
        "{work}"
    );
    let held = |row: &str| -> u64 { row.rsplit(',').next().unwrap().parse().unwrap() };
    let rows: Vec<&str> = work.lines().skip(1).collect();
    assert!(
        rows.iter().all(|r| held(r) > 0),
        "every actor holds some heap at the end: {work}"
    );
    let o = dcemu(
        tmp.path(),
        &[
            "run",
            "--quiet",
            "--partitions",
            "2",
            "--balance-from",
            "first",
            "--out",
            "second",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let digest = |d: &str| std::fs::read_to_string(tmp.path().join(d).join("digest")).unwrap();
    assert_eq!(digest("first"), digest("second"));
    let o = dcemu(
        tmp.path(),
        &[
            "run",
            "--quiet",
            "--partitions",
            "2",
            "--balance-from",
            "first",
            "--balance-by",
            "memory",
            "--out",
            "by-memory",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(digest("first"), digest("by-memory"));
    let o = dcemu(tmp.path(), &["run", "--quiet", "--balance-by", "memory"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--balance-from"), "{}", stderr(&o));

    let small = scenario(tmp.path(), "small.toml", SMALL);
    let o = dcemu(
        tmp.path(),
        &[
            "run",
            &small,
            "--quiet",
            "--balance-from",
            "first",
            "--out",
            "third",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("work.csv") && e.contains("--balance-from"),
        "{e}"
    );
    assert!(!tmp.path().join("third").exists());
}

#[test]
fn an_existing_results_directory_is_kept_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    assert!(
        dcemu(tmp.path(), &["run", &path, "-q", "--out", "r"])
            .status
            .success()
    );
    let first = std::fs::read_to_string(tmp.path().join("r/digest")).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", &path, "-q", "--out", "r", "--seed", "2"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("r/digest")).unwrap(),
        first
    );
    let o = dcemu(
        tmp.path(),
        &["run", &path, "-q", "--out", "r", "--seed", "2", "--force"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(
        std::fs::read_to_string(tmp.path().join("r/digest")).unwrap(),
        first
    );
}

#[test]
fn set_and_seed_change_the_scenario_as_run() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    let o = dcemu(
        tmp.path(),
        &[
            "run",
            &path,
            "-q",
            "--seed",
            "7",
            "--set",
            "run.end=5m",
            "--set",
            "tenants.0.count=2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).is_empty(),
        "--quiet prints nothing: {}",
        stdout(&o)
    );
    let dir = "results/small-s7-run.end=5m,tenants.0.count=2";
    let as_run = std::fs::read_to_string(tmp.path().join(dir).join("scenario.toml")).unwrap();
    assert!(
        as_run.contains("seed = 7") && as_run.contains("end = \"5m\""),
        "{as_run}"
    );
    assert!(
        tmp.path()
            .join(dir)
            .join("actors/tenant-w-1.jsonl")
            .is_file()
    );
    let copied = format!("{dir}/scenario.toml");
    let again = dcemu(tmp.path(), &["run", &copied, "-q", "--out", "again"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("again/digest")).unwrap(),
        std::fs::read_to_string(tmp.path().join(dir).join("digest")).unwrap(),
        "the scenario as run reproduces the run"
    );
}

/// Issue 40 item 5: the same scenario and seed under two placements, one
/// after the other and without `--out`, land in two directories named by
/// what differs, each printed.
#[test]
fn runs_that_differ_by_their_overrides_get_directories_of_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    for placement in ["random", "best-fit"] {
        let set = format!("scheduler.placement={placement}");
        let o = dcemu(tmp.path(), &["run", &path, "--set", &set]);
        assert!(o.status.success(), "{placement}: {}", stderr(&o));
        let dir = format!("results/small-s1-{set}");
        assert!(stdout(&o).contains(&dir), "{}", stdout(&o));
        assert!(tmp.path().join(&dir).join("digest").is_file());
    }
    let o = dcemu(tmp.path(), &["run", &path, "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("results/small-s1/digest").is_file());
}

/// Issue 40 item 4: a failed run leaves its results marked `INCOMPLETE`;
/// a rerun without `--force` is refused saying so, and `--force` replaces
/// the directory whether the rerun fails again or completes, without a
/// `.incomplete` sibling.
#[test]
fn force_replaces_the_results_of_a_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let failing =
        format!("{SMALL}\n[scheduler.external]\ncommand = [\"sh\", \"-c\", \"exit 3\"]\n");
    let bad = scenario(tmp.path(), "bad.toml", &failing);
    let good = scenario(tmp.path(), "small.toml", SMALL);
    let o = dcemu(tmp.path(), &["run", &bad, "-q", "--out", "t"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(tmp.path().join("t/INCOMPLETE").is_file());
    let o = dcemu(tmp.path(), &["run", &good, "-q", "--out", "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did not finish") && stderr(&o).contains("--force"),
        "{}",
        stderr(&o)
    );
    let o = dcemu(tmp.path(), &["run", &bad, "-q", "--out", "t", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(tmp.path().join("t/INCOMPLETE").is_file());
    assert!(!tmp.path().join("t.incomplete").exists());
    let o = dcemu(tmp.path(), &["run", &good, "-q", "--out", "t", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!tmp.path().join("t/INCOMPLETE").exists());
    assert!(tmp.path().join("t/digest").is_file());
    assert!(!tmp.path().join("t.incomplete").exists());
}

#[test]
fn validate_accepts_good_scenarios() {
    let tmp = tempfile::tempdir().unwrap();
    let o = dcemu(tmp.path(), &["validate"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("valid"));
    let path = scenario(tmp.path(), "small.toml", SMALL);
    assert!(dcemu(tmp.path(), &["validate", &path]).status.success());
    assert!(
        !tmp.path().join("results").exists(),
        "validate writes nothing"
    );
}

/// Each bad scenario: the text change, the field the error must name, and a word of the problem.
const BAD: &[(&str, &str, &str, &str)] = &[
    (
        "name = \"small\"",
        "name = \"small\"\nseeed = 3",
        "run.seeed",
        "unknown field",
    ),
    ("end = \"10m\"", "end = \"-10m\"", "run.end", "negative"),
    (
        "end = \"10m\"",
        "end = \"ten minutes\"",
        "run.end",
        "invalid duration",
    ),
    ("name = \"small\"\n", "", "run.name", "missing field"),
    (
        "rate_per_s = 0.5",
        "rate_per_s = -1.0",
        "tenants[0].arrivals.rate_per_s",
        "positive",
    ),
    (
        "slots = 2",
        "slots = 0",
        "server_types[0].slots",
        "at least 1",
    ),
];

#[test]
fn validate_and_run_refuse_bad_scenarios_naming_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (from, to, field, word)) in BAD.iter().enumerate() {
        assert!(SMALL.contains(from));
        let path = scenario(
            tmp.path(),
            &format!("bad{i}.toml"),
            &SMALL.replacen(from, to, 1),
        );
        for cmd in ["validate", "run"] {
            let o = dcemu(tmp.path(), &[cmd, &path]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {to}: {err}");
            assert!(
                err.contains(&format!("{path}:")),
                "names the file with a line: {err}"
            );
            assert!(
                err.contains(&format!("field `{field}`")),
                "names {field}: {err}"
            );
            assert!(err.contains(word), "says {word:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    assert!(!tmp.path().join("results").exists());
}

#[test]
fn bad_flags_are_refused_with_exit_code_2() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--set", "run.seeed=4"], "--set run.seeed=4"),
        (&["run", "--set", "run.end=soon"], "--set run.end=soon"),
        (&["run", "--set", "noequals"], "KEY=VALUE"),
        (&["run", "--partitions", "0"], "--partitions"),
        (&["run", "--seed=-3"], "--seed"),
        (&["run", "--seed", "abc"], "--seed"),
        (
            &["run", "missing.toml"],
            "cannot read scenario file missing.toml",
        ),
        (
            &["validate", "--set", "topology.link_latency=0s"],
            "greater than 0",
        ),
    ];
    for (args, word) in cases {
        let o = dcemu(tmp.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(word),
            "{args:?} should mention {word:?}: {err}"
        );
    }
}

const TRACE_SCENARIO: &str = r#"
[run]
name = "replay"
end = "10m"

[applications]
apps = 4

[[server_types]]
name = "a"
count = 2
slots = 2

[[tenants]]
name = "replayer"
arrivals = { process = "trace", trace = "jobs.csv" }
"#;

const TRACE: &str = "# a small trace\narrival_s,priority,cpu,memory_gb,duration_s,app\n0.5,0,1,1,10,\n1.25,3,1,2,20,app:3\n1.25,11,2,4,5,multiprogrammed\n\n3,5,1,1,7.5,\n";

#[test]
fn a_trace_is_replayed_and_kept_with_the_results() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "replay.toml", TRACE_SCENARIO);
    std::fs::write(tmp.path().join("jobs.csv"), TRACE).unwrap();
    let o = dcemu(tmp.path(), &["run", &path, "-q", "--out", "r"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = std::fs::read_to_string(tmp.path().join("r/actors/tenant-replayer-0.jsonl")).unwrap();
    let submits: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "task_submit")
        .collect();
    let times: Vec<u64> = submits
        .iter()
        .map(|v| v["t_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(
        times,
        [500_000_000, 1_250_000_000, 1_250_000_000, 3_000_000_000]
    );
    assert_eq!(submits[1]["app"], 3);
    assert_eq!(submits[3]["service_ns"], 7_500_000_000u64);
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("r/traces/replayer.csv")).unwrap(),
        TRACE
    );
    // the results directory replays on its own, to the same digest
    let again = dcemu(tmp.path(), &["run", "r/scenario.toml", "-q", "--out", "r2"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("r/digest")).unwrap(),
        std::fs::read_to_string(tmp.path().join("r2/digest")).unwrap()
    );
}

#[test]
fn a_bad_trace_row_is_named_with_its_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "replay.toml", TRACE_SCENARIO);
    std::fs::write(
        tmp.path().join("jobs.csv"),
        TRACE.replace("3,5,1,1,7.5,", "3,5,1,1,-7.5,"),
    )
    .unwrap();
    let o = dcemu(tmp.path(), &["validate", &path]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("jobs.csv:7:") && err.contains("duration_s"),
        "{err}"
    );
    std::fs::write(tmp.path().join("jobs.csv"), TRACE.replace("app:3", "app:9")).unwrap();
    let err = stderr(&dcemu(tmp.path(), &["validate", &path]));
    assert!(
        err.contains("jobs.csv:4:") && err.contains("app:9 is not in the catalog"),
        "{err}"
    );
    std::fs::remove_file(tmp.path().join("jobs.csv")).unwrap();
    let err = stderr(&dcemu(tmp.path(), &["validate", &path]));
    assert!(
        err.contains("tenants[0].arrivals.trace") && err.contains("cannot read the trace"),
        "{err}"
    );
}

/// Issue 40 items 6 and 12: two placements of one scenario and seed, run
/// without `--out`, are labelled in the report by their placement; the
/// same directory twice, a missing one and the results of a failed run
/// are refused, each saying what is wrong.
#[test]
fn report_labels_runs_by_what_differs_and_refuses_what_it_cannot_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    let mut dirs = Vec::new();
    for placement in ["random", "best-fit"] {
        let set = format!("scheduler.placement={placement}");
        let o = dcemu(tmp.path(), &["run", &path, "-q", "--set", &set]);
        assert!(o.status.success(), "{}", stderr(&o));
        dirs.push(format!("results/small-s1-{set}"));
    }
    let o = dcemu(tmp.path(), &["report", &dirs[0], &dirs[1], "--out", "rep"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(tmp.path().join("rep/headline.md")).unwrap();
    assert!(
        md.starts_with(
            "| metric | small s1 scheduler.placement=random | small s1 scheduler.placement=best-fit |"
        ),
        "{md}"
    );

    let o = dcemu(tmp.path(), &["report", &dirs[0], &format!("./{}", dirs[0])]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("same results directory"),
        "{}",
        stderr(&o)
    );

    let o = dcemu(tmp.path(), &["report", "results/nonexistent"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no such results directory"),
        "{}",
        stderr(&o)
    );

    let failing =
        format!("{SMALL}\n[scheduler.external]\ncommand = [\"sh\", \"-c\", \"exit 3\"]\n");
    let bad = scenario(tmp.path(), "bad.toml", &failing);
    let o = dcemu(tmp.path(), &["run", &bad, "-q", "--out", "failed"]);
    assert_eq!(o.status.code(), Some(1));
    let o = dcemu(tmp.path(), &["report", &dirs[0], "failed"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did not finish") && stderr(&o).contains("complete runs"),
        "{}",
        stderr(&o)
    );
}

/// Issue 40 item 10: a kind no event has is named, with the nearest one
/// and the kinds there are; a directory that does not exist is said not
/// to exist; a kind that exists but matches nothing in the window is not
/// an error.
#[test]
fn logs_name_a_missing_kind_and_a_missing_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "small.toml", SMALL);
    assert!(
        dcemu(tmp.path(), &["run", &path, "-q", "--out", "r"])
            .status
            .success()
    );
    let o = dcemu(tmp.path(), &["logs", "r", "--kind", "task_arive"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("no event of kind \"task_arive\""), "{e}");
    assert!(e.contains("did you mean \"task_arrive\"?"), "{e}");
    assert!(e.contains("task_dispatch"), "the kinds there are: {e}");
    let o = dcemu(
        tmp.path(),
        &["logs", "r", "--kind", "task_arrive", "--to", "0s"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = dcemu(tmp.path(), &["logs", "results/nonexistent"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
}

/// Issue 40 item 11: a mistyped field or value gets the nearest one, no
/// message names a Rust type, and negative numbers are refused as numbers.
#[test]
fn typos_and_bad_values_are_refused_in_words() {
    let tmp = tempfile::tempdir().unwrap();
    let refused = |args: &[&str]| {
        let o = dcemu(tmp.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        for rust in ["u32", "u64", "f64", "usize", "invalid digit", "'-- -1'"] {
            assert!(!e.contains(rust), "{args:?} leaks {rust:?}: {e}");
        }
        e
    };
    let e = refused(&["run", "--set", "scheduler.placment=random"]);
    assert!(e.contains("did you mean \"placement\"?"), "{e}");
    assert!(
        !e.contains("sticky_slots"),
        "the suggestion, not the list: {e}"
    );
    let e = refused(&["run", "--set", "scheduler.placement=paragn"]);
    assert!(e.contains("did you mean \"paragon\"?"), "{e}");
    // admission and slot policies take registered names too: a typo is
    // still refused with the nearest built-in one
    let e = refused(&["run", "--set", "scheduler.admission=arqq"]);
    assert!(e.contains("did you mean \"arq\"?"), "{e}");
    let e = refused(&["run", "--set", "scheduler.slots=hybird"]);
    assert!(e.contains("did you mean \"hybrid\"?"), "{e}");
    let e = refused(&["run", "--set", "run.seed=-3"]);
    assert!(e.contains("expected a whole number ≥ 0, found -3"), "{e}");
    let e = refused(&["run", "--set", "tenants.0.count=abc"]);
    assert!(e.contains("found \"abc\""), "{e}");
    let e = refused(&["run", "--seed", "-1"]);
    assert!(
        e.contains("-1 is out of range: a whole number from 0"),
        "{e}"
    );
    let e = refused(&["run", "--partitions", "two"]);
    assert!(e.contains("\"two\" is not a whole number from 1"), "{e}");
}

/// Issue 40 item 9: `validate` refuses a program or script that does not
/// exist, naming the field; a program that crashes has its stderr shown
/// once, and the error names it and ends with its last line.
#[test]
fn an_external_program_is_checked_at_validation_and_its_crash_told_once() {
    let tmp = tempfile::tempdir().unwrap();
    let with = |command: &str| format!("{SMALL}\n[scheduler.external]\ncommand = {command}\n");
    let missing = scenario(tmp.path(), "missing.toml", &with(r#"["sh", "sched.sh"]"#));
    let o = dcemu(tmp.path(), &["validate", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("field `scheduler.external.command`: sh's file \"sched.sh\" does not exist"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        tmp.path().join("crash.sh"),
        "echo 'Traceback (most recent call last):' >&2\necho 'ValueError: boom' >&2\nexit 1\n",
    )
    .unwrap();
    let crashing = scenario(tmp.path(), "crash.toml", &with(r#"["sh", "crash.sh"]"#));
    let o = dcemu(tmp.path(), &["validate", &crashing]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = dcemu(tmp.path(), &["run", &crashing, "-q", "--out", "c"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert_eq!(e.matches("Traceback").count(), 1, "{e}");
    let error = e
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_default();
    assert!(
        error.contains("external scheduler `sh crash.sh`"),
        "{error}"
    );
    assert!(
        error.contains("it exited (exit status: 1) without answering"),
        "{error}"
    );
    assert!(error.contains("ended with: ValueError: boom"), "{error}");
    assert!(!error.contains("model error in actor"), "{error}");
}

/// Issue 40 item 7: a stock scenario runs under your own program without
/// a copied TOML, the program's files relative to the current directory;
/// the run lands in a directory of its own, and its recorded scenario
/// re-runs to the same digest from elsewhere.
#[test]
fn a_stock_scenario_runs_under_a_program_named_on_the_command_line() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let stock = tmp.path().join("stock");
    std::fs::create_dir(&stock).unwrap();
    scenario(&stock, "small.toml", SMALL);
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("first_fit.py"), FIRST_FIT).unwrap();
    let o = dcemu(
        &mine,
        &[
            "run",
            "../stock/small.toml",
            "--scheduler",
            "python3 first_fit.py",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let dir = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("results").map(str::trim))
        .unwrap_or_else(|| panic!("no results line: {out}"));
    assert!(
        dir.contains("small-s1-scheduler=python3_first_fit.py"),
        "{dir}"
    );
    let recorded = std::fs::read_to_string(mine.join(dir).join("scenario.toml")).unwrap();
    assert!(recorded.contains("placement = \"external\""), "{recorded}");
    let again = dcemu(
        tmp.path(),
        &[
            "run",
            &format!("mine/{dir}/scenario.toml"),
            "-q",
            "--out",
            "again",
        ],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("again/digest")).unwrap(),
        std::fs::read_to_string(mine.join(dir).join("digest")).unwrap()
    );
    let o = dcemu(
        &mine,
        &[
            "run",
            "../stock/small.toml",
            "--scheduler",
            "python3 'first_fit.py",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unbalanced quotes"), "{}", stderr(&o));
}

/// The first-fit program of [`a_stock_scenario_runs_under_a_program_named_on_the_command_line`].
const FIRST_FIT: &str = r#"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
json.loads(sys.stdin.readline())
send({"type": "hello", "protocol": 1})
for line in sys.stdin:
    req = json.loads(line)
    fits = [s["index"] for s in req["servers"] if s["free_slots"] >= req["task"]["cores"]]
    a = {"id": req["id"], "task": req["task"]["id"], "decision": "wait"}
    if fits:
        a.update(decision="place", server=fits[0])
    send(a)
"#;

/// Issue 40 items 1 and 2: the results keep the external program's file
/// (digested, hashed in run.json); the recorded scenario of an external
/// run and of a streamed-trace run re-runs to the same digest from another
/// directory; after the program is edited, replay names the file that
/// changed before anything else.
#[test]
fn the_record_of_a_run_keeps_its_program_and_reruns_from_anywhere() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("pack.py"), FIRST_FIT).unwrap();
    let text = format!("{SMALL}\n[scheduler.external]\ncommand = [\"python3\", \"pack.py\"]\n");
    scenario(&work, "pack.toml", &text);
    let o = dcemu(&work, &["run", "pack.toml", "-q", "--out", "../runs/pack"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs = tmp.path().join("runs");
    assert_eq!(
        std::fs::read_to_string(runs.join("pack/program/pack.py")).unwrap(),
        FIRST_FIT
    );
    let facts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs.join("pack/run.json")).unwrap()).unwrap();
    assert_eq!(facts["program"][0]["file"], "program/pack.py");
    assert_eq!(facts["program"][0]["sha256"].as_str().unwrap().len(), 64);
    let o = dcemu(
        &runs,
        &["run", "pack/scenario.toml", "-q", "--out", "again"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let digest = |d: &Path| std::fs::read_to_string(d.join("digest")).unwrap();
    assert_eq!(digest(&runs.join("again")), digest(&runs.join("pack")));

    let swf = format!(
        "{}/../scenarios/traces/swf.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = dcemu(
        &work,
        &[
            "run",
            &swf,
            "-q",
            "--set",
            "run.end=20m",
            "--out",
            "../runs/swf",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = dcemu(
        &work,
        &[
            "run",
            "../runs/swf/scenario.toml",
            "-q",
            "--out",
            "swf-again",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(digest(&work.join("swf-again")), digest(&runs.join("swf")));

    std::fs::write(work.join("pack.py"), format!("{FIRST_FIT}# tuned\n")).unwrap();
    let o = dcemu(tmp.path(), &["replay", "runs/pack"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("the external program changed (pack.py: sha256 "),
        "{e}"
    );
}

/// Issue 40 item 3: a fixed workload done long before `run.end` reports
/// the span its totals cover and what it used while active, exactly: the
/// active energy is the total less the idle tail's.
#[test]
fn a_run_that_ends_early_reports_its_active_span() {
    let tmp = tempfile::tempdir().unwrap();
    let path = format!(
        "{}/../scenarios/paragon/local-medium.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = dcemu(tmp.path(), &["run", &path, "--out", "r"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("  active span    totals and means cover run.end (12h"),
        "{}",
        stdout(&o)
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("r/metrics.json")).unwrap()).unwrap();
    let f = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    assert_eq!(f("horizon_s"), 12.0 * 3600.0);
    let (end, makespan) = (f("virtual_end_s"), f("makespan_s"));
    assert!(makespan > 0.0 && makespan <= end && end < f("horizon_s"));
    let tail_j = f("power_w_end_server") * (f("horizon_s") - end);
    let active = f("energy_kwh_total_active");
    assert!((active - (f("energy_kwh_total") - tail_j / 3.6e6)).abs() < 1e-9);
    assert!(
        active < f("energy_kwh_total") / 10.0,
        "the tail is most of the total"
    );
    let ratio = f("utilization_cpu_mean_active") / f("utilization_cpu_mean");
    assert!(
        (ratio - f("horizon_s") / end).abs() < 1e-6 * ratio,
        "{ratio}"
    );
    assert!(f("slot_utilization_mean_active") > f("slot_utilization_mean"));

    // an open workload runs to run.end: the active figures are the totals
    let small = scenario(tmp.path(), "small.toml", SMALL);
    let o = dcemu(tmp.path(), &["run", &small, "--out", "open"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("active span"), "{}", stdout(&o));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("open/metrics.json")).unwrap())
            .unwrap();
    for k in [
        "energy_kwh_total",
        "utilization_cpu_mean",
        "slot_utilization_mean",
    ] {
        let (a, b) = (
            m[k].as_f64().unwrap(),
            m[&format!("{k}_active")].as_f64().unwrap(),
        );
        assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{k}: {a} vs {b}");
    }
}

/// Issue 40 item 8: in the plain scenario of two server speeds, placements
/// give different numbers (best-fit packs the slow low-index servers).
#[test]
fn placement_matters_in_the_plain_scenario_of_two_server_speeds() {
    let tmp = tempfile::tempdir().unwrap();
    let path = format!(
        "{}/../scenarios/basic/mixed-servers.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let response = |placement: &str| {
        let set = format!("scheduler.placement={placement}");
        let o = dcemu(
            tmp.path(),
            &["run", &path, "-q", "--set", "run.end=30m", "--set", &set],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let dir = tmp
            .path()
            .join(format!("results/mixed-servers-s1-run.end=30m,{set}"));
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).unwrap()).unwrap();
        m["response_s_mean"].as_f64().unwrap()
    };
    let (random, packed) = (response("random"), response("best-fit"));
    assert!(
        packed > 1.05 * random,
        "best-fit {packed} s vs random {random} s"
    );
}

/// Issue 41: `dcemu validate` and `dcemu run` refuse an SWF log holding a
/// job larger than the scenario's whole machine, naming file, line and
/// field, before anything runs; `--lenient` skips and counts it.
#[test]
fn an_swf_job_larger_than_the_machine_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = format!("{}/../scenarios/traces", env!("CARGO_MANIFEST_DIR"));
    let log = std::fs::read_to_string(format!("{root}/swf/sample.swf")).unwrap();
    let log = log.replacen(
        "    2     30      0     45     1",
        "    2     30      0     45   512",
        1,
    );
    std::fs::create_dir(tmp.path().join("swf")).unwrap();
    std::fs::write(tmp.path().join("swf/sample.swf"), log).unwrap();
    let text = std::fs::read_to_string(format!("{root}/swf.toml")).unwrap();
    std::fs::write(tmp.path().join("swf.toml"), text).unwrap();
    for cmd in ["validate", "run"] {
        let o = dcemu(tmp.path(), &[cmd, "swf.toml"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stdout(&o));
        let e = stderr(&o);
        assert!(
            e.contains("sample.swf:24:30")
                && e.contains("field 5 (allocated processors): the job needs 512 processors"),
            "{cmd}: {e}"
        );
    }
    assert!(!tmp.path().join("results").exists(), "nothing ran");
    let o = dcemu(tmp.path(), &["validate", "swf.toml", "--lenient"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
