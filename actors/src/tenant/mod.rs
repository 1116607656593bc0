//! Workload tenants: submit tasks from a generator and record how long each
//! took, as the user of the cluster experiences it. A `mapreduce` tenant
//! submits a whole job per arrival (thesis §4.2.2): its tasks in one go,
//! master first, all at the arrival instant. A `dag_jobs` tenant acts as
//! the application master of TPC-DS-like DAG jobs (harvesting §5.3, §6.1):
//! it submits a job's stages as their parents finish, tells the scheduler
//! each job's maximum concurrency and length type, and records job times.

mod jobs;
mod stats;
mod work;

use std::sync::Arc;

use dcemu_topology::SimTime;
use serde::Serialize;

use crate::config::{ArrivalProcess, TenantConfig};
use crate::google::{self, DagRef, JobLength};
use crate::hpc_jobs::HpcJobs;
use crate::kernel::{Ctx, Metrics, ModelError};
use crate::net::{Body, Inbox, Nic};
use crate::net::{Msg, unexpected};
use crate::sampling::{exponential, index, normal, to_nanos};
use crate::task::{DistRef, JobRef, TASK_ID_BLOCK, Task};
use crate::trace::TraceJob;
use crate::trace_formats::TraceFormat;
use crate::trace_jobs::TraceJobs;
use crate::world::World;

use jobs::{DagJob, JobLog};
pub use stats::RESPONSE_BY_CLASS;
use stats::{Drawn, Offered};
pub use work::TraceInput;
use work::{Demand, Draw, Work, generated, work};

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
    /// A trace's jobs (Alibaba's DAGs, Google's jobs): held tasks, job
    /// response times; none for other work.
    trace_jobs: Option<Box<TraceJobs<Demand>>>,
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
    /// A trace task's job key ([`TraceJob::key`]) and DAG task number.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_job: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dag_task: Option<u32>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A trace task held until the tasks of its job's DAG it names end.
#[derive(Serialize)]
struct HeldLog {
    job: u64,
    dag_task: u32,
    /// Tasks of the tenant held now, this one included.
    held: u64,
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
                .then(|| Box::new(HpcJobs::new(run_end))),
            trace_jobs: match &work {
                Work::Stream(s) if s.spec.format.has_jobs() => {
                    Some(Box::new(TraceJobs::new(s.spec.options.lookahead)))
                }
                _ => None,
            },
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
                    self.arrived(ctx, demand)?;
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
                    let released = match self.trace_jobs.as_mut() {
                        Some(jobs) => jobs.done(task, ctx.now()),
                        None => Vec::new(),
                    };
                    for demand in released {
                        self.check_ids(ctx, 1)?;
                        self.submit_demand(ctx, demand)?;
                    }
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
            apart: demand.job.as_ref().filter(|j| j.apart).map(|j| j.key),
            ..Task::new(
                self.first_id + self.submitted,
                ctx.me(),
                ctx.now(),
                demand.service_ns,
            )
        }
    }

    /// A task arrived: held while the tasks of its job's DAG it names run
    /// ([`TraceJobs`]), else submitted.
    fn arrived(&mut self, ctx: &mut Ctx<'_, Msg>, demand: Demand) -> Result<(), ModelError> {
        let demand = match (self.trace_jobs.as_mut(), demand.job.clone()) {
            (Some(jobs), Some(job)) => match jobs.arrive(&job, ctx.now(), demand) {
                Some(d) => d,
                None => {
                    ctx.log(
                        "task_held",
                        &HeldLog {
                            job: job.key,
                            dag_task: job.dag.as_ref().map_or(0, |d| d.task),
                            held: jobs.held(),
                        },
                    );
                    return Ok(());
                }
            },
            _ => demand,
        };
        self.submit_demand(ctx, demand)
    }

    /// Submits the task (or, for a log's job wider than any server, the
    /// parallel job) `demand` describes.
    fn submit_demand(&mut self, ctx: &mut Ctx<'_, Msg>, demand: Demand) -> Result<(), ModelError> {
        let width = self.world.max_slots.max(1);
        if demand.cores > width && self.runs_parallel_jobs() {
            return self.submit_parallel(ctx, &demand, width);
        }
        let task = self.task(ctx, &demand);
        if let Some(h) = self.hpc.as_mut() {
            h.submitted(task.id, 1, task.cores, ctx.now());
        }
        if let (Some(jobs), Some(job)) = (self.trace_jobs.as_mut(), demand.job.as_deref()) {
            jobs.submitted(task.id, job);
        }
        self.submit_of(ctx, task, demand.job.as_deref())
    }

    /// Logs `task` and sends it to the scheduler.
    fn submit(&mut self, ctx: &mut Ctx<'_, Msg>, task: Task) -> Result<(), ModelError> {
        self.submit_of(ctx, task, None)
    }

    /// [`WorkloadTenant::submit`] of a task of a trace's `job`.
    fn submit_of(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        task: Task,
        job: Option<&TraceJob>,
    ) -> Result<(), ModelError> {
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
                trace_job: job.map(|j| j.key),
                dag_task: job.and_then(|j| j.dag.as_ref()).map(|d| d.task),
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
            dags.finish(out);
        }
        if let Some(h) = self.hpc.as_mut() {
            h.finish(out);
        }
        if let Some(j) = self.trace_jobs.as_mut() {
            j.finish(out);
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
                    job: None,
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
                            job: None,
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
            let mut task = self.task(ctx, &generated(t.task));
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
                    job: None,
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

    /// Work of the next submission: its service time and application.
    fn next_work(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<Demand, ModelError> {
        let draw = Draw {
            world: &self.world,
            priority: self.priority,
            submitted: self.submitted,
            drawn: &mut self.drawn,
            offered: &mut self.offered,
        };
        self.work.next(ctx, draw)
    }
}
