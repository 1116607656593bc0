//! Azure Public Dataset VM trace, `vmtable`.
//!
//! Schema: Azure `AzurePublicDatasetV1.md` / `AzurePublicDatasetV2.md`
//! ("VM information table"): CSV without a header, 11 fields `vmid,
//! subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu,
//! p95maxcpu, vmcategory, vmcorecount, vmmemory`. Times are seconds from
//! the start of the trace (multiples of 300 s).
//!
//! A VM is a task: it arrives at `vmcreated` and runs `vmdeleted -
//! vmcreated` (VMs still alive at the end of the trace carry its last
//! timestamp); a VM with no positive lifetime is dropped. Its demand is
//! its size: `vmcorecount` cores × `cores_per_unit` and `vmmemory` GB ×
//! `gb_per_unit`. V1 gives exact sizes (`4`, `1.75`); V2 gives buckets
//! (`2`, `4`, `8`, `24`, `>24`; `2`, `4`, `8`, `32`, `64`, `>64`): an open
//! bucket `>N` is read as 2N. Utilisation (`maxcpu`, `avgcpu`, `p95maxcpu`)
//! is checked as numbers but not used: the emulator computes its own.
//!
//! Priorities from `vmcategory`: `Interactive` → 9 (production),
//! `Delay-insensitive` → 2 (the lowest middle class, batch-like),
//! `Unknown` → the tenant's `priority`. The published table is not sorted:
//! sort it by `vmcreated` (field 4) first, e.g. `sort -t, -k4,4n`.

use super::common::{DefectKind, Found, ImportError, ImportOptions, Tally, TaskReader};
use super::lines::{Lines, Row, Sep, split};
use crate::trace::{AppRef, TraceTask};

pub const FIELDS: [&str; 11] = [
    "vmid",
    "subscriptionid",
    "deploymentid",
    "vmcreated",
    "vmdeleted",
    "maxcpu",
    "avgcpu",
    "p95maxcpu",
    "vmcategory",
    "vmcorecount",
    "vmmemory",
];

/// Priority of an `Interactive` VM.
pub const INTERACTIVE: u8 = 9;
/// Priority of a `Delay-insensitive` VM.
pub const DELAY_INSENSITIVE: u8 = 2;

pub struct Reader {
    lines: Lines,
    spans: Vec<(usize, usize)>,
    cores_per_unit: f64,
    gb_per_unit: f64,
    priority: u8,
    last: (u64, u64),
}

/// A size or a V2 bucket (`>N` is 2N).
fn size(row: &Row<'_>, i: usize, found: &mut Found) -> Result<f64, ImportError> {
    let t = row.text(i)?;
    let (open, n) = match t.strip_prefix('>') {
        Some(n) => {
            found.add(DefectKind::AzureOpenSizeBucket, row.column(i));
            (true, n)
        }
        None => (false, t),
    };
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| if open { 2.0 * v } else { v })
        .ok_or_else(|| {
            row.err(
                i,
                format!("must be a positive size or a bucket `>N`, got `{t}`"),
            )
        })
}

impl Reader {
    pub fn new(lines: Lines, o: &ImportOptions) -> Self {
        Reader {
            lines,
            spans: Vec::new(),
            cores_per_unit: o.cores_per_unit,
            gb_per_unit: o.gb_per_unit,
            priority: o.default_priority,
            last: (0, 0),
        }
    }

