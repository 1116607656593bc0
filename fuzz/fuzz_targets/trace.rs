//! The trace reader (`parse_trace_bytes`) on arbitrary bytes. Beyond "no
//! panic", checks that:
//! - an accepted trace keeps the documented rules (docs/traces.md): at
//!   least one task, arrivals non-decreasing, priority 0–11, cpu positive
//!   and finite, memory non-negative and finite, duration positive, rows on
//!   increasing lines of the file, well-formed application names;
//! - the accepted tasks, written back as CSV, read again to the same tasks
//!   (exact times, exact floats);
//! - a refused trace gets a message that names the file and, where it has
//!   one, a line that exists.
#![no_main]

use dcemu_actors::trace::{
    AppRef, MAX_FIELD_BYTES, MAX_PRIORITY, TraceError, TraceTask, parse_trace_bytes,
};
use libfuzzer_sys::fuzz_target;

const LABEL: &str = "fuzz/trace.csv";

fuzz_target!(|data: &[u8]| {
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    match parse_trace_bytes(LABEL, data) {
        Ok(tasks) => {
            check(&tasks, lines);
            let text = write_csv(&tasks);
            let again = parse_trace_bytes(LABEL, text.as_bytes()).unwrap_or_else(|e| {
                panic!("accepted tasks written back must read again: {e}\n{text}")
            });
            assert_eq!(again.len(), tasks.len());
            for (i, (a, t)) in again.iter().zip(&tasks).enumerate() {
                assert_eq!(a.line, i as u64 + 2, "written rows start on line 2");
                let a = TraceTask {
                    line: t.line,
                    ..a.clone()
                };
                assert_eq!(&a, t, "a task changed when written back\n{text}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with(LABEL), "the error names the file: {msg}");
            assert!(
                msg.len() > LABEL.len() + 2,
                "the error says what is wrong: {msg}"
            );
            match e {
                TraceError::Row { line, .. } | TraceError::Header { line, .. } => {
                    assert!((1..=lines).contains(&line), "line {line} of {lines}: {msg}")
                }
                TraceError::Empty { .. } | TraceError::Io { .. } => {}
            }
        }
    }
});

fn check(tasks: &[TraceTask], lines: u64) {
    assert!(!tasks.is_empty(), "an accepted trace has a task");
    for w in tasks.windows(2) {
        assert!(w[0].arrival <= w[1].arrival, "arrivals go forward");
        assert!(w[0].line < w[1].line, "rows are on increasing lines");
    }
    for t in tasks {
        assert!(t.priority <= MAX_PRIORITY);
        assert!(t.cpu.is_finite() && t.cpu > 0.0, "cpu {}", t.cpu);
        assert!(
            t.memory_gb.is_finite() && t.memory_gb >= 0.0 && t.memory_gb.is_sign_positive(),
            "memory {}",
            t.memory_gb
        );
        assert!(t.duration > 0);
        assert!((2..=lines).contains(&t.line), "line {} of {lines}", t.line);
        if let AppRef::Family(name) = &t.app {
            assert!(!name.is_empty() && name.len() <= MAX_FIELD_BYTES);
            assert!(
                name.as_bytes()[0].is_ascii_alphanumeric(),
                "family {name:?}"
            );
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "family {name:?}"
            );
        }
    }
}

/// The tasks as a trace file: exact decimal seconds, floats in exponent
/// form (shortest text that reads back to the same bits).
fn write_csv(tasks: &[TraceTask]) -> String {
    let mut out = String::from("arrival_s,priority,cpu,memory_gb,duration_s,app\n");
    for t in tasks {
        out.push_str(&format!(
            "{},{},{:e},{:e},{},{}\n",
            seconds(t.arrival),
            t.priority,
            t.cpu,
            t.memory_gb,
            seconds(t.duration),
            t.app
        ));
    }
    out
}

fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}
