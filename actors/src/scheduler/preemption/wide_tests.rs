//! Tasks of several threads under the slot stages (issue 39): a slot per
//! thread on one server, placed, evicted and released whole, the slots
//! conserved throughout, under every policy.

use super::tests::{First, stage, task};
use super::*;
use crate::config::{EvictionPolicy, SlotPolicy};
use crate::kernel::actor_rng;

const POLICIES: [SlotPolicy; 3] = [SlotPolicy::Priority, SlotPolicy::Wasp, SlotPolicy::Hybrid];

fn wide(id: TaskId, priority: u8, arrived: SimTime, cores: u32) -> Task {
    Task {
        cores,
        ..task(id, priority, arrived)
    }
}

/// Free slots plus the slots running tasks hold (twice while they move):
/// every slot, always, and no server past its own.
fn conserved(s: &SlotStage) -> bool {
    let held: u32 = s
        .slots
        .running
        .values()
        .map(|r| r.slots * (1 + u32::from(r.moving_to.is_some())))
        .sum();
    let mut per_server: Vec<u32> = s.slots.free.clone();
    for r in s.slots.running.values() {
        per_server[r.server as usize] += r.slots;
        if let Some(to) = r.moving_to {
            per_server[to as usize] += r.slots;
        }
    }
    s.slots.free_total + held == s.slots.total
        && s.slots.free.iter().sum::<u32>() == s.slots.free_total
        && per_server
            .iter()
            .zip(&s.slots.servers)
            .all(|(&n, server)| n == server.slots)
        && s.sticky_used + s.regular_used + s.slots.free_total == s.slots.total
}

fn dispatched(out: &[SlotAction]) -> Vec<(TaskId, ActorId)> {
    out.iter()
        .filter_map(|a| match a {
            SlotAction::Dispatch { task, server } => Some((task.id, *server)),
            _ => None,
        })
        .collect()
}

