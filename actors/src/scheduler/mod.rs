//! The scheduler actor: receives submissions, server reports and releases,
//! and decides where each task runs through a pipeline of stages chosen in
//! the scenario (MODEL.md §3, docs/scheduler.md). Each stage is a folder
//! with its trait in `mod.rs`, its registry in `registry.rs` and one file
//! per policy:
//!
//! 1. **classification** (`classification/`, Paragon §2): a new application
//!    is profiled (`profile_time`, part of its response time) and
//!    classified by collaborative filtering, when a stage needs its profile;
//! 2. **admission** (`admission/`): `fifo` or `arq`, which task to place
//!    next and on which servers (Paragon §4);
//! 3. **placement** (`placement/`): `random`, `least-loaded`, `best-fit`,
//!    `paragon`, `paragon-nh`, `paragon-ni`, and the YARN placements on
//!    harvested servers `yarn-stock`, `yarn-pt`, `yarn-h`;
//! 4. **slots** (`preemption/`): `none` (a task takes a slot per thread, no
//!    preemption), or the thesis's slot stages `priority`, `wasp` and
//!    `hybrid`, which today still replace admission and placement with one
//!    priority queue scheduled every time slot, with priority evictions
//!    (thesis §6.2.3, §8.1.2, §9.2); the energy-aware placements
//!    (`energy.rs`) queue by themselves under `fifo` without slots, and are
//!    the placement behind ARQ or a slot stage otherwise; `annealing`
//!    (`annealing.rs`) queues distributed runs by itself beside the
//!    pipeline's single tasks without slots, and chooses the hosts of the
//!    slot stage's gang starts under one (a batch of one, ASPLOS'16 §5.1,
//!    thesis §6.2.3.2); under any other placement `gang.rs`
//!    queues a run whole for the placement to place unit by unit (a slot
//!    stage starts it whole in free slots, `preemption/gang.rs`; an
//!    energy stage that queues by itself, `energy_gang.rs`).
//!    docs/scheduler.md lists what composes and what is still refused.
//!
//! After placement, reactive phase detection (Paragon §3.4) watches the
//! progress servers report, reclassifies a lagging application in vivo and
//! migrates it when a better server pays back the migration.
//!
//! The scheduler sees only what a real one could: server configurations,
//! its own dispatches, the servers' releases and reports, and profiling
//! measurements (`crate::profiling`). It never reads server state or the
//! ground truth directly.

pub mod admission;
pub mod annealing;
pub mod classification;
mod cluster_view;
pub mod energy;
mod energy_gang;
mod flows;
pub mod gang;
mod outbox;
pub mod placement;
pub mod preemption;
mod run_ledger;
mod unplaceable;
pub mod wasc;

pub use cluster_view::{ClusterView, ServerSlots, ServerSpec};
pub use flows::FlowTable;
pub use placement::{
    Awareness, Choice, LeastLoaded, ParagonPlacement, Placement, RandomPlacement, Request,
    VictimOption,
};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use dcemu_topology::{Bandwidth, PowerPolicy, Route, SimTime};
use serde::Serialize;

use crate::config::{
    AdmissionKind, Contention, PlacementKind, PrimaryTenantConfig, SchedulerConfig,
};
use crate::external::MigrateOrder;
use crate::ground_truth::SOURCES;
use crate::kernel::{ActorId, ActorRng, Ctx, Envelope, Metrics, ModelError};
use crate::net::{AppRate, Body, EvictionCause, Inbox, Nic};
use crate::net::{Msg, unexpected};
use crate::profiling::{Lab, Profile};
use crate::server::QOS_PERF_NORM;
use crate::task::{Kind, Task, TaskId};
use crate::world::World;

use admission::arq::server_quality;
use admission::{Admission, Attempt, Machine, PoolState, Scope};
use classification::Classifier;
use classification::cf::CfParams;
use energy::{EnergyServer, EnergyStage, Flow};
use placement::{PathOption, expected_rate};
use preemption::{
    EvictionStats, Returned, RunningSlot, SlotAction, SlotPlacer, SlotServer, SlotStage,
};

/// Times one application is reclassified at most (phase detection, §3.4).
pub const MAX_RECLASSIFICATIONS: u32 = 3;

/// Most co-runners moved away to isolate one degraded application (§3.4).
pub const MAX_ISOLATION_MOVES: usize = 4;

pub struct Scheduler {
    cfg: SchedulerConfig,
    admission: Box<dyn Admission>,
    core: Core,
    /// The thesis's slot stage, when `scheduler.slots` is not `none`; it
    /// then queues and places every task itself.
    slots: Option<SlotStage>,
    /// The thesis's energy-aware placements over the network, when
    /// `scheduler.placement` is one.
    energy: Option<EnergyStage>,
    /// The energy stage queues and places every task itself (`admission =
    /// "fifo"`, `slots = "none"`: the thesis's chapters 3–4 as written).
    /// Otherwise it is the placement behind ARQ or the slot stage
    /// ([`CorePlacer`]).
    energy_queues: bool,
    /// An energy-aware placement behind ARQ without a slot stage: ARQ holds
    /// the queue and offers it at the start of each time slot (GEMS batches
    /// per slot, thesis §4.2.5).
    energy_admission: bool,
    /// Distributed runs waiting for an energy stage that queues by itself
    /// (`energy_queues`): their unit 0s, in arrival order
    /// (`energy_gang.rs`).
    energy_runs: Vec<Task>,
    /// The placement stage chooses the free slot of each start of the slot
    /// stage (`placement` other than `random`); the scheduler's cluster
    /// view then follows the slot stage's starts and releases.
    slot_placer: bool,
    /// Under a slot stage, the admission stage (`arq`) holds the queue and
    /// its order and scopes stand for the slot stage's queue
    /// ([`SlotStage::try_start`]).
    slot_admission: bool,
    /// The `SlotTick` armed, if any (slot and energy stages).
    slot_tick: Option<SimTime>,
    /// `annealing`: distributed applications (ASPLOS'16 §5); it queues
    /// and places their runs itself, on the room single tasks leave. With
    /// the latest `DistPlace`.
    annealing: Option<annealing::AnnealingStage>,
    dist_tick: Option<SimTime>,
    evictions: EvictionStats,
}

/// The placement stage answering the slot stage ([`SlotPlacer`]): it
/// scores the servers with a free slot by its own criterion, and the view it
/// reads follows the slot stage's starts. With an energy-aware placement
/// (`energy`) that stage chooses the server and its path among the
/// candidates, and books CPU, memory and bandwidth as the task starts
/// ([`EnergyStage::choose`], [`EnergyStage::start`]); the same placer
/// answers ARQ without a slot stage.
struct CorePlacer<'a> {
    core: &'a mut Core,
    energy: Option<&'a mut EnergyStage>,
    /// The energy stage's latest choice: task, server and path.
    chosen: Option<(TaskId, u32, Route)>,
    /// Of the latest choice, kept for the start it leads to.
    violation: f64,
    /// Only a server ARQ counts as appropriate for the task (its `Scope`).
    strict: bool,
    /// The ARQ pool of the latest start's server, before the start moved it.
    pool: usize,
    /// Virtual time the latest decision that chose a server or a victim
    /// took (`Placement::decision_latency`), for the start it leads to.
    latency: u64,
    /// `annealing` under a slot stage: it chooses the hosts of each run
    /// the slot stage starts ([`AnnealingStage::choose_hosts`]).
    anneal: Option<&'a mut annealing::AnnealingStage>,
    /// The path the latest choice named for its task's flow (an external
    /// program's network stage): task, server and path.
    path: Option<(TaskId, u32, Route)>,
    /// The migrations the latest decisions ordered, with the task each
    /// decision was about, until the slot stage begins them
    /// ([`SlotPlacer::take_moves`]) and they are booked and held
    /// ([`Core::hold_move`]).
    moves: Vec<(TaskId, MigrateOrder)>,
}

