//! `dcemu calibrate` and the calibrated / validated rows of `dcemu
//! reproduce`, on a synthetic paper: a tiny scenario whose arrival rate
//! (`tenants.0.arrivals.rate_per_s`) is the free parameter, fitted to the
//! tasks submitted in one and in two minutes (monotone in the rate, about
//! 0.5 tasks/s fits both). Runs take milliseconds.

mod common;

use std::path::{Path, PathBuf};

use common::dcemu;

const SCENARIO: &str = r#"# A tiny scenario for the calibration tests.
[run]
name = "tiny"
end = "1m"

[[server_types]]
name = "a"
count = 2
slots = 2

[[tenants]]
name = "w"
# the arrival rate is the free parameter
arrivals = { process = "poisson", rate_per_s = 2.0 } # not fitted yet
service = { distribution = "exponential", mean = "5s" }
"#;

const EXPERIMENTS: &str = r#"paper = "paragon"
title = "Synthetic"
source = "none.txt"

[[experiment]]
id = "load"
title = "Tasks submitted"
scenario = "tiny.toml"
citation = "§5"
metric = "tasks_submitted"
tolerance = 8.0

[[experiment.row]]
label = "1m"
paper = 30.0

[[experiment.row]]
label = "2m"
set = ["run.end=2m"]
paper = 60.0

[[experiment]]
id = "done"
title = "Tasks completed"
scenario = "tiny.toml"
citation = "§6"
metric = "tasks_completed"
tolerance = 1000.0

[[experiment.row]]
label = "C1"
paper = 10.0

[[experiment.row]]
label = "C2"
set = ["run.end=2m"]

[[experiment.ordering]]
claim = "C2 > C1"
"#;

const BLOCK: &str = r#"
[[calibration]]
name = "rate"
key = "tenants.0.arrivals.rate_per_s"
scenarios = ["tiny.toml"]
range = [0.1, 3.0]
start = 2.0
targets = ["load"]
why = "The paper gives no arrival rate; fitted to the submissions."
"#;

/// A directory holding `reproduce/tiny.toml` and `reproduce/paragon.toml`
/// (the experiments and then `block`).
fn paper_dir(block: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("reproduce");
    std::fs::create_dir(&r).unwrap();
    std::fs::write(r.join("tiny.toml"), SCENARIO).unwrap();
    std::fs::write(r.join("paragon.toml"), format!("{EXPERIMENTS}{block}")).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn calibrate(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "calibrate",
        "paragon",
        "--experiments",
        "reproduce",
        "--out",
        "out",
    ];
    args.extend(extra);
    dcemu(dir, &args)
}

/// `dcemu reproduce` of the synthetic paper into `rep`, calibration seeds only.
fn reproduce_unseen_none(dir: &Path) -> std::process::Output {
    dcemu(
        dir,
        &[
            "reproduce",
            "paragon",
            "--experiments",
            "reproduce",
            "--out",
            "rep",
            "--validation-seeds",
            "none",
        ],
    )
}

/// The `value` the paper file's `[[calibration]]` holds.
fn fitted_value(dir: &Path) -> f64 {
    let paper: toml::Table = read(dir, "reproduce/paragon.toml").parse().unwrap();
    paper["calibration"][0]["value"]
        .as_float()
        .expect("a float value")
}

