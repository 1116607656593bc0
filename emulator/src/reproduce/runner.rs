//! The runs an experiment set needs, each once, spread over worker threads.
//!
//! Runs are independent and each is deterministic, so the values do not
//! depend on `--jobs` or on which worker took which run; results are
//! gathered by run index.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::results::Staging;
use crate::run::{RunOptions, execute};
use crate::scenario::{self, Override};

/// One run: a scenario text with its overrides and seed.
#[derive(Clone, Debug)]
pub struct Job {
    pub scenario_label: String,
    pub scenario_text: Arc<String>,
    pub overrides: Vec<Override>,
    pub seed: u64,
    /// Directory name under `<out>/runs/`.
    pub dir: String,
}

impl Job {
    /// What makes two jobs the same run.
    pub fn key(&self) -> (String, Vec<String>, u64) {
        (
            self.scenario_label.clone(),
            self.overrides.iter().map(ToString::to_string).collect(),
            self.seed,
        )
    }
}

/// What a run gave back that the report needs.
#[derive(Clone, Debug, Default)]
pub struct Ran {
    pub metrics: serde_json::Map<String, Value>,
    /// Every finished application's `perf_norm`, sorted worst to best.
    pub perf: Vec<f64>,
    /// `perf_over_time.csv`: (time in s, mean performance of the running
    /// applications).
    pub over_time: Vec<(f64, f64)>,
    /// `timeseries.csv`: (time in s, switches powered).
    pub switches_on: Vec<(f64, f64)>,
}

/// Runs every job on `jobs` threads; each job's results directory goes to
/// `<runs_dir>/<job.dir>` (actor logs off), and `runs_dir` is left holding
/// exactly these runs. Fails with the first error, in job order.
pub fn run_all(jobs: &[Job], threads: usize, runs_dir: &Path) -> Result<Vec<Ran>, String> {
    let bar = progress_bar(
        jobs.len() as u64,
        "reproduce {bar:40} {pos}/{len} runs, {elapsed} {msg}",
    );
    let ran = run_batch(jobs, threads, runs_dir, &bar, false);
    bar.finish_and_clear();
    remove_stale_runs(jobs.iter().map(|j| j.dir.as_str()), runs_dir);
    ran
}

/// A progress bar on stderr with `template` (indicatif's syntax).
pub fn progress_bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// [`run_all`]'s work without its bar and clean-up: the jobs over
/// `threads` workers, `bar` advanced by one per finished run. Results come
/// back in job order whatever the worker that ran them. With `resume`, a
/// job whose results directory is complete (it has its `digest`, written
/// last) is not run again: its metrics are read back ([`reuse`]).
pub fn run_batch(
    jobs: &[Job],
    threads: usize,
    runs_dir: &Path,
    bar: &ProgressBar,
    resume: bool,
) -> Result<Vec<Ran>, String> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<Ran, String>>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let dir = runs_dir.join(&job.dir);
                    let result = match resume.then(|| reuse(&dir)).flatten() {
                        Some(r) => r,
                        None => run_one(job, &dir),
                    };
                    bar.inc(1);
                    if let Ok(mut s) = slots.lock() {
                        s[i] = Some(result);
                    }
                }
            });
        }
    });
    let slots = slots
        .into_inner()
        .map_err(|_| "a worker thread panicked".to_string())?;
    slots
        .into_iter()
        .zip(jobs)
        .map(|(r, job)| r.unwrap_or_else(|| Err(format!("{}: the run was lost", job.dir))))
        .collect()
}

/// Removes results directories of earlier invocations from `runs_dir`, so
/// that it holds exactly this invocation's runs. Only directories holding a
/// `digest` (a complete results directory) are removed.
pub fn remove_stale_runs<'a>(keep: impl Iterator<Item = &'a str>, runs_dir: &Path) {
    let keep: std::collections::BTreeSet<&str> = keep.collect();
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| keep.contains(n));
        if !ours && path.join("digest").is_file() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// The metrics of a complete results directory `dir` (one with its
/// `digest`); `None` when it is not complete. A complete directory whose
/// metrics cannot be read is an error, not a run to redo silently.
pub fn reuse(dir: &Path) -> Option<Result<Ran, String>> {
    if !dir.join("digest").is_file() {
        return None;
    }
    let path = dir.join("metrics.json");
    let read = std::fs::read(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|b| {
            serde_json::from_slice::<serde_json::Map<String, Value>>(&b).map_err(|e| {
                format!(
                    "{}: {e} (remove the directory to run it again)",
                    path.display()
                )
            })
        });
    Some(read.map(|metrics| Ran {
        metrics,
        ..Ran::default()
    }))
}

