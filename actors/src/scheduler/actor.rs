//! The scheduler actor: the state every stage shares ([`Scheduler`]), built
//! from the scenario, and its message handling: each event it receives
//! goes to the stage it concerns (docs/scheduler.md). The stages' passes
//! are `passes.rs`; what they place with is `state.rs`'s [`Core`].

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::SimTime;

use crate::config::{
    AdmissionKind, Contention, PlacementKind, PrimaryTenantConfig, SchedulerConfig,
};
use crate::kernel::{ActorId, Ctx, Envelope, Metrics, ModelError};
use crate::net::{Body, EvictionCause, Inbox, Nic};
use crate::net::{Msg, unexpected};
use crate::profiling::Lab;
use crate::task::Task;
use crate::world::World;

use super::admission::{Admission, PoolState};
use super::classification::Classifier;
use super::classification::cf::CfParams;
use super::preemption::{EvictionStats, Returned, SlotServer, SlotStage};

use super::logs::{ArriveLog, EvictedLog, QueueLog, ReleaseLog};
use super::registered::UnknownPolicy;
use super::state::{Classification, Core, KindStats, PlacedTasks, ServerPools};
use super::{ClusterView, FlowTable, ServerSpec};
use super::{admission, gang, placement};

pub struct Scheduler {
    pub(super) cfg: SchedulerConfig,
    pub(super) admission: Box<dyn Admission>,
    pub(super) core: Core,
    /// The thesis's slot stage, when `scheduler.slots` is not `none`; it
    /// then queues and places every task itself.
    pub(super) slots: Option<SlotStage>,
    /// The energy stage queues and places every task itself (`admission =
    /// "fifo"`, `slots = "none"`: the thesis's chapters 3–4 as written).
    /// Otherwise it is the placement behind ARQ or the slot stage
    /// ([`CorePlacer`]).
    pub(super) energy_queues: bool,
    /// An energy-aware placement behind ARQ without a slot stage: ARQ holds
    /// the queue and offers it at the start of each time slot (GEMS batches
    /// per slot, thesis §4.2.5).
    pub(super) energy_admission: bool,
    /// Distributed runs waiting for an energy stage that queues by itself
    /// (`energy_queues`): their unit 0s, in arrival order
    /// (`energy_gang.rs`).
    pub(super) energy_runs: Vec<Task>,
    /// The placement stage chooses the free slot of each start of the slot
    /// stage (`placement` other than `random`); the scheduler's cluster
    /// view then follows the slot stage's starts and releases.
    pub(super) slot_placer: bool,
    /// Under a slot stage, the admission stage (`arq`) holds the queue and
    /// its order and scopes stand for the slot stage's queue
    /// ([`SlotStage::try_start`]).
    pub(super) slot_admission: bool,
    /// The `SlotTick` armed, if any (slot and energy stages).
    pub(super) slot_tick: Option<SimTime>,
    pub(super) dist_tick: Option<SimTime>,
    pub(super) evictions: EvictionStats,
}

