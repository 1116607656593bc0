//! Google cluster-usage trace 2019 (Borg, `clusterdata-2019`, trace v3),
//! `instance_events`, in the trace's JSON export: one JSON object per line.
//!
//! Schema: J. Wilkes, "Google cluster-usage traces v3", 2020, and
//! `clusterdata_trace_format_v3.proto` (message `InstanceEvent`). Fields read:
//!
//! | field | read as |
//! |---|---|
//! | `time` | µs since the start of the trace (600 s before the window); 0 = before, 2^63-1 = after |
//! | `type` | `EventType`: 0 SUBMIT, 1 QUEUE, 2 ENABLE, 3 SCHEDULE, 4 EVICT, 5 FAIL, 6 FINISH, 7 KILL, 8 LOST, 9 UPDATE_PENDING, 10 UPDATE_RUNNING (a number, a numeric string, or the name) |
//! | `collection_id`, `instance_index` | the task's key |
//! | `collection_type` | 0 JOB; 1 ALLOC_SET rows are ignored (alloc instances reserve resources, they run no work) |
//! | `priority` | 0-450, mapped onto 0-11 by [`priority_class`] |
//! | `scheduling_class` | checked (0-3), not used |
//! | `resource_request.cpus`, `.memory` | normalised (NCUs, normalised bytes): × `cores_per_unit`, × `gb_per_unit` |
//!
//! Every other field (`machine_id`, `alloc_collection_id`, `constraint`,
//! `missing_type`, …) is ignored. With `arrivals.collections`, the
//! `collection_events` table is read beside ([`super::collections`]): a
//! job whose `max_per_machine` is 1 keeps its tasks on distinct servers. The export writes 64-bit integers as
//! JSON strings; both strings and numbers are accepted. Events become tasks
//! by the rule of [`super::lifecycle`].

use serde::Deserialize;

use super::collections::Collections;
use super::common::{ImportError, ImportOptions, Tally, TaskReader, micros};
use super::json::{Int, event_time, field_error, json_error};
use super::lifecycle::{Event, EventRow, Lifecycle};
use super::lines::Lines;
use crate::trace::TraceTask;

/// `Resources` of the proto: normalised CPU and memory.
#[derive(Deserialize)]
pub struct Resources {
    #[serde(default)]
    pub cpus: Option<f64>,
    #[serde(default)]
    pub memory: Option<f64>,
}

#[derive(Deserialize)]
struct InstanceEvent {
    time: Int,
    #[serde(rename = "type")]
    kind: Int,
    collection_id: Int,
    #[serde(default)]
    instance_index: Option<Int>,
    #[serde(default)]
    collection_type: Option<Int>,
    #[serde(default)]
    priority: Option<Int>,
    #[serde(default)]
    scheduling_class: Option<Int>,
    #[serde(default)]
    resource_request: Option<Resources>,
}

const EVENT_NAMES: [&str; 11] = [
    "SUBMIT",
    "QUEUE",
    "ENABLE",
    "SCHEDULE",
    "EVICT",
    "FAIL",
    "FINISH",
    "KILL",
    "LOST",
    "UPDATE_PENDING",
    "UPDATE_RUNNING",
];

/// Borg priorities (0-450) onto the emulator's classes 0-11, by the tiers
/// of "Google cluster-usage traces v3" §"Priority": free tier (≤ 99) → 0-1,
/// best-effort batch (100-115) → 2-4, mid-tier (116-119) → 5-8,
/// production (120-359) → 9-10, monitoring (≥ 360) → 11. Within a tier the
/// order is kept: free 0-49 → 0, 50-99 → 1; batch 100-105 → 2, 106-110 → 3,
/// 111-115 → 4; mid 116 → 5, 117 → 6, 118 → 7, 119 → 8; production
/// 120-199 → 9, 200-359 → 10.
pub fn priority_class(p: u32) -> u8 {
    match p {
        0..=49 => 0,
        50..=99 => 1,
        100..=105 => 2,
        106..=110 => 3,
        111..=115 => 4,
        116 => 5,
        117 => 6,
        118 => 7,
        119 => 8,
        120..=199 => 9,
        200..=359 => 10,
        _ => 11,
    }
}

/// The `type` field: a number, a numeric string or an event name.
fn event_type(v: &Int) -> Option<usize> {
    match v {
        Int::Num(n) => usize::try_from(*n).ok(),
        Int::Text(s) => s
            .trim()
            .parse()
            .ok()
            .or_else(|| EVENT_NAMES.iter().position(|n| *n == s.trim())),
    }
    .filter(|&t| t < EVENT_NAMES.len())
}

