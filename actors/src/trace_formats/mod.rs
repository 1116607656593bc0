//! Public trace formats, read as streams of the same [`TraceTask`] records
//! the CSV reader ([`crate::trace`]) produces, so everything downstream of
//! the tenant is unchanged. The user's page is `docs/traces.md` (one section
//! per format: columns, units, normalisation, what is ignored, priorities).
//!
//! | `format` | file | schema document |
//! |---|---|---|
//! | `google-2011` | `task_events` (CSV, 13 fields) | Reiss, Wilkes, Hellerstein: "Google cluster-usage traces: format + schema", 2011 (clusterdata-2011-2) |
//! | `google-2019` | `instance_events` (JSON lines, the trace's JSON export) | "Google cluster-usage traces v3", 2020, and `clusterdata_trace_format_v3.proto` |
//! | `alibaba-2018` | `batch_task` (CSV, 9 fields) | Alibaba `cluster-trace-v2018/schema.md` §1.5 |
//! | `alibaba-2018-instance` | `batch_instance` (CSV, 14 fields) | same, §1.6 |
//! | `swf` | Standard Workload Format (18 fields, `;` header comments) | Parallel Workloads Archive, "The Standard Workload Format", v2.2 |
//! | `azure-vm` | `vmtable` (CSV, 11 fields) | Azure Public Dataset V1 / V2 schema (`AzurePublicDatasetV1.md`, `V2.md`) |
//!
//! Machine tables (`machine_events` of both Google traces, Alibaba's
//! `machine_meta`, SWF's `MaxNodes` / `MaxProcs` header) are read by
//! [`machines`] into the server list.
//!
//! **Streaming.** A file is read one line at a time ([`lines::Lines`]; gzip
//! decompressed as it is read), so memory does not grow with the file. The
//! row formats hold one row; the Google formats, whose tasks are spread over
//! several events, hold only the tasks in flight: those submitted within the
//! last [`ImportOptions::lookahead`] of trace time. The files must be in
//! time order, as the published traces are (Alibaba and Azure tables must be
//! sorted by start / creation time first; `docs/traces.md` says how).
//!
//! **Errors** are [`ImportError`]s naming `file:line:column` (the 1-based
//! byte column where the offending field starts) and the field. With
//! `lenient`, a bad row is skipped and counted instead
//! ([`ImportStats::rows_skipped`]); a file that cannot be read or
//! decompressed is always an error.
//!
//! **Known defects** of the published traces (a run time of -1, a
//! duplicate row, memory above 100 %, …) are not errors: each reader counts
//! them by [`DefectKind`], with the first places it met each, in
//! [`ImportStats::defects`], and drops, clamps or keeps the row as the kind
//! says. `dcemu validate` lists them; a run counts them as
//! `trace_defect_<kind>` metrics.

mod alibaba;
mod azure;
mod collections;
mod common;
mod google2011;
mod google2019;
mod json;
mod lifecycle;
pub mod lines;
pub mod machines;
mod swf;

use dcemu_topology::SimTime;

pub use common::{
    DEFECT_EXAMPLES, DefectAction, DefectCount, DefectKind, Defects, ImportError, ImportOptions,
    ImportStats, Place, StreamSpec, TraceFormat,
};
use common::{Tally, TaskReader};

use crate::trace::{CsvTraceReader, TraceTask};

/// dcemu's own csv format ([`crate::trace`]) as a stream: the tenant reads
/// it as it goes, like the public formats; it has no lenient mode.
struct CsvReader(CsvTraceReader<Box<dyn std::io::BufRead + Send>>);

impl TaskReader for CsvReader {
    fn next_task(&mut self, _: &mut Tally) -> Result<Option<TraceTask>, ImportError> {
        Ok(self.0.next_task()?)
    }
}

/// A streamed trace: tasks in non-decreasing arrival order, read as asked.
pub struct TraceStream {
    reader: Box<dyn TaskReader>,
    tally: Tally,
    last_arrival: SimTime,
}

