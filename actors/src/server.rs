//! Servers: run dispatched tasks, one per slot, sharing their cores by
//! processor sharing (thesis eq. 6.2, see `sharing.rs`), then report to the
//! scheduler (slot free) and to the tenant (task done).
//!
//! Power (thesis §6.2.5–6.2.6): with `power.policy = "idle"` (IDL) a server
//! without tasks stays idle; with `"sleep"` (SLP) it sleeps as soon as it has
//! nothing running or waiting, and a task dispatched to it waits for the
//! wake-up (`power.server_wake`, 30 s by default) during which the server
//! draws peak power (eq. 4.2). On, it draws eq. 4.1 with the CPU utilisation
//! the share of cores in use (tasks and primary tenant) and the memory
//! utilisation the share of memory allocated to tasks.
//!
//! Memory (thesis §6.2.3.4): a task starts with its memory if the server has
//! it, else with what is left and a checkpoint at which it needs the rest;
//! then the memory eviction policy makes room. A primary tenant's spikes kill
//! secondary tasks youngest first (harvesting §5.3).

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::{EnergyMeter, PowerPolicy, ServerPower, SimTime};
use serde::Serialize;

use crate::config::ServerTypeConfig;
use crate::config::{CpuSharing, MemoryEviction};
use crate::device::{DevState, Device, Powered};
use crate::disk::Disk;
use crate::ground_truth::{AppProfile, SOURCES, Source, interference_factor};
use crate::kernel::{Ctx, Metrics, ModelError};
use crate::net::{AppRate, Body, EvictionCause, Inbox, Nic, ServerReport};
use crate::net::{Msg, unexpected};
use crate::sampling::{normal, to_nanos, uniform_open0};
use crate::sharing::CpuShare;
use crate::slot_share::slots_for;
use crate::task::{Kind, Task, TaskId};
use crate::world::World;

/// Buckets of [`PE_METRICS`]: 1, 2, 3, 4 and 5 or more priority evictions.
pub const PE_BUCKETS: usize = 5;

/// Response times of class-0 tasks by the priority evictions they suffered
/// (thesis Fig. 9.2: R(C0, pe = x), and pe ≥ 5 together). Present only in
/// runs where some class-0 task was evicted for priority.
pub const PE_METRICS: [&str; PE_BUCKETS] = [
    "response_s_class0_pe_1",
    "response_s_class0_pe_2",
    "response_s_class0_pe_3",
    "response_s_class0_pe_4",
    "response_s_class0_pe_5plus",
];

pub struct Server {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    server_type: String,
    slots: u32,
    power: ServerPower,
    running: BTreeMap<TaskId, (Task, SimTime)>,
    /// The hidden profiles of the kinds of tasks without a catalog entry
    /// running here ([`World::kind_truth`]), kept while one of them runs.
    kinds: BTreeMap<Kind, AppProfile>,
    cpu: CpuShare,
    core_speed: f64,
    /// Index of this server's configuration in the ground truth.
    class: usize,
    /// A primary tenant runs here (harvesting §5.3).
    owned: bool,
    cores_total: u32,
    /// Cores the primary tenant uses, and those it wants kept free.
    primary_cores: u32,
    reserve_cores: u32,
    /// Changes of the primary tenant's use this server was told of; of
    /// those, how many found secondary tasks holding part of the reserve,
    /// and the shares of the reserve they held, summed
    /// (`primary_tail_latency_proxy`, docs/metrics.md).
    primary_updates: u64,
    primary_updates_reserve_taken: u64,
    primary_reserve_taken: f64,
    /// Cores in use (primary and secondary) integrated over time.
    busy_cores: EnergyMeter,
    /// Memory allocated to tasks, MB, integrated over time.
    memory_in_use: EnergyMeter,
    /// When each task held for the wake-up reached the server, and how
    /// long every started task waited for a wake-up (thesis §4.2.5, T_wu).
    held_since: BTreeMap<TaskId, SimTime>,
    wake_wait_s: Vec<f64>,
    killed: u64,
    wasted_s: f64,
    reimages: u64,
    /// Memory of the server, and what each running task has of it, MB.
    memory_mb: u64,
    allocated: BTreeMap<TaskId, u64>,
    evictions_memory: u64,
    evictions_priority: u64,
    /// Response times of completed class-0 tasks that were evicted at
    /// least once, and of those never evicted (thesis Table 7.2).
    class0_evicted_s: Vec<f64>,
    class0_non_evicted_s: Vec<f64>,
    /// Response times of class-0 tasks by their priority evictions, 1 to
    /// [`PE_BUCKETS`] (the last bucket: that many or more); thesis Fig. 9.2.
    class0_by_pe_s: [Vec<f64>; PE_BUCKETS],
    reports: u64,
    /// A `ReportTick` is pending.
    reporting: bool,
    /// Harvested storage: block replicas on this server's disk.
    disk: Disk,
    /// Busy as a data node (harvesting §5.4), as last told to the name node.
    datanode_busy: bool,
    replicas_lost: u64,
    apps_completed: u64,
    apps_qos_met: u64,
    perf_norm: Vec<f64>,
    /// Running applications' progress rates sampled at each report, summed
    /// per [`PERF_BIN`] of virtual time: `(sum, samples)` by bin index
    /// (Paragon Fig. 10(d), performance over time).
    perf_bins: BTreeMap<u64, (f64, u64)>,
    /// Finished applications that ran on a configuration within 5 % of
    /// their best, and those whose co-runners cost them under 5 %.
    apps_het_ok: u64,
    apps_intf_ok: u64,
    /// `applications.csv` rows of the applications that finished here.
    app_rows: Vec<(TaskId, String)>,
    /// Generation of the one live `Progress` timer, and when it fires.
    timer: (u64, Option<SimTime>),
    /// Power state, and the tasks dispatched while asleep or waking.
    power_state: Powered<Task>,
    /// Power orders received from the scheduler (protocol v3).
    power_orders: u64,
    completed: u64,
    busy_ns: u128,
    /// When it last completed a task (`makespan_s` is the latest of all).
    last_done: SimTime,
    /// Distributed units here, and the runs this server coordinates.
    dist: crate::distributed::runtime::DistHost,
    /// Units the scheduler stopped before they reached this server, by
    /// (task, attempt): they are handed back as they arrive.
    stopped_early: std::collections::BTreeSet<(TaskId, u32)>,
    /// Distributed units stopped because their run's attempt ended.
    dist_stopped: u64,
}

