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

use super::common::{ImportError, ImportOptions, Tally, TaskReader};
use super::lines::{Lines, Sep, split};
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
        }
    }

    /// The row's task and its number of copies; `None` for a row that ran
    /// no task (counted as dropped by the caller) or a blank line.
    fn parse(&self) -> Result<Option<Option<(TraceTask, u64)>>, ImportError> {
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
        let (copies, cpu, mem) = if self.instances {
            let cpu = row.opt_f64(11)?.or(row.opt_f64(10)?);
            let mem = row.opt_f64(13)?.or(row.opt_f64(12)?);
            (1, cpu, mem)
        } else {
            let n = row.opt_u64(1)?.unwrap_or(1);
            (n, row.opt_f64(7)?, row.opt_f64(8)?)
        };
        if status != "Terminated" || end <= start || copies == 0 {
            return Ok(Some(None));
        }
        let Some(cpu) = cpu.filter(|c| *c > 0.0) else {
            return Ok(Some(None));
        };
        if mem.is_some_and(|m| m > 100.0) {
            let i = if self.instances { 13 } else { 8 };
            return Err(row.err(i, "normalised memory must be from 0 to 100"));
        }
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
                memory_gb: mem.unwrap_or(0.0) / 100.0 * self.gb_per_unit,
                duration: end - start,
                app: AppRef::None,
                line: self.lines.line,
                requested: 0,
                job,
            },
            copies,
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
            match self.parse() {
                Ok(Some(Some((task, copies)))) => {
                    self.last = (task.arrival, task.line);
                    self.repeat = Some((task, copies));
                }
                Ok(Some(None)) => tally.stats.tasks_dropped += 1,
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
