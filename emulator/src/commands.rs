//! The inspection commands of the `dcemu` binary: `logs`, `replay`,
//! `report`. Each returns a [`CommandError`] carrying its exit code (2 bad
//! input, 1 a failed run or a difference found).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dcemu_topology::Duration;

use crate::engine::MAX_PARTITIONS;
use crate::logs::{self, Filter, Format, LogsError, Printer, StreamError};
use crate::replay::{ReplayOptions, replay};
use crate::report;

/// A failed command and its exit code.
#[derive(Debug)]
pub struct CommandError {
    pub code: u8,
    pub message: String,
}

impl CommandError {
    fn input(message: impl Into<String>) -> Self {
        CommandError {
            code: 2,
            message: message.into(),
        }
    }
    fn failed(message: impl Into<String>) -> Self {
        CommandError {
            code: 1,
            message: message.into(),
        }
    }
}

fn parse_time(s: &str) -> Result<Duration, String> {
    s.parse::<Duration>().map_err(|e| e.to_string())
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    /// A table on a terminal, JSON Lines otherwise.
    Auto,
    Table,
    Jsonl,
}

/// `dcemu logs DIR`.
#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Results directory.
    pub dir: PathBuf,
    /// Only these actors (repeatable; globs such as `server-00*`).
    #[arg(long = "actor", value_name = "NAME")]
    pub actors: Vec<String>,
    /// Only these event kinds (repeatable), e.g. task_start, evict_priority.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Only events at or after this virtual time, e.g. 90s.
    #[arg(long, value_parser = parse_time)]
    pub from: Option<Duration>,
    /// Only events at or before this virtual time.
    #[arg(long, value_parser = parse_time)]
    pub to: Option<Duration>,
    /// Follow one task or application across actors (its id in `task`,
    /// `victim` or `job`).
    #[arg(long, value_name = "ID")]
    pub task: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
}

pub fn logs(args: LogsArgs) -> Result<(), CommandError> {
    let filter = Filter {
        actors: Filter::actor_patterns(&args.actors)
            .map_err(|e| CommandError::input(e.to_string()))?,
        kinds: args.kinds,
        from: args.from.map(Duration::as_nanos),
        to: args.to.map(Duration::as_nanos),
        task: args.task,
    };
    let stdout = std::io::stdout();
    let format = match args.format {
        FormatArg::Table => Format::Table,
        FormatArg::Jsonl => Format::Jsonl,
        FormatArg::Auto if stdout.is_terminal() => Format::Table,
        FormatArg::Auto => Format::Jsonl,
    };
    let width = logs::actor_files(&args.dir, &filter)
        .map_err(logs_error)?
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(5);
    let mut printer = Printer::new(
        std::io::BufWriter::with_capacity(1 << 16, stdout.lock()),
        format,
        width,
    );
    let mut matched: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let result = printer
        .header()
        .map_err(StreamError::Sink)
        .and_then(|()| {
            logs::stream(&args.dir, &filter, |e| {
                if !matched.contains(e.kind) {
                    matched.insert(e.kind.to_string());
                }
                printer.event(&e).map(|()| true)
            })
        })
        .and_then(|_| printer.flush().map_err(StreamError::Sink));
    let unmatched: Vec<String> = filter
        .kinds
        .iter()
        .filter(|k| !matched.contains(*k))
        .cloned()
        .collect();
    let result = match result {
        Ok(()) if !unmatched.is_empty() => logs::check_kinds(&args.dir, &unmatched),
        other => other,
    };
    match result {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(StreamError::Sink(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(StreamError::Sink(e)) => Err(CommandError::failed(format!("cannot write: {e}"))),
        Err(StreamError::Logs(e)) => Err(logs_error(e)),
    }
}

fn logs_error(e: LogsError) -> CommandError {
    if e.is_bad_input() {
        CommandError::input(e.to_string())
    } else {
        CommandError::failed(e.to_string())
    }
}

/// `dcemu replay DIR`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Results directory to replay.
    pub dir: PathBuf,
    /// Partitions (threads) for the re-run; results do not depend on it.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = crate::whole::Whole::new(1, MAX_PARTITIONS as u64))]
    pub partitions: u64,
    /// Stop at this virtual time, compare the recorded events before it, and
    /// describe the actors named by --dump there.
    #[arg(long, value_parser = parse_time)]
    pub until: Option<Duration>,
    /// Actors whose state to print at --until (repeatable; globs).
    #[arg(long = "dump", value_name = "NAME", requires = "until")]
    pub dump: Vec<String>,
}

pub fn replay_cmd(args: ReplayArgs) -> Result<(), CommandError> {
    let dump =
        Filter::actor_patterns(&args.dump).map_err(|e| CommandError::input(e.to_string()))?;
    let options = ReplayOptions {
        partitions: args.partitions as usize,
        until: args.until.map(Duration::as_nanos),
        dump,
    };
    let r = replay(&args.dir, &options).map_err(|e| {
        if e.is_bad_input() {
            CommandError::input(e.to_string())
        } else {
            CommandError::failed(e.to_string())
        }
    })?;
    let mut out = std::io::stdout().lock();
    for (name, state) in &r.states {
        let text = serde_json::to_string(state).unwrap_or_default();
        let _ = writeln!(out, "{name}: {text}");
    }
    if !args.dump.is_empty() && r.states.is_empty() {
        return Err(CommandError::input(format!(
            "no actor matches --dump {}",
            args.dump.join(", ")
        )));
    }
    match r.difference {
        None => {
            let what = match args.until {
                Some(t) => format!("up to {t}"),
                None => format!("digest {}", r.digest),
            };
            let _ = writeln!(
                out,
                "identical: {} files compared, {what}",
                r.files_compared
            );
            Ok(())
        }
        Some(d) if !r.program_changes.is_empty() => Err(CommandError::failed(format!(
            "the external program changed ({}); different: {d}",
            r.program_changes.join("; ")
        ))),
        Some(d) => Err(CommandError::failed(format!("different: {d}"))),
    }
}

/// `dcemu report DIR [DIR ...]`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results directories to compare.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write report.html and the tables (default: ./report).
    #[arg(long, value_name = "REPORT_DIR", default_value = "report")]
    pub out: PathBuf,
}

pub fn report_cmd(args: ReportArgs) -> Result<(), CommandError> {
    let err = |e: report::ReportError| {
        if e.is_bad_input() {
            CommandError::input(e.to_string())
        } else {
            CommandError::failed(e.to_string())
        }
    };
    let mut seen: Vec<(std::path::PathBuf, &std::path::PathBuf)> = Vec::new();
    for d in &args.dirs {
        let canonical = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            return Err(CommandError::input(format!(
                "{} and {} are the same results directory: name each run once",
                first.display(),
                d.display()
            )));
        }
        seen.push((canonical, d));
    }
    let mut runs = args
        .dirs
        .iter()
        .map(|d| report::load_run(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    report::label_runs(&mut runs);
    let written = report::build(&runs, &args.out).map_err(err)?;
    println!(
        "report: {} ({} plots; skipped: {})",
        written.html.display(),
        written.figures.len(),
        if written.skipped.is_empty() {
            "none".to_string()
        } else {
            written
                .skipped
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        }
    );
    Ok(())
}
