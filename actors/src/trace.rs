//! Trace files: the tasks a workload tenant replays, one CSV row each.
//!
//! The format is documented for users in `docs/traces.md`. In short: a
//! header row naming the columns `arrival_s`, `priority`, `cpu`,
//! `memory_gb`, `duration_s` and optionally `app` (in any order), then one
//! row per task in non-decreasing order of arrival. Lines whose first
//! non-blank character is `#` are comments; blank lines are ignored.
//!
//! Times are written as plain decimal seconds and converted to integer
//! nanoseconds exactly, from the decimal text (never through `f64`), so
//! `0.1` is exactly 100,000,000 ns on every machine (MODEL.md §2). More
//! than nine decimal places are refused unless the extra digits are zeros.
//!
//! Every problem is a [`TraceError`] naming the file and, where it has one,
//! the 1-based line and the column, e.g.
//! `traces/x.csv:17: column `duration_s`: must be a positive number of
//! seconds, got -3`. Nothing read from the file reaches an `unwrap()`.

use std::fmt;
use std::io::BufRead;
use std::path::Path;

use dcemu_topology::SimTime;

/// Highest priority class. Priorities are those of the Google cluster trace
/// (thesis Table 5.2): 0 (lowest) to 11 (highest); 0–1 are "gratis", 2–8
/// "middle" and 9–11 "production" classes.
pub const MAX_PRIORITY: u8 = 11;

/// Longest value (or column name) accepted in a trace file, in bytes.
pub const MAX_FIELD_BYTES: usize = 256;

/// Columns every trace must have.
pub const REQUIRED_COLUMNS: [&str; 5] = ["arrival_s", "priority", "cpu", "memory_gb", "duration_s"];

/// Columns a trace may have.
pub const OPTIONAL_COLUMNS: [&str; 1] = ["app"];

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Column indices into [`Columns::at`], in canonical order.
const ARRIVAL: usize = 0;
const PRIORITY: usize = 1;
const CPU: usize = 2;
const MEMORY: usize = 3;
const DURATION: usize = 4;
const APP: usize = 5;
const ALL_COLUMNS: [&str; 6] = [
    "arrival_s",
    "priority",
    "cpu",
    "memory_gb",
    "duration_s",
    "app",
];

/// One task of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceTask {
    /// When the tenant submits the task: nanoseconds since the start of the run.
    pub arrival: SimTime,
    /// Priority class, `0..=`[`MAX_PRIORITY`] (Google trace classes, thesis
    /// Table 5.2); higher is more important.
    pub priority: u8,
    /// CPU demand in cores; positive and finite.
    pub cpu: f64,
    /// Memory demand in GB; non-negative and finite.
    pub memory_gb: f64,
    /// Nanoseconds, > 0: the task's run time alone on one full core of speed 1.
    pub duration: SimTime,
    /// What the task runs.
    pub app: AppRef,
    /// 1-based line of the task's row in the file, for later error messages.
    pub line: u64,
    /// The run time its submitter requested, ns (SWF field 9); 0: none.
    pub requested: SimTime,
    /// The job it belongs to, where the trace says (Alibaba, Google).
    pub job: Option<Box<TraceJob>>,
}

/// What a trace records of the job a task belongs to (issue 41): the
/// tenant runs the job's tasks as the trace's system did
/// ([`crate::trace_jobs`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceJob {
    /// The job's key: Google's job ID (2011) or collection ID (2019);
    /// Alibaba's `job_name` hashed ([`job_key`]).
    pub key: u64,
    /// Alibaba 2018: the task's number in its job's DAG and the numbers of
    /// the tasks it starts after; `None` for a task outside any DAG.
    pub dag: Option<DagTask>,
    /// Google 2011's different-machine restriction: the task never shares
    /// a server with another running task of its job that has it.
    pub apart: bool,
}

/// A task's place in its job's DAG, from Alibaba's `task_name`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DagTask {
    pub task: u32,
    /// The tasks of the same job it waits for; may be empty (a root).
    pub after: Vec<u32>,
}

/// A job name as a key: 64-bit FNV-1a, the same on every platform. Two of
/// Alibaba 2018's four million job names colliding has odds below 1e-6.
pub fn job_key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What a trace task runs, from the `app` column.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AppRef {
    /// An application family such as `single-threaded`: the tenant picks a
    /// profile of that family. Written as the bare name.
    Family(String),
    /// A profile of the application catalog by id. Written `app:17`.
    Profile(u32),
    /// The `app` column is empty or absent: the tenant decides.
    #[default]
    None,
}

impl fmt::Display for AppRef {
    /// As written in a trace: `single-threaded`, `app:17`, or nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppRef::Family(name) => f.write_str(name),
            AppRef::Profile(id) => write!(f, "app:{id}"),
            AppRef::None => Ok(()),
        }
    }
}

/// Why a trace was refused. `path` is the file's path or, for
/// [`parse_trace`], the label it was given.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: cannot read the trace file: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// A task row (or a line that should have been one) is wrong.
    #[error("{path}:{line}: {}{problem}", column_prefix(.column))]
    Row {
        path: String,
        /// 1-based line in the file.
        line: u64,
        /// The column (header name) of the offending value, when one is to blame.
        column: Option<String>,
        problem: String,
    },
    /// The header row is wrong: a column is unknown, repeated or missing.
    #[error("{path}:{line}: header: {problem}")]
    Header {
        path: String,
        /// 1-based line of the header row in the file.
        line: u64,
        problem: String,
    },
    /// No header, or a header and no task rows.
    #[error(
        "{path}: the trace has no tasks: it needs a header row and at least one task row (see docs/traces.md)"
    )]
    Empty { path: String },
}

