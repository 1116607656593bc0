//! `dcemu report`: runs side by side, as a self-contained HTML page with
//! inline SVG plots, plus the same tables as Markdown and CSV.
//!
//! Each plot is drawn only when at least one run has its data; the page
//! lists the plots it skipped and why. Per-task series the summary files do
//! not hold (waiting times, per-class evictions, server occupancy over time)
//! are streamed from the actor logs with [`crate::logs`].
//!
//! The plots follow the papers' figures: performance normalised to ideal per
//! application, sorted worst to best (Paragon Figures 8 and 13); response time
//! per priority class (thesis Figure 7.5); utilisation of servers over time as
//! a heat map (Paragon Figure 11); energy, powered devices, evictions and
//! storage losses as the thesis and the harvesting paper report them; and a
//! replayed SWF log's utilisation over time and wait and bounded-slowdown
//! CDFs ([`hpc`]).

mod data;
mod hpc;
mod labels;
mod plots;

use data::{Figure, bad, read_text};
pub use data::{Heat, ReportError, RunData};

pub(crate) use plots::{CiSeries, bars_plot, ci_plot, lines_plot};
use plots::{cdf_points, heat_plot};

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::logs::{self, Filter, StreamError};

/// Headline metrics, in table order (rows every run lacks are left out).
const HEADLINE: &[&str] = &[
    "virtual_end_s",
    "events",
    "tasks_submitted",
    "tasks_completed",
    "response_s_mean",
    "response_s_p99",
    "waiting_s_mean",
    "waiting_s_p99",
    "queue_wait_s_mean",
    "apps_completed",
    "qos_met_fraction",
    "perf_norm_mean",
    "degraded_over_10pct_fraction",
    "migrations",
    "evictions_total",
    "evictions_priority",
    "evictions_memory",
    "dropped_tasks",
    "wasted_cpu_s",
    "killed_containers",
    "energy_kwh_total",
    "energy_kwh_server",
    "energy_kwh_network",
    "servers_on_mean",
    "switches_on_mean",
    "utilization_cpu_mean",
    "slot_utilization_mean",
    "blocks_lost",
    "failed_accesses",
];

/// Time bins and at most this many rows in the heat map.
const HEAT_BINS: usize = 60;
const HEAT_ROWS: usize = 50;

/// Names each run by its scenario, seed and what differs between them
/// ([`labels::labels`]).
pub fn label_runs(runs: &mut [RunData]) {
    let named: Vec<(Option<&labels::Fields>, &str)> = runs
        .iter()
        .map(|r| (r.fields.as_ref(), r.label.as_str()))
        .collect();
    let new = labels::labels(&named);
    for (run, label) in runs.iter_mut().zip(new) {
        run.label = label;
    }
}

/// Reads what the report needs from a results directory.
pub fn load_run(dir: &Path) -> Result<RunData, ReportError> {
    let label = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
    if !dir.is_dir() {
        return Err(bad(dir, "no such results directory"));
    }
    if let Some(why) = read_text(&dir.join("INCOMPLETE"))? {
        return Err(bad(
            dir,
            format!(
                "the results of a run that did not finish ({}); a report compares complete runs",
                why.trim()
            ),
        ));
    }
    let metrics_path = dir.join("metrics.json");
    let metrics = match read_text(&metrics_path)? {
        Some(t) => serde_json::from_str(&t).map_err(|e| bad(&metrics_path, e.to_string()))?,
        None => {
            return Err(bad(
                &metrics_path,
                "missing: is this a dcemu results directory?",
            ));
        }
    };
    let fields = read_text(&dir.join("scenario.toml"))?
        .and_then(|t| t.parse::<toml::Table>().ok())
        .map(|t| labels::flatten(&t));
    let mut run = RunData {
        label,
        fields,
        metrics,
        ..RunData::default()
    };
    let apps = dir.join("applications.csv");
    if let Some(text) = read_text(&apps)? {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        let col = header
            .iter()
            .position(|h| *h == "perf_norm")
            .ok_or_else(|| bad(&apps, "no perf_norm column"))?;
        for (i, line) in lines.enumerate() {
            let cell = line.split(',').nth(col).unwrap_or("");
            if cell.is_empty() {
                continue;
            }
            let v: f64 = cell.parse().map_err(|_| {
                bad(
                    &apps,
                    format!("line {}: perf_norm {cell:?} is not a number", i + 2),
                )
            })?;
            run.perf_norm.push(v);
        }
        run.perf_norm.sort_by(f64::total_cmp);
    }
    let ts = dir.join("timeseries.csv");
    if let Some(text) = read_text(&ts)? {
        for (i, line) in text.lines().enumerate().skip(1) {
            let cells: Vec<f64> = line
                .split(',')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| bad(&ts, format!("line {}: not numbers", i + 1)))?;
            if let [t, s, w, ..] = cells[..] {
                run.timeseries.push((t, s, w));
            } else if let [t, s] = cells[..] {
                run.timeseries.push((t, s, 0.0));
            }
        }
    }
    run.hpc = hpc::load(dir)?;
    run.has_logs = dir.join(logs::ACTOR_DIR).is_dir();
    if run.has_logs {
        read_logs(dir, &mut run)?;
    }
    Ok(run)
}

