//! `dcemu calibrate PAPER`: fit a paper's free parameters to its targets.
//!
//! The free parameters are the `[[calibration]]` blocks of
//! `scenarios/reproduce/<paper>.toml` (see [`crate::reproduce::calibration`]
//! and `scenarios/reproduce/README.md`). A candidate point gives every
//! parameter a value; each target row runs, on every calibration seed, with
//! its own overrides and `--set key=value` for each parameter whose
//! `scenarios` list the row's scenario (exactly what `dcemu reproduce` runs
//! once the values are written there). The loss of a point is
//!
//! ```text
//! Σ over the distinct target rows of ((mean over seeds − paper) / scale)²
//! ```
//!
//! where `scale` is the row's tolerance, or `max(0.1·|paper|, 0.01)` if the
//! tolerance is 0; a row whose metric is null on a seed makes the loss +∞.
//! The search is [`search`]'s compass search from the committed `start`s,
//! one stage at a time (`stage` in a block: stage 2 is fitted with stage 1's
//! values held, and never reaches a stage-1 target's scenario);
//! runs go through `dcemu reproduce`'s runner ([`runner::run_batch`]), each
//! distinct run once, so the result does not depend on `--jobs`. At the end
//! the fitted values are written into the scenario files (with `toml_edit`,
//! keeping comments and layout) and `value` / `fitted` into the paper's
//! file, unless `--dry-run`.

pub mod search;
mod table;
mod target;
mod writeback;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use indicatif::ProgressBar;

use crate::reproduce::calibration::{self, Calibration};
use crate::reproduce::experiments::{Paper, load_papers};
use crate::reproduce::runner::{self, Job, Ran};
use crate::reproduce::{commit_of, run_dir_name};
use crate::scenario::MAX_SEED;
use search::{Objective, Param, SearchError};
use target::Target;

/// `dcemu calibrate`.
#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// The paper whose `[[calibration]]` blocks to fit (paragon, arq, …).
    pub paper: String,
    /// The calibration seeds: every target row runs on each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3",
          value_parser = crate::whole::Whole::new(0, MAX_SEED))]
    pub seeds: Vec<u64>,
    /// Runs at once (default: the cores available); the result does not depend on it.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::whole::Whole::new(1, 256).as_u32())]
    pub jobs: Option<u32>,
    /// Most scenario runs the search may spend (a run shared by two points counts once).
    #[arg(long, value_name = "RUNS", default_value_t = 200)]
    pub budget: usize,
    /// The directory of experiment files.
    #[arg(long, value_name = "DIR", default_value = "scenarios/reproduce")]
    pub experiments: PathBuf,
    /// Where the runs, calibration.csv and calibration.md go (default:
    /// results/calibrate/<paper>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Fit and report, but write nothing into the scenario and paper files.
    #[arg(long)]
    pub dry_run: bool,
}

/// Why `dcemu calibrate` did not finish: the same two kinds as `dcemu
/// reproduce` (bad experiment files or flags, exit 2; a run or a write that
/// failed, exit 1), since it runs through the same machinery.
pub type CalibrateError = crate::reproduce::ReproduceError;

/// What `dcemu calibrate` found and wrote.
#[derive(Debug)]
pub struct Summary {
    /// The final table (Markdown), as calibration.md holds it.
    pub table: String,
    /// Files written (results, and the scenario and paper files unless `--dry-run`).
    pub written: Vec<PathBuf>,
    /// Scenario files whose value differed from the declared one before the fit.
    pub warnings: Vec<String>,
}

/// The tolerance that scales a row's term in the loss.
pub fn scale(tolerance: Option<f64>, paper: f64) -> f64 {
    match tolerance {
        Some(t) if t > 0.0 => t,
        _ => (0.1 * paper.abs()).max(0.01),
    }
}

/// The loss of the targets' means (`None`: a seed's metric was null).
pub fn loss(terms: impl Iterator<Item = (Option<f64>, f64, f64)>) -> f64 {
    terms
        .map(|(mean, paper, scale)| match mean {
            Some(m) => ((m - paper) / scale).powi(2),
            None => f64::INFINITY,
        })
        .sum()
}

