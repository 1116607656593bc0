//! `dcemu reproduce`: the papers' numbers beside ours.
//!
//! Experiments are data (`scenarios/reproduce/<paper>.toml`, see
//! [`experiments`]): each names a scenario, rows of overrides (policies)
//! with the paper's values, and the orderings the paper states. Every row
//! runs on every seed; identical runs are shared between experiments. The
//! runs go over `--jobs` worker threads, and the report is assembled in
//! file order, so it does not depend on `--jobs`. Out come
//! `reproduction.md`, `reproduction.csv` and `report.html` (plots with the
//! paper's value beside ours) plus every run's results directory under
//! `runs/`.
//!
//! A file's `[[calibration]]` blocks ([`calibration`]) declare its free
//! parameters and the rows they are fitted to (`dcemu calibrate`): those
//! rows are *calibrated*, every other row and every ordering *validated*.
//! Validated rows (with a paper value) and the rows of orderings also run
//! on `--validation-seeds`, which no fit has seen, and are judged there too.

pub mod calibration;
mod data;
pub mod experiments;
pub mod runner;
pub mod verdict;
mod write;

pub(crate) use write::write_atomic;

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use crate::scenario::MAX_SEED;
use calibration::Role;
use experiments::{Paper, load_papers};
use runner::{Job, Ran, run_all, runs_dir, slug};
use verdict::{Judged, OrderingResult, RowResult, Tally};

/// `dcemu reproduce`.
#[derive(Args, Debug, Clone)]
pub struct ReproduceArgs {
    /// Papers to reproduce: paragon, arq, thesis, gems, harvest,
    /// distributed (default: every one with an experiment file).
    pub papers: Vec<String>,
    /// Seeds every experiment runs on (the calibration seeds: `dcemu
    /// calibrate` fits on the same ones); orderings must hold on each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3",
          value_parser = crate::whole::Whole::new(0, MAX_SEED))]
    pub seeds: Vec<u64>,
    /// Seeds no fit has seen: validated rows (with a paper value) and the
    /// rows of orderings also run on them; a validated magnitude needs both
    /// means within tolerance, an ordering must hold on every seed of both
    /// sets. `none` (or empty) skips them.
    #[arg(long, value_name = "SEEDS", default_value = "11,12,13")]
    pub validation_seeds: SeedList,
    /// Runs at once (default: the cores available).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::whole::Whole::new(1, 256).as_u32())]
    pub jobs: Option<u32>,
    /// Where reproduction.md / .csv, report.html and runs/ go.
    #[arg(long, value_name = "DIR", default_value = "results/reproduce")]
    pub out: PathBuf,
    /// Only the experiments marked `quick` (well under a minute on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// Exit 1 when a verdict fails (an ordering or magnitude the experiment
    /// file does not mark as a known open gap, or an open gap that closed).
    #[arg(long)]
    pub check: bool,
    /// The directory of experiment files.
    #[arg(long, value_name = "DIR", default_value = "scenarios/reproduce")]
    pub experiments: PathBuf,
    /// Also write reproduction.md here (the repository's copy is
    /// docs/reproduction.md).
    #[arg(long, value_name = "FILE")]
    pub doc: Option<PathBuf>,
}

/// A comma-separated list of seeds; `none` or empty for no seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeedList(pub Vec<u64>);

impl std::str::FromStr for SeedList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(SeedList(Vec::new()));
        }
        let mut seeds = Vec::new();
        for word in s.split(',') {
            let seed: u64 = word
                .trim()
                .parse()
                .map_err(|_| format!("{word:?} is not a seed (a whole number, or `none`)"))?;
            if seed > MAX_SEED {
                return Err(format!("seed {seed} is above the largest, {MAX_SEED}"));
            }
            if !seeds.contains(&seed) {
                seeds.push(seed);
            }
        }
        Ok(SeedList(seeds))
    }
}

impl std::fmt::Display for SeedList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let words: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&words.join(","))
    }
}

/// Why `dcemu reproduce` did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// Bad experiment files or flags (exit 2).
    #[error("{0}")]
    Input(String),
    /// A run or a write failed (exit 1).
    #[error("{0}")]
    Failed(String),
}

/// What `dcemu reproduce` wrote and found.
#[derive(Debug)]
pub struct Summary {
    pub runs: usize,
    pub tally: Tally,
    pub written: Vec<PathBuf>,
    pub failing: Vec<String>,
}

