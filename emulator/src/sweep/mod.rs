//! `dcemu sweep`: a user's own comparisons, policies × loads × seeds, on
//! the `reproduce` runner ([`crate::reproduce::runner`]).
//!
//! A sweep file ([`file`]) names a base scenario, axes of `--set`
//! overrides and seeds; the runs are every cell of the axes' product on
//! every seed, each identical run once. Every cell is loaded before
//! anything runs, so a bad axis value stops the sweep naming every cell it
//! touches. Out come `sweep.csv` (tidy: one row per run and metric) and
//! `summary.csv` (per cell and metric: n, mean, standard deviation, 95 %
//! confidence interval by Student's t, min, max) and `report.html` (a
//! figure per metric: means with their intervals against the first numeric
//! axis, [`report`]), with every run's results
//! directory under `runs/`. `--resume` reuses the complete results
//! directories of an earlier, interrupted invocation. Past one machine,
//! `--shard K/N` runs a deterministic K-th of the runs and `merge`
//! combines the shards' directories into the CSVs one sweep would write
//! ([`shard`]).

pub mod file;
mod plan;
mod report;
pub mod shard;
pub mod stats;
mod tables;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::reproduce::runner::{Job, Ran, progress_bar, remove_stale_runs, reuse, run_batch};
use crate::reproduce::{ReproduceError, SeedList, write_atomic};
use file::Sweep;
use plan::{Planned, check_cells, plan};
use shard::{Shard, ShardRecord};

/// `dcemu sweep`.
#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// The sweep file (scenarios/sweeps/README.md).
    #[arg(required = true)]
    pub file: Option<PathBuf>,
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
    /// Run only the K-th of N disjoint shares of the runs (a cluster's job
    /// array); `dcemu sweep merge` combines the N directories.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
}

#[derive(Subcommand, Debug, Clone)]
pub enum SweepCommand {
    /// Combine the directories of `--shard 1/N` … `N/N` into one sweep's CSVs.
    Merge(MergeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The shards' output directories, all N of one sweep.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where sweep.csv and summary.csv go (default: results/sweep/<file name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// What a sweep ran and wrote.
#[derive(Debug)]
pub struct SweepSummary {
    pub cells: usize,
    pub seeds: usize,
    /// Distinct runs of the sweep; of those, run here (a shard's share)
    /// and reused by `--resume`.
    pub runs: usize,
    pub ran_here: usize,
    pub reused: usize,
    pub written: Vec<PathBuf>,
}

/// Runs the sweep `args` names, or merges shards.
pub fn sweep(args: &SweepArgs) -> Result<SweepSummary, ReproduceError> {
    if let Some(SweepCommand::Merge(m)) = &args.command {
        return merge(m);
    }
    let Some(path) = &args.file else {
        return Err(ReproduceError::Input("give a sweep file".into()));
    };
    let mut sweep = file::load(path).map_err(|e| ReproduceError::Input(e.to_string()))?;
    if let Some(seeds) = &args.seeds {
        if seeds.0.is_empty() {
            return Err(ReproduceError::Input(
                "--seeds: give at least one seed".into(),
            ));
        }
        sweep.seeds = seeds.0.clone();
    }
    check_cells(&sweep)?;
    let out = args.out.clone().unwrap_or_else(|| default_out(path));
    let (jobs, planned) = plan(&sweep);
    let runs_dir = out.join("runs");
    let mine: Vec<Job> = match args.shard {
        None => jobs.clone(),
        Some(s) => s.select(&jobs),
    };
    let reused = match args.resume {
        true => mine
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
        mine.len() as u64,
        "sweep {bar:40} {pos}/{len} runs, {elapsed} {msg}",
    );
    let ran = run_batch(&mine, threads, &runs_dir, &bar, args.resume);
    bar.finish_and_clear();
    ran.map_err(ReproduceError::Failed)?;
    remove_stale_runs(mine.iter().map(|j| j.dir.as_str()), &runs_dir);
    let mut summary = SweepSummary {
        cells: sweep.cells().len(),
        seeds: sweep.seeds.len(),
        runs: jobs.len(),
        ran_here: mine.len(),
        reused,
        written: Vec::new(),
    };
    if let Some(s) = args.shard {
        let record = ShardRecord::new(path, s, &sweep.seeds, &mine)?;
        let at = out.join(shard::RECORD);
        write_atomic(&at, record.to_json().as_bytes()).map_err(ReproduceError::Failed)?;
        summary.written = vec![at, runs_dir];
        return Ok(summary);
    }
    let ran = read_back(&jobs, |_| runs_dir.clone())?;
    summary.written = write_tables(&sweep, &planned, &ran, &out)?;
    summary.written.extend(write_detail(
        &sweep,
        &planned,
        &jobs,
        |_| runs_dir.clone(),
        &out,
    )?);
    summary.written.push(runs_dir);
    Ok(summary)
}

fn default_out(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or_else(|| "sweep".to_string(), |s| s.to_string_lossy().into_owned());
    PathBuf::from("results/sweep").join(stem)
}

/// Every run's metrics as its `metrics.json` holds them (the run `i` under
/// `dir_of(i)/<job.dir>`), fresh or reused alike, so that a resumed or
/// merged sweep writes what an unbroken one does.
fn read_back(jobs: &[Job], dir_of: impl Fn(usize) -> PathBuf) -> Result<Vec<Ran>, ReproduceError> {
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            let dir = dir_of(i).join(&j.dir);
            reuse(&dir).unwrap_or_else(|| Err(format!("{}: no complete results", dir.display())))
        })
        .collect::<Result<Vec<Ran>, String>>()
        .map_err(ReproduceError::Failed)
}

