//! `priority` (thesis §6.2.3.3, §7.3.1): preemptive priority evictions. A
//! task that finds no free slot evicts one running task of the lowest
//! running priority, if that is strictly below its own, chosen by
//! `scheduler.eviction` (`mrs`, `rnd` or `lrs`, `eviction.rs`); it takes
//! the freed slot at once. Free slots are uniformly random (§6.2.3.1).

use crate::config::EvictionPolicy;
use crate::kernel::ActorRng;
use crate::task::TaskId;

use super::eviction::pick;
use super::{Preemption, Scope, Slots};

/// `priority`: the lowest running priority, then `eviction`'s preference.
/// WASP reuses it for its non-production tasks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Priority {
    pub(super) eviction: EvictionPolicy,
}

impl Preemption for Priority {
    fn victim(
        &self,
        priority: u8,
        slots: &Slots,
        scope: Scope<'_>,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        let lowest = slots.lowest_evictable(priority, scope)?;
        pick(
            self.eviction,
            slots.by_start(lowest, scope),
            || slots.evictable_count(lowest, scope),
            rng,
        )
    }

    /// Every evictable task of the lowest running priority below
    /// `priority`.
    fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId> {
        slots
            .lowest_evictable(priority, scope)
            .map_or_else(Vec::new, |lowest| slots.by_start(lowest, scope).collect())
    }

    fn eviction(&self) -> EvictionPolicy {
        self.eviction
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::config::{EvictionPolicy, SlotPolicy};
    use crate::kernel::{ActorId, actor_rng};

    use super::super::SlotAction;
    use super::super::tests::{First, fill, stage, task, victim_of};

    #[test]
    fn mrs_evicts_the_youngest_lrs_the_oldest_of_the_lowest_class() {
        let mut rng = actor_rng(1, "t");
        for (policy, expected) in [(EvictionPolicy::Mrs, 3), (EvictionPolicy::Lrs, 0)] {
            let mut s = stage(SlotPolicy::Priority, policy, &[(2, 0.5), (2, 0.5)]);
            fill(&mut s, 4, &mut rng);
            s.enqueue(task(100, 4, 50));
            let out = s.schedule(60, &mut rng);
            assert_eq!(victim_of(&out), Some(expected), "{policy:?}");
        }
    }

    #[test]
    fn the_victim_is_always_of_the_lowest_running_priority() {
        let mut rng = actor_rng(2, "t");
        let mut s = stage(SlotPolicy::Priority, EvictionPolicy::Mrs, &[(3, 0.5)]);
        for (id, p) in [(0, 1), (1, 0), (2, 4)] {
            s.enqueue(task(id, p, id));
            s.schedule(id + 1, &mut rng);
        }
        s.enqueue(task(9, 9, 10));
        assert_eq!(victim_of(&s.schedule(20, &mut rng)), Some(1));
        s.enqueue(task(10, 9, 11));
        assert_eq!(victim_of(&s.schedule(21, &mut rng)), Some(0));
        // Only class 4 and two class 9 tasks run now: a class-4 task
        // cannot evict anyone, and waits.
        s.enqueue(task(11, 4, 12));
        assert!(s.schedule(22, &mut rng).is_empty());
        assert_eq!(s.queued(), 1);
    }

    #[test]
    fn rnd_picks_among_the_lowest_class_only() {
        let mut rng = actor_rng(3, "t");
        let mut seen = BTreeSet::new();
        for round in 0..40 {
            let mut s = stage(SlotPolicy::Priority, EvictionPolicy::Rnd, &[(4, 0.5)]);
            fill(&mut s, 3, &mut rng);
            s.enqueue(task(3, 2, 3));
            s.schedule(4, &mut rng);
            s.enqueue(task(100, 9, 50 + round));
            let v = victim_of(&s.schedule(60, &mut rng)).unwrap();
            assert!(v < 3, "never the class-2 task");
            seen.insert(v);
        }
        assert_eq!(seen.len(), 3, "all three class-0 tasks get picked");
    }

    #[test]
    fn under_an_admission_scope_the_victim_is_the_lowest_running_in_scope() {
        let mut rng = actor_rng(11, "t");
        let mut s = stage(
            SlotPolicy::Priority,
            EvictionPolicy::Mrs,
            &[(1, 0.5), (1, 0.5)],
        );
        for (id, class) in [(0, 0), (1, 1)] {
            let start = s.try_start(&task(id, class, id), None, id + 1, &mut rng, &mut First);
            assert!(matches!(start, Some(SlotAction::Dispatch { .. })));
        }
        // Only the second server is in scope: its class-1 task goes, not
        // the class-0 task on the first.
        let only_second = |i: u32| i == 1;
        let out = s.try_start(&task(9, 5, 9), Some(&only_second), 10, &mut rng, &mut First);
        assert!(matches!(
            out,
            Some(SlotAction::Preempt {
                victim: 1,
                server: ActorId(11),
                ..
            })
        ));
        let out = s.try_start(&task(10, 5, 10), None, 11, &mut rng, &mut First);
        assert!(matches!(out, Some(SlotAction::Preempt { victim: 0, .. })));
        // Nothing below class 5 runs any more.
        assert!(
            s.try_start(&task(11, 5, 11), None, 12, &mut rng, &mut First)
                .is_none()
        );
    }
}
