//! The sweep's `report.html`: per metric, each cell's mean with its 95 %
//! confidence interval against the first numeric axis (a line per value of
//! the other axes: "QoS against load, one line per policy"), then the
//! summary as a table. Self-contained: inline SVG, no script.

use std::fmt::Write as _;

use super::file::Sweep;
use super::plan::Planned;
use super::stats::{self, Summary};
use super::tables;
use crate::report::{CiSeries, ci_plot};
use crate::reproduce::runner::Ran;

/// Which axis the figures put along x, and whether its labels are numbers.
fn x_axis(sweep: &Sweep) -> Option<(usize, bool)> {
    let numeric = |a: &super::file::Axis| a.values.iter().all(|v| v.label.parse::<f64>().is_ok());
    match sweep.axes.iter().position(numeric) {
        Some(i) => Some((i, true)),
        None => (!sweep.axes.is_empty()).then_some((0, false)),
    }
}

/// Each cell's summary of `metric`, in cell order.
fn summaries(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metric: &str,
) -> Vec<(Vec<usize>, Option<Summary>)> {
    sweep
        .cells()
        .into_iter()
        .map(|cell| {
            let values: Vec<f64> = planned
                .iter()
                .filter(|p| p.cell == cell)
                .filter_map(|p| ran[p.run].metrics.get(metric).and_then(|v| v.as_f64()))
                .collect();
            let s = stats::summarise(&values);
            (cell, s)
        })
        .collect()
}