fn column_prefix(column: &Option<String>) -> String {
    match column {
        Some(c) => format!("column `{c}`: "),
        None => String::new(),
    }
}

/// Reads and checks the trace file at `path`.
pub fn read_trace(path: &Path) -> Result<Vec<TraceTask>, TraceError> {
    let label = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
        path: label.clone(),
        source,
    })?;
    collect(CsvTraceReader::new(
        &label,
        std::io::BufReader::with_capacity(64 * 1024, file),
    )?)
}

/// Checks a trace held in memory; `label` names it in errors.
pub fn parse_trace(label: &str, text: &str) -> Result<Vec<TraceTask>, TraceError> {
    parse_trace_bytes(label, text.as_bytes())
}

/// [`parse_trace`] on raw bytes, which need not be UTF-8: a value that is
/// not UTF-8 is an error naming its line and column.
pub fn parse_trace_bytes(label: &str, bytes: &[u8]) -> Result<Vec<TraceTask>, TraceError> {
    collect(CsvTraceReader::new(label, bytes)?)
}

fn collect<R: BufRead>(mut reader: CsvTraceReader<R>) -> Result<Vec<TraceTask>, TraceError> {
    let mut tasks = Vec::new();
    while let Some(t) = reader.next_task()? {
        tasks.push(t);
    }
    Ok(tasks)
}

/// A trace read one row at a time, in the memory of a few lines whatever
/// the file's length: the same checks and errors as [`parse_trace_bytes`]
/// (which collects it), row by row. The header is read by [`Self::new`];
/// a trace without task rows is [`TraceError::Empty`] when the end is reached.
pub struct CsvTraceReader<R: BufRead> {
    label: String,
    reader: csv::Reader<ContentStream<R>>,
    record: csv::ByteRecord,
    columns: Columns,
    header_line: u64,
    /// Arrival and line of the previous row.
    prev: Option<(SimTime, u64)>,
    rows: u64,
}

impl<R: BufRead> CsvTraceReader<R> {
    /// Reads the header of the trace `input`; `label` names it in errors.
    pub fn new(label: &str, input: R) -> Result<Self, TraceError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(false)
            .trim(csv::Trim::All)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_reader(ContentStream::new(input));
        let mut record = csv::ByteRecord::new();
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Err(io_or_empty(label, &reader)),
            Err(e) => return Err(csv_error(label, reader.get_ref(), &e, 0)),
        }
        let header_line = reader.get_ref().line_at(record_byte(&record));
        let columns = Columns::from_header(&record).map_err(|problem| TraceError::Header {
            path: label.to_string(),
            line: header_line,
            problem,
        })?;
        Ok(CsvTraceReader {
            label: label.to_string(),
            reader,
            record,
            columns,
            header_line,
            prev: None,
            rows: 0,
        })
    }

    /// The next task, `None` after the last.
    pub fn next_task(&mut self) -> Result<Option<TraceTask>, TraceError> {
        let label = self.label.as_str();
        match self.reader.read_byte_record(&mut self.record) {
            Ok(true) => {}
            Ok(false) if self.rows == 0 => return Err(io_or_empty(label, &self.reader)),
            Ok(false) => return Ok(None),
            Err(e) => {
                return Err(csv_error(
                    label,
                    self.reader.get_ref(),
                    &e,
                    self.header_line,
                ));
            }
        }
        let at = record_byte(&self.record);
        let line = self.reader.get_ref().line_at(at);
        self.reader.get_mut().forget_before(at);
        let row_err = |column: &str, problem: String| TraceError::Row {
            path: label.to_string(),
            line,
            column: Some(column.to_string()),
            problem,
        };
        let task = self
            .columns
            .task(&self.record, line)
            .map_err(|(column, problem)| row_err(column, problem))?;
        if let Some((arrival, prev_line)) = self.prev {
            if task.arrival < arrival {
                return Err(row_err(
                    ALL_COLUMNS[ARRIVAL],
                    format!(
                        "arrival {} s is earlier than {} s on line {}: rows must be in non-decreasing order of arrival",
                        seconds_text(task.arrival),
                        seconds_text(arrival),
                        prev_line
                    ),
                ));
            }
        }
        self.prev = Some((task.arrival, task.line));
        self.rows += 1;
        Ok(Some(task))
    }
}

/// At the end of the input: a read error the stream kept, or no tasks.
fn io_or_empty<R: BufRead>(label: &str, reader: &csv::Reader<ContentStream<R>>) -> TraceError {
    match reader.get_ref().failed() {
        Some(source) => TraceError::Io {
            path: label.to_string(),
            source,
        },
        None => TraceError::Empty {
            path: label.to_string(),
        },
    }
}

