//! Alibaba cluster-trace-v2018, `batch_task` and `batch_instance`.
//!
//! Schema: Alibaba `clusterdata/cluster-trace-v2018/schema.md`, §1.5
//! "Batch Task" (9 fields) and §1.6 "Batch Instance" (14 fields); CSV
//! without a header. Times are seconds since the start of the trace.
//!
//! `batch_task`: `task_name, instance_num, job_name, task_type, status,
//! start_time, end_time, plan_cpu, plan_mem`. A row with status
//! `Terminated` becomes `instance_num` tasks (its instances), each arriving
//! at `start_time`, running `end_time - start_time`, with `plan_cpu / 100`
//! cores (100 is one core) × `cores_per_unit` and `plan_mem / 100` of the
//! largest machine's memory (`gb_per_unit`). Other statuses (`Running`,
//! `Waiting`, `Failed`, …), or no positive run time or CPU plan, are
//! dropped and counted.
//!
//! `batch_instance`: `instance_name, task_name, job_name, task_type,
//! status, start_time, end_time, machine_id, seq_no, total_seq_no, cpu_avg,
//! cpu_max, mem_avg, mem_max`. A `Terminated` row is one task: it arrives
//! at `start_time`, runs `end_time - start_time`, with its observed peak
//! as its demand: `cpu_max / 100` cores (`cpu_avg` when `cpu_max` is empty)
//! and `mem_max / 100` of the largest machine's memory (`mem_avg` likewise).
//!
//! A negative value (the tables write -1 for one they lack) in a CPU or
//! memory column is read as missing, normalised memory above 100 as 100,
//! and a row identical to one before it with the same `start_time` is
//! dropped: each is counted as a known defect (`docs/traces.md`, "Known
//! defects").
//!
//! Neither table has a priority: every task gets the tenant's `priority`
//! (these are the batch workloads Alibaba co-locates with its online
//! services). Types and machines are ignored.
//!
//! **DAGs.** `job_name` names the task's job, and `task_name` encodes its
//! place in the job's DAG (schema.md §1.5): a letter prefix, the task's
//! number, and the numbers of the tasks it depends on, joined by `_`
//! (`M1`: task 1, a root; `R2_1`: task 2 after task 1; `J5_3_4`: task 5
//! after 3 and 4). A name of any other shape (`task_…`, `MergeTask`) has
//! no dependency. The tenant starts a task only after every instance of
//! the tasks it names has ended ([`crate::trace_jobs`]).
//!
//! The published tables are not sorted by time: sort them by
//! `start_time` (field 6) first, e.g. `sort -t, -k6,6n`; an earlier start
//! after a later one is an error naming both lines.

use std::collections::HashSet;

use super::common::{DefectKind, Found, ImportError, ImportOptions, Tally, TaskReader};
use super::lines::{Lines, Row, Sep, split};
use crate::trace::{AppRef, DagTask, TraceJob, TraceTask, job_key};

pub const TASK_FIELDS: [&str; 9] = [
    "task_name",
    "instance_num",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
];

pub const INSTANCE_FIELDS: [&str; 14] = [
    "instance_name",
    "task_name",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "machine_id",
    "seq_no",
    "total_seq_no",
    "cpu_avg",
    "cpu_max",
    "mem_avg",
    "mem_max",
];

pub struct Reader {
    lines: Lines,
    spans: Vec<(usize, usize)>,
    instances: bool,
    cores_per_unit: f64,
    gb_per_unit: f64,
    priority: u8,
    /// The current task and how many more copies of it to hand out.
    repeat: Option<(TraceTask, u64)>,
    last: (u64, u64),
    /// Hashes of the rows given tasks at the latest start_time: a sorted
    /// table's duplicate rows share their start_time.
    same_start: (u64, HashSet<u64>),
    /// `batch_instance`: the machine table's ids, when the scenario gives it.
    known_machines: Option<std::sync::Arc<std::collections::BTreeSet<String>>>,
}

/// Rows of one start_time whose hashes are kept; duplicates past them go
/// unnoticed, so memory stays bounded whatever the file.
pub const MAX_SAME_START: usize = 1 << 20;