    fn parse(&self, found: &mut Found) -> Result<Option<Option<TraceTask>>, ImportError> {
        if self.lines.buf.trim_ascii().is_empty() {
            return Ok(None);
        }
        let row = self.lines.row(&self.spans, &FIELDS);
        row.expect_fields()?;
        let created = row.seconds(3)?;
        if created < self.last.0 {
            return Err(row.err(
                3,
                format!(
                    "created before the VM on line {}: sort the table by vmcreated first (sort -t, -k4,4n)",
                    self.last.1
                ),
            ));
        }
        let deleted = row.seconds(4)?;
        for i in 5..=7 {
            row.opt_f64(i)?;
        }
        let priority = match row.text(8)? {
            "Interactive" => INTERACTIVE,
            "Delay-insensitive" => DELAY_INSENSITIVE,
            "Unknown" => self.priority,
            other => {
                return Err(row.err(
                    8,
                    format!("must be Interactive, Delay-insensitive or Unknown, got `{other}`"),
                ));
            }
        };
        let cores = size(&row, 9, found)?;
        let memory = size(&row, 10, found)?;
        if deleted <= created {
            *found = Found::default();
            found.add(DefectKind::AzureNoLifetime, row.column(4));
            return Ok(Some(None));
        }
        Ok(Some(Some(TraceTask {
            arrival: created,
            priority,
            cpu: cores * self.cores_per_unit,
            memory_gb: memory * self.gb_per_unit,
            duration: deleted - created,
            app: AppRef::None,
            line: self.lines.line,
            requested: 0,
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
            split(&self.lines.buf, Sep::Comma, &mut self.spans);
            let mut found = Found::default();
            match self.parse(&mut found) {
                Ok(Some(Some(task))) => {
                    tally.found(&found, task.line);
                    self.last = (task.arrival, task.line);
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

#[cfg(test)]
mod tests {
    use super::super::TraceFormat;
    use super::super::test_support::{options, read};

    const S: u64 = 1_000_000_000;

    #[test]
    fn vms_become_tasks() {
        let mut o = options();
        o.cores_per_unit = 1.0;
        o.gb_per_unit = 1.0;
        let text = "\
v1,s1,d1,0,3600,90.5,10.2,80.1,Interactive,2,4
v2,s1,d1,300,300,10,1,5,Delay-insensitive,4,8
v3,s2,d2,300,1200,10,1,5,Unknown,>24,>64
v4,s2,d2,600,900,10,1,5,Delay-insensitive,1,1.75
";
        let (tasks, stats) = read(TraceFormat::AzureVm, text, &o).expect("good");
        let got: Vec<_> = tasks
            .iter()
            .map(|t| {
                (
                    t.arrival / S,
                    t.duration / S,
                    t.cpu,
                    t.memory_gb,
                    t.priority,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 3600, 2.0, 4.0, 9),
                (300, 900, 48.0, 128.0, 4),
                (600, 300, 1.0, 1.75, 2)
            ]
        );
        assert_eq!(stats.tasks_dropped, 1);
    }

    /// Issue 41: a VM with no lifetime (only that: its open buckets are
    /// not counted, it is dropped) and open size buckets, where they are.
    #[test]
    fn defects_are_counted_with_their_places() {
        use super::super::{DefectKind as K, Place};
        let text = "\
v1,s1,d1,0,3600,90.5,10.2,80.1,Interactive,2,4
v2,s1,d1,300,300,10,1,5,Delay-insensitive,>24,8
v3,s2,d2,300,1200,10,1,5,Unknown,>24,>64
";
        let (tasks, stats) = read(TraceFormat::AzureVm, text, &options()).expect("good");
        assert_eq!(tasks.len(), 2);
        let at = |line, column| {
            Some(Place {
                line,
                column: Some(column),
            })
        };
        let got: Vec<_> = stats
            .defects
            .present()
            .map(|(k, c)| (k, c.count, c.examples))
            .collect();
        assert_eq!(
            got,
            vec![
                (K::AzureNoLifetime, 1, [at(2, 14), None, None]),
                (K::AzureOpenSizeBucket, 2, [at(3, 34), at(3, 38), None]),
            ]
        );
    }

    #[test]
    fn an_unknown_category_names_its_column() {
        let e = read(
            TraceFormat::AzureVm,
            "v1,s1,d1,0,3600,90,10,80,Batch,2,4\n",
            &options(),
        )
        .expect_err("bad");
        assert!(
            e.to_string().starts_with("t:1:26: field 9 (vmcategory)"),
            "{e}"
        );
    }
}
