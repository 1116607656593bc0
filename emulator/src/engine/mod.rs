//! The engine: hosts actors in partitions and advances them through virtual
//! time in conservative windows (MODEL.md §2).
//!
//! Every partition runs the same loop, whether there is one of them or many:
//!
//! 1. agree with all partitions on `t`, the earliest pending event anywhere,
//!    and on `E_q`, the earliest time the events other partitions will
//!    handle (pending or in flight) can make a message arrive in `q` (at least
//!    `t + L`, `L` the lookahead; further where the model's links put its
//!    actors several hops from `q`, see [`horizon`]);
//! 2. handle every local event earlier than `E_q` in `(deliver_at, src,
//!    src_seq)` order, lowering `E_q` whenever an envelope leaves for
//!    another partition to the earliest time what it leads to could come
//!    back (`q`'s own events reach `q` from outside only that way, and an
//!    event not yet handled is later than every one handled);
//! 3. hand envelopes for actors elsewhere to the partitions hosting them in
//!    the next round, whose reports make the next agreement. A partition with
//!    nothing to do sits rounds out without changing any agreement (see
//!    [`rounds`]).
//!
//! Why this equals a sequential run in global timestamp order: nothing sent
//! during a window can be due inside the receiver's window (the distances
//! are checked on every message with several partitions, and `Ctx::send`
//! enforces `L`). An actor's events in a window are therefore exactly those
//! pending when the window opened plus what its own partition sent it, handled
//! in the same total order as a sequential run would. Partitioning changes
//! who hosts an actor and how many windows the run takes, never what an actor
//! sees. A single partition has no outside: its one window is the whole run.

pub mod balance;
pub mod horizon;
pub(crate) mod partition;
pub(crate) mod queue;
pub mod reference;
pub mod rounds;
mod threads;
pub mod transport;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dcemu_actors::kernel::{Metrics, ModelError};
use dcemu_topology::SimTime;

pub use horizon::{Distances, Horizon, Reach};
pub use partition::Partition;
pub use threads::run_threads;
pub use transport::{
    Frame, InMemoryTransport, Received, Report, Transport, TransportError, Wake, in_memory_mesh,
};

/// The most partitions one process hosts; each is a thread.
pub const MAX_PARTITIONS: usize = 256;

/// How an engine run is set up.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The lookahead `L` in ns: the minimum latency of any message between
    /// two actors. Must be > 0.
    pub lookahead: SimTime,
    /// Events at or after this time are not handled.
    pub end: SimTime,
    /// Scenario seed; each actor's stream is derived from it and its name.
    pub seed: u64,
    /// Where actors' logs go.
    pub logs: Logs,
    /// Who can message whom and how fast: partitions see further ahead
    /// than `lookahead` where messages follow a network (see [`horizon`]).
    pub reach: Arc<Reach>,
    /// Describe every actor at the end ([`ActorOutput::state`]): only
    /// `dcemu replay --dump` reads them, and at 100,000 servers they are
    /// hundreds of MB at the moment the run's memory peaks.
    pub states: bool,
    /// Each actor's measured work ([`balance`]): the threads' blocks are
    /// cut by it instead of by the count of actors. Never changes a result.
    pub weights: Option<Arc<Vec<u64>>>,
}

/// Where actors' logs go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Logs {
    /// Not kept.
    Off,
    /// Kept in memory and returned in [`ActorOutput::log`].
    InMemory,
    /// Appended to `<dir>/<actor name>.jsonl` whenever a partition has more
    /// than [`LOG_BUDGET_BYTES`] buffered, so memory stays bounded however
    /// long the run. Every actor gets a file, empty or not.
    Files(PathBuf),
}

/// Log bytes a partition buffers before writing them to files.
pub const LOG_BUDGET_BYTES: usize = 16 << 20;

/// What one actor leaves behind.
#[derive(Debug)]
pub struct ActorOutput {
    pub name: String,
    /// The actor's log with [`Logs::InMemory`] (empty with [`Logs::Off`]);
    /// `None` when it was written to a file.
    pub log: Option<Vec<u8>>,
    pub metrics: Metrics,
    /// [`Actor::describe`] at the end of the run, before `finish`, with
    /// [`EngineConfig::states`] (else null): for `dcemu replay --dump`,
    /// never digested.
    pub state: serde_json::Value,
    /// Events this actor handled (timers included): the same on every
    /// partitioning.
    pub events: u64,
    /// Wall time spent handling its events, estimated from one event in
    /// [`partition::BUSY_SAMPLE`]: machine-dependent, never digested; the
    /// measured work `--balance-from` splits a later run by.
    pub busy_ns: u64,
    /// Bytes the actor held at the end of virtual time, before `finish`:
    /// what `finish` and dropping the actor gave back plus what its
    /// metrics hold ([`crate::heap::given_back_since`]), and its slot in
    /// the partition (the actor's inline state, its random stream).
    /// Machine-dependent (allocator and layout), never digested; what
    /// `--balance-by memory` splits nodes by.
    pub held_bytes: u64,
}

