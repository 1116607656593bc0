//! A partition's pending events: a binary min-heap on
//! `(deliver_at, src, src_seq)` whose layout is ours, so a partition can
//! visit just its earliest events (those that bound its [`Horizon`]) without
//! popping them.
//!
//! [`Horizon`]: super::horizon::Horizon

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
/// Reversed, so `std::collections::BinaryHeap` (the reference loop) pops
/// the earliest first.
impl<M> Ord for Queued<M> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

/// Min-heap of [`Queued`] envelopes: `items[i]` is no later than its
/// children `items[2i + 1]` and `items[2i + 2]`.
pub(crate) struct EventQueue<M> {
    items: Vec<Queued<M>>,
    /// Scratch stack of [`EventQueue::visit_before`].
    stack: Vec<usize>,
}

impl<M> Default for EventQueue<M> {
    fn default() -> Self {
        EventQueue {
            items: Vec::new(),
            stack: Vec::new(),
        }
    }
}

impl<M> EventQueue<M> {
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Time of the earliest event.
    #[inline]
    pub(crate) fn next_time(&self) -> Option<SimTime> {
        self.items.first().map(|q| q.key.0)
    }

    #[inline]
    pub(crate) fn push(&mut self, q: Queued<M>) {
        self.items.push(q);
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.items[parent].key <= self.items[i].key {
                break;
            }
            self.items.swap(parent, i);
            i = parent;
        }
    }

    /// Removes the earliest event.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Queued<M>> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        // sift the moved leaf down to the bottom along the smaller
        // children, then back up: fewer comparisons than a plain sift-down,
        // as a leaf usually belongs near the bottom
        let n = self.items.len();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.items[right].key < self.items[left].key {
                right
            } else {
                left
            };
            self.items.swap(i, child);
            i = child;
        }
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.items[parent].key <= self.items[i].key {
                break;
            }
            self.items.swap(parent, i);
            i = parent;
        }
        Some(top)
    }

    /// Calls `f` on every event earlier than the cutoff, in no particular
    /// order; `f` returns the cutoff for what is still to be visited (it may
    /// only shrink it). Visits those events and at most their direct
    /// children, thanks to the heap order.
    pub(crate) fn visit_before(
        &mut self,
        mut cutoff: SimTime,
        mut f: impl FnMut(&Queued<M>) -> SimTime,
    ) {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        if !self.items.is_empty() {
            stack.push(0);
        }
        while let Some(i) = stack.pop() {
            let q = &self.items[i];
            if q.key.0 >= cutoff {
                continue;
            }
            cutoff = cutoff.min(f(q));
            for child in [2 * i + 1, 2 * i + 2] {
                if child < self.items.len() {
                    stack.push(child);
                }
            }
        }
        self.stack = stack;
    }

    /// Every event, earliest first.
    pub(crate) fn into_sorted(mut self) -> Vec<Envelope<M>> {
        let mut out = Vec::with_capacity(self.items.len());
        while let Some(q) = self.pop() {
            out.push(q.into_inner());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(t: SimTime, src: u32, seq: u64) -> Queued<()> {
        Queued::new(Envelope {
            deliver_at: t,
            src: ActorId(src),
            dst: ActorId(0),
            src_seq: seq,
            payload: (),
        })
    }

    #[test]
    fn pops_in_total_order_like_the_standard_heap() {
        let mut ours = EventQueue::default();
        let mut std_heap = std::collections::BinaryHeap::new();
        let mut x: u64 = 12345;
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = (x >> 33) % 500;
            let src = ((x >> 20) % 7) as u32;
            ours.push(q(t, src, i));
            std_heap.push(q(t, src, i));
            if i % 3 == 0 {
                assert_eq!(ours.pop().map(|e| e.key), std_heap.pop().map(|e| e.key));
            }
        }
        while let Some(e) = std_heap.pop() {
            assert_eq!(ours.pop().map(|o| o.key), Some(e.key));
        }
        assert!(ours.is_empty());
    }

    #[test]
    fn visits_exactly_the_events_before_the_cutoff() {
        let mut ours = EventQueue::default();
        for (i, t) in [50, 10, 40, 30, 20, 60, 70, 5].into_iter().enumerate() {
            ours.push(q(t, 0, i as u64));
        }
        let mut seen = Vec::new();
        ours.visit_before(35, |e| {
            seen.push(e.deliver_at());
            SimTime::MAX
        });
        seen.sort();
        assert_eq!(seen, vec![5, 10, 20, 30]);
        // a shrinking cutoff stops the visit early
        let mut count = 0;
        ours.visit_before(SimTime::MAX, |_| {
            count += 1;
            0
        });
        assert_eq!(count, 1);
    }
}
