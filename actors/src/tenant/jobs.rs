//! The TPC-DS-like DAG jobs of a `dag_jobs` tenant (harvesting §6.1):
//! their templates, the jobs under way and their times. The tenant
//! submits their stages as their parents finish.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;
use serde::Serialize;

use crate::config::{DagHistory, DagJobsConfig};
use crate::google::{self, JobLength, Template};
use crate::kernel::Metrics;
use crate::sampling::to_nanos;

/// Jobs submitted as short, medium and long (`dag_jobs`).
pub(super) const DAG_SUBMITTED: [&str; 3] = ["jobs_short", "jobs_medium", "jobs_long"];
/// Their job times, s.
pub(super) const DAG_TIMES: [&str; 3] =
    ["job_time_s_short", "job_time_s_medium", "job_time_s_long"];

/// The DAG jobs of a `dag_jobs` tenant: its templates (drawn at start from
/// its own stream), each template's last run, and the jobs under way.
pub(super) struct Dags {
    pub(super) generator: google::DagJobs,
    pub(super) count: u32,
    pub(super) memory_mb: u64,
    pub(super) short_below: SimTime,
    pub(super) long_from: SimTime,
    pub(super) history: DagHistory,
    pub(super) templates: Vec<Template>,
    /// Per template: its J.req, children of each stage, and its last run.
    pub(super) req: Vec<u32>,
    pub(super) children: Vec<Vec<Vec<u32>>>,
    pub(super) last_run: Vec<Option<SimTime>>,
    pub(super) jobs: BTreeMap<u64, DagJob>,
    /// The job and stage of every task submitted and not yet done.
    pub(super) tasks: BTreeMap<u64, (u64, u32)>,
    pub(super) submitted: [u64; 3],
    pub(super) completed: u64,
    /// Job times (s), with the length type each job was submitted as.
    pub(super) times: Vec<(JobLength, f64)>,
}

/// A DAG job under way.
pub(super) struct DagJob {
    pub(super) template: u32,
    pub(super) length: JobLength,
    pub(super) submitted_at: SimTime,
    /// Tasks of each stage not done yet, and parents of each stage not done.
    pub(super) tasks_left: Vec<u32>,
    pub(super) parents_left: Vec<u32>,
    pub(super) stages_left: u32,
}

impl Dags {
    pub(super) fn new(cfg: &DagJobsConfig) -> Self {
        Dags {
            generator: google::DagJobs {
                stages: (cfg.stages_min, cfg.stages_max),
                tasks: cfg.widths(),
                work_ns: cfg.work_ns(),
            },
            count: cfg.templates,
            memory_mb: mb(cfg.memory_gb),
            short_below: cfg.short_below.as_nanos(),
            long_from: cfg.long_from.as_nanos(),
            history: cfg.history,
            templates: Vec::new(),
            req: Vec::new(),
            children: Vec::new(),
            last_run: Vec::new(),
            jobs: BTreeMap::new(),
            tasks: BTreeMap::new(),
            submitted: [0; 3],
            completed: 0,
            times: Vec::new(),
        }
    }

    /// Its jobs' counts and times.
    pub(super) fn finish(&self, out: &mut Metrics) {
        out.add("jobs_completed", self.completed);
        out.add("jobs_running_end", self.jobs.len() as u64);
        for l in JobLength::ALL {
            out.add(DAG_SUBMITTED[l as usize], self.submitted[l as usize]);
            out.declare_samples(DAG_TIMES[l as usize]);
        }
        out.declare_samples("job_time_s");
        for &(l, t) in &self.times {
            out.sample("job_time_s", t);
            out.sample(DAG_TIMES[l as usize], t);
        }
    }

    /// Draws the templates, once.
    pub(super) fn draw_templates(&mut self, rng: &mut crate::kernel::ActorRng) {
        if !self.templates.is_empty() {
            return;
        }
        for _ in 0..self.count {
            let t = self.generator.template(rng);
            self.req.push(t.max_concurrency());
            self.children.push(t.children());
            self.last_run.push(match self.history {
                DagHistory::None => None,
                DagHistory::Ideal => Some(t.critical_path_ns()),
            });
            self.templates.push(t);
        }
    }
}

#[derive(Serialize)]
pub(super) struct JobLog {
    pub(super) job: u64,
    pub(super) template: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) length: Option<JobLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) req: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) time_ns: Option<u64>,
}

/// GB to whole MB, rounded to nearest.
pub(super) fn mb(gb: f64) -> u64 {
    to_nanos(gb * 1024.0)
}