fn run_one(job: &Job, out: &Path) -> Result<Ran, String> {
    let mut overrides = job.overrides.clone();
    for extra in [
        "output.actor_logs=false".to_string(),
        format!("run.seed={}", job.seed),
    ] {
        overrides.push(extra.parse()?);
    }
    let what = || {
        let sets: Vec<String> = job.overrides.iter().map(|o| format!("--set {o}")).collect();
        format!(
            "{} --seed {} {}",
            job.scenario_label,
            job.seed,
            sets.join(" ")
        )
    };
    let scenario = scenario::load(&job.scenario_label, &job.scenario_text, &overrides)
        .map_err(|e| format!("{}: {e}", what()))?;
    let outcome = execute(
        &scenario,
        &RunOptions {
            partitions: 1,
            progress: None,
            log_dir: None,
        },
    )
    .map_err(|e| format!("run of {} failed: {e}", what()))?;
    let perf = outcome
        .results
        .read("applications.csv")
        .map_err(|e| format!("{}: applications.csv: {e}", what()))?
        .map(|b| perf_column(&b))
        .unwrap_or_default();
    let over_time = outcome
        .results
        .read("perf_over_time.csv")
        .map_err(|e| format!("{}: perf_over_time.csv: {e}", what()))?
        .map(|b| over_time_column(&b))
        .unwrap_or_default();
    let switches_on = outcome
        .results
        .read("timeseries.csv")
        .map_err(|e| format!("{}: timeseries.csv: {e}", what()))?
        .map(|b| switches_on_column(&b))
        .unwrap_or_default();
    let staging = Staging::create(out, true).map_err(|e| format!("{}: {e}", out.display()))?;
    staging
        .commit(&outcome.results, &outcome.digest, &[])
        .map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(Ran {
        metrics: outcome.metrics.into_iter().collect(),
        perf,
        over_time,
        switches_on,
    })
}

/// The `perf_norm` column of `applications.csv`, sorted ascending.
fn perf_column(csv: &[u8]) -> Vec<f64> {
    let text = String::from_utf8_lossy(csv);
    let mut lines = text.lines();
    let Some(col) = lines
        .next()
        .and_then(|h| h.split(',').position(|c| c == "perf_norm"))
    else {
        return Vec::new();
    };
    let mut v: Vec<f64> = lines
        .filter_map(|l| l.split(',').nth(col)?.parse().ok())
        .filter(|x: &f64| x.is_finite())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `time_s` and `perf_mean` of `perf_over_time.csv`.
fn over_time_column(csv: &[u8]) -> Vec<(f64, f64)> {
    String::from_utf8_lossy(csv)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.first()?.parse().ok()?, f.get(2)?.parse().ok()?))
        })
        .collect()
}

/// `time_s` and `switches_on` of `timeseries.csv`, by its header (empty
/// without that column).
fn switches_on_column(csv: &[u8]) -> Vec<(f64, f64)> {
    let text = String::from_utf8_lossy(csv);
    let mut lines = text.lines();
    let Some(col) = lines
        .next()
        .and_then(|h| h.split(',').position(|c| c == "switches_on"))
    else {
        return Vec::new();
    };
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.first()?.parse().ok()?, f.get(col)?.parse().ok()?))
        })
        .collect()
}

/// A file-name-safe slug of `parts`.
pub fn slug(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// Where a results directory for runs goes under `out`.
pub fn runs_dir(out: &Path) -> PathBuf {
    out.join("runs")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_is_read_by_header_and_sorted() {
        let csv = b"task,app,perf_norm,speed\n0,1,0.9,1\n1,2,0.5,1\n2,3,x,1\n";
        assert_eq!(perf_column(csv), vec![0.5, 0.9]);
        assert!(perf_column(b"task,app\n0,1\n").is_empty());
    }

    #[test]
    fn switches_on_reads_its_column_by_name() {
        let csv = b"time_s,servers_on,switches_on\n0,0,0\n60,2,3\n";
        assert_eq!(switches_on_column(csv), vec![(0.0, 0.0), (60.0, 3.0)]);
        assert!(switches_on_column(b"time_s,servers_on\n0,1\n").is_empty());
    }

    #[test]
    fn performance_over_time_reads_time_and_mean() {
        let csv = b"time_s,samples,perf_mean\n0,4,0.9\n60,2,0.75\n";
        assert_eq!(over_time_column(csv), vec![(0.0, 0.9), (60.0, 0.75)]);
    }

    #[test]
    fn slugs_keep_letters_and_digits() {
        assert_eq!(slug(&["local-medium", "P+ARQ"]), "local-medium_p-arq");
    }
}