/// Slots of each server type, from the recorded scenario's
/// `[[server_types]]` (with its defaults filled in), read as TOML rather
/// than loaded: loading would read again the trace files it names, which
/// the results of a streamed trace (an SWF log) do not hold.
fn slots_by_type(dir: &Path) -> Result<BTreeMap<String, u32>, ReportError> {
    let path = dir.join("scenario.toml");
    let Some(text) = read_text(&path)? else {
        return Ok(BTreeMap::new());
    };
    let table = text
        .parse::<toml::Table>()
        .map_err(|e| bad(&path, e.to_string()))?;
    let types = table
        .get("server_types")
        .and_then(toml::Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut out = BTreeMap::new();
    for (i, t) in types.iter().enumerate() {
        let name = t
            .get("name")
            .and_then(toml::Value::as_str)
            .ok_or_else(|| bad(&path, format!("server_types[{i}]: no name")))?;
        let int = |key: &str| {
            t.get(key)
                .and_then(toml::Value::as_integer)
                .and_then(|v| u32::try_from(v).ok())
        };
        let slots = int("slots")
            .unwrap_or(0)
            .max(int("cores").unwrap_or(1))
            .max(1);
        out.insert(name.to_string(), slots);
    }
    Ok(out)
}

#[derive(serde::Deserialize)]
struct LogFields {
    waiting_ns: Option<u64>,
    victim_priority: Option<i64>,
    running: Option<u64>,
    server_type: Option<String>,
}

/// Per server: running tasks now, since when, and busy slot·s per time bin.
struct Occupancy {
    running: u64,
    since: f64,
    slots: f64,
    busy: Vec<f64>,
}

fn read_logs(dir: &Path, run: &mut RunData) -> Result<(), ReportError> {
    let slots = slots_by_type(dir)?;
    let end_s = run
        .metrics
        .get("virtual_end_s")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let bin_s = (end_s / HEAT_BINS as f64).max(1e-9);
    // Every server has a log file, busy or not: all of them get a row.
    let server_filter = Filter {
        actors: Filter::actor_patterns(&["server-*".to_string()]).map_err(StreamError::Logs)?,
        ..Filter::default()
    };
    let mut servers: BTreeMap<String, Occupancy> = match logs::actor_files(dir, &server_filter) {
        Ok(files) => files
            .into_iter()
            .map(|(name, _)| {
                let o = Occupancy {
                    running: 0,
                    since: 0.0,
                    slots: 1.0,
                    busy: vec![0.0; HEAT_BINS],
                };
                (name, o)
            })
            .collect(),
        Err(logs::LogsError::NoActorMatches(_)) => BTreeMap::new(),
        Err(e) => return Err(StreamError::Logs(e).into()),
    };
    let filter = Filter {
        kinds: [
            "task_done",
            "preempt",
            "task_start",
            "task_end",
            "kill",
            "evict_memory",
            "evict_priority",
            "migrate_out",
        ]
        .map(String::from)
        .to_vec(),
        ..Filter::default()
    };
    let add_busy = |o: &mut Occupancy, until: f64| {
        let mut t = o.since;
        while t < until && o.running > 0 {
            let bin = ((t / bin_s) as usize).min(HEAT_BINS - 1);
            let bin_end = ((bin + 1) as f64 * bin_s).min(until);
            let step = if bin_end > t { bin_end - t } else { until - t };
            o.busy[bin] += o.running as f64 * step;
            t += step;
        }
        o.since = until;
    };
    logs::stream(dir, &filter, |e| {
        let f: LogFields = serde_json::from_str(e.line).map_err(std::io::Error::other)?;
        let t = e.t_ns as f64 / 1e9;
        match e.kind {
            "task_done" => run.waiting_s.extend(f.waiting_ns.map(|w| w as f64 / 1e9)),
            "preempt" => {
                if let Some(p) = f.victim_priority {
                    *run.evictions_by_class.entry(p).or_default() += 1;
                }
            }
            _ if e.actor.starts_with("server-") => {
                let o = servers
                    .entry(e.actor.to_string())
                    .or_insert_with(|| Occupancy {
                        running: 0,
                        since: 0.0,
                        slots: 1.0,
                        busy: vec![0.0; HEAT_BINS],
                    });
                add_busy(o, t);
                if let Some(st) = &f.server_type {
                    o.slots = f64::from(slots.get(st).copied().unwrap_or(1));
                }
                o.running = match (e.kind, f.running) {
                    (_, Some(r)) => r,
                    _ => o.running.saturating_sub(1),
                };
            }
            _ => {}
        }
        Ok(true)
    })?;
    run.waiting_s.sort_by(f64::total_cmp);
    if servers.is_empty() || end_s <= 0.0 {
        return Ok(());
    }
    let n = servers.len();
    let per_row = n.div_ceil(HEAT_ROWS);
    let mut rows = Vec::new();
    let mut values = Vec::new();
    let all: Vec<Occupancy> = servers
        .into_values()
        .map(|mut o| {
            add_busy(&mut o, end_s);
            o
        })
        .collect();
    for (g, group) in all.chunks(per_row).enumerate() {
        rows.push((g * per_row, g * per_row + group.len() - 1));
        values.push(
            (0..HEAT_BINS)
                .map(|b| {
                    let u: f64 = group
                        .iter()
                        .map(|o| (o.busy[b] / (bin_s * o.slots)).min(1.0))
                        .sum();
                    u / group.len() as f64
                })
                .collect(),
        );
    }
    run.heat = Some(Heat {
        rows,
        bin_s,
        values,
    });
    Ok(())
}

fn metric(run: &RunData, key: &str) -> Option<f64> {
    run.metrics.get(key).and_then(Value::as_f64)
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.4}"),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A table as rows of cells, the first row the header.
type Table = Vec<Vec<String>>;

fn markdown(table: &Table) -> String {
    let mut out = String::new();
    for (i, row) in table.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
        }
    }
    out
}

