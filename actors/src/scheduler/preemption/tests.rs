//! The slot stage's own tests and the helpers the policies' tests share.

use super::*;
use crate::config::{EvictionPolicy, SchedulerConfig, SlotPolicy};
use crate::kernel::actor_rng;

pub(super) fn task(id: TaskId, priority: u8, arrived: SimTime) -> Task {
    Task {
        priority,
        ..Task::new(id, ActorId(1), arrived, 1_000_000_000)
    }
}

/// A stage of `policy` over servers of (slots, CPU per slot), with
/// two sticky slots under HYBRID.
pub(super) fn stage(
    policy: SlotPolicy,
    eviction: EvictionPolicy,
    servers: &[(u32, f64)],
) -> SlotStage {
    let cfg = SchedulerConfig {
        slots: policy,
        eviction,
        sticky_slots: 2,
        ..SchedulerConfig::default()
    };
    let servers = servers
        .iter()
        .enumerate()
        .map(|(i, &(slots, cpu))| SlotServer {
            id: ActorId(10 + i as u32),
            slots,
            cores: slots,
            cpu_per_slot: cpu,
        })
        .collect();
    SlotStage::new(&cfg, servers).expect("a built-in policy")
}

/// Fills the stage with class-0 tasks started at times 1, 2, 3, ...
/// (task `i` at time `i + 1`).
pub(super) fn fill(s: &mut SlotStage, n: u64, rng: &mut ActorRng) {
    for i in 0..n {
        s.enqueue(task(i, 0, i));
        let out = s.schedule(i + 1, rng);
        assert_eq!(out.len(), 1);
    }
}

/// A placement that takes the first free server and, among servers
/// holding victims, `server` if offered (`None`: keeps the stage's
/// choice); it records the options it was offered.
struct Prefer {
    server: Option<u32>,
    offered: Vec<(u32, TaskId)>,
}

impl SlotPlacer for Prefer {
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        First.choose(task, candidates, rng)
    }

    fn started(&mut self, _: &Task, _: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {}

    fn scores_victims(&self, _: &Task) -> bool {
        true
    }

    fn choose_victim(
        &mut self,
        _: &Task,
        options: &[(u32, TaskId)],
        _: &mut ActorRng,
    ) -> Option<usize> {
        self.offered = options.to_vec();
        options.iter().position(|o| Some(o.0) == self.server)
    }
}

#[test]
fn the_placement_chooses_among_the_victims_the_eviction_rule_ranks_equal() {
    // Two servers of two slots: tasks 0 (started at 1) and 1 (at 2) on
    // server 0; 2 (at 2) and 3 (class 1, at 2) on server 1.
    let run = |eviction, prefer: Option<u32>| {
        let mut rng = actor_rng(7, "t");
        let mut s = stage(SlotPolicy::Priority, eviction, &[(2, 0.5), (2, 0.5)]);
        for (id, class, at) in [(0, 0, 1), (1, 0, 2), (2, 0, 2), (3, 1, 2)] {
            let out = s.try_start(&task(id, class, id), None, at, &mut rng, &mut First);
            assert!(matches!(out, Some(SlotAction::Dispatch { .. })));
        }
        let mut placer = Prefer {
            server: prefer,
            offered: Vec::new(),
        };
        let out = s.try_start(&task(9, 5, 9), None, 10, &mut rng, &mut placer);
        let victim = victim_of(&out.into_iter().collect::<Vec<_>>());
        (victim, placer.offered)
    };
    // MRS over the whole cluster: task 2 (class 1's task 3 is not
    // admissible); task 1 started with it, on the other server.
    let (victim, offered) = run(EvictionPolicy::Mrs, None);
    assert_eq!(victim, Some(2), "no preference: the thesis's choice");
    assert_eq!(offered, vec![(1, 2), (0, 1)], "the rule's own first");
    assert_eq!(run(EvictionPolicy::Mrs, Some(0)).0, Some(1));
    // LRS: task 0, which no other task ties: the placement is not asked
    let (victim, offered) = run(EvictionPolicy::Lrs, Some(1));
    assert_eq!((victim, offered.len()), (Some(0), 0));
    // RND is indifferent: every admissible victim's server is offered
    let (_, offered) = run(EvictionPolicy::Rnd, None);
    assert_eq!(offered.len(), 2);
    assert_eq!(run(EvictionPolicy::Rnd, Some(1)).0, Some(2));
    // a placement without a criterion is not asked
    let mut rng = actor_rng(7, "t");
    let mut s = stage(
        SlotPolicy::Priority,
        EvictionPolicy::Mrs,
        &[(2, 0.5), (2, 0.5)],
    );
    for (id, class, at) in [(0, 0, 1), (1, 0, 2), (2, 0, 2), (3, 1, 2)] {
        s.try_start(&task(id, class, id), None, at, &mut rng, &mut First);
    }
    let out = s.try_start(&task(9, 5, 9), None, 10, &mut rng, &mut First);
    assert_eq!(victim_of(&out.into_iter().collect::<Vec<_>>()), Some(2));
}

