//! What the report's parts share: a run's data as read from its results
//! directory, the errors, and a figure of the page. A leaf, so that
//! `report.rs`, `plots.rs` and `hpc.rs` import it and not each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::labels;
use crate::logs::StreamError;

/// Why no report was written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Logs(#[from] StreamError),
    #[error("cannot draw {plot}: {message}")]
    Draw { plot: String, message: String },
}

impl ReportError {
    pub fn is_bad_input(&self) -> bool {
        match self {
            ReportError::Read { .. } => true,
            ReportError::Logs(StreamError::Logs(e)) => e.is_bad_input(),
            _ => false,
        }
    }
}

/// What one results directory contributes.
#[derive(Debug, Default)]
pub struct RunData {
    pub label: String,
    /// Its `scenario.toml`, flattened, for [`label_runs`].
    pub fields: Option<labels::Fields>,
    pub metrics: serde_json::Map<String, Value>,
    /// `perf_norm` of each finished application, sorted ascending.
    pub perf_norm: Vec<f64>,
    /// Waiting time (submission to start) of each finished task, s, sorted.
    pub waiting_s: Vec<f64>,
    /// Priority evictions by the victim's priority class.
    pub evictions_by_class: BTreeMap<i64, u64>,
    /// `time_s, servers_on, switches_on`.
    pub timeseries: Vec<(f64, f64, f64)>,
    /// Mean occupancy (running tasks / slots) per server group × time bin.
    pub heat: Option<Heat>,
    /// Whether the run kept actor logs.
    pub has_logs: bool,
    /// A replayed SWF log's utilisation over time and its jobs' wait and
    /// bounded slowdown.
    pub hpc: HpcData,
}

/// A servers × time utilisation grid.
#[derive(Debug, Clone)]
pub struct Heat {
    /// Rows: groups of consecutive servers (first and last index).
    pub rows: Vec<(usize, usize)>,
    pub bin_s: f64,
    /// `values[row][bin]` in 0..=1.
    pub values: Vec<Vec<f64>>,
}

/// What a run's HPC result files hold, for the plots.
#[derive(Debug, Default)]
pub struct HpcData {
    /// `(t_s, utilisation)` per bin of `utilisation.csv`.
    pub utilisation: Vec<(f64, f64)>,
    /// Wait of each finished job, s, sorted (`jobs.csv`).
    pub wait_s: Vec<f64>,
    /// Bounded slowdown of each finished job, sorted (`jobs.csv`).
    pub slowdown: Vec<f64>,
}

pub(super) fn read_text(path: &Path) -> Result<Option<String>, ReportError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReportError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

pub(super) fn bad(path: &Path, message: impl Into<String>) -> ReportError {
    ReportError::Read {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// One figure of the page.
pub(super) struct Figure {
    pub(super) id: String,
    pub(super) title: String,
    pub(super) caption: String,
    pub(super) svg: String,
}
