//! Slots of several cores and slots of several sizes under the slot stages
//! (issue 39, `crate::slot_share`): a task takes `ceil(threads / share)`
//! slots of one server, the smallest slot size that holds it where sizes
//! differ, and evicts until it has them; slots conserved throughout.

use super::tests::task;
use super::*;
use crate::config::{EvictionPolicy, SchedulerConfig, SlotPolicy};
use crate::kernel::actor_rng;

const POLICIES: [SlotPolicy; 3] = [SlotPolicy::Priority, SlotPolicy::Wasp, SlotPolicy::Hybrid];

/// A stage of `policy` over servers of (cores, slots), CPU per slot
/// `cores / slots`; two sticky slots under HYBRID.
fn sized(policy: SlotPolicy, servers: &[(u32, u32)]) -> SlotStage {
    let cfg = SchedulerConfig {
        slots: policy,
        eviction: EvictionPolicy::Mrs,
        sticky_slots: 2,
        ..SchedulerConfig::default()
    };
    let servers = servers
        .iter()
        .enumerate()
        .map(|(i, &(cores, slots))| SlotServer {
            id: ActorId(10 + i as u32),
            slots,
            cores,
            cpu_per_slot: f64::from(cores) / f64::from(slots),
        })
        .collect();
    SlotStage::new(&cfg, servers).expect("a built-in policy")
}

fn wide(id: TaskId, priority: u8, arrived: SimTime, cores: u32) -> Task {
    Task {
        cores,
        ..task(id, priority, arrived)
    }
}

/// Every slot is free or held (twice while a task moves), per server, and
/// the shares add up.
fn conserved(s: &SlotStage) -> bool {
    let mut per_server: Vec<u32> = s.slots.free.clone();
    for r in s.slots.running.values() {
        per_server[r.server as usize] += r.slots;
        if let Some(to) = r.moving_to {
            per_server[to as usize] += s.slots.slots_at(to, r.threads);
        }
    }
    per_server
        .iter()
        .zip(&s.slots.servers)
        .all(|(&n, server)| n == server.slots)
        && s.slots.free.iter().sum::<u32>() == s.slots.free_total
}

fn started_on(out: &[SlotAction]) -> Vec<(TaskId, ActorId)> {
    out.iter()
        .filter_map(|a| match a {
            SlotAction::Dispatch { task, server } => Some((task.id, *server)),
            _ => None,
        })
        .collect()
}

fn held(s: &SlotStage, id: TaskId) -> u32 {
    s.slots.running.get(&id).map_or(0, |r| r.slots)
}

