//! What a report calls each run: its scenario's name and seed, and the
//! scenario fields whose values differ between the runs compared, so that
//! two runs of one scenario and seed under two placements read
//! `quickstart s1 scheduler.placement=random` and `… =best-fit`, not `s1`
//! twice (issue 40).

use std::collections::{BTreeMap, BTreeSet};

/// Fields named in a label at most; more are counted (`+2 more`).
const SHOWN: usize = 3;

/// A scenario as run (`scenario.toml`), flattened to dotted keys
/// (`tenants.0.arrivals.rate_per_s`) and the values' TOML text.
pub type Fields = BTreeMap<String, String>;

/// Flattens a parsed `scenario.toml`.
pub fn flatten(table: &toml::Table) -> Fields {
    let mut out = Fields::new();
    for (k, v) in table {
        walk(k, v, &mut out);
    }
    out
}

fn walk(key: &str, value: &toml::Value, out: &mut Fields) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                walk(&format!("{key}.{k}"), v, out);
            }
        }
        toml::Value::Array(items) if items.iter().all(toml::Value::is_table) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{key}.{i}"), v, out);
            }
        }
        toml::Value::String(s) => {
            out.insert(key.to_string(), s.clone());
        }
        other => {
            out.insert(key.to_string(), other.to_string());
        }
    }
}

/// One label per run, in order: `name s<seed>` and the fields (other than
/// `run.name` and `run.seed`) whose values are not the same in every run,
/// `key=value` (`key=-` where a run lacks the field). Runs still alike
/// (the same scenario and seed) get their directory's name after it.
/// `runs`: each run's fields (`None`: no readable `scenario.toml`) and its
/// directory's name.
pub fn labels(runs: &[(Option<&Fields>, &str)]) -> Vec<String> {
    let keys: BTreeSet<&String> = runs
        .iter()
        .filter_map(|(f, _)| *f)
        .flat_map(|f| f.keys())
        .collect();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| *k != "run.name" && *k != "run.seed")
        .filter(|k| {
            let mut values = runs
                .iter()
                .filter_map(|(f, _)| *f)
                .map(|f| f.get(*k).map(String::as_str));
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .collect();
    let mut out: Vec<String> = runs
        .iter()
        .map(|(fields, dir)| {
            let Some(f) = fields else {
                return dir.to_string();
            };
            let name = f.get("run.name").map_or("run", String::as_str);
            let seed = f.get("run.seed").map_or("?", String::as_str);
            let mut label = format!("{name} s{seed}");
            for k in differing.iter().take(SHOWN) {
                let v = f.get(*k).map_or("-", String::as_str);
                label.push_str(&format!(" {k}={v}"));
            }
            if differing.len() > SHOWN {
                label.push_str(&format!(" (+{} more)", differing.len() - SHOWN));
            }
            label
        })
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for l in &out {
        *seen.entry(l.clone()).or_default() += 1;
    }
    for (label, (_, dir)) in out.iter_mut().zip(runs) {
        if seen[label.as_str()] > 1 {
            label.push_str(&format!(" ({dir})"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Option<Fields> {
        Some(flatten(&text.parse::<toml::Table>().unwrap()))
    }

    #[test]
    fn runs_are_told_apart_by_what_differs() {
        let a = r#"
[run]
name = "quickstart"
seed = 1
[scheduler]
placement = "random"
[[tenants]]
name = "w"
arrivals = { rate_per_s = 0.5 }
"#;
        let b = a.replace("\"random\"", "\"best-fit\"");
        let c = a.replace("0.5", "0.25").replace("seed = 1", "seed = 2");
        let (fa, fb, fc) = (fields(a), fields(&b), fields(&c));
        let got = labels(&[(fa.as_ref(), "x"), (fb.as_ref(), "y"), (fc.as_ref(), "z")]);
        assert_eq!(
            got,
            [
                "quickstart s1 scheduler.placement=random tenants.0.arrivals.rate_per_s=0.5",
                "quickstart s1 scheduler.placement=best-fit tenants.0.arrivals.rate_per_s=0.5",
                "quickstart s2 scheduler.placement=random tenants.0.arrivals.rate_per_s=0.25",
            ]
        );
        let alike = labels(&[(fa.as_ref(), "r1"), (fa.as_ref(), "r2")]);
        assert_eq!(alike, ["quickstart s1 (r1)", "quickstart s1 (r2)"]);
        let lost = labels(&[(None, "old"), (fa.as_ref(), "new")]);
        assert_eq!(lost[0], "old");
        assert_eq!(lost[1], "quickstart s1");
    }

    #[test]
    fn many_differences_are_counted_not_listed() {
        let a = "[run]\nname = \"n\"\nseed = 1\n[x]\na = 1\nb = 1\nc = 1\nd = 1\ne = 1\n";
        let b = a.replace("= 1\n", "= 2\n").replace("seed = 2", "seed = 1");
        let (fa, fb) = (fields(a), fields(&b));
        let got = labels(&[(fa.as_ref(), "a"), (fb.as_ref(), "b")]);
        assert_eq!(got[0], "n s1 x.a=1 x.b=1 x.c=1 (+2 more)");
    }
}