#[test]
fn calibrate_fits_the_target_writes_back_and_does_not_depend_on_jobs() {
    let (a, b) = (paper_dir(BLOCK), paper_dir(BLOCK));
    let one = calibrate(a.path(), &["--jobs", "1"]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let two = calibrate(b.path(), &["--jobs", "2"]);
    assert!(two.status.success(), "{}", text(&two.stderr));
    for file in [
        "reproduce/tiny.toml",
        "reproduce/paragon.toml",
        "out/calibration.csv",
        "out/calibration.md",
    ] {
        assert_eq!(
            read(a.path(), file),
            read(b.path(), file),
            "{file} depends on --jobs"
        );
    }
    // moved from the start to a value whose targets are within tolerance
    let value = fitted_value(a.path());
    assert!(value != 2.0 && (0.1..=3.0).contains(&value), "{value}");
    let md = read(a.path(), "out/calibration.md");
    assert!(md.contains("| load/1m | `tasks_submitted` | 30 |"), "{md}");
    assert_eq!(
        md.matches("| yes |").count(),
        2,
        "both targets within:\n{md}"
    );
    let stdout = text(&one.stdout);
    assert!(
        stdout.contains("| rate | `tenants.0.arrivals.rate_per_s` | 2.0 |"),
        "{stdout}"
    );
    // comments and layout survive; the written comment names commit and block
    let scenario = read(a.path(), "reproduce/tiny.toml");
    assert!(scenario.starts_with("# A tiny scenario for the calibration tests.\n[run]\n"));
    let line = format!("rate_per_s = {value} }} # not fitted yet\n");
    assert!(scenario.contains(&line), "{scenario}");
    let comment = scenario
        .lines()
        .find(|l| l.starts_with("# fitted by dcemu calibrate paragon (commit unknown, "))
        .unwrap_or_else(|| panic!("{scenario}"));
    assert!(
        comment.ends_with("): [[calibration]] rate in reproduce/paragon.toml"),
        "{comment}"
    );
    assert!(scenario.contains(&format!(
        "# the arrival rate is the free parameter\n{comment}\narrivals = "
    )));
    let paper = read(a.path(), "reproduce/paragon.toml");
    assert!(
        paper.starts_with(EXPERIMENTS),
        "the experiments are kept as they were"
    );
    assert!(
        paper.contains(
            "fitted = \"dcemu calibrate paragon --seeds 1,2,3 --budget 200 · commit unknown · "
        ),
        "{paper}"
    );
    let csv = read(a.path(), "out/calibration.csv");
    assert!(
        csv.starts_with("iteration,rate,load/1m,load/2m,loss\n0,2.0,"),
        "{csv}"
    );
    assert!(
        a.path()
            .join("out/runs/tiny_rate-per-s-2-0_s1/metrics.json")
            .is_file()
    );

    // from the committed start again: the same values, the same files
    let before = (
        read(a.path(), "reproduce/tiny.toml"),
        read(a.path(), "reproduce/paragon.toml"),
    );
    let again = calibrate(a.path(), &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        !text(&again.stderr).contains("warning"),
        "{}",
        text(&again.stderr)
    );
    let after = (
        read(a.path(), "reproduce/tiny.toml"),
        read(a.path(), "reproduce/paragon.toml"),
    );
    assert_eq!(before, after);

    // reproduce: calibrated rows on seeds 1-3 only; validated rows and the
    // ordering's rows on the unseen seeds too
    let o = dcemu(
        a.path(),
        &[
            "reproduce",
            "--experiments",
            "reproduce",
            "--out",
            "rep",
            "--check",
        ],
    );
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let csv = read(a.path(), "rep/reproduction.csv");
    let row = |label: &str| {
        csv.lines()
            .find(|l| l.contains(&format!(",{label},")))
            .unwrap_or_else(|| panic!("{label}: {csv}"))
            .to_string()
    };
    assert!(row("1m").contains(",value,calibrated,1m,"), "{csv}");
    assert!(!row("1m").contains("s11="), "{csv}");
    assert!(row("2m").contains(",value,calibrated,2m,"), "{csv}");
    assert!(row("C1").contains(",value,validated,C1,"), "{csv}");
    assert!(
        row("C1").ends_with(";s11=") || row("C1").contains(";s11="),
        "{csv}"
    );
    assert!(
        row("C2").contains(";s13="),
        "the ordering's rows run on unseen seeds: {csv}"
    );
    assert!(row("C2 > C1").contains(",ordering,validated,"), "{csv}");
    let md = read(a.path(), "rep/reproduction.md");
    assert!(
        md.contains("| rate | `tenants.0.arrivals.rate_per_s` | "),
        "{md}"
    );
    assert!(
        md.contains("| 1m | calibrated | `tasks_submitted` |"),
        "{md}"
    );
    assert!(
        md.contains("| C1 | validated | `tasks_completed` |"),
        "{md}"
    );
    let o = reproduce_unseen_none(a.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!read(a.path(), "rep/reproduction.csv").contains("s11="));
}

/// A second stage: its own scenario, its own targets, fitted after the
/// first with the first's values written, reported and written back apart.
#[test]
fn a_second_stage_is_fitted_after_the_first_and_written_with_it() {
    let staged = format!(
        "{BLOCK}\n[[experiment]]\nid = \"load2\"\ntitle = \"Tasks submitted, second scenario\"\nscenario = \"tiny2.toml\"\ncitation = \"§5\"\nmetric = \"tasks_submitted\"\ntolerance = 8.0\n\n[[experiment.row]]\nlabel = \"1m\"\npaper = 90.0\n\n[[experiment.row]]\nlabel = \"2m\"\nset = [\"run.end=2m\"]\npaper = 180.0\n\n[[calibration]]\nname = \"rate2\"\nkey = \"tenants.0.arrivals.rate_per_s\"\nstage = 2\nscenarios = [\"tiny2.toml\"]\nrange = [0.1, 3.0]\nstart = 0.5\ntargets = [\"load2\"]\nwhy = \"The second scenario's rate.\"\n"
    );
    let dir = paper_dir(&staged);
    std::fs::write(dir.path().join("reproduce/tiny2.toml"), SCENARIO).unwrap();
    let o = calibrate(dir.path(), &["--budget", "400"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let paper: toml::Table = read(dir.path(), "reproduce/paragon.toml").parse().unwrap();
    let value = |i: usize| paper["calibration"][i]["value"].as_float().unwrap();
    assert!((value(0) - 0.5).abs() < 0.15, "stage 1: {}", value(0));
    assert!((value(1) - 1.5).abs() < 0.3, "stage 2: {}", value(1));
    for (file, v) in [("tiny.toml", value(0)), ("tiny2.toml", value(1))] {
        let t: toml::Table = read(dir.path(), &format!("reproduce/{file}"))
            .parse()
            .unwrap();
        assert_eq!(
            t["tenants"][0]["arrivals"]["rate_per_s"].as_float(),
            Some(v),
            "{file}"
        );
    }
    let md = read(dir.path(), "out/calibration.md");
    assert!(md.contains("stage 1") && md.contains("stage 2"), "{md}");
    assert!(
        read(dir.path(), "out/calibration-stage-2.csv")
            .starts_with("iteration,rate2,load2/1m,load2/2m,loss\n")
    );
    let r = reproduce_unseen_none(dir.path());
    assert!(r.status.success(), "{}", text(&r.stderr));
}

#[test]
fn dry_run_writes_nothing_but_its_report() {
    let dir = paper_dir(BLOCK);
    let o = calibrate(dir.path(), &["--dry-run", "--budget", "30"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(read(dir.path(), "reproduce/tiny.toml"), SCENARIO);
    assert_eq!(
        read(dir.path(), "reproduce/paragon.toml"),
        format!("{EXPERIMENTS}{BLOCK}")
    );
    assert!(
        text(&o.stdout).contains("run budget reached"),
        "{}",
        text(&o.stdout)
    );
    assert!(dir.path().join("out/calibration.md").is_file());
    let o = calibrate(dir.path(), &["--budget", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("the starting point alone needs 6 runs"),
        "{}",
        text(&o.stderr)
    );
}

/// Each bad `[[calibration]]` with what the error must say; every one
/// names `paragon.toml:line:column` and exits 2, in both commands.
#[test]
fn bad_calibration_blocks_name_file_line_and_column_and_exit_2() {
    let cases: &[(&str, &str, &str)] = &[
        ("why = ", "bogus = 1\nwhy = ", "unknown field `bogus`"),
        (
            "name = \"rate\"",
            "name = \"rate x\"",
            "calibration[0].name",
        ),
        (
            "arrivals.rate_per_s\"",
            "arrivals.rate_typo\"",
            "calibration[0].key",
        ),
        (
            "[\"tiny.toml\"]",
            "[\"missing.toml\"]",
            "calibration[0].scenarios[0]`: cannot read",
        ),
        ("[0.1, 3.0]", "[3.0, 0.1]", "empty or inverted"),
        (
            "start = 2.0",
            "start = 5.0",
            "calibration[0].start`: 5 is outside the range",
        ),
        (
            "start = 2.0",
            "start = 2.0\nstep = 9.0",
            "calibration[0].step",
        ),
        (
            "start = 2.0",
            "start = 2.0\nvalue = 7.0\nfitted = \"x\"",
            "calibration[0].value`: 7 is outside",
        ),
        ("[\"load\"]", "[\"nothing\"]", "no experiment \"nothing\""),
        ("[\"load\"]", "[\"load/3m\"]", "has no row \"3m\""),
        ("[\"load\"]", "[\"done/C2\"]", "no `paper` value"),
        ("[\"load\"]", "[\"done/C2 > C1\"]", "is an ordering"),
        (
            "[\"load\"]",
            "[\"load/1m\"]",
            "1 free parameter(s) but 1 distinct target row(s)",
        ),
        (
            "why = \"The paper gives no arrival rate; fitted to the submissions.\"",
            "why = \" \"",
            "calibration[0].why",
        ),
        (
            "start = 2.0",
            "start = 2.5\ninteger = true",
            "is not an integer",
        ),
        (
            "start = 2.0",
            "start = 2.0\nstarts = [9.0]",
            "calibration[0].starts[0]`: 9 must be inside the range",
        ),
        (
            "start = 2.0",
            "start = 2.0\nstage = 0",
            "calibration[0].stage`: stages count from 1",
        ),
        (
            "targets = [\"load\"]\nwhy = \"The paper gives no arrival rate; fitted to the submissions.\"",
            "targets = [\"load\", \"cap/B\"]\nwhy = \"x\"\n\n[[experiment]]\nid = \"cap\"\ntitle = \"C\"\nscenario = \"tiny.toml\"\ncitation = \"§6\"\nmetric = \"tasks_submitted\"\n\n[[experiment.row]]\nlabel = \"B\"\npaper = 100.0\nbound = \"at-most\"",
            "is a bound, which a fit cannot aim at",
        ),
        (
            "why = \"The paper gives no arrival rate; fitted to the submissions.\"",
            "why = \"x\"\n\n[[calibration]]\nname = \"again\"\nkey = \"tenants.0.service.mean\"\nstage = 2\nscenarios = [\"tiny.toml\"]\nrange = [1.0, 9.0]\nstart = 5.0\ntargets = [\"done\"]\nwhy = \"x\"",
            "stage 2 writes tiny.toml, which runs load/1m, a target of stage 1",
        ),
    ];
    for (from, to, want) in cases {
        assert!(BLOCK.contains(from), "{from}");
        let dir = paper_dir(&BLOCK.replacen(from, to, 1));
        for command in ["calibrate", "reproduce"] {
            let o = dcemu(
                dir.path(),
                &[
                    command,
                    "paragon",
                    "--experiments",
                    "reproduce",
                    "--out",
                    "out",
                ],
            );
            let e = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{command} {to}: {e}");
            assert!(e.contains(want), "{command} {to}: want {want:?} in {e}");
            let located = e.lines().any(|l| {
                l.split("paragon.toml:")
                    .nth(1)
                    .and_then(|rest| {
                        let mut p = rest.splitn(3, ':');
                        Some(
                            p.next()?.parse::<usize>().is_ok()
                                && p.next()?.parse::<usize>().is_ok(),
                        )
                    })
                    .unwrap_or(false)
            });
            assert!(located, "{command} {to}: no file:line:column in {e}");
        }
    }
}

#[test]
fn reproduce_refuses_a_scenario_whose_value_differs_from_the_declared_one() {
    let declared = BLOCK.replacen(
        "start = 2.0",
        "start = 2.0\nvalue = 2.0\nfitted = \"by hand\"",
        1,
    );
    let dir = paper_dir(&declared);
    let args = [
        "reproduce",
        "--experiments",
        "reproduce",
        "--out",
        "out",
        "--seeds",
        "1",
        "--validation-seeds",
        "none",
    ];
    let o = dcemu(dir.path(), &args);
    assert!(
        o.status.success(),
        "the scenario holds 2.0: {}",
        text(&o.stderr)
    );
    let r = dir.path().join("reproduce/tiny.toml");
    std::fs::write(&r, SCENARIO.replace("rate_per_s = 2.0", "rate_per_s = 2.5")).unwrap();
    let o = dcemu(dir.path(), &args);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    for want in [
        "tiny.toml",
        "`tenants.0.arrivals.rate_per_s` is 2.5",
        "declares value = 2.0",
        "run dcemu calibrate paragon",
    ] {
        assert!(e.contains(want), "want {want:?} in {e}");
    }
    // calibrate says so, and its write-back repairs it
    let o = calibrate(dir.path(), &["--budget", "30"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("warning: ") && text(&o.stderr).contains("this run overwrites it")
    );
    let o = dcemu(dir.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the emulator crate lives in the workspace")
        .to_path_buf()
}

/// Every real experiment file loads, and each fitted value it declares is
/// the one its scenarios hold: a value typed by hand into a scenario (or
/// into a paper file) fails here.
#[test]
fn every_real_experiment_file_holds_its_fitted_values() {
    use dcemu::reproduce::calibration::check_values;
    use dcemu::reproduce::experiments::load_papers;
    let dir = repo().join("scenarios/reproduce");
    let papers = load_papers(&dir, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(papers.len() >= 6, "{} papers", papers.len());
    let stale: Vec<String> = papers
        .iter()
        .flat_map(|p| check_values(&p.name, &p.file, &p.calibrations))
        .collect();
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

/// A choice parameter beside [`BLOCK`]: the arrival process, one of two words.
const CHOICE: &str = r#"
[[calibration]]
name = "process"
key = "tenants.0.arrivals.process"
scenarios = ["tiny.toml"]
choices = ["poisson", "constant"]
start = "poisson"
targets = ["load", "done/C1"]
why = "The paper names no arrival process; fitted with the rate."
"#;

#[test]
fn a_choice_parameter_is_searched_over_its_words_and_written_as_one() {
    let dir = paper_dir(&format!("{BLOCK}{CHOICE}"));
    let o = calibrate(dir.path(), &["--jobs", "2"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let paper: toml::Table = read(dir.path(), "reproduce/paragon.toml").parse().unwrap();
    let word = paper["calibration"][1]["value"]
        .as_str()
        .expect("a choice is written as its word")
        .to_string();
    assert!(["poisson", "constant"].contains(&word.as_str()), "{word}");
    let scenario = read(dir.path(), "reproduce/tiny.toml");
    assert!(
        scenario.contains(&format!("process = \"{word}\"")),
        "{scenario}"
    );
    let md = read(dir.path(), "out/calibration.md");
    assert!(md.contains("one of poisson, constant"), "{md}");
    let o = reproduce_unseen_none(dir.path());
    assert!(o.status.success(), "{}", text(&o.stderr));

    let other = if word == "poisson" {
        "constant"
    } else {
        "poisson"
    };
    std::fs::write(
        dir.path().join("reproduce/tiny.toml"),
        scenario.replace(
            &format!("process = \"{word}\""),
            &format!("process = \"{other}\""),
        ),
    )
    .unwrap();
    let o = reproduce_unseen_none(dir.path());
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!("`tenants.0.arrivals.process` is {other}")),
        "{e}"
    );
    assert!(e.contains(&format!("declares value = {word}")), "{e}");
}

#[test]
fn bad_choice_blocks_are_refused_with_the_field_named() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "start = \"poisson\"",
            "start = 1.0",
            "calibration[1].start`: 1 is a number, but the parameter is a choice",
        ),
        (
            "start = \"poisson\"",
            "start = \"gaussian\"",
            "\"gaussian\" is not one of the choices (poisson, constant)",
        ),
        (
            "start = \"poisson\"",
            "start = \"poisson\"\nrange = [0.0, 1.0]",
            "calibration[1].range`: a choice parameter",
        ),
        (
            "[\"poisson\", \"constant\"]",
            "[\"poisson\"]",
            "calibration[1].choices`: give at least two",
        ),
        (
            "[\"poisson\", \"constant\"]",
            "[\"poisson\", \"poisson\"]",
            "\"poisson\" is listed twice",
        ),
        (
            "start = \"poisson\"",
            "start = \"poisson\"\nvalue = \"bursty\"\nfitted = \"x\"",
            "calibration[1].value`: \"bursty\" is not one of the choices",
        ),
    ];
    for (from, to, want) in cases {
        assert!(CHOICE.contains(from), "{from}");
        let dir = paper_dir(&format!("{BLOCK}{}", CHOICE.replacen(from, to, 1)));
        let o = calibrate(dir.path(), &[]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{to}: {e}");
        assert!(e.contains(want), "{to}: want {want:?} in {e}");
    }
    let numeric = BLOCK.replacen("start = 2.0", "start = \"fast\"", 1);
    let dir = paper_dir(&numeric);
    let e = text(&calibrate(dir.path(), &[]).stderr);
    assert!(
        e.contains("calibration[0].start`: \"fast\" is a word, but the parameter is numeric"),
        "{e}"
    );
}
