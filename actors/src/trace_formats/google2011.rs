//! Google cluster-usage trace 2011 (`clusterdata-2011-2`), `task_events`.
//!
//! Schema: C. Reiss, J. Wilkes, J. L. Hellerstein, "Google cluster-usage
//! traces: format + schema", version of 2011.10.27 (trace version 2), table
//! "Task events": CSV without a header, 13 fields:
//!
//! | # | field | read as |
//! |---|---|---|
//! | 1 | timestamp | µs since 600 s before the trace window; 0 = before the trace, 2^63-1 = after it |
//! | 2 | missing info | ignored |
//! | 3 | job ID | part of the task's key |
//! | 4 | task index | part of the task's key |
//! | 5 | machine ID | ignored (the emulator places tasks itself) |
//! | 6 | event type | 0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST, 7 UPDATE_PENDING, 8 UPDATE_RUNNING |
//! | 7 | user | ignored |
//! | 8 | scheduling class | checked (0-3), not used: the model's tasks have no latency class |
//! | 9 | priority | 0-11, the emulator's priority classes as they are |
//! | 10 | CPU request | normalised to the largest machine: × `cores_per_unit` |
//! | 11 | memory request | normalised to the largest machine: × `gb_per_unit` |
//! | 12 | disk space request | ignored |
//! | 13 | different-machine restriction | 0 / 1: a task with 1 never shares a server with another running task of its job that has it |
//!
//! Events become tasks by the rule of [`super::lifecycle`].

use super::common::{DefectKind, Found, ImportError, ImportOptions, Tally, TaskReader, micros};
use super::lifecycle::{Event, EventRow, Lifecycle};
use super::lines::{Lines, Sep, split};
use crate::trace::{MAX_PRIORITY, TraceTask};

pub const FIELDS: [&str; 13] = [
    "timestamp",
    "missing info",
    "job ID",
    "task index",
    "machine ID",
    "event type",
    "user",
    "scheduling class",
    "priority",
    "CPU request",
    "memory request",
    "disk space request",
    "different-machine restriction",
];

/// The trace's "after the end of the trace" timestamp.
pub const AFTER_END_US: u64 = i64::MAX as u64;

pub struct Reader {
    lines: Lines,
    spans: Vec<(usize, usize)>,
    tasks: Lifecycle,
    /// Timestamp and line of the previous event, for the order check.
    last: (u64, u64),
    eof: bool,
}

impl Reader {
    pub fn new(lines: Lines, o: &ImportOptions) -> Self {
        Reader {
            lines,
            spans: Vec::new(),
            tasks: Lifecycle::new(o),
            last: (0, 0),
            eof: false,
        }
    }

    fn parse(&self, found: &mut Found) -> Result<Option<EventRow>, ImportError> {
        if self.lines.buf.trim_ascii().is_empty() {
            return Ok(None);
        }
        let row = self.lines.row(&self.spans, &FIELDS);
        row.expect_fields()?;
        let us = row.u64(0)?;
        if us < self.last.0 {
            return Err(row.err(
                0,
                format!(
                    "{us} is earlier than {} on line {}: task_events must be in time order, as published",
                    self.last.0, self.last.1
                ),
            ));
        }
        let time = match us {
            AFTER_END_US => None,
            _ => Some(micros(us).ok_or_else(|| row.err(0, "too large for 64-bit nanoseconds"))?),
        };
        let event = match row.u64(5)? {
            0 => Event::Submit,
            1 => Event::Schedule,
            2 => Event::Evict,
            3..=6 => Event::End,
            7 | 8 => Event::Update,
            other => {
                return Err(row.err(5, format!("must be an event type from 0 to 8, got {other}")));
            }
        };
        if let Some(c) = row.opt_u64(7)? {
            if c > 3 {
                return Err(row.err(7, format!("must be from 0 to 3, got {c}")));
            }
        }
        let priority = match row.opt_u64(8)? {
            Some(p) if p <= u64::from(MAX_PRIORITY) => Some(p as u8),
            Some(p) => {
                return Err(row.err(8, format!("must be from 0 to {MAX_PRIORITY}, got {p}")));
            }
            None => None,
        };
        if !row.text(1)?.is_empty() {
            found.add(DefectKind::GoogleSynthesizedEvent, row.column(1));
        }
        Ok(Some(EventRow {
            time,
            key: (row.u64(2)?, row.u64(3)?),
            event,
            priority,
            cpu: row.opt_f64(9)?,
            memory: row.opt_f64(10)?,
            apart: match row.opt_u64(12)? {
                None => None,
                Some(0) => Some(false),
                Some(1) => Some(true),
                Some(_) => return Err(row.err(12, "must be 0 or 1")),
            },
            line: self.lines.line,
        }))
    }
}

