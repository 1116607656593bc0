//! Reading a results directory's actor logs (`actors/<name>.jsonl`) back:
//! the engine behind `dcemu logs`, and the source of per-task series for
//! `dcemu report`.
//!
//! The logs are streamed, never loaded whole: one buffered reader per
//! selected actor file and a k-way merge on (virtual time, actor name, line
//! number), so memory stays at one line per open file whatever the size of
//! the run. Filters that can be decided per file (actor names) choose which
//! files are opened at all; `--to` stops reading a file at the first line past
//! it, since virtual time never decreases within a file (a file where it does
//! is reported as corrupt rather than merged out of order).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use dcemu_topology::SimTime;
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::Value;

/// The subdirectory of a results directory that holds the actor logs.
pub const ACTOR_DIR: &str = "actors";

/// Why the logs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogsError {
    #[error("{} does not exist (a results directory of `dcemu run` was expected)", .0.display())]
    NoDir(PathBuf),
    #[error(
        "no event of kind {kind:?} in {}{hint}; its logs hold: {}",
        .dir.display(), .kinds.join(", ")
    )]
    NoSuchKind {
        dir: PathBuf,
        kind: String,
        hint: String,
        kinds: Vec<String>,
    },
    #[error(
        "{0} has no actor logs (no {ACTOR_DIR}/ directory; was the run made with output.actor_logs = false?)"
    )]
    NoLogs(PathBuf),
    #[error("no actor log matches --actor {0}")]
    NoActorMatches(String),
    #[error("invalid actor pattern {pattern:?}: {message}")]
    BadPattern { pattern: String, message: String },
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}:{line}: not a log event: {message}")]
    BadLine {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error(
        "{path}:{line}: virtual time goes backwards ({t_ns} ns after {previous_ns} ns): the log is corrupt"
    )]
    TimeBackwards {
        path: PathBuf,
        line: u64,
        t_ns: u64,
        previous_ns: u64,
    },
}

impl LogsError {
    /// Whether the error is the input's fault (exit code 2) rather than the
    /// machine's (1).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, LogsError::Io { .. })
    }
}

/// Each of `kinds` that no event of `dir`'s logs has: an error naming the
/// first, the nearest existing kind and every kind there is (a scan of
/// every log; called only when a kind asked for matched nothing).
pub fn check_kinds(dir: &Path, kinds: &[String]) -> Result<(), StreamError> {
    let mut present = std::collections::BTreeSet::new();
    stream(dir, &Filter::default(), |e| {
        if !present.contains(e.kind) {
            present.insert(e.kind.to_string());
        }
        Ok(true)
    })?;
    match kinds.iter().find(|k| !present.contains(*k)) {
        None => Ok(()),
        Some(kind) => Err(StreamError::Logs(LogsError::NoSuchKind {
            dir: dir.to_path_buf(),
            kind: kind.clone(),
            hint: crate::suggest::did_you_mean(kind, present.iter().map(String::as_str)),
            kinds: present.into_iter().collect(),
        })),
    }
}

/// Which events to keep. Every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Actor-name globs (`server-00*`); empty: every actor.
    pub actors: Vec<glob::Pattern>,
    /// Event kinds; empty: every kind.
    pub kinds: Vec<String>,
    /// Keep events at or after this virtual time.
    pub from: Option<SimTime>,
    /// Keep events at or before this virtual time.
    pub to: Option<SimTime>,
    /// Keep events about this task or application: its id in the event's
    /// `task`, `victim` (the task a `preempt` evicts) or `job` field.
    pub task: Option<u64>,
}

impl Filter {
    /// Compiles actor globs, naming the one that is not a valid pattern.
    pub fn actor_patterns(globs: &[String]) -> Result<Vec<glob::Pattern>, LogsError> {
        globs
            .iter()
            .map(|g| {
                glob::Pattern::new(g).map_err(|e| LogsError::BadPattern {
                    pattern: g.clone(),
                    message: e.to_string(),
                })
            })
            .collect()
    }

    fn keeps_actor(&self, name: &str) -> bool {
        self.actors.is_empty() || self.actors.iter().any(|p| p.matches(name))
    }

