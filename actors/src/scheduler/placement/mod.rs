//! The placement stage: given a task and the scheduler's view of the
//! cluster, pick a server. Each policy is one file of this folder
//! implementing [`Placement`]; [`build`] (`registry.rs`) maps a
//! scenario's `scheduler.placement` to it (docs/scheduler.md walks through
//! adding one).

mod anneal;
mod best_fit;
pub mod custom;
mod energy_aware;
mod external;
pub mod greedy;
mod least_loaded;
mod paragon;
mod random;
mod registry;
pub mod yarn;

pub use anneal::Annealing;
pub use best_fit::BestFit;
pub use custom::{
    PlacementPolicy, PolicyContext, RegisterError, UnknownPolicy, register, registered,
};
pub use energy_aware::EnergyAware;
pub use external::External;
pub use least_loaded::LeastLoaded;
pub use paragon::{Awareness, ParagonPlacement, expected_rate};
pub use random::RandomPlacement;
pub use registry::build;

use std::collections::BTreeMap;

use dcemu_topology::Route;

use crate::kernel::ActorRng;
use crate::profiling::Profile;
use crate::task::{Task, TaskId};

use super::annealing::AnnealingStage;
pub use super::cluster_view::ClusterView;
use super::energy::EnergyStage;

/// What the scheduler asks the placement stage.
/// A path a task's flow could take from a core switch down to a server
/// (thesis §4.2.2), offered to a placement that chooses paths.
#[derive(Clone, Debug)]
pub struct PathOption {
    pub route: Route,
    /// The switches it crosses, by name, core first.
    pub switches: Vec<String>,
    /// Bandwidth free on its busiest link, bits per second.
    pub free_bps: u64,
}

pub struct Request<'a> {
    pub task: &'a Task,
    /// The task's classification, if it was classified (Paragon §2).
    pub profile: Option<&'a Profile>,
    /// Servers the admission stage allows now (ARQ pools); `None`: all.
    pub allowed: Option<&'a dyn Fn(u32) -> bool>,
    /// A server not to choose (the one a migrating task leaves).
    pub exclude: Option<u32>,
}

impl Request<'_> {
    /// Whether server `i` may be chosen at all.
    pub fn may_use(&self, i: u32) -> bool {
        self.exclude != Some(i) && self.allowed.is_none_or(|ok| ok(i))
    }

    /// The servers with a free slot that may be chosen and have the task's
    /// slots free (and its memory, with `memory`), in the view's order.
    pub fn fitting<'c>(
        &'c self,
        cluster: &'c ClusterView,
        memory: bool,
    ) -> impl Iterator<Item = u32> + 'c {
        let servers = cluster.servers();
        cluster
            .with_free()
            .iter()
            .copied()
            .filter(move |&i| self.may_use(i) && servers[i as usize].fits(self.task, memory))
    }
}

/// A placement decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// Index into `cluster.servers()`.
    pub server: u32,
    /// How far the chosen server is from the policy's constraints (Paragon:
    /// the negative parts of D1 and D2, in score points; 0 when none).
    pub violation: f64,
}

impl Choice {
    pub fn clean(server: u32) -> Self {
        Choice {
            server,
            violation: 0.0,
        }
    }
}

/// A server where a task may start by evicting `victim`, a running task
/// the preemption stage admits as a victim for it (docs/scheduler.md, "Slot
/// stages and placement").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VictimOption {
    pub server: u32,
    pub victim: TaskId,
    /// Memory the victim holds there (the scheduler's own count), MB.
    pub victim_memory_mb: u64,
}

/// A running task as the slot stage and the scheduler know it, offered to
/// a placement that picks victims itself ([`Placement::pick_victim`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningTask {
    pub server: u32,
    pub task: TaskId,
    pub priority: u8,
    /// When its current execution started.
    pub started: dcemu_topology::SimTime,
    pub cores: u32,
    pub memory_mb: u64,
    /// Whether the preemption stage admits it as a victim of the request.
    pub admissible: bool,
}

/// A task the scheduler placed and has not heard the end of, offered to a
/// placement that moves running tasks ([`Placement::set_running`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlacedTask {
    pub task: TaskId,
    pub server: u32,
    /// When it was dispatched there (or its migration there began).
    pub since: dcemu_topology::SimTime,
    pub cores: u32,
    pub memory_mb: u64,
    /// Whether a migration of it is under way.
    pub migrating: bool,
}

/// A placement policy: every policy of `scheduler.placement`, built-in or a
/// user's, is reached through this one trait (docs/scheduler.md, "Adding a
/// policy"). A policy that keeps more than a choice per task (the
/// energy-aware ones' bandwidth ledger and switch states, annealing's
/// batches of distributed runs) says so through [`Placement::energy`] and
/// [`Placement::annealing`], and the scheduler asks it through them.
pub trait Placement: Send {
    /// The policy's name as a scenario writes it (`scheduler.placement`).
    fn name(&self) -> &str;

    /// The server that should run `req.task`, or `None` to leave it queued.
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice>;

    /// Reports what the policy counted over the run.
    fn finish(&self, _out: &mut crate::kernel::Metrics) {}

    /// Server `server`'s report at `now` was just recorded in `cluster`
    /// (for policies that learn from reports over time, such as YARN-H's
    /// clustering service).
    fn observe(
        &mut self,
        _server: u32,
        _cluster: &ClusterView,
        _now: dcemu_topology::SimTime,
        _rng: &mut ActorRng,
    ) {
    }

    /// Whether the policy reads the servers' reports ([`ClusterView::report`]):
    /// a report then counts as a change of what it sees, and a task that
    /// found no room is tried again.
    fn reads_reports(&self) -> bool {
        false
    }