/// A placement that takes the first server with a free slot.
pub(super) struct First;

impl SlotPlacer for First {
    fn choose(
        &mut self,
        _: &Task,
        candidates: &dyn Fn(u32) -> bool,
        _: &mut ActorRng,
    ) -> Option<u32> {
        (0..64).find(|&i| candidates(i))
    }

    fn started(&mut self, _: &Task, _: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {}
}

pub(super) fn victim_of(actions: &[SlotAction]) -> Option<TaskId> {
    actions.iter().find_map(|a| match a {
        SlotAction::Preempt { victim, .. } => Some(*victim),
        _ => None,
    })
}

/// First fit that orders `moves` with its next decision and records
/// what the stage told it of each.
#[derive(Default)]
struct Mover {
    moves: Vec<(TaskId, u32)>,
    told: Vec<(TaskId, u32, bool)>,
    /// Books no move it is told began.
    refuse: bool,
}

impl SlotPlacer for Mover {
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        First.choose(task, candidates, rng)
    }

    fn started(&mut self, _: &Task, _: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {}

    fn take_moves(&mut self) -> Vec<(TaskId, u32)> {
        std::mem::take(&mut self.moves)
    }

    fn move_begun(&mut self, task: TaskId, to: u32, begun: bool) -> bool {
        self.told.push((task, to, begun));
        begun && !self.refuse
    }
}

/// Task 1 (class 0) running on server 0 of three one-slot servers.
fn one_task_on_three_servers(rng: &mut ActorRng) -> SlotStage {
    let mut s = stage(
        SlotPolicy::Priority,
        EvictionPolicy::Mrs,
        &[(1, 1.0), (1, 1.0), (1, 1.0)],
    );
    s.enqueue(task(1, 0, 0));
    let started = s.schedule_placed(1, rng, Some(&mut First));
    assert_eq!(started.len(), 1);
    s
}

#[test]
fn a_move_decided_in_a_pass_holds_its_slot_and_its_task_is_no_victim_for_later_decisions() {
    let mut rng = actor_rng(6, "t");
    let mut s = one_task_on_three_servers(&mut rng);
    s.enqueue(task(2, 5, 2));
    s.enqueue(task(3, 5, 3));
    let mut mover = Mover {
        moves: vec![(1, 2)],
        ..Mover::default()
    };
    let actions = s.schedule_placed(4, &mut rng, Some(&mut mover));
    assert_eq!(
        mover.told,
        vec![(1, 2, true)],
        "begun after task 2's decision"
    );
    assert_eq!(actions.len(), 1, "task 2 starts on server 1: {actions:?}");
    assert!(!s.has_free(2), "the target's slot is held for task 1");
    assert!(
        victim_of(&actions).is_none(),
        "task 3 finds no free slot and may not evict the moving task 1"
    );
}

#[test]
fn a_move_onto_the_last_slot_its_own_decision_takes_is_declined() {
    let mut rng = actor_rng(6, "t");
    let mut s = one_task_on_three_servers(&mut rng);
    s.enqueue(task(2, 0, 2));
    let mut mover = Mover {
        moves: vec![(1, 1)],
        ..Mover::default()
    };
    let actions = s.schedule_placed(4, &mut rng, Some(&mut mover));
    assert_eq!(mover.told, vec![(1, 1, false)]);
    assert!(
        matches!(
            actions.as_slice(),
            [SlotAction::Dispatch {
                server: ActorId(11),
                ..
            }]
        ),
        "task 2 takes server 1's slot: {actions:?}"
    );
    assert!(
        s.begin_move(1, 2),
        "task 1 was left as it was, free to move"
    );
}

#[test]
fn a_move_the_placement_could_not_book_is_undone_in_the_stage() {
    let mut rng = actor_rng(6, "t");
    let mut s = one_task_on_three_servers(&mut rng);
    s.enqueue(task(2, 5, 2));
    s.enqueue(task(3, 5, 3));
    let mut mover = Mover {
        moves: vec![(1, 2)],
        refuse: true,
        ..Mover::default()
    };
    let actions = s.schedule_placed(4, &mut rng, Some(&mut mover));
    assert_eq!(mover.told, vec![(1, 2, true)]);
    assert_eq!(
        victim_of(&actions),
        None,
        "task 3 takes server 2's slot, free again: {actions:?}"
    );
    assert_eq!(actions.len(), 2, "{actions:?}");
    s.enqueue(task(4, 5, 5));
    assert_eq!(
        victim_of(&s.schedule(6, &mut rng)),
        Some(1),
        "task 1 is a victim again"
    );
}

/// A priority stage over two one-slot servers running task 1: the
/// stage, the server it runs on and the index of the other.
fn one_task_on_two_servers(rng: &mut ActorRng) -> (SlotStage, ActorId, u32) {
    let mut s = stage(
        SlotPolicy::Priority,
        EvictionPolicy::Mrs,
        &[(1, 1.0), (1, 1.0)],
    );
    s.enqueue(task(1, 0, 0));
    let started = s.schedule(1, rng);
    let Some(SlotAction::Dispatch { server, .. }) = started.first() else {
        panic!("{started:?}");
    };
    let from = *server;
    (s, from, if from == ActorId(10) { 1 } else { 0 })
}

#[test]
fn a_migrating_task_holds_both_slots_until_it_leaves_and_is_no_victim_until_it_arrives() {
    let mut rng = actor_rng(6, "t");
    let (mut s, from, to) = one_task_on_two_servers(&mut rng);
    assert!(s.begin_move(1, to));
    assert!(!s.has_free(0) && !s.has_free(1), "both slots held");
    assert!(!s.begin_move(1, to), "already moving");
    s.enqueue(task(2, 5, 2));
    assert!(
        victim_of(&s.schedule(2, &mut rng)).is_none(),
        "no victim while it moves"
    );
    s.left(1, from);
    assert!(s.has_free(from.0 - 10), "its old slot is free once it left");
    let placed = s.schedule(3, &mut rng);
    assert_eq!(placed.len(), 1, "the queued task takes the old slot");
    s.arrived(1);
    s.enqueue(task(3, 5, 4));
    assert_eq!(
        victim_of(&s.schedule(4, &mut rng)),
        Some(1),
        "evictable once it runs on its new server"
    );
}

#[test]
fn a_task_that_ends_while_migrating_frees_both_slots() {
    let mut rng = actor_rng(7, "t");
    let (mut s, from, to) = one_task_on_two_servers(&mut rng);
    assert!(s.begin_move(1, to));
    s.release(1, from);
    assert!(s.has_free(0) && s.has_free(1));
    assert_eq!(s.slots.free_total, 2, "slots conserved");
}

/// A placement that needs more than a slot (as with flows or an
/// energy-aware placement): no victim on server `refused` makes room.
struct Gate {
    refused: u32,
    started: Vec<(TaskId, u32, Option<TaskId>)>,
}

impl SlotPlacer for Gate {
    fn choose(&mut self, _: &Task, ok: &dyn Fn(u32) -> bool, _: &mut ActorRng) -> Option<u32> {
        (0..2).find(|&i| ok(i) && i != self.refused)
    }