impl<'a> CorePlacer<'a> {
    /// The placement stage (and the energy stage, if any) over `core`;
    /// `strict`: only servers ARQ counts as appropriate.
    fn new(core: &'a mut Core, energy: Option<&'a mut EnergyStage>, strict: bool) -> Self {
        CorePlacer {
            core,
            energy,
            chosen: None,
            violation: 0.0,
            strict,
            pool: 0,
            latency: 0,
            anneal: None,
            path: None,
            moves: Vec::new(),
        }
    }

    /// The same, with `annealing` choosing the hosts of distributed runs.
    fn annealing(mut self, anneal: Option<&'a mut annealing::AnnealingStage>) -> Self {
        self.anneal = anneal;
        self
    }
}

impl SlotPlacer for CorePlacer<'_> {
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        if let Some(energy) = self.energy.as_deref_mut() {
            let core = &*self.core;
            let strict = self.strict;
            let allow = |i: u32| {
                candidates(i)
                    && core.primary_leaves_room(i)
                    && core.cluster.apart_allows(task, i)
                    && (!strict || core.appropriate_on(task, i))
            };
            let (server, route) = energy.choose(task, &allow, rng)?;
            self.chosen = Some((task.id, server, route));
            self.violation = 0.0;
            return Some(server);
        }
        let core = &mut *self.core;
        core.show_running();
        core.offer_paths(task);
        // A task with a flow may only take a slot on a server some path to
        // which has its bandwidth free, as outside the slot stages (the
        // flow is reserved when it starts, `started`).
        let (flows, cluster, world) = (&core.flows, &core.cluster, &core.world);
        let bandwidth = Bandwidth::from_bps(task.flow_bps);
        let with_path = |i: u32| {
            candidates(i)
                && cluster.apart_allows(task, i)
                && (task.flow_bps == 0
                    || flows.fits(
                        &world.network,
                        cluster.servers()[i as usize].id,
                        bandwidth,
                        None,
                    ))
        };
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: Some(&with_path),
            exclude: None,
        };
        let strict = self.strict;
        let started = Instant::now();
        let choice = core
            .placement
            .place(&req, &core.cluster, rng)
            .filter(|c| with_path(c.server) && (!strict || core.appropriate(&req, c)));
        core.decision_us.push(started.elapsed().as_secs_f64() * 1e6);
        let latency = core.placement.decision_latency();
        let held = core.hold_orders(task.id, latency);
        let path = core.placement.take_path();
        if let Some(moves) = &held {
            self.moves.extend(moves.iter().map(|&m| (task.id, m)));
        }
        let choice = choice?;
        self.latency = if held.is_some() { 0 } else { latency };
        self.violation = choice.violation;
        self.path = path.map(|route| (task.id, choice.server, route));
        Some(choice.server)
    }

    fn started(
        &mut self,
        task: &Task,
        server: u32,
        victims: &[TaskId],
        now: SimTime,
        rng: &mut ActorRng,
    ) {
        let core = &mut *self.core;
        let latency = std::mem::take(&mut self.latency);
        if latency > 0 {
            core.slot_latency.insert(task.id, latency);
        }
        self.pool = core.pool[server as usize];
        let id = core.cluster.servers()[server as usize].id;
        for &v in victims {
            if let Some(p) = core.placed.remove(&v) {
                core.vacate(v, p.server, p.cores, p.memory_mb);
            }
            // the victim's flows go with its slot
            core.release_flow_later(v);
            if let Some(energy) = self.energy.as_deref_mut() {
                for f in energy.release(v, id) {
                    core.notices.push(Notice::Flow(f, false));
                }
            }
        }
        let violation = if !victims.is_empty() {
            0.0
        } else {
            self.violation
        };
        core.occupy(task, Choice { server, violation }, now);
        let Some(energy) = self.energy.as_deref_mut() else {
            let path = match self.path.take() {
                Some((t, i, route)) if t == task.id && i == server && victims.is_empty() => {
                    Some(route)
                }
                _ => None,
            };
            core.reserve_flow_later(task, server, path);
            return;
        };
        let route = match self.chosen.take() {
            Some((t, i, route)) if t == task.id && i == server => Some(route),
            _ => None,
        };
        match energy.start(&core.world.network, task, server, route, rng) {
            Some(flows) => {
                for f in flows {
                    core.notices.push(Notice::Flow(f, true));
                }
            }
            // only servers with room were offered: cannot happen, but
            // would be logged as a refused flow
            None => core.notices.push(Notice::Refused {
                task: task.id,
                server: id,
                bps: task.flow_bps,
            }),
        }
    }

    /// Books as [`SlotPlacer::started`] does, and undoes it if the unit's
    /// flow found no path with its bandwidth (the run's units booked
    /// before it may have taken a shared link's).
    fn start_unit(&mut self, task: &Task, server: u32, now: SimTime, rng: &mut ActorRng) -> bool {
        let before = self.core.notices.len();
        self.started(task, server, &[], now, rng);
        let refused = self.core.notices[before..]
            .iter()
            .any(|n| matches!(n, Notice::Refused { task: t, .. } if *t == task.id));
        if refused {
            self.withdraw(task, server);
        } else if let Some(a) = self.anneal.as_deref_mut() {
            a.unit_started(task, server);
        }
        !refused
    }

    /// Annealing chooses the hosts of the whole run among the servers
    /// `candidates` holds that also leave the units room beside the
    /// primary tenants and have a path for their flows, as single
    /// choices do.
    fn choose_gang(
        &mut self,
        units: &[Task],
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<Vec<u32>> {
        let anneal = self.anneal.as_deref_mut()?;
        let core = &*self.core;
        let strict = self.strict;
        let (flows, cluster, world) = (&core.flows, &core.cluster, &core.world);
        let fits = |i: u32| {
            candidates(i)
                && units.iter().all(|t| {
                    cluster.servers()[i as usize].fits(t, false)
                        && (!strict || core.appropriate_on(t, i))
                        && (t.flow_bps == 0
                            || flows.fits(
                                &world.network,
                                cluster.servers()[i as usize].id,
                                Bandwidth::from_bps(t.flow_bps),
                                None,
                            ))
                })
        };
        let hosts: Vec<u32> = (0..cluster.servers().len() as u32)
            .filter(|&i| fits(i))
            .collect();
        anneal.choose_hosts(units, &hosts, rng)
    }

    fn places_gangs(&self) -> bool {
        self.anneal.is_some()
    }

    fn could_hold(&self, threads: u32, hosts: usize) -> bool {
        self.core.cluster.could_hold(threads, hosts)
    }

    /// Frees what `task` was booked on `server` (view, flows, the energy
    /// stage's ledger) and drops its notices: the switches never hear of
    /// it.
    fn withdraw(&mut self, task: &Task, server: u32) {
        if let Some(a) = self.anneal.as_deref_mut() {
            a.unit_left(task.id);
        }
        let core = &mut *self.core;
        if core.placed.remove(&task.id).is_some() {
            core.vacate(task.id, server, task.cores, task.memory_mb);
        }
        core.flows.release(&core.world.network, task.id);
        if let Some(energy) = self.energy.as_deref_mut() {
            let id = core.cluster.servers()[server as usize].id;
            energy.release(task.id, id);
        }
        core.notices.retain(|n| match n {
            Notice::Flow(f, _) => f.task != task.id,
            Notice::Refused { task: t, .. } => *t != task.id,
        });
    }

    fn gates_victims(&self, task: &Task) -> bool {
        task.flow_bps > 0 || self.energy.is_some()
    }

    /// The placement stage scores the servers holding admissible victims
    /// when it has a criterion for them (`paragon*`, `least-loaded`,
    /// `best-fit`); the energy-aware placements keep the preemption
    /// stage's choice (they gate victims by the room they need instead).
    fn scores_victims(&self, _: &Task) -> bool {
        self.energy.is_none() && self.core.placement.scores_victims()
    }

    fn choose_victim(
        &mut self,
        task: &Task,
        options: &[(u32, TaskId)],
        _: &mut ActorRng,
    ) -> Option<usize> {
        let core = &mut *self.core;
        let options: Vec<VictimOption> = options
            .iter()
            .map(|&(server, victim)| VictimOption {
                server,
                victim,
                victim_memory_mb: core.placed.get(&victim).map_or(0, |p| p.memory_mb),
            })
            .collect();
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: None,
            exclude: None,
        };
        core.placement.choose_victim(&req, &core.cluster, &options)
    }

    fn picks_victims(&self, _: &Task) -> bool {
        self.energy.is_none() && self.core.placement.picks_victims()
    }

    /// The placement's pick among every running task, with the cores and
    /// memory the scheduler counts for each.
    fn pick_victim(
        &mut self,
        task: &Task,
        running: &[RunningSlot],
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        let core = &mut *self.core;
        core.show_running();
        let views: Vec<placement::RunningTask> = running
            .iter()
            .map(|r| {
                let placed = core.placed.get(&r.task);
                placement::RunningTask {
                    server: r.server,
                    task: r.task,
                    priority: r.priority,
                    started: r.started,
                    cores: placed.map_or(1, |p| p.cores),
                    memory_mb: placed.map_or(0, |p| p.memory_mb),
                    admissible: r.admissible,
                }
            })
            .collect();
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: None,
            exclude: None,
        };
        let k = core.placement.pick_victim(&req, &core.cluster, &views, rng);
        let latency = core.placement.decision_latency();
        let held = core.hold_orders(task.id, latency);
        if let Some(moves) = &held {
            self.moves.extend(moves.iter().map(|&m| (task.id, m)));
        }
        let victim = views.get(k?)?.task;
        self.latency = if held.is_some() { 0 } else { latency };
        Some(victim)
    }

    fn take_moves(&mut self) -> Vec<(TaskId, u32)> {
        self.moves.iter().map(|(_, m)| (m.task, m.server)).collect()
    }

    /// Books a move the stage began in the scheduler's view at once and
    /// holds its order until the pass sends its decision
    /// ([`Core::hold_move`]); a declined one (or one the view cannot book)
    /// is counted and leaves nothing behind.
    fn move_begun(&mut self, task: TaskId, to: u32, begun: bool) -> bool {
        let Some(k) = self
            .moves
            .iter()
            .position(|(_, m)| m.task == task && m.server == to)
        else {
            return false;
        };
        let (decision, _) = self.moves.remove(k);
        let booked = begun && self.core.hold_move(decision, task, to);
        if !booked {
            self.core.migrations_declined += 1;
        }
        booked
    }

    /// With a flow, a victim's eviction must leave the evictor's bandwidth
    /// free on some path to the server (the victim's own flow counting as
    /// freed); under an energy-aware placement, its CPU, memory and path.
    fn victim_fits(&mut self, task: &Task, server: u32, victim: TaskId) -> bool {
        if let Some(energy) = self.energy.as_deref_mut() {
            return energy.evictable(task, server, victim);
        }
        let core = &*self.core;
        let id = core.cluster.servers()[server as usize].id;
        task.flow_bps == 0
            || core.flows.fits(
                &core.world.network,
                id,
                Bandwidth::from_bps(task.flow_bps),
                Some(victim),
            )
    }
}

