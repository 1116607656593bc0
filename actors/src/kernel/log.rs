use std::io::Write;

use dcemu_topology::SimTime;
use serde::Serialize;

/// An actor's log: JSON Lines, one object per handled event or state change,
/// each with the virtual time `t_ns` and a `kind`, then the event's fields.
#[derive(Debug, Default)]
pub struct ActorLog {
    enabled: bool,
    buf: Vec<u8>,
    lines: u64,
}

impl ActorLog {
    pub fn new(enabled: bool) -> Self {
        ActorLog {
            enabled,
            buf: Vec::new(),
            lines: 0,
        }
    }

    /// Appends `{"t_ns":…,"kind":…, <fields>}`. `fields` must serialize to a
    /// JSON object (a struct or map); anything else is recorded under `value`.
    pub fn record<F: Serialize + ?Sized>(&mut self, t: SimTime, kind: &str, fields: &F) {
        if !self.enabled {
            return;
        }
        self.lines += 1;
        let _ = write!(self.buf, "{{\"t_ns\":{t},\"kind\":");
        let _ = serde_json::to_writer(&mut self.buf, kind);
        let start = self.buf.len();
        match serde_json::to_writer(&mut self.buf, fields) {
            Ok(()) if self.buf.get(start) == Some(&b'{') => {
                if self.buf.len() - start == 2 {
                    self.buf.truncate(start);
                    self.buf.push(b'}');
                } else {
                    self.buf[start] = b',';
                }
            }
            Ok(()) => {
                let value = self.buf.split_off(start);
                self.buf.extend_from_slice(b",\"value\":");
                self.buf.extend_from_slice(&value);
                self.buf.push(b'}');
            }
            Err(err) => {
                self.buf.truncate(start);
                self.buf.extend_from_slice(b",\"log_error\":");
                let _ = serde_json::to_writer(&mut self.buf, &err.to_string());
                self.buf.push(b'}');
            }
        }
        self.buf.push(b'\n');
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes buffered since the last [`ActorLog::clear`].
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The buffered lines (complete lines only).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Drops the buffered bytes once the engine has written them out,
    /// keeping the allocation.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Start {
        task: u64,
        server: &'static str,
    }

    #[derive(Serialize)]
    struct Nothing {}

    #[test]
    fn writes_flat_json_lines() {
        let mut log = ActorLog::new(true);
        log.record(
            5,
            "task_start",
            &Start {
                task: 3,
                server: "server-0001",
            },
        );
        log.record(9, "tick", &Nothing {});
        log.record(10, "level", &0.5f64);
        let text = String::from_utf8(log.into_bytes()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"t_ns":5,"kind":"task_start","task":3,"server":"server-0001"}"#
        );
        assert_eq!(lines[1], r#"{"t_ns":9,"kind":"tick"}"#);
        assert_eq!(lines[2], r#"{"t_ns":10,"kind":"level","value":0.5}"#);
        for line in lines {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }

    #[test]
    fn disabled_log_stays_empty() {
        let mut log = ActorLog::new(false);
        log.record(5, "x", &Nothing {});
        assert!(log.into_bytes().is_empty());
    }
}
