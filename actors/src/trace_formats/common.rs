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
    /// Google 2019: the `collection_events` table read beside the
    /// instances (`arrivals.collections`): where it is and how errors name
    /// it.
    pub collections: Option<(PathBuf, String)>,
    /// Alibaba `batch_instance`: the machine ids of `machine_meta`
    /// (`arrivals.machines` or `arrivals.machine_ids`); a row's
    /// `machine_id` outside them is a known defect.
    pub known_machines: Option<std::sync::Arc<std::collections::BTreeSet<String>>>,
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
    /// The trace's known defects met, by kind ([`DefectKind`]).
    pub defects: Defects,
}

/// What a reader does with a row that shows a known defect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefectAction {
    /// The row gives no task.
    Drop,
    /// A value is replaced by the nearest one the model can use.
    Clamp,
    /// The row gives its task, a missing value read as the format's page says.
    Keep,
}

impl DefectAction {
    pub fn name(self) -> &'static str {
        match self {
            DefectAction::Drop => "drop",
            DefectAction::Clamp => "clamp",
            DefectAction::Keep => "keep",
        }
    }
}

/// Declares [`DefectKind`]: variant, stable name (`trace_defect_<name>` is
/// its metric), action and one-line description, in report order.
macro_rules! defect_kinds {
    ($($variant:ident = $name:literal, $action:ident, $what:literal;)*) => {
        /// A known defect of a published trace that a reader meets, counts
        /// and handles by its [`DefectAction`] rather than refusing the file
        /// (`docs/traces.md`, "Known defects").
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum DefectKind {
            $(#[doc = $what] $variant,)*
        }

        impl DefectKind {
            /// How many kinds there are.
            pub const COUNT: usize = [$($name),*].len();
            /// Every kind, in report order.
            pub const ALL: [DefectKind; Self::COUNT] = [$(DefectKind::$variant),*];

            /// The stable snake_case name `dcemu validate` and `run.json` use.
            pub fn name(self) -> &'static str {
                match self { $(DefectKind::$variant => $name,)* }
            }

            /// The counter in `metrics.json`: `trace_defect_<name>`.
            pub fn metric(self) -> &'static str {
                match self { $(DefectKind::$variant => concat!("trace_defect_", $name),)* }
            }

            pub fn action(self) -> DefectAction {
                match self { $(DefectKind::$variant => DefectAction::$action,)* }
            }

            /// One line: what the row has and what the reader makes of it.
            pub fn description(self) -> &'static str {
                match self { $(DefectKind::$variant => $what,)* }
            }
        }
    };
}

defect_kinds! {
    RowRefused = "row_refused", Drop,
        "a row the reader refuses (its error names why), skipped under `lenient`";
    SwfRunTimeMissing = "swf_run_time_missing", Drop,
        "run time -1 (not recorded): the job is dropped";
    SwfProcessorsMissing = "swf_processors_missing", Drop,
        "neither allocated nor requested processors (both -1 or 0): the job is dropped";
    SwfRunTimeZero = "swf_run_time_zero", Clamp,
        "run time 0 (the job ran under 0.5 s): read as 0.5 s";
    SwfAllocatedProcessorsMissing = "swf_allocated_processors_missing", Keep,
        "allocated processors -1 or 0: the requested processors are used";
    SwfMemoryMissing = "swf_memory_missing", Keep,
        "neither used nor requested memory (both -1): the job needs no memory";
    SwfRanPastRequest = "swf_ran_past_request", Keep,
        "ran longer than its requested time: replayed with its recorded run time";
    SwfCutAtRequest = "swf_cut_at_request", Clamp,
        "ran longer than its requested time: cut to its request (`kill_at_request`)";
    AlibabaDuplicateRow = "alibaba_duplicate_row", Drop,
        "the same row as one before it with the same start_time: dropped";
    AlibabaNoRunTime = "alibaba_no_run_time", Drop,
        "a Terminated row whose end_time is not after its start_time: dropped";
    AlibabaNoInstances = "alibaba_no_instances", Drop,
        "a Terminated task of instance_num 0: dropped";
    AlibabaInstanceNumMissing = "alibaba_instance_num_missing", Keep,
        "instance_num empty: one instance";
    AlibabaCpuMissing = "alibaba_cpu_missing", Drop,
        "no positive CPU (plan_cpu, or cpu_max and cpu_avg, empty, 0 or negative): dropped";
    AlibabaPeakMissing = "alibaba_peak_missing", Keep,
        "cpu_max or mem_max empty or negative: the average (cpu_avg, mem_avg) is used";
    AlibabaMemoryMissing = "alibaba_memory_missing", Keep,
        "no memory (plan_mem, or mem_max and mem_avg, empty or negative): the task needs none";
    AlibabaMemoryOver100 = "alibaba_memory_over_100", Clamp,
        "normalised memory above 100 (more than the largest machine): read as 100";
    AlibabaUnknownMachine = "alibaba_unknown_machine", Keep,
        "machine_id never appears in the machine table (machine_meta): kept (the emulator places tasks itself)";
    GoogleSynthesizedEvent = "google_synthesized_event", Keep,
        "the event's missing-info field is set (the trace synthesised a lost record): used as it is";
    GoogleEventNotInFlight = "google_event_not_in_flight", Drop,
        "an event of a task not submitted in the file, or already released: ignored";
    GoogleCpuRequestMissing = "google_cpu_request_missing", Clamp,
        "a task with no or a zero CPU request: given 0.001 cores";
    AzureNoLifetime = "azure_no_lifetime", Drop,
        "vmdeleted not after vmcreated (the VM lived under the 300 s resolution): dropped";
    AzureOpenSizeBucket = "azure_open_size_bucket", Clamp,
        "vmcorecount or vmmemory is an open bucket `>N`: read as 2N";
}