/// A change of reservations decided inside a pass of the slot stage, told
/// to the switches (and logged) once the pass is over, before its
/// dispatches go out.
enum Notice {
    Flow(Flow, bool),
    Refused {
        task: TaskId,
        server: ActorId,
        bps: u64,
    },
}

/// Everything but the admission stage, so that admission can call back
/// into placement while it holds its queues.
struct Core {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    placement: Box<dyn Placement>,
    cluster: ClusterView,
    /// ARQ pool of each server (all 0 without ARQ).
    pool: Vec<usize>,
    pools: usize,
    /// Per pool, servers running something and servers with a free slot,
    /// kept up to date by `refresh_pool`, with what each server counts as.
    pool_counts: PoolState,
    counted: Vec<(bool, bool)>,
    classification: Option<Classification>,
    profiles: BTreeMap<TaskId, Profile>,
    /// Tasks without a catalog entry, by kind ([`Kind`]: what a scheduler
    /// tells from the task itself): the classification of each kind
    /// profiled so far, and the tasks that wait for their kind's profiling
    /// run to end, with their arrival.
    kinds: BTreeMap<Kind, Profile>,
    kind_waiting: BTreeMap<Kind, Vec<(Task, SimTime)>>,
    kind_stats: KindStats,
    placed: BTreeMap<TaskId, Placed>,
    flows: FlowTable,
    /// Reservations decided in the current slot pass ([`Notice`]).
    notices: Vec<Notice>,
    resubmit_delay: u64,
    reclassify_below: f64,
    migration_time: u64,
    dispatched: u64,
    killed: u64,
    profiled: u64,
    reclassifications: u64,
    migrations: u64,
    migrations_declined: u64,
    isolations: u64,
    short_jobs: u64,
    /// Distributed runs under a placement other than `annealing`.
    gangs: gang::Gangs,
    queue_wait_s: Vec<f64>,
    /// Catalog applications' first wait as a share of their ideal time
    /// (Paragon Fig. 12's queueing bar); see [`queue_share`].
    queue_wait_share: Vec<f64>,
    decision_us: Vec<f64>,
    /// The `AdmissionTick` armed, if any.
    tick: Option<SimTime>,
    /// Bumped whenever what placement sees changes (slots, memory,
    /// interference state, reports), so that an attempt that found no room
    /// is not repeated until something changed.
    version: u64,
    /// Tasks whose last attempt found no room: the version and scope then.
    no_room: BTreeMap<TaskId, (u64, bool, Vec<usize>)>,
    /// Share of the QoS speed an ARQ-appropriate server must offer on its
    /// configuration (`scheduler.arq_speed`).
    strict_speed: f64,
    /// Dispatches and preemptions go to each server in the order they were
    /// sent ([`Nic::send_in_order`]): under a slot stage a `Preempt` must
    /// not overtake its victim's `Dispatch` (a sleeping switch on one ECMP
    /// path would let it), or the server could not evict the victim and
    /// would run one task more than its slots.
    in_order: bool,
    /// Whether the placement orders servers to sleep and wake, or moves
    /// running tasks (an external program under protocol v3): its
    /// dispatches then go in order too, so that none overtakes an order to
    /// sleep decided before it, and no order to migrate a task overtakes
    /// the task's dispatch.
    sends_orders: bool,
    /// When the latest decision that took virtual time is done
    /// (`Placement::decision_latency`): dispatches leave no earlier, in the
    /// order they were decided.
    busy_until: SimTime,
    /// The admission stage backfills (`easy-backfill`): it reads the
    /// machine ([`Core::machine`]) at every pass.
    backfills: bool,
    /// Virtual time the decision that started each task of a slot pass
    /// took, until the pass sends its dispatch or preemption (only tasks
    /// whose decision took some: an external program's with a latency).
    slot_latency: BTreeMap<TaskId, u64>,
    /// Power orders and migrations decided inside a slot pass, until the
    /// pass sends them (`outbox.rs`).
    held: std::collections::VecDeque<HeldOrders>,
    /// Tasks handed back for a migration and not yet resumed (their
    /// `migration_time`), for a placement that moves running tasks.
    moving: std::collections::BTreeSet<TaskId>,
}

