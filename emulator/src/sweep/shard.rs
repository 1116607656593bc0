//! A sweep split over a cluster's batch system: `--shard K/N` runs the
//! distinct runs whose index is K − 1 modulo N (disjoint, deterministic,
//! the same on every machine) and records what it ran in `shard.json`;
//! `dcemu sweep merge` reads the N records and the runs' `metrics.json`
//! files back into the CSVs one unsharded sweep writes.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::reproduce::ReproduceError;
use crate::reproduce::runner::Job;

/// The record a shard leaves in its output directory.
pub const RECORD: &str = "shard.json";

/// The K-th of N shares, 1 ≤ K ≤ N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?}: expected K/N with 1 ≤ K ≤ N, e.g. 2/8");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl Shard {
    /// Indices of the runs of `len` that are this shard's.
    pub fn indices(self, len: usize) -> impl Iterator<Item = usize> {
        (self.k as usize - 1..len).step_by(self.n as usize)
    }

    /// This shard's runs of `jobs`, in their order.
    pub fn select(self, jobs: &[Job]) -> Vec<Job> {
        self.indices(jobs.len()).map(|i| jobs[i].clone()).collect()
    }
}

/// What `shard.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// The sweep file, as an absolute path (merge reads it again).
    pub file: PathBuf,
    pub shard: Shard,
    pub seeds: Vec<u64>,
    /// The results directories this shard ran, under its `runs/`.
    pub runs: Vec<String>,
}

impl ShardRecord {
    pub fn new(
        file: &Path,
        shard: Shard,
        seeds: &[u64],
        ran: &[Job],
    ) -> Result<Self, ReproduceError> {
        let file = std::fs::canonicalize(file)
            .map_err(|e| ReproduceError::Input(format!("{}: {e}", file.display())))?;
        Ok(ShardRecord {
            file,
            shard,
            seeds: seeds.to_vec(),
            runs: ran.iter().map(|j| j.dir.clone()).collect(),
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The record of shard directory `dir`.
    pub fn read(dir: &Path) -> Result<Self, ReproduceError> {
        let path = dir.join(RECORD);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ReproduceError::Input(format!(
                "{}: {e} (not the output of `dcemu sweep --shard`?)",
                path.display()
            ))
        })?;
        serde_json::from_str(&text)
            .map_err(|e| ReproduceError::Input(format!("{}: {e}", path.display())))
    }
}

/// Checks that `records` (of `dirs`) are the N shards of one sweep, each
/// once; returns its file, seeds and N.
pub fn check_complete(
    dirs: &[PathBuf],
    records: &[ShardRecord],
) -> Result<(PathBuf, Vec<u64>, u32), ReproduceError> {
    let Some(first) = records.first() else {
        return Err(ReproduceError::Input(
            "merge: give the shards' directories".into(),
        ));
    };
    let mut problems = Vec::new();
    for (dir, r) in dirs.iter().zip(records) {
        if r.file != first.file || r.shard.n != first.shard.n || r.seeds != first.seeds {
            problems.push(format!(
                "{}: shard {} of {} with seeds {:?}, but {} is shard {} of {} with seeds {:?}",
                dir.display(),
                r.shard,
                r.file.display(),
                r.seeds,
                dirs[0].display(),
                first.shard,
                first.file.display(),
                first.seeds
            ));
        }
    }
    let n = first.shard.n;
    for k in 1..=n {
        let count = records.iter().filter(|r| r.shard.k == k).count();
        if count != 1 {
            problems.push(format!(
                "shard {k}/{n} is given {count} times; merge needs each of 1..{n} once"
            ));
        }
    }
    match problems.is_empty() {
        true => Ok((first.file.clone(), first.seeds.clone(), n)),
        false => Err(ReproduceError::Input(problems.join("\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_runs_disjointly_and_cover_them() {
        let mut seen: Vec<usize> = (1..=3)
            .flat_map(|k| Shard { k, n: 3 }.indices(10).collect::<Vec<_>>())
            .collect();
        seen.sort();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(
            Shard { k: 2, n: 3 }.indices(10).collect::<Vec<_>>(),
            vec![1, 4, 7]
        );
    }

    #[test]
    fn k_over_n_is_parsed_and_checked() {
        assert_eq!("2/8".parse::<Shard>(), Ok(Shard { k: 2, n: 8 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