/// The lines of a file that are neither blank nor comments, joined with
/// `\n`, as a stream, with the file line each recent one starts at. The csv
/// crate's own line count does not count comment and blank lines, so they
/// are dropped here and lines are found from byte offsets instead. Only the
/// lines from the current record on are remembered.
struct ContentStream<R> {
    input: R,
    /// File lines read.
    line: u64,
    /// The raw line being read, and the content line being handed out.
    raw: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    /// Offset in the stream of `out`'s first byte.
    offset: u64,
    /// `(offset in the stream, 1-based line in the file)`, ascending.
    starts: std::collections::VecDeque<(u64, u64)>,
    /// A read error, kept for the caller (the csv crate reports it as its own).
    error: Option<std::io::ErrorKind>,
}

impl<R: BufRead> ContentStream<R> {
    fn new(input: R) -> Self {
        ContentStream {
            input,
            line: 0,
            raw: Vec::new(),
            out: Vec::new(),
            pos: 0,
            offset: 0,
            starts: std::collections::VecDeque::new(),
            error: None,
        }
    }

    fn failed(&self) -> Option<std::io::Error> {
        self.error.map(std::io::Error::from)
    }

    /// The next content line into `out`; `false` at the end of the input.
    fn fill(&mut self) -> std::io::Result<bool> {
        loop {
            self.raw.clear();
            if self.input.read_until(b'\n', &mut self.raw)? == 0 {
                return Ok(false);
            }
            self.line += 1;
            let mut l = self.raw.as_slice();
            if self.line == 1 {
                l = l.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(l);
            }
            let l = l.strip_suffix(b"\n").unwrap_or(l);
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            let trimmed = l.trim_ascii();
            if trimmed.is_empty() || trimmed.starts_with(b"#") {
                continue;
            }
            self.offset += self.out.len() as u64;
            self.out.clear();
            self.out.extend_from_slice(l);
            self.out.push(b'\n');
            self.pos = 0;
            self.starts.push_back((self.offset, self.line));
            return Ok(true);
        }
    }

    /// The file line of the content line holding byte `offset` of the stream.
    fn line_at(&self, offset: u64) -> u64 {
        let i = self.starts.partition_point(|&(start, _)| start <= offset);
        match i.checked_sub(1).and_then(|i| self.starts.get(i)) {
            Some(&(_, line)) => line,
            None => self.starts.front().map_or(1, |&(_, line)| line),
        }
    }

    /// Forgets the lines that end before byte `offset` (a record read).
    fn forget_before(&mut self, offset: u64) {
        while self.starts.len() > 1 && self.starts.get(1).is_some_and(|&(s, _)| s <= offset) {
            self.starts.pop_front();
        }
    }
}

impl<R: BufRead> std::io::Read for ContentStream<R> {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.out.len() {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    self.error = Some(e.kind());
                    return Err(e);
                }
            }
        }
        let n = dst.len().min(self.out.len() - self.pos);
        dst[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn record_byte(record: &csv::ByteRecord) -> u64 {
    record.position().map_or(0, |p| p.byte())
}

fn csv_error<R: BufRead>(
    label: &str,
    content: &ContentStream<R>,
    e: &csv::Error,
    header_line: u64,
) -> TraceError {
    if let (csv::ErrorKind::Io(_), Some(source)) = (e.kind(), content.error) {
        return TraceError::Io {
            path: label.to_string(),
            source: source.into(),
        };
    }
    let byte = e.position().map_or(0, |p| p.byte());
    let problem = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "the row has {len} values but the header (line {header_line}) names {expected_len} columns"
        ),
        _ => format!("not readable as CSV: {e}"),
    };
    TraceError::Row {
        path: label.to_string(),
        line: content.line_at(byte),
        column: None,
        problem,
    }
}

/// Where each known column is in the rows, in canonical order.
struct Columns {
    at: [Option<usize>; 6],
}

