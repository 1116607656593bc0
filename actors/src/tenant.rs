//! Workload tenants: submit tasks from a generator and record how long each
//! took, as the user of the cluster experiences it. A `mapreduce` tenant
//! submits a whole job per arrival (thesis §4.2.2): its tasks in one go,
//! master first, all at the arrival instant. A `dag_jobs` tenant acts as
//! the application master of TPC-DS-like DAG jobs (harvesting §5.3, §6.1):
//! it submits a job's stages as their parents finish, tells the scheduler
//! each job's maximum concurrency and length type, and records job times.

use std::sync::Arc;

use std::collections::BTreeMap;

use dcemu_topology::{Duration, SimTime};
use serde::Serialize;

use crate::config::{
    AppOrder, ArrivalProcess, DagHistory, DagJobsConfig, ServiceDistribution, SyntheticConfig,
    TenantConfig,
};
use crate::google::{self, DagRef, JobLength, Template};
use crate::hpc_jobs::HpcJobs;
use crate::kernel::{Ctx, Metrics, ModelError};
use crate::net::{Body, Inbox, Nic};
use crate::net::{Msg, unexpected};
use crate::sampling::{exponential, index, normal, to_nanos};
use crate::task::{DistRef, JobRef, TASK_ID_BLOCK, Task};
use crate::trace::{AppRef, TraceTask};
use crate::trace_formats::{ImportStats, StreamSpec, TraceFormat, TraceStream};
use crate::world::World;

pub struct WorkloadTenant {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    process: ArrivalProcess,
    mean_gap_ns: f64,
    gap_stddev_ns: f64,
    /// Bursty arrivals: the state of the two-rate process.
    bursts: Option<Bursts>,
    work: Work,
    /// What the Google-like generators drew (thesis Table 5.2, Table 9.2),
    /// for the `kind = "input"` experiments; none for other work.
    drawn: Option<Drawn>,
    start: SimTime,
    stop: SimTime,
    flow_bps: u64,
    priority: u8,
    first_id: u64,
    submitted: u64,
    /// Jobs submitted (`mapreduce` tenants).
    jobs: u64,
    done: u64,
    response_s: Vec<f64>,
    /// Response time per acknowledged task with its priority class.
    by_class: Vec<(u8, f64)>,
    waiting_s: Vec<f64>,
    /// Ideal time of each application submitted and not yet done.
    ideal: std::collections::BTreeMap<u64, u64>,
    /// Ideal time over response time, per acknowledged application.
    perf_response: Vec<f64>,
    /// Paragon §5's load level: cores × ideal seconds of the catalog
    /// applications submitted, and the first and last submission times.
    offered: Offered,
    /// An SWF log's jobs, graded as HPC schedulers are (wait, bounded
    /// slowdown; `jobs.csv`); none for other work.
    hpc: Option<Box<HpcJobs>>,
}

/// The inputs a Google-like generator drew, to set beside the statistics
/// the thesis reports about its trace: the class mix and mean CPU demand of
/// Table 5.2 and the arrival peaks and longest gap of Table 9.2.
#[derive(Default)]
struct Drawn {
    per_class: [u64; 12],
    /// CPU demand Δ of each task, cpu·s of the normalised capacity.
    demand: Vec<f64>,
    /// Submission times, in order.
    at: Vec<SimTime>,
}

/// Counters of tasks submitted per class (`tasks_submitted_class_<p>`).
const SUBMITTED_BY_CLASS: [&str; 12] = [
    "tasks_submitted_class_0",
    "tasks_submitted_class_1",
    "tasks_submitted_class_2",
    "tasks_submitted_class_3",
    "tasks_submitted_class_4",
    "tasks_submitted_class_5",
    "tasks_submitted_class_6",
    "tasks_submitted_class_7",
    "tasks_submitted_class_8",
    "tasks_submitted_class_9",
    "tasks_submitted_class_10",
    "tasks_submitted_class_11",
];

impl Drawn {
    fn record(&mut self, now: SimTime, t: &google::GoogleTask) {
        if let Some(c) = self.per_class.get_mut(t.priority as usize) {
            *c += 1;
        }
        self.demand.push(t.cpu_demand);
        self.at.push(now);
    }

    /// The most submissions in any window of `window` (sliding, closed on
    /// the left, open on the right).
    fn max_in(&self, window: SimTime) -> u64 {
        let (mut best, mut lo) = (0usize, 0usize);
        for hi in 0..self.at.len() {
            while self.at[hi] - self.at[lo] >= window {
                lo += 1;
            }
            best = best.max(hi + 1 - lo);
        }
        best as u64
    }

    fn finish(&mut self, out: &mut Metrics) {
        for (name, &n) in SUBMITTED_BY_CLASS.iter().zip(&self.per_class) {
            if n > 0 {
                out.add(name, n);
            }
        }
        out.append_samples("task_cpu_demand_s", std::mem::take(&mut self.demand));
        out.add("arrivals_max_1min", self.max_in(60_000_000_000));
        out.add("arrivals_max_10min", self.max_in(600_000_000_000));
        let gap = self.at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        out.add_f64("arrival_gap_s_max", gap as f64 / 1e9);
    }
}

