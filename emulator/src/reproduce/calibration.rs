//! `[[calibration]]` blocks of an experiment file: a paper's free parameters.
//!
//! A free parameter is a scenario field the paper leaves open (MODEL.md §6).
//! Its block names the field (`key`, as `dcemu run --set` takes it), the
//! scenario files its fitted value lives in, the search range and starting
//! point, and the rows of the file it is fitted to (its *targets*). Every
//! row named by some block's targets is **calibrated**; every other row and
//! every ordering is **validated**. `dcemu calibrate` writes `value` and
//! `fitted`; when `value` is there, each listed scenario must hold exactly
//! it ([`check_values`]), so a value typed by hand is a visible defect.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::data::Experiment;
pub use super::data::Role;
use crate::scenario::{self, Override};
use crate::toml_file::Problems;

/// Significant digits a fitted value keeps (values are rounded to them
/// before they are evaluated, so the written value is the evaluated one).
pub const DIGITS: i32 = 4;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CalibrationFile {
    name: String,
    key: String,
    scenarios: Vec<String>,
    range: Option<Vec<f64>>,
    #[serde(default)]
    choices: Vec<String>,
    start: Setting,
    #[serde(default)]
    starts: Vec<Setting>,
    step: Option<f64>,
    #[serde(default)]
    integer: bool,
    #[serde(default = "first_stage")]
    stage: u32,
    targets: Vec<String>,
    why: String,
    value: Option<Setting>,
    fitted: Option<String>,
}

/// A `start`, `starts` entry or `value` as written: a number, or one of a
/// choice parameter's `choices`.
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub(super) enum Setting {
    Number(f64),
    Word(String),
}

/// One free parameter, validated.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub name: String,
    /// The scenario field, as `--set` takes it.
    pub key: String,
    /// The scenario files as written (relative to the experiment file).
    pub scenarios: Vec<String>,
    /// The same files, resolved.
    pub scenario_paths: Vec<PathBuf>,
    pub lo: f64,
    pub hi: f64,
    pub start: f64,
    /// Further starting points of the search (multi-start: a compass
    /// search from `start`, then from each of these; the lowest loss
    /// wins). Every block of a file has as many.
    pub starts: Vec<f64>,
    /// The first step of the search (default: a quarter of the range).
    pub step: f64,
    pub integer: bool,
    /// A choice parameter's alternatives (`choices = ["tasks", "arrivals"]`),
    /// searched as the integer index `lo..=hi` into this list and written as
    /// the chosen word; empty for a numeric parameter. For a choice between
    /// published alternatives (thesis Table 5.2's two class weightings),
    /// where a target statistic is to decide rather than a default.
    pub choices: Vec<String>,
    /// Which fit this parameter belongs to: `dcemu calibrate` fits stage 1,
    /// then stage 2 with stage 1's values held, and so on. A block never
    /// writes a scenario that holds an earlier stage's target, so a later
    /// stage cannot undo an earlier one's fit.
    pub stage: u32,
    /// The targets as written.
    pub targets: Vec<String>,
    /// Each target row: (experiment id, row label).
    pub rows: Vec<(String, String)>,
    pub why: String,
    pub value: Option<f64>,
    pub fitted: Option<String>,
}

impl Calibration {
    /// Whether this parameter reaches a run of `scenario` (resolved path).
    pub fn writes(&self, scenario: &Path) -> bool {
        let scenario = canonical(scenario);
        self.scenario_paths.iter().any(|p| canonical(p) == scenario)
    }

    /// `key=value` as a `--set` override.
    pub fn override_for(&self, value: f64) -> Result<Override, String> {
        format!("{}={}", self.key, self.show(value)).parse()
    }

    /// A point's coordinate as the scenario file and `--set` write it: the
    /// chosen word of a choice parameter, else [`format_value`].
    pub fn show(&self, value: f64) -> String {
        if self.choices.is_empty() {
            return format_value(value, self.integer);
        }
        let i = (value.round().max(0.0) as usize).min(self.choices.len().saturating_sub(1));
        self.choices.get(i).cloned().unwrap_or_default()
    }