impl Scheduler {
    /// A scheduler over `servers`, whose first ones the `primaries` own in
    /// order (what AutoPilot tells YARN-H's clustering service); `flows`:
    /// some tenant's tasks reserve bandwidth (`flow_bandwidth`).
    pub fn new(
        world: Arc<World>,
        cfg: &SchedulerConfig,
        servers: &[ServerSpec],
        primaries: &[PrimaryTenantConfig],
        flows: bool,
        oracle: Option<Box<dyn crate::external::Oracle>>,
    ) -> Result<Self, UnknownPolicy> {
        let placement = placement::build(
            cfg,
            servers,
            primaries,
            oracle,
            &world.network,
            &world.power,
        )?;
        let admission = admission::build(cfg, servers)?;
        let backfills = admission.reads_machine();
        let pools = admission.pools();
        let mut cluster = ClusterView::new(servers, cfg.contention == Contention::Server);
        if !primaries.is_empty() && world.primary_kills && !cfg.placement.reads_primary_use() {
            cluster.set_primary_aware();
        }
        if placement.tracks_power() {
            cluster.track_power();
        }
        if placement.decides_at_idle() {
            cluster.watch_idle();
        }
        let sends_orders = placement.tracks_power() || placement.wants_running();
        let pool = ServerPools::new(servers.len());
        let counted: Vec<(bool, bool)> = servers.iter().map(|s| (false, s.slots > 0)).collect();
        let mut pool_counts = PoolState {
            busy: vec![0; pools],
            free: vec![0; pools],
            machine: None,
        };
        pool_counts.free[0] = counted.iter().filter(|c| c.1).count() as u32;
        let slot_stage = cfg
            .slots
            .slotted()
            .then(|| {
                SlotStage::new(
                    cfg,
                    servers
                        .iter()
                        .map(|s| SlotServer {
                            id: s.id,
                            slots: s.slots,
                            cores: s.cores,
                            cpu_per_slot: s.core_speed * f64::from(s.cores)
                                / f64::from(s.slots.max(1)),
                        })
                        .collect(),
                )
            })
            .transpose()?;
        let energy = placement.energy_ref().is_some();
        Ok(Scheduler {
            cfg: cfg.clone(),
            admission,
            // flows need a path with their bandwidth: the placement stage
            // (`random` included) picks among the servers that have one; a
            // program picking victims is asked through the placer
            slot_placer: slot_stage.is_some()
                && (cfg.placement != PlacementKind::Random
                    || cfg.admission != AdmissionKind::Fifo
                    || cluster.primary_aware()
                    || flows
                    || cfg.external.is_some()),
            slot_admission: slot_stage.is_some() && cfg.admission != AdmissionKind::Fifo,
            energy_queues: energy && slot_stage.is_none() && cfg.admission == AdmissionKind::Fifo,
            energy_admission: energy
                && slot_stage.is_none()
                && cfg.admission != AdmissionKind::Fifo,
            slots: slot_stage,
            energy_runs: Vec::new(),
            slot_tick: None,
            dist_tick: None,
            evictions: EvictionStats::default(),
            core: Core {
                classification: None,
                profiles: BTreeMap::new(),
                kinds: BTreeMap::new(),
                kind_waiting: BTreeMap::new(),
                kind_stats: KindStats::default(),
                placed: PlacedTasks::default(),
                nic: Nic::default(),
                inbox: Inbox::default(),
                placement,
                cluster,
                pool,
                pools,
                pool_counts,
                counted,
                flows: FlowTable::default(),
                notices: Vec::new(),
                resubmit_delay: cfg.resubmit_delay.as_nanos(),
                reclassify_below: if cfg.detects_phases() {
                    cfg.reclassify_below
                } else {
                    0.0
                },
                migration_time: cfg.migration_time.as_nanos(),
                dispatched: 0,
                killed: 0,
                profiled: 0,
                reclassifications: 0,
                migrations: 0,
                migrations_declined: 0,
                isolations: 0,
                gangs: gang::Gangs::default(),
                short_jobs: 0,
                queue_wait_s: Vec::new(),
                queue_wait_share: Vec::new(),
                decision_us: Vec::new(),
                tick: None,
                version: 0,
                no_room: BTreeMap::new(),
                strict_speed: cfg.arq_speed,
                in_order: cfg.slots.slotted()
                    || (cfg.placement.energy_aware() && cfg.admission != AdmissionKind::Fifo)
                    || sends_orders,
                sends_orders,
                busy_until: 0,
                backfills,
                slot_latency: BTreeMap::new(),
                held: Default::default(),
                moving: Default::default(),
                world,
            },
        })
    }

