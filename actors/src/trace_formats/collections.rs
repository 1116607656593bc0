//! Google 2019's `collection_events`, read beside `instance_events`
//! (`arrivals.collections`) for what the trace records per job rather than
//! per task: `max_per_machine`, "the maximum number of instances of this
//! collection that may be placed on one machine" (`CollectionEvent` of
//! `clusterdata_trace_format_v3.proto`). A job whose latest value is 1 is
//! restricted to different machines, as 2011's field 13 restricts a task.
//!
//! Both tables are in time order, so the collection table is read only as
//! far as the instance event at hand: memory holds the restricted jobs not
//! yet ended (FAIL, FINISH, KILL, LOST), not the file.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use super::common::ImportError;
use super::json::{Int, event_time, field_error, json_error};
use super::lines::Lines;

#[derive(Deserialize)]
struct CollectionEvent {
    time: Int,
    #[serde(rename = "type")]
    kind: Int,
    collection_id: Int,
    #[serde(default)]
    max_per_machine: Option<Int>,
}

/// One event, parsed: time (µs), collection, whether it ends the
/// collection, and its `max_per_machine` if given.
#[derive(Clone, Copy, Debug)]
struct Event {
    time: i64,
    collection: u64,
    ends: bool,
    max_per_machine: Option<i64>,
}

/// The collection table as far as it has been read.
pub struct Collections {
    lines: Lines,
    pending: Option<Event>,
    apart: BTreeSet<u64>,
    /// Time and line of the last event read, for the order check.
    last: (i64, u64),
    eof: bool,
}

impl Collections {
    pub fn open(path: &Path, label: &str) -> Result<Self, ImportError> {
        Ok(Self::from_lines(Lines::open(path, label)?))
    }

    pub fn from_lines(lines: Lines) -> Self {
        Collections {
            lines,
            pending: None,
            apart: BTreeSet::new(),
            last: (0, 0),
            eof: false,
        }
    }

    /// Whether `collection` is restricted to different machines now.
    pub fn apart(&self, collection: u64) -> bool {
        self.apart.contains(&collection)
    }

    /// Applies every event at or before `until` (µs of the trace).
    pub fn advance(&mut self, until: i64) -> Result<(), ImportError> {
        loop {
            let event = match self.pending.take() {
                Some(e) => e,
                None => match self.read()? {
                    Some(e) => e,
                    None => return Ok(()),
                },
            };
            if event.time > until {
                self.pending = Some(event);
                return Ok(());
            }
            if event.ends {
                self.apart.remove(&event.collection);
            } else if let Some(m) = event.max_per_machine {
                match m {
                    1 => self.apart.insert(event.collection),
                    _ => self.apart.remove(&event.collection),
                };
            }
        }
    }

    /// The next event of the file, `None` at its end (blank lines skipped).
    fn read(&mut self) -> Result<Option<Event>, ImportError> {
        while !self.eof {
            if !self.lines.next_line()? {
                self.eof = true;
                break;
            }
            let text = &self.lines.buf;
            if text.trim_ascii().is_empty() {
                continue;
            }
            let (path, line) = (self.lines.path(), self.lines.line);
            let row = |field: &str, problem: String| field_error(path, line, text, field, problem);
            let e: CollectionEvent =
                serde_json::from_slice(text).map_err(|e| json_error(path, line, &e))?;
            let time = event_time(&e.time, self.last, "collection_events", row)?;
            self.last = (time, line);
            let kind = e
                .kind
                .value()
                .filter(|k| (0..=10).contains(k))
                .ok_or_else(|| row("type", "must be an EventType from 0 to 10".into()))?;
            let collection = e
                .collection_id
                .value()
                .ok_or_else(|| row("collection_id", "must be an integer".into()))?;
            let max_per_machine = match &e.max_per_machine {
                None => None,
                Some(m) => Some(m.value().filter(|m| *m >= 0).ok_or_else(|| {
                    row("max_per_machine", "must be a non-negative integer".into())
                })?),
            };
            return Ok(Some(Event {
                time,
                collection: collection as u64,
                ends: (5..=8).contains(&kind),
                max_per_machine,
            }));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Collections {
        Collections::from_lines(Lines::new(
            "c",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        ))
    }

    #[test]
    fn max_per_machine_of_one_restricts_a_job_until_it_ends() {
        let mut c = table(
            r#"{"time":"100","type":0,"collection_id":"7","max_per_machine":"1"}
{"time":"100","type":0,"collection_id":"8","max_per_machine":2}

{"time":"300","type":9,"collection_id":"8","max_per_machine":1}
{"time":"500","type":6,"collection_id":"7"}
"#,
        );
        c.advance(99).unwrap();
        assert!(!c.apart(7), "not yet submitted");
        c.advance(100).unwrap();
        assert!(c.apart(7) && !c.apart(8));
        c.advance(400).unwrap();
        assert!(c.apart(7) && c.apart(8), "an update may set it");
        c.advance(i64::MAX).unwrap();
        assert!(!c.apart(7), "ended");
    }

    #[test]
    fn bad_rows_name_their_line_and_field() {
        let mut c = table(
            "{\"time\":\"200\",\"type\":0,\"collection_id\":\"7\"}\n{\"time\":\"100\",\"type\":0,\"collection_id\":\"8\"}\n",
        );
        let e = c.advance(1_000).expect_err("order").to_string();
        assert!(
            e.starts_with("c:2:") && e.contains("field `time`") && e.contains("line 1"),
            "{e}"
        );
        let mut c =
            table("{\"time\":\"1\",\"type\":0,\"collection_id\":\"7\",\"max_per_machine\":-1}\n");
        let e = c.advance(1).expect_err("negative").to_string();
        assert!(e.contains("max_per_machine"), "{e}");
    }
}
