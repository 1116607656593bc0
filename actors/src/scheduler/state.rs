//! [`Core`]: what the scheduler keeps besides the admission stage (the
//! cluster view, the placement stage, placed tasks, flows, counters), and
//! the operations every stage places, dispatches and releases through.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use dcemu_topology::{Bandwidth, Route, SimTime};

use crate::kernel::{ActorId, Ctx, ModelError};
use crate::net::Msg;
use crate::net::{Body, Inbox, Nic};
use crate::profiling::{Lab, Profile};
use crate::server::QOS_PERF_NORM;
use crate::task::{Kind, Task, TaskId};
use crate::world::World;

use super::admission::arq::server_quality;
use super::admission::{Attempt, Machine, PoolState, Scope};
use super::classification::Classifier;
use super::energy::Flow;
use super::placement::PathOption;

use super::logs::{DispatchLog, FlowLog, FlowRefusedLog};
use super::{Choice, ClusterView, FlowTable, Placement, Request};
use super::{gang, placement};

/// Times one application is reclassified at most (phase detection, §3.4).
pub const MAX_RECLASSIFICATIONS: u32 = 3;

/// Most co-runners moved away to isolate one degraded application (§3.4).
pub const MAX_ISOLATION_MOVES: usize = 4;

/// A change of reservations decided inside a pass of the slot stage, told
/// to the switches (and logged) once the pass is over, before its
/// dispatches go out.
pub(super) enum Notice {
    Flow(Flow, bool),
    Refused {
        task: TaskId,
        server: ActorId,
        bps: u64,
    },
}

/// Everything but the admission stage, so that admission can call back
/// into placement while it holds its queues.
pub(super) struct Core {
    pub(super) world: Arc<World>,
    pub(super) nic: Nic,
    pub(super) inbox: Inbox,
    pub(super) placement: Box<dyn Placement>,
    pub(super) cluster: ClusterView,
    /// ARQ pool of each server (all 0 without ARQ).
    pub(super) pool: ServerPools,
    pub(super) pools: usize,
    /// Per pool, servers running something and servers with a free slot,
    /// kept up to date by `refresh_pool`, with what each server counts as.
    pub(super) pool_counts: PoolState,
    pub(super) counted: Vec<(bool, bool)>,
    pub(super) classification: Option<Classification>,
    pub(super) profiles: BTreeMap<TaskId, Profile>,
    /// Tasks without a catalog entry, by kind ([`Kind`]: what a scheduler
    /// tells from the task itself): the classification of each kind
    /// profiled so far, and the tasks that wait for their kind's profiling
    /// run to end, with their arrival.
    pub(super) kinds: BTreeMap<Kind, Profile>,
    pub(super) kind_waiting: BTreeMap<Kind, Vec<(Task, SimTime)>>,
    pub(super) kind_stats: KindStats,
    pub(super) placed: PlacedTasks,
    pub(super) flows: FlowTable,
    /// Reservations decided in the current slot pass ([`Notice`]).
    pub(super) notices: Vec<Notice>,
    pub(super) resubmit_delay: u64,
    pub(super) reclassify_below: f64,
    pub(super) migration_time: u64,
    pub(super) dispatched: u64,
    pub(super) killed: u64,
    pub(super) profiled: u64,
    pub(super) reclassifications: u64,
    pub(super) migrations: u64,
    pub(super) migrations_declined: u64,
    pub(super) isolations: u64,
    pub(super) short_jobs: u64,
    /// Distributed runs under a placement other than `annealing`.
    pub(super) gangs: gang::Gangs,
    pub(super) queue_wait_s: Vec<f64>,
    /// Catalog applications' first wait as a share of their ideal time
    /// (Paragon Fig. 12's queueing bar); see [`queue_share`].
    pub(super) queue_wait_share: Vec<f64>,
    pub(super) decision_us: Vec<f64>,
    /// The `AdmissionTick` armed, if any.
    pub(super) tick: Option<SimTime>,
    /// Bumped whenever what placement sees changes (slots, memory,
    /// interference state, reports), so that an attempt that found no room
    /// is not repeated until something changed.
    pub(super) version: u64,
    /// Tasks whose last attempt found no room: the version and scope then.
    pub(super) no_room: BTreeMap<TaskId, (u64, bool, Vec<usize>)>,
    /// Share of the QoS speed an ARQ-appropriate server must offer on its
    /// configuration (`scheduler.arq_speed`).
    pub(super) strict_speed: f64,
    /// Dispatches and preemptions go to each server in the order they were
    /// sent ([`Nic::send_in_order`]): under a slot stage a `Preempt` must
    /// not overtake its victim's `Dispatch` (a sleeping switch on one ECMP
    /// path would let it), or the server could not evict the victim and
    /// would run one task more than its slots.
    pub(super) in_order: bool,
    /// Whether the placement orders servers to sleep and wake, or moves
    /// running tasks (an external program under protocol v3): its
    /// dispatches then go in order too, so that none overtakes an order to
    /// sleep decided before it, and no order to migrate a task overtakes
    /// the task's dispatch.
    pub(super) sends_orders: bool,
    /// When the latest decision that took virtual time is done
    /// (`Placement::decision_latency`): dispatches leave no earlier, in the
    /// order they were decided.
    pub(super) busy_until: SimTime,
    /// The admission stage backfills (`easy-backfill`): it reads the
    /// machine ([`Core::machine`]) at every pass.
    pub(super) backfills: bool,
    /// Virtual time the decision that started each task of a slot pass
    /// took, until the pass sends its dispatch or preemption (only tasks
    /// whose decision took some: an external program's with a latency).
    pub(super) slot_latency: BTreeMap<TaskId, u64>,
    /// Power orders and migrations decided inside a slot pass, until the
    /// pass sends them (`outbox.rs`).
    pub(super) held: std::collections::VecDeque<HeldOrders>,
    /// Tasks handed back for a migration and not yet resumed (their
    /// `migration_time`), for a placement that moves running tasks.
    pub(super) moving: std::collections::BTreeSet<TaskId>,
}