fn preempted(out: &[SlotAction]) -> Vec<(TaskId, Vec<TaskId>, ActorId)> {
    out.iter()
        .filter_map(|a| match a {
            SlotAction::Preempt {
                victim,
                task,
                server,
                also,
                ..
            } => Some((task.id, [vec![*victim], also.clone()].concat(), *server)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_four_thread_task_holds_four_slots_of_one_server_and_is_evicted_whole() {
    for policy in POLICIES {
        let mut rng = actor_rng(21, "wide");
        // two servers of four one-core slots and one of two; HYBRID keeps
        // two of the ten sticky
        let mut s = stage(policy, EvictionPolicy::Mrs, &[(4, 1.0), (4, 1.0), (2, 1.0)]);
        s.enqueue(wide(1, 0, 0, 4));
        let out = s.schedule(1, &mut rng);
        let started = dispatched(&out);
        assert_eq!(started.len(), 1, "{policy:?}: {out:?}");
        let home = started[0].1;
        let i = s.slots.index_of[&home];
        assert_eq!(
            s.slots.free[i as usize], 0,
            "{policy:?}: all four on one server"
        );
        assert_eq!(s.slots.free_total, 6, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
        // a second one fits only on the other four-slot server, whole
        s.enqueue(wide(2, 0, 1, 4));
        let out = s.schedule(2, &mut rng);
        assert_eq!(dispatched(&out).len(), 1, "{policy:?}: {out:?}");
        assert_ne!(dispatched(&out)[0].1, home, "{policy:?}");
        assert_eq!(s.slots.free_total, 2, "{policy:?}");
        // a production task of four threads evicts one of them, whole:
        // one victim, one priority eviction, its four slots its evictor's
        s.enqueue(wide(3, 10, 2, 4));
        let out = s.schedule(3, &mut rng);
        let p = preempted(&out);
        assert_eq!(p.len(), 1, "{policy:?}: {out:?}");
        assert_eq!(p[0].1.len(), 1, "{policy:?}: one victim frees four slots");
        assert_eq!(s.preemptions, 1, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
        // the victim's late report frees nothing; its evictor's end frees four
        s.release(p[0].1[0], p[0].2);
        assert_eq!(s.slots.free_total, 2, "{policy:?}");
        s.release(3, p[0].2);
        assert_eq!(s.slots.free_total, 6, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
    }
}

#[test]
fn a_wide_task_evicts_by_the_rule_on_one_server_until_it_has_its_slots() {
    for policy in POLICIES {
        let mut rng = actor_rng(22, "wide");
        let mut s = stage(policy, EvictionPolicy::Mrs, &[(4, 1.0)]);
        // four single-threaded class-0 tasks, started at 1, 2, 3, 4 (under
        // HYBRID the first two in its sticky slots, which it never evicts)
        for id in 0..4 {
            s.enqueue(task(id, 0, id));
            assert_eq!(s.schedule(id + 1, &mut rng).len(), 1);
        }
        s.enqueue(wide(9, 10, 9, 2));
        let out = s.schedule(10, &mut rng);
        let p = preempted(&out);
        assert_eq!(p.len(), 1, "{policy:?}: {out:?}");
        // MRS: the youngest first, then the next youngest, on that server
        assert_eq!(p[0].1, vec![3, 2], "{policy:?}");
        assert_eq!(s.preemptions, 2, "{policy:?}: each victim is an eviction");
        assert!(conserved(&s), "{policy:?}");
        // a task of four cannot evict sticky tasks: under HYBRID it waits
        // and evicts nothing; elsewhere it evicts the other two and the
        // two-thread task, all of lower priority
        s.enqueue(wide(20, 11, 20, 4));
        let out = s.schedule(21, &mut rng);
        match policy {
            SlotPolicy::Hybrid => assert!(out.is_empty(), "{out:?}"),
            _ => {
                let p = preempted(&out);
                assert_eq!(p.len(), 1, "{policy:?}: {out:?}");
                let mut victims = p[0].1.clone();
                victims.sort_unstable();
                assert_eq!(victims, vec![0, 1, 9], "{policy:?}");
            }
        }
        assert!(conserved(&s), "{policy:?}");
    }
}

#[test]
fn a_server_too_small_or_too_full_of_protected_work_is_passed_over_whole() {
    let mut rng = actor_rng(23, "wide");
    // server 0 has two slots, server 1 four
    let mut s = stage(
        SlotPolicy::Priority,
        EvictionPolicy::Mrs,
        &[(2, 1.0), (4, 1.0)],
    );
    // class 0 everywhere; the youngest on the small server
    let mut at = 0;
    for (id, server) in [(0, 1), (1, 1), (2, 1), (3, 1), (4, 0), (5, 0)] {
        let only = move |i: u32| i == server;
        at += 1;
        let out = s.try_start(&task(id, 0, at), Some(&only), at, &mut rng, &mut First);
        assert!(matches!(out, Some(SlotAction::Dispatch { .. })), "{out:?}");
    }
    // a four-thread task: MRS's first pick is on server 0, which cannot
    // hold it; nothing is evicted there, and four go on server 1
    let out = s.try_start(&wide(9, 5, 10, 4), None, 10, &mut rng, &mut First);
    let p = preempted(&out.into_iter().collect::<Vec<_>>());
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].2, ActorId(11));
    let mut victims = p[0].1.clone();
    victims.sort_unstable();
    assert_eq!(victims, vec![0, 1, 2, 3]);
    assert!(conserved(&s));
    // a task no server can hold waits, evicting nothing
    let before = s.preemptions;
    let out = s.try_start(&wide(10, 9, 11, 5), None, 11, &mut rng, &mut First);
    assert!(out.is_none());
    assert_eq!(s.preemptions, before);
    assert!(conserved(&s));
}

#[test]
fn hybrids_sticky_pool_counts_slots() {
    let mut rng = actor_rng(24, "wide");
    // two sticky slots: a two-thread task fills them, a second waits for
    // the regular ones, and a four-thread one never goes sticky
    let mut s = stage(
        SlotPolicy::Hybrid,
        EvictionPolicy::Mrs,
        &[(4, 1.0), (4, 1.0)],
    );
    s.enqueue(wide(1, 0, 0, 2));
    s.schedule(1, &mut rng);
    assert_eq!((s.sticky_used, s.regular_used), (2, 0));
    s.enqueue(wide(2, 0, 1, 4));
    s.schedule(2, &mut rng);
    assert_eq!((s.sticky_used, s.regular_used), (2, 4));
    assert_eq!(s.sticky_starts, 1);
    assert!(conserved(&s));
    s.release(1, ActorId(10));
    s.release(1, ActorId(11));
    assert_eq!(s.sticky_used, 0);
    assert!(conserved(&s));
}

/// First fit whose servers leave at most `room` slots beside their primary
/// tenants, whatever the stage holds there.
struct Harvested {
    room: u32,
}

impl SlotPlacer for Harvested {
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        (task.cores.max(1) <= self.room)
            .then(|| First.choose(task, candidates, rng))
            .flatten()
    }

    fn started(&mut self, _: &Task, _: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {}

    fn could_hold(&self, threads: u32, _: usize) -> bool {
        threads <= self.room
    }
}

#[test]
fn a_head_no_server_could_hold_is_passed_and_one_that_waits_for_room_blocks() {
    for policy in POLICIES {
        let mut rng = actor_rng(25, "wide");
        // more threads than any server has slots: the task behind it starts
        let mut s = stage(policy, EvictionPolicy::Mrs, &[(4, 1.0), (4, 1.0)]);
        s.enqueue(wide(1, 10, 0, 8));
        s.enqueue(task(2, 0, 1));
        let out = s.schedule(2, &mut rng);
        assert_eq!(dispatched(&out).len(), 1, "{policy:?}: {out:?}");
        assert_eq!(dispatched(&out)[0].0, 2, "{policy:?}");
        assert!(s.tasks.contains_key(&1), "{policy:?}: it keeps its place");
        assert!(conserved(&s), "{policy:?}");
    }
    // a four-thread head on full servers of four slots waits for room and
    // holds the queue (§6.2.3.2); where the primary tenants leave fewer
    // than four slots on every server, no departure can make room: passed
    for (placer_room, behind_starts) in [(4, false), (3, true)] {
        let mut rng = actor_rng(26, "wide");
        let mut s = stage(
            SlotPolicy::Priority,
            EvictionPolicy::Mrs,
            &[(4, 1.0), (4, 1.0)],
        );
        let mut placer = Harvested { room: placer_room };
        for id in 0..7 {
            s.enqueue(task(id, 10, id));
        }
        assert_eq!(
            dispatched(&s.schedule_placed(7, &mut rng, Some(&mut placer))).len(),
            7
        );
        s.enqueue(wide(20, 10, 8, 4));
        s.enqueue(task(21, 0, 9));
        let out = s.schedule_placed(10, &mut rng, Some(&mut placer));
        let started: Vec<_> = dispatched(&out).iter().map(|d| d.0).collect();
        match behind_starts {
            true => assert_eq!(started, [21], "room {placer_room}"),
            false => assert!(started.is_empty(), "room {placer_room}: {out:?}"),
        }
        assert!(s.tasks.contains_key(&20));
        assert!(conserved(&s));
    }
}
