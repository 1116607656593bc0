//! The history of a count that changes by one at a time (devices powering
//! on and going to sleep), packed into 8 bytes a change.
//!
//! A GEMS day has tens of millions of switch wake-ups and sleeps, and the
//! exact maximum of the powered count needs every change until the end of
//! the run, so the size of one change is what bounds such a run's memory.

use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

/// One change of a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The count goes down by one.
    Down,
    /// The count goes up by one.
    Up,
}

/// Latest time a change can carry: one bit of the 64 holds the direction.
pub const LAST_STEP_TIME: SimTime = u64::MAX >> 1;

/// Changes `(time, ±1)` packed as `time << 1 | up`. Packed values sort by
/// time, and at equal times decreases first, so [`Steps::sort`] gives the
/// order in which a sweep never counts a device twice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Steps(Vec<u64>);

impl Steps {
    /// Records `step` at `t` (clamped to [`LAST_STEP_TIME`], 292 years).
    pub fn push(&mut self, t: SimTime, step: Step) {
        self.0
            .push(t.min(LAST_STEP_TIME) << 1 | u64::from(step == Step::Up));
    }

    /// The changes as `(time, delta)`, in the order they are held.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (SimTime, i64)> + '_ {
        self.0
            .iter()
            .map(|&p| (p >> 1, if p & 1 == 1 { 1 } else { -1 }))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends `other`'s changes, taking its buffer when `self` is empty.
    pub fn append(&mut self, other: Steps) {
        super::merge::extend_or_take(&mut self.0, other.0);
    }

    /// Orders by time, decreases first at equal times.
    pub fn sort(&mut self) {
        self.0.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_changes_read_back_and_sort_decreases_first() {
        let mut s = Steps::default();
        s.push(7, Step::Up);
        s.push(3, Step::Up);
        s.push(7, Step::Down);
        s.push(0, Step::Down);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [(7, 1), (3, 1), (7, -1), (0, -1)]
        );
        s.sort();
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [(0, -1), (3, 1), (7, -1), (7, 1)]
        );
    }

    #[test]
    fn the_latest_time_survives_and_later_ones_clamp() {
        let mut s = Steps::default();
        s.push(LAST_STEP_TIME, Step::Up);
        s.push(u64::MAX, Step::Down);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [(LAST_STEP_TIME, 1), (LAST_STEP_TIME, -1)]
        );
    }

    #[test]
    fn append_keeps_order_and_takes_the_buffer_of_an_empty_target() {
        let mut a = Steps::default();
        let mut b = Steps::default();
        b.push(5, Step::Up);
        a.append(b.clone());
        assert_eq!(a, b);
        let mut c = Steps::default();
        c.push(2, Step::Down);
        a.append(c);
        assert_eq!(a.iter().collect::<Vec<_>>(), [(5, 1), (2, -1)]);
    }
}