/// Examples of each kind a ledger keeps.
pub const DEFECT_EXAMPLES: usize = 3;

/// Where in the trace file a defect was met: its line and, when one field
/// shows it, the 1-based byte column of that field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub line: u64,
    pub column: Option<u64>,
}

/// One kind's count and its first [`DEFECT_EXAMPLES`] places.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefectCount {
    pub count: u64,
    pub examples: [Option<Place>; DEFECT_EXAMPLES],
}

/// The defect ledger of one trace: a count and a few places per kind, so
/// its size does not depend on the file's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defects([DefectCount; DefectKind::COUNT]);

impl Default for Defects {
    fn default() -> Self {
        Defects([DefectCount::default(); DefectKind::COUNT])
    }
}

impl Defects {
    /// Counts one defect of `kind` at `line` (and `column`).
    pub fn record(&mut self, kind: DefectKind, line: u64, column: Option<u64>) {
        let entry = &mut self.0[kind as usize];
        entry.count += 1;
        if let Some(slot) = entry.examples.iter_mut().find(|e| e.is_none()) {
            *slot = Some(Place { line, column });
        }
    }

    pub fn count(&self, kind: DefectKind) -> u64 {
        self.0[kind as usize].count
    }

    pub fn get(&self, kind: DefectKind) -> &DefectCount {
        &self.0[kind as usize]
    }

    /// The kinds met, in report order.
    pub fn present(&self) -> impl Iterator<Item = (DefectKind, &DefectCount)> + '_ {
        DefectKind::ALL
            .into_iter()
            .map(|k| (k, self.get(k)))
            .filter(|(_, c)| c.count > 0)
    }

    pub fn is_empty(&self) -> bool {
        self.present().next().is_none()
    }

    /// `dcemu validate`'s report, one line per kind met (examples named
    /// `path:line[:column]`), or "no known defects".
    pub fn report(&self, path: &str) -> Vec<String> {
        if self.is_empty() {
            return vec!["no known defects".into()];
        }
        self.present()
            .map(|(kind, c)| {
                let at: Vec<String> = c
                    .examples
                    .iter()
                    .flatten()
                    .map(|p| match p.column {
                        Some(col) => format!("{path}:{}:{col}", p.line),
                        None => format!("{path}:{}", p.line),
                    })
                    .collect();
                format!(
                    "{}: {} ({}) at {} — {}",
                    kind.name(),
                    c.count,
                    kind.action().name(),
                    at.join(", "),
                    kind.description()
                )
            })
            .collect()
    }

    /// Each kind met as its `trace_defect_<name>` counter; kinds not met
    /// add nothing, so a clean trace's metrics are as they were.
    pub fn add_metrics(&self, out: &mut crate::kernel::Metrics) {
        for (kind, c) in self.present() {
            out.add(kind.metric(), c.count);
        }
    }
}

/// Defects of the row being parsed: recorded once the row is read whole
/// ([`Tally::found`]), so a row refused further on counts as refused only.
#[derive(Default)]
pub(crate) struct Found([Option<(DefectKind, Option<u64>)>; 5]);

impl Found {
    /// A defect of the row, in the field at `column` (none: the row as a whole).
    pub fn add(&mut self, kind: DefectKind, column: Option<u64>) {
        let slot = self.0.iter_mut().find(|s| s.is_none());
        debug_assert!(slot.is_some(), "a row shows more defects than Found holds");
        if let Some(slot) = slot {
            *slot = Some((kind, column));
        }
    }
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
            if let ImportError::Row { line, column, .. } = e {
                self.defect(DefectKind::RowRefused, line, Some(column));
            }
            Ok(())
        } else {
            Err(e)
        }
    }

    /// Counts a defect of `kind` at `line` (and `column`).
    pub fn defect(&mut self, kind: DefectKind, line: u64, column: Option<u64>) {
        self.stats.defects.record(kind, line, column);
    }

    /// Counts the defects a row of `line` showed.
    pub fn found(&mut self, found: &Found, line: u64) {
        for &(kind, column) in found.0.iter().flatten() {
            self.defect(kind, line, column);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_counts_every_defect_and_keeps_three_places() {
        let mut d = Defects::default();
        assert_eq!(d.report("t"), vec!["no known defects".to_string()]);
        for line in 1..=5 {
            d.record(DefectKind::SwfRunTimeZero, line, Some(7));
        }
        d.record(DefectKind::GoogleEventNotInFlight, 9, None);
        assert_eq!(d.count(DefectKind::SwfRunTimeZero), 5);
        assert_eq!(
            d.report("t"),
            vec![
                "swf_run_time_zero: 5 (clamp) at t:1:7, t:2:7, t:3:7 — run time 0 (the job \
                 ran under 0.5 s): read as 0.5 s"
                    .to_string(),
                "google_event_not_in_flight: 1 (drop) at t:9 — an event of a task not \
                 submitted in the file, or already released: ignored"
                    .to_string(),
            ]
        );
        let mut m = crate::kernel::Metrics::default();
        d.add_metrics(&mut m);
        let got: Vec<_> = m.counters().collect();
        assert_eq!(
            got,
            vec![
                ("trace_defect_google_event_not_in_flight", 1),
                ("trace_defect_swf_run_time_zero", 5)
            ]
        );
    }

    #[test]
    fn kinds_have_distinct_snake_case_names() {
        let mut names: Vec<_> = DefectKind::ALL.iter().map(|k| k.name()).collect();
        assert!(names.iter().all(|n| {
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        }));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DefectKind::COUNT);
    }
}