pub struct Reader {
    lines: Lines,
    tasks: Lifecycle,
    last: (i64, u64),
    eof: bool,
    /// `arrivals.collections`: each job's `max_per_machine`.
    collections: Option<Collections>,
}

impl Reader {
    /// A reader of `lines`, with the collection table `o` names if any.
    pub fn new(lines: Lines, o: &ImportOptions) -> Result<Self, ImportError> {
        let collections = match &o.collections {
            Some((path, label)) => Some(Collections::open(path, label)?),
            None => None,
        };
        Ok(Reader {
            lines,
            tasks: Lifecycle::new(o),
            last: (0, 0),
            eof: false,
            collections,
        })
    }

    /// The same, reading `collections` beside (tables in memory).
    #[cfg(test)]
    pub fn with_collections(mut self, collections: Collections) -> Self {
        self.collections = Some(collections);
        self
    }

    fn parse(&self) -> Result<Option<EventRow>, ImportError> {
        let text = &self.lines.buf;
        if text.trim_ascii().is_empty() {
            return Ok(None);
        }
        let (path, line) = (self.lines.path(), self.lines.line);
        let row = |field: &str, problem: String| field_error(path, line, text, field, problem);
        let e: InstanceEvent =
            serde_json::from_slice(text).map_err(|e| json_error(path, line, &e))?;
        let kind = event_type(&e.kind).ok_or_else(|| {
            row(
                "type",
                "must be an EventType from 0 (SUBMIT) to 10 (UPDATE_RUNNING)".into(),
            )
        })?;
        let int = |v: &Option<Int>, field: &str, max: i64| -> Result<Option<i64>, ImportError> {
            match v {
                None => Ok(None),
                Some(v) => v
                    .value()
                    .filter(|n| (0..=max).contains(n))
                    .map(Some)
                    .ok_or_else(|| row(field, format!("must be an integer from 0 to {max}"))),
            }
        };
        if int(&e.collection_type, "collection_type", 1)? == Some(1) {
            return Ok(None);
        }
        int(&e.scheduling_class, "scheduling_class", 3)?;
        let priority = int(&e.priority, "priority", 450)?.map(|p| priority_class(p as u32));
        let time = event_time(&e.time, self.last, "instance_events", row)?;
        let collection = e
            .collection_id
            .value()
            .ok_or_else(|| row("collection_id", "must be an integer".into()))?;
        let index = int(&e.instance_index, "instance_index", i64::from(i32::MAX))?.unwrap_or(0);
        let (cpu, memory) = match &e.resource_request {
            Some(r) => (
                nonneg(r.cpus).map_err(|p| row("resource_request", p))?,
                nonneg(r.memory).map_err(|p| row("resource_request", p))?,
            ),
            None => (None, None),
        };
        let event = match kind {
            0 => Event::Submit,
            3 => Event::Schedule,
            4 => Event::Evict,
            5..=8 => Event::End,
            _ => Event::Update,
        };
        let time = match time {
            i64::MAX => None,
            t => Some(micros(t as u64).ok_or_else(|| row("time", "too large".into()))?),
        };
        Ok(Some(EventRow {
            time,
            key: (collection as u64, index as u64),
            event,
            priority,
            cpu,
            memory,
            apart: None,
            line,
        }))
    }
}

