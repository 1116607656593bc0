//! The Standard Workload Format (SWF) of the Parallel Workloads Archive.
//!
//! Schema: D. Feitelson et al., "The Standard Workload Format", version 2.2
//! (Parallel Workloads Archive). One job per line, 18 whitespace-separated
//! fields, `-1` where a log has no value; lines starting with `;` are
//! comments, the first of them the header (`; MaxNodes: 128`).
//!
//! | # | field | read as |
//! |---|---|---|
//! | 1 | job number | ignored |
//! | 2 | submit time (s) | arrival |
//! | 3 | wait time | ignored (the emulator's scheduler decides the wait) |
//! | 4 | run time (s) | duration; `-1` → dropped; `0` (ran under 0.5 s) → 0.5 s |
//! | 5 | number of allocated processors | cores: × `cores_per_unit`; `-1` → field 8 |
//! | 6 | average CPU time used | ignored |
//! | 7 | used memory (KB per processor) | memory: × processors; `-1` → field 10 |
//! | 8 | requested number of processors | cores when field 5 is `-1`; neither → dropped |
//! | 9 | requested time | `requested_ns` (EASY backfilling reserves by it); `-1`: none |
//! | 10 | requested memory (KB per processor) | memory when field 7 is `-1`; neither → 0 |
//! | 11 | status | ignored (a failed or cancelled job that ran still used its run time) |
//! | 12-18 | user, group, executable, queue, partition, preceding job, think time | ignored |
//!
//! SWF has no priority: every job gets the tenant's `priority` (queue
//! numbers are site-specific). Times may be decimals; they are read exactly.
//! Files are sorted by submit time (the format requires it); an earlier
//! submit after a later one is an error naming both lines.

use dcemu_topology::SimTime;

use super::common::{DefectKind, Found, ImportError, ImportOptions, Tally, TaskReader};
use super::lines::{Lines, Row, Sep, split};
use crate::trace::{AppRef, TraceTask};

pub const FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time used",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user ID",
    "group ID",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// What a run time of 0 stands for: the job ran for less than 0.5 s.
const ZERO_RUN_NS: SimTime = 500_000_000;

pub struct Reader {
    lines: Lines,
    spans: Vec<(usize, usize)>,
    cores_per_unit: f64,
    priority: u8,
    machine_cores: Option<u64>,
    kill_at_request: bool,
    last: (u64, u64),
}

/// A field that is `-1` (missing) or a non-negative number.
fn opt_number(row: &Row<'_>, i: usize) -> Result<Option<f64>, ImportError> {
    if row.text(i)? == "-1" {
        return Ok(None);
    }
    row.opt_f64(i)
}

impl Reader {
    pub fn new(lines: Lines, o: &ImportOptions) -> Self {
        Reader {
            lines,
            spans: Vec::new(),
            cores_per_unit: o.cores_per_unit,
            priority: o.default_priority,
            machine_cores: o.machine_cores,
            kill_at_request: o.kill_at_request,
            last: (0, 0),
        }
    }

    fn parse(&self, found: &mut Found) -> Result<Option<Option<TraceTask>>, ImportError> {
        let t = self.lines.buf.trim_ascii();
        if t.is_empty() || t.starts_with(b";") {
            return Ok(None);
        }
        let row = self.lines.row(&self.spans, &FIELDS);
        row.expect_fields()?;
        let submit = row.seconds(1)?;
        if submit < self.last.0 {
            return Err(row.err(
                1,
                format!(
                    "submit time is earlier than that of line {}: SWF files are sorted by submit time",
                    self.last.1
                ),
            ));
        }
        let run = match row.text(3)? {
            "-1" => None,
            _ => Some(row.seconds(3)?),
        };
        let requested = match row.text(8)? {
            "-1" => None,
            _ => Some(row.seconds(8)?),
        };
        let allocated = opt_number(&row, 4)?.filter(|p| *p > 0.0);
        let procs = allocated.or(opt_number(&row, 7)?.filter(|p| *p > 0.0));
        let kb = opt_number(&row, 6)?.or(opt_number(&row, 9)?);
        for i in [2, 5, 10, 11, 12, 13, 14, 15, 16, 17] {
            let v = row.text(i)?;
            if v != "-1" && v.parse::<f64>().is_err() {
                return Err(row.err(i, format!("must be a number or -1, got `{v}`")));
            }
        }
        let Some(run) = run else {
            found.add(DefectKind::SwfRunTimeMissing, row.column(3));
            return Ok(Some(None));
        };
        let Some(procs) = procs else {
            found.add(DefectKind::SwfProcessorsMissing, row.column(4));
            return Ok(Some(None));
        };
        let cores = procs * self.cores_per_unit;
        if let Some(machine) = self.machine_cores
            && cores > machine as f64
        {
            let field = if row.text(4)? == "-1" { 7 } else { 4 };
            return Err(row.err(
                field,
                format!(
                    "the job needs {procs} processors ({cores} cores), more than the whole \
                     machine's {machine} cores: no schedule could run it (skip such jobs with \
                     `lenient`)"
                ),
            ));
        }
        if run == 0 {
            found.add(DefectKind::SwfRunTimeZero, row.column(3));
        }
        if allocated.is_none() {
            found.add(DefectKind::SwfAllocatedProcessorsMissing, row.column(4));
        }
        if kb.is_none() {
            found.add(DefectKind::SwfMemoryMissing, row.column(6));
        }
        Ok(Some(Some(TraceTask {
            arrival: submit,
            priority: self.priority,
            cpu: cores,
            memory_gb: kb.unwrap_or(0.0) * procs / (1024.0 * 1024.0),
            duration: if run == 0 { ZERO_RUN_NS } else { run },
            app: AppRef::None,
            line: self.lines.line,
            requested: requested.unwrap_or(0),
            job: None,
        })))
    }
}