/// What a tenant's catalog applications ask of the cluster (Paragon §5
/// classes load by "the required core count" against the cores available;
/// Fig. 11 draws it from arrivals and ideal execution times).
#[derive(Default)]
struct Offered {
    core_s: f64,
}

impl Offered {
    fn record(&mut self, cores: u32, ideal_s: f64) {
        self.core_s += f64::from(cores) * ideal_s;
    }

    /// This tenant's share of the mean required core count over the
    /// application tenants' common `window`, as a share of the cluster's
    /// `cores`; the shares of all tenants add up to the cluster's load.
    fn load(&self, cores: u64, (from, to): (SimTime, SimTime)) -> Option<f64> {
        let window = to.checked_sub(from)?;
        (window > 0 && cores > 0).then(|| self.core_s / (cores as f64 * window as f64 / 1e9))
    }
}

/// Sample series of response times per priority class (thesis Figure 7.5).
pub const RESPONSE_BY_CLASS: [&str; 12] = [
    "response_s_class_0",
    "response_s_class_1",
    "response_s_class_2",
    "response_s_class_3",
    "response_s_class_4",
    "response_s_class_5",
    "response_s_class_6",
    "response_s_class_7",
    "response_s_class_8",
    "response_s_class_9",
    "response_s_class_10",
    "response_s_class_11",
];

/// Jobs submitted as short, medium and long (`dag_jobs`).
const DAG_SUBMITTED: [&str; 3] = ["jobs_short", "jobs_medium", "jobs_long"];
/// Their job times, s.
const DAG_TIMES: [&str; 3] = ["job_time_s_short", "job_time_s_medium", "job_time_s_long"];

/// GB to whole MB, rounded to nearest.
fn mb(gb: f64) -> u64 {
    to_nanos(gb * 1024.0)
}

/// What a tenant's submissions run, by precedence: its trace, a Google-like
/// generator, catalog applications, plain tasks (the scenario's validation
/// leaves exactly one).
fn work(cfg: &TenantConfig, trace: TraceInput) -> Work {
    if let Some(spec) = trace.1 {
        return Work::Stream(Box::new(Streamed {
            spec,
            stream: None,
            next: None,
        }));
    }
    if let Some(rows) = trace.0 {
        return Work::Trace { rows, next: 0 };
    }
    if cfg.distributed {
        return Work::Mix { rounds_left: 0 };
    }
    if let Some(memory_gb) = cfg.google_memory_gb {
        return Work::Google {
            memory_gb,
            reference_cores: cfg
                .google_reference_cores
                .unwrap_or(google::REFERENCE_CORES),
            mix: cfg.google_class_mix.unwrap_or_default(),
            demand_scale: cfg.google_demand_scale.unwrap_or(1.0),
            demand_cv: cfg.google_demand_cv.unwrap_or(1.0),
        };
    }
    if let Some(g) = &cfg.synthetic {
        return Work::Synthetic(synthetic(g));
    }
    if let Some(g) = &cfg.mapreduce {
        return Work::MapReduce(g.generator());
    }
    if let Some(g) = &cfg.dag_jobs {
        return Work::Dag(Box::new(Dags::new(g)));
    }
    match (cfg.applications, &cfg.service) {
        (Some(order), _) => Work::Apps(order),
        (None, Some(service)) => Work::Service {
            distribution: service.distribution,
            mean_ns: service.mean.as_nanos() as f64,
            memory_mb: mb(service.memory_gb.unwrap_or(0.0)),
        },
        // refused when the scenario loads; a task of 1 s keeps the model total
        (None, None) => Work::Service {
            distribution: ServiceDistribution::Constant,
            mean_ns: 1e9,
            memory_mb: 0,
        },
    }
}

/// The synthetic generator a tenant's `synthetic` table configures.
fn synthetic(g: &SyntheticConfig) -> google::Synthetic {
    let seconds = |d: Duration| d.as_nanos() as f64 / 1e9;
    google::Synthetic {
        cpu_usage: g.cpu_usage,
        memory_usage: g.memory_usage,
        execution_s: seconds(g.execution),
        production_cpu_usage: g.production_cpu_usage,
        production_memory_usage: g.production_memory_usage,
        production_execution_s: seconds(g.production_execution),
        production_priority: g.production_priority,
        memory_gb: g.memory_gb,
        reference_cores: g.reference_cores,
    }
}

/// One submission's demands.
struct Demand {
    service_ns: u64,
    /// The run time its submitter asked for (a log's), ns; 0: none.
    requested_ns: u64,
    app: Option<u32>,
    priority: u8,
    memory_mb: u64,
    cores: u32,
}

/// A two-state Markov-modulated Poisson process: normal and burst rates,
/// exponential time in each state (thesis Table 9.4).
struct Bursts {
    burst_gap_ns: f64,
    every_ns: f64,
    length_ns: f64,
    in_burst: bool,
    /// When the current state ends (the first at the end of a normal stretch).
    until: Option<SimTime>,
}

/// A tenant's trace: the rows of a CSV trace read whole, or a public-format
/// trace to stream.
pub type TraceInput = (Option<Arc<Vec<TraceTask>>>, Option<StreamSpec>);

