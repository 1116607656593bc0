//! serde's messages about a scenario, in a user's words: no Rust type
//! names (`u32`, `f64`), and for a mistyped field or value the nearest one
//! first (issue 40). Messages this does not recognise pass unchanged.

use crate::suggest::nearest;

/// `message` (one of serde's, about one field) as a user should read it.
pub fn humanize(message: &str) -> String {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return unknown("field", rest);
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return unknown("value", rest);
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            return format!("expected {}, found {}", kind(expected), value(found));
        }
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return format!("missing field {:?} (it is required)", unquote(rest));
    }
    message.to_string()
}

/// "`x`, expected one of `a`, `b`" (or "expected `a` or `b`", or "there
/// are no fields"): the word, the nearest allowed one, and the others.
fn unknown(what: &str, rest: &str) -> String {
    let (word, allowed) = match rest.split_once(", ") {
        Some((w, a)) => (unquote(w), a),
        None => (unquote(rest), ""),
    };
    let names: Vec<&str> = allowed
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return format!("unknown {what} {word:?} (this table takes none)");
    }
    // a value's few alternatives are worth listing beside the nearest;
    // a table's many fields are not, once the nearest is named
    let list = format!("expected one of: {}", names.join(", "));
    match (nearest(&word, names.iter().copied()), what) {
        (Some(near), "field") => format!("unknown {what} {word:?}: did you mean {near:?}?"),
        (Some(near), _) => format!("unknown {what} {word:?}: did you mean {near:?}? ({list})"),
        (None, _) => format!("unknown {what} {word:?}; {list}"),
    }
}

/// serde's name of what it expected, in words.
fn kind(expected: &str) -> String {
    let words = match expected.trim() {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number ≥ 0",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "a list",
        "a map" => "a table",
        other if other.starts_with("struct ") => "a table",
        other if other.starts_with("enum ") => "one of its named values",
        other => other,
    };
    words.to_string()
}

/// serde's description of what it found: `string "abc"` → `"abc"`,
/// ``integer `-3` `` → `-3`.
fn value(found: &str) -> String {
    let found = found.trim();
    for prefix in [
        "string ",
        "integer ",
        "floating point ",
        "boolean ",
        "char ",
    ] {
        if let Some(v) = found.strip_prefix(prefix) {
            let v = v.trim_matches('`');
            return v.to_string();
        }
    }
    match found {
        "sequence" => "a list".to_string(),
        "map" => "a table".to_string(),
        other => other.to_string(),
    }
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('`').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_speaks_like_a_user() {
        assert_eq!(
            humanize("unknown field `placment`, expected one of `admission`, `placement`, `slots`"),
            "unknown field \"placment\": did you mean \"placement\"?"
        );
        assert_eq!(
            humanize("unknown field `colour`, expected one of `admission`, `placement`"),
            "unknown field \"colour\"; expected one of: admission, placement"
        );
        assert_eq!(
            humanize("unknown variant `paragn`, expected one of `random`, `paragon`"),
            "unknown value \"paragn\": did you mean \"paragon\"? (expected one of: random, paragon)"
        );
        assert_eq!(
            humanize("unknown variant `x`, expected `fifo` or `arq`"),
            "unknown value \"x\"; expected one of: fifo, arq"
        );
        assert_eq!(
            humanize("invalid type: string \"abc\", expected u32"),
            "expected a whole number ≥ 0, found \"abc\""
        );
        assert_eq!(
            humanize("invalid value: integer `-3`, expected u64"),
            "expected a whole number ≥ 0, found -3"
        );
        assert_eq!(
            humanize("invalid type: floating point `1.5`, expected a boolean"),
            "expected true or false, found 1.5"
        );
        assert_eq!(
            humanize("invalid type: sequence, expected f64"),
            "expected a number, found a list"
        );
        assert_eq!(
            humanize("missing field `name`"),
            "missing field \"name\" (it is required)"
        );
        assert_eq!(humanize("must be positive"), "must be positive");
    }
}
