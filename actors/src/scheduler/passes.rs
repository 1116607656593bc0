//! The scheduler's passes over its queues: the admission stage's, the slot
//! stage's at each time slot, the energy stage's, distributed runs' and
//! the classification of tasks without a catalog entry; each offers tasks
//! to placement through [`Core`] or [`CorePlacer`].

use std::sync::Arc;
use std::time::Instant;

use dcemu_topology::SimTime;

use crate::kernel::{ActorId, Ctx, ModelError};
use crate::net::Body;
use crate::net::Msg;
use crate::task::{Kind, Task, TaskId};

use super::admission::{Attempt, Scope};
use super::preemption::{SlotAction, SlotPlacer, SlotStage};

use super::actor::Scheduler;
use super::logs::{ClassifyKindLog, ClassifyLog, PreemptLog, QueueLog};
use super::placer::{CorePlacer, action_servers, start_run_placed};
use super::{admission, energy_gang};

impl Scheduler {
    /// A unit of a distributed run came back unfinished (killed for its
    /// server's primary tenant, evicted, or stopped): its run's attempt is
    /// over, the run's other units are stopped, and once all are back the
    /// run queues again from the start ([`annealing::AnnealingStage::lost`]).
    pub(super) fn unit_lost(
        &mut self,
        task: Task,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        let delay = self.core.resubmit_delay;
        let Some(stage) = self.core.placement.annealing() else {
            return Ok(());
        };
        let id = task.id;
        let lost = stage.lost(task, now, delay);
        if let Some((i, slots, memory_mb)) = lost.freed {
            self.core.vacate(id, i, slots, memory_mb);
        }
        let restart = lost.requeue_at.map(|at| (lost.requeued, at));
        self.core.dist_attempt_ended(ctx, id, lost.stop, restart)?;
        if let Some(at) = lost.requeue_at {
            ctx.timer(at.saturating_sub(now), Msg::DistPlace)?;
        }
        self.dist_pass(ctx)
    }

    /// A unit of a distributed run placed by the placement stage came back
    /// unfinished: as under `annealing` ([`Scheduler::unit_lost`]), its
    /// run's other units are stopped and the run queues again whole, its
    /// unit 0 after `resubmit_delay` ([`gang::Gangs::lost`]).
    pub(super) fn gang_unit_lost(
        &mut self,
        task: Task,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if let Some(stage) = self.core.placement.annealing() {
            stage.unit_left(task.id);
        }
        if let Some(stage) = self.slots.as_mut() {
            stage.release(task.id, src);
            if self.slot_placer
                && let Some((pool, busy_s)) = self.core.forget(task.id, src, ctx.now())
            {
                self.admission.record_busy(pool, busy_s);
            }
        } else if !self.energy_queues {
            let (pool, busy_s) = self.core.leave(task.id, src, task.cores, ctx)?;
            self.admission.record_busy(pool, busy_s);
        }
        self.core.release_flow(task.id, ctx)?;
        self.energy_release(task.id, src, ctx)?;
        let id = task.id;
        let lost = self.core.gangs.lost(task);
        let delay = self.core.resubmit_delay;
        let restart = lost
            .requeue
            .as_ref()
            .map(|_| (lost.requeued, ctx.now() + delay));
        self.core.dist_attempt_ended(ctx, id, lost.stop, restart)?;
        if let Some(first) = lost.requeue {
            ctx.timer(delay, Msg::Requeue(first))?;
        }
        self.drain(ctx)
    }