    /// Whether the policy has a criterion of its own among servers whose
    /// free slot comes from evicting a victim ([`Placement::choose_victim`]).
    fn scores_victims(&self) -> bool {
        false
    }

    /// Among `options` (one per server holding victims the preemption
    /// stage admits for `req.task`; the first is that stage's own choice:
    /// the thesis's MRS / RND / LRS over the whole cluster, §6.2.3.3), the
    /// one to evict, by the policy's criterion: an index into `options`,
    /// or `None` to keep the first. Policies with a criterion keep the
    /// first among equals.
    fn choose_victim(
        &mut self,
        _req: &Request<'_>,
        _cluster: &ClusterView,
        _options: &[VictimOption],
    ) -> Option<usize> {
        None
    }

    /// Whether the policy picks the victim itself among every admissible
    /// one, in place of the preemption stage's eviction rule (an external
    /// program deciding the preemption stage). Then the stage still
    /// decides whether the task may evict at all, and which tasks it may.
    fn picks_victims(&self) -> bool {
        false
    }

    /// The victim `req.task` evicts: an index into `running` (every task
    /// running, `admissible` marking the stage's candidates) of an
    /// admissible one, or `None`: the task waits.
    fn pick_victim(
        &mut self,
        _req: &Request<'_>,
        _cluster: &ClusterView,
        _running: &[RunningTask],
        _rng: &mut ActorRng,
    ) -> Option<usize> {
        None
    }

    /// The scheduler is handling an event at `now` (for a policy that tells
    /// a program outside the model the time of its requests).
    fn at(&mut self, _now: dcemu_topology::SimTime) {}

    /// Virtual time the latest decision took: its dispatch leaves the
    /// scheduler that long after the decision point (0: at once).
    fn decision_latency(&self) -> u64 {
        0
    }

    /// Why the policy cannot go on, once (a program outside the model that
    /// misbehaved); the scheduler stops the run with it.
    fn take_error(&mut self) -> Option<crate::kernel::ModelError> {
        None
    }

    /// Whether the scheduler's view should follow the servers' power
    /// states ([`ClusterView::track_power`]): a policy that orders servers
    /// to sleep and wake (an external program under protocol v3).
    fn tracks_power(&self) -> bool {
        false
    }

    /// The power orders the policy decided since the last call, checked
    /// against the view: the scheduler books them in its view and sends
    /// them to the servers, in this order.
    fn take_power(&mut self) -> Vec<crate::external::PowerOrder> {
        Vec::new()
    }

    /// Whether the policy moves running tasks: the scheduler then tells it
    /// every placed task before each request ([`Placement::set_running`])
    /// and carries out its [`Placement::take_migrations`].
    fn wants_running(&self) -> bool {
        false
    }

    /// The tasks placed now, by id (before a `place` call).
    fn set_running(&mut self, _running: Vec<PlacedTask>) {}

    /// The migrations the policy decided since the last call, checked
    /// against the view: the scheduler reserves the target's slots and
    /// asks the task's server to hand it over (Paragon §3.4).
    fn take_migrations(&mut self) -> Vec<crate::external::MigrateOrder> {
        Vec::new()
    }

    /// Whether the policy chooses the path of each task's flow with its
    /// server: the scheduler then offers it the paths before each `place`
    /// call for a task with a flow ([`Placement::set_paths`]) and reserves
    /// the one it names ([`Placement::take_path`]).
    fn chooses_paths(&self) -> bool {
        false
    }

    /// Every path the task's flow could take to each server with a free
    /// slot, by server index (before a `place` call for a task with a
    /// flow).
    fn set_paths(&mut self, _paths: BTreeMap<u32, Vec<PathOption>>) {}

    /// The path the latest `place` call named for the task's flow, if it
    /// named one (else the scheduler reserves its own choice).
    fn take_path(&mut self) -> Option<Route> {
        None
    }

    /// Whether the policy decides at the moments servers go idle
    /// ([`Placement::idle`]): the scheduler then notes which servers go
    /// idle and asks it at the end of the event, unless a placement
    /// request showed them idle already.
    fn decides_at_idle(&self) -> bool {
        false
    }

    /// Servers `idle` (indices, ascending) just went idle in the
    /// scheduler's view, with `queued` tasks waiting: the policy may
    /// decide power orders and migrations ([`Placement::take_power`],
    /// [`Placement::take_migrations`]), which take its
    /// [`Placement::decision_latency`] as after [`Placement::place`].
    fn idle(&mut self, _idle: &[u32], _queued: usize, _cluster: &ClusterView, _rng: &mut ActorRng) {
    }

    /// Log entries (`kind`, fields) the policy made since the last call;
    /// the scheduler writes them to its log.
    fn take_logs(&mut self) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }

    /// The energy-aware stage the policy places through (GEMS, BEPS, BRFS,
    /// RRS; thesis chapters 3-4): its queue under `fifo` without a slot
    /// stage, its path choice and booking behind ARQ or a slot stage, the
    /// flows it reserves. `None` for every other policy.
    fn energy(&mut self) -> Option<&mut EnergyStage> {
        None
    }

    /// [`Placement::energy`], to read.
    fn energy_ref(&self) -> Option<&EnergyStage> {
        None
    }

    /// The stage that places distributed runs by simulated annealing, a
    /// batch of runs at a time (ASPLOS'16 §5): `annealing`. `None` for
    /// every other policy.
    fn annealing(&mut self) -> Option<&mut AnnealingStage> {
        None
    }

    /// [`Placement::annealing`], to read.
    fn annealing_ref(&self) -> Option<&AnnealingStage> {
        None
    }
}