/// Writes `sweep.csv` and `summary.csv` under `out`.
fn write_tables(
    sweep: &Sweep,
    planned: &[Planned],
    ran: &[Ran],
    out: &Path,
) -> Result<Vec<PathBuf>, ReproduceError> {
    let metrics = tables::chosen_metrics(sweep, ran)?;
    let tidy = out.join("sweep.csv");
    let summary = out.join("summary.csv");
    let page = out.join("report.html");
    write_atomic(
        &tidy,
        tables::tidy_csv(sweep, planned, ran, &metrics).as_bytes(),
    )
    .map_err(ReproduceError::Failed)?;
    write_atomic(
        &summary,
        tables::summary_csv(sweep, planned, ran, &metrics).as_bytes(),
    )
    .map_err(ReproduceError::Failed)?;
    let html = report::html(sweep, planned, ran, &metrics).map_err(ReproduceError::Failed)?;
    write_atomic(&page, html.as_bytes()).map_err(ReproduceError::Failed)?;
    let mut written = vec![tidy, summary, page];
    if let Some(csv) = tables::paired_csv(sweep, planned, ran, &metrics) {
        let paired = out.join("paired.csv");
        write_atomic(&paired, csv.as_bytes()).map_err(ReproduceError::Failed)?;
        written.push(paired);
    }
    Ok(written)
}

/// With `detail` cells: `dcemu report` of their runs on the first seed,
/// side by side, into `out/detail/` (the run `i` under `dir_of(i)`).
fn write_detail(
    sweep: &Sweep,
    planned: &[Planned],
    jobs: &[Job],
    dir_of: impl Fn(usize) -> PathBuf,
    out: &Path,
) -> Result<Vec<PathBuf>, ReproduceError> {
    if sweep.detail.is_empty() {
        return Ok(Vec::new());
    }
    let seed = sweep.seeds[0];
    let mut runs = Vec::new();
    for cell in &sweep.detail {
        let Some(p) = planned.iter().find(|p| &p.cell == cell && p.seed == seed) else {
            continue;
        };
        let dir = dir_of(p.run).join(&jobs[p.run].dir);
        let mut run =
            crate::report::load_run(&dir).map_err(|e| ReproduceError::Failed(e.to_string()))?;
        run.label = sweep.labels(cell).join(" / ");
        runs.push(run);
    }
    let written = crate::report::build(&runs, &out.join("detail"))
        .map_err(|e| ReproduceError::Failed(e.to_string()))?;
    Ok(vec![written.html])
}

/// `dcemu sweep merge`: the shards' records must name one sweep file, one
/// N and one seed list, and hold every K of 1..N once.
fn merge(args: &MergeArgs) -> Result<SweepSummary, ReproduceError> {
    let records = args
        .dirs
        .iter()
        .map(|d| ShardRecord::read(d))
        .collect::<Result<Vec<_>, _>>()?;
    let (file, seeds, n) = shard::check_complete(&args.dirs, &records)?;
    let mut sweep = file::load(&file).map_err(|e| ReproduceError::Input(e.to_string()))?;
    sweep.seeds = seeds;
    let (jobs, planned) = plan(&sweep);
    let mut home: Vec<Option<PathBuf>> = vec![None; jobs.len()];
    for (dir, r) in args.dirs.iter().zip(&records) {
        for i in r.shard.indices(jobs.len()) {
            home[i] = Some(dir.join("runs"));
        }
    }
    let missing: Vec<&str> = jobs
        .iter()
        .zip(&home)
        .filter(|(_, h)| h.is_none())
        .map(|(j, _)| j.dir.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(ReproduceError::Input(format!(
            "the {n} shards hold no run for {}",
            missing.join(", ")
        )));
    }
    let ran = read_back(&jobs, |i| home[i].clone().unwrap_or_default())?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&file));
    let mut written = write_tables(&sweep, &planned, &ran, &out)?;
    written.extend(write_detail(
        &sweep,
        &planned,
        &jobs,
        |i| home[i].clone().unwrap_or_default(),
        &out,
    )?);
    Ok(SweepSummary {
        cells: sweep.cells().len(),
        seeds: sweep.seeds.len(),
        runs: jobs.len(),
        ran_here: 0,
        reused: jobs.len(),
        written,
    })
}
