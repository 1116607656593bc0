//! The admission stage: which waiting task the scheduler tries to place
//! next, and on which servers it may go. Adding a policy is one type
//! implementing [`Admission`] in this folder, one variant of
//! `AdmissionKind` and one line of `registry.rs`; or, from a crate of
//! your own, an [`AdmissionPolicy`] and [`register`] (`custom.rs`,
//! docs/scheduler.md, "Adding a policy").
//!
//! * [`Fifo`]: one queue in arrival order; its head waits until a server
//!   has room (Paragon's application-agnostic admission, ARQ §2).
//! * [`ArqAdmission`]: ARQ (Paragon §4, ARQ §3): a queue per class of
//!   resource quality, each served by a pool of servers, with diversions up
//!   and down so that no application waits past its QoS slack.
//! * [`EasyBackfill`]: EASY backfilling (Lifka 1995; Mu'alem and Feitelson
//!   2001): FCFS whose blocked head gets a reservation, and later tasks may
//!   start now where they do not delay it.

pub mod arq;
pub mod custom;
mod easy;
mod fifo;
mod registry;

pub use arq::ArqAdmission;
pub use custom::{AdmissionContext, AdmissionPolicy, register};
pub use easy::EasyBackfill;
pub use fifo::Fifo;
pub use registry::build;

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::task::{Task, TaskId};

/// What a placement attempt made of a task.
pub enum Attempt {
    /// Dispatched to a server of this ARQ pool (pool 0 without ARQ), on
    /// the servers `on` (a run's parts in unit order; one for a task).
    Placed { pool: usize, on: Vec<u32> },
    /// No server it may use has room now: it holds the head of its queue.
    NoRoom,
    /// No server could hold it now even if none of the scheduler's tasks
    /// ran there (its cores exceed every server's slots, or what a primary
    /// tenant's use and reserve leave, harvesting §5.3): no departure can
    /// make room for it, so it waits without holding the head of its
    /// queue, and the tasks behind it are offered (Borg and YARN pass a
    /// request no machine can take; a head that blocks on it blocks for as
    /// long as the primary tenant keeps its cores).
    TooLarge,
}

/// What the scheduler knows about the servers, for admission decisions.
pub struct PoolState {
    /// Per pool: servers running something, and servers with a free slot.
    pub busy: Vec<u32>,
    pub free: Vec<u32>,
    /// The machine as a backfilling stage reads it (built only for one).
    pub machine: Option<Machine>,
}

/// The cluster as EASY backfilling reads it: what is free now and when
/// what runs should end.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    /// Per server: free slots now, and (cores, slots) for
    /// [`crate::slot_share::slots_for`].
    pub free: Vec<u32>,
    pub shape: Vec<(u32, u32)>,
    /// Running tasks: when each should end by (its start plus its requested
    /// time, else its work), its server and the slots it holds there.
    pub running: Vec<(SimTime, u32, u32)>,
    /// Queued runs (by unit 0): the threads of their other parts.
    pub parts: BTreeMap<TaskId, Vec<u32>>,
}

impl Machine {
    /// Slots a task of `threads` threads takes on server `i`.
    pub fn slots_at(&self, i: u32, threads: u32) -> u32 {
        slots_at(&self.shape, i, threads)
    }
}

/// Slots a task of `threads` threads takes on server `i` of `shape`
/// ((cores, slots) per server; one core, one slot if unknown).
pub fn slots_at(shape: &[(u32, u32)], i: u32, threads: u32) -> u32 {
    let (cores, slots) = shape.get(i as usize).copied().unwrap_or((1, 1));
    crate::slot_share::slots_for(threads, cores, slots)
}

/// Where a placement attempt may go.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    /// Servers of these pools only (`None`: any server).
    pub pools: Option<&'a [usize]>,
    /// Only a server the placement expects to meet the task's QoS (no
    /// interference constraint violated, predicted speed on its
    /// configuration at least the QoS share): ARQ's "appropriate server".
    pub strict: bool,
    /// Only the servers (indices) this holds (`None`: any): where a
    /// backfilled task leaves the reservation's slots alone.
    pub servers: Option<&'a dyn Fn(u32) -> bool>,
}

impl Scope<'_> {
    pub const ANY: Scope<'static> = Scope {
        pools: None,
        strict: false,
        servers: None,
    };

    /// Whether server `i`, of ARQ pool `pool`, is within the scope.
    pub fn admits(&self, i: u32, pool: usize) -> bool {
        self.pools.is_none_or(|ps| ps.contains(&pool)) && self.servers.is_none_or(|ok| ok(i))
    }

    /// Whether the scope bounds the servers at all.
    pub fn bounded(&self) -> bool {
        self.pools.is_some() || self.servers.is_some()
    }
}

/// The place callback: tries to dispatch `task` (which first reached the
/// scheduler at `arrived`) within `scope`.
pub type PlaceFn<'a> = dyn FnMut(&Task, SimTime, Scope<'_>) -> Result<Attempt, ModelError> + 'a;

/// An admission policy: it holds the tasks waiting to be placed and
/// decides which the scheduler tries next, and where ([`Scope`]). The
/// built-ins are `fifo.rs`, `arq.rs` and `easy.rs`; a crate adds its own
/// through [`register`].
///
/// Determinism: a policy decides from its arguments alone (the virtual
/// `now`, the tasks, [`PoolState`]), never from a clock, the process or
/// an iteration order that is not the tasks' own, so that its runs give
/// the same digest on any partitioning.
pub trait Admission: Send {
    /// A task is ready to be placed: `profile` is its classification, if
    /// any; `overhead_ns` what profiling cost it (ARQ's P_a).
    fn enqueue(
        &mut self,
        task: Task,
        arrived: SimTime,
        profile: Option<&Profile>,
        overhead_ns: u64,
        now: SimTime,
        pools: &PoolState,
    );

    /// A task that was killed or evicted goes back, ahead of the others.
    fn requeue(&mut self, task: Task, arrived: SimTime);

    /// Places waiting tasks through `place` until none more can go.
    fn schedule(
        &mut self,
        now: SimTime,
        pools: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError>;

    /// When the stage next wants [`Admission::schedule`] called even if
    /// nothing else happens (an ARQ switching time).
    fn next_wakeup(&self) -> Option<SimTime>;

    /// Tasks waiting.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn finish(&self, out: &mut Metrics);

    /// Number of server pools (1 without ARQ).
    fn pools(&self) -> usize {
        1
    }

    /// Pool of a server whose resource quality is `q` (0–100).
    fn pool_of(&self, _q: f64) -> usize {
        0
    }

    /// A busy period of a server of `pool` ended after `seconds` (ARQ §3.2).
    fn record_busy(&mut self, _pool: usize, _seconds: f64) {}

    /// Whether it reads [`PoolState::machine`] (the scheduler then builds
    /// it for every pass: free slots and when running tasks should end, as
    /// EASY backfilling reads them). False by default.
    fn reads_machine(&self) -> bool {
        false
    }
}