#[derive(Serialize)]
struct StartLog<'a> {
    task: u64,
    tenant: &'a str,
    server_type: &'a str,
    running: usize,
}

/// Why a running task leaves its server early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eviction {
    /// Killed to restore the primary tenant's reserve (harvesting §5.3).
    Primary,
    /// Evicted because a task's memory could not be satisfied (thesis §6.2.3.4).
    Memory,
    /// Moved to another server by the scheduler (Paragon §3.4).
    Migration,
    /// Preempted for a higher priority task (thesis §6.2.3.3).
    Priority,
    /// A distributed unit stopped by the scheduler: another unit of its
    /// run was killed, so this attempt of the run is over (ASPLOS'16 §5
    /// runs start together; YARN re-runs a killed application's attempt).
    Stopped,
}

#[derive(Serialize)]
struct PrimaryLog {
    cores: u32,
    reserve: u32,
}

/// Why a server did not obey an order to sleep (protocol v3).
#[derive(Serialize)]
struct SleepRefusedLog {
    running: usize,
    waiting_wake: usize,
    primary: bool,
}

#[derive(Serialize)]
struct KillLog {
    task: u64,
    ran_ns: u64,
    wasted_s: f64,
}

#[derive(Serialize)]
struct ReimageLog {
    running: usize,
    replicas_lost: usize,
}

#[derive(Serialize)]
struct EndLog {
    task: u64,
    ran_ns: u64,
    running: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    perf_norm: Option<f64>,
}

/// How much of a co-runner's caused score reaches an application on each
/// source of interference, on a server with `cores` cores running `threads`
/// threads.
///
/// Per-core resources (L1 caches, TLB, the core itself) are private while
/// every task has a core of its own; they are contended only by time sharing,
/// in proportion to the share of tasks without a core to themselves. Shared
/// resources (LLC, memory, network, storage) are contended by every
/// co-runner. Paragon's server state (§3.2) is the plain sum of co-runners'
/// caused scores, as if every server were the profiling server; but a larger
/// server's shared resources absorb more (more memory channels, LLC, NICs),
/// while they do not grow in proportion to cores either (they come per
/// socket). The sum is therefore divided by √cores: a calibration between the
/// plain sum (too harsh: random placement on Paragon's local cluster would
/// leave most applications at the floor) and a per-core share (too mild:
/// eight memory-bound applications on one 8-core box would barely notice
/// each other). `docs/ground-truth.md` records the effect on the Paragon
/// scenario.
pub fn pressure_weights(cores: u32, threads: usize) -> [f64; SOURCES] {
    let cores = f64::from(cores.max(1));
    let n = threads.max(1) as f64;
    let time_shared = ((n - cores) / n).max(0.0);
    std::array::from_fn(|s| match Source::ALL[s] {
        Source::L1iCache | Source::L1dCache | Source::Tlb | Source::Core => time_shared,
        _ => 1.0 / libm::sqrt(cores),
    })
}

/// The ground truth `task` runs by: its catalog application's, or its
/// kind's (`kinds`, the profiles of the kinds running on the server);
/// `None` for a plain task.
fn truth<'a>(
    world: &'a World,
    kinds: &'a BTreeMap<Kind, AppProfile>,
    task: &Task,
) -> Option<&'a AppProfile> {
    match task.app {
        Some(a) => world.catalog.get(a as usize),
        None => kinds.get(&task.kind()?),
    }
}

/// Width of a bin of the performance-over-time series (`perf_over_time.csv`).
pub const PERF_BIN: SimTime = 60_000_000_000;

/// The work of a distributed run's unit (an ASPLOS'16 application's, a
/// log's parallel job's part): so much that it never runs out, as the unit
/// holds its cores until its coordinator ends the run
/// (`crate::distributed::runtime`); ns (about 146 years at speed 1).
const HELD_BY_RUN: SimTime = u64::MAX / 4;

/// An application meets its QoS when it runs at no less than 95 % of its
/// performance alone on its best configuration (Paragon §5).
pub const QOS_PERF_NORM: f64 = 0.95;

impl Server {
    /// A server of configuration `cfg` (ground-truth class `class`);
    /// `owned` if a primary tenant runs on it (such a server never sleeps).
    /// A server of type `cfg` with `slots` slots (the type's own, or those
    /// `scheduler.slot_config` gave it).
    pub fn new(
        world: Arc<World>,
        cfg: &ServerTypeConfig,
        slots: u32,
        class: usize,
        owned: bool,
    ) -> Self {
        let power = cfg.power();
        let cpu = match world.cpu_sharing {
            CpuSharing::Cores => CpuShare::new(cfg.cores()),
            CpuSharing::FreeCapacity => CpuShare::free_capacity(cfg.cores(), cfg.core_speed),
        };
        let device = match world.power.policy {
            PowerPolicy::Sleep if !owned => Device::new(DevState::Sleep, power.sleep_w),
            _ => Device::new(DevState::Idle, power.idle_w),
        };
        Server {
            world,
            nic: Nic::default(),
            inbox: Inbox::default(),
            server_type: cfg.name.clone(),
            slots,
            power,
            running: BTreeMap::new(),
            kinds: BTreeMap::new(),
            cpu,
            core_speed: cfg.core_speed,
            class,
            owned,
            cores_total: cfg.cores(),
            primary_cores: 0,
            reserve_cores: 0,
            busy_cores: EnergyMeter::new(0, 0.0),
            memory_in_use: EnergyMeter::new(0, 0.0),
            held_since: BTreeMap::new(),
            wake_wait_s: Vec::new(),
            killed: 0,
            wasted_s: 0.0,
            reimages: 0,
            memory_mb: cfg.memory_mb(),
            allocated: BTreeMap::new(),
            evictions_memory: 0,
            evictions_priority: 0,
            class0_evicted_s: Vec::new(),
            class0_by_pe_s: Default::default(),
            class0_non_evicted_s: Vec::new(),
            reports: 0,
            primary_updates: 0,
            primary_updates_reserve_taken: 0,
            primary_reserve_taken: 0.0,
            reporting: false,
            disk: Disk::new(to_nanos(cfg.disk_gb.unwrap_or(1000.0) * 1024.0)),
            replicas_lost: 0,
            datanode_busy: false,
            apps_completed: 0,
            apps_qos_met: 0,
            perf_norm: Vec::new(),
            perf_bins: BTreeMap::new(),
            apps_het_ok: 0,
            apps_intf_ok: 0,
            app_rows: Vec::new(),
            timer: (0, None),
            power_state: Powered::new(device),
            power_orders: 0,
            completed: 0,
            busy_ns: 0,
            last_done: 0,
            dist: Default::default(),
            stopped_early: Default::default(),
            dist_stopped: 0,
        }
    }

