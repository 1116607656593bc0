//! Writing fitted values back: into each listed scenario file (the key set,
//! a comment above it naming the command, commit and block) and into the
//! paper's `[[calibration]]` block (`value`, `fitted`). Edits go through
//! `toml_edit`, so comments and layout survive; every file is edited in
//! memory first, then each is written to a temporary file and renamed.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike, Value};

use crate::reproduce::calibration::Calibration;
use crate::reproduce::experiments::Paper;
use crate::reproduce::write_atomic;

/// What the written comment and `fitted` line say.
pub(super) struct Stamp<'a> {
    pub paper: &'a str,
    /// The paper's experiment file as the command was given it.
    pub paper_file: PathBuf,
    pub commit: &'a str,
    pub date: &'a str,
    /// The `fitted` line of the paper file.
    pub fitted: String,
}

/// The start of the comment this module writes (an earlier one is replaced).
pub const COMMENT: &str = "# fitted by dcemu calibrate ";

impl Stamp<'_> {
    fn comment(&self, c: &Calibration) -> String {
        format!(
            "{COMMENT}{} (commit {}, {}): [[calibration]] {} in {}",
            self.paper,
            self.commit,
            self.date,
            c.name,
            self.paper_file.display()
        )
    }
}

fn toml_value(c: &Calibration, v: f64) -> Value {
    if !c.choices.is_empty() {
        Value::from(c.show(v))
    } else if c.integer {
        Value::from(v.round() as i64)
    } else {
        Value::from(v)
    }
}