/// The figure's series of `metric`: one per combination of the axes other
/// than x, its points (x, mean, CI low, CI high) in x order.
fn series(
    sweep: &Sweep,
    cells: &[(Vec<usize>, Option<Summary>)],
    x: (usize, bool),
) -> Vec<CiSeries> {
    let (xi, numeric) = x;
    let mut out: Vec<CiSeries> = Vec::new();
    for (cell, s) in cells {
        let Some(s) = s else { continue };
        let name: Vec<String> = sweep
            .axes
            .iter()
            .zip(cell)
            .enumerate()
            .filter(|(i, _)| *i != xi)
            .map(|(_, (a, &v))| format!("{}={}", a.name, a.values[v].label))
            .collect();
        let name = match name.is_empty() {
            true => sweep.axes[xi].name.clone(),
            false => name.join(", "),
        };
        let v = cell[xi];
        let xv = match numeric {
            true => sweep.axes[xi].values[v].label.parse().unwrap_or(v as f64),
            false => v as f64,
        };
        let point = (xv, s.mean, s.ci_low, s.ci_high);
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push(point),
            None => out.push((name, vec![point])),
        }
    }
    for (_, pts) in &mut out {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

/// The page.
pub(super) fn html(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    metrics: &[String],
) -> Result<String, String> {
    let mut page = String::new();
    let title = escape(&sweep.title);
    let _ = write!(
        page,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:2em;max-width:70em}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}\
         th{{background:#f4f4f4}}td.l{{text-align:left}}</style></head><body>\n\
         <h1>{title}</h1>\n<p>{} on seeds {:?}: {} cells, {} runs. Points are means over the seeds; \
         bars their 95&nbsp;% confidence interval (Student's t).</p>\n",
        escape(&sweep.scenario_label),
        sweep.seeds,
        sweep.cells().len(),
        planned.len(),
    );
    if !sweep.detail.is_empty() {
        let names: Vec<String> = sweep
            .detail
            .iter()
            .map(|c| escape(&sweep.labels(c).join(" / ")))
            .collect();
        let _ = writeln!(
            page,
            "<p>Per-run plots of {} (seed {}): <a href=\"detail/report.html\">detail/report.html</a>.</p>",
            names.join(", "),
            sweep.seeds[0]
        );
    }
    let x = x_axis(sweep);
    for metric in metrics {
        let cells = summaries(sweep, planned, ran, metric);
        let _ = writeln!(page, "<h2 id=\"{0}\">{0}</h2>", escape(metric));
        if let Some(x) = x {
            let ticks: Vec<String> = match x.1 {
                true => Vec::new(),
                false => sweep.axes[x.0]
                    .values
                    .iter()
                    .map(|v| v.label.clone())
                    .collect(),
            };
            let figure = ci_plot(
                metric,
                &sweep.axes[x.0].name,
                metric,
                &ticks,
                &series(sweep, &cells, x),
            )
            .map_err(|e| e.to_string())?;
            page.push_str(&figure);
            page.push('\n');
        }
        page.push_str("<table><tr>");
        for a in &sweep.axes {
            let _ = write!(page, "<th>{}</th>", escape(&a.name));
        }
        page.push_str(
            "<th>n</th><th>mean</th><th>95&nbsp;% CI</th><th>min</th><th>max</th></tr>\n",
        );
        for (cell, s) in &cells {
            page.push_str("<tr>");
            for label in sweep.labels(cell) {
                let _ = write!(page, "<td class=\"l\">{}</td>", escape(label));
            }
            match s {
                Some(s) => {
                    let _ = write!(
                        page,
                        "<td>{}</td><td>{}</td><td>{} – {}</td><td>{}</td><td>{}</td>",
                        s.n,
                        num(s.mean),
                        num(s.ci_low),
                        num(s.ci_high),
                        num(s.min),
                        num(s.max)
                    );
                }
                None => page.push_str("<td>0</td><td colspan=\"4\">no run has it</td>"),
            }
            page.push_str("</tr>\n");
        }
        page.push_str("</table>\n");
        paired_table(&mut page, sweep, planned, ran, metric);
    }
    page.push_str("</body></html>\n");
    Ok(page)
}

/// With a baseline: each other cell's difference from it, seed by seed.
fn paired_table(page: &mut String, sweep: &Sweep, planned: &[Planned], ran: &[Ran], metric: &str) {
    let Some(b) = sweep.baseline else { return };
    let axis = &sweep.axes[b.axis];
    let _ = write!(
        page,
        "<p>Paired, seed by seed, against {}={} (other axes equal): the mean difference and its 95&nbsp;% CI;          an interval that excludes 0 is a difference the seeds support.</p>\n<table><tr>",
        escape(&axis.name),
        escape(&axis.values[b.value].label)
    );
    for a in &sweep.axes {
        let _ = write!(page, "<th>{}</th>", escape(&a.name));
    }
    page.push_str("<th>n</th><th>mean difference</th><th>95&nbsp;% CI</th></tr>\n");
    for (cell, s) in tables::paired(sweep, planned, ran, metric) {
        page.push_str("<tr>");
        for label in sweep.labels(&cell) {
            let _ = write!(page, "<td class=\"l\">{}</td>", escape(label));
        }
        match s {
            Some(s) => {
                let _ = write!(
                    page,
                    "<td>{}</td><td>{}</td><td>{} – {}</td>",
                    s.n,
                    num(s.mean),
                    num(s.ci_low),
                    num(s.ci_high)
                );
            }
            None => page.push_str("<td>0</td><td colspan=\"2\">no seed has both</td>"),
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::file::{Axis, AxisValue};
    use std::sync::Arc;

    fn sweep(axes: &[(&str, &[&str])]) -> Sweep {
        Sweep {
            label: "s.toml".into(),
            title: "t".into(),
            scenario_label: "base.toml".into(),
            scenario_text: Arc::new(String::new()),
            set: Vec::new(),
            axes: axes
                .iter()
                .map(|(n, vs)| Axis {
                    name: n.to_string(),
                    values: vs
                        .iter()
                        .map(|v| AxisValue {
                            label: v.to_string(),
                            set: Vec::new(),
                            scenario: None,
                        })
                        .collect(),
                })
                .collect(),
            seeds: vec![1],
            metrics: Vec::new(),
            baseline: None,
            detail: Vec::new(),
        }
    }

    #[test]
    fn the_first_numeric_axis_is_x_and_the_others_name_the_lines() {
        let s = sweep(&[("policy", &["P", "LL"]), ("rate", &["0.2", "0.1"])]);
        assert_eq!(x_axis(&s), Some((1, true)));
        let one = |m: f64| {
            Some(Summary {
                n: 3,
                mean: m,
                sd: 1.0,
                ci_low: m - 1.0,
                ci_high: m + 1.0,
                min: m,
                max: m,
            })
        };
        let cells = vec![
            (vec![0, 0], one(5.0)),
            (vec![0, 1], one(6.0)),
            (vec![1, 0], one(7.0)),
            (vec![1, 1], None),
        ];
        let got = series(&s, &cells, (1, true));
        assert_eq!(
            got,
            vec![
                (
                    "policy=P".to_string(),
                    vec![(0.1, 6.0, 5.0, 7.0), (0.2, 5.0, 4.0, 6.0)]
                ),
                ("policy=LL".to_string(), vec![(0.2, 7.0, 6.0, 8.0)]),
            ]
        );
        let words = sweep(&[("policy", &["P", "LL"])]);
        assert_eq!(x_axis(&words), Some((0, false)));
    }
}
