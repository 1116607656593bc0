//! How `dcemu bench` and its soak suite (`bench/soak.rs`) run a scenario
//! in a child process and what they read back: a leaf both use, so that
//! neither imports the other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// Why a benchmark could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Failed(String),
}

/// What a child run measured.
#[derive(Clone, Debug)]
pub(super) struct Measured {
    pub(super) wall_s: f64,
    pub(super) peak_rss_kb: Option<u64>,
    pub(super) events: u64,
    pub(super) digest: String,
    /// Tasks submitted over the run.
    pub(super) tasks: u64,
    /// Tasks submitted and not completed at the end: running, queued,
    /// waiting for a server to wake, in transit.
    pub(super) in_flight: u64,
}

pub(super) struct Runner {
    pub(super) exe: PathBuf,
    pub(super) scenarios: PathBuf,
    pub(super) work: PathBuf,
}

impl Runner {
    /// Runs `file` with `sets` on `partitions` threads in a child process.
    pub(super) fn run(
        &self,
        file: &str,
        sets: &[String],
        partitions: u32,
    ) -> Result<Measured, BenchError> {
        let path = self.scenarios.join(file);
        if !path.is_file() {
            return Err(BenchError::Input(format!(
                "{}: no such scenario",
                path.display()
            )));
        }
        let out = self.work.join(file.replace(['/', '.'], "_"));
        let mut cmd = Command::new(&self.exe);
        cmd.arg("run")
            .arg(&path)
            .arg("--out")
            .arg(&out)
            .arg("--force")
            .arg("--quiet")
            .arg("--partitions")
            .arg(partitions.to_string());
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        eprint!(
            "  {file} {} ({partitions} partition(s)) ... ",
            sets.join(" ")
        );
        let started = Instant::now();
        let status = cmd
            .status()
            .map_err(|e| BenchError::Failed(format!("cannot start {}: {e}", self.exe.display())))?;
        let wall_s = started.elapsed().as_secs_f64();
        if !status.success() {
            return Err(BenchError::Failed(format!(
                "dcemu run {} exited with {status}",
                path.display()
            )));
        }
        let read_json = |name: &str| -> Result<Value, BenchError> {
            let p = out.join(name);
            let text = std::fs::read_to_string(&p)
                .map_err(|e| BenchError::Failed(format!("{}: {e}", p.display())))?;
            serde_json::from_str(&text)
                .map_err(|e| BenchError::Failed(format!("{}: {e}", p.display())))
        };
        let facts = read_json("run.json")?;
        let metrics = read_json("metrics.json")?;
        let count = |key: &str| metrics.get(key).and_then(Value::as_u64).unwrap_or(0);
        let measured = Measured {
            wall_s,
            peak_rss_kb: facts.get("peak_rss_kb").and_then(Value::as_u64),
            events: count("events"),
            tasks: count("tasks_submitted"),
            in_flight: count("tasks_submitted").saturating_sub(count("tasks_completed")),
            digest: facts
                .get("digest")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        };
        std::fs::remove_dir_all(&out).ok();
        eprintln!("{wall_s:.2} s");
        Ok(measured)
    }
}

pub(super) fn mb(kb: Option<u64>) -> String {
    kb.map_or("n/a".into(), |kb| format!("{:.0}", kb as f64 / 1024.0))
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that
/// nothing already there is lost to a failed write.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BenchError> {
    let fail = |e: std::io::Error| BenchError::Failed(format!("{}: {e}", path.display()));
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(d) = dir {
        std::fs::create_dir_all(d).map_err(fail)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
