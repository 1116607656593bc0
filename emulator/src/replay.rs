//! `dcemu replay`: re-run the scenario a results directory recorded and
//! compare what comes out with what is there.
//!
//! The recorded `scenario.toml` holds the seed and every override, so it is
//! the whole recipe; the partitioning is taken from the command line (results
//! do not depend on it, which is what a replay with another `--partitions`
//! shows). Every digested file of the re-run is compared with the recorded
//! one byte for byte, actor logs line by line and streamed, so a single edited
//! log line is found even though the recorded `digest` file still matches the
//! original run. With `--until T` the run stops at `T`: the recorded logs'
//! events before `T` must then be exactly the re-run's, and the named actors'
//! states at `T` are described.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use dcemu_topology::SimTime;
use serde_json::Value;

use crate::logs::ACTOR_DIR;
use crate::run::{RunError, RunOptions, execute, execute_keeping_states};
use crate::scenario::{self, Override};

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Partitions (threads) for the re-run.
    pub partitions: usize,
    /// Stop the re-run at this virtual time (events at or after it are not
    /// handled) and compare only the recorded events before it.
    pub until: Option<SimTime>,
    /// Actor-name globs whose state at the end of the re-run is wanted.
    pub dump: Vec<glob::Pattern>,
}

/// Why a replay could not be made (as opposed to finding a difference).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{path}: {message}")]
    Scenario { path: PathBuf, message: String },
    #[error("--until {until_ns} ns is past the recorded run's end ({end_ns} ns)")]
    UntilPastEnd { until_ns: u64, end_ns: u64 },
    #[error("the re-run failed: {0}")]
    Run(#[from] RunError),
    #[error("cannot write the re-run's logs to {path}: {source}")]
    Scratch { path: PathBuf, source: io::Error },
}

impl ReplayError {
    /// Bad input (exit 2) rather than a failed run (exit 1).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ReplayError::Read { .. }
                | ReplayError::Scenario { .. }
                | ReplayError::UntilPastEnd { .. }
        )
    }
}

/// The first difference found between the recording and the re-run.
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// An actor's log differs: the earliest differing event over all actors
    /// (by the virtual time of the recorded or re-run line, then actor name).
    Event {
        actor: String,
        /// 1-based line number in `actors/<actor>.jsonl`.
        line: u64,
        t_ns: Option<u64>,
        recorded: Option<String>,
        replayed: Option<String>,
    },
    /// Another results file differs (first differing line).
    File {
        path: String,
        line: u64,
        recorded: Option<String>,
        replayed: Option<String>,
    },
    /// The recorded `digest` file is not the re-run's digest although every
    /// file matched (the digest file itself was changed).
    Digest { recorded: String, replayed: String },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |l: &Option<String>| l.clone().unwrap_or_else(|| "(nothing)".into());
        match self {
            Difference::Event {
                actor,
                line,
                t_ns,
                recorded,
                replayed,
            } => {
                let at = t_ns.map_or(String::new(), |t| format!(" at t_ns {t}"));
                write!(
                    f,
                    "first differing actor: {actor}, event {line} of {ACTOR_DIR}/{actor}.jsonl{at}\n  recorded: {}\n  replayed: {}",
                    show(recorded),
                    show(replayed)
                )
            }
            Difference::File {
                path,
                line,
                recorded,
                replayed,
            } => write!(
                f,
                "{path} differs at line {line}\n  recorded: {}\n  replayed: {}",
                show(recorded),
                show(replayed)
            ),
            Difference::Digest { recorded, replayed } => write!(
                f,
                "every file matches but the recorded digest {recorded} is not the re-run's {replayed}"
            ),
        }
    }
}

/// What a replay found.
#[derive(Debug)]
pub struct Replay {
    /// The re-run's digest (of the truncated run with `until`).
    pub digest: String,
    /// `None`: identical.
    pub difference: Option<Difference>,
    /// Files compared (actor logs included).
    pub files_compared: usize,
    /// Requested actors' states, in actor-id order.
    pub states: Vec<(String, Value)>,
    /// The external program's files that are not what the run recorded
    /// (`program/…`): `pack.py: sha256 1a2b3c4d… recorded, 5e6f7a8b… now`.
    pub program_changes: Vec<String>,
}