/// Writes every fitted value; returns the files written.
pub(super) fn write_all(
    paper: &Paper,
    values: &[f64],
    stamp: &Stamp<'_>,
) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for (c, &v) in paper.calibrations.iter().zip(values) {
        for path in &c.scenario_paths {
            let i = match files.iter().position(|(p, _)| same_file(p, path)) {
                Some(i) => i,
                None => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    files.push((path.clone(), text));
                    files.len() - 1
                }
            };
            let edited = set_in_scenario(&files[i].1, &c.key, toml_value(c, v), &stamp.comment(c))
                .map_err(|e| format!("{}: cannot set {}: {e}", path.display(), c.key))?;
            files[i].1 = edited;
        }
    }
    let mut text = std::fs::read_to_string(&paper.file)
        .map_err(|e| format!("{}: {e}", paper.file.display()))?;
    for (c, &v) in paper.calibrations.iter().zip(values) {
        text = set_in_paper(&text, &c.name, toml_value(c, v), &stamp.fitted)
            .map_err(|e| format!("{}: [[calibration]] {}: {e}", paper.file.display(), c.name))?;
    }
    files.push((paper.file.clone(), text));
    let mut written = Vec::new();
    for (path, text) in files {
        write_atomic(&path, text.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `value` replaces an item's value, keeping its decoration (a trailing comment).
fn replace_value(item: &mut Item, value: Value) -> Result<(), String> {
    let v = item
        .as_value_mut()
        .ok_or_else(|| "is a table, not a value".to_string())?;
    let decor = v.decor().clone();
    *v = value;
    *v.decor_mut() = decor;
    Ok(())
}

/// The prefix of a key's line with `comment` as its last comment line, and
/// no earlier comment written by this module.
fn with_comment(prefix: &str, comment: &str) -> String {
    let (body, indent) = match prefix.rfind('\n') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let kept: String = body
        .split_inclusive('\n')
        .filter(|l| !l.trim_start().starts_with(COMMENT))
        .collect();
    format!("{kept}{indent}{comment}\n{indent}")
}

fn comment_key(table: &mut dyn TableLike, key: &str, comment: &str) -> bool {
    let Some(mut k) = table.key_mut(key) else {
        return false;
    };
    let decor = k.leaf_decor_mut();
    let prefix = decor
        .prefix()
        .and_then(|p| p.as_str())
        .unwrap_or("")
        .to_string();
    decor.set_prefix(with_comment(&prefix, comment));
    true
}

fn index<'s>(rest: &'s [&'s str], walked: &str) -> Result<(usize, &'s [&'s str]), String> {
    let (i, tail) = rest
        .split_first()
        .ok_or_else(|| format!("`{walked}` is a list: the key must go on into an entry"))?;
    let i = i
        .parse::<usize>()
        .map_err(|_| format!("`{walked}` is a list: address an entry by index"))?;
    Ok((i, tail))
}

/// Sets `segs` (a dotted `--set` key) under `table`; returns whether the
/// comment found a line of its own (inside an inline table it goes on the
/// enclosing key of a standard table instead).
fn set_path(
    table: &mut dyn TableLike,
    segs: &[&str],
    value: &Value,
    comment: &str,
    inline: bool,
) -> Result<bool, String> {
    let (first, rest) = segs.split_first().ok_or("empty key")?;
    if rest.is_empty() {
        match table.get_mut(first) {
            Some(item) => {
                replace_value(item, value.clone()).map_err(|e| format!("`{first}` {e}"))?
            }
            None => {
                table.insert(first, Item::Value(value.clone()));
            }
        }
        return Ok(!inline && comment_key(table, first, comment));
    }
    if table.get(first).is_none() {
        let fresh = if inline {
            Item::Value(Value::InlineTable(InlineTable::new()))
        } else {
            Item::Table(Table::new())
        };
        table.insert(first, fresh);
    }
    let item = table.get_mut(first).ok_or("the table vanished")?;
    let placed = match item {
        Item::Table(t) => {
            let dotted = t.is_dotted();
            set_path(t, rest, value, comment, inline || dotted)?
        }
        Item::Value(Value::InlineTable(t)) => set_path(t, rest, value, comment, true)?,
        Item::ArrayOfTables(a) => {
            let (i, tail) = index(rest, first)?;
            let len = a.len();
            let t = a
                .get_mut(i)
                .ok_or_else(|| format!("`{first}` has {len} entries, there is no entry {i}"))?;
            set_path(t, tail, value, comment, inline)?
        }
        Item::Value(Value::Array(a)) => {
            let (i, tail) = index(rest, first)?;
            match a.get_mut(i) {
                Some(Value::InlineTable(t)) => set_path(t, tail, value, comment, true)?,
                _ => return Err(format!("`{first}` has no table at entry {i}")),
            }
        }
        _ => return Err(format!("`{first}` is a single value, it has no fields")),
    };
    if placed || inline {
        return Ok(placed);
    }
    Ok(comment_key(table, first, comment))
}

/// The scenario text with `key` set to `value` and `comment` on the line
/// above it.
pub(super) fn set_in_scenario(
    text: &str,
    key: &str,
    value: Value,
    comment: &str,
) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let segs: Vec<&str> = key.split('.').collect();
    set_path(doc.as_table_mut(), &segs, &value, comment, false)?;
    Ok(doc.to_string())
}

/// The paper file's text with `value` and `fitted` set in the
/// `[[calibration]]` block named `name`.
pub(super) fn set_in_paper(
    text: &str,
    name: &str,
    value: Value,
    fitted: &str,
) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let blocks = doc
        .get_mut("calibration")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or("the file has no [[calibration]]")?;
    let table = blocks
        .iter_mut()
        .find(|t| t.get("name").and_then(Item::as_str) == Some(name))
        .ok_or("no block of this name")?;
    for (k, v) in [("value", value), ("fitted", Value::from(fitted))] {
        match table.get_mut(k) {
            Some(item) => replace_value(item, v).map_err(|e| format!("`{k}` {e}"))?,
            None => {
                table.insert(k, Item::Value(v));
            }
        }
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str =
        "# fitted by dcemu calibrate p (commit abc, 2026-11-28): [[calibration]] n in p.toml";

    #[test]
    fn a_table_key_is_set_with_its_comment_and_the_rest_kept() {
        let text = "# head\n[run]\nend = \"1m\" # why\n\n[applications]\n# the catalog's noise\nnoise = 0.05 # keep me\napps = 10\n";
        let out = set_in_scenario(text, "applications.noise", Value::from(0.031), C).unwrap();
        assert_eq!(
            out,
            format!(
                "# head\n[run]\nend = \"1m\" # why\n\n[applications]\n# the catalog's noise\n{C}\nnoise = 0.031 # keep me\napps = 10\n"
            )
        );
        // again: the earlier comment of the same form is replaced, not repeated
        let again = set_in_scenario(&out, "applications.noise", Value::from(0.02), C).unwrap();
        assert_eq!(again.matches(COMMENT).count(), 1, "{again}");
        assert!(again.contains("noise = 0.02 # keep me"), "{again}");
    }

    #[test]
    fn keys_in_lists_inline_tables_and_missing_keys() {
        let text =
            "[[tenants]]\nname = \"w\"\narrivals = { process = \"poisson\", rate_per_s = 0.5 }\n";
        let out =
            set_in_scenario(text, "tenants.0.arrivals.rate_per_s", Value::from(1.25), C).unwrap();
        assert_eq!(
            out,
            format!(
                "[[tenants]]\nname = \"w\"\n{C}\narrivals = {{ process = \"poisson\", rate_per_s = 1.25 }}\n"
            )
        );
        let out = set_in_scenario("[run]\nend = \"1m\"\n", "run.seed", Value::from(3), C).unwrap();
        assert_eq!(out, format!("[run]\nend = \"1m\"\n{C}\nseed = 3\n"));
        let e = set_in_scenario(text, "tenants.3.name", Value::from(1), C).unwrap_err();
        assert!(e.contains("no entry 3"), "{e}");
    }

    #[test]
    fn the_paper_block_gets_value_and_fitted() {
        let text = "paper = \"p\"\n\n[[calibration]]\nname = \"a\"\nwhy = \"w\"\n\n[[calibration]]\nname = \"b\"\nwhy = \"w\"\nvalue = 1.0 # old\n";
        let out = set_in_paper(text, "b", Value::from(2.5), "dcemu calibrate p").unwrap();
        assert_eq!(
            out,
            "paper = \"p\"\n\n[[calibration]]\nname = \"a\"\nwhy = \"w\"\n\n[[calibration]]\nname = \"b\"\nwhy = \"w\"\nvalue = 2.5 # old\nfitted = \"dcemu calibrate p\"\n"
        );
        let out = set_in_paper(text, "a", Value::from(7), "f").unwrap();
        assert!(
            out.contains("name = \"a\"\nwhy = \"w\"\nvalue = 7\nfitted = \"f\"\n\n[[calibration]]"),
            "{out}"
        );
    }
}