    fn keeps(&self, head: &Head<'_>) -> bool {
        if self.from.is_some_and(|f| head.t_ns < f) {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.iter().any(|k| k == head.kind) {
            return false;
        }
        match self.task {
            None => true,
            Some(id) => [head.task, head.victim, head.job].contains(&Some(id)),
        }
    }
}

/// The fields every event has, and those `--task` looks at. Everything else
/// in the line is skipped by the parser without being built.
#[derive(Deserialize)]
struct Head<'a> {
    t_ns: u64,
    #[serde(borrow)]
    kind: &'a str,
    task: Option<u64>,
    victim: Option<u64>,
    job: Option<u64>,
}

/// One event, as handed to a sink.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub t_ns: SimTime,
    pub actor: &'a str,
    pub kind: &'a str,
    /// The event's JSON object, exactly as logged.
    pub line: &'a str,
}

impl Event<'_> {
    /// The event's fields other than `t_ns` and `kind`, in logged order.
    pub fn fields(&self) -> Result<Vec<(String, Value)>, serde_json::Error> {
        let Ordered(all) = serde_json::from_str(self.line)?;
        Ok(all
            .into_iter()
            .filter(|(k, _)| k != "t_ns" && k != "kind")
            .collect())
    }
}

/// A JSON object's members in the order they appear.
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// One actor's log being read: its next kept line is buffered.
struct Source {
    name: String,
    path: PathBuf,
    reader: BufReader<File>,
    line: String,
    line_no: u64,
    last_t: u64,
    /// Time and kind range of the buffered line (kind is a slice of `line`).
    t_ns: u64,
    kind: (usize, usize),
}

impl Source {
    /// Reads up to the next line the filter keeps; `false` at the end of
    /// the file or past `filter.to`.
    fn advance(&mut self, filter: &Filter) -> Result<bool, LogsError> {
        loop {
            self.line.clear();
            let n = self
                .reader
                .read_line(&mut self.line)
                .map_err(|source| LogsError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            let text = self.line.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                continue;
            }
            let head: Head<'_> = serde_json::from_str(text).map_err(|e| LogsError::BadLine {
                path: self.path.clone(),
                line: self.line_no,
                message: e.to_string(),
            })?;
            if head.t_ns < self.last_t {
                return Err(LogsError::TimeBackwards {
                    path: self.path.clone(),
                    line: self.line_no,
                    t_ns: head.t_ns,
                    previous_ns: self.last_t,
                });
            }
            self.last_t = head.t_ns;
            if filter.to.is_some_and(|to| head.t_ns > to) {
                return Ok(false);
            }
            if filter.keeps(&head) {
                let start = head.kind.as_ptr() as usize - self.line.as_ptr() as usize;
                self.t_ns = head.t_ns;
                self.kind = (start, start + head.kind.len());
                return Ok(true);
            }
        }
    }
}

/// The actor names that have a log in `dir` and that `filter` keeps, sorted.
pub fn actor_files(dir: &Path, filter: &Filter) -> Result<Vec<(String, PathBuf)>, LogsError> {
    if !dir.exists() {
        return Err(LogsError::NoDir(dir.to_path_buf()));
    }
    let logs = dir.join(ACTOR_DIR);
    let entries = match std::fs::read_dir(&logs) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(LogsError::NoLogs(dir.to_path_buf()));
        }
        Err(source) => return Err(LogsError::Io { path: logs, source }),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LogsError::Io {
            path: logs.clone(),
            source,
        })?;
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        if filter.keeps_actor(name) {
            out.push((name.to_string(), path));
        }
    }
    out.sort();
    if out.is_empty() && !filter.actors.is_empty() {
        let globs: Vec<_> = filter.actors.iter().map(|p| p.as_str()).collect();
        return Err(LogsError::NoActorMatches(globs.join(", ")));
    }
    Ok(out)
}