/// A public-format trace read as the tenant goes: the file is opened when
/// the tenant starts (on the partition that hosts it) and holds one task
/// ahead, the next to submit.
struct Streamed {
    spec: StreamSpec,
    stream: Option<TraceStream>,
    next: Option<TraceTask>,
}

impl Streamed {
    /// Reads the next task into `next` (none at the end of the trace).
    fn advance(&mut self) -> Result<(), ModelError> {
        let stream = match &mut self.stream {
            Some(s) => s,
            None => self.stream.insert(
                TraceStream::open(&self.spec).map_err(|e| ModelError::Input(e.to_string()))?,
            ),
        };
        self.next = stream
            .next_task()
            .map_err(|e| ModelError::Input(e.to_string()))?;
        Ok(())
    }

    fn stats(&self) -> ImportStats {
        self.stream
            .as_ref()
            .map(TraceStream::stats)
            .unwrap_or_default()
    }
}

/// What each submission runs.
enum Work {
    /// The rows of a trace, in order; `next` is the next row to submit.
    Trace {
        rows: Arc<Vec<TraceTask>>,
        next: usize,
    },
    /// A public-format trace, streamed.
    Stream(Box<Streamed>),
    /// A plain task with a service time from a distribution.
    Service {
        distribution: ServiceDistribution,
        mean_ns: f64,
        memory_mb: u64,
    },
    /// A catalog application, chosen in this order.
    Apps(AppOrder),
    /// A task drawn from the Google trace's per-priority statistics.
    Google {
        memory_gb: f64,
        reference_cores: u32,
        mix: google::ClassMix,
        demand_scale: f64,
        demand_cv: f64,
    },
    /// A task from the synthetic Google-like generator (thesis Table 9.4).
    Synthetic(google::Synthetic),
    /// A MapReduce-like job of Table 5.2 tasks per arrival (thesis §4.2.2).
    MapReduce(google::MapReduce),
    /// A TPC-DS-like DAG job per arrival (harvesting §6.1).
    Dag(Box<Dags>),
    /// The `[workload]` mix of distributed applications per arrival, for
    /// this many more arrivals (ASPLOS'16 §5).
    Mix { rounds_left: u32 },
}

/// The DAG jobs of a `dag_jobs` tenant: its templates (drawn at start from
/// its own stream), each template's last run, and the jobs under way.
struct Dags {
    generator: google::DagJobs,
    count: u32,
    memory_mb: u64,
    short_below: SimTime,
    long_from: SimTime,
    history: DagHistory,
    templates: Vec<Template>,
    /// Per template: its J.req, children of each stage, and its last run.
    req: Vec<u32>,
    children: Vec<Vec<Vec<u32>>>,
    last_run: Vec<Option<SimTime>>,
    jobs: BTreeMap<u64, DagJob>,
    /// The job and stage of every task submitted and not yet done.
    tasks: BTreeMap<u64, (u64, u32)>,
    submitted: [u64; 3],
    completed: u64,
    /// Job times (s), with the length type each job was submitted as.
    times: Vec<(JobLength, f64)>,
}

/// A DAG job under way.
struct DagJob {
    template: u32,
    length: JobLength,
    submitted_at: SimTime,
    /// Tasks of each stage not done yet, and parents of each stage not done.
    tasks_left: Vec<u32>,
    parents_left: Vec<u32>,
    stages_left: u32,
}

