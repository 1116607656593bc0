//! Experiment files: `scenarios/reproduce/<paper>.toml`, one per paper.
//!
//! An experiment names a scenario, the metric to read, and rows: each row
//! a policy (a set of `--set` overrides) with the paper's value, its
//! citation and a tolerance. Orderings (`"P > NI"`) state what the paper
//! says about rows relative to each other. Verdicts that the emulator is
//! known not to meet carry an `open` reason, so a reader sees the gap and
//! why, and `--check` keeps passing until the gap closes (then it asks for
//! the reason to be removed). The format is documented in
//! `scenarios/reproduce/README.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::calibration::{self, Calibration, CalibrationFile};
use super::data::Role;
pub use super::data::{Bound, Experiment, Kind, Ordering, Plot, Row};
use crate::scenario::{self, Origin, Override, ScenarioError, ScenarioErrors};
use crate::toml_file::{self, Problems};

/// The papers `dcemu reproduce` knows, in report order.
pub const PAPERS: &[&str] = &["paragon", "arq", "thesis", "gems", "harvest", "distributed"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PaperFile {
    paper: String,
    title: String,
    source: String,
    #[serde(default)]
    experiment: Vec<ExperimentFile>,
    #[serde(default)]
    calibration: Vec<CalibrationFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    id: String,
    title: String,
    scenario: String,
    citation: String,
    metric: String,
    #[serde(default)]
    kind: Kind,
    #[serde(default)]
    quick: bool,
    #[serde(default)]
    set: Vec<String>,
    tolerance: Option<f64>,
    note: Option<String>,
    #[serde(default)]
    plots: Vec<Plot>,
    row: Vec<RowFile>,
    #[serde(default)]
    ordering: Vec<OrderingFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFile {
    label: String,
    scenario: Option<String>,
    #[serde(default)]
    set: Vec<String>,
    metric: Option<String>,
    paper: Option<f64>,
    bound: Option<Bound>,
    citation: Option<String>,
    tolerance: Option<f64>,
    open: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderingFile {
    claim: String,
    citation: Option<String>,
    open: Option<String>,
}

/// One paper's experiments, validated.
#[derive(Debug)]
pub struct Paper {
    pub name: String,
    pub title: String,
    pub source: String,
    pub file: PathBuf,
    pub experiments: Vec<Experiment>,
    /// The free parameters (`[[calibration]]`), in file order.
    pub calibrations: Vec<Calibration>,
}

/// Finds the experiment files of `papers` (all that exist when empty) in `dir`.
pub fn load_papers(dir: &Path, papers: &[String]) -> Result<Vec<Paper>, ScenarioErrors> {
    let plain = |problem: String| {
        ScenarioErrors(vec![ScenarioError {
            origin: Origin::File {
                path: dir.display().to_string(),
                at: None,
            },
            field: None,
            problem,
        }])
    };
    if !dir.is_dir() {
        return Err(plain(
            "not a directory of experiment files (run from a dcemu checkout or pass --experiments)"
                .into(),
        ));
    }
    for p in papers {
        if !PAPERS.contains(&p.as_str()) {
            return Err(plain(format!(
                "unknown paper {p:?}: expected one of {}",
                PAPERS.join(", ")
            )));
        }
    }
    let wanted: Vec<&str> = if papers.is_empty() {
        PAPERS
            .iter()
            .copied()
            .filter(|p| dir.join(format!("{p}.toml")).is_file())
            .collect()
    } else {
        PAPERS
            .iter()
            .copied()
            .filter(|p| papers.iter().any(|q| q == p))
            .collect()
    };
    if wanted.is_empty() {
        return Err(plain("holds no experiment file (<paper>.toml)".into()));
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for name in wanted {
        let path = dir.join(format!("{name}.toml"));
        let label = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(ScenarioError {
                    origin: Origin::File {
                        path: label,
                        at: None,
                    },
                    field: None,
                    problem: format!("cannot read the experiment file for {name}: {e}"),
                });
                continue;
            }
        };
        match parse(&path, &text, name) {
            Ok(paper) => out.push(paper),
            Err(e) => errors.extend(e.0),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ScenarioErrors(errors))
    }
}

/// Parses and validates one experiment file; `expected` is its paper's name.
pub fn parse(path: &Path, text: &str, expected: &str) -> Result<Paper, ScenarioErrors> {
    let label = path.display().to_string();
    let raw: PaperFile = toml_file::deserialize(&label, text)?;
    let doc = toml_edit::Document::parse(text.to_string()).ok();
    let mut problems = Problems::new(&label, text, doc.as_ref());
    if raw.paper != expected {
        problems.add(
            "paper",
            format!("is {:?}, but the file is {expected}.toml", raw.paper),
        );
    }
    if raw.experiment.is_empty() {
        problems.add("experiment", "the file has no [[experiment]]".into());
    }
    let base = path.parent().unwrap_or(Path::new(""));
    let mut experiments = Vec::new();
    for (i, e) in raw.experiment.into_iter().enumerate() {
        let at = |f: &str| format!("experiment[{i}].{f}");
        if experiments.iter().any(|x: &Experiment| x.id == e.id) {
            problems.add(
                &at("id"),
                format!("{:?} is used by an earlier experiment", e.id),
            );
        }
        if e.id.is_empty() || !e.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            problems.add(
                &at("id"),
                "must be non-empty letters, digits and '-' (it names files)".into(),
            );
        }
        if e.row.is_empty() {
            problems.add(
                &at("row"),
                "an experiment needs at least one [[experiment.row]]".into(),
            );
        }
        if let Some(t) = e.tolerance {
            check_tolerance(&mut problems, &at("tolerance"), t);
        }
        let scenario_path = base.join(&e.scenario);
        let scenario_text = read_scenario(&mut problems, &at("scenario"), &scenario_path);
        let common = parse_sets(&mut problems, &at("set"), &e.set);
        let mut rows = Vec::new();
        for (j, r) in e.row.into_iter().enumerate() {
            let rat = |f: &str| format!("experiment[{i}].row[{j}].{f}");
            if rows.iter().any(|x: &Row| x.label == r.label) {
                problems.add(
                    &rat("label"),
                    format!("{:?} is used by an earlier row", r.label),
                );
            }
            if r.label.trim().is_empty() {
                problems.add(&rat("label"), "must not be empty".into());
            }
            let mut overrides = common.clone();
            overrides.extend(parse_sets(&mut problems, &rat("set"), &r.set));
            let (row_scenario, row_path, row_text) = match &r.scenario {
                None => (
                    e.scenario.clone(),
                    scenario_path.clone(),
                    scenario_text.clone(),
                ),
                Some(file) => {
                    let path = base.join(file);
                    let text = read_scenario(&mut problems, &rat("scenario"), &path);
                    (file.clone(), path, text)
                }
            };
            if let Some(text) = &row_text {
                let shown = row_path.display().to_string();
                if let Err(err) = scenario::load(&shown, text, &overrides) {
                    let field = if r.set.is_empty() {
                        at("set")
                    } else {
                        rat("set")
                    };
                    for line in err.0 {
                        problems.add(&field, format!("the scenario refuses it: {line}"));
                    }
                }
            }
            let tolerance = if r.bound.is_some() {
                None
            } else {
                r.tolerance.or(e.tolerance)
            };
            if let Some(t) = r.tolerance {
                check_tolerance(&mut problems, &rat("tolerance"), t);
                if r.bound.is_some() {
                    problems.add(
                        &rat("tolerance"),
                        "a bound is judged without a tolerance: remove one of them".into(),
                    );
                }
            }
            if r.bound.is_some() && r.paper.is_none() {
                problems.add(&rat("bound"), "needs the `paper` value it bounds".into());
            }
            if let Some(p) = r.paper {
                if !p.is_finite() {
                    problems.add(&rat("paper"), "must be a finite number".into());
                }
                if tolerance.is_none() && r.bound.is_none() {
                    problems.add(
                        &rat("paper"),
                        "a paper value needs a tolerance (on the row or its experiment)".into(),
                    );
                }
            }
            if r.open.is_some() && r.paper.is_none() {
                problems.add(
                    &rat("open"),
                    "explains a gap, but the row has no paper value".into(),
                );
            }
            let metric = r.metric.unwrap_or_else(|| e.metric.clone());
            if metric.trim().is_empty() {
                problems.add(&rat("metric"), "must name a metric of metrics.json".into());
            }
            rows.push(Row {
                label: r.label,
                scenario: row_scenario,
                scenario_path: row_path,
                scenario_text: row_text.unwrap_or_default(),
                overrides,
                metric,
                paper: r.paper,
                bound: r.bound,
                citation: r.citation,
                tolerance,
                open: r.open.filter(|s| !s.trim().is_empty()),
                role: Role::Validated,
            });
        }
        let mut orderings = Vec::new();
        for (k, o) in e.ordering.into_iter().enumerate() {
            let field = format!("experiment[{i}].ordering[{k}].claim");
            match parse_claim(&o.claim, &rows) {
                Ok((higher, lower, strict)) => orderings.push(Ordering {
                    claim: o.claim,
                    higher,
                    lower,
                    strict,
                    citation: o.citation,
                    open: o.open.filter(|s| !s.trim().is_empty()),
                }),
                Err(problem) => problems.add(&field, problem),
            }
        }
        experiments.push(Experiment {
            id: e.id,
            title: e.title,
            scenario: e.scenario,
            citation: e.citation,
            kind: e.kind,
            quick: e.quick,
            note: e.note,
            plots: e.plots,
            rows,
            orderings,
        });
    }
    let calibrations = calibration::parse(raw.calibration, &mut experiments, base, &mut problems);
    if !problems.found.is_empty() {
        return Err(ScenarioErrors(problems.found));
    }
    Ok(Paper {
        name: raw.paper,
        title: raw.title,
        source: raw.source,
        file: path.to_path_buf(),
        experiments,
        calibrations,
    })
}

fn read_scenario(problems: &mut Problems<'_>, field: &str, path: &Path) -> Option<Arc<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Some(Arc::new(t)),
        Err(err) => {
            problems.add(field, format!("cannot read {}: {err}", path.display()));
            None
        }
    }
}