/// FNV-1a: a hash that is the same on every platform and toolchain.
fn row_hash(row: &[u8]) -> u64 {
    row.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A normalised percentage field: empty or negative (the tables write -1
/// for a value they lack) is `None`.
fn percent(row: &Row<'_>, i: usize) -> Result<Option<f64>, ImportError> {
    let t = row.text(i)?;
    if t.is_empty() {
        return Ok(None);
    }
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| (v >= 0.0).then_some(v + 0.0))
        .ok_or_else(|| row.err(i, format!("must be a number, got `{t}`")))
}

/// The first of `fields` (a peak, then its average) with a value, and its field.
fn first(row: &Row<'_>, fields: &[usize]) -> Result<Option<(f64, usize)>, ImportError> {
    let mut out = None;
    for &i in fields {
        if let (None, Some(v)) = (out, percent(row, i)?) {
            out = Some((v, i));
        }
    }
    Ok(out)
}

impl Reader {
    pub fn new(lines: Lines, o: &ImportOptions, instances: bool) -> Self {
        Reader {
            lines,
            spans: Vec::new(),
            instances,
            cores_per_unit: o.cores_per_unit,
            gb_per_unit: o.gb_per_unit,
            priority: o.default_priority,
            repeat: None,
            last: (0, 0),
            same_start: (0, HashSet::new()),
            known_machines: o.known_machines.clone().filter(|_| instances),
        }
    }

    /// The row's task and its number of copies; `None` for a row that ran
    /// no task (counted as dropped by the caller) or a blank line.
    fn parse(&self, found: &mut Found) -> Result<Option<Option<(TraceTask, u64)>>, ImportError> {
        if self.lines.buf.trim_ascii().is_empty() {
            return Ok(None);
        }
        let row = self.lines.row(
            &self.spans,
            if self.instances {
                &INSTANCE_FIELDS
            } else {
                &TASK_FIELDS
            },
        );
        row.expect_fields()?;
        let start = row.seconds(5)?;
        if start < self.last.0 {
            return Err(row.err(
                5,
                format!(
                    "{} s is earlier than {} s on line {}: sort the table by start_time first (sort -t, -k6,6n)",
                    start / 1_000_000_000,
                    self.last.0 / 1_000_000_000,
                    self.last.1
                ),
            ));
        }
        let end = row.seconds(6)?;
        let status = row.text(4)?;
        let (copies, (cpu_at, cpu), (mem_at, mem)) = if self.instances {
            (
                Some(1),
                (11, first(&row, &[11, 10])?),
                (13, first(&row, &[13, 12])?),
            )
        } else {
            let n = row.opt_u64(1)?;
            (n, (7, first(&row, &[7])?), (8, first(&row, &[8])?))
        };
        if status != "Terminated" {
            return Ok(Some(None));
        }
        if end <= start {
            found.add(DefectKind::AlibabaNoRunTime, row.column(6));
            return Ok(Some(None));
        }
        if copies == Some(0) {
            found.add(DefectKind::AlibabaNoInstances, row.column(1));
            return Ok(Some(None));
        }
        let Some((cpu, cpu_from)) = cpu.filter(|c| c.0 > 0.0) else {
            found.add(DefectKind::AlibabaCpuMissing, row.column(cpu_at));
            return Ok(Some(None));
        };
        if copies.is_none() {
            found.add(DefectKind::AlibabaInstanceNumMissing, row.column(1));
        }
        if let Some(known) = &self.known_machines {
            let machine = row.text(7)?;
            if !machine.is_empty() && !known.contains(machine) {
                found.add(DefectKind::AlibabaUnknownMachine, row.column(7));
            }
        }
        for (from, at) in [(cpu_from, cpu_at), (mem.map_or(mem_at, |m| m.1), mem_at)] {
            if from != at {
                found.add(DefectKind::AlibabaPeakMissing, row.column(at));
            }
        }
        let mem = match mem {
            None => {
                found.add(DefectKind::AlibabaMemoryMissing, row.column(mem_at));
                0.0
            }
            Some((m, i)) if m > 100.0 => {
                found.add(DefectKind::AlibabaMemoryOver100, row.column(i));
                100.0
            }
            Some((m, _)) => m,
        };
        let (task_name, job_name) = match self.instances {
            true => (row.text(1)?, row.text(2)?),
            false => (row.text(0)?, row.text(2)?),
        };
        let job = (!job_name.is_empty()).then(|| {
            Box::new(TraceJob {
                key: job_key(job_name),
                dag: dag_task(task_name),
                apart: false,
            })
        });
        Ok(Some(Some((
            TraceTask {
                arrival: start,
                priority: self.priority,
                cpu: cpu / 100.0 * self.cores_per_unit,
                memory_gb: mem / 100.0 * self.gb_per_unit,
                duration: end - start,
                app: AppRef::None,
                line: self.lines.line,
                requested: 0,
                job,
            },
            copies.unwrap_or(1),
        ))))
    }
}

/// A task's place in its job's DAG from its `task_name`: letters, its
/// number, then `_` and each parent's number; `None` for any other shape.
pub fn dag_task(name: &str) -> Option<DagTask> {
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if digits.len() == name.len() {
        return None;
    }
    let mut numbers = digits
        .split('_')
        .map(|n| match n.bytes().all(|b| b.is_ascii_digit()) {
            true => n.parse::<u32>().ok(),
            false => None,
        });
    let task = numbers.next()??;
    let after = numbers.collect::<Option<Vec<u32>>>()?;
    Some(DagTask { task, after })
}

impl TaskReader for Reader {
    fn next_task(&mut self, tally: &mut Tally) -> Result<Option<TraceTask>, ImportError> {
        loop {
            if let Some((task, left)) = &mut self.repeat {
                let t = task.clone();
                *left -= 1;
                if *left == 0 {
                    self.repeat = None;
                }
                return Ok(Some(t));
            }
            if !self.lines.next_counted(tally)? {
                return Ok(None);
            }
            split(&self.lines.buf, Sep::Comma, &mut self.spans);
            let mut found = Found::default();
            match self.parse(&mut found) {
                Ok(Some(Some((task, copies)))) => {
                    self.last = (task.arrival, task.line);
                    if self.same_start.0 != task.arrival {
                        self.same_start = (task.arrival, HashSet::new());
                    }
                    let seen = &mut self.same_start.1;
                    let hash = row_hash(self.lines.buf.trim_ascii());
                    if seen.contains(&hash) {
                        tally.defect(DefectKind::AlibabaDuplicateRow, task.line, None);
                        continue;
                    }
                    if seen.len() < MAX_SAME_START {
                        seen.insert(hash);
                    }
                    tally.found(&found, task.line);
                    self.repeat = Some((task, copies));
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
    fn terminated_tasks_become_their_instances() {
        let text = "\
M1,2,j_1,1,Terminated,100,160,50,0.5
R2_1,1,j_1,1,Running,120,0,100,1
M3,1,j_2,12,Terminated,130,131,200,
";
        let (tasks, stats) = read(TraceFormat::Alibaba2018, text, &options()).expect("good");
        let got: Vec<_> = tasks
            .iter()
            .map(|t| {
                (
                    t.arrival / S,
                    t.duration / S,
                    t.cpu,
                    t.memory_gb,
                    t.priority,
                    t.line,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (100, 60, 8.0, 0.32, 4, 1),
                (100, 60, 8.0, 0.32, 4, 1),
                (130, 1, 32.0, 0.0, 4, 3)
            ]
        );
        assert_eq!(stats.tasks_dropped, 1);
    }

    #[test]
    fn instances_use_their_peaks() {
        let mut o = options();
        o.cores_per_unit = 1.0;
        let text = "i_1,M1,j_1,1,Terminated,10,70,m_1,1,1,80,150,0.5,1.0\n";
        let (tasks, _) = read(TraceFormat::Alibaba2018Instance, text, &o).expect("good");
        assert_eq!(tasks.len(), 1);
        assert_eq!((tasks[0].cpu, tasks[0].memory_gb), (1.5, 0.64));
    }

    /// The 1-based column of field `i` (0-based) of a CSV row.
    fn col(row: &str, i: usize) -> u64 {
        row.split(',')
            .take(i)
            .map(|f| f.len() as u64 + 1)
            .sum::<u64>()
            + 1
    }

    /// Issue 41: each defect of `batch_task` is counted where it is; a row
    /// that is not Terminated is not one.
    #[test]
    fn task_defects_are_counted_with_their_places() {
        use super::super::{DefectKind as K, Place};
        let rows = [
            "M1,1,j_1,1,Terminated,100,160,50,0.5",
            "M1,1,j_1,1,Terminated,100,160,50,0.5",
            "M2,1,j_1,1,Terminated,110,110,50,0.5",
            "M3,0,j_1,1,Terminated,120,130,50,0.5",
            "M4,,j_1,1,Terminated,130,140,50,0.5",
            "M5,1,j_1,1,Terminated,140,150,,0.5",
            "M6,1,j_1,1,Terminated,150,160,-1,0.5",
            "M7,1,j_1,1,Terminated,160,170,50,",
            "M8,1,j_1,1,Terminated,170,180,50,-1",
            "M9,1,j_1,1,Terminated,180,190,50,101",
            "R1,1,j_1,1,Running,190,0,,",
            "M1,1,j_1,1,Terminated,190,200,50,0.5",
        ];
        let text = rows.join("\n");
        let (tasks, stats) = read(TraceFormat::Alibaba2018, &text, &options()).expect("good");
        let got: Vec<_> = tasks.iter().map(|t| (t.line, t.memory_gb)).collect();
        assert_eq!(
            got,
            vec![
                (1, 0.32),
                (5, 0.32),
                (8, 0.0),
                (9, 0.0),
                (10, 64.0),
                (12, 0.32)
            ]
        );
        assert_eq!(stats.tasks_dropped, 5);
        let at = |line: usize, field: Option<usize>| {
            Some(Place {
                line: line as u64,
                column: field.map(|i| col(rows[line - 1], i)),
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
                (K::AlibabaDuplicateRow, 1, [at(2, None), None, None]),
                (K::AlibabaNoRunTime, 1, [at(3, Some(6)), None, None]),
                (K::AlibabaNoInstances, 1, [at(4, Some(1)), None, None]),
                (
                    K::AlibabaInstanceNumMissing,
                    1,
                    [at(5, Some(1)), None, None]
                ),
                (
                    K::AlibabaCpuMissing,
                    2,
                    [at(6, Some(7)), at(7, Some(7)), None]
                ),
                (
                    K::AlibabaMemoryMissing,
                    2,
                    [at(8, Some(8)), at(9, Some(8)), None]
                ),
                (K::AlibabaMemoryOver100, 1, [at(10, Some(8)), None, None]),
            ]
        );
    }

    /// Issue 41: `batch_instance` falls back to the averages, counted, and
    /// reads -1 as a value it lacks.
    #[test]
    fn instance_defects_are_counted_with_their_places() {
        use super::super::{DefectKind as K, Place};
        let mut o = options();
        o.cores_per_unit = 1.0;
        let rows = [
            "i_1,M1,j_1,1,Terminated,10,70,m_1,1,1,80,,0.5,",
            "i_2,M1,j_1,1,Terminated,20,70,m_1,1,1,-1,-1,-1,-1",
            "i_3,M1,j_1,1,Terminated,30,70,m_1,1,1,80,150,90,120",
        ];
        let text = rows.join("\n");
        let (tasks, stats) = read(TraceFormat::Alibaba2018Instance, &text, &o).expect("good");
        let got: Vec<_> = tasks.iter().map(|t| (t.cpu, t.memory_gb)).collect();
        assert_eq!(got, vec![(0.8, 0.32), (1.5, 64.0)]);
        let at = |line: usize, i: usize| {
            Some(Place {
                line: line as u64,
                column: Some(col(rows[line - 1], i)),
            })
        };
        let d = stats.defects;
        assert_eq!(d.get(K::AlibabaPeakMissing).count, 2);
        assert_eq!(
            d.get(K::AlibabaPeakMissing).examples,
            [at(1, 11), at(1, 13), None]
        );
        assert_eq!(
            d.get(K::AlibabaCpuMissing).examples,
            [at(2, 11), None, None]
        );
        assert_eq!(
            d.get(K::AlibabaMemoryOver100).examples,
            [at(3, 13), None, None]
        );
        assert_eq!(d.present().count(), 3);
    }

    #[test]
    fn task_names_give_the_dag_and_job_names_the_job() {
        use super::dag_task;
        use crate::trace::{DagTask, job_key};
        let dag = |task, after: &[u32]| {
            Some(DagTask {
                task,
                after: after.to_vec(),
            })
        };
        assert_eq!(dag_task("M1"), dag(1, &[]));
        assert_eq!(dag_task("R2_1"), dag(2, &[1]));
        assert_eq!(dag_task("J5_3_4"), dag(5, &[3, 4]));
        for none in ["task_Nzg3ODA=", "MergeTask", "M", "R2_", "12", "M1_x"] {
            assert_eq!(dag_task(none), None, "{none}");
        }
        let text =
            "R2_1,1,j_7,1,Terminated,100,160,50,0.5\ntask_x,1,,1,Terminated,100,160,50,0.5\n";
        let (tasks, _) = read(TraceFormat::Alibaba2018, text, &options()).expect("good");
        let job = tasks[0].job.as_deref().expect("named job");
        assert_eq!(
            (job.key, job.dag.clone(), job.apart),
            (job_key("j_7"), dag(2, &[1]), false)
        );
        assert_eq!(tasks[1].job, None, "no job name, no job");
        assert_ne!(job_key("j_7"), job_key("j_8"));
    }

    #[test]
    fn unsorted_rows_are_refused_with_both_lines() {
        let text = "M1,1,j_1,1,Terminated,100,160,50,0.5\nM2,1,j_1,1,Terminated,90,160,50,0.5\n";
        let e = read(TraceFormat::Alibaba2018, text, &options()).expect_err("order");
        assert!(
            e.to_string()
                .starts_with("t:2:23: field 6 (start_time): 90 s is earlier than 100 s on line 1"),
            "{e}"
        );
    }
}