type ValueError = (&'static str, String);

impl Columns {
    fn from_header(record: &csv::ByteRecord) -> Result<Self, String> {
        let mut names: Vec<&str> = Vec::with_capacity(record.len());
        for (i, raw) in record.iter().enumerate() {
            if raw.len() > MAX_FIELD_BYTES {
                return Err(format!(
                    "column {} has a name of {} bytes, more than the {MAX_FIELD_BYTES} allowed",
                    i + 1,
                    raw.len()
                ));
            }
            let name = std::str::from_utf8(raw)
                .map_err(|_| format!("the name of column {} is not valid UTF-8", i + 1))?;
            names.push(name.trim());
        }
        let expected = "the columns are arrival_s, priority, cpu, memory_gb, duration_s \
                        and optionally app, in any order (names are case-sensitive)";
        let unknown: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| !ALL_COLUMNS.contains(n))
            .map(|(i, n)| {
                if n.is_empty() {
                    format!("an empty name (column {}; a trailing comma?)", i + 1)
                } else {
                    format!("`{n}`")
                }
            })
            .collect();
        if !unknown.is_empty() {
            let hint = if unknown.len() == names.len() {
                " (the first line that is neither blank nor a comment must be the header)"
            } else {
                ""
            };
            let s = if unknown.len() == 1 { "" } else { "s" };
            return Err(format!(
                "unknown column{s} {}: {expected}{hint}",
                unknown.join(", ")
            ));
        }
        let mut at = [None; 6];
        for (i, name) in names.iter().enumerate() {
            let Some(k) = ALL_COLUMNS.iter().position(|c| c == name) else {
                continue;
            };
            if let Some(first) = at[k] {
                return Err(format!(
                    "column `{name}` appears twice (columns {} and {})",
                    first + 1,
                    i + 1
                ));
            }
            at[k] = Some(i);
        }
        let missing: Vec<String> = REQUIRED_COLUMNS
            .iter()
            .zip(at)
            .filter(|(_, i)| i.is_none())
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        if !missing.is_empty() {
            let s = if missing.len() == 1 { "" } else { "s" };
            return Err(format!(
                "missing required column{s} {}: {expected}",
                missing.join(", ")
            ));
        }
        Ok(Columns { at })
    }

    /// The trimmed text of column `k` of a row.
    fn value<'r>(&self, record: &'r csv::ByteRecord, k: usize) -> Result<&'r str, ValueError> {
        let name = ALL_COLUMNS[k];
        let Some(raw) = self.at[k].and_then(|i| record.get(i)) else {
            return Ok("");
        };
        if raw.len() > MAX_FIELD_BYTES {
            return Err((
                name,
                format!(
                    "the value is {} bytes long, more than the {MAX_FIELD_BYTES} allowed",
                    raw.len()
                ),
            ));
        }
        let text = std::str::from_utf8(raw).map_err(|e| {
            (
                name,
                format!(
                    "the value is not valid UTF-8 (bad byte at offset {} of the value)",
                    e.valid_up_to()
                ),
            )
        })?;
        if text.contains('\n') {
            return Err((
                name,
                "a value cannot span lines (is a quote unbalanced?)".into(),
            ));
        }
        Ok(text.trim())
    }

    fn task(&self, record: &csv::ByteRecord, line: u64) -> Result<TraceTask, ValueError> {
        let required = |k: usize, what: &str| -> Result<&str, ValueError> {
            let v = self.value(record, k)?;
            if v.is_empty() {
                Err((ALL_COLUMNS[k], format!("a value is required: {what}")))
            } else {
                Ok(v)
            }
        };

        let name = ALL_COLUMNS[ARRIVAL];
        let raw = required(
            ARRIVAL,
            "the arrival time in seconds since the start of the run",
        )?;
        let arrival = parse_seconds(raw).map_err(|e| (name, seconds_problem(e, raw, false)))?;

        let name = ALL_COLUMNS[PRIORITY];
        let raw = required(PRIORITY, "a priority class from 0 to 11")?;
        let priority = Some(raw)
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u8>().ok())
            .filter(|&p| p <= MAX_PRIORITY)
            .ok_or_else(|| {
                (
                    name,
                    format!(
                        "must be a priority class from 0 to {MAX_PRIORITY} (Google trace: 0-1 gratis, \
                         2-8 middle, 9-11 production), got {raw}"
                    ),
                )
            })?;

        let name = ALL_COLUMNS[CPU];
        let raw = required(CPU, "the CPU demand in cores")?;
        let cpu = raw
            .parse::<f64>()
            .ok()
            .filter(|c| c.is_finite() && *c > 0.0)
            .ok_or_else(|| {
                (
                    name,
                    format!("must be a positive number of cores, got {raw}"),
                )
            })?;

        let name = ALL_COLUMNS[MEMORY];
        let raw = required(MEMORY, "the memory demand in GB (0 for none)")?;
        let memory_gb = raw
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m >= 0.0)
            // -0 is read as 0, so no negative zero reaches the model.
            .map(|m| if m == 0.0 { 0.0 } else { m })
            .ok_or_else(|| {
                (
                    name,
                    format!("must be a non-negative number of GB, got {raw}"),
                )
            })?;

        let name = ALL_COLUMNS[DURATION];
        let raw = required(
            DURATION,
            "the run time in seconds alone on one full core of speed 1",
        )?;
        let duration = parse_seconds(raw)
            .and_then(|d| {
                if d == 0 {
                    Err(SecondsError::BelowRange)
                } else {
                    Ok(d)
                }
            })
            .map_err(|e| (name, seconds_problem(e, raw, true)))?;

        let raw = self.value(record, APP)?;
        let app = parse_app(raw).map_err(|p| (ALL_COLUMNS[APP], p))?;

        Ok(TraceTask {
            arrival,
            priority,
            cpu,
            memory_gb,
            duration,
            app,
            line,
            requested: 0,
            job: None,
        })
    }
}

/// Why a time in seconds was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SecondsError {
    /// Below the allowed range (negative, or zero where it must be positive).
    BelowRange,
    Malformed,
    TooFine,
    Overflow,
}

/// Exact conversion of plain decimal seconds (`12`, `0.25`, `1.000000001`)
/// to nanoseconds: digits, optionally a `.` and more digits; no sign, no
/// exponent. Digits past the ninth decimal place must be zeros.
pub(crate) fn parse_seconds(s: &str) -> Result<SimTime, SecondsError> {
    if s.starts_with('-') {
        return Err(SecondsError::BelowRange);
    }
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) if !f.is_empty() => (w, f),
        Some(_) => return Err(SecondsError::Malformed),
        None => (s, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) {
        return Err(SecondsError::Malformed);
    }
    let mut secs: u64 = 0;
    for b in whole.bytes() {
        secs = secs
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(SecondsError::Overflow)?;
    }
    let (significant, rest) = frac.split_at(frac.len().min(9));
    if rest.bytes().any(|b| b != b'0') {
        return Err(SecondsError::TooFine);
    }
    let mut nanos: u64 = 0;
    for b in significant.bytes() {
        nanos = nanos * 10 + u64::from(b - b'0');
    }
    for _ in significant.len()..9 {
        nanos *= 10;
    }
    secs.checked_mul(NANOS_PER_SEC)
        .and_then(|ns| ns.checked_add(nanos))
        .ok_or(SecondsError::Overflow)
}