#[test]
fn a_task_takes_its_threads_over_the_slot_share_of_one_server() {
    for policy in POLICIES {
        let mut rng = actor_rng(31, "sized");
        // 8 cores in 4 slots: a slot is 2 cores
        let mut s = sized(policy, &[(8, 4)]);
        s.enqueue(wide(1, 0, 0, 4));
        s.enqueue(wide(2, 0, 1, 3));
        let out = s.schedule(1, &mut rng);
        assert_eq!(started_on(&out).len(), 2, "{policy:?}: {out:?}");
        assert_eq!(held(&s, 1), 2, "{policy:?}: 4 threads, 2-core slots");
        assert_eq!(held(&s, 2), 2, "{policy:?}: 3 threads round up to 2 slots");
        assert_eq!(s.slots.free_total, 0, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
        // a single thread waits: no slot is left, though 1 core is idle
        s.enqueue(wide(3, 0, 2, 1));
        assert!(s.schedule(2, &mut rng).is_empty(), "{policy:?}");
        s.release(1, ActorId(10));
        assert_eq!(s.slots.free_total, 2, "{policy:?}");
        assert_eq!(started_on(&s.schedule(3, &mut rng)).len(), 1, "{policy:?}");
        assert_eq!(held(&s, 3), 1, "{policy:?}: one thread fits one slot");
        assert!(conserved(&s), "{policy:?}");
    }
}

#[test]
fn a_high_priority_task_evicts_until_its_slots_are_free() {
    for policy in POLICIES {
        let mut rng = actor_rng(32, "sized");
        let mut s = sized(policy, &[(8, 4)]);
        // four single threads in the four 2-core slots, started at 1..4
        // (under HYBRID the first two sticky, never evicted)
        for id in 0..4 {
            s.enqueue(task(id, 0, id));
            assert_eq!(s.schedule(id + 1, &mut rng).len(), 1, "{policy:?}");
        }
        // four threads need two slots: MRS evicts the two youngest
        s.enqueue(wide(9, 10, 9, 4));
        let out = s.schedule(10, &mut rng);
        let victims: Vec<Vec<TaskId>> = out
            .iter()
            .filter_map(|a| match a {
                SlotAction::Preempt { victim, also, .. } => {
                    Some([vec![*victim], also.clone()].concat())
                }
                _ => None,
            })
            .collect();
        assert_eq!(victims, vec![vec![3, 2]], "{policy:?}: {out:?}");
        assert_eq!(held(&s, 9), 2, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
    }
}

#[test]
fn where_slots_differ_a_task_takes_the_smallest_slot_that_holds_it() {
    for policy in POLICIES {
        let mut rng = actor_rng(33, "sized");
        // server 10: 2-core slots; server 11: 1-core slots
        let mut s = sized(policy, &[(8, 4), (8, 8)]);
        // two threads fit one 2-core slot, not one 1-core slot
        s.enqueue(wide(1, 0, 0, 2));
        assert_eq!(started_on(&s.schedule(1, &mut rng)), vec![(1, ActorId(10))]);
        assert_eq!(held(&s, 1), 1, "{policy:?}");
        // one thread fits both: the 1-core slot, however many 2-core are free
        for id in 2..10 {
            s.enqueue(task(id, 0, id));
            let out = s.schedule(id, &mut rng);
            assert_eq!(started_on(&out), vec![(id, ActorId(11))], "{policy:?} {id}");
        }
        // the 1-core slots are all taken: the next smallest that holds it
        s.enqueue(task(10, 0, 10));
        let out = s.schedule(10, &mut rng);
        assert_eq!(started_on(&out), vec![(10, ActorId(10))], "{policy:?}");
        // four threads: no one slot holds them; the two 2-core slots left do
        s.enqueue(wide(11, 0, 11, 4));
        let out = s.schedule(11, &mut rng);
        assert_eq!(started_on(&out), vec![(11, ActorId(10))], "{policy:?}");
        assert_eq!(held(&s, 11), 2, "{policy:?}");
        // all full: two threads wait; one free 1-core slot is not enough,
        // two are
        s.enqueue(wide(12, 0, 12, 2));
        assert!(s.schedule(12, &mut rng).is_empty(), "{policy:?}");
        s.release(5, ActorId(11));
        assert!(s.schedule(13, &mut rng).is_empty(), "{policy:?}");
        s.release(6, ActorId(11));
        let out = s.schedule(14, &mut rng);
        assert_eq!(started_on(&out), vec![(12, ActorId(11))], "{policy:?}");
        assert_eq!(held(&s, 12), 2, "{policy:?}");
        assert!(conserved(&s), "{policy:?}");
    }
}

#[test]
fn a_task_moving_between_slot_sizes_holds_what_each_server_counts() {
    let mut rng = actor_rng(34, "sized");
    let mut s = sized(SlotPolicy::Priority, &[(8, 4), (8, 8)]);
    s.enqueue(wide(1, 0, 0, 2));
    assert_eq!(started_on(&s.schedule(1, &mut rng)), vec![(1, ActorId(10))]);
    assert!(s.begin_move(1, 1));
    // one 2-core slot here, two 1-core slots there while it moves
    assert_eq!(s.slots.free, vec![3, 6]);
    assert!(conserved(&s));
    s.left(1, ActorId(10));
    assert_eq!(s.slots.free, vec![4, 6]);
    assert_eq!(held(&s, 1), 2);
    s.arrived(1);
    s.release(1, ActorId(11));
    assert_eq!(s.slots.free, vec![4, 8]);
    assert!(conserved(&s));
}

#[test]
fn a_task_wider_than_any_server_is_passed_not_held_at_the_head() {
    for policy in POLICIES {
        let mut rng = actor_rng(35, "sized");
        // 8 cores in 4 slots hold at most 8 threads
        let mut s = sized(policy, &[(8, 4), (8, 4)]);
        s.enqueue(wide(1, 5, 0, 9));
        s.enqueue(wide(2, 0, 1, 8));
        let out = s.schedule(1, &mut rng);
        assert_eq!(started_on(&out).len(), 1, "{policy:?}: {out:?}");
        assert_eq!(held(&s, 2), 4, "{policy:?}");
        assert_eq!(
            s.queued(),
            1,
            "{policy:?}: the 9-thread task keeps its place"
        );
    }
}

#[test]
fn under_hybrid_a_task_of_more_slots_than_either_share_is_passed() {
    let mut rng = actor_rng(36, "sized");
    // 8 one-core slots: 2 sticky, 6 regular; 8 threads fit the server but
    // neither share
    let mut s = sized(SlotPolicy::Hybrid, &[(8, 8)]);
    s.enqueue(wide(1, 5, 0, 8));
    for id in 2..5 {
        s.enqueue(task(id, 0, id));
    }
    let out = s.schedule(1, &mut rng);
    assert_eq!(started_on(&out).len(), 3, "{out:?}");
    assert_eq!(s.queued(), 1);
}