fn check_tolerance(problems: &mut Problems<'_>, field: &str, t: f64) {
    if !(t.is_finite() && t >= 0.0) {
        problems.add(field, format!("must be a number ≥ 0, not {t}"));
    }
}

fn parse_sets(problems: &mut Problems<'_>, field: &str, sets: &[String]) -> Vec<Override> {
    sets.iter()
        .filter_map(|s| match s.parse::<Override>() {
            Ok(o) => Some(o),
            Err(e) => {
                problems.add(field, e);
                None
            }
        })
        .collect()
}

/// `"A > B"`, `"A >= B"`, `"A < B"` or `"A <= B"` over row labels.
fn parse_claim(claim: &str, rows: &[Row]) -> Result<(usize, usize, bool), String> {
    let ops = [
        (">=", false, false),
        ("<=", false, true),
        (">", true, false),
        ("<", true, true),
    ];
    let Some((lhs, rhs, strict, flipped)) = ops.iter().find_map(|&(op, strict, flipped)| {
        claim
            .split_once(op)
            .map(|(a, b)| (a.trim(), b.trim(), strict, flipped))
    }) else {
        return Err(format!(
            "{claim:?} is not a claim like \"P > NI\" (operators >, >=, <, <=)"
        ));
    };
    let find = |name: &str| {
        rows.iter().position(|r| r.label == name).ok_or_else(|| {
            let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
            format!(
                "{name:?} is not a row of this experiment (rows: {})",
                labels.join(", ")
            )
        })
    };
    let (a, b) = (find(lhs)?, find(rhs)?);
    if a == b {
        return Err(format!("{claim:?} compares a row with itself"));
    }
    if rows[a].metric != rows[b].metric {
        return Err(format!(
            "{claim:?} compares different metrics ({} and {})",
            rows[a].metric, rows[b].metric
        ));
    }
    Ok(if flipped {
        (b, a, strict)
    } else {
        (a, b, strict)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
[run]
name = "tiny"
end = "10s"

[[server_types]]
name = "s"
count = 2
cores = 4
memory_gb = 8
"#;

    fn write(dir: &Path, body: &str) -> PathBuf {
        std::fs::write(dir.join("tiny.toml"), SCENARIO).unwrap();
        let path = dir.join("paragon.toml");
        std::fs::write(&path, body).unwrap();
        path
    }

    fn errors(body: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), body);
        let text = std::fs::read_to_string(&path).unwrap();
        parse(&path, &text, "paragon").unwrap_err().to_string()
    }

    const HEAD: &str = "paper = \"paragon\"\ntitle = \"T\"\nsource = \"s.txt\"\n";

    fn experiment(rows: &str) -> String {
        format!(
            "{HEAD}[[experiment]]\nid = \"e\"\ntitle = \"E\"\nscenario = \"tiny.toml\"\ncitation = \"§6\"\nmetric = \"qos_met_fraction\"\ntolerance = 0.1\n{rows}"
        )
    }

    #[test]
    fn a_valid_file_gives_rows_with_the_experiments_overrides_first() {
        let body = experiment(
            "set = [\"run.end=5s\"]\n[[experiment.row]]\nlabel = \"P\"\nset = [\"scheduler.placement=random\"]\npaper = 0.8\n[[experiment.row]]\nlabel = \"LL\"\nset = [\"scheduler.placement=least-loaded\"]\n[[experiment.ordering]]\nclaim = \"LL < P\"\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &body);
        let p = parse(&path, &body, "paragon").unwrap();
        let e = &p.experiments[0];
        assert_eq!(e.rows[0].overrides.len(), 2);
        assert_eq!(e.rows[0].overrides[0].key, "run.end");
        assert_eq!(e.rows[0].tolerance, Some(0.1));
        assert_eq!((e.orderings[0].higher, e.orderings[0].lower), (0, 1));
        assert!(e.orderings[0].strict);
    }

    #[test]
    fn bad_fields_are_named_with_their_line() {
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\npaper = \"high\"\n",
        ));
        assert!(e.contains("paragon.toml:") && e.contains("paper"), "{e}");
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\nbogus = 1\n",
        ));
        assert!(e.contains("unknown field `bogus`"), "{e}");
    }

    #[test]
    fn rows_the_scenario_refuses_point_at_their_set() {
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\nset = [\"scheduler.placement=paragon-xl\"]\n",
        ));
        assert!(
            e.contains(":13:")
                && e.contains("experiment[0].row[0].set")
                && e.contains("paragon-xl"),
            "{e}"
        );
    }

    #[test]
    fn claims_name_existing_rows_and_paper_values_need_a_tolerance() {
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\n[[experiment.ordering]]\nclaim = \"P > NI\"\n",
        ));
        assert!(
            e.contains("ordering[0].claim") && e.contains("\"NI\" is not a row"),
            "{e}"
        );
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\n[[experiment.ordering]]\nclaim = \"P ~ P\"\n",
        ));
        assert!(e.contains("not a claim"), "{e}");
        let body = experiment("[[experiment.row]]\nlabel = \"P\"\npaper = 0.5\n")
            .replace("tolerance = 0.1\n", "");
        let e = errors(&body);
        assert!(e.contains("needs a tolerance"), "{e}");
    }

    #[test]
    fn a_bound_needs_its_paper_value_and_no_tolerance_of_its_own() {
        let body =
            experiment("[[experiment.row]]\nlabel = \"P\"\npaper = 0.015\nbound = \"at-most\"\n");
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &body);
        let p = parse(&path, &body, "paragon").unwrap();
        let row = &p.experiments[0].rows[0];
        assert_eq!((row.bound, row.tolerance), (Some(Bound::AtMost), None));
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\nbound = \"at-most\"\n",
        ));
        assert!(
            e.contains("row[0].bound") && e.contains("needs the `paper` value"),
            "{e}"
        );
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\npaper = 0.015\nbound = \"at-most\"\ntolerance = 0.01\n",
        ));
        assert!(
            e.contains("row[0].tolerance") && e.contains("without a tolerance"),
            "{e}"
        );
        let e = errors(&experiment(
            "[[experiment.row]]\nlabel = \"P\"\npaper = 0.015\nbound = \"below\"\n",
        ));
        assert!(e.contains("bound") && e.contains("at-most"), "{e}");
    }

    #[test]
    fn the_paper_name_must_match_the_file_and_scenarios_must_exist() {
        let e = errors(
            &experiment("[[experiment.row]]\nlabel = \"P\"\n").replace("\"paragon\"", "\"gems\""),
        );
        assert!(
            e.contains("field `paper`") && e.contains("paragon.toml"),
            "{e}"
        );
        let e = errors(
            &experiment("[[experiment.row]]\nlabel = \"P\"\n").replace("tiny.toml", "missing.toml"),
        );
        assert!(
            e.contains("experiment[0].scenario") && e.contains("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn unknown_papers_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_papers(dir.path(), &["paragonn".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown paper \"paragonn\""), "{e}");
        let e = load_papers(dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("no experiment file"), "{e}");
    }
}