impl TraceStream {
    /// Opens the trace `spec` names.
    pub fn open(spec: &StreamSpec) -> Result<Self, ImportError> {
        if spec.format == TraceFormat::Csv {
            let input = lines::open_input(&spec.path, &spec.label)?;
            return Ok(TraceStream {
                reader: Box::new(CsvReader(CsvTraceReader::new(&spec.label, input)?)),
                tally: Tally {
                    lenient: false,
                    stats: ImportStats::default(),
                },
                last_arrival: 0,
            });
        }
        let lines = lines::Lines::open(&spec.path, &spec.label)?;
        Self::from_lines(lines, spec.format, &spec.options)
    }

    /// A stream over lines already opened (tests: text in memory).
    pub fn from_lines(
        lines: lines::Lines,
        format: TraceFormat,
        options: &ImportOptions,
    ) -> Result<Self, ImportError> {
        let reader: Box<dyn TaskReader> = match format {
            TraceFormat::Csv => {
                return Err(ImportError::File {
                    path: lines.path().to_string(),
                    problem: "format \"csv\" is opened by TraceStream::open, not from lines".into(),
                });
            }
            TraceFormat::Google2011 => Box::new(google2011::Reader::new(lines, options)),
            TraceFormat::Google2019 => Box::new(google2019::Reader::new(lines, options)?),
            TraceFormat::Alibaba2018 => Box::new(alibaba::Reader::new(lines, options, false)),
            TraceFormat::Alibaba2018Instance => {
                Box::new(alibaba::Reader::new(lines, options, true))
            }
            TraceFormat::Swf => Box::new(swf::Reader::new(lines, options)),
            TraceFormat::AzureVm => Box::new(azure::Reader::new(lines, options)),
        };
        Ok(TraceStream {
            reader,
            tally: Tally {
                lenient: options.lenient,
                stats: ImportStats::default(),
            },
            last_arrival: 0,
        })
    }

    /// The next task, or `None` once the trace is exhausted.
    pub fn next_task(&mut self) -> Result<Option<TraceTask>, ImportError> {
        let task = self.reader.next_task(&mut self.tally)?;
        if let Some(t) = &task {
            // Each reader checks its file's order; this is the contract the
            // tenant relies on.
            debug_assert!(t.arrival >= self.last_arrival);
            self.last_arrival = self.last_arrival.max(t.arrival);
            self.tally.stats.tasks += 1;
        }
        Ok(task)
    }

    pub fn stats(&self) -> ImportStats {
        self.tally.stats
    }
}

/// Reads a whole streamed trace and returns its counts and defects: `dcemu
/// validate`, and the bounded-memory benchmark. Memory stays that of one
/// stream.
pub fn scan(spec: &StreamSpec) -> Result<ImportStats, ImportError> {
    let mut stream = TraceStream::open(spec)?;
    while stream.next_task()?.is_some() {}
    Ok(stream.stats())
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn options() -> ImportOptions {
        ImportOptions {
            cores_per_unit: 16.0,
            gb_per_unit: 64.0,
            default_priority: 4,
            lookahead: 3_600_000_000_000,
            run_end: 10_000_000_000_000,
            lenient: false,
            machine_cores: None,
            kill_at_request: false,
            collections: None,
            known_machines: None,
        }
    }

    /// Every task of `text` read as `format`, or the first error.
    pub fn read(
        format: TraceFormat,
        text: &str,
        options: &ImportOptions,
    ) -> Result<(Vec<TraceTask>, ImportStats), ImportError> {
        let lines = lines::Lines::new(
            "t",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        );
        let mut s = TraceStream::from_lines(lines, format, options)?;
        let mut out = Vec::new();
        while let Some(t) = s.next_task()? {
            out.push(t);
        }
        Ok((out, s.stats()))
    }
}