/// The objective: targets × seeds as runs, shared and cached.
struct Fit<'a> {
    /// The parameters this stage fits, in file order.
    calibrations: Vec<&'a Calibration>,
    /// Earlier stages' parameters at their fitted values.
    fixed: Vec<(&'a Calibration, f64)>,
    targets: Vec<Target<'a>>,
    seeds: Vec<u64>,
    threads: usize,
    runs_dir: PathBuf,
    bar: ProgressBar,
    /// Every run so far, by its key.
    ran: BTreeMap<(String, Vec<String>, u64), Ran>,
    /// Directory names taken, by run key.
    dirs: BTreeMap<(String, Vec<String>, u64), String>,
    /// Per evaluated point (by its bits), the targets' means.
    means: BTreeMap<Vec<u64>, Vec<Option<f64>>>,
    best: f64,
}

fn bits(point: &[f64]) -> Vec<u64> {
    point.iter().map(|v| v.to_bits()).collect()
}

impl Fit<'_> {
    /// The runs a point needs, per target and seed (keys may repeat).
    fn jobs(&self, point: &[f64]) -> Result<Vec<Job>, CalibrateError> {
        let mut jobs = Vec::new();
        for t in &self.targets {
            let mut overrides = t.row.overrides.clone();
            let values = self.fixed.iter().map(|(c, v)| (*c, *v));
            for (c, v) in values.chain(self.calibrations.iter().copied().zip(point.iter().copied()))
            {
                if c.writes(&t.row.scenario_path) {
                    overrides.push(c.override_for(v).map_err(CalibrateError::Input)?);
                }
            }
            for &seed in &self.seeds {
                jobs.push(Job {
                    scenario_label: t.row.scenario_path.display().to_string(),
                    scenario_text: t.row.scenario_text.clone(),
                    overrides: overrides.clone(),
                    seed,
                    dir: run_dir_name(&t.row.scenario, &overrides, seed),
                });
            }
        }
        Ok(jobs)
    }

    fn new_runs(&self, points: &[Vec<f64>]) -> Result<Vec<Job>, CalibrateError> {
        let mut fresh: Vec<Job> = Vec::new();
        let mut keys = BTreeSet::new();
        for p in points {
            for job in self.jobs(p)? {
                let key = job.key();
                if !self.ran.contains_key(&key) && keys.insert(key) {
                    fresh.push(job);
                }
            }
        }
        Ok(fresh)
    }

    fn metric(&self, job: &Job, t: &Target<'_>) -> Result<Option<f64>, CalibrateError> {
        let ran = self
            .ran
            .get(&job.key())
            .ok_or_else(|| CalibrateError::Failed(format!("{}: the run was lost", job.dir)))?;
        let v = ran.metrics.get(&t.row.metric).ok_or_else(|| {
            CalibrateError::Input(format!(
                "target {}: {:?} is not in the run's metrics.json (docs/metrics.md lists them)",
                t.name, t.row.metric
            ))
        })?;
        Ok(v.as_f64())
    }
}

impl Objective for Fit<'_> {
    type Error = CalibrateError;

    fn cost(&self, points: &[Vec<f64>]) -> usize {
        // A point whose overrides do not parse costs nothing here; its
        // evaluation reports the error.
        self.new_runs(points).map_or(0, |f| f.len())
    }

    fn evaluate(
        &mut self,
        iteration: usize,
        points: &[Vec<f64>],
    ) -> Result<Vec<f64>, CalibrateError> {
        let mut fresh = self.new_runs(points)?;
        for job in &mut fresh {
            let taken: BTreeSet<&String> = self.dirs.values().collect();
            if taken.contains(&job.dir) {
                job.dir = format!("{}-{}", job.dir, self.dirs.len());
            }
            self.dirs.insert(job.key(), job.dir.clone());
        }
        self.bar.set_message(format!(
            "iteration {iteration}, best loss {}",
            table::loss_text(self.best)
        ));
        let ran = runner::run_batch(&fresh, self.threads, &self.runs_dir, &self.bar, false)
            .map_err(CalibrateError::Failed)?;
        for (job, r) in fresh.iter().zip(ran) {
            self.ran.insert(job.key(), r);
        }
        let mut losses = Vec::new();
        for p in points {
            let jobs = self.jobs(p)?;
            let mut means = Vec::new();
            for (k, t) in self.targets.iter().enumerate() {
                let mut values = Vec::new();
                for job in &jobs[k * self.seeds.len()..(k + 1) * self.seeds.len()] {
                    values.push(self.metric(job, t)?);
                }
                let known: Vec<f64> = values.iter().flatten().copied().collect();
                means.push(
                    (known.len() == values.len())
                        .then(|| known.iter().sum::<f64>() / known.len() as f64),
                );
            }
            let l = loss(
                means
                    .iter()
                    .zip(&self.targets)
                    .map(|(m, t)| (*m, t.paper, t.scale)),
            );
            self.best = self.best.min(l);
            self.means.insert(bits(p), means);
            losses.push(l);
        }
        Ok(losses)
    }
}