impl TaskReader for Reader {
    fn next_task(&mut self, tally: &mut Tally) -> Result<Option<TraceTask>, ImportError> {
        loop {
            if !self.lines.next_counted(tally)? {
                return Ok(None);
            }
            split(&self.lines.buf, Sep::Whitespace, &mut self.spans);
            let mut found = Found::default();
            match self.parse(&mut found) {
                Ok(Some(Some(mut task))) => {
                    tally.found(&found, task.line);
                    self.last = (task.arrival, task.line);
                    if task.requested > 0 && task.duration > task.requested {
                        let column = self.lines.row(&self.spans, &FIELDS).column(3);
                        if self.kill_at_request {
                            task.duration = task.requested;
                            tally.stats.killed_at_request += 1;
                            tally.defect(DefectKind::SwfCutAtRequest, task.line, column);
                        } else {
                            tally.defect(DefectKind::SwfRanPastRequest, task.line, column);
                        }
                    }
                    return Ok(Some(task));
                }
                Ok(Some(None)) => {
                    tally.found(&found, self.lines.line);
                    tally.stats.tasks_dropped += 1;
                }
                Ok(None) => {}
                Err(e) => tally.skip(e)?,
            }
        }
    }
}

/// The header comments of an SWF file: `MaxNodes` and `MaxProcs`, read
/// until the first job line.
pub fn header(lines: &mut Lines) -> Result<(Option<u64>, Option<u64>), ImportError> {
    let (mut nodes, mut procs) = (None, None);
    while lines.next_line()? {
        let t = lines.buf.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let Some(comment) = t.strip_prefix(b";") else {
            break;
        };
        let Ok(comment) = std::str::from_utf8(comment) else {
            continue;
        };
        let Some((key, value)) = comment.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "MaxNodes" => &mut nodes,
            "MaxProcs" => &mut procs,
            _ => continue,
        };
        let n = value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ImportError::Row {
                path: lines.path().to_string(),
                line: lines.line,
                column: 1,
                problem: format!(
                    "header `{}` must be a positive integer, got `{}`",
                    key.trim(),
                    value.trim()
                ),
            })?;
        *slot = Some(n);
    }
    Ok((nodes, procs))
}

#[cfg(test)]
mod tests {
    use super::super::TraceFormat;
    use super::super::test_support::{options, read};

    const S: u64 = 1_000_000_000;

