//! `hybrid` (thesis §9.2): phase I takes the queue in first-arrival order
//! onto a fixed pool of `sticky_slots` (labels, not machines: the task
//! still takes a free slot somewhere), non-preemptively, and those tasks
//! can never be priority-evicted; phase II is WASP (`wasp.rs`) on the
//! other slots. With no sticky slots, phase I does nothing and HYBRID is
//! WASP decision for decision. `sticky_phase` chooses between the two
//! readings of which queued tasks phase I serves ([`StickyPhase`]).

use dcemu_topology::SimTime;

use crate::config::{EvictionPolicy, StickyPhase};
use crate::kernel::ActorRng;
use crate::task::{Task, TaskId};

use super::wasp::Wasp;
use super::{Admits, Preemption, Scope, Slots};

/// `hybrid`: a pool of sticky slots, then WASP.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hybrid {
    pub(super) wasp: Wasp,
    /// The pool's size (`sticky_slots`, §9.2.1).
    pub(super) sticky: u32,
    /// Which queued tasks phase I takes (`sticky_phase`).
    pub(super) phase: StickyPhase,
    /// The scheduler's time slot, ns (`slot_interval`): under
    /// [`StickyPhase::Waited`] a task must have been queued this long.
    pub(super) slot_ns: SimTime,
}

impl Preemption for Hybrid {
    fn sticky_slots(&self) -> u32 {
        self.sticky
    }

    /// §9.2.1: every queued task, or only those queued at the previous
    /// time slot (arrived at least a slot ago) or evicted before.
    fn sticky_admits(&self, task: &Task, now: SimTime) -> bool {
        match self.phase {
            StickyPhase::FirstArrival => true,
            StickyPhase::Waited => {
                task.evictions > 0 || task.submitted_at.saturating_add(self.slot_ns) <= now
            }
        }
    }

    /// Sticky tasks are never priority-evicted (§9.2.1): phase I is meant
    /// for the long-waited and evicted tasks.
    fn evictable(&self, sticky: bool) -> bool {
        !sticky
    }

    fn level(&self, priority: u8, slots: &Slots, admits: Admits<'_>) -> Option<u16> {
        self.wasp.level(priority, slots, admits)
    }

    fn victim(
        &self,
        priority: u8,
        slots: &Slots,
        scope: Scope<'_>,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        self.wasp.victim(priority, slots, scope, rng)
    }

    fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId> {
        self.wasp.admissible(priority, slots, scope)
    }