/// How the files of `scenario`'s external program differ from the copies
/// the results directory `dir` kept of them.
fn program_changes(dir: &Path, scenario: &scenario::Scenario) -> Vec<String> {
    let Some(external) = &scenario.scheduler.external else {
        return Vec::new();
    };
    let short = |h: &str| h[..12.min(h.len())].to_string();
    crate::external::program_files(&external.command, &scenario.base)
        .into_iter()
        .filter_map(|(name, path)| {
            let shown = name.strip_prefix("program/").unwrap_or(&name).to_string();
            let now = std::fs::read(&path)
                .ok()
                .map(|b| crate::results::sha256_hex(&b));
            let then = std::fs::read(dir.join(&name))
                .ok()
                .map(|b| crate::results::sha256_hex(&b));
            match (then, now) {
                (Some(a), Some(b)) if a == b => None,
                (Some(a), Some(b)) => Some(format!(
                    "{shown}: sha256 {}… recorded, {}… now",
                    short(&a),
                    short(&b)
                )),
                (None, _) => Some(format!("{shown}: not recorded with the run")),
                (Some(_), None) => Some(format!("{shown}: no longer readable")),
            }
        })
        .collect()
}

/// A scratch directory for the re-run's logs, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Re-runs the scenario recorded in `dir` and compares (module docs).
pub fn replay(dir: &Path, options: &ReplayOptions) -> Result<Replay, ReplayError> {
    let scenario_path = dir.join("scenario.toml");
    let text = std::fs::read_to_string(&scenario_path).map_err(|source| ReplayError::Read {
        path: scenario_path.clone(),
        source,
    })?;
    let label = scenario_path.display().to_string();
    // Streamed traces stay where the original run found them (run.json).
    let stream_base = scenario::streams::recorded_base(&scenario_path);
    let stream_base = stream_base.as_deref();
    let mut scenario = scenario::load_with(&label, &text, &[], stream_base).map_err(|e| {
        ReplayError::Scenario {
            path: scenario_path.clone(),
            message: e.to_string(),
        }
    })?;
    if let Some(until) = options.until {
        let end = scenario.run.end.as_nanos();
        if until > end {
            return Err(ReplayError::UntilPastEnd {
                until_ns: until,
                end_ns: end,
            });
        }
        let set: Override =
            format!("run.end={until}ns")
                .parse()
                .map_err(|message| ReplayError::Scenario {
                    path: scenario_path.clone(),
                    message,
                })?;
        scenario = scenario::load_with(&label, &text, &[set], stream_base).map_err(|e| {
            ReplayError::Scenario {
                path: scenario_path.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let scratch = Scratch(std::env::temp_dir().join(format!(
        "dcemu-replay-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )));
    std::fs::create_dir_all(&scratch.0).map_err(|source| ReplayError::Scratch {
        path: scratch.0.clone(),
        source,
    })?;
    let run = if options.dump.is_empty() {
        execute
    } else {
        execute_keeping_states
    };
    let outcome = run(
        &scenario,
        &RunOptions {
            partitions: options.partitions.max(1),
            progress: None,
            log_dir: Some(scratch.0.clone()),
        },
    )?;
    let states = outcome
        .states
        .iter()
        .filter(|(name, _)| options.dump.iter().any(|p| p.matches(name)))
        .cloned()
        .collect();
    let mut difference = None;
    let mut earliest: Option<(u64, String, Difference)> = None;
    let mut files_compared = 0;
    for path in outcome.results.paths() {
        files_compared += 1;
        let recorded = dir.join(path);
        if let Some(actor) = path
            .strip_prefix(&format!("{ACTOR_DIR}/"))
            .and_then(|p| p.strip_suffix(".jsonl"))
        {
            let replayed = scratch.0.join(format!("{actor}.jsonl"));
            if let Some((t, d)) = compare_log(actor, &recorded, &replayed, options.until)? {
                if earliest
                    .as_ref()
                    .is_none_or(|(et, ea, _)| (t, actor) < (*et, ea.as_str()))
                {
                    earliest = Some((t, actor.to_string(), d));
                }
            }
        } else if options.until.is_none() && difference.is_none() {
            // Truncated re-runs have different summaries: only logs compare.
            let ours = outcome
                .results
                .read(path)
                .map_err(|source| ReplayError::Scratch {
                    path: scratch.0.clone(),
                    source,
                })?
                .unwrap_or_default();
            let theirs = match std::fs::read(&recorded) {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(source) => {
                    return Err(ReplayError::Read {
                        path: recorded,
                        source,
                    });
                }
            };
            difference = first_line_difference(path, &theirs, &ours);
        }
    }
    // A log difference is the more telling one: it says when and who.
    if let Some((_, _, d)) = earliest {
        difference = Some(d);
    }
    if difference.is_none() && options.until.is_none() {
        let digest_path = dir.join("digest");
        let recorded =
            std::fs::read_to_string(&digest_path).map_err(|source| ReplayError::Read {
                path: digest_path,
                source,
            })?;
        if recorded.trim() != outcome.digest {
            difference = Some(Difference::Digest {
                recorded: recorded.trim().to_string(),
                replayed: outcome.digest.clone(),
            });
        }
    }
    Ok(Replay {
        digest: outcome.digest,
        difference,
        files_compared,
        states,
        program_changes: program_changes(dir, &scenario),
    })
}

fn first_line_difference(path: &str, recorded: &[u8], replayed: &[u8]) -> Option<Difference> {
    if recorded == replayed {
        return None;
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut a = recorded.split(|&c| c == b'\n');
    let mut b = replayed.split(|&c| c == b'\n');
    let mut line = 0;
    loop {
        line += 1;
        let (x, y) = (a.next(), b.next());
        if x != y {
            return Some(Difference::File {
                path: path.to_string(),
                line,
                recorded: x.map(text),
                replayed: y.map(text),
            });
        }
        if x.is_none() {
            // Equal line by line yet different bytes cannot happen; be safe.
            return Some(Difference::File {
                path: path.to_string(),
                line,
                recorded: None,
                replayed: None,
            });
        }
    }
}

fn t_ns_of(line: &str) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct T {
        t_ns: u64,
    }
    serde_json::from_str::<T>(line).ok().map(|t| t.t_ns)
}

/// Streams both logs line by line; the first differing line, with the
/// virtual time it happened at (the earlier of the two lines' times).
/// With `until`, recorded lines at or after it are not expected.
fn compare_log(
    actor: &str,
    recorded: &Path,
    replayed: &Path,
    until: Option<SimTime>,
) -> Result<Option<(u64, Difference)>, ReplayError> {
    let open = |p: &Path| -> Result<Option<BufReader<File>>, ReplayError> {
        match File::open(p) {
            Ok(f) => Ok(Some(BufReader::with_capacity(1 << 16, f))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ReplayError::Read {
                path: p.to_path_buf(),
                source,
            }),
        }
    };
    let mut rec = open(recorded)?;
    let Some(mut rep) = open(replayed)? else {
        return Err(ReplayError::Scratch {
            path: replayed.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotFound, "the re-run wrote no log"),
        });
    };
    let read = |r: &mut BufReader<File>, p: &Path, buf: &mut String| -> Result<bool, ReplayError> {
        buf.clear();
        let n = r.read_line(buf).map_err(|source| ReplayError::Read {
            path: p.to_path_buf(),
            source,
        })?;
        Ok(n > 0)
    };
    let (mut a, mut b) = (String::new(), String::new());
    let mut line = 0;
    loop {
        line += 1;
        let got_a = match rec.as_mut() {
            Some(r) => read(r, recorded, &mut a)?,
            None => false,
        };
        let got_a = got_a && until.is_none_or(|u| t_ns_of(&a).is_none_or(|t| t < u));
        let got_b = read(&mut rep, replayed, &mut b)?;
        match (got_a, got_b) {
            (false, false) => return Ok(None),
            (true, true) if a == b => continue,
            _ => {
                let la = got_a.then(|| a.trim_end().to_string());
                let lb = got_b.then(|| b.trim_end().to_string());
                let t = [la.as_deref(), lb.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter_map(t_ns_of)
                    .min();
                return Ok(Some((
                    t.unwrap_or(0),
                    Difference::Event {
                        actor: actor.to_string(),
                        line,
                        t_ns: t,
                        recorded: la,
                        replayed: lb,
                    },
                )));
            }
        }
    }
}
