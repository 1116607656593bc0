//! A sweep's runs: every cell on every seed, each distinct run once, and
//! every cell checked before anything runs.

use std::collections::{BTreeMap, BTreeSet};

use super::file::Sweep;
use crate::reproduce::ReproduceError;
use crate::reproduce::runner::{Job, slug};
use crate::scenario::{self, Override};

/// One cell's run on one seed, by index into the distinct runs.
pub(super) struct Planned {
    pub(super) cell: Vec<usize>,
    pub(super) seed: u64,
    pub(super) run: usize,
}

/// Loads every cell's scenario (on the first seed) before anything runs:
/// every cell a bad value touches is named, each with its problem.
pub(super) fn check_cells(sweep: &Sweep) -> Result<(), ReproduceError> {
    let seed: Override = format!("run.seed={}", sweep.seeds[0])
        .parse()
        .map_err(ReproduceError::Input)?;
    let mut problems = Vec::new();
    for cell in sweep.cells() {
        let mut overrides = sweep.overrides(&cell);
        overrides.push(seed.clone());
        let (label, text) = sweep.scenario_of(&cell);
        if let Err(e) = scenario::load(label, text, &overrides) {
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
pub(super) fn cell_name(sweep: &Sweep, cell: &[usize]) -> String {
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
pub(super) fn plan(sweep: &Sweep) -> (Vec<Job>, Vec<Planned>) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: BTreeMap<(String, Vec<String>, u64), usize> = BTreeMap::new();
    let mut planned = Vec::new();
    let mut dirs: BTreeSet<String> = BTreeSet::new();
    for cell in sweep.cells() {
        for &seed in &sweep.seeds {
            let mut name: Vec<&str> = sweep.labels(&cell);
            if name.is_empty() {
                name.push("base");
            }
            let (label, text) = sweep.scenario_of(&cell);
            let mut job = Job {
                scenario_label: label.to_string(),
                scenario_text: text.clone(),
                overrides: sweep.overrides(&cell),
                seed,
                dir: format!("{}_s{seed}", slug(&name)),
            };
            let run = match index.get(&job.key()) {
                Some(&run) => run,
                None => {
                    let base = job.dir.clone();
                    let mut k = 2;
                    while dirs.contains(&job.dir) {
                        job.dir = format!("{base}-{k}");
                        k += 1;
                    }
                    dirs.insert(job.dir.clone());
                    index.insert(job.key(), jobs.len());
                    jobs.push(job);
                    jobs.len() - 1
                }
            };
            planned.push(Planned {
                cell: cell.clone(),
                seed,
                run,
            });
        }
    }
    (jobs, planned)
}