fn csv(table: &Table) -> String {
    let mut out = String::new();
    for row in table {
        let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

fn html_table(table: &Table) -> String {
    let mut out = String::from("<table>\n");
    for (i, row) in table.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<{tag}>{}</{tag}>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// What `build` wrote.
#[derive(Debug)]
pub struct Written {
    pub html: PathBuf,
    pub figures: Vec<String>,
    /// Plots left out, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Builds the report of `runs` into `out` (created if needed): `report.html`,
/// `headline.md` / `headline.csv`, `response_by_class.md` / `.csv`.
pub fn build(runs: &[RunData], out: &Path) -> Result<Written, ReportError> {
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let mut figures = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut skip = |title: &str, why: &str| skipped.push((title.to_string(), why.to_string()));

    // Performance normalised to ideal, per application, worst to best.
    let title = "Performance normalised to ideal per application, worst to best";
    if runs.iter().any(|r| !r.perf_norm.is_empty()) {
        let series: Vec<_> = runs
            .iter()
            .filter(|r| !r.perf_norm.is_empty())
            .map(|r| {
                let n = r.perf_norm.len() as f64;
                let pts = r
                    .perf_norm
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (100.0 * (i as f64 + 0.5) / n, *v))
                    .collect();
                (r.label.clone(), pts)
            })
            .collect();
        figures.push(Figure {
            id: "perf-norm".into(),
            title: title.into(),
            caption: "Each application's ideal time over its actual time (1 = as fast as alone on its best configuration), sorted; x is the application's rank as a percentage so runs with different numbers of applications compare (Paragon Figures 8, 13).".into(),
            svg: lines_plot("perf_norm", "applications, worst to best (%)", "performance / ideal", &series)?,
        });
    } else {
        skip(
            title,
            "no run has finished catalog applications (applications.csv)",
        );
    }

    let title = "CDF of waiting time";
    if runs.iter().any(|r| !r.waiting_s.is_empty()) {
        let series: Vec<_> = runs
            .iter()
            .filter(|r| !r.waiting_s.is_empty())
            .map(|r| (r.label.clone(), cdf_points(&r.waiting_s, 400)))
            .collect();
        figures.push(Figure {
            id: "waiting-cdf".into(),
            title: title.into(),
            caption: "Share of finished tasks that waited at most x seconds from submission to start (tenants' task_done events).".into(),
            svg: lines_plot("waiting_cdf", "waiting time (s)", "fraction of tasks", &series)?,
        });
    } else {
        skip(
            title,
            "no run has actor logs with finished tasks (task_done)",
        );
    }

    hpc::figures(runs, &mut figures, &mut skip)?;

    // Response time per priority class.
    let mut classes: Vec<i64> = runs
        .iter()
        .flat_map(|r| {
            r.metrics.keys().filter_map(|k| {
                k.strip_prefix("response_s_class_")?
                    .strip_suffix("_mean")?
                    .parse()
                    .ok()
            })
        })
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let mut class_table: Table = vec![
        std::iter::once("class".to_string())
            .chain(labels.iter().cloned())
            .collect(),
    ];
    for c in &classes {
        class_table.push(
            std::iter::once(c.to_string())
                .chain(runs.iter().map(|r| {
                    metric(r, &format!("response_s_class_{c}_mean"))
                        .map_or(String::new(), |v| format!("{v:.3}"))
                }))
                .collect(),
        );
    }
    let title = "Response time per priority class";
    if classes.len() > 1 {
        let cats: Vec<String> = classes.iter().map(i64::to_string).collect();
        figures.push(Figure {
            id: "response-class".into(),
            title: title.into(),
            caption: "Mean response time (submission to completion) of each priority class (thesis Figure 7.5).".into(),
            svg: bars_plot("response_class", "mean response time (s)", &cats, &labels, |c, r| {
                metric(&runs[r], &format!("response_s_class_{}_mean", classes[c]))
            })?,
        });
    } else {
        skip(title, "the runs have a single priority class");
    }

    let title = "Evictions per priority class";
    let mut ev_classes: Vec<i64> = runs
        .iter()
        .flat_map(|r| r.evictions_by_class.keys().copied())
        .collect();
    ev_classes.sort_unstable();
    ev_classes.dedup();
    if !ev_classes.is_empty() {
        let cats: Vec<String> = ev_classes.iter().map(i64::to_string).collect();
        figures.push(Figure {
            id: "evictions-class".into(),
            title: title.into(),
            caption:
                "Priority evictions by the evicted task's class (the scheduler's preempt events)."
                    .into(),
            svg: bars_plot("evictions_class", "evictions", &cats, &labels, |c, r| {
                Some(
                    runs[r]
                        .evictions_by_class
                        .get(&ev_classes[c])
                        .copied()
                        .unwrap_or(0) as f64,
                )
            })?,
        });
    } else {
        skip(title, "no run logged priority evictions");
    }

    let title = "Servers on over time";
    if runs.iter().any(|r| !r.timeseries.is_empty()) {
        let series: Vec<_> = runs
            .iter()
            .map(|r| {
                (
                    r.label.clone(),
                    r.timeseries.iter().map(|p| (p.0, p.1)).collect(),
                )
            })
            .collect();
        figures.push(Figure {
            id: "servers-on".into(),
            title: title.into(),
            caption: "Powered servers (on, idle or waking), sampled every power.sample_interval (timeseries.csv).".into(),
            svg: lines_plot("servers_on", "virtual time (s)", "servers on", &series)?,
        });
    } else {
        skip(title, "no timeseries.csv");
    }
    let title = "Switches on over time";
    if runs.iter().any(|r| r.timeseries.iter().any(|p| p.2 > 0.0)) {
        let series: Vec<_> = runs
            .iter()
            .map(|r| {
                (
                    r.label.clone(),
                    r.timeseries.iter().map(|p| (p.0, p.2)).collect(),
                )
            })
            .collect();
        figures.push(Figure {
            id: "switches-on".into(),
            title: title.into(),
            caption: "Powered switches over time (timeseries.csv).".into(),
            svg: lines_plot("switches_on", "virtual time (s)", "switches on", &series)?,
        });
    } else {
        skip(title, "flat networks: no switches");
    }

    let title = "Energy split";
    let parts = [
        ("servers", "energy_kwh_server"),
        ("core switches", "energy_kwh_network_core"),
        ("aggregation switches", "energy_kwh_network_aggregation"),
        ("access switches", "energy_kwh_network_access"),
    ];
    if runs
        .iter()
        .any(|r| metric(r, "energy_kwh_total").is_some_and(|e| e > 0.0))
    {
        let cats: Vec<String> = parts.iter().map(|p| p.0.to_string()).collect();
        figures.push(Figure {
            id: "energy".into(),
            title: title.into(),
            caption: "Energy over the run by device kind, kWh (metrics.json).".into(),
            svg: bars_plot("energy", "energy (kWh)", &cats, &labels, |c, r| {
                metric(&runs[r], parts[c].1)
            })?,
        });
    } else {
        skip(title, "no run reports energy");
    }

    for (i, r) in runs.iter().enumerate() {
        let title = format!("Utilisation, servers × time: {}", r.label);
        match &r.heat {
            Some(h) => figures.push(Figure {
                id: format!("heat-{i}"),
                title: title.clone(),
                caption: format!(
                    "Share of each server's slots busy (running tasks / slots, capped at 1), averaged over {:.0} s bins and groups of up to {} servers; white idle, dark blue full (Paragon Figure 11).",
                    h.bin_s,
                    h.rows.first().map_or(1, |g| g.1 - g.0 + 1)
                ),
                svg: heat_plot("heat", h)?,
            }),
            None => skip(&title, "no server task events in the actor logs"),
        }
    }

    let title = "Lost blocks and failed accesses";
    let storage = [
        "blocks_lost",
        "failed_accesses_busy",
        "failed_accesses_lost",
    ];
    if runs
        .iter()
        .any(|r| metric(r, "blocks_total").is_some_and(|b| b > 0.0))
    {
        let cats: Vec<String> = storage.iter().map(|s| s.to_string()).collect();
        figures.push(Figure {
            id: "storage".into(),
            title: title.into(),
            caption: "Blocks whose every replica was lost, and reads that failed on a busy data node or a lost block (harvesting §6.4).".into(),
            svg: bars_plot("storage", "count", &cats, &labels, |c, r| metric(&runs[r], storage[c]))?,
        });
    } else {
        skip(title, "no run has harvested storage ([storage])");
    }

    // Headline table.
    let mut headline: Table = vec![
        std::iter::once("metric".to_string())
            .chain(labels.iter().cloned())
            .collect(),
    ];
    for key in HEADLINE {
        let cells: Vec<String> = runs
            .iter()
            .map(|r| r.metrics.get(*key).map_or(String::new(), fmt_value))
            .collect();
        if cells.iter().any(|c| !c.is_empty()) {
            headline.push(std::iter::once(key.to_string()).chain(cells).collect());
        }
    }

    std::fs::create_dir_all(out).map_err(|source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|source| ReportError::Write { path, source })
    };
    write("headline.md", &markdown(&headline))?;
    write("headline.csv", &csv(&headline))?;
    write("response_by_class.md", &markdown(&class_table))?;
    write("response_by_class.csv", &csv(&class_table))?;

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>dcemu report: {}</title>\n<style>\nbody{{font-family:sans-serif;max-width:900px;margin:2em auto;color:#222}}\ntable{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}th{{background:#eee}}td:first-child,th:first-child{{text-align:left}}\nfigure{{margin:2em 0}}figcaption{{font-size:90%;color:#555}}\n</style>\n</head>\n<body>\n<h1>dcemu report</h1>\n<p>Runs: {}</p>\n",
        esc(&labels.join(", ")),
        labels
            .iter()
            .map(|l| format!("<code>{}</code>", esc(l)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    html.push_str("<h2>Headline metrics</h2>\n");
    html.push_str(&html_table(&headline));
    if classes.len() > 1 {
        html.push_str("<h2>Mean response time per priority class (s)</h2>\n");
        html.push_str(&html_table(&class_table));
    }
    html.push_str("<h2>Plots</h2>\n");
    for f in &figures {
        let _ = write!(
            html,
            "<figure id=\"{}\">\n<h3>{}</h3>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            f.id,
            esc(&f.title),
            f.svg,
            esc(&f.caption)
        );
    }
    if !skipped.is_empty() {
        html.push_str("<h2>Plots skipped</h2>\n<ul>\n");
        for (t, why) in &skipped {
            let _ = writeln!(html, "<li>{}: {}</li>", esc(t), esc(why));
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</body>\n</html>\n");
    write("report.html", &html)?;
    Ok(Written {
        html: out.join("report.html"),
        figures: figures.into_iter().map(|f| f.id).collect(),
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i) / 10.0).collect();
        let p = cdf_points(&v, 100);
        assert!(p.len() <= 102);
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(p.last().copied(), Some((99.9, 1.0)));
        assert!(cdf_points(&[], 10).is_empty());
    }

    #[test]
    fn tables_escape_their_cells() {
        let t: Table = vec![
            vec!["a".into(), "b".into()],
            vec!["x|y".into(), "1,2".into()],
        ];
        assert_eq!(markdown(&t), "| a | b |\n|---|---|\n| x\\|y | 1,2 |\n");
        assert_eq!(csv(&t), "a,b\nx|y,\"1,2\"\n");
        assert!(html_table(&vec![vec!["<b>".into()]]).contains("&lt;b&gt;"));
    }
}