    /// `[low, high]` as the file gives it (a choice parameter: its alternatives).
    pub fn range_text(&self) -> String {
        if self.choices.is_empty() {
            format!(
                "[{}, {}]",
                format_value(self.lo, self.integer),
                format_value(self.hi, self.integer)
            )
        } else {
            format!("one of {}", self.choices.join(", "))
        }
    }

    /// The coordinate a scenario's TOML value stands for: a number, or the
    /// index of a choice (`None`: something else).
    pub fn read(&self, held: &toml::Value) -> Option<f64> {
        if self.choices.is_empty() {
            return as_number(held);
        }
        let word = held.as_str()?;
        self.choices
            .iter()
            .position(|c| c == word)
            .map(|i| i as f64)
    }
}

/// `value` as a scenario file and `--set` write it: an integer, or a float
/// with a decimal point (so that TOML reads it back as a float).
pub fn format_value(value: f64, integer: bool) -> String {
    if integer {
        return format!("{}", value.round() as i64);
    }
    let s = format!("{value}");
    if s.contains(['.', 'e', 'E']) || !value.is_finite() {
        s
    } else {
        format!("{s}.0")
    }
}

/// `value` rounded to [`DIGITS`] significant digits.
pub fn round_sig(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let e = DIGITS - 1 - magnitude;
    if e >= 0 {
        let f = 10f64.powi(e);
        (value * f).round() / f
    } else {
        let f = 10f64.powi(-e);
        (value / f).round() * f
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The value at a dotted `--set` key (`tenants.0.arrivals.rate_per_s`) in a
/// TOML value, if it is there.
pub fn lookup<'a>(root: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    let mut v = root;
    for seg in key.split('.') {
        v = match v {
            toml::Value::Table(t) => t.get(seg)?,
            toml::Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

fn as_number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// What a scenario file's text holds at `key`: `Ok(Some(number))`,
/// `Ok(None)` when the key is absent, `Err(shown)` when it holds something
/// else (or the text is not TOML).
pub fn value_in_text(text: &str, key: &str) -> Result<Option<f64>, String> {
    held_in_text(text, key, as_number)
}

/// [`value_in_text`] with `read` deciding what a held value stands for.
fn held_in_text(
    text: &str,
    key: &str,
    read: impl Fn(&toml::Value) -> Option<f64>,
) -> Result<Option<f64>, String> {
    let table: toml::Table = text.parse().map_err(|_| "not valid TOML".to_string())?;
    let root = toml::Value::Table(table);
    match lookup(&root, key) {
        None => Ok(None),
        Some(v) => read(v).map(Some).ok_or_else(|| v.to_string()),
    }
}

/// The checks that concern a stage as a whole: one count of further starts
/// per stage, fewer parameters than target rows per stage, and no block
/// writing a scenario that runs an earlier stage's target (the earlier fit
/// would then depend on a value fitted after it).
fn check_stages(out: &[Calibration], experiments: &[Experiment], problems: &mut Problems<'_>) {
    let stages: BTreeSet<u32> = out.iter().map(|c| c.stage).collect();
    for &stage in &stages {
        let blocks: Vec<(usize, &Calibration)> = out
            .iter()
            .enumerate()
            .filter(|(_, c)| c.stage == stage)
            .collect();
        if let Some((_, first)) = blocks.first() {
            let n = first.starts.len();
            for (i, c) in &blocks {
                if c.starts.len() != n {
                    problems.add(
                        &format!("calibration[{i}].starts"),
                        format!(
                            "has {} further start(s), the first block of stage {stage} {n}: every block of a stage gives one value per further starting point",
                            c.starts.len()
                        ),
                    );
                }
            }
        }
        let rows: BTreeSet<&(String, String)> = blocks.iter().flat_map(|(_, c)| &c.rows).collect();
        if stages.len() > 1 && blocks.len() >= rows.len() {
            problems.add(
                "calibration",
                format!(
                    "stage {stage} has {} free parameter(s) but {} distinct target row(s): each stage must have fewer free parameters than target rows (MODEL.md §6)",
                    blocks.len(),
                    rows.len()
                ),
            );
        }
    }
    for (i, later) in out.iter().enumerate() {
        for earlier in out.iter().filter(|c| c.stage < later.stage) {
            for (e, r) in &earlier.rows {
                let Some(row) = experiments
                    .iter()
                    .filter(|x| &x.id == e)
                    .flat_map(|x| &x.rows)
                    .find(|row| &row.label == r)
                else {
                    continue;
                };
                if later.writes(&row.scenario_path) {
                    problems.add(
                        &format!("calibration[{i}].scenarios"),
                        format!(
                            "stage {} writes {}, which runs {e}/{r}, a target of stage {} ({:?}): a stage must not move an earlier stage's targets",
                            later.stage, row.scenario, earlier.stage, earlier.name
                        ),
                    );
                    return;
                }
            }
        }
    }
}

fn first_stage() -> u32 {
    1
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Validates the `[[calibration]]` blocks against the file's experiments,
/// and marks every targeted row calibrated.
pub(super) fn parse(
    raw: Vec<CalibrationFile>,
    experiments: &mut [Experiment],
    base: &Path,
    problems: &mut Problems<'_>,
) -> Vec<Calibration> {
    let mut out: Vec<Calibration> = Vec::new();
    let mut distinct: BTreeSet<(String, String)> = BTreeSet::new();
    for (i, c) in raw.into_iter().enumerate() {
        let at = |f: &str| format!("calibration[{i}].{f}");
        if !is_name(&c.name) {
            problems.add(
                &at("name"),
                format!("{:?}: must be non-empty letters, digits and '-'", c.name),
            );
        }
        if out.iter().any(|x| x.name == c.name) {
            problems.add(
                &at("name"),
                format!("{:?} is used by an earlier [[calibration]]", c.name),
            );
        }
        if c.why.trim().is_empty() {
            problems.add(
                &at("why"),
                "must say why the parameter is free and what it is fitted to".into(),
            );
        }
        let choice = !c.choices.is_empty();
        if choice {
            check_choices(&c, &at, problems);
        }
        let integer = c.integer || choice;
        let start = setting(&c.start, &c.choices, &at("start"), problems).unwrap_or(0.0);
        let starts: Vec<f64> = c
            .starts
            .iter()
            .enumerate()
            .map(|(k, v)| {
                setting(
                    v,
                    &c.choices,
                    &format!("calibration[{i}].starts[{k}]"),
                    problems,
                )
                .unwrap_or(start)
            })
            .collect();
        let value = c
            .value
            .as_ref()
            .and_then(|v| setting(v, &c.choices, &at("value"), problems));
        let range = match (&c.range, choice) {
            (_, true) => vec![0.0, (c.choices.len().max(2) - 1) as f64],
            (Some(r), false) => r.clone(),
            (None, false) => Vec::new(),
        };
        let (lo, hi) = match range.as_slice() {
            [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => (*lo, *hi),
            [lo, hi] => {
                problems.add(
                    &at("range"),
                    format!("[{lo}, {hi}] is empty or inverted: give [low, high] with low < high"),
                );
                (*lo, *hi)
            }
            _ => {
                problems.add(&at("range"), "must be [low, high]".into());
                (start, start)
            }
        };
        if c.stage == 0 {
            problems.add(
                &at("stage"),
                "stages count from 1 (the first fit); leave it out for stage 1".into(),
            );
        }
        let range_ok = lo < hi;
        let inside = |v: f64| !range_ok || (v.is_finite() && v >= lo && v <= hi);
        let integral = |v: f64| !integer || v.fract() == 0.0;
        if !inside(start) {
            problems.add(
                &at("start"),
                format!("{start} is outside the range [{lo}, {hi}]"),
            );
        }
        for (k, v) in starts.iter().enumerate() {
            if !inside(*v) || !integral(*v) {
                problems.add(
                    &format!("calibration[{i}].starts[{k}]"),
                    format!(
                        "{v} must be inside the range [{lo}, {hi}]{}",
                        if integer { " and an integer" } else { "" }
                    ),
                );
            }
        }
        if integer && !(integral(lo) && integral(hi)) {
            problems.add(
                &at("range"),
                "an integer parameter's bounds must be integers".into(),
            );
        }
        for (field, v) in [("start", Some(start)), ("step", c.step), ("value", value)] {
            if let Some(v) = v.filter(|v| !integral(*v)) {
                problems.add(
                    &at(field),
                    format!("{v} is not an integer, but the parameter is (`integer = true`)"),
                );
            }
        }
        let step = match c.step {
            Some(s) if !range_ok || (s.is_finite() && s > 0.0 && s <= hi - lo) => s,
            Some(s) => {
                problems.add(
                    &at("step"),
                    format!(
                        "{s} is out of range: a first step must be > 0 and at most the range's width {}",
                        hi - lo
                    ),
                );
                s
            }
            None if integer => ((hi - lo) / 4.0).round().max(1.0),
            None => (hi - lo) / 4.0,
        };
        if let Some(v) = value.filter(|v| !inside(*v)) {
            problems.add(
                &at("value"),
                format!("{v} is outside the range [{lo}, {hi}]"),
            );
        }
        if c.value.is_some() != c.fitted.is_some() {
            let field = if c.value.is_some() { "value" } else { "fitted" };
            problems.add(
                &at(field),
                "`value` and `fitted` are written together by dcemu calibrate, never by hand"
                    .into(),
            );
        }
        if c.scenarios.is_empty() {
            problems.add(
                &at("scenarios"),
                "list at least one scenario file the fitted value is written into".into(),
            );
        }
        let shown_start = match c.choices.get(start as usize) {
            Some(word) if choice => word.clone(),
            _ => format_value(start, integer),
        };
        let parsed: Result<Override, String> = format!("{}={shown_start}", c.key).parse();
        if let Err(e) = &parsed {
            problems.add(&at("key"), e.clone());
        }
        let mut paths = Vec::new();
        for (k, file) in c.scenarios.iter().enumerate() {
            let path = base.join(file);
            let field = format!("calibration[{i}].scenarios[{k}]");
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => {
                    problems.add(&field, format!("cannot read {}: {e}", path.display()));
                    paths.push(path);
                    continue;
                }
            };
            if let Ok(o) = &parsed {
                check_key(problems, &at("key"), &path, &text, o, choice);
            }
            if paths
                .iter()
                .any(|p: &PathBuf| canonical(p) == canonical(&path))
            {
                problems.add(&field, format!("{file:?} is listed twice"));
            }
            paths.push(path);
        }
        let same_key = out.iter().find(|x| {
            x.key == c.key
                && x.scenario_paths
                    .iter()
                    .any(|p| paths.iter().any(|q| canonical(p) == canonical(q)))
        });
        if let Some(x) = same_key {
            problems.add(
                &at("key"),
                format!(
                    "[[calibration]] {:?} already fits {} in one of these scenarios",
                    x.name, c.key
                ),
            );
        }
        if c.targets.is_empty() {
            problems.add(
                &at("targets"),
                "name at least one row it is fitted to (\"experiment-id/row label\")".into(),
            );
        }
        let mut rows = Vec::new();
        for (k, target) in c.targets.iter().enumerate() {
            let field = format!("calibration[{i}].targets[{k}]");
            match resolve(target, experiments) {
                Err(problem) => problems.add(&field, problem),
                Ok(found) => {
                    for (e, r) in found {
                        let exp = &experiments[e];
                        let row = &exp.rows[r];
                        let writes = paths
                            .iter()
                            .any(|p| canonical(p) == canonical(&row.scenario_path));
                        if !writes {
                            problems.add(
                                &field,
                                format!(
                                    "row {:?} of {:?} runs {}, which `scenarios` does not list: the fitted value would not reach it",
                                    row.label, exp.id, row.scenario
                                ),
                            );
                        }
                        if row.overrides.iter().any(|o| o.key == c.key) {
                            problems.add(
                                &field,
                                format!(
                                    "row {:?} of {:?} sets {} itself, so the fit could not move it",
                                    row.label, exp.id, c.key
                                ),
                            );
                        }
                        let pair = (exp.id.clone(), row.label.clone());
                        if !rows.contains(&pair) {
                            rows.push(pair);
                        }
                    }
                }
            }
        }
        distinct.extend(rows.iter().cloned());
        out.push(Calibration {
            name: c.name,
            key: c.key,
            scenarios: c.scenarios,
            scenario_paths: paths,
            lo,
            hi,
            start,
            starts,
            step,
            integer,
            choices: c.choices,
            stage: c.stage,
            targets: c.targets,
            rows,
            why: c.why,
            value,
            fitted: c.fitted,
        });
    }
    check_stages(&out, experiments, problems);
    if !out.is_empty() && out.len() >= distinct.len() {
        problems.add(
            "calibration",
            format!(
                "{} free parameter(s) but {} distinct target row(s): a file must have fewer free parameters than target rows (MODEL.md §6)",
                out.len(),
                distinct.len()
            ),
        );
    }
    for exp in experiments.iter_mut() {
        for row in &mut exp.rows {
            if distinct.contains(&(exp.id.clone(), row.label.clone())) {
                row.role = Role::Calibrated;
            }
        }
    }
    out
}

/// A choice parameter's own checks: two or more distinct non-empty words,
/// and none of the numeric fields (`range`, `step`, `integer`).
fn check_choices(c: &CalibrationFile, at: &dyn Fn(&str) -> String, problems: &mut Problems<'_>) {
    if c.choices.len() < 2 {
        problems.add(
            &at("choices"),
            "give at least two alternatives to choose between".into(),
        );
    }
    for (k, w) in c.choices.iter().enumerate() {
        if w.trim().is_empty() {
            problems.add(&at("choices"), format!("alternative {k} is empty"));
        } else if c.choices[..k].contains(w) {
            problems.add(&at("choices"), format!("{w:?} is listed twice"));
        }
    }
    for (field, given) in [
        ("range", c.range.is_some()),
        ("step", c.step.is_some()),
        ("integer", c.integer),
    ] {
        if given {
            problems.add(
                &at(field),
                "a choice parameter (`choices`) is searched over its alternatives: leave out `range`, `step` and `integer`".into(),
            );
        }
    }
}

/// A written `start`, `starts` entry or `value` as the search's coordinate:
/// the number of a numeric parameter, the index of a choice.
fn setting(
    s: &Setting,
    choices: &[String],
    field: &str,
    problems: &mut Problems<'_>,
) -> Option<f64> {
    match (s, choices.is_empty()) {
        (Setting::Number(v), true) => Some(*v),
        (Setting::Word(w), false) => {
            let found = choices.iter().position(|c| c == w);
            if found.is_none() {
                problems.add(
                    field,
                    format!("{w:?} is not one of the choices ({})", choices.join(", ")),
                );
            }
            found.map(|i| i as f64)
        }
        (Setting::Word(w), true) => {
            problems.add(
                field,
                format!("{w:?} is a word, but the parameter is numeric (only a `choices` parameter takes words)"),
            );
            None
        }
        (Setting::Number(v), false) => {
            problems.add(
                field,
                format!(
                    "{v} is a number, but the parameter is a choice: give one of {}",
                    choices.join(", ")
                ),
            );
            None
        }
    }
}

/// The key must be a field the scenario loader takes (`--set`), and hold a
/// number once loaded (a word, for a choice parameter).
fn check_key(
    problems: &mut Problems<'_>,
    field: &str,
    path: &Path,
    text: &str,
    o: &Override,
    choice: bool,
) {
    let shown = path.display().to_string();
    match scenario::load(&shown, text, std::slice::from_ref(o)) {
        Err(errors) => {
            for e in errors.0 {
                problems.add(field, format!("{shown} refuses it: {e}"));
            }
        }
        Ok(s) => {
            let held = toml::Value::try_from(&s)
                .ok()
                .and_then(|v| lookup(&v, &o.key).cloned());
            if let Some(v) = held.filter(|v| as_number(v).is_none() != choice) {
                let kind = if choice { "a word" } else { "a numeric field" };
                problems.add(
                    field,
                    format!("{} is not {kind} of {shown} (it holds {v})", o.key),
                );
            }
        }
    }
}

/// The rows a target names: `"experiment-id/row label"`, or
/// `"experiment-id"` for each of its rows with a paper value.
fn resolve(target: &str, experiments: &[Experiment]) -> Result<Vec<(usize, usize)>, String> {
    let (id, label) = match target.split_once('/') {
        Some((id, label)) => (id.trim(), Some(label.trim())),
        None => (target.trim(), None),
    };
    let Some(e) = experiments.iter().position(|x| x.id == id) else {
        return Err(format!(
            "{target:?}: no experiment {id:?} in this file (targets are \"experiment-id/row label\" or \"experiment-id\")"
        ));
    };
    let exp = &experiments[e];
    let Some(label) = label else {
        let rows: Vec<(usize, usize)> = exp
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.paper.is_some() && r.bound.is_none())
            .map(|(r, _)| (e, r))
            .collect();
        if rows.is_empty() {
            return Err(format!(
                "{target:?}: experiment {id:?} has no row with a paper value to fit to"
            ));
        }
        return Ok(rows);
    };
    if exp.orderings.iter().any(|o| o.claim.trim() == label) {
        return Err(format!(
            "{target:?} is an ordering: orderings are validated, never fitted"
        ));
    }
    let Some(r) = exp.rows.iter().position(|x| x.label == label) else {
        let labels: Vec<&str> = exp.rows.iter().map(|r| r.label.as_str()).collect();
        return Err(format!(
            "{target:?}: experiment {id:?} has no row {label:?} (rows: {})",
            labels.join(", ")
        ));
    };
    if exp.rows[r].paper.is_none() {
        return Err(format!(
            "{target:?}: the row has no `paper` value to fit to"
        ));
    }
    if exp.rows[r].bound.is_some() {
        return Err(format!(
            "{target:?}: the row's paper value is a bound, which a fit cannot aim at"
        ));
    }
    Ok(vec![(e, r)])
}

/// Every declared `value` against what its scenarios hold: one message per
/// scenario that differs.
pub fn check_values(
    paper_name: &str,
    paper_file: &Path,
    calibrations: &[Calibration],
) -> Vec<String> {
    let mut out = Vec::new();
    for c in calibrations {
        let Some(declared) = c.value else { continue };
        for path in &c.scenario_paths {
            let found = std::fs::read_to_string(path)
                .map_err(|e| format!("unreadable ({e})"))
                .and_then(|text| held_in_text(&text, &c.key, |v| c.read(v)));
            let shown = match found {
                Ok(Some(v)) if v == declared => continue,
                Ok(Some(v)) => c.show(v),
                Ok(None) => "absent (the default applies)".into(),
                Err(s) => s,
            };
            out.push(format!(
                "{}: `{}` is {shown}, but [[calibration]] {:?} in {} declares value = {}: fitted values are written by dcemu calibrate, never by hand; run dcemu calibrate {paper_name}",
                path.display(),
                c.key,
                c.name,
                paper_file.display(),
                c.show(declared)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_four_significant_digits_and_print_as_toml_reads_them() {
        assert_eq!(round_sig(0.031_234_5), 0.03123);
        assert_eq!(round_sig(12_345.0), 12_350.0);
        assert_eq!(round_sig(-0.5), -0.5);
        assert_eq!(round_sig(0.0), 0.0);
        assert_eq!(format_value(0.031, false), "0.031");
        assert_eq!(format_value(1.0, false), "1.0");
        assert_eq!(format_value(3.0, true), "3");
        assert_eq!("0.03104".parse::<f64>().ok(), Some(round_sig(0.031_041)));
    }

    #[test]
    fn lookup_follows_tables_and_list_indices() {
        let v: toml::Value = toml::Value::Table(
            "[a]\nb = 1.5\n[[t]]\nx = 2\n[[t]]\nx = 3\n"
                .parse()
                .unwrap(),
        );
        assert_eq!(lookup(&v, "a.b").and_then(as_number), Some(1.5));
        assert_eq!(lookup(&v, "t.1.x").and_then(as_number), Some(3.0));
        assert!(lookup(&v, "t.2.x").is_none());
        assert_eq!(value_in_text("[a]\nb = 2\n", "a.b"), Ok(Some(2.0)));
        assert_eq!(value_in_text("[a]\n", "a.b"), Ok(None));
        assert!(value_in_text("a = \"x\"\n", "a").is_err());
    }
}