/// The power orders and migrations of one decision a slot pass took,
/// until the pass sends them (`outbox.rs`).
struct HeldOrders {
    /// The task the decision was about, started by it or told to wait.
    task: TaskId,
    /// The virtual time the decision took.
    latency: u64,
    power: Vec<crate::external::PowerOrder>,
    /// Moves already booked: task and the server it leaves.
    moves: Vec<(TaskId, ActorId)>,
}

/// Paragon Fig. 12's queueing overhead: how long a catalog application
/// waited in the scheduler before its first start, as a share of its ideal
/// time (`total_ns`, its time alone on its best configuration), the unit
/// Fig. 12 normalises every bar to. `None` for other tasks and for later
/// dispatches of a migrated or evicted application.
fn queue_share(task: &Task, queued_ns: u64) -> Option<f64> {
    (task.app.is_some() && task.first_start.is_none() && task.total_ns > 0)
        .then(|| queued_ns as f64 / task.total_ns as f64)
}

/// Paragon's classification engine and the lab that measures for it.
struct Classification {
    lab: Lab,
    classifier: Classifier,
    profile_time: u64,
    profile_share: Option<f64>,
    short_job: u64,
}

impl Classification {
    /// How long `task`'s profiling and classification take (§2.4): the
    /// configured share of its declared ideal time (Fig. 12), else
    /// `profile_time`.
    fn overhead(&self, task: &Task) -> u64 {
        match self.profile_share {
            Some(share) => (share * task.service_ns as f64).round() as u64,
            None => self.profile_time,
        }
    }
}

/// What happened to tasks without a catalog entry under classification.
#[derive(Default)]
struct KindStats {
    /// Tasks that went through the profiling runs: the first of a job's or
    /// a stage's (not short), and every task that is a kind of its own.
    profiled: u64,
    /// Tasks of a kind already classified: they took its profile at once.
    known: u64,
    /// Tasks that waited for the profiling run of their kind's first task.
    waited: u64,
    /// Short tasks of a kind not classified yet, placed unprofiled (§3.5).
    short: u64,
}

/// A task on a server, as the scheduler tracks it.
#[derive(Clone, Debug)]
struct Placed {
    server: u32,
    cores: u32,
    memory_mb: u64,
    since: SimTime,
    /// When it should end by: `since` plus its requested time, else its
    /// work (what EASY backfilling reserves by).
    ends_by: SimTime,
    pool: usize,
    /// Unmet tolerance (score points) the placement saw on the server: the
    /// scheduler expects `expected_rate(speed, violation)` there.
    violation: f64,
    /// Slots reserved on the server a migration goes to, and its violation.
    migrating_to: Option<(u32, f64)>,
    reclassifying: bool,
    reclassified: u32,
    /// The latest measured rate and work left (from `Rates`).
    rate: f64,
    left_ns: u64,
    /// Whether `rate` and `left_ns` come from a `Rates` report (else they
    /// are the placement's assumption: alone, the declared work).
    measured: bool,
}

#[derive(Serialize)]
struct ArriveLog {
    task: u64,
    tenant: String,
}

#[derive(Serialize)]
struct QueueLog {
    task: u64,
    queue_len: usize,
}

#[derive(Serialize)]
struct DispatchLog<'a> {
    task: u64,
    server: &'a str,
    queued_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    violation: Option<f64>,
}

#[derive(Serialize)]
struct EvictedLog<'a> {
    task: u64,
    server: &'a str,
    cause: &'static str,
    evictions: u32,
}

#[derive(Serialize)]
struct PreemptLog<'a> {
    task: u64,
    priority: u8,
    victim: u64,
    victim_priority: u8,
    server: &'a str,
    /// The other victims of a task of several slots (issue 39).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    also: Vec<u64>,
}

#[derive(Serialize)]
struct FlowLog {
    task: u64,
    path: Vec<String>,
    bps: u64,
}

#[derive(Serialize)]
struct FlowRefusedLog<'a> {
    task: u64,
    server: &'a str,
    bps: u64,
}

/// An order to sleep or wake a server, sent for an external program
/// (protocol v3).
#[derive(Serialize)]
struct PowerOrderLog<'a> {
    server: &'a str,
    to: &'static str,
}

#[derive(Serialize)]
struct ReleaseLog<'a> {
    task: u64,
    server: &'a str,
}

#[derive(Serialize)]
struct ClassifyLog {
    task: u64,
    app: u32,
    best_class: usize,
    demand: f64,
}

#[derive(Serialize)]
struct ClassifyKindLog {
    task: u64,
    workload: String,
    best_class: usize,
    demand: f64,
    /// Tasks of the kind that waited for this classification.
    waiting: usize,
}

#[derive(Serialize)]
struct ReclassifyLog<'a> {
    task: u64,
    server: &'a str,
    rate: f64,
    expected: f64,
}