/// The power orders and migrations of one decision a slot pass took,
/// until the pass sends them (`outbox.rs`).
pub(super) struct HeldOrders {
    /// The task the decision was about, started by it or told to wait.
    pub(super) task: TaskId,
    /// The virtual time the decision took.
    pub(super) latency: u64,
    pub(super) power: Vec<crate::external::PowerOrder>,
    /// Moves already booked: task and the server it leaves.
    pub(super) moves: Vec<(TaskId, ActorId)>,
}

/// Paragon Fig. 12's queueing overhead: how long a catalog application
/// waited in the scheduler before its first start, as a share of its ideal
/// time (`total_ns`, its time alone on its best configuration), the unit
/// Fig. 12 normalises every bar to. `None` for other tasks and for later
/// dispatches of a migrated or evicted application.
pub(super) fn queue_share(task: &Task, queued_ns: u64) -> Option<f64> {
    (task.app.is_some() && task.first_start.is_none() && task.total_ns > 0)
        .then(|| queued_ns as f64 / task.total_ns as f64)
}

/// Paragon's classification engine and the lab that measures for it.
pub(super) struct Classification {
    pub(super) lab: Lab,
    pub(super) classifier: Classifier,
    pub(super) profile_time: u64,
    pub(super) profile_share: Option<f64>,
    pub(super) short_job: u64,
}

impl Classification {
    /// How long `task`'s profiling and classification take (§2.4): the
    /// configured share of its declared ideal time (Fig. 12), else
    /// `profile_time`.
    pub(super) fn overhead(&self, task: &Task) -> u64 {
        match self.profile_share {
            Some(share) => (share * task.service_ns as f64).round() as u64,
            None => self.profile_time,
        }
    }
}

/// What happened to tasks without a catalog entry under classification.
#[derive(Default)]
pub(super) struct KindStats {
    /// Tasks that went through the profiling runs: the first of a job's or
    /// a stage's (not short), and every task that is a kind of its own.
    pub(super) profiled: u64,
    /// Tasks of a kind already classified: they took its profile at once.
    pub(super) known: u64,
    /// Tasks that waited for the profiling run of their kind's first task.
    pub(super) waited: u64,
    /// Short tasks of a kind not classified yet, placed unprofiled (§3.5).
    pub(super) short: u64,
}

/// A task on a server, as the scheduler tracks it.
#[derive(Clone, Debug)]
pub(super) struct Placed {
    pub(super) server: u32,
    pub(super) cores: u32,
    pub(super) memory_mb: u64,
    pub(super) since: SimTime,
    /// When it should end by: `since` plus its requested time, else its
    /// work (what EASY backfilling reserves by).
    pub(super) ends_by: SimTime,
    pub(super) pool: usize,
    /// Unmet tolerance (score points) the placement saw on the server: the
    /// scheduler expects `expected_rate(speed, violation)` there.
    pub(super) violation: f64,
    /// Slots reserved on the server a migration goes to, and its violation.
    pub(super) migrating_to: Option<(u32, f64)>,
    pub(super) reclassifying: bool,
    pub(super) reclassified: u32,
    /// The latest measured rate and work left (from `Rates`).
    pub(super) rate: f64,
    pub(super) left_ns: u64,
    /// Whether `rate` and `left_ns` come from a `Rates` report (else they
    /// are the placement's assumption: alone, the declared work).
    pub(super) measured: bool,
}

impl Core {
    /// The attempt of a distributed run ended by its unit `id` coming back
    /// unfinished (`run_ledger.rs`, under `annealing` and `gang.rs` alike):
    /// stops the run's other units (`Body::DistStop`, each `(server, task,
    /// attempt)` of `stop`) and, once the run restarts with `requeued`
    /// units ready at `at`, counts and logs the restart. Queueing it again
    /// is the caller's.
    pub(super) fn dist_attempt_ended(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        id: TaskId,
        stop: Vec<(ActorId, TaskId, u32)>,
        restart: Option<(usize, SimTime)>,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        for (server, task, attempt) in stop {
            ctx.log(
                "dist_stop",
                &serde_json::json!({ "task": task, "server": world.name(server), "attempt": attempt }),
            );
            self.nic
                .send(&world, ctx, server, Body::DistStop { task, attempt })?;
        }
        if let Some((requeued, at)) = restart {
            self.killed += requeued as u64;
            ctx.log(
                "dist_restart",
                &serde_json::json!({ "task": id, "requeued": requeued, "ready_at": at }),
            );
        }
        Ok(())
    }