fn seconds_problem(e: SecondsError, raw: &str, positive: bool) -> String {
    let range = if positive {
        "must be a positive number of seconds"
    } else {
        "must be a non-negative number of seconds"
    };
    match e {
        SecondsError::BelowRange => format!("{range}, got {raw}"),
        SecondsError::Malformed => format!(
            "{range} written as plain decimal digits such as 12 or 0.25 (no sign, no exponent), got {raw}"
        ),
        SecondsError::TooFine => format!(
            "{raw} s is finer than the 1 ns resolution of virtual time (at most 9 decimal places)"
        ),
        SecondsError::Overflow => format!(
            "{raw} s is too large: virtual time ends at 18446744073.709551615 s (about 584 years)"
        ),
    }
}

/// Nanoseconds as exact decimal seconds, as a trace would write them.
fn seconds_text(ns: SimTime) -> String {
    let (secs, frac) = (ns / NANOS_PER_SEC, ns % NANOS_PER_SEC);
    if frac == 0 {
        secs.to_string()
    } else {
        let frac = format!("{frac:09}");
        format!("{secs}.{}", frac.trim_end_matches('0'))
    }
}

fn parse_app(raw: &str) -> Result<AppRef, String> {
    if raw.is_empty() {
        return Ok(AppRef::None);
    }
    if let Some(id) = raw.strip_prefix("app:") {
        return Some(id)
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u32>().ok())
            .map(AppRef::Profile)
            .ok_or_else(|| {
                format!(
                    "`{raw}` is not a profile reference: write app:<id> with a catalog id \
                     from 0 to {}",
                    u32::MAX
                )
            });
    }
    let family_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if raw.starts_with(|c: char| c.is_ascii_alphanumeric()) && raw.chars().all(family_char) {
        Ok(AppRef::Family(raw.to_string()))
    } else {
        Err(format!(
            "`{raw}` is neither a family name (ASCII letters, digits, '-', '_', '.', \
             starting with a letter or digit) nor a profile reference app:<id>"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "traces/x.csv";

    fn parse(text: &str) -> Result<Vec<TraceTask>, TraceError> {
        parse_trace(FILE, text)
    }

    /// The line, column and message of a row error; fails the test otherwise.
    fn row_error(text: &str) -> (u64, Option<String>, String) {
        let e = parse(text).expect_err("a bad trace");
        let msg = e.to_string();
        let TraceError::Row {
            path, line, column, ..
        } = e
        else {
            panic!("expected a row error, got {e:?}");
        };
        assert_eq!(path, FILE);
        assert!(msg.starts_with(&format!("{FILE}:{line}: ")), "{msg}");
        if let Some(c) = &column {
            assert!(msg.contains(&format!("column `{c}`: ")), "{msg}");
        }
        (line, column, msg)
    }

    fn header_error(text: &str) -> (u64, String) {
        let e = parse(text).expect_err("a bad trace");
        let msg = e.to_string();
        let TraceError::Header { path, line, .. } = e else {
            panic!("expected a header error, got {e:?}");
        };
        assert_eq!(path, FILE);
        assert!(
            msg.starts_with(&format!("{FILE}:{line}: header: ")),
            "{msg}"
        );
        (line, msg)
    }

    const HEADER: &str = "arrival_s,priority,cpu,memory_gb,duration_s,app\n";

    #[test]
    fn good_file_parses_to_exact_values() {
        let text = "\u{feff}# a trace for tests\n\
                    \n\
                    # columns reordered, spaces around values\n\
                    app , duration_s,cpu,priority, memory_gb,arrival_s\r\n\
                    single-threaded,0.1,0.5,0,1.25,0\r\n\
                    \r\n\
                    \x20\x20\x20\n\
                    # a comment between rows\n\
                    \x20\x20# an indented comment\n\
                    app:17,1.000000001,2,11,0,0.1\n\
                    ,3600,1e-3,5,-0,0.1\n\
                    \"app:0\",\"2.5\",4,9,64,18446744073.709551615\n";
        let tasks = parse(text).expect("good trace");
        assert_eq!(
            tasks,
            vec![
                TraceTask {
                    arrival: 0,
                    priority: 0,
                    cpu: 0.5,
                    memory_gb: 1.25,
                    duration: 100_000_000,
                    app: AppRef::Family("single-threaded".into()),
                    line: 5,
                    requested: 0,
                    job: None,
                },
                TraceTask {
                    arrival: 100_000_000,
                    priority: 11,
                    cpu: 2.0,
                    memory_gb: 0.0,
                    duration: 1_000_000_001,
                    app: AppRef::Profile(17),
                    line: 10,
                    requested: 0,
                    job: None,
                },
                TraceTask {
                    arrival: 100_000_000,
                    priority: 5,
                    cpu: 0.001,
                    memory_gb: 0.0,
                    duration: 3_600 * NANOS_PER_SEC,
                    app: AppRef::None,
                    line: 11,
                    requested: 0,
                    job: None,
                },
                TraceTask {
                    arrival: u64::MAX,
                    priority: 9,
                    cpu: 4.0,
                    memory_gb: 64.0,
                    duration: 2_500_000_000,
                    app: AppRef::Profile(0),
                    line: 12,
                    requested: 0,
                    job: None,
                },
            ]
        );
        // -0 memory is stored as +0.
        assert!(tasks[2].memory_gb.is_sign_positive());
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../docs/traces.md");
        let example = doc
            .split("```csv\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/traces.md has a ```csv example");
        let tasks = parse(example).expect("the documented example parses");
        let got: Vec<_> = tasks
            .iter()
            .map(|t| (t.arrival, t.priority, t.duration, t.app.clone(), t.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    0,
                    0,
                    100_000_000,
                    AppRef::Family("single-threaded".into()),
                    4
                ),
                (
                    100_000_000,
                    11,
                    3_600 * NANOS_PER_SEC,
                    AppRef::Profile(17),
                    5
                ),
                (12_000_000_001, 5, 30 * NANOS_PER_SEC, AppRef::None, 7),
            ]
        );
    }

    #[test]
    fn a_long_trace_is_read_in_the_memory_of_a_few_lines() {
        let mut text = HEADER.to_string();
        for i in 0..20_000u64 {
            text.push_str(&format!("{i},1,1,1,1,\n# c\n"));
        }
        let mut r = CsvTraceReader::new(FILE, text.as_bytes()).expect("header");
        let mut n = 0;
        let mut most = 0;
        while let Some(t) = r.next_task().expect("good") {
            assert_eq!(t.line, 2 + 2 * n);
            n += 1;
            most = most.max(r.reader.get_ref().starts.len());
        }
        assert_eq!(n, 20_000);
        // lines the csv crate's 8 KiB buffer reads ahead, not the file
        assert!(most < 2_000, "{most} line starts held");
    }

    #[test]
    fn app_column_may_be_absent() {
        let text = "duration_s,memory_gb,cpu,priority,arrival_s\n30,2,1,3,0.000000001\n";
        let tasks = parse(text).expect("good trace");
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].app, AppRef::None);
        assert_eq!(tasks[0].arrival, 1);
        assert_eq!(tasks[0].duration, 30 * NANOS_PER_SEC);
        assert_eq!(tasks[0].line, 2);
    }

    #[test]
    fn the_issue_example_reads_as_documented() {
        let mut text = String::from(HEADER);
        for i in 0..15 {
            text.push_str(&format!("{i},1,1,1,10,\n"));
        }
        text.push_str("15,1,1,1,-3,\n");
        let e = parse(&text).expect_err("negative duration");
        assert_eq!(
            e.to_string(),
            "traces/x.csv:17: column `duration_s`: must be a positive number of seconds, got -3"
        );
    }

    #[test]
    fn missing_required_column_names_the_header_line_and_column() {
        let (line, msg) = header_error("# comment\n\narrival_s,priority,cpu,memory_gb\n0,1,1,1\n");
        assert_eq!(line, 3);
        assert!(
            msg.contains("missing required column `duration_s`"),
            "{msg}"
        );
        let (_, msg) = header_error("arrival_s,cpu,memory_gb,app\n0,1,1,\n");
        assert!(msg.contains("`priority`, `duration_s`"), "{msg}");
    }

    #[test]
    fn unknown_column_is_named() {
        let (line, msg) =
            header_error("#\narrival_s,priority,cpu,memory_gb,durtion_s,app\n0,1,1,1,1,\n");
        assert_eq!(line, 2);
        assert!(msg.contains("unknown column `durtion_s`"), "{msg}");
        let (_, msg) = header_error("Arrival_s,priority,cpu,memory_gb,duration_s\n0,1,1,1,1\n");
        assert!(
            msg.contains("`Arrival_s`") && msg.contains("case-sensitive"),
            "{msg}"
        );
        let (_, msg) = header_error("arrival_s,priority,cpu,memory_gb,duration_s,\n0,1,1,1,1,\n");
        assert!(msg.contains("empty name (column 6"), "{msg}");
        // A file that starts with data instead of a header.
        let (line, msg) = header_error("0,1,1,1,1\n");
        assert_eq!(line, 1);
        assert!(msg.contains("must be the header"), "{msg}");
    }

    #[test]
    fn duplicate_column_is_an_error() {
        let (_, msg) =
            header_error("arrival_s,priority,cpu,memory_gb,cpu,duration_s\n0,1,1,1,1,1\n");
        assert!(
            msg.contains("column `cpu` appears twice (columns 3 and 5)"),
            "{msg}"
        );
    }

    #[test]
    fn non_numeric_cpu() {
        let (line, col, msg) = row_error(&format!("{HEADER}0,1,1,1,1,\n# c\n1,1,two,1,1,\n"));
        assert_eq!((line, col.as_deref()), (4, Some("cpu")));
        assert!(
            msg.ends_with("must be a positive number of cores, got two"),
            "{msg}"
        );
        for bad in ["0", "-1", "inf", "NaN", "1e999", ""] {
            let (line, col, _) = row_error(&format!("{HEADER}0,1,{bad},1,1,\n"));
            assert_eq!((line, col.as_deref()), (2, Some("cpu")), "{bad}");
        }
    }

    #[test]
    fn negative_and_zero_duration() {
        let (line, col, msg) = row_error(&format!("{HEADER}0,1,1,1,-3,\n"));
        assert_eq!((line, col.as_deref()), (2, Some("duration_s")));
        assert!(
            msg.ends_with("must be a positive number of seconds, got -3"),
            "{msg}"
        );
        for zero in ["0", "0.0", "0.000000000000"] {
            let (line, col, msg) = row_error(&format!("{HEADER}\n0,1,1,1,{zero},\n"));
            assert_eq!((line, col.as_deref()), (3, Some("duration_s")));
            assert!(msg.ends_with(&format!("got {zero}")), "{msg}");
        }
    }

    #[test]
    fn priority_out_of_range() {
        let (line, col, msg) = row_error(&format!("{HEADER}0,11,1,1,1,\n0,12,1,1,1,\n"));
        assert_eq!((line, col.as_deref()), (3, Some("priority")));
        assert!(
            msg.contains("from 0 to 11") && msg.ends_with("got 12"),
            "{msg}"
        );
        for bad in ["-1", "256", "1.0", "+3", "high", ""] {
            let (_, col, _) = row_error(&format!("{HEADER}0,{bad},1,1,1,\n"));
            assert_eq!(col.as_deref(), Some("priority"), "{bad}");
        }
    }

    #[test]
    fn out_of_order_arrival_names_both_lines() {
        let (line, col, msg) =
            row_error(&format!("{HEADER}5,1,1,1,1,\n7,1,1,1,1,\n\n6.5,1,1,1,1,\n"));
        assert_eq!((line, col.as_deref()), (5, Some("arrival_s")));
        assert!(msg.contains("6.5 s is earlier than 7 s on line 3"), "{msg}");
    }

    #[test]
    fn wrong_field_count() {
        let (line, col, msg) = row_error(&format!("{HEADER}0,1,1,1,1,\n# c\n\n0,1,1,1,1\n"));
        assert_eq!((line, col), (5, None));
        assert!(
            msg.contains("5 values but the header (line 1) names 6 columns"),
            "{msg}"
        );
        let (line, _, _) = row_error(&format!("{HEADER}0,1,1,1,1,,\n"));
        assert_eq!(line, 2);
    }

    #[test]
    fn bad_app_reference() {
        for bad in [
            "app:x",
            "app:",
            "app:-1",
            "app:4294967296",
            "App:1",
            "two words",
            "-x",
        ] {
            let (line, col, msg) = row_error(&format!("{HEADER}#\n0,1,1,1,1,{bad}\n"));
            assert_eq!((line, col.as_deref()), (3, Some("app")), "{bad}");
            assert!(msg.contains(&format!("`{bad}`")), "{msg}");
        }
    }

    #[test]
    fn empty_file_and_header_only() {
        for text in [
            "",
            "\n\n",
            "# only a comment\n",
            HEADER,
            "# c\n\narrival_s,priority,cpu,memory_gb,duration_s\n\n",
        ] {
            match parse(text) {
                Err(e @ TraceError::Empty { .. }) => {
                    assert!(e.to_string().starts_with("traces/x.csv: "), "{e}");
                }
                other => panic!("{text:?}: expected Empty, got {other:?}"),
            }
        }
        // A bad header is reported even when there are no rows.
        header_error("arrival_s,bogus\n");
    }

    #[test]
    fn non_utf8_bytes_name_line_and_column() {
        let mut bytes = HEADER.as_bytes().to_vec();
        bytes.extend_from_slice(b"0,1,1,1,1,ok\n# \xff in a comment is fine\n1,1,1,1,1,caf\xe9\n");
        let e = parse_trace_bytes(FILE, &bytes).expect_err("bad UTF-8");
        let TraceError::Row {
            line, ref column, ..
        } = e
        else {
            panic!("expected a row error, got {e:?}");
        };
        assert_eq!((line, column.as_deref()), (4, Some("app")));
        assert!(e.to_string().contains("not valid UTF-8"), "{e}");

        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, &bytes).expect("write");
        let e = read_trace(&path).expect_err("bad UTF-8");
        assert!(
            e.to_string()
                .starts_with(&format!("{}:4: column `app`: ", path.display())),
            "{e}"
        );

        let e = parse_trace_bytes(FILE, b"arrival_s,\xff\n").expect_err("bad header");
        assert!(matches!(e, TraceError::Header { line: 1, .. }), "{e:?}");
    }

    #[test]
    fn read_trace_reads_a_file_and_names_a_missing_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("good.csv");
        std::fs::write(&path, format!("{HEADER}0.5,3,1,2,10,app:3\n")).expect("write");
        let tasks = read_trace(&path).expect("good trace");
        assert_eq!(tasks[0].arrival, 500_000_000);

        let missing = dir.path().join("missing.csv");
        let e = read_trace(&missing).expect_err("missing file");
        assert!(
            matches!(&e, TraceError::Io { path, .. } if *path == missing.display().to_string())
        );
        assert!(
            e.to_string().starts_with(&missing.display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn too_long_values_and_multiline_quotes_are_refused() {
        let long = "a".repeat(MAX_FIELD_BYTES + 1);
        let (line, col, msg) = row_error(&format!("{HEADER}0,1,1,1,1,{long}\n"));
        assert_eq!((line, col.as_deref()), (2, Some("app")));
        assert!(msg.contains("more than the 256 allowed"), "{msg}");
        let ok = "a".repeat(MAX_FIELD_BYTES);
        assert!(parse(&format!("{HEADER}0,1,1,1,1,{ok}\n")).is_ok());
        let (_, msg) = header_error(&format!("{long},arrival_s\n"));
        assert!(msg.contains("more than the 256 allowed"), "{msg}");

        let (line, col, msg) = row_error(&format!("{HEADER}0,1,1,1,1,\"a\nb\"\n"));
        assert_eq!((line, col.as_deref()), (2, Some("app")));
        assert!(msg.contains("span lines"), "{msg}");
    }

    #[test]
    fn seconds_are_parsed_exactly() {
        let ok = [
            ("0", 0),
            ("0.1", 100_000_000),
            ("1.5", 1_500_000_000),
            ("007", 7 * NANOS_PER_SEC),
            ("1.000000001", 1_000_000_001),
            ("0.1000000000000", 100_000_000),
            ("18446744073.709551615", u64::MAX),
        ];
        for (s, ns) in ok {
            assert_eq!(parse_seconds(s), Ok(ns), "{s}");
            assert_eq!(parse_seconds(&seconds_text(ns)), Ok(ns), "{s}");
        }
        use SecondsError::*;
        let bad = [
            ("-1", BelowRange),
            ("-0", BelowRange),
            ("", Malformed),
            (".5", Malformed),
            ("5.", Malformed),
            ("1.2.3", Malformed),
            ("1e3", Malformed),
            ("+1", Malformed),
            ("1 000", Malformed),
            ("0x10", Malformed),
            ("0.0000000001", TooFine),
            ("18446744073.709551616", Overflow),
            ("99999999999999999999999", Overflow),
        ];
        for (s, e) in bad {
            assert_eq!(parse_seconds(s), Err(e), "{s}");
        }
        assert_eq!(seconds_text(6_500_000_000), "6.5");
        assert_eq!(seconds_text(1), "0.000000001");
    }

    #[test]
    fn time_errors_name_the_column() {
        let (line, col, msg) = row_error(&format!("{HEADER}-1,1,1,1,1,\n"));
        assert_eq!((line, col.as_deref()), (2, Some("arrival_s")));
        assert!(
            msg.ends_with("must be a non-negative number of seconds, got -1"),
            "{msg}"
        );
        let (_, col, msg) = row_error(&format!("{HEADER}1e3,1,1,1,1,\n"));
        assert_eq!(col.as_deref(), Some("arrival_s"));
        assert!(msg.contains("plain decimal digits"), "{msg}");
        let (_, col, msg) = row_error(&format!("{HEADER}0,1,1,1,0.0000000005,\n"));
        assert_eq!(col.as_deref(), Some("duration_s"));
        assert!(msg.contains("1 ns resolution"), "{msg}");
        let (_, col, _) = row_error(&format!("{HEADER}0,1,1,-2,1,\n"));
        assert_eq!(col.as_deref(), Some("memory_gb"));
        let (_, col, msg) = row_error(&format!("{HEADER}0,1,1,1,,\n"));
        assert_eq!(col.as_deref(), Some("duration_s"));
        assert!(msg.contains("a value is required"), "{msg}");
    }

    /// Mutated traces never panic, and whatever is accepted keeps the
    /// documented ranges.
    #[test]
    fn mutated_traces_never_panic() {
        let seed_text = format!(
            "# c\n{HEADER}0,1,0.5,1,0.1,single-threaded\n\n0.25,11,2,0,3,app:7\n1,0,1,1,1,\n"
        );
        let alphabet = b",\"\n\r#-.0123456789eE:app \xff\xc3\t";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..10_000 {
            let mut bytes = seed_text.as_bytes().to_vec();
            for _ in 0..1 + next() % 4 {
                let pos = (next() % (bytes.len() as u64 + 1)) as usize;
                let b = alphabet[(next() % alphabet.len() as u64) as usize];
                match next() % 3 {
                    0 => bytes.insert(pos, b),
                    1 if pos < bytes.len() => bytes[pos] = b,
                    _ if pos < bytes.len() => {
                        bytes.remove(pos);
                    }
                    _ => {}
                }
            }
            if let Ok(tasks) = parse_trace_bytes(FILE, &bytes) {
                assert!(!tasks.is_empty());
                for pair in tasks.windows(2) {
                    assert!(pair[0].arrival <= pair[1].arrival);
                    assert!(pair[0].line < pair[1].line);
                }
                for t in &tasks {
                    assert!(t.priority <= MAX_PRIORITY);
                    assert!(t.cpu.is_finite() && t.cpu > 0.0);
                    assert!(t.memory_gb.is_finite() && t.memory_gb >= 0.0);
                    assert!(t.duration > 0);
                }
            }
        }
    }
}