    /// Arms the first report, at a random offset within the interval so that
    /// servers do not all report at once.
    pub fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let every = self.world.report_interval;
        if every == 0 {
            return Ok(());
        }
        self.reporting = true;
        let offset = to_nanos(uniform_open0(ctx.rng()) * every as f64);
        ctx.timer(offset, Msg::ReportTick)
    }

    /// Tells the scheduler how the server is doing, every interval while it
    /// has work (or a primary tenant); an idle server sends one report
    /// saying so and then stays quiet until work arrives, so that reports
    /// do not keep a finished run going. A sleeping server does not report.
    fn report(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let idle = self.running.is_empty() && self.power_state.held().is_empty() && !self.owned;
        if idle {
            self.reporting = false;
        } else {
            ctx.timer(self.world.report_interval, Msg::ReportTick)?;
        }
        if self.power_state.device.state() == DevState::Sleep {
            return Ok(());
        }
        self.send_report(ctx)
    }

    /// Sends the scheduler a report of the server's state now.
    fn send_report(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let report = ServerReport {
            free_slots: self.slots.saturating_sub(self.slots_taken()),
            running: self.running.len() as u32,
            busy_cores: self.cpu.busy_cores() * u32::from(!self.running.is_empty())
                + self.primary_cores,
            cores: self.cores_total,
            primary_cores: self.primary_cores,
            reserve_cores: self.reserve_cores,
            memory_used_mb: self.allocated.values().sum(),
            memory_mb: self.memory_mb,
        };
        self.reports += 1;
        self.sample_performance(ctx.now());
        let world = Arc::clone(&self.world);
        self.nic
            .send(&world, ctx, world.scheduler, Body::Report(report))?;
        if world.monitor_rates {
            let rates = self.rates(ctx.now());
            if !rates.is_empty() {
                self.nic
                    .send(&world, ctx, world.scheduler, Body::Rates(rates))?;
            }
        }
        Ok(())
    }

    /// Adds each running application's current rate (its performance
    /// normalised to running alone on its best configuration) to the bin
    /// of `now`. Reads the rates without advancing the work done, so
    /// sampling never changes the run.
    fn sample_performance(&mut self, now: SimTime) {
        let mut sum = 0.0;
        let mut n = 0;
        for (&id, (task, _)) in &self.running {
            if task.app.is_some()
                && let Some(rate) = self.cpu.rate(id)
            {
                sum += rate;
                n += 1;
            }
        }
        if n > 0 {
            let bin = self.perf_bins.entry(now / PERF_BIN).or_insert((0.0, 0));
            bin.0 += sum;
            bin.1 += n;
        }
    }

    /// Each running application's progress rate and work left: what a
    /// monitor of its IPS would tell the scheduler (Paragon §3.4).
    fn rates(&mut self, now: SimTime) -> Vec<AppRate> {
        self.cpu.advance_to(now);
        let (world, kinds) = (&*self.world, &self.kinds);
        self.running
            .iter()
            .filter(|(_, (task, _))| truth(world, kinds, task).is_some())
            .filter_map(|(&id, _)| {
                let rate = self.cpu.rate(id)?;
                Some(AppRate {
                    task: id,
                    rate_ppm: to_nanos(rate * 1e6).min(u64::from(u32::MAX)) as u32,
                    left_ns: to_nanos(self.cpu.left(id)?),
                })
            })
            .collect()
    }

    /// In-vivo reclassification (Paragon §3.4): microbenchmarks injected
    /// next to `task` measure the interference it tolerates and causes in
    /// its current phase, with the profiling noise; the answer goes back
    /// after `reclassify_time`.
    fn reclassify_done(&mut self, id: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let Some((task, _)) = self.running.get(&id) else {
            return Ok(());
        };
        let Some(app) = truth(&self.world, &self.kinds, task) else {
            return Ok(());
        };
        self.cpu.advance_to(ctx.now());
        let total = task.total_ns.max(task.service_ns).max(1) as f64;
        let done = 1.0 - self.cpu.left(id).unwrap_or(0.0) / total;
        let phase = app.phase_at(done);
        let (tolerated, caused) = (app.tolerated_in(phase), app.caused_in(phase));
        let noise = self.world.profile_noise;
        let measure = |truth: f64, ctx: &mut Ctx<'_, Msg>| {
            let v = (truth + 100.0 * noise * normal(ctx.rng())).clamp(0.0, 100.0);
            libm::round(v * 100.0) as u16
        };
        let mut t = [0u16; SOURCES];
        let mut c = [0u16; SOURCES];
        for s in 0..SOURCES {
            t[s] = measure(tolerated[s], ctx);
            c[s] = measure(caused[s], ctx);
        }
        ctx.log("reclassified", &serde_json::json!({ "task": id }));
        let world = Arc::clone(&self.world);
        let body = Body::Reclassified {
            task: id,
            tolerated: t,
            caused: c,
        };
        self.nic.send(&world, ctx, world.scheduler, body)
    }

    /// Hands a running task back to the scheduler with its progress, to
    /// move it elsewhere (Paragon §3.4); ignored if it no longer runs here.
    fn migrate_out(&mut self, id: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if !self.running.contains_key(&id) {
            return Ok(());
        }
        self.evict(id, Eviction::Migration, ctx)?;
        self.update_power(ctx);
        self.refresh_rates(ctx.now());
        self.reschedule(ctx)
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::Packet(p) => match self.inbox.accept(&self.world, ctx, p)? {
                (
                    src,
                    Body::DistPressure {
                        dist,
                        task,
                        pressure_milli,
                    },
                ) => {
                    let now = ctx.now();
                    let world = Arc::clone(&self.world);
                    let catalog = world.dist_catalog();
                    let outs = self
                        .dist
                        .pressure(catalog, src, dist, task, pressure_milli, now);
                    self.dist_apply(outs, ctx)
                }
                (_, body) => self.packet(body, ctx),
            },
            Msg::DistFinish { run, generation } => {
                let (me, now) = (ctx.me(), ctx.now());
                let world = Arc::clone(&self.world);
                let outs = (self.dist).finish_timer(world.dist_catalog(), me, run, generation, now);
                self.dist_apply(outs, ctx)
            }
            other => self.timer_event(other, ctx),
        }
    }

    /// What the server does with the distributed side's requests.
    fn dist_apply(
        &mut self,
        outs: Vec<crate::distributed::runtime::Out>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        use crate::distributed::runtime::Out;
        let world = Arc::clone(&self.world);
        for out in outs {
            match out {
                Out::Send(to, body) => self.nic.send(&world, ctx, to, body)?,
                Out::Timer(delay, msg) => ctx.timer(delay, msg)?,
                Out::Complete(task) => self.dist_complete(task, ctx)?,
                Out::Log(kind, fields) => ctx.log(kind, &fields),
            }
        }
        Ok(())
    }

    /// A distributed unit's run is over: it leaves like any task, and its
    /// co-runners' pressure is recomputed.
    fn dist_complete(&mut self, task: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if !self.dist.runs(task) {
            return Ok(());
        }
        let now = ctx.now();
        self.cpu.remove(now, task);
        self.complete(task, ctx)?;
        let world = Arc::clone(&self.world);
        let outs = self.dist.ended(world.dist_catalog(), ctx.me(), task, now);
        self.dist_apply(outs, ctx)?;
        self.refresh_rates(now);
        self.reschedule(ctx)
    }

    fn packet(&mut self, body: Body, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match body {
            Body::DistDone { task } => self.dist_complete(task, ctx),
            Body::DistStop { task, attempt } => self.dist_stop(task, attempt, ctx),
            Body::Dispatch(task) => self.dispatched(task, ctx),
            Body::Preempt { victim, task, also } => {
                for v in also {
                    self.preempt_one(v, ctx)?;
                }
                self.preempt(victim, task, ctx)
            }
            Body::PrimaryLoad { cores, reserve } => self.primary_load(cores, reserve, ctx),
            Body::Reclassify { task } => {
                ctx.timer(self.world.reclassify_time, Msg::Reclassified { task })
            }
            Body::Migrate { task } => self.migrate_out(task, ctx),
            Body::Power { sleep } => self.power_order(sleep, ctx),
            Body::Reimage => {
                self.reimages += 1;
                let lost = self.disk.reimage();
                self.replicas_lost += lost.len() as u64;
                let log = ReimageLog {
                    running: self.running.len(),
                    replicas_lost: lost.len(),
                };
                ctx.log("reimage", &log);
                match self.world.storage {
                    Some(link) => {
                        let world = Arc::clone(&self.world);
                        self.nic.send(&world, ctx, link.namenode, Body::Reimaged)
                    }
                    None => Ok(()),
                }
            }
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    fn timer_event(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::Progress { generation } if generation == self.timer.0 => {
                self.timer.1 = None;
                for task in self.cpu.finished(ctx.now()) {
                    self.complete(task, ctx)?;
                }
                self.refresh_rates(ctx.now());
                self.reschedule(ctx)
            }
            Msg::Progress { .. } => Ok(()),
            Msg::WakeDone => self.woke(ctx),
            Msg::MemoryCheck { task } => self.memory_check(task, ctx),
            Msg::Reclassified { task } => self.reclassify_done(task, ctx),
            Msg::ReportTick => self.report(ctx),
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    /// The scheduler ends this attempt of a unit's run (another unit of it
    /// was killed): the unit leaves, running or waiting for the wake-up,
    /// and goes back to the scheduler; one not here yet goes back as it
    /// arrives. A unit no longer here (its run ended) needs nothing.
    fn dist_stop(
        &mut self,
        task: TaskId,
        attempt: u32,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let of_attempt = |t: &Task| t.id == task && t.dist.is_some_and(|d| d.attempt == attempt);
        if self.running.get(&task).is_some_and(|(t, _)| of_attempt(t)) {
            self.evict(task, Eviction::Stopped, ctx)?;
            self.update_power(ctx);
            self.refresh_rates(ctx.now());
            return self.reschedule(ctx);
        }
        if let Some(held) = self.power_state.take_held(of_attempt) {
            self.held_since.remove(&task);
            self.dist_stopped += 1;
            let world = Arc::clone(&self.world);
            return self
                .nic
                .send(&world, ctx, world.scheduler, Body::Killed(held));
        }
        self.stopped_early.insert((task, attempt));
        Ok(())
    }

    fn dispatched(&mut self, task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if let Some(d) = task.dist
            && self.stopped_early.remove(&(task.id, d.attempt))
        {
            self.dist_stopped += 1;
            let world = Arc::clone(&self.world);
            return self
                .nic
                .send(&world, ctx, world.scheduler, Body::Killed(task));
        }
        if self.slots_taken() + self.slots_of(task.cores) > self.slots {
            return Err(ModelError::Invariant(format!(
                "{} got task {} with all {} slots taken",
                self.world.name(ctx.me()),
                task.id,
                self.slots
            )));
        }
        if !self.reporting && self.world.report_interval > 0 {
            self.reporting = true;
            ctx.timer(self.world.report_interval, Msg::ReportTick)?;
        }
        let wake = self.world.power.server_wake.as_nanos();
        let id = task.id;
        match self.power_state.admit(ctx, task, self.power.peak(), wake)? {
            Some(task) => self.run_task(task, ctx),
            None => {
                self.held_since.insert(id, ctx.now());
                Ok(())
            }
        }
    }

    /// Evicts `victim` for the higher priority `task`, which takes its slot
    /// (thesis §6.2.3.3). The victim may have finished or been evicted for
    /// memory since the scheduler chose it; its slot is free then anyway.
    fn preempt(
        &mut self,
        victim: TaskId,
        task: Task,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        self.preempt_one(victim, ctx)?;
        self.dispatched(task, ctx)
    }

    /// Evicts `victim` for a higher priority task, if it still runs here
    /// or waits for this server to wake.
    fn preempt_one(&mut self, victim: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self.running.contains_key(&victim) {
            self.evict(victim, Eviction::Priority, ctx)?;
        } else if let Some(mut held) = self.power_state.take_held(|t| t.id == victim) {
            self.held_since.remove(&victim);
            held.evictions += 1;
            held.priority_evictions += 1;
            self.evictions_priority += 1;
            ctx.log(
                "evict_priority",
                &KillLog {
                    task: victim,
                    ran_ns: 0,
                    wasted_s: 0.0,
                },
            );
            let world = Arc::clone(&self.world);
            self.nic.send(
                &world,
                ctx,
                world.scheduler,
                Body::Evicted {
                    task: held,
                    cause: EvictionCause::Priority,
                },
            )?;
        }
        Ok(())
    }

    /// The primary tenant now uses `cores` and wants `reserve` kept free:
    /// secondary tasks share what is left, and if they no longer fit, the
    /// youngest are killed until the reserve is whole again (harvesting §5.3).
    fn primary_load(
        &mut self,
        cores: u32,
        reserve: u32,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        self.primary_cores = cores.min(self.cores_total);
        self.reserve_cores = reserve;
        if let Some(link) = self.world.storage {
            let busy = link.busy(self.primary_cores, reserve, self.cores_total);
            if busy != self.datanode_busy {
                self.datanode_busy = busy;
                let world = Arc::clone(&self.world);
                self.nic
                    .send(&world, ctx, link.namenode, Body::DataNodeBusy { busy })?;
            }
        }
        if self.owned {
            // the primary's new use and its reserve meet the secondary tasks
            // before any kill: the reserve it would burst into is taken
            self.primary_updates += 1;
            let secondary = self.running.len() as u32;
            let taken = (self.primary_cores + reserve + secondary)
                .saturating_sub(self.cores_total)
                .min(reserve);
            self.primary_updates_reserve_taken += u64::from(taken > 0);
            if reserve > 0 {
                self.primary_reserve_taken += f64::from(taken) / f64::from(reserve);
            }
        }
        if self.world.primary_kills {
            // node managers that know the primary give it its cores first
            self.cpu
                .set_cores(now, self.cores_total - self.primary_cores);
        } else {
            // stock YARN: no isolation, the primary's busy cores and the
            // containers share the server alike (sharing.rs)
            self.cpu.set_cores(now, self.cores_total);
            self.cpu.set_background(now, self.primary_cores);
        }
        ctx.log(
            "primary_load",
            &PrimaryLog {
                cores: self.primary_cores,
                reserve,
            },
        );
        self.enforce_reserve(ctx)?;
        self.update_power(ctx);
        self.refresh_rates(now);
        self.reschedule(ctx)
    }

    /// Kills secondary tasks, youngest first, while they and the primary
    /// tenant's use and reserve need more cores than the server has; with
    /// reports on, a report follows the kills.
    fn enforce_reserve(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if !self.owned || !self.world.primary_kills {
            return Ok(());
        }
        let before = self.killed;
        while !self.running.is_empty()
            && self.primary_cores + self.reserve_cores + self.running.len() as u32
                > self.cores_total
        {
            let youngest = self
                .running
                .iter()
                .max_by_key(|(id, (_, started))| (*started, **id))
                .map(|(&id, _)| id);
            let Some(id) = youngest else { break };
            self.evict(id, Eviction::Primary, ctx)?;
        }
        // the node manager tells the resource manager of the kills with its
        // state (§5.3), so the freed slots are not offered back at once on
        // a stale view of the primary's use
        if self.killed > before && self.world.report_interval > 0 {
            self.send_report(ctx)?;
        }
        Ok(())
    }

    /// Takes a running task off the server and hands it back to the
    /// scheduler to place again. A task killed for the primary tenant loses
    /// its work; one evicted for memory loses it too unless the scheduler
    /// resumes evicted tasks, in which case it keeps its progress.
    fn evict(
        &mut self,
        id: TaskId,
        why: Eviction,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        let left = self.cpu.remove(now, id).unwrap_or(0.0);
        self.allocated.remove(&id);
        let Some((mut task, started_at)) = self.running.remove(&id) else {
            return Ok(());
        };
        self.forget_kind(&task);
        let done = (task.service_ns as f64 - left).max(0.0);
        let keep_progress = why == Eviction::Migration
            || (matches!(why, Eviction::Memory | Eviction::Priority) && self.world.resume);
        // a distributed unit's work is its run's: the attempt it held its
        // cores for is lost, core-seconds of it; a task's work is time on
        // all of its threads (sharing.rs), so what it loses is that times
        // its threads (thesis WE, core-seconds)
        let wasted = match task.dist {
            Some(_) => (now - started_at) as f64 / 1e9 * f64::from(task.cores),
            None if keep_progress => 0.0,
            None => done / 1e9 * f64::from(task.cores.max(1)),
        };
        if keep_progress {
            if task.app.is_some() {
                let solo = done / self.truth_speed(&task);
                task.solo_ns = task.solo_ns.saturating_add(to_nanos(solo));
            }
            task.service_ns = to_nanos(left).max(1);
        }
        self.wasted_s += wasted;
        self.busy_ns += u128::from(now - started_at);
        let log = KillLog {
            task: id,
            ran_ns: now - started_at,
            wasted_s: wasted,
        };
        match why {
            Eviction::Primary => {
                self.killed += 1;
                ctx.log("kill", &log);
            }
            Eviction::Memory => {
                self.evictions_memory += 1;
                ctx.log("evict_memory", &log);
            }
            Eviction::Priority => {
                self.evictions_priority += 1;
                ctx.log("evict_priority", &log);
            }
            Eviction::Migration => ctx.log("migrate_out", &log),
            Eviction::Stopped => {
                self.dist_stopped += 1;
                ctx.log("dist_stop", &log);
            }
        }
        if task.dist.is_some() && why != Eviction::Migration {
            let world = Arc::clone(&self.world);
            let outs = self.dist.stopped(world.dist_catalog(), ctx.me(), id, now);
            self.dist_apply(outs, ctx)?;
        }
        if matches!(why, Eviction::Memory | Eviction::Priority) {
            task.evictions += 1;
        }
        if why == Eviction::Priority {
            task.priority_evictions += 1;
        }
        let world = Arc::clone(&self.world);
        let body = match why {
            Eviction::Migration => Body::Migrating(task),
            Eviction::Primary | Eviction::Stopped => Body::Killed(task),
            Eviction::Memory => Body::Evicted {
                task,
                cause: EvictionCause::Memory,
            },
            Eviction::Priority => Body::Evicted {
                task,
                cause: EvictionCause::Priority,
            },
        };
        self.nic.send(&world, ctx, world.scheduler, body)
    }

    /// Gives a starting task its memory (thesis §6.2.3.4): all of it if the
    /// server has it; otherwise what is left, and a checkpoint drawn
    /// uniformly in `[0, T_min]` (`T_min`: its work on the fastest core) at
    /// which it needs the rest.
    fn allocate(&mut self, task: &Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let free = self.memory_mb.saturating_sub(self.allocated.values().sum());
        if self.world.memory_eviction == MemoryEviction::None || free >= task.memory_mb {
            self.allocated.insert(task.id, task.memory_mb);
            return Ok(());
        }
        self.allocated.insert(task.id, free);
        let t_min = task.service_ns as f64 / self.world.max_core_speed;
        let checkpoint = to_nanos(uniform_open0(ctx.rng()) * t_min);
        ctx.timer(checkpoint, Msg::MemoryCheck { task: task.id })
    }

    /// A task at its checkpoint needs its full memory; if the server does not
    /// have it, tasks are evicted by the policy until it does, or until the
    /// task itself was the one evicted.
    fn memory_check(&mut self, id: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        while let Some((task, _)) = self.running.get(&id) {
            let want = task.memory_mb;
            let has = self.allocated.get(&id).copied().unwrap_or(0);
            let free = self.memory_mb.saturating_sub(self.allocated.values().sum());
            if has >= want || free >= want - has {
                self.allocated.insert(id, want);
                break;
            }
            let Some(victim) = self.memory_victim(id) else {
                break;
            };
            self.evict(victim, Eviction::Memory, ctx)?;
        }
        self.update_power(ctx);
        self.refresh_rates(ctx.now());
        self.reschedule(ctx)
    }

    /// The task to evict for `needy`'s memory: LSF, the last started task
    /// whose memory is not yet satisfied; LPF, the lowest priority task,
    /// most recently started first.
    fn memory_victim(&self, needy: TaskId) -> Option<TaskId> {
        let unsatisfied = |id: &TaskId, task: &Task| {
            self.allocated.get(id).copied().unwrap_or(0) < task.memory_mb
        };
        let candidates = self.running.iter();
        match self.world.memory_eviction {
            MemoryEviction::None => None,
            MemoryEviction::Lsf => candidates
                .filter(|(id, (task, _))| unsatisfied(id, task))
                .max_by_key(|(id, (_, started))| (*started, **id))
                .map(|(&id, _)| id),
            MemoryEviction::Lpf => candidates
                .min_by_key(|(id, (task, started))| {
                    (task.priority, std::cmp::Reverse((*started, **id)))
                })
                .map(|(&id, _)| id),
        }
        .or(Some(needy))
    }

    /// Slots held by running tasks and by tasks waiting for the wake-up.
    fn slots_taken(&self) -> u32 {
        let running: u32 = self
            .running
            .values()
            .map(|(t, _)| self.slots_of(t.cores))
            .sum();
        let held = self.power_state.held().iter();
        running + held.map(|t| self.slots_of(t.cores)).sum::<u32>()
    }

    /// Slots a task of `threads` threads takes here ([`slots_for`]).
    fn slots_of(&self, threads: u32) -> u32 {
        slots_for(threads, self.cores_total, self.slots)
    }

    fn woke(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        for task in self.power_state.woke(ctx, self.power.idle_w) {
            self.run_task(task, ctx)?;
        }
        if self.world.power_orders {
            self.tell_awake(ctx)?;
        }
        Ok(())
    }

    /// An order of the external program that decides the servers' power
    /// (protocol v3), through the scheduler. To sleep: only with nothing
    /// running or waiting for a wake-up and no primary tenant (which never
    /// lets its server sleep); otherwise it logs `sleep_refused` and tells
    /// the scheduler it is awake. To wake: from sleep, `power.server_wake`
    /// at peak power (thesis §4.2.4, eq. 4.2), as a dispatch wakes it.
    fn power_order(&mut self, sleep: bool, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        self.power_orders += 1;
        let state = self.power_state.device.state();
        if !sleep {
            let wake = self.world.power.server_wake.as_nanos();
            if self.power_state.wake(ctx, self.power.peak(), wake)? || state == DevState::Waking {
                return Ok(());
            }
            return self.tell_awake(ctx);
        }
        if state == DevState::Sleep {
            return Ok(());
        }
        let held = self.power_state.held().len();
        if self.running.is_empty() && held == 0 && !self.owned && state == DevState::Idle {
            self.power_state.sleep(ctx, self.power.sleep_w);
            return Ok(());
        }
        ctx.log(
            "sleep_refused",
            &SleepRefusedLog {
                running: self.running.len(),
                waiting_wake: held,
                primary: self.owned,
            },
        );
        match state {
            DevState::Waking => Ok(()),
            _ => self.tell_awake(ctx),
        }
    }

    /// Tells the scheduler the server is awake, with the power orders it
    /// received (`Body::Awake`).
    fn tell_awake(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        let orders = self.power_orders;
        self.nic
            .send_in_order(&world, ctx, world.scheduler, Body::Awake { orders })
    }

    fn run_task(&mut self, mut task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let id = task.id;
        let since = self.held_since.remove(&id).unwrap_or(ctx.now());
        self.wake_wait_s.push((ctx.now() - since) as f64 / 1e9);
        task.first_start.get_or_insert(ctx.now());
        if let Some(kind) = task.kind()
            && !self.kinds.contains_key(&kind)
            && let Some(profile) = self.world.kind_truth(kind)
        {
            self.kinds.insert(kind, profile);
        }
        self.allocate(&task, ctx)?;
        // a distributed unit holds its cores until its coordinator ends
        // the run (`crate::distributed::runtime`)
        let work = if task.dist.is_some() {
            HELD_BY_RUN
        } else {
            task.service_ns
        };
        let demand = f64::from(task.cpu_ppm) / 1e6 * self.world.strongest_capacity;
        self.cpu
            .add_with_demand(ctx.now(), id, work, task.cores, self.core_speed, demand);
        let dist = task.dist;
        ctx.log(
            "task_start",
            &StartLog {
                task: id,
                tenant: self.world.name(task.tenant),
                server_type: &self.server_type,
                running: self.running.len() + 1,
            },
        );
        self.running.insert(id, (task, ctx.now()));
        if let Some(d) = dist {
            let world = Arc::clone(&self.world);
            let outs = (self.dist).started(world.dist_catalog(), ctx.me(), id, d, ctx.now());
            self.dist_apply(outs, ctx)?;
        }
        self.enforce_reserve(ctx)?;
        self.update_power(ctx);
        self.refresh_rates(ctx.now());
        self.reschedule(ctx)
    }

    /// Recomputes the rate multiplier of every running application from the
    /// ground truth: its speed on this configuration, slowed by the pressure
    /// its co-runners' current phases put on each source of interference.
    /// A task without a catalog entry runs by its kind's hidden profile
    /// ([`World::kind_truth`]): its work is time on one core of speed 1, so
    /// on its best configuration it runs at the fastest core speed of the
    /// datacenter, elsewhere at its relative speed there. Plain tasks (no
    /// profile: `non_catalog = "plain"`) run at the core speed and put no
    /// pressure on anyone.
    fn refresh_rates(&mut self, now: SimTime) {
        let (world, kinds) = (&*self.world, &self.kinds);
        if world.catalog.is_empty() {
            return;
        }
        self.cpu.advance_to(now);
        let apps: Vec<(TaskId, &AppProfile, usize, bool)> = self
            .running
            .iter()
            .filter_map(|(&id, (task, _))| {
                let app = truth(world, kinds, task)?;
                let left = self.cpu.left(id)?;
                let done = 1.0 - left / task.total_ns.max(task.service_ns).max(1) as f64;
                let phase = app
                    .phases
                    .iter()
                    .rposition(|p| p.from <= done + 1e-12)
                    .unwrap_or(0);
                Some((id, app, phase, task.app.is_some()))
            })
            .collect();
        let caused: Vec<[f64; SOURCES]> = apps
            .iter()
            .map(|&(_, app, p, _)| app.caused_in(&app.phases[p]))
            .collect();
        let total: [f64; SOURCES] =
            std::array::from_fn(|s| caused.iter().map(|c| c[s]).sum::<f64>());
        let weights = pressure_weights(self.cpu.cores(), self.cpu.threads() as usize);
        for (i, &(id, app, p, catalog)) in apps.iter().enumerate() {
            let pressure: [f64; SOURCES] =
                std::array::from_fn(|s| (total[s] - caused[i][s]) * weights[s]);
            let factor = interference_factor(app, &app.phases[p], &pressure);
            let speed = app.speed.get(self.class).copied().unwrap_or(1.0);
            let multiplier = if catalog {
                // an application given fewer threads than it has runs slower
                let threads = self.running.get(&id).map_or(app.cores, |(t, _)| t.cores);
                let width = f64::from(threads) / f64::from(app.cores.max(1));
                speed * factor * width.min(1.0)
            } else {
                world.max_core_speed * speed * factor
            };
            self.cpu.set_multiplier(now, id, multiplier);
        }
    }

    /// Ground-truth speed of `task`'s application on this configuration
    /// (1.0 for a plain task): grading only.
    fn truth_speed(&self, task: &Task) -> f64 {
        task.app
            .and_then(|a| self.world.catalog.get(a as usize))
            .and_then(|a| a.speed.get(self.class).copied())
            .unwrap_or(1.0)
    }

    /// Drops the hidden profile of `task`'s kind once no task of it runs
    /// here any more.
    fn forget_kind(&mut self, task: &Task) {
        if let Some(kind) = task.kind()
            && !self.running.values().any(|(t, _)| t.kind() == Some(kind))
        {
            self.kinds.remove(&kind);
        }
    }

    /// When the next running application enters its next phase, if any.
    fn next_phase_change(&self) -> Option<SimTime> {
        self.running
            .iter()
            .filter_map(|(&id, (task, _))| {
                let app = truth(&self.world, &self.kinds, task)?;
                let work = task.total_ns.max(task.service_ns) as f64;
                let done = 1.0 - self.cpu.left(id)? / work.max(1.0);
                let next = app.phases.iter().find(|p| p.from > done + 1e-12)?;
                self.cpu.reaches(id, work * (1.0 - next.from))
            })
            .min()
    }

    /// Keeps one `Progress` timer at the earliest completion; a timer made
    /// stale by a change of rates is ignored by its old generation.
    fn reschedule(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let next = match (self.cpu.next_finish(), self.next_phase_change()) {
            (Some(f), Some(p)) => Some(f.min(p.max(ctx.now() + 1))),
            (f, p) => f.or(p),
        };
        if next != self.timer.1 {
            self.timer = (self.timer.0 + 1, next);
            // a unit's work never runs out (`HELD_BY_RUN`): no timer, which
            // would only wait in the queue until the run's end
            if let Some(at) = next.filter(|&at| at < HELD_BY_RUN / 2) {
                ctx.timer(
                    at.saturating_sub(ctx.now()),
                    Msg::Progress {
                        generation: self.timer.0,
                    },
                )?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, id: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let Some((task, started_at)) = self.running.remove(&id) else {
            return Err(ModelError::Invariant(format!(
                "{} completed task {id}, which it is not running",
                self.world.name(ctx.me())
            )));
        };
        self.forget_kind(&task);
        let now = ctx.now();
        self.allocated.remove(&id);
        self.completed += 1;
        self.last_done = now;
        if task.priority == 0 {
            let response = (now - task.submitted_at) as f64 / 1e9;
            match task.evictions {
                0 => self.class0_non_evicted_s.push(response),
                _ => self.class0_evicted_s.push(response),
            }
            if task.priority_evictions > 0 {
                let bucket = (task.priority_evictions as usize).min(PE_BUCKETS) - 1;
                self.class0_by_pe_s[bucket].push(response);
            }
        }
        self.busy_ns += u128::from(now - started_at);
        // Paragon §5: performance normalised to running alone on the best
        // configuration, over its whole execution (migrations included).
        let first = task.first_start.unwrap_or(started_at);
        let perf_norm = task
            .app
            .map(|_| task.total_ns.max(task.service_ns) as f64 / (now - first).max(1) as f64);
        if let (Some(p), Some(app)) = (perf_norm, task.app) {
            self.apps_completed += 1;
            self.apps_qos_met += u64::from(p >= QOS_PERF_NORM);
            self.perf_norm.push(p);
            let profile = self.world.catalog.get(app as usize);
            let family = profile.map_or("?", |a| a.family.name());
            // Paragon Fig. 9 / Fig. 14 split a result into the quality of
            // the platform decision (speed against the best configuration)
            // and of the colocation (what is left of perf_norm); grading
            // only. An application that moved is graded on the speed of all
            // the configurations it ran on, weighted by the work it did on
            // each, so a slow first server is not counted as interference.
            let here = self.truth_speed(&task);
            let speed = if task.solo_ns == 0 {
                here
            } else {
                let work = task.total_ns.max(task.service_ns) as f64;
                work / (task.solo_ns as f64 + task.service_ns as f64 / here)
            };
            self.apps_het_ok += u64::from(speed >= QOS_PERF_NORM);
            self.apps_intf_ok += u64::from(p >= QOS_PERF_NORM * speed);
            self.app_rows.push((
                id,
                format!(
                    "{id},{app},{family},{},{},{},{p},{speed}",
                    self.world.name(ctx.me()),
                    self.server_type,
                    now - first
                ),
            ));
        }
        ctx.log(
            "task_end",
            &EndLog {
                task: id,
                ran_ns: now - started_at,
                running: self.running.len(),
                perf_norm,
            },
        );
        self.update_power(ctx);
        let world = Arc::clone(&self.world);
        self.nic.send(
            &world,
            ctx,
            world.scheduler,
            Body::Finished {
                task: id,
                slots: task.cores,
            },
        )?;
        self.nic.send(
            &world,
            ctx,
            task.tenant,
            Body::Done {
                task: id,
                priority: task.priority,
                submitted_at: task.submitted_at,
                started_at,
                finished_at: now,
            },
        )
    }

    /// On with eq. 4.1 while tasks run; otherwise idle, or asleep under SLP.
    fn update_power(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let secondary = if self.running.is_empty() {
            0
        } else {
            self.cpu.busy_cores()
        };
        let busy = secondary + self.primary_cores;
        self.busy_cores.set(now, f64::from(busy));
        let used: u64 = self.allocated.values().sum();
        self.memory_in_use.set(now, used as f64);
        if busy > 0 {
            let u_cpu = f64::from(busy) / f64::from(self.cores_total.max(1));
            let used: u64 = self.allocated.values().sum();
            let u_mem = (used as f64 / self.memory_mb.max(1) as f64).min(1.0);
            self.power_state
                .device
                .set(now, DevState::On, self.power.on(u_cpu, u_mem));
        } else if !self.power_state.held().is_empty() {
            // still waking: nothing to change
        } else if self.world.power.policy == PowerPolicy::Sleep && !self.owned {
            self.power_state.sleep(ctx, self.power.sleep_w);
        } else {
            self.power_state
                .device
                .set(now, DevState::Idle, self.power.idle_w);
        }
    }

    /// What `dcemu replay --until T --dump` shows of a server: its power
    /// state, the tasks on it (with their start times) and those waiting for
    /// a wake-up, memory and the primary tenant's cores.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "server_type": self.server_type,
            "power": format!("{:?}", self.power_state.device.state()),
            "slots": self.slots,
            "cores": self.cores_total,
            "running": self.running.iter().map(|(id, (_, since))| {
                serde_json::json!({"task": id, "since_ns": since})
            }).collect::<Vec<_>>(),
            "waiting_wake": self.power_state.held().iter().map(|t| t.id).collect::<Vec<_>>(),
            "memory_mb": self.memory_mb,
            "memory_allocated_mb": self.allocated.values().sum::<u64>(),
            "primary_cores": self.primary_cores,
            "reserve_cores": self.reserve_cores,
            "killed": self.killed,
            "evictions_memory": self.evictions_memory,
            "evictions_priority": self.evictions_priority,
        })
    }

    pub fn finish(&mut self, end: SimTime, out: &mut Metrics) {
        self.inbox.finish(out);
        self.dist.finish(self.world.distributed.is_some(), out);
        if self.dist_stopped > 0 {
            out.add("dist_units_stopped", self.dist_stopped);
        }
        let partial: u128 = self
            .running
            .values()
            .map(|&(_, started)| u128::from(end.saturating_sub(started)))
            .sum();
        out.add("tasks_completed", self.completed);
        out.add("killed_containers", self.killed);
        out.add("primary_updates", self.primary_updates);
        out.add(
            "primary_updates_reserve_taken",
            self.primary_updates_reserve_taken,
        );
        out.add_f64("primary_reserve_taken", self.primary_reserve_taken);
        out.add("evictions_memory", self.evictions_memory);
        out.add("evictions_priority", self.evictions_priority);
        out.add(
            "evictions_total",
            self.evictions_memory + self.evictions_priority,
        );
        out.declare_samples("response_s_class0_evicted");
        out.declare_samples("response_s_class0_non_evicted");
        for &r in &self.class0_evicted_s {
            out.sample("response_s_class0_evicted", r);
        }
        for &r in &self.class0_non_evicted_s {
            out.sample("response_s_class0_non_evicted", r);
        }
        if self.class0_by_pe_s.iter().any(|b| !b.is_empty()) {
            for (name, bucket) in PE_METRICS.iter().zip(&self.class0_by_pe_s) {
                out.declare_samples(name);
                for &r in bucket {
                    out.sample(name, r);
                }
            }
        }
        out.add("server_reports", self.reports);
        out.add_f64("wasted_cpu_s", self.wasted_s);
        out.add("reimages", self.reimages);
        out.add("replicas_lost_reimage", self.replicas_lost);
        out.add("cores_total", u64::from(self.cores_total));
        out.add_f64("cpu_busy_core_s", self.busy_cores.joules_at(end));
        out.declare_samples("wake_wait_s");
        for &w in &self.wake_wait_s {
            out.sample("wake_wait_s", w);
        }
        let on_s = self.power_state.device.powered_s(end);
        out.add_f64("on_core_s", f64::from(self.cores_total) * on_s);
        out.add_f64("memory_used_mb_s", self.memory_in_use.joules_at(end));
        out.add_f64("on_memory_mb_s", self.memory_mb as f64 * on_s);
        out.add("apps_completed", self.apps_completed);
        out.add("apps_qos_met", self.apps_qos_met);
        if self.apps_completed > 0 {
            out.add("apps_het_ok", self.apps_het_ok);
            out.add("apps_intf_ok", self.apps_intf_ok);
        }
        out.declare_samples("perf_norm");
        for (id, line) in self.app_rows.drain(..) {
            out.row("applications", id, line);
        }
        for &p in &self.perf_norm {
            out.sample("perf_norm", p);
        }
        for (&bin, &(sum, n)) in &self.perf_bins {
            out.row("perf_over_time", bin, format!("{sum},{n}"));
        }
        out.add("tasks_running_end", self.running.len() as u64);
        crate::hpc_jobs::running_at_end(
            &self.world.hpc_tenants,
            self.running
                .values()
                .map(|(task, started)| (task.tenant, task.cores, *started)),
            end,
            out,
        );
        out.add(
            "tasks_waiting_wake_end",
            self.power_state.held().len() as u64,
        );
        out.add("slots_total", u64::from(self.slots));
        out.add_f64("slot_busy_s", (self.busy_ns + partial) as f64 / 1e9);
        // what it draws and uses at the end: nothing changes after the
        // run's last event, so these give every integral up to it
        // (metrics.rs, the `_active` figures)
        out.add_f64("power_w_end_server", self.power_state.device.watts());
        out.add_f64("busy_cores_end", self.busy_cores.watts());
        if self.completed > 0 {
            out.sample("task_done_last_s", self.last_done as f64 / 1e9);
        }
        self.power_state.device.report(
            end,
            out,
            "energy_j_server",
            "wake_ups_server",
            "servers_on",
        );
    }
}
