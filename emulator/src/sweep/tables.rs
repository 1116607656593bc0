//! The sweep's CSVs: `sweep.csv` (tidy, one row per run and metric) and
//! `summary.csv` (per cell and metric, [`super::stats::summarise`]).

use std::collections::BTreeSet;

use serde_json::Value;

use super::file::Sweep;
use super::plan::Planned;
use super::stats;
use crate::reproduce::ReproduceError;
use crate::reproduce::runner::Ran;

fn value(ran: &Ran, metric: &str) -> Option<f64> {
    ran.metrics.get(metric).and_then(Value::as_f64)
}

/// A CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn header(sweep: &Sweep, rest: &[&str]) -> String {
    let mut cols: Vec<String> = sweep.axes.iter().map(|a| field(&a.name)).collect();
    cols.extend(rest.iter().map(|s| s.to_string()));
    cols.join(",") + "\n"
}

/// A number as the CSVs write it: shortest round-trip form, empty if none.
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// `sweep.csv`: one row per cell, seed and metric, in cell order.
pub(super) fn tidy_csv(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metrics: &[String],
) -> String {
    let mut out = header(sweep, &["seed", "metric", "value"]);
    for p in planned {
        let labels: Vec<String> = sweep.labels(&p.cell).iter().map(|l| field(l)).collect();
        for m in metrics {
            let mut row = labels.clone();
            row.push(p.seed.to_string());
            row.push(field(m));
            row.push(value(&ran[p.run], m).map_or_else(String::new, num));
            out.push_str(&(row.join(",") + "\n"));
        }
    }
    out
}

/// `summary.csv`: per cell and metric, its seeds' summary.
pub(super) fn summary_csv(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metrics: &[String],
) -> String {
    let mut out = header(
        sweep,
        &[
            "metric",
            "n",
            "mean",
            "sd",
            "ci95_low",
            "ci95_high",
            "min",
            "max",
        ],
    );
    for cell in sweep.cells() {
        let labels: Vec<String> = sweep.labels(&cell).iter().map(|l| field(l)).collect();
        let runs: Vec<&Ran> = planned
            .iter()
            .filter(|p| p.cell == cell)
            .map(|p| &ran[p.run])
            .collect();
        for m in metrics {
            let values: Vec<f64> = runs.iter().filter_map(|r| value(r, m)).collect();
            let mut row = labels.clone();
            row.push(field(m));
            match stats::summarise(&values) {
                Some(s) => row
                    .extend([s.n as f64, s.mean, s.sd, s.ci_low, s.ci_high, s.min, s.max].map(num)),
                None => row.extend(
                    std::iter::once("0".to_string()).chain(std::iter::repeat_n(String::new(), 6)),
                ),
            }
            out.push_str(&(row.join(",") + "\n"));
        }
    }
    out
}

/// The metrics to collect: the file's (each must be in some run), or
/// every numeric metric any run has.
pub(super) fn chosen_metrics(sweep: &Sweep, ran: &[Ran]) -> Result<Vec<String>, ReproduceError> {
    let numeric: BTreeSet<&str> = ran
        .iter()
        .flat_map(|r| r.metrics.iter())
        .filter(|(_, v)| v.as_f64().is_some())
        .map(|(k, _)| k.as_str())
        .collect();
    if sweep.metrics.is_empty() {
        return Ok(numeric.into_iter().map(str::to_string).collect());
    }
    let missing: Vec<String> = sweep
        .metrics
        .iter()
        .filter(|m| !numeric.contains(m.as_str()))
        .map(|m| {
            format!(
                "{}: metrics: {m:?} is in no run's metrics.json{}",
                sweep.label,
                crate::suggest::did_you_mean(m, numeric.iter().copied())
            )
        })
        .collect();
    match missing.is_empty() {
        true => Ok(sweep.metrics.clone()),
        false => Err(ReproduceError::Input(missing.join("\n"))),
    }
}

/// The value of `metric` in `cell` on `seed`, if that run has it.
fn at(planned: &[Planned], ran: &[Ran], cell: &[usize], seed: u64, metric: &str) -> Option<f64> {
    planned
        .iter()
        .find(|p| p.cell == cell && p.seed == seed)
        .and_then(|p| value(&ran[p.run], metric))
}

/// Per cell off the baseline (its baseline axis at another value), the
/// summary of its seed-by-seed differences from the baseline cell with
/// every other axis equal: `cell − baseline` on each seed both have.
pub(super) fn paired(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metric: &str,
) -> Vec<(Vec<usize>, Option<stats::Summary>)> {
    let Some(b) = sweep.baseline else {
        return Vec::new();
    };
    sweep
        .cells()
        .into_iter()
        .filter(|c| c[b.axis] != b.value)
        .map(|cell| {
            let mut base = cell.clone();
            base[b.axis] = b.value;
            let diffs: Vec<f64> = sweep
                .seeds
                .iter()
                .filter_map(|&seed| {
                    Some(
                        at(planned, ran, &cell, seed, metric)?
                            - at(planned, ran, &base, seed, metric)?,
                    )
                })
                .collect();
            let s = stats::summarise(&diffs);
            (cell, s)
        })
        .collect()
}

/// `paired.csv`, when the file names a baseline: per cell off it and
/// metric, the summary of its differences from the baseline, seed by seed.
pub(super) fn paired_csv(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metrics: &[String],
) -> Option<String> {
    let b = sweep.baseline?;
    let mut out = header(
        sweep,
        &[
            "metric",
            "baseline",
            "n",
            "mean_diff",
            "sd",
            "ci95_low",
            "ci95_high",
            "min",
            "max",
        ],
    );
    let base = &sweep.axes[b.axis].values[b.value].label;
    for m in metrics {
        for (cell, s) in paired(sweep, planned, ran, m) {
            let mut row: Vec<String> = sweep.labels(&cell).iter().map(|l| field(l)).collect();
            row.push(field(m));
            row.push(field(base));
            match s {
                Some(s) => row
                    .extend([s.n as f64, s.mean, s.sd, s.ci_low, s.ci_high, s.min, s.max].map(num)),
                None => row.extend(
                    std::iter::once("0".to_string()).chain(std::iter::repeat_n(String::new(), 6)),
                ),
            }
            out.push_str(&(row.join(",") + "\n"));
        }
    }
    Some(out)
}
