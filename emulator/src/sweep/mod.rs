//! `dcemu sweep`: a user's own comparisons, policies × loads × seeds, on
//! the `reproduce` runner ([`crate::reproduce::runner`]).
//!
//! A sweep file ([`file`]) names a base scenario, axes of `--set`
//! overrides and seeds; the runs are every cell of the axes' product on
//! every seed, each identical run once. Every cell is loaded before
//! anything runs, so a bad axis value stops the sweep naming every cell it
//! touches. Out come `sweep.csv` (tidy: one row per run and metric) and
//! `summary.csv` (per cell and metric: n, mean, standard deviation, 95 %
//! confidence interval by Student's t, min, max), with every run's results
//! directory under `runs/`. `--resume` reuses the complete results
//! directories of an earlier, interrupted invocation.

pub mod file;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use crate::reproduce::runner::{Job, Ran, progress_bar, remove_stale_runs, reuse, run_batch, slug};
use crate::reproduce::{ReproduceError, SeedList, write_atomic};
use crate::scenario::{self, Override};
use file::Sweep;

/// `dcemu sweep`.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// The sweep file (scenarios/sweeps/README.md).
    pub file: PathBuf,
    /// Runs at once (default: the cores available).
    #[arg(long, value_parser = crate::whole::Whole::new(1, 256).as_u32())]
    pub jobs: Option<u32>,
    /// Where sweep.csv, summary.csv and runs/ go (default:
    /// results/sweep/<file name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Seeds, replacing the file's (e.g. 1,2,3).
    #[arg(long, value_name = "SEEDS")]
    pub seeds: Option<SeedList>,
    /// Reuse the complete results directories already under DIR/runs
    /// (a sweep stopped midway redoes only what did not finish).
    #[arg(long)]
    pub resume: bool,
}

/// What a sweep ran and wrote.
#[derive(Debug)]
pub struct SweepSummary {
    pub cells: usize,
    pub seeds: usize,
    /// Distinct runs, and of those, reused by `--resume`.
    pub runs: usize,
    pub reused: usize,
    pub written: Vec<PathBuf>,
}

/// One cell's run on one seed, by index into the distinct runs.
struct Planned {
    cell: Vec<usize>,
    seed: u64,
    run: usize,
}

/// Runs the sweep `args` names.
pub fn sweep(args: &SweepArgs) -> Result<SweepSummary, ReproduceError> {
    let mut sweep = file::load(&args.file).map_err(|e| ReproduceError::Input(e.to_string()))?;
    if let Some(seeds) = &args.seeds {
        if seeds.0.is_empty() {
            return Err(ReproduceError::Input(
                "--seeds: give at least one seed".into(),
            ));
        }
        sweep.seeds = seeds.0.clone();
    }
    check_cells(&sweep)?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .file_stem()
            .map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned());
        PathBuf::from("results/sweep").join(stem)
    });
    let (jobs, planned) = plan(&sweep);
    let runs_dir = out.join("runs");
    let reused = match args.resume {
        true => jobs
            .iter()
            .filter(|j| runs_dir.join(&j.dir).join("digest").is_file())
            .count(),
        false => 0,
    };
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let bar = progress_bar(
        jobs.len() as u64,
        "sweep {bar:40} {pos}/{len} runs, {elapsed} {msg}",
    );
    let ran = run_batch(&jobs, threads, &runs_dir, &bar, args.resume);
    bar.finish_and_clear();
    ran.map_err(ReproduceError::Failed)?;
    // Every run's metrics as its metrics.json holds them, fresh or reused
    // alike, so that a resumed sweep writes what an unbroken one does.
    let ran = jobs
        .iter()
        .map(|j| {
            let dir = runs_dir.join(&j.dir);
            reuse(&dir).unwrap_or_else(|| Err(format!("{}: no complete results", dir.display())))
        })
        .collect::<Result<Vec<Ran>, String>>()
        .map_err(ReproduceError::Failed)?;
    remove_stale_runs(jobs.iter().map(|j| j.dir.as_str()), &runs_dir);
    let metrics = chosen_metrics(&sweep, &ran)?;
    let tidy = out.join("sweep.csv");
    let summary = out.join("summary.csv");
    write_atomic(&tidy, tidy_csv(&sweep, &planned, &ran, &metrics).as_bytes())
        .map_err(ReproduceError::Failed)?;
    write_atomic(
        &summary,
        summary_csv(&sweep, &planned, &ran, &metrics).as_bytes(),
    )
    .map_err(ReproduceError::Failed)?;
    Ok(SweepSummary {
        cells: sweep.cells().len(),
        seeds: sweep.seeds.len(),
        runs: jobs.len(),
        reused,
        written: vec![tidy, summary, runs_dir],
    })
}

/// Loads every cell's scenario (on the first seed) before anything runs:
/// every cell a bad value touches is named, each with its problem.
fn check_cells(sweep: &Sweep) -> Result<(), ReproduceError> {
    let seed: Override = format!("run.seed={}", sweep.seeds[0])
        .parse()
        .map_err(ReproduceError::Input)?;
    let mut problems = Vec::new();
    for cell in sweep.cells() {
        let mut overrides = sweep.overrides(&cell);
        overrides.push(seed.clone());
        if let Err(e) = scenario::load(&sweep.scenario_label, &sweep.scenario_text, &overrides) {
            problems.push(format!(
                "{}: cell {}: {e}",
                sweep.label,
                cell_name(sweep, &cell)
            ));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(ReproduceError::Input(problems.join("\n"))),
    }
}

/// `axis=label` of each axis of `cell`.
fn cell_name(sweep: &Sweep, cell: &[usize]) -> String {
    let words: Vec<String> = sweep
        .axes
        .iter()
        .zip(sweep.labels(cell))
        .map(|(a, l)| format!("{}={l}", a.name))
        .collect();
    match words.is_empty() {
        true => "(the base scenario)".into(),
        false => words.join(", "),
    }
}

/// The distinct runs, and each cell × seed's run among them.
fn plan(sweep: &Sweep) -> (Vec<Job>, Vec<Planned>) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: BTreeMap<(String, Vec<String>, u64), usize> = BTreeMap::new();
    let mut planned = Vec::new();
    for cell in sweep.cells() {
        for &seed in &sweep.seeds {
            let mut name: Vec<&str> = sweep.labels(&cell);
            if name.is_empty() {
                name.push("base");
            }
            let job = Job {
                scenario_label: sweep.scenario_label.clone(),
                scenario_text: sweep.scenario_text.clone(),
                overrides: sweep.overrides(&cell),
                seed,
                dir: format!("{}_s{seed}", slug(&name)),
            };
            let run = *index.entry(job.key()).or_insert_with(|| {
                jobs.push(job);
                jobs.len() - 1
            });
            planned.push(Planned {
                cell: cell.clone(),
                seed,
                run,
            });
        }
    }
    (jobs, planned)
}

/// The metrics to collect: the file's (each must be in some run), or
/// every numeric metric any run has.
fn chosen_metrics(sweep: &Sweep, ran: &[Ran]) -> Result<Vec<String>, ReproduceError> {
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
fn tidy_csv(sweep: &Sweep, planned: &[Planned], ran: &[Ran], metrics: &[String]) -> String {
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
fn summary_csv(sweep: &Sweep, planned: &[Planned], ran: &[Ran], metrics: &[String]) -> String {
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