/// Loads the experiment files, runs what they need and writes the report.
pub fn reproduce(args: &ReproduceArgs) -> Result<Summary, ReproduceError> {
    let mut seeds = args.seeds.clone();
    seeds.dedup();
    if seeds.is_empty() {
        return Err(ReproduceError::Input(
            "--seeds: give at least one seed".into(),
        ));
    }
    let unseen = args.validation_seeds.0.clone();
    if let Some(s) = unseen.iter().find(|s| seeds.contains(s)) {
        return Err(ReproduceError::Input(format!(
            "--validation-seeds: seed {s} is also in --seeds; the unseen seeds must be ones no fit has seen"
        )));
    }
    let mut papers = load_papers(&args.experiments, &args.papers)
        .map_err(|e| ReproduceError::Input(e.to_string()))?;
    let stale: Vec<String> = papers
        .iter()
        .flat_map(|p| calibration::check_values(&p.name, &p.file, &p.calibrations))
        .collect();
    if !stale.is_empty() {
        return Err(ReproduceError::Input(stale.join("\n")));
    }
    if args.quick {
        for p in &mut papers {
            p.experiments.retain(|e| e.quick);
        }
        papers.retain(|p| !p.experiments.is_empty());
        if papers.is_empty() {
            return Err(ReproduceError::Input(
                "--quick: none of the chosen papers has an experiment marked quick".into(),
            ));
        }
    }
    let all_seeds: Vec<u64> = seeds.iter().chain(&unseen).copied().collect();
    let (jobs, index) = plan(&papers, &seeds, &all_seeds);
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let ran = run_all(&jobs, threads, &runs_dir(&args.out)).map_err(ReproduceError::Failed)?;
    let judged = judge(&papers, seeds.len(), all_seeds.len(), &index, &ran)?;
    let mut tally = Tally::default();
    let mut failing = Vec::new();
    for (paper, exps) in &judged {
        for j in exps {
            for (row, r) in j.experiment.rows.iter().zip(&j.rows) {
                tally.add(&r.magnitude);
                if r.magnitude.fails_check() {
                    let unseen = if r.unseen.is_empty() || row.role == Role::Calibrated {
                        String::new()
                    } else {
                        format!(" (unseen seeds {})", write::num(r.unseen_mean))
                    };
                    failing.push(format!(
                        "{}/{}: {} {} = {}{unseen} against the paper's {} ({})",
                        paper.name,
                        j.experiment.id,
                        row.label,
                        row.metric,
                        write::num(r.mean),
                        write::num(row.paper),
                        r.magnitude.word()
                    ));
                }
            }
            for (o, r) in j.experiment.orderings.iter().zip(&j.orderings) {
                tally.add(&r.verdict);
                if r.verdict.fails_check() {
                    failing.push(format!(
                        "{}/{}: {} ({})",
                        paper.name,
                        j.experiment.id,
                        o.claim,
                        r.verdict.word()
                    ));
                }
            }
        }
    }
    let context = write::Context {
        command: command_line(args),
        seeds: seeds.clone(),
        unseen,
        runs: jobs.len(),
        tally,
        commit: commit_of(&args.experiments),
        date: crate::bench::today(),
    };
    let written = write::all(&args.out, args.doc.as_deref(), &context, &judged)
        .map_err(ReproduceError::Failed)?;
    Ok(Summary {
        runs: jobs.len(),
        tally,
        written,
        failing,
    })
}

/// A run's directory under `runs/`: the scenario's file stem, each
/// override as `field-value` (last segment of the key), the seed; e.g.
/// `local-medium_placement-paragon_s1`.
pub(crate) fn run_dir_name(
    scenario: &str,
    overrides: &[crate::scenario::Override],
    seed: u64,
) -> String {
    let stem = std::path::Path::new(scenario).file_stem().map_or_else(
        || scenario.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut parts = vec![stem];
    for o in overrides {
        let field = o.key.rsplit('.').next().unwrap_or(&o.key);
        parts.push(format!("{field}-{}", o.raw.trim()));
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let name = slug(&parts);
    if name.len() <= MAX_DIR_STEM {
        return format!("{name}_s{seed}");
    }
    // Many overrides (a calibration point sets every free parameter) would
    // pass the file system's 255-byte limit: keep the start, and tell
    // points apart by a hash of the whole name (FNV-1a, stable).
    let hash = name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    });
    let cut = (0..=MAX_DIR_STEM - 17)
        .rev()
        .find(|&i| name.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}-{hash:016x}_s{seed}", &name[..cut])
}

/// Longest run directory name before its seed (with room for the staging
/// prefix and suffix under the usual 255-byte limit).
const MAX_DIR_STEM: usize = 160;

/// Where each (experiment, row, seed) finds its run among the jobs.
type Index = BTreeMap<(usize, usize, usize, usize), usize>;

/// Whether row `r` of `exp` also runs on the unseen seeds: a validated row
/// with a verdict to judge, or a row an ordering compares.
fn runs_unseen(exp: &experiments::Experiment, r: usize) -> bool {
    let row = &exp.rows[r];
    (row.role == Role::Validated && row.paper.is_some())
        || exp.orderings.iter().any(|o| o.higher == r || o.lower == r)
}

