//! An envelope as the engine's heaps hold it, ordered so that
//! `std::collections::BinaryHeap` pops the earliest `(deliver_at, src,
//! src_seq)` first.

use dcemu_actors::kernel::{ActorId, Envelope};
use dcemu_topology::SimTime;

type Key = (SimTime, ActorId, u64);

/// An envelope in the queue. The key sits beside a boxed envelope: sifting
/// then moves 32 bytes instead of a whole message (over 250 bytes for the
/// model's `Msg`), which dominated large runs.
pub(crate) struct Queued<M> {
    key: Key,
    env: Box<Envelope<M>>,
}

impl<M> Queued<M> {
    pub(crate) fn new(env: Envelope<M>) -> Self {
        Queued {
            key: env.key(),
            env: Box::new(env),
        }
    }

    pub(crate) fn deliver_at(&self) -> SimTime {
        self.key.0
    }

    pub(crate) fn dst(&self) -> ActorId {
        self.env.dst
    }

    pub(crate) fn into_inner(self) -> Envelope<M> {
        *self.env
    }
}

impl<M> PartialEq for Queued<M> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<M> Eq for Queued<M> {}
impl<M> PartialOrd for Queued<M> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
/// Reversed, so `std::collections::BinaryHeap` pops the earliest first.
impl<M> Ord for Queued<M> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}
