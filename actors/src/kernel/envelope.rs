use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

/// Stable numeric id of an actor within a run, assigned in scenario order.
/// People never see it: they see the actor's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ActorId(pub u32);

impl ActorId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One event: a message from `src` to `dst` delivered at `deliver_at`.
///
/// `src_seq` counts the envelopes `src` has emitted, so `(deliver_at, src,
/// src_seq)` is unique and totally orders every event in a run. A timer is an
/// envelope an actor sends to itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope<M> {
    pub deliver_at: SimTime,
    pub src: ActorId,
    pub dst: ActorId,
    pub src_seq: u64,
    pub payload: M,
    /// Engine bookkeeping for the synchronisation floor, not part of the
    /// event: the longest chain of cross-partition messages behind this one
    /// (its sender's chain, plus one if it crosses to another partition). It
    /// depends on the partitioning, so it never reaches a model's output:
    /// models do not read it, and [`Envelope::key`] leaves it out.
    pub causal_hops: u32,
}

impl<M> Envelope<M> {
    /// The key that orders events (MODEL.md §2).
    #[inline]
    pub fn key(&self) -> (SimTime, ActorId, u64) {
        (self.deliver_at, self.src, self.src_seq)
    }
}
