//! Sweep files: a base scenario, axes of `--set` overrides, seeds and the
//! metrics to collect (`scenarios/sweeps/README.md` documents the format).
//!
//! ```toml
//! scenario = "../basic/two-tenants.toml"   # relative to this file
//! seeds = [1, 2, 3]
//! metrics = ["response_s_mean", "tasks_completed"]
//! set = ["run.end=10m"]                     # every run
//!
//! [[axis]]
//! name = "policy"
//! values = [
//!   { label = "random", set = ["scheduler.placement=random"] },
//!   { label = "LL", set = ["scheduler.placement=least-loaded"] },
//! ]
//!
//! [[axis]]
//! name = "rate"
//! key = "tenants.0.arrivals.rate_per_s"     # a value v sets key=v, labelled v
//! values = [0.5, 1.0, 2.0]
//! ```

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::scenario::{self, Origin, Override, ScenarioError, ScenarioErrors};
use crate::toml_file::{self, Problems};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    #[serde(default)]
    title: Option<String>,
    scenario: String,
    #[serde(default)]
    seeds: Vec<u64>,
    #[serde(default)]
    metrics: Vec<String>,
    #[serde(default)]
    set: Vec<String>,
    #[serde(default)]
    axis: Vec<AxisFile>,
    baseline: Option<BaselineFile>,
    #[serde(default)]
    detail: Vec<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    axis: String,
    value: String,
}

/// The value of one axis every other value of it is compared with, seed
/// by seed, all other axes equal (`paired.csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Baseline {
    pub axis: usize,
    pub value: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisFile {
    name: String,
    key: Option<String>,
    values: Vec<toml::Value>,
}

/// One value of an axis: its label, the overrides it sets and, if it
/// names one, the scenario its cells run instead of the file's (a built-in
/// policy against a scenario with an external program, say).
#[derive(Clone, Debug, PartialEq)]
pub struct AxisValue {
    pub label: String,
    pub set: Vec<Override>,
    pub scenario: Option<(String, Arc<String>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<AxisValue>,
}

/// A parsed sweep file.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The file as errors name it.
    pub label: String,
    pub title: String,
    pub scenario_label: String,
    pub scenario_text: Arc<String>,
    /// Overrides of every run, before the axes'.
    pub set: Vec<Override>,
    pub axes: Vec<Axis>,
    /// Seeds of the file (`--seeds` replaces them); default 1, 2, 3.
    pub seeds: Vec<u64>,
    /// Metrics to collect; empty: every numeric metric.
    pub metrics: Vec<String>,
    pub baseline: Option<Baseline>,
    /// Cells whose runs (first seed) get `dcemu report`'s per-run plots,
    /// side by side (`detail/report.html`).
    pub detail: Vec<Vec<usize>>,
}

impl Sweep {
    /// Every cell: one value per axis, the first axis varying slowest.
    pub fn cells(&self) -> Vec<Vec<usize>> {
        let mut cells: Vec<Vec<usize>> = vec![Vec::new()];
        for axis in &self.axes {
            cells = cells
                .into_iter()
                .flat_map(|c| {
                    (0..axis.values.len()).map(move |v| {
                        let mut c = c.clone();
                        c.push(v);
                        c
                    })
                })
                .collect();
        }
        cells
    }

    /// The overrides of `cell`: the file's, then each axis value's.
    pub fn overrides(&self, cell: &[usize]) -> Vec<Override> {
        let mut out = self.set.clone();
        for (axis, &v) in self.axes.iter().zip(cell) {
            out.extend(axis.values[v].set.iter().cloned());
        }
        out
    }

    /// The scenario `cell` runs (label and text): that of its last axis
    /// value naming one, else the file's.
    pub fn scenario_of(&self, cell: &[usize]) -> (&str, &Arc<String>) {
        self.axes
            .iter()
            .zip(cell)
            .filter_map(|(a, &v)| a.values[v].scenario.as_ref())
            .next_back()
            .map_or(
                (self.scenario_label.as_str(), &self.scenario_text),
                |(l, t)| (l.as_str(), t),
            )
    }

    /// The labels of `cell`, one per axis.
    pub fn labels(&self, cell: &[usize]) -> Vec<&str> {
        self.axes
            .iter()
            .zip(cell)
            .map(|(a, &v)| a.values[v].label.as_str())
            .collect()
    }
}