#[derive(Serialize)]
struct MigrateLog<'a> {
    task: u64,
    /// `faster`: the task itself goes where it should run faster;
    /// `isolate`: a co-runner moves away from a degraded task.
    why: &'static str,
    from: &'a str,
    to: &'a str,
    /// Work left by the task's latest rate report (at placement, its
    /// declared work, for the built-in moves); an external program's
    /// move logs it only when a rate report came, and the rates never:
    /// the scheduler knows neither without rate monitoring.
    #[serde(skip_serializing_if = "Option::is_none")]
    left_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_now: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_expected: Option<f64>,
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
    ) -> Self {
        let placement = placement::build(cfg, servers, primaries, oracle);
        let admission = admission::build(cfg);
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
        let pool = vec![0; servers.len()];
        let counted: Vec<(bool, bool)> = servers.iter().map(|s| (false, s.slots > 0)).collect();
        let mut pool_counts = PoolState {
            busy: vec![0; pools],
            free: vec![0; pools],
            machine: None,
        };
        pool_counts.free[0] = counted.iter().filter(|c| c.1).count() as u32;
        let slot_stage = cfg.slots.slotted().then(|| {
            SlotStage::new(
                cfg,
                servers
                    .iter()
                    .map(|s| SlotServer {
                        id: s.id,
                        slots: s.slots,
                        cores: s.cores,
                        cpu_per_slot: s.core_speed * f64::from(s.cores) / f64::from(s.slots.max(1)),
                    })
                    .collect(),
            )
        });
        let energy = cfg.placement.energy_aware().then(|| {
            EnergyStage::new(
                cfg,
                &world.network,
                servers
                    .iter()
                    .map(|s| EnergyServer {
                        id: s.id,
                        slots: s.slots,
                        cores: s.cores,
                        core_speed: s.core_speed,
                        memory_mb: s.memory_mb,
                        idle_w: s.idle_w,
                        peak_w: s.peak_w,
                    })
                    .collect(),
                world.power.policy == PowerPolicy::Sleep,
                (
                    world.power.server_wake.as_nanos(),
                    world.power.switch_wake.as_nanos(),
                ),
            )
        });
        Scheduler {
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
            energy_queues: energy.is_some()
                && slot_stage.is_none()
                && cfg.admission == AdmissionKind::Fifo,
            energy_admission: energy.is_some()
                && slot_stage.is_none()
                && cfg.admission != AdmissionKind::Fifo,
            slots: slot_stage,
            energy,
            energy_runs: Vec::new(),
            slot_tick: None,
            annealing: (cfg.placement == PlacementKind::Annealing)
                .then(|| annealing::AnnealingStage::new(cfg, servers)),
            dist_tick: None,
            evictions: EvictionStats::default(),
            core: Core {
                classification: None,
                profiles: BTreeMap::new(),
                kinds: BTreeMap::new(),
                kind_waiting: BTreeMap::new(),
                kind_stats: KindStats::default(),
                placed: BTreeMap::new(),
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
                backfills: cfg.admission == AdmissionKind::EasyBackfill,
                slot_latency: BTreeMap::new(),
                held: Default::default(),
                moving: Default::default(),
                world,
            },
        }
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
    fn idle_point(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
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

    fn handle_event(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let packet = match msg {
            Msg::Packet(packet) => packet,
            Msg::Requeue(task) if self.energy_queues => {
                if self.core.gangs.rest(task.id).is_some() {
                    self.energy_runs.push(task);
                } else if let Some(stage) = self.energy.as_mut() {
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
                if let Some(stage) = self
                    .energy
                    .as_mut()
                    .filter(|_| self.energy_queues && task.dist.is_none())
                {
                    stage.enqueue(task);
                    return self.arm_slot_tick(ctx);
                }
                if let Some(stage) = self
                    .annealing
                    .as_mut()
                    .filter(|_| task.dist.is_some() && self.slots.is_none())
                {
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
                    if let Some(stage) = self.annealing.as_mut() {
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
                if self.annealing.as_ref().is_some_and(|a| a.owns(task)) =>
            {
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: world.name(src),
                    },
                );
                if let Some((i, slots, memory_mb)) =
                    self.annealing.as_mut().and_then(|a| a.release(task))
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
                if let Some(stage) = self.annealing.as_mut() {
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
                if self.annealing.is_some() {
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
                    if let Some(energy) = self.energy.as_mut()
                        && core.cluster.primary_aware()
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
    fn handle_killed(
        &mut self,
        task: Task,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if self.annealing.as_ref().is_some_and(|a| a.owns(task.id)) {
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

    /// A unit of a distributed run came back unfinished (killed for its
    /// server's primary tenant, evicted, or stopped): its run's attempt is
    /// over, the run's other units are stopped, and once all are back the
    /// run queues again from the start ([`annealing::AnnealingStage::lost`]).
    fn unit_lost(&mut self, task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let delay = self.core.resubmit_delay;
        let Some(stage) = self.annealing.as_mut() else {
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
    fn gang_unit_lost(
        &mut self,
        task: Task,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        if let Some(stage) = self.annealing.as_mut() {
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
    fn dist_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let world = Arc::clone(&self.core.world);
        let Some(stage) = self.annealing.as_mut() else {
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
    fn queued(&self) -> usize {
        if let Some(a) = self.annealing.as_ref().filter(|_| self.slots.is_none()) {
            return a.queued() + self.admission.len();
        }
        if let Some(e) = self.energy.as_ref().filter(|_| self.energy_queues) {
            return e.queued() + self.energy_runs.len() + self.core.gangs.waiting();
        }
        self.admission.len()
            + self.slots.as_ref().map_or(0, SlotStage::queued)
            + self.core.gangs.waiting()
    }

    /// Arms a `SlotTick` at the start of the next time slot, if tasks wait
    /// and none is armed (thesis §6.2.3.2).
    fn arm_slot_tick(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let staged = self.slots.is_some() || self.energy.is_some();
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
    fn slot_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let Some(stage) = self.slots.as_mut() else {
            return Ok(());
        };
        let mut actions = if self.slot_placer {
            let mut placer = CorePlacer::new(&mut self.core, self.energy.as_mut(), false)
                .annealing(self.annealing.as_mut());
            stage.schedule_placed(now, ctx.rng(), Some(&mut placer))
        } else {
            stage.schedule(now, ctx.rng())
        };
        if self.slot_admission {
            let pools = self.core.pool_state();
            let core = &mut self.core;
            let mut energy = self.energy.as_mut();
            let mut anneal = self.annealing.as_mut();
            let mut place = |task: &Task, _: SimTime, scope: Scope<'_>| {
                let allow: Option<Vec<bool>> = scope.bounded().then(|| {
                    (0..core.pool.len() as u32)
                        .map(|i| scope.admits(i, core.pool[i as usize]))
                        .collect()
                });
                let admits = |i: u32| allow.as_ref().is_none_or(|a| a[i as usize]);
                let rest = core.gangs.rest(task.id).map(<[Task]>::to_vec);
                let mut placer = CorePlacer::new(&mut *core, energy.as_deref_mut(), scope.strict)
                    .annealing(anneal.as_deref_mut());
                let allowed = allow.is_some().then_some(&admits as &dyn Fn(u32) -> bool);
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
    fn energy_admission_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let now = ctx.now();
        let pools = self.core.pool_state();
        let core = &mut self.core;
        let mut energy = self.energy.as_mut();
        let mut starts: Vec<(Task, u32)> = Vec::new();
        let mut runs: Vec<Vec<(Task, u32)>> = Vec::new();
        let mut place = |task: &Task, _: SimTime, scope: Scope<'_>| {
            let allow: Option<Vec<bool>> = scope.bounded().then(|| {
                (0..core.pool.len() as u32)
                    .map(|i| scope.admits(i, core.pool[i as usize]))
                    .collect()
            });
            if let Some(rest) = core.gangs.rest(task.id) {
                let units: Vec<Task> = std::iter::once(task.clone())
                    .chain(rest.iter().cloned())
                    .collect();
                let admits = |i: u32| allow.as_ref().is_none_or(|a| a[i as usize]);
                let mut placer = CorePlacer::new(&mut *core, energy.as_deref_mut(), scope.strict);
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
            let mut placer = CorePlacer::new(&mut *core, energy.as_deref_mut(), scope.strict);
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
    fn energy_pass(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let world = Arc::clone(&self.core.world);
        let Some(stage) = self.energy.as_mut() else {
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
        let Some(stage) = self.energy.as_mut() else {
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
    fn energy_release(
        &mut self,
        task: TaskId,
        src: ActorId,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let Some(stage) = self.energy.as_mut() else {
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
    fn submit_kind(
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
    fn profiled_kind(
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
    fn profiled(&mut self, task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
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
    fn admit(
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
    fn drain(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self
            .annealing
            .as_ref()
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
        if let Some(stage) = &self.energy {
            stage.finish(out);
        }
        if let Some(stage) = &self.annealing {
            stage.finish(out);
        }
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
        if let Some(c) = &core.classification {
            c.lab.finish(out);
            out.add("cf_reconstructions", c.classifier.reconstructions());
        }
    }
}

impl Core {
    /// The attempt of a distributed run ended by its unit `id` coming back
    /// unfinished (`run_ledger.rs`, under `annealing` and `gang.rs` alike):
    /// stops the run's other units (`Body::DistStop`, each `(server, task,
    /// attempt)` of `stop`) and, once the run restarts with `requeued`
    /// units ready at `at`, counts and logs the restart. Queueing it again
    /// is the caller's.
    fn dist_attempt_ended(
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
    fn launch_run(
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
    fn note_dispatch(
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
    fn send_dispatch(
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
    fn show_running(&mut self) {
        if self.placement.wants_running() {
            let running = self.running_tasks();
            self.placement.set_running(running);
        }
    }

    /// Every task placed and not heard the end of, by id, for a placement
    /// that moves running tasks.
    fn running_tasks(&self) -> Vec<placement::PlacedTask> {
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
    fn leaves(&mut self, now: SimTime, latency: u64) -> SimTime {
        if latency > 0 || self.busy_until > now {
            self.busy_until = self.busy_until.max(now).saturating_add(latency);
            self.busy_until
        } else {
            now
        }
    }

    /// Sends `body` to `server`, in the order sent where a `Preempt` must
    /// not overtake its victim's `Dispatch` (`in_order`).
    fn send(
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
    fn pool_state(&self) -> PoolState {
        PoolState {
            busy: self.pool_counts.busy.clone(),
            free: self.pool_counts.free.clone(),
            machine: self.backfills.then(|| self.machine()),
        }
    }

    /// The machine as EASY backfilling reads it: free slots per server,
    /// when each placed task should end by, the queued runs' parts.
    fn machine(&self) -> Machine {
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
    fn occupancy(&self, i: u32) -> (bool, bool) {
        let s = &self.cluster.servers()[i as usize];
        (s.free < s.slots, s.free > 0)
    }

    /// After a change to server `i` (slots, interference state): its ARQ
    /// pool from its resource quality, and the per-pool counts.
    fn refresh_pool(&mut self, i: u32) {
        self.version += 1;
        if self.pools <= 1 {
            return;
        }
        let (old_pool, (old_busy, old_free)) = (self.pool[i as usize], self.counted[i as usize]);
        let counts = &mut self.pool_counts;
        counts.busy[old_pool] -= u32::from(old_busy);
        counts.free[old_pool] -= u32::from(old_free);
        let state = self.cluster.interference(i);
        let q = server_quality(&state.tolerated(), &state.caused());
        let pool = band(q, self.pools);
        let (busy, free) = self.occupancy(i);
        self.pool[i as usize] = pool;
        self.counted[i as usize] = (busy, free);
        self.pool_counts.busy[pool] += u32::from(busy);
        self.pool_counts.free[pool] += u32::from(free);
    }

    /// Why `task` (with its run's other units, if it is a run's unit 0)
    /// was not placed: [`Attempt::TooLarge`] if no server, or too few for
    /// a run's distinct hosts, could hold it even with none of the
    /// scheduler's tasks on them; else [`Attempt::NoRoom`].
    fn refusal(&self, task: &Task) -> Attempt {
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
    fn try_place(
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
        let in_scope = |i: u32| scope.admits(i, pool[i as usize]) && !apart.contains(&i);
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
        let pool = self.pool[choice.server as usize];
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
    fn try_place_run(
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
            let admits = |i: u32| scope.admits(i, pool[i as usize]) && !used.contains(&i);
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
        let pool = self.pool[booked[0].1.server as usize];
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

    /// Whether a server a primary tenant owns leaves a core for one more
    /// task, by its latest report (the view's primary room, harvesting
    /// §5.3). The energy-aware placements prefer servers already on, which
    /// a primary tenant keeps on; without this they would start tasks
    /// there only to see them killed.
    fn primary_leaves_room(&self, i: u32) -> bool {
        self.cluster.servers()[i as usize].primary_leaves(1)
    }

    /// [`Core::appropriate`] for `task` on server `i`, with the violation
    /// its profile (if any) would see there: for a placement that does not
    /// weigh interference itself (the energy-aware ones).
    fn appropriate_on(&self, task: &Task, i: u32) -> bool {
        let profile = self.profiles.get(&task.id);
        let violation = profile.map_or(0.0, |p| {
            self.cluster
                .interference(i)
                .violation(&p.tolerated, &p.caused)
        });
        let req = Request {
            task,
            profile,
            allowed: None,
            exclude: None,
        };
        self.appropriate(
            &req,
            &Choice {
                server: i,
                violation,
            },
        )
    }

    /// ARQ's appropriate server (ARQ §3.1): no interference constraint
    /// violated and, on its configuration, at least the QoS share of the
    /// speed the task's profile predicts (`scheduler.arq_speed`).
    fn appropriate(&self, req: &Request<'_>, c: &Choice) -> bool {
        let class = self.cluster.servers()[c.server as usize].class;
        let speed = req
            .profile
            .map_or(1.0, |p| p.speed.get(class).copied().unwrap_or(0.0));
        c.violation <= 0.0 && speed >= QOS_PERF_NORM * self.strict_speed
    }

    /// Books `task` onto server `i`: slots, memory, interference state.
    fn occupy(&mut self, task: &Task, choice: Choice, now: SimTime) {
        let i = choice.server;
        self.cluster.take(i, task.cores, task.memory_mb);
        self.cluster.hold_apart(task, i);
        if let Some(p) = self.profiles.get(&task.id) {
            self.cluster
                .interference_mut(i)
                .add(task.id, &p.tolerated, &p.caused);
        }
        let pool = self.pool[i as usize];
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
    fn vacate(&mut self, task: TaskId, i: u32, cores: u32, memory_mb: u64) -> Option<()> {
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
    fn forget(&mut self, task: TaskId, src: ActorId, now: SimTime) -> Option<(usize, f64)> {
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
    fn leave(
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
    fn reserve_flow_later(&mut self, task: &Task, i: u32, path: Option<Route>) {
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
    fn offer_paths(&mut self, task: &Task) {
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
    fn release_flow_later(&mut self, task: TaskId) {
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
    fn tell(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
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

    fn release_flow(&mut self, task: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
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

    /// Reactive phase detection (§3.4): an application progressing clearly
    /// below what its classification predicts on this configuration is
    /// reclassified in vivo.
    fn rates(
        &mut self,
        src: ActorId,
        rates: &[AppRate],
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        for r in rates {
            let Some(p) = self.placed.get_mut(&r.task) else {
                continue;
            };
            p.rate = f64::from(r.rate_ppm) / 1e6;
            p.left_ns = r.left_ns;
            p.measured = true;
            if self.reclassify_below <= 0.0
                || p.reclassifying
                || p.migrating_to.is_some()
                || p.reclassified >= MAX_RECLASSIFICATIONS
            {
                continue;
            }
            let Some(profile) = self.profiles.get(&r.task) else {
                continue;
            };
            let class = self.cluster.servers()[p.server as usize].class;
            let speed = profile.speed.get(class).copied().unwrap_or(1.0);
            let expected = expected_rate(speed, p.violation);
            if p.rate >= expected * (1.0 - self.reclassify_below) {
                continue;
            }
            p.reclassifying = true;
            p.reclassified += 1;
            self.reclassifications += 1;
            ctx.log(
                "reclassify",
                &ReclassifyLog {
                    task: r.task,
                    server: world.name(src),
                    rate: p.rate,
                    expected,
                },
            );
            self.nic
                .send(&world, ctx, src, Body::Reclassify { task: r.task })?;
        }
        Ok(())
    }

    /// The in-vivo profile is back: update the application's and the
    /// server's interference state, and migrate the application if another
    /// server is expected to finish it sooner, migration included (§3.4).
    fn reclassified(
        &mut self,
        task: TaskId,
        src: ActorId,
        tolerated: &[u16; SOURCES],
        caused: &[u16; SOURCES],
        slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let Some(i) = self.cluster.index_of(src) else {
            return Ok(());
        };
        let Some(p) = self.placed.get_mut(&task) else {
            return Ok(());
        };
        p.reclassifying = false;
        if p.server != i {
            return Ok(());
        }
        let (rate_now, left_ns) = (p.rate, p.left_ns);
        let class = self.cluster.servers()[i as usize].class;
        let Some(profile) = self.profiles.get_mut(&task) else {
            return Ok(());
        };
        profile.tolerated = std::array::from_fn(|s| f64::from(tolerated[s]) / 100.0);
        profile.caused = std::array::from_fn(|s| f64::from(caused[s]) / 100.0);
        let state = self.cluster.interference_mut(i);
        state.remove(task);
        let violation = state.violation(&profile.tolerated, &profile.caused);
        state.add(task, &profile.tolerated, &profile.caused);
        // §3.4: a degraded application "entered a new phase or was classified
        // incorrectly". When its new interference profile fits its co-runners,
        // interference does not explain the loss: the heterogeneity
        // classification was wrong for this configuration, and the measured
        // rate is the application's performance on it, a known entry of the
        // §2.2 utility matrix, which replaces the prediction.
        if violation <= 0.0 {
            if let Some(v) = profile.speed.get_mut(class) {
                *v = v.min(rate_now);
            }
        }
        if let Some(p) = self.placed.get_mut(&task) {
            p.violation = violation;
        }
        self.refresh_pool(i);
        let Some(task_view) = self.placed_task(task) else {
            return Ok(());
        };
        let slot_free = |s: u32| slots.as_deref().is_none_or(|st| st.has_room(s, &task_view));
        let req = Request {
            task: &task_view,
            profile: self.profiles.get(&task),
            allowed: Some(&slot_free),
            exclude: Some(i),
        };
        let choice = self.placement.place(&req, &self.cluster, ctx.rng());
        let rate_new = choice.map_or(0.0, |c| {
            let class = self.cluster.servers()[c.server as usize].class;
            let speed = self
                .profiles
                .get(&task)
                .and_then(|p| p.speed.get(class).copied())
                .unwrap_or(1.0);
            expected_rate(speed, c.violation)
        });
        let left = left_ns as f64;
        let stay = left / rate_now.max(1e-6);
        let go = left / rate_new.max(1e-6) + self.migration_time as f64;
        match choice {
            Some(choice) if go < stay => {
                let rates = Some((rate_now, rate_new));
                self.start_migration(task, "faster", src, choice, rates, slots, ctx, None)
            }
            // Moving the co-runners away helps only a loss that interference
            // explains; otherwise it would cost them a migration for nothing.
            _ if violation > 0.0 => self.isolate(task, i, slots, ctx),
            _ => {
                self.migrations_declined += 1;
                Ok(())
            }
        }
    }

    /// Reserves `choice` for `task` (and, under a slot stage, a slot there)
    /// and asks `src` to hand the task over. `rates`: its rate now and the
    /// one expected there, when the mover estimated them (`None`: an
    /// external program's move, logged without them).
    #[allow(clippy::too_many_arguments)]
    fn start_migration(
        &mut self,
        task: TaskId,
        why: &'static str,
        src: ActorId,
        choice: Choice,
        rates: Option<(f64, f64)>,
        slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
        leaves: Option<SimTime>,
    ) -> Result<(), ModelError> {
        if !self.book_migration(task, choice, slots) {
            return Ok(());
        }
        self.send_migration(task, why, src, rates, ctx, leaves)
    }

    /// The scheduler's side of a migration of `task` (Paragon §3.4): the
    /// slot stage, if given, begins it (it may decline: counted, nothing
    /// booked), then the target's slots, memory and interference are the
    /// task's from now on. Returns whether it was booked.
    fn book_migration(
        &mut self,
        task: TaskId,
        choice: Choice,
        slots: Option<&mut SlotStage>,
    ) -> bool {
        if !self.placed.contains_key(&task) {
            return false;
        }
        if let Some(stage) = slots
            && !stage.begin_move(task, choice.server)
        {
            self.migrations_declined += 1;
            return false;
        }
        let Some(p) = self.placed.get_mut(&task) else {
            return false;
        };
        p.migrating_to = Some((choice.server, choice.violation));
        let (cores, memory_mb) = (p.cores, p.memory_mb);
        self.cluster.take(choice.server, cores, memory_mb);
        if let Some(pr) = self.profiles.get(&task) {
            self.cluster
                .interference_mut(choice.server)
                .add(task, &pr.tolerated, &pr.caused);
        }
        self.refresh_pool(choice.server);
        true
    }

    /// Logs a booked migration of `task` and sends its order to hand the
    /// task over to `src` (at `leaves`, in order with the dispatches, or
    /// at once).
    fn send_migration(
        &mut self,
        task: TaskId,
        why: &'static str,
        src: ActorId,
        rates: Option<(f64, f64)>,
        ctx: &mut Ctx<'_, Msg>,
        leaves: Option<SimTime>,
    ) -> Result<(), ModelError> {
        let Some(p) = self.placed.get(&task) else {
            return Ok(());
        };
        let Some((target, _)) = p.migrating_to else {
            return Ok(());
        };
        let left_s = (rates.is_some() || p.measured).then(|| p.left_ns as f64 / 1e9);
        let world = Arc::clone(&self.world);
        let to = self.cluster.servers()[target as usize].id;
        ctx.log(
            "migrate_start",
            &MigrateLog {
                task,
                why,
                from: world.name(src),
                to: world.name(to),
                left_s,
                rate_now: rates.map(|r| r.0),
                rate_expected: rates.map(|r| r.1),
            },
        );
        let body = Body::Migrate { task };
        match leaves {
            None => self.nic.send(&world, ctx, src, body),
            Some(at) if at > ctx.now() => {
                ctx.timer(at - ctx.now(), Msg::Deferred { server: src, body })
            }
            Some(_) => self.send(ctx, src, body),
        }
    }

    /// No server suits the degraded `task` better: run it in isolation by
    /// moving its co-runners on server `i` away (§3.4), if every one of
    /// them has a server that takes it without violating any interference
    /// constraint; otherwise leave things as they are.
    fn isolate(
        &mut self,
        task: TaskId,
        i: u32,
        mut slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let others: Vec<TaskId> = self
            .placed
            .iter()
            .filter(|&(&id, p)| id != task && p.server == i && p.migrating_to.is_none())
            .filter(|&(&id, _)| !self.gangs.owns(id))
            .map(|(&id, _)| id)
            .collect();
        if others.is_empty() || others.len() > MAX_ISOLATION_MOVES {
            self.migrations_declined += 1;
            return Ok(());
        }
        let mut moves = Vec::with_capacity(others.len());
        for &other in &others {
            let Some(view) = self.placed_task(other) else {
                continue;
            };
            let slot_free = |s: u32| slots.as_deref().is_none_or(|st| st.has_room(s, &view));
            let req = Request {
                task: &view,
                profile: self.profiles.get(&other),
                allowed: Some(&slot_free),
                exclude: Some(i),
            };
            match self.placement.place(&req, &self.cluster, ctx.rng()) {
                Some(c)
                    if c.violation <= 0.0
                        && !moves
                            .iter()
                            .any(|(_, m): &(TaskId, Choice)| m.server == c.server) =>
                {
                    moves.push((other, c));
                }
                _ => {
                    self.migrations_declined += 1;
                    return Ok(());
                }
            }
        }
        self.isolations += 1;
        let src = self.cluster.servers()[i as usize].id;
        ctx.log(
            "isolate",
            &serde_json::json!({ "task": task, "moved": moves.len() }),
        );
        for (other, choice) in moves {
            let rate = self.placed.get(&other).map_or(1.0, |p| p.rate);
            let class = self.cluster.servers()[choice.server as usize].class;
            let speed = self
                .profiles
                .get(&other)
                .and_then(|p| p.speed.get(class).copied())
                .unwrap_or(1.0);
            let stage = slots.as_deref_mut();
            self.start_migration(
                other,
                "isolate",
                src,
                choice,
                Some((rate, speed)),
                stage,
                ctx,
                None,
            )?;
        }
        Ok(())
    }

    /// The cores and memory a placed task holds, as a task for placement.
    fn placed_task(&self, id: TaskId) -> Option<Task> {
        let p = self.placed.get(&id)?;
        Some(Task {
            memory_mb: p.memory_mb,
            cores: p.cores,
            ..Task::new(id, ActorId(0), 0, p.left_ns)
        })
    }

    /// The migrating task left `src` with its progress: free that server and
    /// move the task to the reserved one after the migration time.
    fn migrating(
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
        p.pool = self.pool[target as usize];
        self.placed.insert(task.id, p);
        let server = self.cluster.servers()[target as usize].id;
        if self.sends_orders {
            self.moving.insert(task.id);
        }
        ctx.timer(self.migration_time, Msg::Migrated { task, server })
    }

    fn path_names(&self, route: &Route) -> Vec<String> {
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
    fn flow_notice(
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

    fn notify_switches(
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

/// A distributed run behind ARQ with an energy-aware placement (no slot
/// stage): each unit in turn on a server `admits` holds with its slots
/// free and none of the run's units (ASPLOS'16 Figure 5), chosen by the
/// energy stage and booked with its path, so that the next unit sees it;
/// if one finds none, every booking is undone and the run waits whole.
/// Returns the servers and the ARQ pool of unit 0's.
/// The servers (indices) a slot stage's start takes: its task's, or each
/// unit's of a run, in unit order.
fn action_servers(action: &SlotAction, cluster: &ClusterView) -> Vec<u32> {
    let at = |id: ActorId| cluster.index_of(id).unwrap_or(0);
    match action {
        SlotAction::Dispatch { server, .. } | SlotAction::Preempt { server, .. } => {
            vec![at(*server)]
        }
        SlotAction::Gang { units } => units.iter().map(|(_, s)| at(*s)).collect(),
    }
}

fn start_run_placed(
    placer: &mut CorePlacer<'_>,
    units: &[Task],
    admits: &dyn Fn(u32) -> bool,
    now: SimTime,
    rng: &mut ActorRng,
) -> Option<(Vec<u32>, usize)> {
    let mut servers: Vec<u32> = Vec::with_capacity(units.len());
    let mut pool = 0;
    for unit in units {
        let cluster = &placer.core.cluster;
        let room: Vec<bool> = (0..cluster.servers().len() as u32)
            .map(|i| {
                admits(i)
                    && !servers.contains(&i)
                    && cluster.servers()[i as usize].fits(unit, false)
            })
            .collect();
        let server = placer
            .choose(unit, &|i| room[i as usize], rng)
            .filter(|&i| placer.start_unit(unit, i, now, rng));
        let Some(server) = server else {
            for (u, &i) in units.iter().zip(&servers) {
                placer.withdraw(u, i);
            }
            return None;
        };
        if servers.is_empty() {
            pool = placer.pool;
        }
        servers.push(server);
    }
    Some((servers, pool))
}

/// ARQ band of a quality `q` in 0–100 over `classes` bands, 0 the highest
/// (Paragon §4.1).
fn band(q: f64, classes: usize) -> usize {
    let width = 100.0 / classes.max(1) as f64;
    let b = ((100.0 - q.clamp(0.0, 100.0)) / width) as usize;
    b.min(classes.saturating_sub(1))
}