/// The distinct runs the experiments need, and which one each row and seed
/// uses. `all` is the calibration seeds (`seeds`) followed by the unseen
/// seeds, which only the rows [`runs_unseen`] picks run on.
fn plan(papers: &[Paper], seeds: &[u64], all: &[u64]) -> (Vec<Job>, Index) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut seen: BTreeMap<(String, Vec<String>, u64), usize> = BTreeMap::new();
    let mut index = Index::new();
    for (p, paper) in papers.iter().enumerate() {
        for (e, exp) in paper.experiments.iter().enumerate() {
            for (r, row) in exp.rows.iter().enumerate() {
                let n = if runs_unseen(exp, r) {
                    all.len()
                } else {
                    seeds.len()
                };
                for (s, &seed) in all.iter().enumerate().take(n) {
                    let job = Job {
                        scenario_label: row.scenario_path.display().to_string(),
                        scenario_text: row.scenario_text.clone(),
                        overrides: row.overrides.clone(),
                        seed,
                        dir: run_dir_name(&row.scenario, &row.overrides, seed),
                    };
                    let i = *seen.entry(job.key()).or_insert_with(|| {
                        let mut job = job;
                        if jobs.iter().any(|j| j.dir == job.dir) {
                            job.dir = format!("{}-{}", job.dir, jobs.len());
                        }
                        jobs.push(job);
                        jobs.len() - 1
                    });
                    index.insert((p, e, r, s), i);
                }
            }
        }
    }
    (jobs, index)
}

/// Per priority-eviction bucket (thesis Fig. 9.2), the mean over the runs
/// that have it of the class-0 tasks' mean response time.
fn mean_by_evictions(runs: &[&Ran]) -> Vec<Option<f64>> {
    dcemu_actors::server::PE_METRICS
        .iter()
        .map(|name| {
            let key = format!("{name}_mean");
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|run| run.metrics.get(&key).and_then(Value::as_f64))
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        })
        .collect()
}

/// Reads every row's metric from its runs: seeds `0..calibration` of the
/// index are the calibration seeds, `calibration..all` the unseen ones.
fn judge<'a>(
    papers: &'a [Paper],
    calibration: usize,
    all: usize,
    index: &Index,
    ran: &[Ran],
) -> Result<Vec<(&'a Paper, Vec<Judged<'a>>)>, ReproduceError> {
    let mut out = Vec::new();
    for (p, paper) in papers.iter().enumerate() {
        let mut exps = Vec::new();
        for (e, exp) in paper.experiments.iter().enumerate() {
            let mut rows = Vec::new();
            let mut perf = Vec::new();
            let mut over_time = Vec::new();
            let mut by_evictions = Vec::new();
            let mut switches_on = Vec::new();
            for (r, row) in exp.rows.iter().enumerate() {
                let mut values = Vec::new();
                for s in 0..all {
                    let Some(&i) = index.get(&(p, e, r, s)) else {
                        continue;
                    };
                    let run = &ran[i];
                    let value = run.metrics.get(&row.metric).ok_or_else(|| {
                        ReproduceError::Input(format!(
                            "{}: field `experiment[{e}].row[{r}].metric`: {:?} is not in the run's metrics.json (docs/metrics.md lists them)",
                            paper.file.display(),
                            row.metric
                        ))
                    })?;
                    values.push(value.as_f64());
                }
                let first = &ran[index[&(p, e, r, 0)]];
                perf.push(first.perf.clone());
                over_time.push(first.over_time.clone());
                let runs: Vec<&Ran> = (0..calibration)
                    .map(|s| &ran[index[&(p, e, r, s)]])
                    .collect();
                by_evictions.push(mean_by_evictions(&runs));
                switches_on.push(first.switches_on.clone());
                let unseen = values.split_off(calibration.min(values.len()));
                rows.push(RowResult::new(row, values, unseen));
            }
            let orderings = exp
                .orderings
                .iter()
                .map(|o| OrderingResult::new(o, &rows))
                .collect();
            exps.push(Judged {
                experiment: exp,
                rows,
                orderings,
                perf,
                over_time,
                by_evictions,
                switches_on,
            });
        }
        out.push((paper, exps));
    }
    Ok(out)
}

/// The command as a reader would retype it (without `--out` / `--jobs`,
/// which do not change the numbers).
fn command_line(args: &ReproduceArgs) -> String {
    let mut words = vec!["dcemu reproduce".to_string()];
    words.extend(args.papers.iter().cloned());
    let seeds: Vec<String> = args.seeds.iter().map(u64::to_string).collect();
    words.push(format!("--seeds {}", seeds.join(",")));
    words.push(format!("--validation-seeds {}", args.validation_seeds));
    if args.quick {
        words.push("--quick".into());
    }
    words.join(" ")
}

/// The checkout's commit (with `-dirty` when it has changes), if it is one.
pub(crate) fn commit_of(dir: &std::path::Path) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(hash) if !hash.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{hash}-dirty") } else { hash }
        }
        _ => "unknown (not a git checkout)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(pairs: &[(&str, Value)]) -> Ran {
        Ran {
            metrics: pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
            ..Ran::default()
        }
    }

    #[test]
    fn eviction_buckets_average_the_runs_that_have_them() {
        let a = ran(&[
            ("response_s_class0_pe_1_mean", Value::from(100.0)),
            ("response_s_class0_pe_2_mean", Value::Null),
        ]);
        let b = ran(&[("response_s_class0_pe_1_mean", Value::from(300.0))]);
        let got = mean_by_evictions(&[&a, &b]);
        assert_eq!(got.len(), dcemu_actors::server::PE_BUCKETS);
        assert_eq!(got[0], Some(200.0));
        assert_eq!(got[1], None);
        assert_eq!(got[4], None);
    }
}