/// The result of a run, independent of how it was partitioned.
#[derive(Debug)]
pub struct EngineOutput {
    /// Per actor, in actor-id order.
    pub actors: Vec<ActorOutput>,
    /// Events handled (timers included).
    pub events: u64,
    /// Windows the run took (depends on the workload and the partitioning).
    pub windows: u64,
    /// `end` if events remained at the end, else the time of the last event.
    pub virtual_end: SimTime,
    /// The longest chain of messages between partitions behind any event:
    /// every one crosses the transport in turn, so no conservative protocol
    /// on this partitioning finishes in less than this many one-way
    /// latencies (0 with one partition).
    pub causal_steps: u64,
    /// Per partition, in order: how the work and the waiting fell (wall
    /// clock; for `run.json`, never digested).
    pub loads: Vec<PartitionLoad>,
}

/// One partition's share of a run: the events it handled, and the wall
/// time it spent exchanging with its peers (sending, and waiting for the
/// slowest); with several partitions, how far the split is from even.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PartitionLoad {
    pub events: u64,
    /// Windows it took part in (it sits out those with nothing for it).
    pub windows: u64,
    pub exchange_wall: std::time::Duration,
}

impl EngineOutput {
    /// All actors' metrics merged in actor-id order, moved out of the
    /// actors' outputs (a long run's series are too large to copy).
    pub fn take_metrics(&mut self) -> Metrics {
        let mut all = Metrics::default();
        for a in &mut self.actors {
            all.merge(std::mem::take(&mut a.metrics));
        }
        all
    }
}

/// A model error as the run's error says it: where and when, and for an
/// external program (which names itself) just when.
fn model_message(actor: &str, at: SimTime, source: &ModelError) -> String {
    let t = format!("t={}.{:09} s", at / 1_000_000_000, at % 1_000_000_000);
    match source {
        ModelError::External(_) => format!("{source} (at {t})"),
        _ => format!("model error in actor {actor} at {t}: {source}"),
    }
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid engine setup: {0}")]
    Setup(String),
    #[error("{}", model_message(.actor, *.at, .source))]
    Model {
        actor: String,
        at: SimTime,
        source: ModelError,
    },
    #[error("partition {partition}: {source}")]
    Transport {
        partition: usize,
        source: TransportError,
    },
    #[error("cannot write the log of actor {actor} to {}: {source}", .path.display())]
    Io {
        actor: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("partition {partition} panicked: {message}")]
    Panicked { partition: usize, message: String },
}

/// Live counters a progress display may read while the run goes on.
#[derive(Debug, Default)]
pub struct Progress {
    /// Start of the window each partition is in.
    pub vtime: Vec<AtomicU64>,
    /// Events handled by each partition.
    pub events: Vec<AtomicU64>,
    pub done: AtomicBool,
}

impl Progress {
    pub fn new(partitions: usize) -> Arc<Self> {
        Arc::new(Progress {
            vtime: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
            events: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
            done: AtomicBool::new(false),
        })
    }

    pub fn virtual_time(&self) -> SimTime {
        self.vtime
            .iter()
            .map(|v| v.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }

    pub fn events(&self) -> u64 {
        self.events.iter().map(|e| e.load(Ordering::Relaxed)).sum()
    }
}

/// Assigns actors to `partitions` contiguous blocks of ids (as even as
/// possible), so neighbours in the scenario stay together.
pub fn contiguous_assignment(actors: usize, partitions: usize) -> Vec<usize> {
    let partitions = partitions.max(1);
    (0..actors)
        .map(|i| i * partitions / actors.max(1))
        .collect()
}

/// Assigns actors to partitions for `reach`: contiguous blocks of ids, as
/// [`contiguous_assignment`] does, over the actors that are not relays,
/// then each relay (switch) to where most of its neighbours are
/// ([`horizon::place_relays`]). Without enough leaves to go round (a ring,
/// say), plain contiguous blocks of all actors.
pub fn reach_assignment(reach: &Reach, actors: usize, partitions: usize) -> Vec<usize> {
    weighted_reach_assignment(reach, actors, partitions, None)
}

/// [`reach_assignment`], the leaves' blocks cut by `weights` (one per
/// actor, [`balance::weighted_blocks`]) when given, each relay's weight
/// moved onto the leaves it will follow ([`balance::cut_twice`]).
pub fn weighted_reach_assignment(
    reach: &Reach,
    actors: usize,
    partitions: usize,
    weights: Option<&[u64]>,
) -> Vec<usize> {
    let weights = weights.filter(|w| w.len() == actors);
    let plain = || match weights {
        Some(w) => balance::weighted_blocks(w, partitions),
        None => contiguous_assignment(actors, partitions),
    };
    let Reach::Graph(links) = reach else {
        return plain();
    };
    if links.len() != actors {
        return plain();
    }
    let leaves: Vec<usize> = (0..actors).filter(|&x| links[x].len() <= 1).collect();
    if leaves.len() < partitions {
        return plain();
    }
    let cut = |blocks: Vec<usize>| {
        let mut assignment = vec![0; actors];
        for (&x, &p) in leaves.iter().zip(&blocks) {
            assignment[x] = p;
        }
        horizon::place_relays(reach, &mut assignment, partitions);
        assignment
    };
    match weights {
        Some(w) => balance::cut_twice(reach, w, |folded| {
            let leaf_weights: Vec<u64> = leaves.iter().map(|&x| folded[x]).collect();
            cut(balance::weighted_blocks(&leaf_weights, partitions))
        }),
        None => cut(contiguous_assignment(leaves.len(), partitions)),
    }
}

#[cfg(test)]
mod tests;