/// The distinct target rows of `blocks`, in file order (experiments, then rows).
fn targets<'a>(paper: &'a Paper, blocks: &[&Calibration]) -> Vec<Target<'a>> {
    let named: BTreeSet<(&str, &str)> = blocks
        .iter()
        .flat_map(|c| c.rows.iter().map(|(e, r)| (e.as_str(), r.as_str())))
        .collect();
    let mut out = Vec::new();
    for e in &paper.experiments {
        for row in &e.rows {
            if !named.contains(&(e.id.as_str(), row.label.as_str())) {
                continue;
            }
            let paper_value = row.paper.unwrap_or_default();
            out.push(Target {
                name: format!("{}/{}", e.id, row.label),
                row,
                scale: scale(row.tolerance, paper_value),
                tolerance: row.tolerance.unwrap_or_default(),
                paper: paper_value,
            });
        }
    }
    out
}

/// Runs one stage's search: its blocks from their starts, with earlier
/// stages' values held, within `budget` runs.
fn fit_stage<'a>(
    paper: &'a Paper,
    blocks: Vec<&'a Calibration>,
    fixed: Vec<(&'a Calibration, f64)>,
    seeds: &[u64],
    threads: usize,
    runs_dir: &std::path::Path,
    budget: usize,
) -> Result<(search::Outcome, Fit<'a>), CalibrateError> {
    let params: Vec<Param> = blocks
        .iter()
        .map(|c| Param {
            lo: c.lo,
            hi: c.hi,
            start: c.start,
            step: c.step,
            integer: c.integer,
        })
        .collect();
    let further = blocks.first().map_or(0, |c| c.starts.len());
    let starts: Vec<Vec<f64>> = std::iter::once(params.iter().map(|p| p.start).collect())
        .chain((0..further).map(|k| {
            blocks
                .iter()
                .map(|c| c.starts.get(k).copied().unwrap_or(c.start))
                .collect()
        }))
        .collect();
    let mut fit = Fit {
        targets: targets(paper, &blocks),
        calibrations: blocks,
        fixed,
        seeds: seeds.to_vec(),
        threads,
        runs_dir: runs_dir.to_path_buf(),
        bar: runner::progress_bar(
            budget as u64,
            "calibrate {bar:40} {pos}/{len} runs of the budget, {elapsed} {msg}",
        ),
        ran: BTreeMap::new(),
        dirs: BTreeMap::new(),
        means: BTreeMap::new(),
        best: f64::INFINITY,
    };
    let outcome = search::search_from(&params, &starts, budget, &mut fit);
    fit.bar.finish_and_clear();
    let outcome = outcome.map_err(|e| match e {
        SearchError::BudgetTooSmall { .. } => CalibrateError::Input(format!("--budget: {e}")),
        SearchError::Objective(e) => e,
    })?;
    Ok((outcome, fit))
}

/// The checkout's short commit, "unknown" outside git.
fn short_commit(dir: &std::path::Path) -> String {
    let c = commit_of(dir);
    if c.starts_with("unknown") {
        "unknown".into()
    } else {
        c
    }
}

