//! What the readers of the public formats share: the format names, the
//! options a scenario gives them, their errors and counts (re-exported by
//! [`super`]).

use std::path::PathBuf;

use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

use crate::trace::TraceTask;

/// Which reader a tenant's `arrivals.trace` file needs (`arrivals.format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TraceFormat {
    /// dcemu's own CSV (`docs/traces.md`, [`crate::trace`]).
    #[default]
    #[serde(rename = "csv")]
    Csv,
    /// Google cluster-usage trace 2011, `task_events`.
    #[serde(rename = "google-2011")]
    Google2011,
    /// Google cluster-usage trace 2019 (Borg, v3), `instance_events` JSON lines.
    #[serde(rename = "google-2019")]
    Google2019,
    /// Alibaba cluster-trace-v2018, `batch_task`.
    #[serde(rename = "alibaba-2018")]
    Alibaba2018,
    /// Alibaba cluster-trace-v2018, `batch_instance`.
    #[serde(rename = "alibaba-2018-instance")]
    Alibaba2018Instance,
    /// Standard Workload Format of the Parallel Workloads Archive.
    #[serde(rename = "swf")]
    Swf,
    /// Azure Public Dataset VM trace, `vmtable`.
    #[serde(rename = "azure-vm")]
    AzureVm,
}

impl TraceFormat {
    /// Every format, in the order `docs/traces.md` lists them.
    pub const ALL: [TraceFormat; 7] = [
        TraceFormat::Csv,
        TraceFormat::Google2011,
        TraceFormat::Google2019,
        TraceFormat::Alibaba2018,
        TraceFormat::Alibaba2018Instance,
        TraceFormat::Swf,
        TraceFormat::AzureVm,
    ];

    /// The name written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Csv => "csv",
            TraceFormat::Google2011 => "google-2011",
            TraceFormat::Google2019 => "google-2019",
            TraceFormat::Alibaba2018 => "alibaba-2018",
            TraceFormat::Alibaba2018Instance => "alibaba-2018-instance",
            TraceFormat::Swf => "swf",
            TraceFormat::AzureVm => "azure-vm",
        }
    }

    /// Whether the format is a public one (every one but dcemu's own csv):
    /// the options of `docs/traces.md` "Public trace formats" apply, and its
    /// counts are metrics. Every format, csv included, is read as a stream.
    pub fn is_public(self) -> bool {
        self != TraceFormat::Csv
    }

    /// Whether the format writes CPU and memory normalised to the largest
    /// machine (1.0 = that machine), rather than in cores and GB.
    pub fn normalised_cpu(self) -> bool {
        matches!(self, TraceFormat::Google2011 | TraceFormat::Google2019)
    }

    /// Whether memory is normalised (Google: 1.0 = the largest machine;
    /// Alibaba: 100 = the largest machine).
    pub fn normalised_memory(self) -> bool {
        matches!(
            self,
            TraceFormat::Google2011
                | TraceFormat::Google2019
                | TraceFormat::Alibaba2018
                | TraceFormat::Alibaba2018Instance
        )
    }

    /// Whether its tasks name their jobs: the tenant then grades jobs and
    /// runs their DAGs and placement restrictions ([`crate::trace_jobs`]).
    pub fn has_jobs(self) -> bool {
        matches!(
            self,
            TraceFormat::Google2011
                | TraceFormat::Google2019
                | TraceFormat::Alibaba2018
                | TraceFormat::Alibaba2018Instance
        )
    }

    /// Whether the format has a machine table `arrivals.machines` can name.
    pub fn has_machines(self) -> bool {
        matches!(
            self,
            TraceFormat::Google2011
                | TraceFormat::Google2019
                | TraceFormat::Alibaba2018
                | TraceFormat::Alibaba2018Instance
                | TraceFormat::Swf
        )
    }
}