/// Streams the events of `dir`'s actor logs that `filter` keeps to `sink`,
/// in (virtual time, actor name, line) order. The sink may stop the stream
/// early by returning `Ok(false)`. Returns the number of events handed over.
pub fn stream(
    dir: &Path,
    filter: &Filter,
    mut sink: impl FnMut(Event<'_>) -> io::Result<bool>,
) -> Result<u64, StreamError> {
    let mut sources = Vec::new();
    for (name, path) in actor_files(dir, filter)? {
        let file = File::open(&path).map_err(|source| LogsError::Io {
            path: path.clone(),
            source,
        })?;
        sources.push(Source {
            name,
            path,
            reader: BufReader::with_capacity(1 << 16, file),
            line: String::new(),
            line_no: 0,
            last_t: 0,
            t_ns: 0,
            kind: (0, 0),
        });
    }
    // Min-heap on (time, actor index); actor indices follow sorted names, and
    // each source holds one line, so line order within an actor is kept.
    let mut heap = BinaryHeap::with_capacity(sources.len());
    for (i, s) in sources.iter_mut().enumerate() {
        if s.advance(filter)? {
            heap.push(Reverse((s.t_ns, i)));
        }
    }
    let mut count = 0;
    while let Some(Reverse((_, i))) = heap.pop() {
        let s = &mut sources[i];
        let event = Event {
            t_ns: s.t_ns,
            actor: &s.name,
            kind: &s.line[s.kind.0..s.kind.1],
            line: s.line.trim_end_matches(['\n', '\r']),
        };
        count += 1;
        if !sink(event).map_err(StreamError::Sink)? {
            break;
        }
        if s.advance(filter)? {
            heap.push(Reverse((s.t_ns, i)));
        }
    }
    Ok(count)
}

/// Why streaming stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error(transparent)]
    Logs(#[from] LogsError),
    /// The sink failed (e.g. writing to a closed pipe).
    #[error("cannot write: {0}")]
    Sink(io::Error),
}

/// How `dcemu logs` prints events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns: time (s), actor, kind, then `field=value` pairs.
    Table,
    /// One JSON object per line: the logged object with `actor` first.
    Jsonl,
}

/// Writes events to `out` in `format`; `actor_width` aligns the table.
pub struct Printer<W: Write> {
    out: W,
    format: Format,
    actor_width: usize,
}

/// Width of the kind column in tables (the longest documented kind).
const KIND_WIDTH: usize = 17;

impl<W: Write> Printer<W> {
    pub fn new(out: W, format: Format, actor_width: usize) -> Self {
        Printer {
            out,
            format,
            actor_width,
        }
    }

    /// Writes the table header (nothing for JSON Lines).
    pub fn header(&mut self) -> io::Result<()> {
        if self.format == Format::Table {
            writeln!(
                self.out,
                "{:>16}  {:<aw$}  {:<KIND_WIDTH$}  fields",
                "time_s",
                "actor",
                "kind",
                aw = self.actor_width
            )?;
        }
        Ok(())
    }