/// Reads and checks the sweep file at `path`.
pub fn load(path: &Path) -> Result<Sweep, ScenarioErrors> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioErrors(vec![ScenarioError {
            origin: Origin::File {
                path: label.clone(),
                at: None,
            },
            field: None,
            problem: format!("cannot read the sweep file: {e}"),
        }])
    })?;
    parse(path, &text)
}

/// Parses and checks a sweep file's `text`; `path` locates its scenario.
pub fn parse(path: &Path, text: &str) -> Result<Sweep, ScenarioErrors> {
    let label = path.display().to_string();
    let raw: SweepFile = toml_file::deserialize(&label, text)?;
    let doc = toml_edit::Document::parse(text.to_string()).ok();
    let mut problems = Problems::new(&label, text, doc.as_ref());
    let base = path.parent().unwrap_or(Path::new(""));
    let scenario_path = base.join(&raw.scenario);
    let scenario_text = match std::fs::read_to_string(&scenario_path) {
        Ok(t) => t,
        Err(e) => {
            problems.add(
                "scenario",
                format!("cannot read {}: {e}", scenario_path.display()),
            );
            String::new()
        }
    };
    let set = sets(&mut problems, "set", &raw.set);
    if raw.seeds.iter().any(|&s| s > scenario::MAX_SEED) {
        problems.add(
            "seeds",
            format!("seeds go from 0 to {}", scenario::MAX_SEED),
        );
    }
    let mut axes: Vec<Axis> = Vec::new();
    for (i, a) in raw.axis.iter().enumerate() {
        let at = |f: &str| format!("axis[{i}].{f}");
        if axes.iter().any(|x| x.name == a.name) || a.name.trim().is_empty() {
            problems.add(
                &at("name"),
                format!("{:?} is empty or names an earlier axis", a.name),
            );
        }
        if a.values.is_empty() {
            problems.add(&at("values"), "an axis needs at least one value".into());
        }
        let mut values: Vec<AxisValue> = Vec::new();
        for (j, v) in a.values.iter().enumerate() {
            let field = format!("axis[{i}].values[{j}]");
            let Some(value) = axis_value(&mut problems, &field, a.key.as_deref(), v, base) else {
                continue;
            };
            if values.iter().any(|x| x.label == value.label) {
                problems.add(
                    &field,
                    format!("label {:?} is used twice in this axis", value.label),
                );
            }
            values.push(value);
        }
        axes.push(Axis {
            name: a.name.clone(),
            values,
        });
    }
    let baseline = raw.baseline.as_ref().and_then(|b| {
        let Some(axis) = axes.iter().position(|a| a.name == b.axis) else {
            let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
            problems.add(
                "baseline.axis",
                format!(
                    "{:?} is not an axis of this file{}",
                    b.axis,
                    crate::suggest::did_you_mean(&b.axis, names)
                ),
            );
            return None;
        };
        let labels = || axes[axis].values.iter().map(|v| v.label.as_str());
        let Some(value) = labels().position(|l| l == b.value) else {
            problems.add(
                "baseline.value",
                format!(
                    "{:?} is not a value of axis {:?}: expected one of {}",
                    b.value,
                    b.axis,
                    labels().collect::<Vec<_>>().join(", ")
                ),
            );
            return None;
        };
        Some(Baseline { axis, value })
    });
    let mut detail = Vec::new();
    for (i, labels) in raw.detail.iter().enumerate() {
        let field = format!("detail[{i}]");
        if labels.len() != axes.len() {
            problems.add(
                &field,
                format!(
                    "names {} labels; a cell has one per axis ({})",
                    labels.len(),
                    axes.len()
                ),
            );
            continue;
        }
        let cell: Option<Vec<usize>> = axes
            .iter()
            .zip(labels)
            .map(|(a, l)| a.values.iter().position(|v| &v.label == l))
            .collect();
        match cell {
            Some(c) => detail.push(c),
            None => problems.add(
                &field,
                format!("{labels:?} is not a cell: each label must be one of its axis's values"),
            ),
        }
    }
    if !problems.found.is_empty() {
        return Err(ScenarioErrors(problems.found));
    }
    let mut seeds = raw.seeds;
    seeds.dedup();
    Ok(Sweep {
        title: raw.title.unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
        }),
        label,
        scenario_label: scenario_path.display().to_string(),
        scenario_text: Arc::new(scenario_text),
        set,
        axes,
        seeds: if seeds.is_empty() {
            vec![1, 2, 3]
        } else {
            seeds
        },
        metrics: raw.metrics,
        baseline,
        detail,
    })
}