    /// `annealing`: places the ready distributed runs (ASPLOS'16 §5) on
    /// the room the scheduler's view shows, then lets the single tasks
    /// place what they can unless a run still waits for room.
    pub(super) fn dist_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let world = Arc::clone(&self.core.world);
        let Some(stage) = self.core.placement.annealing() else {
            return Ok(());
        };
        if stage.queued() == 0 {
            return self.drain(ctx);
        }
        let started = Instant::now();
        let names = |id: ActorId| world.name(id).to_string();
        let room: Vec<u32> = self
            .core
            .cluster
            .servers()
            .iter()
            .map(|s| {
                s.free_threads()
                    .min(s.primary_room.saturating_sub(s.threads))
            })
            .collect();
        let pass = stage.place(now, &room, &names, ctx.rng());
        self.core
            .decision_us
            .push(started.elapsed().as_secs_f64() * 1e6);
        for (kind, fields) in &pass.logs {
            ctx.log(kind, fields);
        }
        for (i, task) in pass.dispatch {
            let server = self.core.cluster.take(i, task.cores, task.memory_mb);
            self.core.refresh_pool(i);
            let (id, submitted_at) = (task.id, task.submitted_at);
            self.core
                .send_dispatch(ctx, id, submitted_at, server, Body::Dispatch(task), 0)?;
        }
        self.drain(ctx)
    }

    /// Tasks waiting in whichever queue the pipeline uses.
    pub(super) fn queued(&self) -> usize {
        if let Some(a) = self
            .core
            .placement
            .annealing_ref()
            .filter(|_| self.slots.is_none())
        {
            return a.queued() + self.admission.len();
        }
        if let Some(e) = self
            .core
            .placement
            .energy_ref()
            .filter(|_| self.energy_queues)
        {
            return e.queued() + self.energy_runs.len() + self.core.gangs.waiting();
        }
        self.admission.len()
            + self.slots.as_ref().map_or(0, SlotStage::queued)
            + self.core.gangs.waiting()
    }

    /// Arms a `SlotTick` at the start of the next time slot, if tasks wait
    /// and none is armed (thesis §6.2.3.2).
    pub(super) fn arm_slot_tick(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let staged = self.slots.is_some() || self.core.placement.energy_ref().is_some();
        if !staged || self.queued() == 0 || self.slot_tick.is_some_and(|t| t > now) {
            return Ok(());
        }
        let slot = self.cfg.slot_interval.as_nanos().max(1);
        let at = (now / slot + 1) * slot;
        self.slot_tick = Some(at);
        ctx.timer(at - now, Msg::SlotTick)
    }

    /// One time slot: the slot stage schedules its queue; dispatches and
    /// preemptions go out to the servers.
    pub(super) fn slot_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let Some(stage) = self.slots.as_mut() else {
            return Ok(());
        };
        let mut actions = if self.slot_placer {
            let mut placer = CorePlacer::new(&mut self.core, false);
            stage.schedule_placed(now, ctx.rng(), Some(&mut placer))
        } else {
            stage.schedule(now, ctx.rng())
        };
        if self.slot_admission {
            let pools = self.core.pool_state();
            let core = &mut self.core;
            let mut place = |task: &Task, _: SimTime, scope: Scope<'_>| {
                let rest = core.gangs.rest(task.id).map(<[Task]>::to_vec);
                // A gang's units book one by one, each changing its server's
                // pool: they all answer to the pools as the attempt began. A
                // single task reads them as they are (nothing changes a pool
                // before its start is decided), server by server.
                let snapshot: Option<Vec<bool>> = (scope.bounded() && rest.is_some()).then(|| {
                    (0..core.pool.len() as u32)
                        .map(|i| scope.admits(i, core.pool.get(i)))
                        .collect()
                });
                let pools = core.pool.share();
                let admits = |i: u32| match &snapshot {
                    Some(a) => a[i as usize],
                    None => scope.admits(i, pools.get(i)),
                };
                let mut placer = CorePlacer::new(&mut *core, scope.strict);
                let allowed = scope.bounded().then_some(&admits as &dyn Fn(u32) -> bool);
                let rng = ctx.rng();
                let action = match rest {
                    Some(rest) => stage.try_start_gang(task, &rest, allowed, now, rng, &mut placer),
                    None => stage.try_start(task, allowed, now, rng, &mut placer),
                };
                let Some(action) = action else {
                    return Ok(core.refusal(task));
                };
                let pool = placer.pool;
                let on = action_servers(&action, &core.cluster);
                actions.push(action);
                Ok(Attempt::Placed { pool, on })
            };
            self.admission.schedule(now, &pools, &mut place)?;
        }
        self.core.tell(ctx)?;
        let world = Arc::clone(&self.core.world);
        for action in actions {
            let (id, submitted_at, server, body) = match action {
                SlotAction::Dispatch { task, server } => {
                    (task.id, task.submitted_at, server, Body::Dispatch(task))
                }
                SlotAction::Gang { units } => {
                    for (unit, _) in &units {
                        self.core.release_held(ctx, unit.id)?;
                    }
                    self.core.launch_run(ctx, units)?;
                    continue;
                }
                SlotAction::Preempt {
                    victim,
                    victim_priority,
                    task,
                    server,
                    also,
                } => {
                    ctx.log(
                        "preempt",
                        &PreemptLog {
                            task: task.id,
                            priority: task.priority,
                            victim,
                            victim_priority,
                            server: world.name(server),
                            also: also.clone(),
                        },
                    );
                    let (id, submitted_at) = (task.id, task.submitted_at);
                    let body = Body::Preempt { victim, task, also };
                    (id, submitted_at, server, body)
                }
            };
            self.core.release_held(ctx, id)?;
            let latency = self.core.slot_latency.remove(&id).unwrap_or(0);
            self.core
                .send_dispatch(ctx, id, submitted_at, server, body, latency)?;
        }
        self.core.release_all_held(ctx)
    }

    /// One time slot of an energy-aware placement behind ARQ (no slot
    /// stage): ARQ offers its queue in its order with its scopes (its
    /// pools; an appropriate server only while a task is in its own queue,
    /// ARQ §3.1), and the energy stage places each task among the servers
    /// in scope with a slot per thread free, by its own criterion and with
    /// its path (thesis §4.3, batched per time slot as §4.2.5). What finds
    /// no room waits for ARQ's next offer.
    pub(super) fn energy_admission_pass(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        let pools = self.core.pool_state();
        let core = &mut self.core;
        let mut starts: Vec<(Task, u32)> = Vec::new();
        let mut runs: Vec<Vec<(Task, u32)>> = Vec::new();
        let mut place = |task: &Task, _: SimTime, scope: Scope<'_>| {
            let allow: Option<Vec<bool>> = scope.bounded().then(|| {
                (0..core.pool.len() as u32)
                    .map(|i| scope.admits(i, core.pool.get(i)))
                    .collect()
            });
            if let Some(rest) = core.gangs.rest(task.id) {
                let units: Vec<Task> = std::iter::once(task.clone())
                    .chain(rest.iter().cloned())
                    .collect();
                let admits = |i: u32| allow.as_ref().is_none_or(|a| a[i as usize]);
                let mut placer = CorePlacer::new(&mut *core, scope.strict);
                let Some((servers, pool)) =
                    start_run_placed(&mut placer, &units, &admits, now, ctx.rng())
                else {
                    return Ok(core.refusal(task));
                };
                let on = servers.clone();
                runs.push(units.into_iter().zip(servers).collect());
                return Ok(Attempt::Placed { pool, on });
            }
            let cluster = &core.cluster;
            let room = |i: u32| {
                allow.as_ref().is_none_or(|a| a[i as usize])
                    && cluster.servers()[i as usize].fits(task, false)
                    && cluster.apart_allows(task, i)
            };
            let room: Vec<bool> = (0..cluster.servers().len() as u32).map(room).collect();
            let mut placer = CorePlacer::new(&mut *core, scope.strict);
            let Some(server) = placer.choose(task, &|i| room[i as usize], ctx.rng()) else {
                return Ok(core.refusal(task));
            };
            placer.started(task, server, &[], now, ctx.rng());
            let pool = placer.pool;
            starts.push((task.clone(), server));
            Ok(Attempt::Placed {
                pool,
                on: vec![server],
            })
        };
        self.admission.schedule(now, &pools, &mut place)?;
        self.core.tell(ctx)?;
        for run in runs {
            let units = run
                .into_iter()
                .map(|(t, i)| (t, self.core.cluster.servers()[i as usize].id))
                .collect();
            self.core.launch_run(ctx, units)?;
        }
        for (task, i) in starts {
            let server = self.core.cluster.servers()[i as usize].id;
            let (id, submitted_at) = (task.id, task.submitted_at);
            self.core
                .send_dispatch(ctx, id, submitted_at, server, Body::Dispatch(task), 0)?;
        }
        self.arm_slot_tick(ctx)
    }

    /// One time slot of an energy-aware placement (thesis Figures 3.3, 3.4,
    /// 4.1): reservations go to the switches, tasks to their servers.
    pub(super) fn energy_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let world = Arc::clone(&self.core.world);
        let Some(stage) = self.core.placement.energy() else {
            return Ok(());
        };
        if !self.energy_runs.is_empty() {
            let cluster = &self.core.cluster;
            let id_of = |i: u32| cluster.servers()[i as usize].id;
            let runs = energy_gang::place_runs(
                stage,
                &world.network,
                &mut self.energy_runs,
                &self.core.gangs,
                &id_of,
                ctx.rng(),
            );
            for run in runs {
                for f in &run.flows {
                    self.core.flow_notice(ctx, f, true)?;
                }
                let units = run
                    .units
                    .into_iter()
                    .map(|(t, i)| (t, self.core.cluster.servers()[i as usize].id))
                    .collect();
                self.core.launch_run(ctx, units)?;
            }
        }
        let Some(stage) = self.core.placement.energy() else {
            return Ok(());
        };
        let placed = stage.schedule(&world.network, ctx.rng());
        for p in placed {
            for f in &p.flows {
                self.core.flow_notice(ctx, f, true)?;
            }
            let (id, submitted_at) = (p.task.id, p.task.submitted_at);
            self.core
                .send_dispatch(ctx, id, submitted_at, p.server, Body::Dispatch(p.task), 0)?;
        }
        Ok(())
    }

    /// A task left its server under an energy-aware placement: free its
    /// share of the server and its flows.
    pub(super) fn energy_release(
        &mut self,
        task: TaskId,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let Some(stage) = self.core.placement.energy() else {
            return Ok(());
        };
        for f in stage.release(task, src) {
            self.core.flow_notice(ctx, &f, false)?;
        }
        Ok(())
    }

    /// A task without a catalog entry arrives under classification: a
    /// workload Paragon has never seen, profiled and classified like any
    /// other (§2.4), unless its kind is known (a job's or a stage's later
    /// task: it takes the kind's classification at once, as Paragon reuses
    /// what it has seen, §2) or it is short (§3.5: it goes on unprofiled,
    /// to a random server among those with the most free slots and the
    /// least caused interference). A task whose kind's first task is being
    /// profiled waits for that run rather than start another.
    pub(super) fn submit_kind(
        &mut self,
        task: Task,
        kind: Kind,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let core = &mut self.core;
        if let Some(profile) = core.kinds.get(&kind) {
            core.kind_stats.known += 1;
            core.profiles.insert(task.id, profile.clone());
            return self.admit(task, 0, ctx);
        }
        let Some(c) = &core.classification else {
            return self.admit(task, 0, ctx);
        };
        if task.service_ns < c.short_job {
            core.kind_stats.short += 1;
            return self.admit(task, 0, ctx);
        }
        if let Some(waiting) = core.kind_waiting.get_mut(&kind) {
            core.kind_stats.waited += 1;
            waiting.push((task, ctx.now()));
            return Ok(());
        }
        if kind.recurs() {
            core.kind_waiting.insert(kind, Vec::new());
        }
        core.kind_stats.profiled += 1;
        ctx.log(
            "profile_start",
            &serde_json::json!({ "task": task.id, "workload": core.world.kind_name(kind) }),
        );
        ctx.timer(c.overhead(&task), Msg::Profiled(task))
    }

    /// The profiling run of a kind's first task (or of a task that is a
    /// kind of its own) is done (§2.4): classify the kind, admit the task
    /// and those of its kind that waited for it.
    pub(super) fn profiled_kind(
        &mut self,
        task: Task,
        kind: Kind,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let waiting = self.core.kind_waiting.remove(&kind).unwrap_or_default();
        let Some(c) = self.core.classification.as_mut() else {
            return self.admit(task, 0, ctx);
        };
        let overhead = c.overhead(&task);
        if let Some(measurement) = c.lab.profile_kind(kind, ctx.rng()) {
            let profile = c.classifier.classify(&measurement);
            c.lab.grade_kind(kind, &profile);
            ctx.log(
                "classify_kind",
                &ClassifyKindLog {
                    task: task.id,
                    workload: self.core.world.kind_name(kind),
                    best_class: profile.best_class(),
                    demand: admission::arq::app_demand(&profile.tolerated, &profile.caused),
                    waiting: waiting.len(),
                },
            );
            for (t, _) in &waiting {
                self.core.profiles.insert(t.id, profile.clone());
            }
            if kind.recurs() {
                self.core.kinds.insert(kind, profile.clone());
            }
            self.core.profiles.insert(task.id, profile);
        }
        self.admit(task, overhead, ctx)?;
        let now = ctx.now();
        for (t, arrived) in waiting {
            self.admit(t, now - arrived, ctx)?;
        }
        Ok(())
    }

    /// Profiling is done (§2.4): classify the application and admit it.
    pub(super) fn profiled(
        &mut self,
        task: Task,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if let Some(kind) = task.kind()
            && (self.core.kind_waiting.contains_key(&kind) || !kind.recurs())
        {
            return self.profiled_kind(task, kind, ctx);
        }
        let Some(c) = self.core.classification.as_mut() else {
            return self.admit(task, 0, ctx);
        };
        let overhead = c.overhead(&task);
        let Some(app) = task.app else {
            return self.admit(task, overhead, ctx);
        };
        let Some(measurement) = c.lab.profile(app, ctx.rng()) else {
            return self.admit(task, overhead, ctx);
        };
        let profile = c.classifier.classify(&measurement);
        c.lab.grade(app, &profile);
        ctx.log(
            "classify",
            &ClassifyLog {
                task: task.id,
                app,
                best_class: profile.best_class(),
                demand: admission::arq::app_demand(&profile.tolerated, &profile.caused),
            },
        );
        self.core.profiles.insert(task.id, profile);
        self.admit(task, overhead, ctx)
    }

    /// Hands a ready task (with its profile, if it was classified) to the
    /// admission stage, then places what it can.
    pub(super) fn admit(
        &mut self,
        task: Task,
        overhead_ns: u64,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if let Some(stage) = self.slots.as_mut()
            && !self.slot_admission
        {
            match self.core.gangs.take_rest(task.id) {
                Some(rest) => stage.enqueue_gang(task, rest),
                None => stage.enqueue(task),
            }
            return self.arm_slot_tick(ctx);
        }
        let now = ctx.now();
        let pools = self.core.pool_state();
        let profile = self.core.profiles.get(&task.id);
        let id = task.id;
        self.admission
            .enqueue(task, now, profile, overhead_ns, now, &pools);
        self.drain(ctx)?;
        if !self.admission.is_empty() && !self.core.placed.contains_key(&id) {
            ctx.log(
                "task_queue",
                &QueueLog {
                    task: id,
                    queue_len: self.admission.len(),
                },
            );
        }
        Ok(())
    }

    /// Lets the admission stage place waiting tasks until none more fits,
    /// then arms a tick for its next switching time.
    pub(super) fn drain(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self
            .core
            .placement
            .annealing_ref()
            .is_some_and(|a| a.blocked(ctx.now()))
        {
            // a distributed run waits for room: single tasks wait behind
            // it (it is tried again at every release)
            return Ok(());
        }
        if self.slots.is_some() || self.energy_admission {
            // a slot stage, and an energy-aware placement, place at the
            // start of their time slots only
            return self.arm_slot_tick(ctx);
        }
        let now = ctx.now();
        let pools = self.core.pool_state();
        let core = &mut self.core;
        let mut place = |task: &Task, arrived: SimTime, scope: Scope<'_>| {
            core.try_place(task, arrived, scope, ctx)
        };
        self.admission.schedule(now, &pools, &mut place)?;
        if let Some(at) = self.admission.next_wakeup() {
            // A switching time already past moves its task at the next pass.
            let at = at.max(now + 1);
            if self.core.tick.is_none_or(|t| t > at || t <= now) {
                self.core.tick = Some(at);
                ctx.timer(at - now, Msg::AdmissionTick)?;
            }
        }
        Ok(())
    }
}
