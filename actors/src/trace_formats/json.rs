//! What the readers of the Google 2019 JSON export share: its integers
//! (numbers or strings of digits) and row errors located in a JSON line.

use serde::Deserialize;

use super::common::ImportError;

/// An integer as the export writes it: a number or a string of digits.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum Int {
    Num(i64),
    Text(String),
}

impl Int {
    pub fn value(&self) -> Option<i64> {
        match self {
            Int::Num(n) => Some(*n),
            Int::Text(s) => s.trim().parse().ok(),
        }
    }
}

/// A JSON line's error as a row error at serde_json's column.
pub fn json_error(path: &str, line: u64, e: &serde_json::Error) -> ImportError {
    ImportError::Row {
        path: path.to_string(),
        line,
        column: e.column().max(1) as u64,
        problem: format!("not a valid event object: {e}"),
    }
}

/// The 1-based byte column of `"field"` in a JSON line (1 if absent).
pub fn locate(text: &[u8], field: &str) -> u64 {
    let needle = format!("\"{field}\"");
    text.windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .map_or(1, |i| i as u64 + 1)
}

/// An error of JSON line `text` (`path`:`line`) in its field `field`.
pub fn field_error(
    path: &str,
    line: u64,
    text: &[u8],
    field: &str,
    problem: String,
) -> ImportError {
    ImportError::Row {
        path: path.to_string(),
        line,
        column: locate(text, field),
        problem: format!("field `{field}`: {problem}"),
    }
}

/// An event's `time` (µs), non-negative and not before the previous
/// event's, `last` (time, line), of table `table`; `err` names the field.
pub fn event_time(
    time: &Int,
    last: (i64, u64),
    table: &str,
    err: impl Fn(&str, String) -> ImportError,
) -> Result<i64, ImportError> {
    let t = time
        .value()
        .filter(|t| *t >= 0)
        .ok_or_else(|| err("time", "must be a non-negative integer of µs".into()))?;
    if t < last.0 {
        return Err(err(
            "time",
            format!(
                "{t} is earlier than {} on line {}: {table} must be in time order",
                last.0, last.1
            ),
        ));
    }
    Ok(t)
}