    /// A distributed run a slot stage started whole (`preemption/gang.rs`):
    /// its attempt begins (`gang.rs`), and each unit goes to its server
    /// with unit 0's server as the run's coordinator.
    pub(super) fn launch_run(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        units: Vec<(Task, ActorId)>,
    ) -> Result<(), ModelError> {
        let Some((first, coordinator)) = units.first().map(|(t, s)| (t.clone(), *s)) else {
            return Ok(());
        };
        let run = first.dist.map_or(first.id, |d| d.run);
        let attempt = self.gangs.attempt(run);
        let placed = units.iter().map(|(t, s)| (t.id, *s)).collect();
        self.gangs.started(first.id, run, placed);
        for (mut unit, server) in units {
            if let Some(d) = unit.dist.as_mut() {
                d.coordinator = Some(coordinator);
                d.attempt = attempt;
            }
            let (id, submitted_at) = (unit.id, unit.submitted_at);
            self.send_dispatch(ctx, id, submitted_at, server, Body::Dispatch(unit), 0)?;
        }
        Ok(())
    }

    /// Counts a dispatch, records how long the task waited for it (and, for
    /// a catalog application's first start, that wait's `share` of its
    /// ideal time), and logs it (`task_dispatch`, docs/events.md): the one
    /// record every path that sends a task to a server keeps.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn note_dispatch(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        world: &World,
        task: TaskId,
        server: ActorId,
        queued_ns: SimTime,
        violation: Option<f64>,
        share: Option<f64>,
    ) {
        self.dispatched += 1;
        self.queue_wait_s.push(queued_ns as f64 / 1e9);
        self.queue_wait_share.extend(share);
        ctx.log(
            "task_dispatch",
            &DispatchLog {
                task,
                server: world.name(server),
                queued_ns,
                violation,
            },
        );
    }

    /// Sends a dispatch or preemption decided now whose decision took
    /// `latency` of virtual time: it leaves when the decision is done, after
    /// every earlier decision's (`busy_until`), through a `Msg::Deferred`
    /// timer; at once when nothing takes time.
    pub(super) fn send_dispatch(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        id: TaskId,
        submitted_at: SimTime,
        server: ActorId,
        body: Body,
        latency: u64,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        let leaves = self.leaves(now, latency);
        let queued_ns = leaves.saturating_sub(submitted_at);
        let share = match &body {
            Body::Dispatch(task) | Body::Preempt { task, .. } => queue_share(task, queued_ns),
            _ => None,
        };
        let world = Arc::clone(&self.world);
        self.note_dispatch(ctx, &world, id, server, queued_ns, None, share);
        if leaves > now {
            ctx.timer(leaves - now, Msg::Deferred { server, body })?;
            return Ok(());
        }
        self.send(ctx, server, body)
    }

    /// Shows a placement that moves running tasks every task placed, as
    /// the scheduler's view has it now (moves booked included).
    pub(super) fn show_running(&mut self) {
        if self.placement.wants_running() {
            let running = self.running_tasks();
            self.placement.set_running(running);
        }
    }

    /// Every task placed and not heard the end of, by id, for a placement
    /// that moves running tasks.
    pub(super) fn running_tasks(&self) -> Vec<placement::PlacedTask> {
        self.placed
            .iter()
            .map(|(&task, p)| placement::PlacedTask {
                task,
                server: p.server,
                since: p.since,
                cores: p.cores,
                memory_mb: p.memory_mb,
                migrating: p.migrating_to.is_some() || self.moving.contains(&task),
            })
            .collect()
    }

    /// When a decision taken at `now` that took `latency` is done: decisions
    /// are done in order, one after the other.
    pub(super) fn leaves(&mut self, now: SimTime, latency: u64) -> SimTime {
        if latency > 0 || self.busy_until > now {
            self.busy_until = self.busy_until.max(now).saturating_add(latency);
            self.busy_until
        } else {
            now
        }
    }

    /// Sends `body` to `server`, in the order sent where a `Preempt` must
    /// not overtake its victim's `Dispatch` (`in_order`).
    pub(super) fn send(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        server: ActorId,
        body: Body,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        if self.in_order {
            self.nic.send_in_order(&world, ctx, server, body)
        } else {
            self.nic.send(&world, ctx, server, body)
        }
    }

    /// Servers per ARQ pool: running something, and with a free slot.
    pub(super) fn pool_state(&self) -> PoolState {
        PoolState {
            busy: self.pool_counts.busy.clone(),
            free: self.pool_counts.free.clone(),
            machine: self.backfills.then(|| self.machine()),
        }
    }

    /// The machine as EASY backfilling reads it: free slots per server,
    /// when each placed task should end by, the queued runs' parts.
    pub(super) fn machine(&self) -> Machine {
        let servers = self.cluster.servers();
        Machine {
            free: servers.iter().map(|s| s.free).collect(),
            shape: servers.iter().map(|s| (s.cores, s.slots)).collect(),
            running: self
                .placed
                .values()
                .map(|p| {
                    let k = servers[p.server as usize].slots_for(p.cores);
                    (p.ends_by, p.server, k)
                })
                .collect(),
            parts: self.gangs.queued_parts(),
        }
    }

    /// Whether server `i` runs something, and whether it has a free slot.
    pub(super) fn occupancy(&self, i: u32) -> (bool, bool) {
        let s = &self.cluster.servers()[i as usize];
        (s.free < s.slots, s.free > 0)
    }

    /// After a change to server `i` (slots, interference state): its ARQ
    /// pool from its resource quality, and the per-pool counts.
    pub(super) fn refresh_pool(&mut self, i: u32) {
        self.version += 1;
        if self.pools <= 1 {
            return;
        }
        let (old_pool, (old_busy, old_free)) = (self.pool.get(i), self.counted[i as usize]);
        let counts = &mut self.pool_counts;
        counts.busy[old_pool] -= u32::from(old_busy);
        counts.free[old_pool] -= u32::from(old_free);
        let state = self.cluster.interference(i);
        let q = server_quality(&state.tolerated(), &state.caused());
        let pool = band(q, self.pools);
        let (busy, free) = self.occupancy(i);
        self.pool.set(i, pool);
        self.counted[i as usize] = (busy, free);
        self.pool_counts.busy[pool] += u32::from(busy);
        self.pool_counts.free[pool] += u32::from(free);
    }

    /// Why `task` (with its run's other units, if it is a run's unit 0)
    /// was not placed: [`Attempt::TooLarge`] if no server, or too few for
    /// a run's distinct hosts, could hold it even with none of the
    /// scheduler's tasks on them; else [`Attempt::NoRoom`].
    pub(super) fn refusal(&self, task: &Task) -> Attempt {
        let rest = self.gangs.rest(task.id).unwrap_or_default();
        let widest = rest.iter().chain([task]).map(|t| t.cores).max();
        match self
            .cluster
            .could_hold(widest.unwrap_or(task.cores), 1 + rest.len())
        {
            true => Attempt::NoRoom,
            false => Attempt::TooLarge,
        }
    }

    /// One placement attempt for `task` on servers of the `allowed` pools.
    pub(super) fn try_place(
        &mut self,
        task: &Task,
        arrived: SimTime,
        scope: Scope<'_>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<Attempt, ModelError> {
        let attempt = (
            self.version,
            scope.strict,
            scope.pools.map(<[usize]>::to_vec).unwrap_or_default(),
        );
        if self.no_room.get(&task.id) == Some(&attempt) {
            return Ok(self.refusal(task));
        }
        if let Some(rest) = self.gangs.rest(task.id) {
            let rest = rest.to_vec();
            return self.try_place_run(task, rest, arrived, scope, attempt, ctx);
        }
        self.show_running();
        self.offer_paths(task);
        let started = Instant::now();
        let pool = &self.pool;
        let apart = self.cluster.apart_hosts(task);
        let in_scope = |i: u32| scope.admits(i, pool.get(i)) && !apart.contains(&i);
        let bounded = scope.bounded() || !apart.is_empty();
        let req = Request {
            task,
            profile: self.profiles.get(&task.id),
            allowed: bounded.then_some(&in_scope as &dyn Fn(u32) -> bool),
            exclude: None,
        };
        let choice = self.placement.place(&req, &self.cluster, ctx.rng());
        self.cluster.shown(&|i| req.may_use(i));
        self.decision_us.push(started.elapsed().as_secs_f64() * 1e6);
        for (kind, fields) in self.placement.take_logs() {
            ctx.log(kind, &fields);
        }
        let mut latency = self.placement.decision_latency();
        let orders = self.placement.take_power();
        let moves = self.placement.take_migrations();
        let path = self.placement.take_path();
        let Some(choice) = choice.filter(|c| !scope.strict || self.appropriate(&req, c)) else {
            if scope.servers.is_none() {
                self.no_room.insert(task.id, attempt);
            }
            self.send_orders(ctx, orders, moves, latency, None)?;
            return Ok(self.refusal(task));
        };
        if self.send_orders(ctx, orders, moves, latency, None)? {
            latency = 0;
        }
        self.no_room.remove(&task.id);
        let at = choice.server;
        let world = Arc::clone(&self.world);
        let server = self.cluster.servers()[choice.server as usize].id;
        let flow = match task.flow_bps {
            0 => None,
            bps => {
                let bandwidth = Bandwidth::from_bps(bps);
                let reserved = match path {
                    Some(route) => self
                        .flows
                        .reserve_on(&world.network, task.id, route, bandwidth),
                    None => self
                        .flows
                        .reserve(&world.network, task.id, server, bandwidth),
                };
                match reserved {
                    Some(route) => Some((route, bandwidth)),
                    None => {
                        ctx.log(
                            "flow_refused",
                            &FlowRefusedLog {
                                task: task.id,
                                server: world.name(server),
                                bps,
                            },
                        );
                        return Ok(Attempt::NoRoom);
                    }
                }
            }
        };
        let pool = self.pool.get(choice.server);
        self.occupy(task, choice, ctx.now());
        if let Some((route, bandwidth)) = flow {
            ctx.log(
                "flow_reserve",
                &FlowLog {
                    task: task.id,
                    path: self.path_names(&route),
                    bps: bandwidth.bps(),
                },
            );
            self.notify_switches(ctx, task.id, &route, bandwidth, true)?;
        }
        let now = ctx.now();
        let leaves = self.leaves(now, latency);
        let violation = self
            .profiles
            .contains_key(&task.id)
            .then_some(choice.violation);
        let share = queue_share(task, leaves - arrived);
        self.note_dispatch(
            ctx,
            &world,
            task.id,
            server,
            leaves - arrived,
            violation,
            share,
        );
        let body = Body::Dispatch(task.clone());
        if leaves > now {
            ctx.timer(leaves - now, Msg::Deferred { server, body })?;
        } else if self.sends_orders {
            self.send(ctx, server, body)?;
        } else {
            self.nic.send(&world, ctx, server, body)?;
        }
        Ok(Attempt::Placed { pool, on: vec![at] })
    }

    /// One placement attempt for a distributed run queued as its unit 0
    /// `first` (gang.rs): the placement stage places each unit in turn on a
    /// server of the scope without one of the run's units (distinct hosts,
    /// ASPLOS'16 Figure 5), booking it as it goes; if one finds no server,
    /// the bookings are undone and the run waits whole (gang start). Once
    /// all are placed, they go out with unit 0's server as coordinator.
    pub(super) fn try_place_run(
        &mut self,
        first: &Task,
        rest: Vec<Task>,
        arrived: SimTime,
        scope: Scope<'_>,
        attempt: (u64, bool, Vec<usize>),
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<Attempt, ModelError> {
        let started = Instant::now();
        let now = ctx.now();
        let units: Vec<Task> = std::iter::once(first.clone()).chain(rest).collect();
        let mut booked: Vec<(usize, Choice)> = Vec::with_capacity(units.len());
        for (k, unit) in units.iter().enumerate() {
            let pool = &self.pool;
            let used: Vec<u32> = booked.iter().map(|(_, c)| c.server).collect();
            let admits = |i: u32| scope.admits(i, pool.get(i)) && !used.contains(&i);
            let req = Request {
                task: unit,
                profile: None,
                allowed: Some(&admits),
                exclude: None,
            };
            let choice = self
                .placement
                .place(&req, &self.cluster, ctx.rng())
                .filter(|c| !scope.strict || self.appropriate(&req, c));
            self.cluster.shown(&|i| req.may_use(i));
            for (kind, fields) in self.placement.take_logs() {
                ctx.log(kind, &fields);
            }
            let Some(choice) = choice else {
                for (j, c) in booked {
                    let u = &units[j];
                    self.placed.remove(&u.id);
                    self.vacate(u.id, c.server, u.cores, u.memory_mb);
                }
                self.decision_us.push(started.elapsed().as_secs_f64() * 1e6);
                if scope.servers.is_none() {
                    self.no_room.insert(first.id, attempt);
                }
                return Ok(self.refusal(first));
            };
            self.occupy(unit, choice, now);
            booked.push((k, choice));
        }
        self.decision_us.push(started.elapsed().as_secs_f64() * 1e6);
        self.no_room.remove(&first.id);
        let world = Arc::clone(&self.world);
        let servers: Vec<ActorId> = booked
            .iter()
            .map(|(_, c)| self.cluster.servers()[c.server as usize].id)
            .collect();
        let run = first.dist.map_or(first.id, |d| d.run);
        let run_attempt = self.gangs.attempt(run);
        let pool = self.pool.get(booked[0].1.server);
        let on: Vec<u32> = booked.iter().map(|(_, c)| c.server).collect();
        self.gangs.started(
            first.id,
            run,
            units
                .iter()
                .map(|u| u.id)
                .zip(servers.iter().copied())
                .collect(),
        );
        for (mut unit, server) in units.into_iter().zip(servers.iter().copied()) {
            if let Some(d) = unit.dist.as_mut() {
                d.coordinator = Some(servers[0]);
                d.attempt = run_attempt;
            }
            let share = queue_share(&unit, now - arrived);
            self.note_dispatch(ctx, &world, unit.id, server, now - arrived, None, share);
            self.nic.send(&world, ctx, server, Body::Dispatch(unit))?;
        }
        Ok(Attempt::Placed { pool, on })
    }
    /// [`Core::appropriate`] for `task` on server `i`, with the violation
    /// its profile (if any) would see there: for a placement that does not
    /// weigh interference itself (the energy-aware ones).
    pub(super) fn appropriate_on(&self, task: &Task, i: u32) -> bool {
        appropriate_on(&self.cluster, &self.profiles, self.strict_speed, task, i)
    }

    /// ARQ's appropriate server (ARQ §3.1): no interference constraint
    /// violated and, on its configuration, at least the QoS share of the
    /// speed the task's profile predicts (`scheduler.arq_speed`).
    pub(super) fn appropriate(&self, req: &Request<'_>, c: &Choice) -> bool {
        let class = self.cluster.servers()[c.server as usize].class;
        let speed = req
            .profile
            .map_or(1.0, |p| p.speed.get(class).copied().unwrap_or(0.0));
        c.violation <= 0.0 && speed >= QOS_PERF_NORM * self.strict_speed
    }

    /// Books `task` onto server `i`: slots, memory, interference state.
    pub(super) fn occupy(&mut self, task: &Task, choice: Choice, now: SimTime) {
        let i = choice.server;
        self.cluster.take(i, task.cores, task.memory_mb);
        self.cluster.hold_apart(task, i);
        if let Some(p) = self.profiles.get(&task.id) {
            self.cluster
                .interference_mut(i)
                .add(task.id, &p.tolerated, &p.caused);
        }
        let pool = self.pool.get(i);
        self.refresh_pool(i);
        self.placed.insert(
            task.id,
            Placed {
                server: i,
                cores: task.cores,
                memory_mb: task.memory_mb,
                since: now,
                ends_by: now.saturating_add(task.expected_ns()),
                pool,
                violation: choice.violation,
                migrating_to: None,
                reclassifying: false,
                reclassified: 0,
                rate: 1.0,
                left_ns: task.service_ns,
                measured: false,
            },
        );
    }

    /// Frees what `task` held on server `i` (and any migration target it
    /// had reserved), recording the busy period for ARQ.
    pub(super) fn vacate(
        &mut self,
        task: TaskId,
        i: u32,
        cores: u32,
        memory_mb: u64,
    ) -> Option<()> {
        let server = self.cluster.servers()[i as usize].id;
        self.cluster.release(server, cores, memory_mb)?;
        self.cluster.free_apart(task, i);
        self.cluster.interference_mut(i).remove(task);
        self.refresh_pool(i);
        Some(())
    }

    /// Under a slot stage with a placement: `task` left server `src`, so
    /// what it held there is free again in the view. Nothing happens if it
    /// is not held there (a preempted victim's slot went to its evictor).
    /// Returns its ARQ pool and how long it held the server, as `leave`.
    pub(super) fn forget(
        &mut self,
        task: TaskId,
        src: ActorId,
        now: SimTime,
    ) -> Option<(usize, f64)> {
        let i = self.cluster.index_of(src)?;
        if self.placed.get(&task).is_none_or(|p| p.server != i) {
            return None;
        }
        let p = self.placed.remove(&task)?;
        self.vacate(task, i, p.cores, p.memory_mb);
        if let Some((target, _)) = p.migrating_to {
            self.vacate(task, target, p.cores, p.memory_mb);
        }
        Some((p.pool, (now - p.since) as f64 / 1e9))
    }

    /// `task` left server `src` (finished or killed): return its slots.
    pub(super) fn leave(
        &mut self,
        task: TaskId,
        src: ActorId,
        slots: u32,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(usize, f64), ModelError> {
        let world = Arc::clone(&self.world);
        let bad = || {
            ModelError::Invariant(format!(
                "scheduler got a release of task {task} from {}, which it never gave that task",
                world.name(src)
            ))
        };
        let i = self.cluster.index_of(src).ok_or_else(bad)?;
        let placed = self.placed.remove(&task);
        let memory = placed.as_ref().map_or(0, |p| p.memory_mb);
        match &placed {
            Some(p) if p.server == i => {}
            _ => return Err(bad()),
        }
        self.vacate(task, i, slots, memory).ok_or_else(bad)?;
        let p = placed.ok_or_else(bad)?;
        if let Some((target, _)) = p.migrating_to {
            self.vacate(task, target, p.cores, p.memory_mb)
                .ok_or_else(bad)?;
        }
        Ok((p.pool, (ctx.now() - p.since) as f64 / 1e9))
    }

    /// Under a slot stage: reserves the flow of `task`, which starts on
    /// server `i`, on the first path with its bandwidth ([`FlowTable`]);
    /// the switches hear of it when the pass is over ([`Core::tell`]).
    /// The stage only offered servers with such a path, so a refusal here
    /// is logged and counted but cannot happen.
    pub(super) fn reserve_flow_later(&mut self, task: &Task, i: u32, path: Option<Route>) {
        if task.flow_bps == 0 {
            return;
        }
        let server = self.cluster.servers()[i as usize].id;
        let bandwidth = Bandwidth::from_bps(task.flow_bps);
        let net = &self.world.network;
        let reserved = match path {
            Some(route) => self.flows.reserve_on(net, task.id, route, bandwidth),
            None => self.flows.reserve(net, task.id, server, bandwidth),
        };
        let notice = match reserved {
            Some(route) => Notice::Flow(
                Flow {
                    task: task.id,
                    route,
                    bandwidth,
                },
                true,
            ),
            None => Notice::Refused {
                task: task.id,
                server,
                bps: task.flow_bps,
            },
        };
        self.notices.push(notice);
    }

    /// Offers a placement that chooses paths every path `task`'s flow could
    /// take to each server with a free slot, with the bandwidth free on
    /// it (thesis §4.2.2), before it places the task.
    pub(super) fn offer_paths(&mut self, task: &Task) {
        if task.flow_bps == 0 || !self.placement.chooses_paths() {
            return;
        }
        let net = &self.world.network;
        let paths = self
            .cluster
            .with_free()
            .iter()
            .map(|&i| {
                let server = self.cluster.servers()[i as usize].id;
                let options = self
                    .flows
                    .options(net, server)
                    .into_iter()
                    .map(|(route, free_bps)| {
                        let (_, switches) = route.nodes().split_last().unwrap_or((&0, &[]));
                        PathOption {
                            switches: switches
                                .iter()
                                .map(|&n| self.world.name(ActorId(n)).to_string())
                                .collect(),
                            route,
                            free_bps,
                        }
                    })
                    .collect();
                (i, options)
            })
            .collect();
        self.placement.set_paths(paths);
    }

    /// Under a slot stage: releases the flow of a preempted `task` now (its
    /// evictor may need the bandwidth); the switches hear of it when the
    /// pass is over.
    pub(super) fn release_flow_later(&mut self, task: TaskId) {
        if let Some((route, bandwidth)) = self.flows.release(&self.world.network, task) {
            self.notices.push(Notice::Flow(
                Flow {
                    task,
                    route,
                    bandwidth,
                },
                false,
            ));
        }
    }

    /// Logs the reservations a pass decided and tells their switches.
    pub(super) fn tell(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        for notice in std::mem::take(&mut self.notices) {
            match notice {
                Notice::Flow(f, reserve) => self.flow_notice(ctx, &f, reserve)?,
                Notice::Refused { task, server, bps } => {
                    let world = Arc::clone(&self.world);
                    ctx.log(
                        "flow_refused",
                        &FlowRefusedLog {
                            task,
                            server: world.name(server),
                            bps,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    pub(super) fn release_flow(
        &mut self,
        task: TaskId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        if let Some((route, bandwidth)) = self.flows.release(&world.network, task) {
            ctx.log(
                "flow_release",
                &FlowLog {
                    task,
                    path: self.path_names(&route),
                    bps: bandwidth.bps(),
                },
            );
            self.notify_switches(ctx, task, &route, bandwidth, false)?;
        }
        Ok(())
    }

    /// The cores and memory a placed task holds, as a task for placement.
    pub(super) fn placed_task(&self, id: TaskId) -> Option<Task> {
        let p = self.placed.get(&id)?;
        Some(Task {
            memory_mb: p.memory_mb,
            cores: p.cores,
            ..Task::new(id, ActorId(0), 0, p.left_ns)
        })
    }

    /// The migrating task left `src` with its progress: free that server and
    /// move the task to the reserved one after the migration time.
    pub(super) fn migrating(
        &mut self,
        task: Task,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        let bad = || {
            ModelError::Invariant(format!(
                "scheduler got migrating task {} from {}, which it was not moving",
                task.id,
                world.name(src)
            ))
        };
        let i = self.cluster.index_of(src).ok_or_else(bad)?;
        let mut p = self.placed.remove(&task.id).ok_or_else(bad)?;
        let (target, violation) = p.migrating_to.take().ok_or_else(bad)?;
        if p.server != i {
            return Err(bad());
        }
        self.vacate(task.id, i, p.cores, p.memory_mb)
            .ok_or_else(bad)?;
        p.server = target;
        p.violation = violation;
        p.since = ctx.now();
        p.pool = self.pool.get(target);
        self.placed.insert(task.id, p);
        let server = self.cluster.servers()[target as usize].id;
        if self.sends_orders {
            self.moving.insert(task.id);
        }
        ctx.timer(self.migration_time, Msg::Migrated { task, server })
    }

    pub(super) fn path_names(&self, route: &Route) -> Vec<String> {
        route
            .nodes()
            .iter()
            .map(|&n| self.world.name(ActorId(n)).to_string())
            .collect()
    }

    /// Tells every switch on `route` to reserve (or release) `bandwidth` on
    /// its port toward the next node.
    /// Logs a flow reserved or released by the energy stage and tells the
    /// switches on its path.
    pub(super) fn flow_notice(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        f: &Flow,
        reserve: bool,
    ) -> Result<(), ModelError> {
        ctx.log(
            if reserve {
                "flow_reserve"
            } else {
                "flow_release"
            },
            &FlowLog {
                task: f.task,
                path: self.path_names(&f.route),
                bps: f.bandwidth.bps(),
            },
        );
        self.notify_switches(ctx, f.task, &f.route, f.bandwidth, reserve)
    }

    pub(super) fn notify_switches(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        task: u64,
        route: &Route,
        bandwidth: Bandwidth,
        reserve: bool,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        for pair in route.nodes().windows(2) {
            if world.network.is_switch(pair[0]) {
                let body = Body::Reservation {
                    task,
                    peer: pair[1],
                    bps: bandwidth.bps(),
                    reserve,
                };
                // under a slot stage a reservation may be released one
                // time slot after it was made (its task evicted): the
                // release must not overtake it
                if self.in_order {
                    self.nic
                        .send_in_order(&world, ctx, ActorId(pair[0]), body)?;
                } else {
                    self.nic.send(&world, ctx, ActorId(pair[0]), body)?;
                }
            }
        }
        Ok(())
    }
}

/// ARQ band of a quality `q` in 0–100 over `classes` bands, 0 the highest
/// (Paragon §4.1).
pub(super) fn band(q: f64, classes: usize) -> usize {
    let width = 100.0 / classes.max(1) as f64;
    let b = ((100.0 - q.clamp(0.0, 100.0)) / width) as usize;
    b.min(classes.saturating_sub(1))
}

/// Whether a server a primary tenant owns leaves a core for one more
/// task, by its latest report (the view's primary room, harvesting
/// §5.3). The energy-aware placements prefer servers already on, which
/// a primary tenant keeps on; without this they would start tasks
/// there only to see them killed.
pub(super) fn primary_leaves_room(cluster: &ClusterView, i: u32) -> bool {
    cluster.servers()[i as usize].primary_leaves(1)
}

/// [`Core::appropriate_on`] over the parts of the state it reads, for a
/// caller that holds the placement mutably at the same time.
pub(super) fn appropriate_on(
    cluster: &ClusterView,
    profiles: &BTreeMap<TaskId, Profile>,
    strict_speed: f64,
    task: &Task,
    i: u32,
) -> bool {
    let profile = profiles.get(&task.id);
    let violation = profile.map_or(0.0, |p| {
        cluster.interference(i).violation(&p.tolerated, &p.caused)
    });
    // ARQ's appropriate server (ARQ §3.1), as `Core::appropriate`
    let class = cluster.servers()[i as usize].class;
    let speed = profile.map_or(1.0, |p| p.speed.get(class).copied().unwrap_or(0.0));
    violation <= 0.0 && speed >= QOS_PERF_NORM * strict_speed
}

/// The ARQ pool of each server, shared: a placement attempt reads it
/// through its own handle while the attempt's placer holds the scheduler's
/// state, so an attempt costs what its candidates cost, not a pass over
/// every server (issue 43). Pools change only in [`Core::refresh_pool`],
/// on the scheduler's one thread; the atomics make the handle shareable,
/// not concurrent.
#[derive(Debug, Default)]
pub(super) struct ServerPools(Arc<[AtomicUsize]>);

impl ServerPools {
    /// Another handle on the same pools.
    pub(super) fn share(&self) -> Self {
        ServerPools(Arc::clone(&self.0))
    }

    /// `n` servers, all in pool 0.
    pub(super) fn new(n: usize) -> Self {
        ServerPools((0..n).map(|_| AtomicUsize::new(0)).collect())
    }

    pub(super) fn get(&self, i: u32) -> usize {
        self.0[i as usize].load(Ordering::Relaxed)
    }

    fn set(&self, i: u32, pool: usize) {
        self.0[i as usize].store(pool, Ordering::Relaxed);
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The tasks the scheduler placed and has not heard the end of, by id, and
/// by server, so that a server's tasks are found without a pass over every
/// placed task (§3.4's isolation asks at each reclassification; issue 43
/// measured that pass at 12 % of a 30,000-server run). A task changes
/// server only by [`PlacedTasks::remove`] then [`PlacedTasks::insert`].
#[derive(Debug, Default)]
pub(super) struct PlacedTasks {
    by_id: BTreeMap<TaskId, Placed>,
    by_server: BTreeSet<(u32, TaskId)>,
}

impl PlacedTasks {
    pub(super) fn insert(&mut self, id: TaskId, p: Placed) -> Option<Placed> {
        let server = p.server;
        let old = self.by_id.insert(id, p);
        if let Some(o) = &old {
            self.by_server.remove(&(o.server, id));
        }
        self.by_server.insert((server, id));
        old
    }

    pub(super) fn remove(&mut self, id: &TaskId) -> Option<Placed> {
        let p = self.by_id.remove(id)?;
        self.by_server.remove(&(p.server, *id));
        Some(p)
    }

    pub(super) fn get(&self, id: &TaskId) -> Option<&Placed> {
        self.by_id.get(id)
    }

    /// Everything but the server may change through this.
    pub(super) fn get_mut(&mut self, id: &TaskId) -> Option<&mut Placed> {
        self.by_id.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: &TaskId) -> bool {
        self.by_id.contains_key(id)
    }

    /// By id.
    pub(super) fn values(&self) -> impl Iterator<Item = &Placed> {
        self.by_id.values()
    }

    /// By id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&TaskId, &Placed)> {
        self.by_id.iter()
    }

    /// The tasks on server `i`, by id.
    pub(super) fn on_server(&self, i: u32) -> impl Iterator<Item = TaskId> + '_ {
        self.by_server
            .range((i, 0)..=(i, TaskId::MAX))
            .map(|&(_, id)| id)
    }
}