    #[test]
    fn jobs_become_tasks() {
        let mut o = options();
        o.cores_per_unit = 1.0;
        let text = "\
; Version: 2.2
; MaxNodes: 4
; MaxProcs: 32
    1     0   5   100    8  -1  1048576   8  200  -1 1 1 1 -1 1 -1 -1 -1
    2    10   0     0   -1  -1  -1        4   60  524288 1 1 1 -1 1 -1 -1 -1
    3    10   0    -1    2  -1  -1        2   60  -1 5 1 1 -1 1 -1 -1 -1
    4  20.5   0   1.5    1  -1  -1       -1   -1  -1 0 1 1 -1 1 -1 -1 -1
";
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("good");
        let got: Vec<_> = tasks
            .iter()
            .map(|t| (t.arrival, t.duration, t.cpu, t.memory_gb, t.priority))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 100 * S, 8.0, 8.0, 4),
                (10 * S, S / 2, 4.0, 2.0, 4),
                (20 * S + S / 2, 3 * S / 2, 1.0, 0.0, 4),
            ]
        );
        assert_eq!(stats.tasks_dropped, 1);
    }

    #[test]
    fn a_short_row_and_a_bad_number_are_row_errors() {
        let e = read(TraceFormat::Swf, "1 0 0 10 1\n", &options()).expect_err("short");
        assert_eq!(
            e.to_string(),
            "t:1:1: the row has 5 fields; this format has 18"
        );
        let e = read(
            TraceFormat::Swf,
            "1 0 0 10 x -1 -1 -1 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
            &options(),
        )
        .expect_err("bad");
        assert!(
            e.to_string()
                .starts_with("t:1:10: field 5 (allocated processors)"),
            "{e}"
        );
    }

    /// Issue 41: a job of more processors than the whole machine has cores
    /// is a row error naming the field it took its processors from; with
    /// `lenient` it is skipped and counted.
    #[test]
    fn a_job_larger_than_the_machine_is_a_row_error() {
        let mut o = options();
        o.cores_per_unit = 1.0;
        o.machine_cores = Some(8);
        let text = "\
1 0 0 10 8 -1 -1 8 -1 -1 1 1 1 -1 1 -1 -1 -1
2 5 0 10 9 -1 -1 9 -1 -1 1 1 1 -1 1 -1 -1 -1
3 6 0 10 -1 -1 -1 12 -1 -1 1 1 1 -1 1 -1 -1 -1
";
        let e = read(TraceFormat::Swf, text, &o).expect_err("too large");
        assert_eq!(
            e.to_string(),
            "t:2:10: field 5 (allocated processors): the job needs 9 processors (9 cores), \
             more than the whole machine's 8 cores: no schedule could run it (skip such jobs \
             with `lenient`)"
        );
        o.lenient = true;
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("lenient");
        assert_eq!(tasks.len(), 1);
        assert_eq!(stats.rows_skipped, 2);
        let e = read(
            TraceFormat::Swf,
            &text.replacen("9 -1 -1 9", "8 -1 -1 9", 1),
            &{
                let mut o = o.clone();
                o.lenient = false;
                o
            },
        )
        .expect_err("requested processors");
        assert!(
            e.to_string()
                .starts_with("t:3:19: field 8 (requested processors): the job needs 12"),
            "{e}"
        );
        o.machine_cores = None;
        o.lenient = false;
        assert_eq!(
            read(TraceFormat::Swf, text, &o)
                .expect("unknown machine")
                .0
                .len(),
            3
        );
    }

    /// Issue 41: with `kill_at_request`, a job that ran past its requested
    /// time runs for its request; the others as recorded.
    #[test]
    fn a_job_past_its_request_is_cut_to_it_only_when_asked() {
        let mut o = options();
        o.cores_per_unit = 1.0;
        let text = "\
1 0 0 100 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1
2 5 0 30 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1
3 6 0 30 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1
";
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("as recorded");
        let runs: Vec<u64> = tasks.iter().map(|t| t.duration / S).collect();
        assert_eq!(runs, vec![100, 30, 30]);
        assert_eq!(tasks[0].requested, 60 * S);
        assert_eq!(tasks[2].requested, 0);
        assert_eq!(stats.killed_at_request, 0);
        o.kill_at_request = true;
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("killed");
        let runs: Vec<u64> = tasks.iter().map(|t| t.duration / S).collect();
        assert_eq!(runs, vec![60, 30, 30]);
        assert_eq!(stats.killed_at_request, 1);
    }

    /// Issue 41: each defect an SWF log can show is counted with its line
    /// and the column of its field; the jobs that stay are read as before.
    #[test]
    fn defects_are_counted_with_their_places() {
        use super::super::{DefectKind as K, Place};
        let mut o = options();
        o.cores_per_unit = 1.0;
        let text = "\
1 0 0 100 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
2 1 0 -1 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
3 2 0 10 -1 -1 1024 -1 60 -1 1 1 1 -1 1 -1 -1 -1
4 3 0 0 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
5 4 0 10 -1 -1 1024 2 60 -1 1 1 1 -1 1 -1 -1 -1
6 5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1
7 6 0 10 0 -1 1024 0 60 -1 1 1 1 -1 1 -1 -1 -1
";
        let at = |line, column| {
            Some(Place {
                line,
                column: Some(column),
            })
        };
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("good");
        let runs: Vec<u64> = tasks.iter().map(|t| t.duration / (S / 10)).collect();
        assert_eq!(runs, vec![1000, 5, 100, 100]);
        assert_eq!(stats.tasks_dropped, 3);
        let d = stats.defects;
        let got: Vec<_> = d.present().map(|(k, c)| (k, c.count, c.examples)).collect();
        assert_eq!(
            got,
            vec![
                (K::SwfRunTimeMissing, 1, [at(2, 7), None, None]),
                (K::SwfProcessorsMissing, 2, [at(3, 10), at(7, 10), None]),
                (K::SwfRunTimeZero, 1, [at(4, 7), None, None]),
                (K::SwfAllocatedProcessorsMissing, 1, [at(5, 10), None, None]),
                (K::SwfMemoryMissing, 1, [at(6, 15), None, None]),
                (K::SwfRanPastRequest, 1, [at(1, 7), None, None]),
            ]
        );
        o.kill_at_request = true;
        let (tasks, stats) = read(TraceFormat::Swf, text, &o).expect("killed");
        assert_eq!(tasks[0].duration, 60 * S);
        assert_eq!(stats.defects.count(K::SwfRanPastRequest), 0);
        assert_eq!(stats.defects.get(K::SwfCutAtRequest).examples[0], at(1, 7));
        assert_eq!(stats.killed_at_request, 1);
    }

    #[test]
    fn the_header_gives_nodes_and_processors() {
        let mut lines = super::Lines::new(
            "t",
            Box::new(&b"; Computer: x\n;MaxNodes: 4\n; MaxProcs: 32\n1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n"[..]),
        );
        assert_eq!(super::header(&mut lines).expect("ok"), (Some(4), Some(32)));
    }
}