    pub fn event(&mut self, e: &Event<'_>) -> io::Result<()> {
        match self.format {
            Format::Jsonl => {
                // The logged object with the actor spliced in first: no
                // re-serialisation, so fields keep their logged form.
                let rest = e.line.strip_prefix('{').unwrap_or(e.line);
                let actor = serde_json::to_string(e.actor).map_err(io::Error::other)?;
                writeln!(self.out, "{{\"actor\":{actor},{rest}")
            }
            Format::Table => {
                let fields = e.fields().map_err(io::Error::other)?;
                write!(
                    self.out,
                    "{:>6}.{:09}  {:<aw$}  {:<KIND_WIDTH$} ",
                    e.t_ns / 1_000_000_000,
                    e.t_ns % 1_000_000_000,
                    e.actor,
                    e.kind,
                    aw = self.actor_width
                )?;
                for (k, v) in fields {
                    match v {
                        Value::String(s) => write!(self.out, " {k}={s}")?,
                        other => write!(self.out, " {k}={other}")?,
                    }
                }
                writeln!(self.out)
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(ACTOR_DIR)).unwrap();
        for (name, text) in files {
            std::fs::write(d.path().join(ACTOR_DIR).join(format!("{name}.jsonl")), text).unwrap();
        }
        d
    }

    fn collect(dir: &Path, filter: &Filter) -> Result<Vec<String>, StreamError> {
        let mut out = Vec::new();
        stream(dir, filter, |e| {
            out.push(format!("{} {} {}", e.t_ns, e.actor, e.kind));
            Ok(true)
        })?;
        Ok(out)
    }

    #[test]
    fn merges_by_time_then_actor_then_line() {
        let d = dir_with(&[
            (
                "b",
                "{\"t_ns\":1,\"kind\":\"x\"}\n{\"t_ns\":5,\"kind\":\"y\"}\n{\"t_ns\":5,\"kind\":\"z\"}\n",
            ),
            (
                "a",
                "{\"t_ns\":5,\"kind\":\"p\"}\n{\"t_ns\":7,\"kind\":\"q\"}\n",
            ),
        ]);
        let got = collect(d.path(), &Filter::default()).unwrap();
        assert_eq!(got, ["1 b x", "5 a p", "5 b y", "5 b z", "7 a q"]);
    }

    #[test]
    fn filters_by_actor_glob_kind_time_and_task() {
        let d = dir_with(&[
            (
                "server-0001",
                "{\"t_ns\":1,\"kind\":\"task_start\",\"task\":3}\n{\"t_ns\":4,\"kind\":\"task_end\",\"task\":3}\n",
            ),
            (
                "scheduler",
                "{\"t_ns\":0,\"kind\":\"task_arrive\",\"task\":3}\n{\"t_ns\":2,\"kind\":\"preempt\",\"task\":9,\"victim\":3}\n{\"t_ns\":3,\"kind\":\"task_arrive\",\"task\":4}\n",
            ),
        ]);
        let f = Filter {
            actors: Filter::actor_patterns(&["server-*".into()]).unwrap(),
            ..Filter::default()
        };
        assert_eq!(collect(d.path(), &f).unwrap().len(), 2);
        let f = Filter {
            task: Some(3),
            ..Filter::default()
        };
        assert_eq!(
            collect(d.path(), &f).unwrap(),
            [
                "0 scheduler task_arrive",
                "1 server-0001 task_start",
                "2 scheduler preempt",
                "4 server-0001 task_end"
            ]
        );
        let f = Filter {
            kinds: vec!["task_arrive".into()],
            from: Some(1),
            to: Some(3),
            ..Filter::default()
        };
        assert_eq!(collect(d.path(), &f).unwrap(), ["3 scheduler task_arrive"]);
    }

    #[test]
    fn corrupt_logs_are_named_with_file_and_line() {
        let d = dir_with(&[(
            "a",
            "{\"t_ns\":5,\"kind\":\"p\"}\n{\"t_ns\":2,\"kind\":\"q\"}\n",
        )]);
        let err = collect(d.path(), &Filter::default()).unwrap_err();
        assert!(
            err.to_string().contains("a.jsonl:2") && err.to_string().contains("backwards"),
            "{err}"
        );
        let d = dir_with(&[("a", "{\"t_ns\":5,\"kind\":\"p\"}\nnot json\n")]);
        let err = collect(d.path(), &Filter::default()).unwrap_err();
        assert!(
            err.to_string().contains("a.jsonl:2: not a log event"),
            "{err}"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            collect(empty.path(), &Filter::default()),
            Err(StreamError::Logs(LogsError::NoLogs(_)))
        ));
    }

    #[test]
    fn printers_keep_fields_in_logged_order() {
        let line = "{\"t_ns\":1500000000,\"kind\":\"task_start\",\"task\":7,\"tenant\":\"t-0\"}";
        let e = Event {
            t_ns: 1_500_000_000,
            actor: "server-0001",
            kind: "task_start",
            line,
        };
        let mut out = Vec::new();
        let mut p = Printer::new(&mut out, Format::Jsonl, 11);
        p.event(&e).unwrap();
        let mut p = Printer::new(&mut out, Format::Table, 11);
        p.event(&e).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        let j: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(j["actor"], "server-0001");
        assert_eq!(j["task"], 7);
        assert_eq!(
            lines.next().unwrap(),
            "     1.500000000  server-0001  task_start         task=7 tenant=t-0"
        );
    }
}