    /// Profiles the offline training set and builds the classification
    /// engine (Paragon §2.2), when the pipeline classifies. Done at start,
    /// so its random draws come from the scheduler's own stream.
    pub fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let cfg = &self.cfg;
        let core = &mut self.core;
        if !cfg.classifies() || core.world.catalog.is_empty() {
            return Ok(());
        }
        let classes = core
            .cluster
            .servers()
            .iter()
            .map(|s| s.class + 1)
            .max()
            .unwrap_or(1);
        let mut lab = Lab::new(Arc::clone(&core.world), classes, cfg.profile_noise);
        let training = lab.training_set(cfg.training_apps, ctx.rng());
        let params = CfParams {
            rank: cfg.cf_rank as usize,
            learning_rate: cfg.cf_learning_rate,
            regularization: cfg.cf_regularization,
            max_epochs: cfg.cf_max_epochs,
            tolerance: cfg.cf_tolerance,
        };
        let classifier = Classifier::new(&training, classes, params, cfg.cf_retrain_every);
        ctx.log(
            "training_set",
            &serde_json::json!({ "apps": training.len(), "classes": classes }),
        );
        core.classification = Some(Classification {
            lab,
            classifier,
            profile_time: cfg.profile_time.as_nanos(),
            profile_share: cfg.profile_share,
            short_job: cfg.short_job.as_nanos(),
        });
        Ok(())
    }

    /// Handles one event; a placement that cannot go on (an external
    /// program that misbehaved) stops the run with its error.
    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        self.core.placement.at(ctx.now());
        let result = self.handle_event(msg, ctx);
        if let Some(e) = self.core.placement.take_error() {
            return Err(e);
        }
        result?;
        let orders = self.core.placement.take_power();
        let moves = self.core.placement.take_migrations();
        self.core
            .send_orders(ctx, orders, moves, 0, self.slots.as_mut())?;
        self.idle_point(ctx)
    }

    /// The end of an event that left servers idle in the scheduler's view
    /// (their last task ended, was killed or moved away) without a
    /// placement request showing them idle since: a decision point for a
    /// placement that decides there ([`Placement::idle`]; an external
    /// program's `idle` request, protocol v3), whose power orders and
    /// migrations leave when its decision is done.
    pub(super) fn idle_point(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if !self.core.placement.decides_at_idle() {
            return Ok(());
        }
        let idle = self.core.cluster.went_idle();
        if idle.is_empty() {
            return Ok(());
        }
        let queued = self.queued();
        let core = &mut self.core;
        if core.placement.wants_running() {
            let running = core.running_tasks();
            core.placement.set_running(running);
        }
        core.placement.idle(&idle, queued, &core.cluster, ctx.rng());
        for (kind, fields) in core.placement.take_logs() {
            ctx.log(kind, &fields);
        }
        if let Some(e) = core.placement.take_error() {
            return Err(e);
        }
        let latency = core.placement.decision_latency();
        let orders = core.placement.take_power();
        let moves = core.placement.take_migrations();
        core.send_orders(ctx, orders, moves, latency, self.slots.as_mut())
            .map(|_| ())
    }

    pub(super) fn handle_event(
        &mut self,
        msg: Msg,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let packet = match msg {
            Msg::Packet(packet) => packet,
            Msg::Requeue(task) if self.energy_queues => {
                if self.core.gangs.rest(task.id).is_some() {
                    self.energy_runs.push(task);
                } else if let Some(stage) = self.core.placement.energy() {
                    stage.enqueue(task);
                }
                return self.arm_slot_tick(ctx);
            }
            Msg::Requeue(task) if self.slots.is_some() => {
                ctx.log(
                    "task_requeue",
                    &QueueLog {
                        task: task.id,
                        queue_len: self.queued() + 1,
                    },
                );
                if self.slot_admission {
                    self.admission.requeue(task, ctx.now());
                } else if let Some(stage) = self.slots.as_mut() {
                    match self.core.gangs.take_rest(task.id) {
                        Some(rest) => stage.enqueue_gang(task, rest),
                        None => stage.enqueue(task),
                    }
                }
                return self.arm_slot_tick(ctx);
            }
            Msg::SlotTick => {
                self.slot_tick = None;
                if self.energy_queues {
                    return self.energy_pass(ctx);
                }
                if self.energy_admission {
                    return self.energy_admission_pass(ctx);
                }
                return self.slot_pass(ctx);
            }
            Msg::Requeue(task) => {
                ctx.log(
                    "task_requeue",
                    &QueueLog {
                        task: task.id,
                        queue_len: self.admission.len() + 1,
                    },
                );
                self.admission.requeue(task, ctx.now());
                return self.drain(ctx);
            }
            Msg::Profiled(task) => return self.profiled(task, ctx),
            Msg::DistPlace => return self.dist_pass(ctx),
            Msg::Migrated { task, server } => {
                self.core.migrations += 1;
                self.core.moving.remove(&task.id);
                if let Some(stage) = self.slots.as_mut() {
                    stage.arrived(task.id);
                }
                let world = Arc::clone(&self.core.world);
                ctx.log(
                    "migrate_done",
                    &ReleaseLog {
                        task: task.id,
                        server: world.name(server),
                    },
                );
                return self
                    .core
                    .nic
                    .send(&world, ctx, server, Body::Dispatch(task));
            }
            Msg::AdmissionTick => {
                self.core.tick = None;
                return self.drain(ctx);
            }
            Msg::Deferred { server, body } => return self.core.send(ctx, server, body),
            other => return Err(unexpected("scheduler", other.name())),
        };
        let world = Arc::clone(&self.core.world);
        let (src, body) = self.core.inbox.accept(&world, ctx, packet)?;
        match body {
            Body::Submit(task) => {
                ctx.log(
                    "task_arrive",
                    &ArriveLog {
                        task: task.id,
                        tenant: world.name(task.tenant).to_string(),
                    },
                );
                let queues = self.energy_queues && task.dist.is_none();
                if let Some(stage) = self.core.placement.energy().filter(|_| queues) {
                    stage.enqueue(task);
                    return self.arm_slot_tick(ctx);
                }
                let run = task.dist.is_some() && self.slots.is_none();
                if let Some(stage) = self.core.placement.annealing().filter(|_| run) {
                    let now = ctx.now();
                    let at = stage.submit(task, now, ctx.rng())?;
                    for (kind, fields) in stage.take_logs() {
                        ctx.log(kind, &fields);
                    }
                    if self.dist_tick.is_none_or(|t| t < at) {
                        self.dist_tick = Some(at);
                        ctx.timer(at - now, Msg::DistPlace)?;
                    }
                    return Ok(());
                }
                if task.dist.is_some() {
                    // a run queues as its unit 0 once complete (gang.rs);
                    // its units are not profiled (their application is
                    // in the distributed catalog, ASPLOS'16, not Paragon's);
                    // under a slot stage each unit takes a slot per core
                    // (`preemption/gang.rs`)
                    // `annealing` under a slot stage profiles the run's
                    // application (ASPLOS'16 §5.1) and the run joins the
                    // slot stage's queue once complete and profiled
                    let now = ctx.now();
                    let mut ready = now;
                    if let Some(stage) = self.core.placement.annealing() {
                        ready = stage.profile(&task, now, ctx.rng())?;
                        for (kind, fields) in stage.take_logs() {
                            ctx.log(kind, &fields);
                        }
                    }
                    return match self.core.gangs.arrive(task) {
                        Some(first) if self.energy_queues => {
                            self.energy_runs.push(first);
                            self.arm_slot_tick(ctx)
                        }
                        Some(first) if ready > now => ctx.timer(ready - now, Msg::Profiled(first)),
                        Some(first) => self.admit(first, 0, ctx),
                        None => Ok(()),
                    };
                }
                if let Some(kind) = task.kind()
                    && let Some(c) = &self.core.classification
                    && c.lab.profiles_kinds()
                {
                    return self.submit_kind(task, kind, ctx);
                }
                if let Some(c) = &self.core.classification
                    && task.app.is_some()
                    && task.service_ns >= c.short_job
                {
                    self.core.profiled += 1;
                    ctx.log(
                        "profile_start",
                        &serde_json::json!({ "task": task.id, "app": task.app }),
                    );
                    return ctx.timer(c.overhead(&task), Msg::Profiled(task));
                }
                if self.core.classification.is_some() && task.app.is_some() {
                    self.core.short_jobs += 1;
                }
                self.admit(task, 0, ctx)
            }
            Body::Finished { task, .. }
                if self
                    .core
                    .placement
                    .annealing_ref()
                    .is_some_and(|a| a.owns(task)) =>
            {
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: world.name(src),
                    },
                );
                if let Some((i, slots, memory_mb)) = self
                    .core
                    .placement
                    .annealing()
                    .and_then(|a| a.release(task))
                {
                    self.core.vacate(task, i, slots, memory_mb);
                }
                self.dist_pass(ctx)
            }
            Body::Finished { task, .. } if self.energy_queues => {
                self.core.gangs.finished(task);
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: world.name(src),
                    },
                );
                self.energy_release(task, src, ctx)?;
                self.arm_slot_tick(ctx)
            }
            Body::Finished { task, .. } if self.slots.is_some() => {
                self.core.gangs.finished(task);
                if let Some(stage) = self.core.placement.annealing() {
                    stage.unit_left(task);
                }
                if let Some(stage) = self.slots.as_mut() {
                    stage.release(task, src);
                }
                if self.slot_placer {
                    if let Some((pool, busy_s)) = self.core.forget(task, src, ctx.now()) {
                        self.admission.record_busy(pool, busy_s);
                    }
                    self.core.profiles.remove(&task);
                }
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: world.name(src),
                    },
                );
                self.core.release_flow(task, ctx)?;
                self.energy_release(task, src, ctx)?;
                self.arm_slot_tick(ctx)
            }
            Body::Evicted { task, cause } => {
                let priority = cause == EvictionCause::Priority;
                self.evictions.record(&task, priority);
                let log = EvictedLog {
                    task: task.id,
                    server: world.name(src),
                    cause: if priority { "priority" } else { "memory" },
                    evictions: task.evictions,
                };
                ctx.log("task_evicted", &log);
                if self.slots.is_none() || self.core.gangs.owns(task.id) {
                    return self.handle_killed(task, src, ctx);
                }
                if self.slot_placer
                    && let Some((pool, busy_s)) = self.core.forget(task.id, src, ctx.now())
                {
                    self.admission.record_busy(pool, busy_s);
                }
                self.core.release_flow(task.id, ctx)?;
                self.energy_release(task.id, src, ctx)?;
                let Some(stage) = self.slots.as_mut() else {
                    return Ok(());
                };
                let returned = if self.slot_admission {
                    stage.evicted_out(task, src)
                } else {
                    stage.evicted(task, src)
                };
                let returned = match returned {
                    Returned::ToAdmission(task) => {
                        self.admission.requeue(task, ctx.now());
                        Returned::Requeued
                    }
                    other => other,
                };
                if returned == Returned::Requeued {
                    self.core.killed += 1;
                }
                if let Returned::Dropped(task) = returned {
                    self.core.profiles.remove(&task.id);
                    ctx.log(
                        "task_drop",
                        &EvictedLog {
                            task: task.id,
                            server: world.name(src),
                            cause: log.cause,
                            evictions: task.evictions,
                        },
                    );
                }
                self.arm_slot_tick(ctx)
            }
            Body::Finished { task, slots } => {
                self.core.gangs.finished(task);
                let (pool, busy_s) = self.core.leave(task, src, slots, ctx)?;
                self.admission.record_busy(pool, busy_s);
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: world.name(src),
                    },
                );
                self.core.profiles.remove(&task);
                self.core.release_flow(task, ctx)?;
                self.energy_release(task, src, ctx)?;
                if self.core.placement.annealing_ref().is_some() {
                    return self.dist_pass(ctx);
                }
                self.drain(ctx)
            }
            Body::Report(report) => {
                let i = self.core.cluster.index_of(src);
                let before = i
                    .and_then(|i| self.core.cluster.report(i))
                    .map(|r| (r.primary_cores, r.reserve_cores));
                self.core.cluster.record_report(src, report);
                if self.core.placement.reads_reports() {
                    self.core.version += 1;
                }
                if let Some(i) = i {
                    let core = &mut self.core;
                    if core.cluster.primary_aware()
                        && let Some(energy) = core.placement.energy()
                    {
                        energy.set_room(i, core.cluster.servers()[i as usize].primary_room);
                    }
                    core.placement
                        .observe(i, &core.cluster, ctx.now(), ctx.rng());
                    for (kind, fields) in core.placement.take_logs() {
                        ctx.log(kind, &fields);
                    }
                }
                // a server's primary use or reserve moved: what YARN-PT,
                // YARN-H and a primary-aware view see as available changed
                let moved = before != Some((report.primary_cores, report.reserve_cores));
                let sees_primary =
                    self.cfg.placement.reads_primary_use() || self.core.cluster.primary_aware();
                if sees_primary && moved {
                    self.core.version += 1;
                    return self.drain(ctx);
                }
                Ok(())
            }
            Body::Rates(rates) => self.core.rates(src, &rates, ctx),
            Body::Awake { orders } => {
                if self.core.cluster.awake(src, orders) {
                    self.core.version += 1;
                    return self.drain(ctx);
                }
                Ok(())
            }
            Body::Reclassified {
                task,
                tolerated,
                caused,
            } => {
                self.core
                    .reclassified(task, src, &tolerated, &caused, self.slots.as_mut(), ctx)?;
                self.drain(ctx)
            }
            Body::Migrating(task) => {
                if let Some(stage) = self.slots.as_mut() {
                    stage.left(task.id, src);
                }
                self.core.migrating(task, src, ctx)?;
                self.drain(ctx)
            }
            Body::Killed(task) => {
                ctx.log(
                    "task_killed",
                    &ReleaseLog {
                        task: task.id,
                        server: world.name(src),
                    },
                );
                self.handle_killed(task, src, ctx)
            }
            other => Err(unexpected("scheduler", other.name())),
        }
    }

    /// A task a server gave back (killed for its primary tenant, or evicted
    /// outside the slot stages): it goes back to the queue after
    /// `resubmit_delay`.
    pub(super) fn handle_killed(
        &mut self,
        task: Task,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if self
            .core
            .placement
            .annealing_ref()
            .is_some_and(|a| a.owns(task.id))
        {
            return self.unit_lost(task, ctx);
        }
        if self.core.gangs.owns(task.id) {
            return self.gang_unit_lost(task, src, ctx);
        }
        self.core.killed += 1;
        if self.energy_queues {
            self.energy_release(task.id, src, ctx)?;
            ctx.timer(self.core.resubmit_delay, Msg::Requeue(task))?;
            return self.arm_slot_tick(ctx);
        }
        if let Some(stage) = self.slots.as_mut() {
            stage.release(task.id, src);
            if self.slot_placer
                && let Some((pool, busy_s)) = self.core.forget(task.id, src, ctx.now())
            {
                self.admission.record_busy(pool, busy_s);
            }
            self.core.release_flow(task.id, ctx)?;
            self.energy_release(task.id, src, ctx)?;
            ctx.timer(self.core.resubmit_delay, Msg::Requeue(task))?;
            return self.arm_slot_tick(ctx);
        }
        let (pool, busy_s) = self.core.leave(task.id, src, task.cores, ctx)?;
        self.admission.record_busy(pool, busy_s);
        self.core.release_flow(task.id, ctx)?;
        self.energy_release(task.id, src, ctx)?;
        ctx.timer(self.core.resubmit_delay, Msg::Requeue(task))?;
        self.drain(ctx)
    }

    pub fn finish(&mut self, undelivered: &[Envelope<Msg>], out: &mut Metrics) {
        let queued = self.queued() as u64;
        let core = &mut self.core;
        core.inbox.finish(out);
        core.flows.finish(out);
        let waiting = undelivered
            .iter()
            .filter(|e| {
                matches!(
                    e.payload,
                    Msg::Requeue(_) | Msg::Profiled(_) | Msg::Migrated { .. }
                )
            })
            .count() as u64;
        let kind_waiting: usize = core.kind_waiting.values().map(Vec::len).sum();
        out.add("tasks_queued_end", queued + waiting + kind_waiting as u64);
        let migrating = undelivered
            .iter()
            .filter(|e| matches!(e.payload, Msg::Migrated { .. }))
            .count() as u64;
        out.add("tasks_migrating_end", migrating);
        self.evictions.finish(out);
        if let Some(stage) = &self.slots {
            stage.finish(out);
        }
        // the energy-aware and annealing stages report through the
        // placement's `finish`, below
        core.gangs.finish(out);
        out.add("tasks_requeued", core.killed);
        out.add("tasks_dispatched", core.dispatched);
        out.add("apps_profiled", core.profiled);
        out.add("apps_short_jobs", core.short_jobs);
        // only runs with tasks without a catalog entry under
        // classification have these
        let k = &core.kind_stats;
        if k.profiled + k.known + k.waited + k.short > 0 {
            out.add("kinds_profiled", k.profiled);
            out.add("kind_tasks_known", k.known);
            out.add("kind_tasks_waited", k.waited);
            out.add("kind_tasks_short", k.short);
        }
        out.add("reclassifications", core.reclassifications);
        out.add("migrations", core.migrations);
        out.add("migrations_declined", core.migrations_declined);
        out.add("isolations", core.isolations);
        out.append_samples("queue_wait_s", std::mem::take(&mut core.queue_wait_s));
        if !core.queue_wait_share.is_empty() {
            out.append_samples(
                "queue_wait_share",
                std::mem::take(&mut core.queue_wait_share),
            );
        }
        if !core.decision_us.is_empty() {
            out.append_wall_samples("sched_decision_us", std::mem::take(&mut core.decision_us));
        }
        self.admission.finish(out);
        core.placement.finish(out);
        for &(name, value) in &core.world.truth_inputs {
            out.add_f64(name, value);
        }
        if let Some(c) = &mut core.classification {
            c.lab.finish(out);
            out.add("cf_reconstructions", c.classifier.reconstructions());
        }
    }
}