impl Dags {
    fn new(cfg: &DagJobsConfig) -> Self {
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

    /// Draws the templates, once.
    fn draw_templates(&mut self, rng: &mut crate::kernel::ActorRng) {
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
struct JobLog {
    job: u64,
    template: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<JobLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    req: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_ns: Option<u64>,
}

#[derive(Serialize)]
struct SubmitLog {
    task: u64,
    service_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    app: Option<u32>,
    /// The job of a `mapreduce` task: its master's id (the task's own for
    /// the master).
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<u64>,
    /// The stage of a DAG job's task.
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<u32>,
    /// Its CPU requirement, millionths of the reference machine (when it
    /// declares one).
    #[serde(skip_serializing_if = "is_zero")]
    cpu_ppm: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

#[derive(Serialize)]
struct DoneLog {
    task: u64,
    waiting_ns: u64,
    response_ns: u64,
}

impl WorkloadTenant {
    pub fn new(
        world: Arc<World>,
        cfg: &TenantConfig,
        trace: TraceInput,
        ordinal: u64,
        run_end: SimTime,
    ) -> Self {
        let work = match work(cfg, trace) {
            Work::Mix { .. } => Work::Mix {
                rounds_left: world.distributed.as_ref().map_or(0, |d| d.workload.rounds),
            },
            w => w,
        };
        let scale = cfg.arrivals.rate_scale.unwrap_or(1.0);
        WorkloadTenant {
            world,
            nic: Nic::default(),
            inbox: Inbox::default(),
            process: cfg.arrivals.process,
            mean_gap_ns: cfg.arrivals.rate_per_s.map_or(0.0, |r| 1e9 / (r * scale)),
            gap_stddev_ns: cfg.arrivals.gap_stddev.map_or(0.0, |d| d.as_nanos() as f64),
            bursts: match (
                cfg.arrivals.burst_rate_per_s,
                cfg.arrivals.burst_every,
                cfg.arrivals.burst_length,
            ) {
                (Some(rate), Some(every), Some(length))
                    if cfg.arrivals.process == ArrivalProcess::Bursty =>
                {
                    Some(Bursts {
                        burst_gap_ns: 1e9 / (rate * scale),
                        every_ns: every.as_nanos() as f64,
                        length_ns: length.as_nanos() as f64,
                        in_burst: false,
                        until: None,
                    })
                }
                _ => None,
            },
            drawn: matches!(work, Work::Google { .. } | Work::Synthetic(_)).then(Drawn::default),
            hpc: matches!(&work, Work::Stream(s) if s.spec.format == TraceFormat::Swf)
                .then(Box::default),
            work,
            start: cfg.start.as_nanos(),
            flow_bps: cfg.flow_bandwidth.map_or(0, |b| b.bps()),
            priority: cfg.priority,
            stop: cfg.stop.map_or(run_end, |d| d.as_nanos()),
            first_id: ordinal * TASK_ID_BLOCK,
            submitted: 0,
            jobs: 0,
            done: 0,
            response_s: Vec::new(),
            ideal: std::collections::BTreeMap::new(),
            perf_response: Vec::new(),
            offered: Offered::default(),
            by_class: Vec::new(),
            waiting_s: Vec::new(),
        }
    }

    /// Time to the next submission.
    fn gap(&mut self, ctx: &mut Ctx<'_, Msg>) -> SimTime {
        match self.process {
            ArrivalProcess::Poisson => to_nanos(exponential(ctx.rng(), self.mean_gap_ns)),
            ArrivalProcess::Constant => to_nanos(self.mean_gap_ns).max(1),
            ArrivalProcess::Gaussian => {
                to_nanos(self.mean_gap_ns + self.gap_stddev_ns * normal(ctx.rng()))
            }
            ArrivalProcess::Bursty => self.bursty_gap(ctx),
            ArrivalProcess::Trace => match &self.work {
                Work::Trace { rows, next } => rows
                    .get(*next)
                    .map_or(SimTime::MAX, |row| row.arrival.saturating_sub(ctx.now())),
                Work::Stream(s) => s
                    .next
                    .as_ref()
                    .map_or(SimTime::MAX, |row| row.arrival.saturating_sub(ctx.now())),
                _ => SimTime::MAX,
            },
        }
    }

    /// Time to the next submission of the bursty process: draw a gap at the
    /// current state's rate; if the state ends first, move to the end of the
    /// state, switch, and draw again (memorylessness makes this exact).
    fn bursty_gap(&mut self, ctx: &mut Ctx<'_, Msg>) -> SimTime {
        let normal_gap = self.mean_gap_ns;
        let Some(b) = self.bursts.as_mut() else {
            return SimTime::MAX;
        };
        let now = ctx.now();
        let mut at = now;
        loop {
            let until = *b.until.get_or_insert_with(|| {
                at.saturating_add(to_nanos(exponential(ctx.rng(), b.every_ns)))
            });
            let mean = if b.in_burst {
                b.burst_gap_ns
            } else {
                normal_gap
            };
            let gap = to_nanos(exponential(ctx.rng(), mean));
            if at.saturating_add(gap) < until {
                return at.saturating_add(gap) - now;
            }
            at = until;
            b.in_burst = !b.in_burst;
            let stay = if b.in_burst { b.length_ns } else { b.every_ns };
            b.until = Some(at.saturating_add(to_nanos(exponential(ctx.rng(), stay))));
        }
    }

    /// Work of the next submission: its service time and application.
    fn next_work(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<Demand, ModelError> {
        let priority = self.priority;
        match &mut self.work {
            Work::Stream(s) => {
                let Some(row) = s.next.take() else {
                    return Err(ModelError::Invariant(
                        "trace tenant ran past its last row".into(),
                    ));
                };
                s.advance()?;
                let app = self.trace_app(ctx, &row.app, row.line)?;
                Ok(Demand {
                    service_ns: row.duration,
                    requested_ns: row.requested,
                    app,
                    priority: row.priority,
                    memory_mb: mb(row.memory_gb),
                    cores: libm::ceil(row.cpu).max(1.0) as u32,
                })
            }
            Work::Trace { rows, next } => {
                let Some(row) = rows.get(*next) else {
                    return Err(ModelError::Invariant(
                        "trace tenant ran past its last row".into(),
                    ));
                };
                *next += 1;
                let (duration, app, line) = (row.duration, row.app.clone(), row.line);
                let requested_ns = row.requested;
                let (priority, memory_mb, cpu) = (row.priority, mb(row.memory_gb), row.cpu);
                let app = self.trace_app(ctx, &app, line)?;
                Ok(Demand {
                    service_ns: duration,
                    requested_ns,
                    app,
                    priority,
                    memory_mb,
                    cores: libm::ceil(cpu).max(1.0) as u32,
                })
            }
            &mut Work::Service {
                distribution,
                mean_ns,
                memory_mb,
            } => Ok(Demand {
                requested_ns: 0,
                service_ns: match distribution {
                    ServiceDistribution::Exponential => {
                        to_nanos(exponential(ctx.rng(), mean_ns)).max(1)
                    }
                    ServiceDistribution::Constant => to_nanos(mean_ns),
                },
                app: None,
                priority,
                memory_mb,
                cores: 1,
            }),
            &mut Work::Google {
                memory_gb,
                reference_cores,
                mix,
                demand_scale,
                demand_cv,
            } => {
                let t = google::draw_in(ctx.rng(), memory_gb, reference_cores, mix, demand_cv)
                    .with_demand_scaled(demand_scale);
                if let Some(d) = &mut self.drawn {
                    d.record(ctx.now(), &t);
                }
                Ok(Self::generated(t))
            }
            Work::Synthetic(generator) => {
                let t = generator.draw(ctx.rng());
                if let Some(d) = &mut self.drawn {
                    d.record(ctx.now(), &t);
                }
                Ok(Self::generated(t))
            }
            Work::MapReduce(_) | Work::Dag(_) | Work::Mix { .. } => Err(ModelError::Invariant(
                "a job tenant submits whole jobs, not single tasks".into(),
            )),
            &mut Work::Apps(order) => {
                let apps = self.world.catalog.len() as u32;
                if apps == 0 {
                    return Err(ModelError::Invariant(
                        "a tenant submits applications but the scenario has no [applications] catalog".into(),
                    ));
                }
                let id = match order {
                    AppOrder::Sequential => (self.submitted % u64::from(apps)) as u32,
                    AppOrder::Random => index(ctx.rng(), apps),
                };
                let app = &self.world.catalog[id as usize];
                self.offered.record(app.cores, app.ideal_s);
                Ok(Demand {
                    requested_ns: 0,
                    service_ns: to_nanos(app.ideal_s * 1e9).max(1),
                    app: Some(id),
                    priority,
                    memory_mb: mb(app.memory_gb),
                    cores: app.cores,
                })
            }
        }
    }

    /// A plain one-core task from a Google-like generator.
    fn generated(t: google::GoogleTask) -> Demand {
        Demand {
            requested_ns: 0,
            service_ns: to_nanos(t.work_s * 1e9).max(1),
            app: None,
            priority: t.priority,
            memory_mb: mb(t.memory_gb),
            cores: 1,
        }
    }

    /// The catalog application a trace row names: by id, or drawn among the
    /// applications of the named family; none for an empty `app` column.
    fn trace_app(
        &self,
        ctx: &mut Ctx<'_, Msg>,
        app: &AppRef,
        line: u64,
    ) -> Result<Option<u32>, ModelError> {
        let catalog = &self.world.catalog;
        let bad = |what: String| ModelError::Invariant(format!("trace line {line}: {what}"));
        match app {
            AppRef::None => Ok(None),
            AppRef::Profile(id) if (*id as usize) < catalog.len() => Ok(Some(*id)),
            AppRef::Profile(id) => Err(bad(format!(
                "app:{id} is not in the catalog of {} applications",
                catalog.len()
            ))),
            AppRef::Family(name) => {
                let ids: Vec<u32> = catalog
                    .iter()
                    .filter(|a| a.family.name() == name)
                    .map(|a| a.id)
                    .collect();
                if ids.is_empty() {
                    return Err(bad(format!(
                        "no application of family {name:?} in the catalog"
                    )));
                }
                Ok(Some(ids[index(ctx.rng(), ids.len() as u32) as usize]))
            }
        }
    }

    pub fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if let Work::Dag(dags) = &mut self.work {
            dags.draw_templates(ctx.rng());
        }
        let first = match &mut self.work {
            Work::Trace { rows, next } => {
                *next = rows.iter().take_while(|r| r.arrival < self.start).count();
                self.gap(ctx)
            }
            Work::Stream(s) => {
                // As for a CSV trace: rows before the tenant's start are not submitted.
                s.advance()?;
                while s.next.as_ref().is_some_and(|r| r.arrival < self.start) {
                    s.advance()?;
                }
                self.gap(ctx)
            }
            _ => self.start.saturating_add(self.gap(ctx)),
        };
        self.arm(ctx, first)
    }

    /// The next submission in `gap` ns; none once a trace is exhausted.
    fn arm(&mut self, ctx: &mut Ctx<'_, Msg>, gap: SimTime) -> Result<(), ModelError> {
        if gap == SimTime::MAX {
            return Ok(());
        }
        ctx.timer(gap, Msg::Arrival)
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::Arrival => {
                if ctx.now() >= self.stop {
                    ctx.log(
                        "tenant_stop",
                        &serde_json::json!({ "submitted": self.submitted }),
                    );
                    return Ok(());
                }
                if let Work::Mix { rounds_left } = self.work {
                    if rounds_left == 0 {
                        return Ok(());
                    }
                    self.work = Work::Mix {
                        rounds_left: rounds_left - 1,
                    };
                    self.submit_mix(ctx)?;
                } else if let Work::MapReduce(generator) = self.work {
                    self.submit_job(ctx, &generator)?;
                } else if matches!(self.work, Work::Dag(_)) {
                    self.start_dag_job(ctx)?;
                } else {
                    self.check_ids(ctx, 1)?;
                    let demand = self.next_work(ctx)?;
                    let width = self.world.max_slots.max(1);
                    if demand.cores > width && self.runs_parallel_jobs() {
                        self.submit_parallel(ctx, &demand, width)?;
                    } else {
                        let task = self.task(ctx, &demand);
                        if let Some(h) = self.hpc.as_mut() {
                            h.submitted(task.id, 1, task.cores, ctx.now());
                        }
                        self.submit(ctx, task)?;
                    }
                }
                let gap = self.gap(ctx);
                self.arm(ctx, gap)
            }
            Msg::Packet(p) => match self.inbox.accept(&self.world, ctx, p)?.1 {
                Body::Done {
                    task,
                    priority,
                    submitted_at,
                    started_at,
                    finished_at,
                } => {
                    let response = finished_at.saturating_sub(submitted_at);
                    self.by_class.push((priority, response as f64 / 1e9));
                    if let Some(ideal) = self.ideal.remove(&task) {
                        self.perf_response
                            .push(ideal as f64 / response.max(1) as f64);
                    }
                    self.done(ctx, task, submitted_at, started_at, finished_at)?;
                    self.dag_task_done(ctx, task)
                }
                other => Err(unexpected(self.world.name(ctx.me()), other.name())),
            },
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    /// Refuses to number `more` tasks past the tenant's block of ids.
    fn check_ids(&self, ctx: &Ctx<'_, Msg>, more: u64) -> Result<(), ModelError> {
        if self.submitted.saturating_add(more) > TASK_ID_BLOCK {
            return Err(ModelError::Invariant(format!(
                "{} would submit more than {TASK_ID_BLOCK} tasks, the most one tenant can number",
                self.world.name(ctx.me())
            )));
        }
        Ok(())
    }

    /// The next task, numbered, with `demand` and no job.
    fn task(&self, ctx: &Ctx<'_, Msg>, demand: &Demand) -> Task {
        Task {
            flow_bps: self.flow_bps,
            app: demand.app,
            priority: demand.priority,
            memory_mb: demand.memory_mb,
            cores: demand.cores.clamp(1, self.world.max_slots.max(1)),
            requested_ns: demand.requested_ns,
            ..Task::new(
                self.first_id + self.submitted,
                ctx.me(),
                ctx.now(),
                demand.service_ns,
            )
        }
    }

    /// Logs `task` and sends it to the scheduler.
    fn submit(&mut self, ctx: &mut Ctx<'_, Msg>, task: Task) -> Result<(), ModelError> {
        self.submitted += 1;
        if task.app.is_some() {
            self.ideal.insert(task.id, task.service_ns);
        }
        ctx.log(
            "task_submit",
            &SubmitLog {
                task: task.id,
                service_ns: task.service_ns,
                app: task.app,
                job: task.job.map(|j| j.id).or(task.dag.map(|d| d.job)),
                stage: task.dag.map(|d| d.stage),
                cpu_ppm: task.cpu_ppm,
            },
        );
        let world = Arc::clone(&self.world);
        self.nic
            .send(&world, ctx, world.scheduler, Body::Submit(task))
    }

    /// Whether a row wider than the largest server is a parallel job run
    /// over several servers ([`Tenant::submit_parallel`]): an SWF log's.
    fn runs_parallel_jobs(&self) -> bool {
        matches!(&self.work, Work::Stream(s) if s.spec.format == TraceFormat::Swf)
    }

    /// A log's parallel job of `P = demand.cores` processors, wider than
    /// the largest server (`width` threads), as every SWF simulator runs
    /// it (issue 41): one run of `ceil(P / width)` units of `width` threads
    /// (the last the remainder; memory shared in proportion), started
    /// together on distinct servers, all its processors at once, and ended
    /// together exactly its run time later ([`DistRef::fixed_ns`]). The run
    /// is named by its unit 0's id, as a distributed application's.
    fn submit_parallel(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        demand: &Demand,
        width: u32,
    ) -> Result<(), ModelError> {
        let p = demand.cores;
        let units = p.div_ceil(width);
        let Ok(n) = u16::try_from(units) else {
            return Err(ModelError::Input(format!(
                "{}: a job of {p} processors would run as {units} parts of {width}, more than \
                 the {} one run may have",
                self.world.name(ctx.me()),
                u16::MAX
            )));
        };
        self.check_ids(ctx, u64::from(units))?;
        let run = self.first_id + self.submitted;
        if let Some(h) = self.hpc.as_mut() {
            h.submitted(run, units, p, ctx.now());
        }
        for unit in 0..units {
            let threads = if unit + 1 == units {
                p - width * (units - 1)
            } else {
                width
            };
            let mut task = self.task(
                ctx,
                &Demand {
                    requested_ns: 0,
                    service_ns: demand.service_ns,
                    app: None,
                    priority: demand.priority,
                    memory_mb: demand.memory_mb * u64::from(threads) / u64::from(p),
                    cores: threads,
                },
            );
            task.dist = Some(DistRef {
                app: u32::MAX,
                run,
                unit: unit as u16,
                units: n,
                qos_ppm: 0,
                coordinator: None,
                attempt: 0,
                fixed_ns: demand.service_ns,
            });
            self.submit(ctx, task)?;
        }
        Ok(())
    }

    /// The `[workload]` mix (ASPLOS'16 §5, Table 5), `copies` times over:
    /// each application is `units_per_app` tasks of `unit_cores` slots,
    /// its solo runtime as work; the run is named by its unit 0's id, and
    /// the mix's `qos_target` application of the first copy carries the
    /// QoS bound.
    fn submit_mix(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let Some(dw) = self.world.distributed.as_ref() else {
            return Err(ModelError::Invariant(
                "a distributed tenant needs the [workload] section".into(),
            ));
        };
        let w = dw.workload.clone();
        let apps = crate::distributed::truth::resolve_mix(&w.mix).map_err(ModelError::Invariant)?;
        let solo: Vec<f64> = apps
            .iter()
            .map(|&a| dw.catalog.get(a).map_or(1.0, |x| x.solo_s))
            .collect();
        let units = w.units_per_app.clamp(1, u32::from(u16::MAX));
        self.check_ids(
            ctx,
            u64::from(units) * apps.len() as u64 * u64::from(w.copies),
        )?;
        for copy in 0..w.copies {
            for (i, (&app, &solo_s)) in apps.iter().zip(&solo).enumerate() {
                let run = self.first_id + self.submitted;
                let qos = copy == 0 && i == w.qos_target as usize;
                for unit in 0..units {
                    let service_ns = crate::sampling::to_nanos(solo_s * 1e9);
                    let mut task = self.task(
                        ctx,
                        &Demand {
                            requested_ns: 0,
                            service_ns,
                            app: None,
                            priority: self.priority,
                            memory_mb: 0,
                            cores: w.unit_cores,
                        },
                    );
                    task.cores = w.unit_cores;
                    task.dist = Some(crate::distributed::DistRef {
                        app: app as u32,
                        run,
                        unit: unit as u16,
                        units: units as u16,
                        qos_ppm: if qos {
                            libm::round(w.qos_perf * 1e6) as u32
                        } else {
                            0
                        },
                        coordinator: None,
                        attempt: 0,
                        fixed_ns: 0,
                    });
                    self.submit(ctx, task)?;
                }
            }
        }
        Ok(())
    }

    /// One MapReduce-like job (thesis §4.2.2): all its tasks now, in order,
    /// the master first; the job is named by the master's task id.
    fn submit_job(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        generator: &google::MapReduce,
    ) -> Result<(), ModelError> {
        let tasks = generator.draw_job(ctx.rng());
        self.check_ids(ctx, tasks.len() as u64)?;
        let job = self.first_id + self.submitted;
        for (i, t) in tasks.into_iter().enumerate() {
            let mut task = self.task(ctx, &Self::generated(t.task));
            task.cpu_ppm = libm::round(t.cpu_usage * 1e6) as u32;
            task.job = Some(JobRef {
                id: job,
                master: i == 0,
                external_bytes: t.external_bytes,
                internal_bytes: t.internal_bytes,
            });
            self.submit(ctx, task)?;
        }
        self.jobs += 1;
        Ok(())
    }

    /// A DAG job arrives (harvesting §6.1): one of the templates, drawn
    /// uniformly; its type from the template's last run (medium if none,
    /// §4.1); its source stages go to the scheduler now.
    fn start_dag_job(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let job = self.first_id + self.submitted;
        let now = ctx.now();
        let Work::Dag(dags) = &mut self.work else {
            return Ok(());
        };
        let n = dags.templates.len() as u32;
        if n == 0 {
            return Err(ModelError::Invariant(
                "a dag_jobs tenant has no templates".into(),
            ));
        }
        let template = index(ctx.rng(), n);
        let t = &dags.templates[template as usize];
        let length = JobLength::of(
            dags.last_run[template as usize],
            dags.short_below,
            dags.long_from,
        );
        dags.submitted[length as usize] += 1;
        let parents_left: Vec<u32> = t.stages.iter().map(|s| s.parents.len() as u32).collect();
        let sources: Vec<u32> = (0..t.stages.len() as u32)
            .filter(|&j| parents_left[j as usize] == 0)
            .collect();
        dags.jobs.insert(
            job,
            DagJob {
                template,
                length,
                submitted_at: now,
                tasks_left: t.stages.iter().map(|s| s.tasks).collect(),
                parents_left,
                stages_left: t.stages.len() as u32,
            },
        );
        let req = dags.req[template as usize];
        ctx.log(
            "job_submit",
            &JobLog {
                job,
                template,
                length: Some(length),
                req: Some(req),
                time_ns: None,
            },
        );
        self.jobs += 1;
        for stage in sources {
            self.submit_stage(ctx, job, stage)?;
        }
        Ok(())
    }

    /// Submits every task of `stage` of DAG job `job`.
    fn submit_stage(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        job: u64,
        stage: u32,
    ) -> Result<(), ModelError> {
        let Work::Dag(dags) = &self.work else {
            return Ok(());
        };
        let Some(j) = dags.jobs.get(&job) else {
            return Ok(());
        };
        let template = j.template;
        let s = &dags.templates[template as usize].stages[stage as usize];
        let (tasks, work, memory_mb) = (s.tasks, s.work_ns, dags.memory_mb);
        let dag = DagRef {
            job,
            template,
            stage,
            req: dags.req[template as usize],
            length: j.length,
        };
        self.check_ids(ctx, u64::from(tasks))?;
        for _ in 0..tasks {
            let mut task = self.task(
                ctx,
                &Demand {
                    requested_ns: 0,
                    service_ns: work,
                    app: None,
                    priority: 0,
                    memory_mb,
                    cores: 1,
                },
            );
            task.dag = Some(dag);
            if let Work::Dag(dags) = &mut self.work {
                dags.tasks.insert(task.id, (job, stage));
            }
            self.submit(ctx, task)?;
        }
        Ok(())
    }

    /// A task of a DAG job is done: when it was its stage's last, the
    /// stages it unblocks are submitted; when the job's last, the job is
    /// done and its time becomes its template's last run.
    fn dag_task_done(&mut self, ctx: &mut Ctx<'_, Msg>, task: u64) -> Result<(), ModelError> {
        let now = ctx.now();
        let Work::Dag(dags) = &mut self.work else {
            return Ok(());
        };
        let Some((job, stage)) = dags.tasks.remove(&task) else {
            return Ok(());
        };
        let Some(j) = dags.jobs.get_mut(&job) else {
            return Ok(());
        };
        let left = &mut j.tasks_left[stage as usize];
        *left = left.saturating_sub(1);
        if *left > 0 {
            return Ok(());
        }
        j.stages_left -= 1;
        let mut ready = Vec::new();
        for &child in &dags.children[j.template as usize][stage as usize] {
            let p = &mut j.parents_left[child as usize];
            *p -= 1;
            if *p == 0 {
                ready.push(child);
            }
        }
        if j.stages_left == 0 {
            let time = now.saturating_sub(j.submitted_at);
            let (template, length) = (j.template, j.length);
            dags.jobs.remove(&job);
            dags.last_run[template as usize] = Some(time);
            dags.completed += 1;
            dags.times.push((length, time as f64 / 1e9));
            ctx.log(
                "job_done",
                &JobLog {
                    job,
                    template,
                    length: None,
                    req: None,
                    time_ns: Some(time),
                },
            );
        }
        for child in ready {
            self.submit_stage(ctx, job, child)?;
        }
        Ok(())
    }

    fn done(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        task: u64,
        submitted_at: SimTime,
        started_at: SimTime,
        finished_at: SimTime,
    ) -> Result<(), ModelError> {
        let waiting = started_at.saturating_sub(submitted_at);
        let response = finished_at.saturating_sub(submitted_at);
        self.done += 1;
        if let Some(h) = self.hpc.as_mut() {
            h.done(task, started_at, finished_at);
        }
        self.waiting_s.push(waiting as f64 / 1e9);
        self.response_s.push(response as f64 / 1e9);
        ctx.log(
            "task_done",
            &DoneLog {
                task,
                waiting_ns: waiting,
                response_ns: response,
            },
        );
        Ok(())
    }

    pub fn finish(&mut self, out: &mut Metrics) {
        self.inbox.finish(out);
        out.add("tasks_submitted", self.submitted);
        if let Some(d) = &mut self.drawn {
            d.finish(out);
        }
        if matches!(self.work, Work::Apps(_)) {
            out.add("apps_submitted", self.submitted);
            if let Some(load) = self
                .offered
                .load(self.world.cluster_cores, self.world.app_window)
            {
                out.add_f64("offered_load", load);
            }
        }
        if matches!(self.work, Work::MapReduce(_) | Work::Dag(_)) {
            out.add("jobs_submitted", self.jobs);
        }
        // A csv trace, streamed too, reports no counts, as before it was.
        if let Some(s) = match &self.work {
            Work::Stream(s) if s.spec.format.is_public() => Some(s),
            _ => None,
        } {
            let stats = s.stats();
            out.add("trace_rows_skipped", stats.rows_skipped);
            if stats.killed_at_request > 0 {
                out.add("trace_tasks_killed_at_request", stats.killed_at_request);
            }
            out.add("trace_tasks_dropped", stats.tasks_dropped);
            out.add("trace_tasks_unfinished", stats.tasks_unfinished);
            stats.defects.add_metrics(out);
        }
        if let Work::Dag(dags) = &self.work {
            out.add("jobs_completed", dags.completed);
            out.add("jobs_running_end", dags.jobs.len() as u64);
            for l in JobLength::ALL {
                out.add(DAG_SUBMITTED[l as usize], dags.submitted[l as usize]);
                out.declare_samples(DAG_TIMES[l as usize]);
            }
            out.declare_samples("job_time_s");
            for &(l, t) in &dags.times {
                out.sample("job_time_s", t);
                out.sample(DAG_TIMES[l as usize], t);
            }
        }
        if let Some(h) = self.hpc.as_mut() {
            h.finish(out);
        }
        out.add("tasks_acknowledged", self.done);
        out.declare_samples("response_s");
        for &(priority, r) in &self.by_class {
            if let Some(name) = RESPONSE_BY_CLASS.get(priority as usize) {
                out.sample(name, r);
            }
        }
        if matches!(self.work, Work::Apps(_)) {
            out.declare_samples("perf_norm_response");
        }
        if !self.perf_response.is_empty() {
            out.append_samples(
                "perf_norm_response",
                std::mem::take(&mut self.perf_response),
            );
        }
        out.declare_samples("waiting_s");
        out.append_samples("response_s", std::mem::take(&mut self.response_s));
        out.append_samples("waiting_s", std::mem::take(&mut self.waiting_s));
    }
}