impl TaskReader for Reader {
    fn next_task(&mut self, tally: &mut Tally) -> Result<Option<TraceTask>, ImportError> {
        loop {
            if let Some(t) = self.tasks.pop(self.eof, tally) {
                return Ok(Some(t));
            }
            if self.eof {
                return Ok(None);
            }
            if !self.lines.next_counted(tally)? {
                self.eof = true;
                continue;
            }
            split(&self.lines.buf, Sep::Comma, &mut self.spans);
            let mut found = Found::default();
            match self.parse(&mut found) {
                Ok(Some(e)) => {
                    tally.found(&found, e.line);
                    if e.time.is_some() {
                        self.last = (e.time.map_or(0, |t| t / 1_000), e.line);
                    }
                    self.tasks.apply(e, tally);
                }
                Ok(None) => {}
                Err(e) => tally.skip(e)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::TraceFormat;
    use super::super::test_support::{options, read};

    const S: u64 = 1_000_000_000;

    #[test]
    fn events_become_tasks_in_arrival_order() {
        // Task (1,0): submitted at 600 s, scheduled at 601 s, finished at 661 s.
        // Task (1,1): submitted at 600 s, evicted, rescheduled at 700 s, finished at 710 s.
        // Task (2,0): submitted at 650 s, killed before it ran: dropped.
        // Task (3,0): submitted at 660 s, scheduled, never finishes: unfinished.
        let text = "\
600000000,,1,0,,0,u,2,9,0.125,0.25,0,0
600000000,,1,1,,0,u,0,0,0.0625,0.0625,0,
601000000,,1,0,5,1,u,2,9,0.125,0.25,0,0
601000000,,1,1,6,1,u,0,0,0.0625,0.0625,0,
650000000,,2,0,,0,u,1,4,0.5,,,
660000000,,3,0,,0,u,3,11,1,1,0,1
660000000,,3,0,7,1,u,3,11,1,1,0,1
661000000,,1,0,5,4,u,2,9,0.125,0.25,0,0
670000000,,1,1,6,2,u,0,0,,,,
680000000,,2,0,,5,u,1,4,,,,
700000000,,1,1,8,1,u,0,0,,,,
710000000,,1,1,8,4,u,0,0,,,,
";
        let (tasks, stats) = read(TraceFormat::Google2011, text, &options()).expect("good");
        let got: Vec<_> = tasks
            .iter()
            .map(|t| {
                (
                    t.arrival / S,
                    t.priority,
                    t.cpu,
                    t.memory_gb,
                    t.duration,
                    t.line,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (600, 9, 2.0, 16.0, 60 * S, 1),
                (600, 0, 1.0, 4.0, 10 * S, 2),
                (660, 11, 16.0, 64.0, 10_000 * S - 660 * S, 6),
            ]
        );
        assert_eq!(stats.tasks_dropped, 1);
        assert_eq!(stats.tasks_unfinished, 1);
    }

    /// Issue 41: a synthesised event, an event of a task never submitted
    /// and a task without a CPU request are counted where they are.
    #[test]
    fn defects_are_counted_with_their_places() {
        use super::super::{DefectKind as K, Place};
        let text = "\
0,1,1,0,,0,u,0,0,,0.1,0,0
1000000,,1,0,,1,u,0,0,,,,
2000000,,1,0,,4,u,0,0,,,,
3000000,,9,0,,4,u,0,0,,,,
";
        let (tasks, stats) = read(TraceFormat::Google2011, text, &options()).expect("good");
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].cpu, 1e-3);
        assert_eq!(stats.events_ignored, 1);
        let at = |line, column| Some(Place { line, column });
        let got: Vec<_> = stats
            .defects
            .present()
            .map(|(k, c)| (k, c.count, c.examples[0]))
            .collect();
        assert_eq!(
            got,
            vec![
                (K::GoogleSynthesizedEvent, 1, at(1, Some(3))),
                (K::GoogleEventNotInFlight, 1, at(4, None)),
                (K::GoogleCpuRequestMissing, 1, at(1, None)),
            ]
        );
    }

    #[test]
    fn the_job_and_its_different_machine_restriction_are_kept() {
        let text = "\
600000000,,7,0,,0,u,0,9,0.1,0.1,0,1
600000000,,7,1,,0,u,0,9,0.1,0.1,0,
600000000,,8,0,,0,u,0,9,0.1,0.1,0,0
601000000,,7,0,5,1,u,0,9,,,,
601000000,,7,1,5,1,u,0,9,,,,1
601000000,,8,0,5,1,u,0,9,,,,
661000000,,7,0,5,4,u,0,9,,,,
661000000,,7,1,5,4,u,0,9,,,,
661000000,,8,0,5,4,u,0,9,,,,
";
        let (tasks, _) = read(TraceFormat::Google2011, text, &options()).expect("good");
        let jobs: Vec<_> = tasks
            .iter()
            .map(|t| t.job.as_deref().map(|j| (j.key, j.apart)))
            .collect();
        assert_eq!(
            jobs,
            vec![Some((7, true)), Some((7, true)), Some((8, false))],
            "an UPDATE or later event may set it"
        );
        let bad = "600000000,,7,0,,0,u,0,9,0.1,0.1,0,2\n";
        let e = read(TraceFormat::Google2011, bad, &options()).expect_err("2");
        assert!(
            e.to_string()
                .contains("field 13 (different-machine restriction): must be 0 or 1"),
            "{e}"
        );
    }

    #[test]
    fn the_lookahead_bounds_tasks_in_flight() {
        let mut o = options();
        o.lookahead = 100 * S;
        // A task that runs "for ever" and many short ones after it.
        let mut text = String::from("0,,1,0,,0,u,0,0,0.1,0.1,0,0\n0,,1,0,,1,u,0,0,0.1,0.1,0,0\n");
        for i in 0..1000u64 {
            let t = 1_000_000 * (i + 1);
            text.push_str(&format!("{t},,2,{i},,0,u,0,1,0.1,0.1,0,0\n"));
            text.push_str(&format!("{t},,2,{i},,1,u,0,1,0.1,0.1,0,0\n"));
            text.push_str(&format!("{},,2,{i},,4,u,0,1,,,,\n", t + 500_000));
        }
        let lines = super::Lines::new("t", Box::new(std::io::Cursor::new(text.into_bytes())));
        let mut r = super::Reader::new(lines, &o);
        let mut tally = super::Tally {
            lenient: false,
            stats: Default::default(),
        };
        let mut n = 0;
        let mut most = 0;
        while super::TaskReader::next_task(&mut r, &mut tally)
            .expect("good")
            .is_some()
        {
            n += 1;
            most = most.max(r.tasks.in_flight());
        }
        assert_eq!(n, 1001);
        assert_eq!(tally.stats.tasks_unfinished, 1);
        // 100 s of lookahead at one task a second.
        assert!(most <= 102, "{most} tasks held");
    }

    #[test]
    fn bad_rows_name_line_and_column_and_lenient_skips_them() {
        let text = "0,,1,0,,0,u,0,0,0.1,0.1,0,0\n0,,1,0,,9,u,0,0,0.1,0.1,0,0\n5,,1,0,,4\n";
        let e = read(TraceFormat::Google2011, text, &options()).expect_err("bad");
        assert_eq!(
            e.to_string(),
            "t:2:9: field 6 (event type): must be an event type from 0 to 8, got 9"
        );
        let mut o = options();
        o.lenient = true;
        let (tasks, stats) = read(TraceFormat::Google2011, text, &o).expect("lenient");
        assert_eq!(stats.rows_skipped, 2);
        let refused = stats.defects.get(super::DefectKind::RowRefused);
        assert_eq!(refused.count, 2);
        let places: Vec<_> = refused
            .examples
            .iter()
            .flatten()
            .map(|p| (p.line, p.column))
            .collect();
        assert_eq!(places, vec![(2, Some(9)), (3, Some(1))]);
        assert_eq!(tasks.len(), 0);
        assert_eq!(stats.tasks_dropped, 1);

        let e = read(
            TraceFormat::Google2011,
            "5,,1,0,,0,u,0,0,0.1,0.1,0,0\n4,,1,1,,0,u,0,0,0.1,0.1,0,0\n",
            &options(),
        )
        .expect_err("order");
        assert!(
            e.to_string()
                .starts_with("t:2:1: field 1 (timestamp): 4 is earlier than 5 on line 1"),
            "{e}"
        );
        let e = read(
            TraceFormat::Google2011,
            "0,,1,0,,0,u,0,12,0.1,0.1,0,0\n",
            &options(),
        )
        .expect_err("priority");
        assert!(
            e.to_string().starts_with("t:1:15: field 9 (priority)"),
            "{e}"
        );
        let e = read(
            TraceFormat::Google2011,
            "0,,1,0,,0,u,0,1,-0.1,0.1,0,0\n",
            &options(),
        )
        .expect_err("cpu");
        assert!(
            e.to_string().starts_with("t:1:17: field 10 (CPU request)"),
            "{e}"
        );
    }
}