    fn started(&mut self, t: &Task, at: u32, v: &[TaskId], _: SimTime, _: &mut ActorRng) {
        self.started.push((t.id, at, v.first().copied()));
    }

    fn gates_victims(&self, _: &Task) -> bool {
        true
    }

    fn victim_fits(&mut self, _: &Task, server: u32, _: TaskId) -> bool {
        server != self.refused
    }
}

#[test]
fn a_placement_that_needs_room_evicts_only_where_the_eviction_makes_it() {
    let mut rng = actor_rng(7, "t");
    let mut s = stage(
        SlotPolicy::Priority,
        EvictionPolicy::Mrs,
        &[(2, 0.5), (2, 0.5)],
    );
    fill(&mut s, 4, &mut rng);
    let server: BTreeMap<TaskId, u32> = s
        .slots
        .running
        .iter()
        .map(|(&t, r)| (t, r.server))
        .collect();
    let refused = server[&3];
    // MRS would evict task 3, the youngest; its server makes no room
    let expected = (0..4).rev().find(|t| server[t] != refused);
    let mut gate = Gate {
        refused,
        started: Vec::new(),
    };
    s.enqueue(task(100, 4, 50));
    let out = s.schedule_placed(60, &mut rng, Some(&mut gate));
    assert_eq!(victim_of(&out), expected);
    assert_eq!(gate.started, vec![(100, 1 - refused, expected)]);
    // through an admission stage's scope, only the refused server: none
    let only = |i: u32| i == refused;
    let late = task(101, 4, 51);
    assert_eq!(
        s.try_start(&late, Some(&only), 70, &mut rng, &mut gate),
        None
    );
    assert_eq!(s.preemptions, 1);
}

#[test]
fn the_queue_runs_by_priority_then_first_arrival() {
    let mut rng = actor_rng(4, "t");
    let mut s = stage(SlotPolicy::Priority, EvictionPolicy::Mrs, &[(1, 0.5)]);
    s.enqueue(task(1, 0, 30));
    s.enqueue(task(2, 0, 10));
    s.enqueue(task(3, 0, 20));
    let order: Vec<TaskId> = (0..3)
        .map(|i| {
            let out = s.schedule(100 + i, &mut rng);
            let SlotAction::Dispatch { task, server } = &out[0] else {
                panic!("{out:?}")
            };
            s.release(task.id, *server);
            task.id
        })
        .collect();
    assert_eq!(order, vec![2, 3, 1], "an evicted task keeps its place");
}

#[test]
fn a_task_evicted_past_the_threshold_is_dropped() {
    let cfg = SchedulerConfig {
        slots: SlotPolicy::Priority,
        eviction_threshold: 2,
        ..SchedulerConfig::default()
    };
    let mut s = SlotStage::new(
        &cfg,
        vec![SlotServer {
            id: ActorId(3),
            slots: 1,
            cores: 1,
            cpu_per_slot: 0.5,
        }],
    )
    .expect("a built-in policy");
    let mut t = task(1, 0, 0);
    t.evictions = 2;
    assert_eq!(s.evicted(t.clone(), ActorId(3)), Returned::Requeued);
    let mut rng = actor_rng(8, "t");
    s.schedule(1, &mut rng);
    t.evictions = 3;
    assert_eq!(s.evicted(t.clone(), ActorId(3)), Returned::Dropped(t));
    assert_eq!(s.queued(), 0);
}

#[test]
fn a_preempted_victims_late_release_frees_nothing() {
    let mut rng = actor_rng(9, "t");
    let mut s = stage(SlotPolicy::Priority, EvictionPolicy::Mrs, &[(1, 0.5)]);
    s.enqueue(task(1, 0, 0));
    s.schedule(1, &mut rng);
    s.enqueue(task(2, 5, 1));
    assert_eq!(victim_of(&s.schedule(2, &mut rng)), Some(1));
    // The victim finished before the preemption reached its server.
    s.release(1, ActorId(10));
    s.enqueue(task(3, 0, 2));
    assert!(s.schedule(3, &mut rng).is_empty(), "task 2 holds the slot");
    s.release(2, ActorId(10));
    assert_eq!(s.schedule(4, &mut rng).len(), 1);
}
