//! The contract between model actors and the engine that drives them.
//!
//! Actors are plain state machines in the sans-IO style of `quinn-proto`: the
//! engine hands an actor one [`Envelope`] at a time together with a [`Ctx`],
//! and the actor answers by sending envelopes, setting timers, drawing from its
//! own random stream and appending to its own log. Actors share nothing; the
//! only way one actor influences another is a message with a modeled latency of
//! at least the lookahead `L` (MODEL.md §2), which [`Ctx::send`] enforces.

mod ctx;
mod envelope;
mod log;
mod metrics;
mod rng;

pub use ctx::Ctx;
pub use envelope::{ActorId, Envelope};
pub use log::ActorLog;
pub use metrics::{Metrics, Step, Steps};
pub use rng::{ActorRng, actor_rng};

use dcemu_topology::SimTime;

/// A model actor: a deterministic state machine driven by the engine.
///
/// The engine calls [`Actor::start`] once at time 0, then [`Actor::handle`]
/// for each event addressed to the actor in the total order
/// `(deliver_at, src, src_seq)`, and finally [`Actor::finish`] when the run
/// ends. Nothing but the envelope, the context and the actor's own state may
/// influence what it does.
pub trait Actor: Send + 'static {
    type Msg: Send + 'static;

    /// Called once at virtual time 0, before any event: arm the first timers.
    fn start(&mut self, _ctx: &mut Ctx<'_, Self::Msg>) -> Result<(), ModelError> {
        Ok(())
    }

    /// Handles one event (a message from another actor or one of its own timers).
    fn handle(
        &mut self,
        event: Envelope<Self::Msg>,
        ctx: &mut Ctx<'_, Self::Msg>,
    ) -> Result<(), ModelError>;

    /// Called once when the run ends, with the events addressed to this actor
    /// that were never delivered (sorted in delivery order), so that the actor
    /// can account for work still in flight.
    fn finish(&mut self, _undelivered: &[Envelope<Self::Msg>], _end: SimTime, _out: &mut Metrics) {}

    /// A read-only description of the actor's state for people (`dcemu
    /// replay --until T --dump NAME`); the engine asks for it when the run
    /// ends, before [`Actor::finish`]. It never reaches the results.
    fn describe(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Why a model actor could not go on. The engine stops the run and reports it
/// with the actor's name and the virtual time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A message to another actor with a latency below the lookahead: the
    /// window protocol would deliver it too late, so it is refused rather than
    /// silently clamped.
    #[error(
        "message to actor #{dst} with latency {latency_ns} ns, below the minimum link latency \
         (lookahead) of {lookahead_ns} ns"
    )]
    LatencyBelowLookahead {
        dst: u32,
        latency_ns: u64,
        lookahead_ns: u64,
    },
    /// A message to an actor id that does not exist in this run.
    #[error("message to actor #{dst}, which does not exist (the run has {actors} actors)")]
    NoSuchActor { dst: u32, actors: u32 },
    /// Virtual time would pass the end of representable time.
    #[error("event time overflows 64-bit nanoseconds")]
    TimeOverflow,
    /// A model invariant broke; the message says which.
    #[error("invariant violated: {0}")]
    Invariant(String),
    /// An input the model reads as it runs (a streamed trace) is wrong; the
    /// message names the file, line and column.
    #[error("{0}")]
    Input(String),
    /// The external scheduler program misbehaved (docs/external-scheduler.md);
    /// the message names the program, the request and the problem.
    #[error("{0}")]
    External(String),
}