/// A finite non-negative request, or none.
pub fn nonneg(v: Option<f64>) -> Result<Option<f64>, String> {
    match v {
        Some(x) if !(x.is_finite() && x >= 0.0) => {
            Err(format!("requests must be non-negative numbers, got {x}"))
        }
        v => Ok(v),
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
            match self.parse() {
                Ok(Some(mut e)) => {
                    if let Some(t) = e.time {
                        self.last = ((t / 1_000) as i64, e.line);
                    }
                    if let (Some(c), Some(t)) = (self.collections.as_mut(), e.time) {
                        c.advance((t / 1_000) as i64)?;
                        e.apart = Some(c.apart(e.key.0));
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
    use super::priority_class;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_job_of_max_per_machine_one_is_restricted_to_different_machines() {
        use super::super::collections::Collections;
        use super::super::common::{Tally, TaskReader};
        use super::super::lines::Lines;
        let lines = |text: &str| {
            Lines::new(
                "t",
                Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            )
        };
        let instances = r#"{"time":"600000000","type":0,"collection_id":"7","instance_index":0,"resource_request":{"cpus":0.1}}
{"time":"600000000","type":0,"collection_id":"8","instance_index":0,"resource_request":{"cpus":0.1}}
{"time":"601000000","type":3,"collection_id":"7","instance_index":0}
{"time":"601000000","type":3,"collection_id":"8","instance_index":0}
{"time":"661000000","type":6,"collection_id":"7","instance_index":0}
{"time":"661000000","type":6,"collection_id":"8","instance_index":0}
"#;
        let table = r#"{"time":"590000000","type":0,"collection_id":"7","max_per_machine":1}
{"time":"590000000","type":0,"collection_id":"8","max_per_machine":0}
"#;
        let mut reader = super::Reader::new(lines(instances), &options())
            .expect("no table to open")
            .with_collections(Collections::from_lines(lines(table)));
        let mut tally = Tally {
            lenient: false,
            stats: Default::default(),
        };
        let mut jobs = Vec::new();
        while let Some(t) = reader.next_task(&mut tally).expect("good") {
            let j = t.job.expect("a job");
            jobs.push((j.key, j.apart));
        }
        assert_eq!(jobs, vec![(7, true), (8, false)]);
    }

    #[test]
    fn events_become_tasks() {
        let text = r#"{"time":"600000000","type":0,"collection_id":"7","instance_index":0,"collection_type":0,"priority":200,"scheduling_class":2,"resource_request":{"cpus":0.5,"memory":0.25}}
{"time":"600000000","type":"0","collection_id":"8","instance_index":0,"collection_type":1,"priority":0}
{"time":"601000000","type":"SCHEDULE","collection_id":"7","instance_index":0,"machine_id":"5"}
{"time":"631000000","type":6,"collection_id":"7","instance_index":0}
"#;
        let (tasks, stats) = read(TraceFormat::Google2019, text, &options()).expect("good");
        assert_eq!(tasks.len(), 1);
        let t = &tasks[0];
        assert_eq!((t.arrival, t.priority, t.duration), (600 * S, 10, 30 * S));
        assert_eq!((t.cpu, t.memory_gb), (8.0, 16.0));
        assert_eq!(stats.events_ignored, 0);
    }

    /// Issue 41: an event of a task never submitted and a task without a
    /// CPU request are counted on their lines.
    #[test]
    fn defects_are_counted_on_their_lines() {
        use super::super::DefectKind as K;
        let text = r#"{"time":"600000000","type":0,"collection_id":"7","instance_index":0}
{"time":"601000000","type":3,"collection_id":"7","instance_index":0}
{"time":"631000000","type":6,"collection_id":"7","instance_index":0}
{"time":"632000000","type":6,"collection_id":"9","instance_index":0}
"#;
        let (tasks, stats) = read(TraceFormat::Google2019, text, &options()).expect("good");
        assert_eq!(tasks.len(), 1);
        let got: Vec<_> = stats
            .defects
            .present()
            .map(|(k, c)| (k, c.count, c.examples[0].map(|p| (p.line, p.column))))
            .collect();
        assert_eq!(
            got,
            vec![
                (K::GoogleEventNotInFlight, 1, Some((4, None))),
                (K::GoogleCpuRequestMissing, 1, Some((1, None))),
            ]
        );
    }

    #[test]
    fn tiers_map_in_order() {
        let mut last = 0;
        for p in 0..=450 {
            let c = priority_class(p);
            assert!(c >= last && c <= 11);
            last = c;
        }
        assert_eq!(
            [0, 99, 100, 115, 116, 119, 120, 360].map(priority_class),
            [0, 1, 2, 4, 5, 8, 9, 11]
        );
    }

    #[test]
    fn bad_json_and_fields_name_their_column() {
        let e = read(TraceFormat::Google2019, "{\"time\":1,\n", &options()).expect_err("bad");
        assert!(e.to_string().starts_with("t:1:"), "{e}");
        let e = read(
            TraceFormat::Google2019,
            r#"{"time":1,"type":0,"collection_id":1,"priority":451}"#,
            &options(),
        )
        .expect_err("priority");
        assert_eq!(
            e.to_string(),
            "t:1:38: field `priority`: must be an integer from 0 to 450"
        );
        let e = read(
            TraceFormat::Google2019,
            r#"{"time":1,"type":"BOGUS","collection_id":1}"#,
            &options(),
        )
        .expect_err("type");
        assert!(e.to_string().starts_with("t:1:11: field `type`"), "{e}");
    }
}