/// One entry of an axis's `values`: a `{ label, set }` table, or with the
/// axis's `key`, a plain value.
fn axis_value(
    problems: &mut Problems<'_>,
    field: &str,
    key: Option<&str>,
    v: &toml::Value,
    base: &Path,
) -> Option<AxisValue> {
    match (v, key) {
        (toml::Value::Table(t), _) => {
            let label = match t.get("label") {
                Some(toml::Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => {
                    problems.add(field, "needs a non-empty `label` string".into());
                    return None;
                }
            };
            if let Some(k) = t
                .keys()
                .find(|k| !["label", "set", "scenario"].contains(&k.as_str()))
            {
                problems.add(
                    field,
                    format!("unknown field {k:?}: expected label, set, scenario"),
                );
                return None;
            }
            let scenario = match t.get("scenario") {
                None => None,
                Some(toml::Value::String(path)) => {
                    let path = base.join(path);
                    match std::fs::read_to_string(&path) {
                        Ok(text) => Some((path.display().to_string(), Arc::new(text))),
                        Err(e) => {
                            problems.add(field, format!("cannot read {}: {e}", path.display()));
                            return None;
                        }
                    }
                }
                Some(_) => {
                    problems.add(field, "`scenario` must be a path (a string)".into());
                    return None;
                }
            };
            let raw: Vec<String> = match t.get("set") {
                None => Vec::new(),
                Some(toml::Value::Array(a)) => {
                    let strings: Option<Vec<String>> =
                        a.iter().map(|x| x.as_str().map(str::to_string)).collect();
                    let Some(s) = strings else {
                        problems.add(
                            field,
                            "`set` must be a list of \"KEY=VALUE\" strings".into(),
                        );
                        return None;
                    };
                    s
                }
                Some(_) => {
                    problems.add(
                        field,
                        "`set` must be a list of \"KEY=VALUE\" strings".into(),
                    );
                    return None;
                }
            };
            let set = sets(problems, field, &raw);
            Some(AxisValue {
                label,
                set,
                scenario,
            })
        }
        (_, None) => {
            problems.add(
                field,
                "a plain value needs the axis's `key`; or write { label = \"…\", set = [\"KEY=VALUE\"] }"
                    .into(),
            );
            None
        }
        (scalar, Some(key)) => {
            let label = match scalar {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let set = sets(problems, field, &[format!("{key}={label}")]);
            Some(AxisValue {
                label,
                set,
                scenario: None,
            })
        }
    }
}

fn sets(problems: &mut Problems<'_>, field: &str, raw: &[String]) -> Vec<Override> {
    raw.iter()
        .filter_map(|s| match s.parse::<Override>() {
            Ok(o) => Some(o),
            Err(e) => {
                problems.add(field, e);
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> std::path::PathBuf {
        std::fs::write(dir.join("base.toml"), "[run]\nname = \"x\"\n").unwrap();
        let p = dir.join("s.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn axes_multiply_first_axis_slowest() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            r#"
scenario = "base.toml"
[[axis]]
name = "policy"
values = [{ label = "a", set = ["scheduler.placement=random"] }, { label = "b", set = ["scheduler.placement=best-fit"] }]
[[axis]]
name = "rate"
key = "tenants.0.arrivals.rate_per_s"
values = [0.5, 2]
"#,
        );
        let s = load(&p).expect("good");
        assert_eq!(s.seeds, vec![1, 2, 3]);
        let cells = s.cells();
        assert_eq!(cells, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        assert_eq!(s.labels(&cells[1]), vec!["a", "2"]);
        let sets: Vec<String> = s
            .overrides(&cells[3])
            .iter()
            .map(|o| o.to_string())
            .collect();
        assert_eq!(
            sets,
            vec![
                "scheduler.placement=best-fit",
                "tenants.0.arrivals.rate_per_s=2"
            ]
        );
    }

    #[test]
    fn bad_values_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "scenario = \"base.toml\"\n[[axis]]\nname = \"p\"\nvalues = [\n  { label = \"a\", set = [\"nokey\"] },\n  3,\n]\n",
        );
        let e = load(&p).expect_err("bad").to_string();
        assert!(
            e.contains(":5:") && e.contains("axis[0].values[0]") && e.contains("KEY=VALUE"),
            "{e}"
        );
        assert!(
            e.contains(":6:") && e.contains("needs the axis's `key`"),
            "{e}"
        );
        let p = write(dir.path(), "scenario = \"missing.toml\"\n");
        let e = load(&p).expect_err("missing").to_string();
        assert!(e.contains("s.toml:1:") && e.contains("cannot read"), "{e}");
    }
}