/// Fits the paper's free parameters; see the module documentation.
pub fn calibrate(args: &CalibrateArgs) -> Result<Summary, CalibrateError> {
    let mut seeds = args.seeds.clone();
    seeds.dedup();
    if seeds.is_empty() {
        return Err(CalibrateError::Input(
            "--seeds: give at least one seed".into(),
        ));
    }
    let papers = load_papers(&args.experiments, std::slice::from_ref(&args.paper))
        .map_err(|e| CalibrateError::Input(e.to_string()))?;
    let Some(paper) = papers.first() else {
        return Err(CalibrateError::Input(format!(
            "no experiment file for {}",
            args.paper
        )));
    };
    if paper.calibrations.is_empty() {
        return Err(CalibrateError::Input(format!(
            "{}: declares no [[calibration]] (free parameter) to fit; scenarios/reproduce/README.md describes the format",
            paper.file.display()
        )));
    }
    let warnings = calibration::check_values(&paper.name, &paper.file, &paper.calibrations)
        .into_iter()
        .map(|w| format!("{w} (this run overwrites it)"))
        .collect();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/calibrate").join(&paper.name));
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let commit = short_commit(&args.experiments);
    let date = crate::bench::today();
    let command = format!(
        "dcemu calibrate {} --seeds {} --budget {}",
        paper.name,
        seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        args.budget
    );
    let stages: BTreeSet<u32> = paper.calibrations.iter().map(|c| c.stage).collect();
    let staged = stages.len() > 1;
    let mut fitted: BTreeMap<String, f64> = BTreeMap::new();
    let mut spent = 0;
    let mut md = String::new();
    let mut written = Vec::new();
    let mut kept_dirs: Vec<String> = Vec::new();
    let runs_dir = runner::runs_dir(&out);
    for &stage in &stages {
        let blocks: Vec<&Calibration> = paper
            .calibrations
            .iter()
            .filter(|c| c.stage == stage)
            .collect();
        let fixed: Vec<(&Calibration, f64)> = paper
            .calibrations
            .iter()
            .filter_map(|c| fitted.get(&c.name).map(|v| (c, *v)))
            .collect();
        let left = args.budget.saturating_sub(spent);
        let (outcome, fit) = fit_stage(paper, blocks, fixed, &seeds, threads, &runs_dir, left)?;
        spent += outcome.runs;
        kept_dirs.extend(fit.dirs.values().cloned());
        for (c, v) in fit.calibrations.iter().zip(&outcome.best) {
            fitted.insert(c.name.clone(), *v);
        }
        let report = table::Report {
            command: &command,
            commit: &commit,
            date: &date,
            paper,
            stage: staged.then_some(stage),
            blocks: &fit.calibrations,
            targets: &fit.targets,
            outcome: &outcome,
            means: &fit.means,
            budget: left,
        };
        md.push_str(&report.markdown());
        let csv = if stage == *stages.first().unwrap_or(&stage) {
            "calibration.csv".to_string()
        } else {
            format!("calibration-stage-{stage}.csv")
        };
        let path = out.join(csv);
        crate::reproduce::write_atomic(&path, report.csv().as_bytes())
            .map_err(CalibrateError::Failed)?;
        written.push(path);
    }
    runner::remove_stale_runs(kept_dirs.iter().map(String::as_str), &runs_dir);
    let path = out.join("calibration.md");
    crate::reproduce::write_atomic(&path, md.as_bytes()).map_err(CalibrateError::Failed)?;
    written.insert(0, path);
    if !args.dry_run {
        let values: Vec<f64> = paper
            .calibrations
            .iter()
            .map(|c| fitted.get(&c.name).copied().unwrap_or(c.start))
            .collect();
        let stamp = writeback::Stamp {
            paper: &paper.name,
            paper_file: args.experiments.join(format!("{}.toml", paper.name)),
            commit: &commit,
            date: &date,
            fitted: format!("{command} · commit {commit} · {date}"),
        };
        written
            .extend(writeback::write_all(paper, &values, &stamp).map_err(CalibrateError::Failed)?);
    }
    Ok(Summary {
        table: md,
        written,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loss_is_the_sum_of_squared_misses_in_tolerances() {
        let l = loss([(Some(0.6), 0.5, 0.1), (Some(2.0), 4.0, 1.0)].into_iter());
        assert!((l - 5.0).abs() < 1e-12);
        assert_eq!(loss([(None, 0.5, 0.1)].into_iter()), f64::INFINITY);
        assert_eq!(scale(Some(0.05), 0.8), 0.05);
        assert!((scale(Some(0.0), 0.8) - 0.08).abs() < 1e-15);
        assert_eq!(scale(None, 0.0), 0.01);
    }
}