/// How a streamed trace's rows become tasks; filled in when the scenario
/// loads (units default from the scenario's server type, `docs/traces.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOptions {
    /// Cores of one unit of the trace's CPU: the largest machine's cores for
    /// the normalised Google formats, cores per processor / vCPU / Alibaba
    /// core for the others.
    pub cores_per_unit: f64,
    /// GB of one unit of the trace's memory: the largest machine's memory
    /// for Google (1.0) and Alibaba (100); 1 for Azure (GB).
    pub gb_per_unit: f64,
    /// Priority of tasks whose format or row gives none (the tenant's `priority`).
    pub default_priority: u8,
    /// Google formats: how long after its submission a task may stay
    /// unresolved before it is released (running: until the run's end;
    /// never started: dropped). Bounds the tasks held in memory.
    pub lookahead: SimTime,
    /// End of the run: tasks still running when the trace ends (or past the
    /// lookahead) run until then.
    pub run_end: SimTime,
    /// Skip bad rows (counted) instead of stopping at the first.
    pub lenient: bool,
    /// Cores of the whole machine the trace runs on (every server of the
    /// scenario), when known: an SWF job asking for more is a bad row
    /// naming its line (no machine could ever have run it).
    pub machine_cores: Option<u64>,
    /// SWF: a job that ran longer than it requested runs for its request
    /// (`arrivals.kill_at_request`).
    pub kill_at_request: bool,
}

/// A trace file to stream, as a tenant's work: what the model needs to open
/// it when the tenant starts.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    /// Where the file is (resolved against the scenario file).
    pub path: PathBuf,
    /// How errors name it (the path as the scenario resolved it).
    pub label: String,
    pub format: TraceFormat,
    pub options: ImportOptions,
}

/// Why a streamed trace was refused.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be opened, read or decompressed.
    #[error("{path}: cannot read the trace: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// A row is wrong; `column` is the 1-based byte column of the field.
    #[error("{path}:{line}:{column}: {problem}")]
    Row {
        path: String,
        line: u64,
        column: u64,
        problem: String,
    },
    /// The file as a whole is wrong (no tasks, no machines, a header).
    #[error("{path}: {problem}")]
    File { path: String, problem: String },
    /// dcemu's own csv format, read as a stream too.
    #[error(transparent)]
    Csv(#[from] crate::trace::TraceError),
}

impl ImportError {
    /// Whether `lenient` may skip it (one row's problem).
    pub fn is_row(&self) -> bool {
        matches!(self, ImportError::Row { .. })
    }
}

/// What a streamed trace did with its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Lines read (comments and blank lines included).
    pub lines: u64,
    /// Tasks handed to the tenant.
    pub tasks: u64,
    /// Bad rows skipped under `lenient`.
    pub rows_skipped: u64,
    /// SWF jobs cut to their requested time (`kill_at_request`).
    pub killed_at_request: u64,
    /// Tasks the trace names but that never ran within the file (or the
    /// lookahead), or that a row marks as not run (status, run time -1).
    pub tasks_dropped: u64,
    /// Tasks still running when the file (or the lookahead) ends: replayed
    /// with a duration that reaches the end of the run.
    pub tasks_unfinished: u64,
    /// Events about tasks not in flight (submitted before the file starts,
    /// or already released): ignored.
    pub events_ignored: u64,
}

/// Counts and the lenient switch, shared by the readers.
pub(crate) struct Tally {
    pub lenient: bool,
    pub stats: ImportStats,
}

impl Tally {
    /// `Ok` after counting a skipped row under `lenient`; the error otherwise.
    pub fn skip(&mut self, e: ImportError) -> Result<(), ImportError> {
        if self.lenient && e.is_row() {
            self.stats.rows_skipped += 1;
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// One format's reader: the next task in arrival order, or `None` at the end.
pub(crate) trait TaskReader: Send {
    fn next_task(&mut self, tally: &mut Tally) -> Result<Option<TraceTask>, ImportError>;
}

/// Microseconds (Google traces) to nanoseconds.
pub(crate) fn micros(us: u64) -> Option<SimTime> {
    us.checked_mul(1_000)
}
