//! How many slots a task takes on a server, and how large a slot is
//! (issue 39). Every part of the model that counts slots (a server's own
//! bound, the scheduler's view, the slot stages, the energy-aware ledger)
//! counts them here, so that none of them may send a server more than
//! another allows.
//!
//! A slot is a share of a server: `cores / slots` of its cores, but never
//! less than one core to the task in it. Thesis eq. 6.1-6.2: a task in a
//! slot gets at most one core, and on a server of more slots than cores
//! the slots share the cores elastically, each getting one core at most
//! and `C / N_s` at least. A task's CPU demand is its threads (one core
//! each at most, eq. 6.2; trace readers round a CPU request up to whole
//! cores), so it holds `ceil(threads / share)` slots of one server:
//!
//! - slots ≥ cores (every configuration of thesis Tables 7.1 and 8.1, and
//!   Paragon's one slot per core): a slot per thread; the thesis's
//!   single-threaded tasks one slot each;
//! - slots < cores (a slot of several cores, as the harvesting testbed's
//!   12-core servers with 6 or 8 slots): `ceil(threads × slots / cores)`,
//!   so a server holds at most `cores` threads.

use std::cmp::Ordering;

/// Slots a task of `threads` threads (at least one) holds on a server of
/// `cores` cores and `slots` slots.
pub fn slots_for(threads: u32, cores: u32, slots: u32) -> u32 {
    let threads = threads.max(1);
    if slots >= cores || cores == 0 {
        return threads;
    }
    let k = (u64::from(threads) * u64::from(slots)).div_ceil(u64::from(cores));
    u32::try_from(k).unwrap_or(u32::MAX).max(1)
}

/// The most threads a task may have to fit `free` free slots of a server
/// of `cores` cores and `slots` slots (the inverse of [`slots_for`]).
pub fn threads_in(free: u32, cores: u32, slots: u32) -> u32 {
    if slots >= cores || slots == 0 {
        return free;
    }
    let t = u64::from(free) * u64::from(cores) / u64::from(slots);
    u32::try_from(t).unwrap_or(u32::MAX)
}

/// The size of one slot of a server of `cores` cores and `slots` slots, in
/// cores, as an exact fraction (numerator, denominator): `cores / slots`,
/// or one core where the server has at least as many slots as cores.
#[derive(Clone, Copy, Debug, Eq)]
pub struct SlotSize {
    cores: u32,
    slots: u32,
}

impl SlotSize {
    pub fn of(cores: u32, slots: u32) -> SlotSize {
        if slots == 0 || slots >= cores {
            SlotSize { cores: 1, slots: 1 }
        } else {
            SlotSize { cores, slots }
        }
    }

    /// Whether a task of `threads` threads fits one such slot.
    pub fn holds(self, threads: u32) -> bool {
        u64::from(threads.max(1)) * u64::from(self.slots) <= u64::from(self.cores)
    }
}

impl PartialEq for SlotSize {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl PartialOrd for SlotSize {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SlotSize {
    fn cmp(&self, other: &Self) -> Ordering {
        (u64::from(self.cores) * u64::from(other.slots))
            .cmp(&(u64::from(other.cores) * u64::from(self.slots)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_per_thread_where_slots_are_at_least_the_cores() {
        assert_eq!(slots_for(1, 8, 16), 1);
        assert_eq!(slots_for(4, 8, 16), 4);
        assert_eq!(slots_for(4, 4, 4), 4);
        assert_eq!(slots_for(0, 4, 4), 1);
    }

    #[test]
    fn threads_over_the_share_where_a_slot_has_several_cores() {
        // 12 cores, 6 slots: a slot is 2 cores
        assert_eq!(slots_for(1, 12, 6), 1);
        assert_eq!(slots_for(2, 12, 6), 1);
        assert_eq!(slots_for(3, 12, 6), 2);
        assert_eq!(slots_for(12, 12, 6), 6);
        // 13 threads need 7 of the 6 slots: no such server holds them
        assert_eq!(slots_for(13, 12, 6), 7);
        // 12 cores, 8 slots: a slot is 1.5 cores
        assert_eq!(slots_for(4, 12, 8), 3);
    }

    #[test]
    fn threads_in_is_the_widest_task_the_free_slots_hold() {
        for (cores, slots) in [(12, 6), (12, 8), (8, 16), (4, 4), (7, 3)] {
            for free in 0..=slots {
                let t = threads_in(free, cores, slots);
                if t > 0 {
                    assert!(slots_for(t, cores, slots) <= free, "{cores}/{slots} {free}");
                }
                assert!(
                    slots_for(t + 1, cores, slots) > free,
                    "{cores}/{slots} {free}"
                );
            }
        }
    }

    #[test]
    fn slot_sizes_compare_exactly() {
        let two = SlotSize::of(12, 6);
        let one_and_half = SlotSize::of(12, 8);
        let one = SlotSize::of(8, 32);
        assert!(one < one_and_half && one_and_half < two);
        assert_eq!(SlotSize::of(8, 8), SlotSize::of(4, 16));
        assert_eq!(SlotSize::of(6, 3), SlotSize::of(12, 6));
        assert!(two.holds(2) && !two.holds(3));
        assert!(one.holds(1) && !one.holds(2));
        assert!(one_and_half.holds(1) && !one_and_half.holds(2));
    }
}