    fn eviction(&self) -> EvictionPolicy {
        self.wasp.eviction()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{EvictionPolicy, SchedulerConfig, SlotPolicy, StickyPhase};
    use crate::kernel::{ActorId, Metrics, actor_rng};
    use crate::task::TaskId;

    use super::super::tests::{stage, task, victim_of};
    use super::super::{SlotAction, SlotServer, SlotStage};

    #[test]
    fn sticky_tasks_are_never_priority_evicted() {
        let mut rng = actor_rng(6, "t");
        // Four slots, two of them sticky: phase I takes the two earliest
        // arrivals whatever their class.
        let mut s = stage(SlotPolicy::Hybrid, EvictionPolicy::Mrs, &[(4, 0.5)]);
        for id in 0..4 {
            s.enqueue(task(id, 0, id));
        }
        let out = s.schedule(10, &mut rng);
        assert_eq!(out.len(), 4);
        for round in 0..10 {
            s.enqueue(task(100 + round, 9, 20 + round));
            let out = s.schedule(30 + round, &mut rng);
            if round < 2 {
                let v = victim_of(&out).unwrap();
                assert!(v >= 2, "evicted sticky task {v}");
            } else {
                assert!(out.is_empty(), "only sticky class-0 tasks are left");
            }
        }
    }

    #[test]
    fn victims_of_class_0_and_sticky_starts_of_evicted_tasks_are_counted() {
        let mut rng = actor_rng(10, "t");
        // Four slots, two sticky: the two earliest arrivals (one of them
        // evicted before) go sticky, the other two run on regular slots.
        let mut s = stage(SlotPolicy::Hybrid, EvictionPolicy::Mrs, &[(4, 0.5)]);
        let mut evicted_before = task(0, 0, 0);
        evicted_before.evictions = 1;
        s.enqueue(evicted_before);
        s.enqueue(task(1, 0, 1));
        s.enqueue(task(2, 0, 2));
        s.enqueue(task(3, 1, 3));
        assert_eq!(s.schedule(10, &mut rng).len(), 4);
        assert_eq!((s.sticky_starts, s.sticky_starts_evicted), (2, 1));
        // A class-9 task evicts the class-0 task on a regular slot, the
        // next one the class-1 task.
        s.enqueue(task(9, 9, 20));
        assert_eq!(victim_of(&s.schedule(21, &mut rng)), Some(2));
        s.enqueue(task(10, 9, 21));
        assert_eq!(victim_of(&s.schedule(22, &mut rng)), Some(3));
        assert_eq!((s.preemptions, s.preemptions_class0), (2, 1));
        let mut m = Metrics::default();
        s.finish(&mut m);
        assert_eq!(m.counter("preemptions_class0_victim"), 1);
        assert_eq!(m.counter("sticky_starts_evicted"), 1);
    }

    #[test]
    fn waited_phase_one_leaves_new_arrivals_to_phase_two() {
        let mut rng = actor_rng(8, "t");
        let second = 1_000_000_000;
        let cfg = SchedulerConfig {
            slots: SlotPolicy::Hybrid,
            sticky_slots: 2,
            sticky_phase: StickyPhase::Waited,
            ..SchedulerConfig::default()
        };
        let six_slots = || {
            SlotStage::new(
                &cfg,
                vec![SlotServer {
                    id: ActorId(3),
                    slots: 6,
                    cores: 6,
                    cpu_per_slot: 0.5,
                }],
            )
            .expect("a built-in policy")
        };
        let mut s = six_slots();
        // At 10 s: task 1 has waited since 8 s, task 2 was evicted before,
        // tasks 3 and 4 arrived within this slot.
        s.enqueue(task(1, 0, 8 * second));
        let mut evicted = task(2, 0, 9 * second + 500_000_000);
        evicted.evictions = 1;
        s.enqueue(evicted);
        s.enqueue(task(3, 0, 9 * second + 600_000_000));
        s.enqueue(task(4, 0, 10 * second));
        let out = s.schedule(10 * second, &mut rng);
        assert_eq!(out.len(), 4);
        assert_eq!((s.sticky_starts, s.sticky_starts_evicted), (2, 1));
        let sticky: Vec<TaskId> = s
            .slots
            .running
            .iter()
            .filter(|(_, r)| r.sticky)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(sticky, vec![1, 2]);
        // The first-arrival reading takes the two earliest arrivals, new
        // or not: tasks 1 and 2 here too, so give it a new arrival first.
        let mut f = stage(SlotPolicy::Hybrid, EvictionPolicy::Mrs, &[(6, 0.5)]);
        f.enqueue(task(5, 0, 10 * second));
        f.enqueue(task(6, 0, 10 * second));
        f.schedule(10 * second, &mut rng);
        assert_eq!(f.sticky_starts, 2, "first-arrival: new arrivals go sticky");
        let mut w = six_slots();
        w.enqueue(task(5, 0, 10 * second));
        w.enqueue(task(6, 0, 10 * second));
        assert_eq!(w.schedule(10 * second, &mut rng).len(), 2);
        assert_eq!(w.sticky_starts, 0, "waited: new arrivals start in phase II");
    }

    #[test]
    fn phase_two_never_takes_a_sticky_slot() {
        // §9.2.2: the sticky pool is phase I's alone. Four slots, two
        // sticky, and phase I (the waited reading) admits none of these new
        // arrivals: phase II starts two of them, not four.
        let mut rng = actor_rng(11, "t");
        let cfg = SchedulerConfig {
            slots: SlotPolicy::Hybrid,
            sticky_slots: 2,
            sticky_phase: StickyPhase::Waited,
            ..SchedulerConfig::default()
        };
        let mut s = SlotStage::new(
            &cfg,
            vec![SlotServer {
                id: ActorId(3),
                slots: 4,
                cores: 4,
                cpu_per_slot: 0.5,
            }],
        )
        .expect("a built-in policy");
        for id in 0..4 {
            s.enqueue(task(id, 9, 10));
        }
        assert_eq!(s.schedule(10, &mut rng).len(), 2);
        assert_eq!(s.sticky_starts, 0);
        // nor does it evict for them: the two left wait
        assert!(s.schedule(10, &mut rng).is_empty());
    }

    #[test]
    fn an_evicted_task_keeps_its_first_arrival_for_phase_one() {
        // §9.2.1: "the arrival time of an evicted task refers to the time
        // stamp when the task first arrives at the system". Three slots, two
        // sticky: task 0 (arrived at 1) takes the regular slot behind two
        // sticky tasks and is evicted by a class-9 arrival; when it comes
        // back, after a task that arrived later was queued, and a sticky
        // slot is free, it is the one phase I takes.
        let mut rng = actor_rng(12, "t");
        let mut s = stage(SlotPolicy::Hybrid, EvictionPolicy::Mrs, &[(3, 0.5)]);
        s.enqueue(task(7, 0, 0));
        s.enqueue(task(8, 0, 0));
        s.enqueue(task(0, 0, 1));
        assert_eq!(s.schedule(2, &mut rng).len(), 3);
        s.enqueue(task(9, 9, 3));
        assert_eq!(victim_of(&s.schedule(4, &mut rng)), Some(0));
        let server = ActorId(10);
        s.enqueue(task(5, 0, 4));
        let mut back = task(0, 0, 1);
        back.evictions = 1;
        s.evicted(back, server);
        s.release(7, server);
        let out = s.schedule(5, &mut rng);
        let started: Vec<TaskId> = out
            .iter()
            .filter_map(|a| match a {
                SlotAction::Dispatch { task, .. } => Some(task.id),
                _ => None,
            })
            .collect();
        assert_eq!(started, vec![0], "{out:?}");
        assert_eq!(s.sticky_starts_evicted, 1);
    }

    #[test]
    fn all_slots_sticky_is_non_preemptive_first_come_first_served() {
        let mut rng = actor_rng(7, "t");
        let cfg = SchedulerConfig {
            slots: SlotPolicy::Hybrid,
            sticky_slots: 2,
            ..SchedulerConfig::default()
        };
        let mut s = SlotStage::new(
            &cfg,
            vec![SlotServer {
                id: ActorId(3),
                slots: 2,
                cores: 2,
                cpu_per_slot: 0.5,
            }],
        )
        .expect("a built-in policy");
        s.enqueue(task(1, 0, 5));
        s.enqueue(task(2, 11, 6));
        s.enqueue(task(3, 11, 7));
        s.enqueue(task(4, 0, 1));
        let out = s.schedule(10, &mut rng);
        let ids: Vec<TaskId> = out
            .iter()
            .map(|a| match a {
                SlotAction::Dispatch { task, .. } => task.id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, vec![4, 1], "first arrivals first, no preemption");
        assert!(s.schedule(11, &mut rng).is_empty());
    }
}
