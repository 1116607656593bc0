//! `wasp` (thesis §8.1.2): workload-aware slot choice on heterogeneous
//! slots. Production tasks (`priority >= production_priority`) take the
//! most powerful free slot (most CPU per slot), the others a uniformly
//! random one; a production task's eviction frees the most powerful slot
//! held by the lowest running priority. Everything else is `priority`.
//!
//! Figure 8.2's pseudo-code swaps the two eviction branches; we follow the
//! text of §8.1.2 and §9.2.2, which agree with each other.

use crate::config::EvictionPolicy;
use crate::kernel::ActorRng;
use crate::task::TaskId;

use super::eviction::pick;
use super::priority::Priority;
use super::{Admits, Preemption, Scope, Slots};

/// `wasp`: `priority` with the most powerful slots for production.
/// HYBRID's phase II is this.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wasp {
    pub(super) base: Priority,
    /// The lowest priority that counts as production.
    pub(super) production: u8,
}

impl Wasp {
    fn production(&self, priority: u8) -> bool {
        priority >= self.production
    }
}

impl Preemption for Wasp {
    fn level(&self, priority: u8, slots: &Slots, admits: Admits<'_>) -> Option<u16> {
        if !self.production(priority) {
            return None;
        }
        slots.most_powerful_free(admits)
    }

    /// Of the lowest running priority strictly below `priority`; for a
    /// production task, on the most powerful level such a task runs on;
    /// then by `eviction`.
    fn victim(
        &self,
        priority: u8,
        slots: &Slots,
        scope: Scope<'_>,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        if !self.production(priority) {
            return self.base.victim(priority, slots, scope, rng);
        }
        let lowest = slots.lowest_evictable(priority, scope)?;
        let level = slots.most_powerful_running(lowest, scope)?;
        let candidates = slots.by_power(lowest, level, scope);
        pick(
            self.base.eviction,
            candidates.clone(),
            || candidates.count() as u32,
            rng,
        )
    }

    /// `priority`'s for a non-production task; for a production one, the
    /// lowest running priority's tasks on the most powerful level it runs on.
    fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId> {
        if !self.production(priority) {
            return self.base.admissible(priority, slots, scope);
        }
        let Some(lowest) = slots.lowest_evictable(priority, scope) else {
            return Vec::new();
        };
        slots
            .most_powerful_running(lowest, scope)
            .map_or_else(Vec::new, |level| {
                slots.by_power(lowest, level, scope).collect()
            })
    }

    fn eviction(&self) -> EvictionPolicy {
        self.base.eviction
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{EvictionPolicy, SlotPolicy};
    use crate::kernel::{ActorId, actor_rng};

    use super::super::SlotAction;
    use super::super::tests::{First, stage, task};

    #[test]
    fn wasp_sends_production_to_the_most_powerful_slots() {
        let mut rng = actor_rng(5, "t");
        let mut s = stage(
            SlotPolicy::Wasp,
            EvictionPolicy::Mrs,
            &[(4, 0.02), (2, 0.04)],
        );
        for id in 0..2 {
            s.enqueue(task(id, 9, id));
        }
        let out = s.schedule(5, &mut rng);
        for a in &out {
            let SlotAction::Dispatch { server, .. } = a else {
                panic!()
            };
            assert_eq!(*server, ActorId(11));
        }
        // Fill the rest with class 0, then a production task evicts one of
        // the class-0 tasks on the powerful server... none runs there, so
        // it evicts the youngest on the other server.
        for id in 10..14 {
            s.enqueue(task(id, 0, id));
        }
        s.schedule(20, &mut rng);
        s.enqueue(task(50, 10, 30));
        let out = s.schedule(40, &mut rng);
        assert!(matches!(
            out[0],
            SlotAction::Preempt {
                server: ActorId(10),
                ..
            }
        ));
    }

    #[test]
    fn wasp_sends_other_classes_to_a_randomly_chosen_slot() {
        // §8.1.2 / §9.2.2: only production classes are matched with the
        // powerful slots; the rest land on any free slot at random, so
        // twenty class-0 tasks on two half-empty servers use both.
        let mut rng = actor_rng(13, "t");
        let mut s = stage(
            SlotPolicy::Wasp,
            EvictionPolicy::Mrs,
            &[(50, 0.02), (50, 0.04)],
        );
        for id in 0..20 {
            s.enqueue(task(id, 0, id));
        }
        let out = s.schedule(30, &mut rng);
        let on = |server: u32| {
            out.iter()
                .filter(|a| matches!(a, SlotAction::Dispatch { server: s, .. } if *s == ActorId(server)))
                .count()
        };
        assert_eq!(out.len(), 20);
        assert!(on(10) > 0 && on(11) > 0, "{} / {}", on(10), on(11));
    }

    #[test]
    fn under_an_admission_scope_production_takes_the_most_powerful_slots_in_scope() {
        let mut rng = actor_rng(12, "t");
        // Server 0 is slow; servers 1 and 2 are the most powerful.
        let mut s = stage(
            SlotPolicy::Wasp,
            EvictionPolicy::Mrs,
            &[(2, 0.02), (1, 0.04), (1, 0.04)],
        );
        let not_second = |i: u32| i != 1;
        let start = s.try_start(&task(0, 10, 0), Some(&not_second), 1, &mut rng, &mut First);
        assert!(matches!(
            start,
            Some(SlotAction::Dispatch {
                server: ActorId(12),
                ..
            })
        ));
        // Class 0 fills the rest, server 1's task first.
        let second = |i: u32| i == 1;
        s.try_start(&task(1, 0, 1), Some(&second), 2, &mut rng, &mut First);
        for id in 2..4 {
            s.try_start(&task(id, 0, id), None, id + 1, &mut rng, &mut First);
        }
        // In the scope of servers 0 and 1, a production task evicts the
        // class-0 task on server 1, the most powerful slot, although MRS
        // alone would take one on server 0, started later.
        let not_third = |i: u32| i != 2;
        let out = s.try_start(&task(9, 10, 9), Some(&not_third), 10, &mut rng, &mut First);
        assert!(matches!(
            out,
            Some(SlotAction::Preempt {
                victim: 1,
                server: ActorId(11),
                ..
            })
        ));
    }
}
