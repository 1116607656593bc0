//! Distributed runs under a slot stage (issue 22): how a gang takes slots.
//!
//! A run progresses only while all its units run (its coordinator's rate
//! needs every unit, ASPLOS'16 §3.2), so it starts whole or not at all,
//! one unit per host (Figure 5). Under a slot stage:
//!
//! - each unit is a task and takes the slots its threads need on its
//!   server (`crate::slot_share`: a slot per thread where slots are at
//!   most a core, thesis §6.2.3.1);
//! - the run queues as its unit 0, with the run's priority class (its
//!   tenant's) and first arrival (§6.2.3.2), the other units beside it;
//! - at the head of the priority order (phase II), it starts only if every
//!   unit finds a free slot, within the regular share (HYBRID's sticky
//!   slots are for phase I's single tasks, §9.2.1), on a server of its own
//!   that the placement accepts; otherwise nothing of it starts and it
//!   holds the head of the queue, as any task that gets no slot does;
//! - WASP's level for production (§8.1.2) does not bind it: a run's speed
//!   follows its slowest units (ASPLOS'16 §3.3), so its units take free
//!   slots of any level;
//! - it evicts nothing to make room: the thesis evicts one victim for one
//!   evictor (§6.2.3.3), and a run would have to evict up to one task per
//!   unit and lose all their work whenever it still could not start;
//! - its units are evictable like any task of their class (§6.2.3.3):
//!   an evicted unit ends the run's attempt, its other units are stopped
//!   and the run queues again whole (`scheduler/run_ledger.rs`, as a unit
//!   killed for a primary tenant); the eviction threshold (§7.3.4) counts
//!   tasks, not runs, so it drops no unit.

use std::collections::BTreeSet;

use dcemu_topology::SimTime;

use super::{Admits, SlotAction, SlotPlacer, SlotStage};
use crate::kernel::{ActorId, ActorRng};
use crate::sampling::index;
use crate::task::{Task, TaskId};

impl SlotStage {
    /// Queues a distributed run: its unit 0 `first` takes the run's place
    /// in the queue, `rest` (the other units) wait beside it.
    pub fn enqueue_gang(&mut self, first: Task, rest: Vec<Task>) {
        self.gang_rest.insert(first.id, rest);
        self.enqueue(first);
    }

    /// Starts the run of unit 0 `first` and other units `rest`, which an
    /// admission stage holds in its own queue, if every unit gets a free
    /// slot on its own server `allowed` admits; `None` starts nothing.
    /// The moves the placer's unit choices ordered are begun once the
    /// run's decision is over, whatever it was ([`SlotPlacer::take_moves`]).
    pub fn try_start_gang(
        &mut self,
        first: &Task,
        rest: &[Task],
        allowed: Admits<'_>,
        now: SimTime,
        rng: &mut ActorRng,
        placer: &mut dyn SlotPlacer,
    ) -> Option<SlotAction> {
        let units: Vec<Task> = std::iter::once(first.clone())
            .chain(rest.iter().cloned())
            .collect();
        let servers = self.gang_servers(&units, allowed, Some(&mut *placer), now, rng);
        let action = servers.map(|servers| self.start_gang(units, servers, now));
        self.slots.begin_moves(placer, None, &[]);
        action
    }

    /// Starts the queued run whose unit 0 is `id`, if it can start whole;
    /// then begins the moves its unit choices ordered, as
    /// [`SlotStage::try_start_gang`] does.
    pub(super) fn start_queued_gang(
        &mut self,
        id: TaskId,
        now: SimTime,
        mut placer: Option<&mut (dyn SlotPlacer + '_)>,
        rng: &mut ActorRng,
    ) -> Option<SlotAction> {
        let first = self.tasks.get(&id)?.clone();
        let rest = self.gang_rest.get(&id)?;
        let units: Vec<Task> = std::iter::once(first).chain(rest.iter().cloned()).collect();
        let servers = self.gang_servers(&units, None, placer.as_deref_mut(), now, rng);
        let action = servers.map(|servers| {
            self.take(id);
            self.gang_rest.remove(&id);
            self.start_gang(units, servers, now)
        });
        if let Some(p) = placer {
            self.slots.begin_moves(p, None, &[]);
        }
        action
    }

    /// A server for each unit, in unit order: a free slot on a server no
    /// other unit of the run has, that `allowed` admits, chosen by
    /// `placer` (for all units at once if it places gangs, `annealing`;
    /// each choice checked all the same) and booked there as it goes, so that the next unit sees
    /// it (a shared link's bandwidth; or uniformly among such free slots
    /// without a placer, §6.2.3.1). `None` if one unit finds none, or the
    /// run would exceed the regular share: then the placer's bookings are
    /// undone. The slot stage's own ledger is booked by `start_gang`.
    fn gang_servers(
        &self,
        units: &[Task],
        allowed: Admits<'_>,
        mut placer: Option<&mut (dyn SlotPlacer + '_)>,
        now: SimTime,
        rng: &mut ActorRng,
    ) -> Option<Vec<u32>> {
        let n: u32 = units.iter().map(|u| self.slots.fewest(u.cores)).sum();
        let regular = self.slots.total - self.sticky_cap;
        if self.regular_used + n > regular || self.slots.free_total < n {
            return None;
        }
        let joint = match placer.as_deref_mut() {
            Some(p) if p.places_gangs() => {
                let widest = units.iter().map(|u| u.cores).max().unwrap_or(1);
                let free = |i: u32| {
                    self.slots.has_room(i, self.slots.slots_at(i, widest))
                        && allowed.is_none_or(|ok| ok(i))
                };
                let hosts = p.choose_gang(units, &free, rng)?;
                if hosts.len() != units.len() {
                    return None;
                }
                Some(hosts)
            }
            _ => None,
        };
        let mut used = BTreeSet::new();
        let mut servers: Vec<u32> = Vec::with_capacity(units.len());
        for (k, unit) in units.iter().enumerate() {
            let candidates = |i: u32| {
                self.slots.has_room(i, self.slots.slots_at(i, unit.cores))
                    && allowed.is_none_or(|ok| ok(i))
                    && !used.contains(&i)
            };
            let server = match placer.as_deref_mut() {
                Some(p) => joint
                    .as_ref()
                    .map_or_else(|| p.choose(unit, &candidates, rng), |h| h.get(k).copied())
                    .filter(|&i| candidates(i))
                    .filter(|&i| p.start_unit(unit, i, now, rng)),
                None => self.random_free_of(&candidates, rng),
            };
            let Some(server) = server else {
                if let Some(p) = placer.as_deref_mut() {
                    for (u, &i) in units.iter().zip(&servers) {
                        p.withdraw(u, i);
                    }
                }
                return None;
            };
            used.insert(server);
            servers.push(server);
        }
        let taken: u32 = units
            .iter()
            .zip(&servers)
            .map(|(u, &i)| self.slots.slots_at(i, u.cores))
            .sum();
        if self.regular_used + taken > regular {
            if let Some(p) = placer {
                for (u, &i) in units.iter().zip(&servers) {
                    p.withdraw(u, i);
                }
            }
            return None;
        }
        Some(servers)
    }

    /// A uniformly random free slot among the servers `candidates` holds
    /// (those with room for the unit).
    fn random_free_of(&self, candidates: &dyn Fn(u32) -> bool, rng: &mut ActorRng) -> Option<u32> {
        let free: Vec<(u32, u32)> = (0..self.slots.servers.len() as u32)
            .filter(|&i| candidates(i))
            .map(|i| (i, self.slots.free[i as usize]))
            .collect();
        let total: u32 = free.iter().map(|f| f.1).sum();
        if total == 0 {
            return None;
        }
        let mut k = index(rng, total);
        for (i, f) in free {
            if k < f {
                return Some(i);
            }
            k -= f;
        }
        None
    }

    /// Starts every unit on its server, in regular slots (the placer, if
    /// any, booked them already).
    fn start_gang(&mut self, units: Vec<Task>, servers: Vec<u32>, now: SimTime) -> SlotAction {
        let mut started: Vec<(Task, ActorId)> = Vec::with_capacity(units.len());
        for (task, server) in units.into_iter().zip(servers) {
            if let SlotAction::Dispatch { task, server } = self.start(task, server, now, false) {
                started.push((task, server));
            }
        }
        SlotAction::Gang { units: started }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{First, stage, task, victim_of};
    use super::*;
    use crate::config::{EvictionPolicy, SlotPolicy};
    use crate::distributed::DistRef;
    use crate::kernel::actor_rng;

    /// Unit `unit` of a run of `units` (task `run + unit`) of `priority`.
    fn unit(run: TaskId, unit: u16, units: u16, priority: u8) -> Task {
        Task {
            dist: Some(DistRef {
                app: 0,
                run,
                unit,
                units,
                qos_ppm: 0,
                coordinator: None,
                attempt: 0,
                fixed_ns: 0,
            }),
            ..task(run + u64::from(unit), priority, 5)
        }
    }

    fn gang(run: TaskId, units: u16, priority: u8) -> (Task, Vec<Task>) {
        let first = unit(run, 0, units, priority);
        let rest = (1..units).map(|u| unit(run, u, units, priority)).collect();
        (first, rest)
    }

    /// Free slots plus slots held by running tasks: every slot, always.
    fn conserved(s: &SlotStage) -> bool {
        s.slots.free_total + s.slots.running.len() as u32 == s.slots.total
            && s.slots.free.iter().sum::<u32>() == s.slots.free_total
    }

    fn started(actions: &[SlotAction]) -> Vec<Vec<(TaskId, ActorId)>> {
        actions
            .iter()
            .filter_map(|a| match a {
                SlotAction::Gang { units } => Some(units.iter().map(|(t, s)| (t.id, *s)).collect()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_gang_starts_whole_on_distinct_hosts_or_not_at_all() {
        for policy in [SlotPolicy::Priority, SlotPolicy::Wasp, SlotPolicy::Hybrid] {
            let mut rng = actor_rng(3, "gang");
            // three servers of two slots; two tasks fill server 0 (under
            // HYBRID in its two sticky slots)
            let mut s = stage(policy, EvictionPolicy::Mrs, &[(2, 1.0), (2, 1.0), (2, 1.0)]);
            for id in 0..2 {
                s.enqueue(task(id, 0, id));
            }
            assert_eq!(s.schedule_placed(1, &mut rng, Some(&mut First)).len(), 2);
            let (first, rest) = gang(100, 3, 0);
            s.enqueue_gang(first, rest);
            s.enqueue(task(50, 0, 9));
            // two hosts with free slots for three units: nothing of the run
            // starts, it evicts nothing, and it holds the head of the queue
            let out = s.schedule_placed(2, &mut rng, Some(&mut First));
            assert!(out.is_empty(), "{policy:?}: {out:?}");
            assert_eq!((s.queued(), s.slots.free_total), (4, 4), "{policy:?}");
            assert!(conserved(&s), "{policy:?}");
            // server 0's tasks leave one by one: the run starts whole once
            // three hosts have a free slot it may take
            let mut runs = Vec::new();
            for (at, id) in [(3, 1), (4, 0)] {
                s.release(id, ActorId(10));
                let out = s.schedule_placed(at, &mut rng, Some(&mut First));
                assert!(conserved(&s), "{policy:?}");
                assert_eq!(victim_of(&out), None, "{policy:?}: {out:?}");
                runs.extend(started(&out));
                if !runs.is_empty() {
                    break;
                }
                assert_eq!(s.slots.running.len(), out.len() + 1, "{policy:?}: {out:?}");
            }
            assert_eq!(runs.len(), 1, "{policy:?}");
            let ids: Vec<TaskId> = runs[0].iter().map(|u| u.0).collect();
            assert_eq!(ids, vec![100, 101, 102], "{policy:?}");
            let mut hosts: Vec<ActorId> = runs[0].iter().map(|u| u.1).collect();
            hosts.sort();
            hosts.dedup();
            assert_eq!(hosts.len(), 3, "{policy:?}: distinct hosts");
        }
    }

    /// A placement that books each unit as it starts and cannot book one
    /// on server `refused` (its path is full): it records what it booked
    /// and what it had to undo.
    struct Booking {
        refused: u32,
        booked: Vec<(TaskId, u32)>,
        withdrawn: Vec<(TaskId, u32)>,
    }

    impl SlotPlacer for Booking {
        fn choose(&mut self, t: &Task, ok: &dyn Fn(u32) -> bool, r: &mut ActorRng) -> Option<u32> {
            First.choose(t, ok, r)
        }

        fn started(&mut self, t: &Task, at: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {
            self.booked.push((t.id, at));
        }

        fn start_unit(&mut self, t: &Task, at: u32, now: SimTime, r: &mut ActorRng) -> bool {
            if at == self.refused {
                return false;
            }
            self.started(t, at, &[], now, r);
            true
        }

        fn withdraw(&mut self, t: &Task, at: u32) {
            self.withdrawn.push((t.id, at));
        }
    }

    #[test]
    fn a_gang_whose_last_unit_cannot_be_booked_undoes_the_others() {
        let mut rng = actor_rng(5, "gang");
        let mut s = stage(
            SlotPolicy::Priority,
            EvictionPolicy::Mrs,
            &[(1, 1.0), (1, 1.0), (1, 1.0)],
        );
        let (first, rest) = gang(10, 3, 0);
        s.enqueue_gang(first, rest);
        let mut placer = Booking {
            refused: 2,
            booked: Vec::new(),
            withdrawn: Vec::new(),
        };
        assert!(s.schedule_placed(1, &mut rng, Some(&mut placer)).is_empty());
        assert_eq!(placer.booked, vec![(10, 0), (11, 1)]);
        assert_eq!(placer.withdrawn, placer.booked, "every booking undone");
        assert_eq!((s.slots.free_total, s.queued()), (3, 3), "nothing started");
        assert!(conserved(&s));
        placer.refused = 9;
        let out = s.schedule_placed(2, &mut rng, Some(&mut placer));
        assert_eq!(started(&out).len(), 1, "it starts once its paths are free");
        assert!(conserved(&s));
    }

    #[test]
    fn a_gang_needs_as_many_hosts_as_units_and_its_units_are_evictable() {
        let mut rng = actor_rng(4, "gang");
        // one server of four free slots: a run of two never starts there
        let mut s = stage(SlotPolicy::Priority, EvictionPolicy::Mrs, &[(4, 1.0)]);
        let (first, rest) = gang(10, 2, 0);
        s.enqueue_gang(first.clone(), rest.clone());
        assert!(s.schedule(1, &mut rng).is_empty());
        assert_eq!(s.queued(), 2);
        let only = |_: u32| true;
        let allowed: Admits<'_> = Some(&only);
        let tried = s.try_start_gang(&first, &rest, allowed, 1, &mut rng, &mut First);
        assert_eq!(tried, None);
        assert_eq!(s.slots.free_total, 4, "nothing booked");
        // two servers: it starts, and a higher class evicts one unit
        let mut s = stage(
            SlotPolicy::Priority,
            EvictionPolicy::Mrs,
            &[(1, 1.0), (1, 1.0)],
        );
        s.enqueue_gang(first, rest);
        let out = s.schedule(1, &mut rng);
        assert_eq!(started(&out).len(), 1);
        assert_eq!(s.queued(), 0);
        s.enqueue(task(7, 5, 2));
        let victim = victim_of(&s.schedule(2, &mut rng));
        assert!(matches!(victim, Some(10 | 11)), "{victim:?}");
        assert!(conserved(&s));
    }

    /// A placement that chooses a run's hosts jointly, as `annealing` does
    /// under a slot stage, proposing `hosts` whatever the stage allows.
    struct Joint {
        hosts: Vec<u32>,
    }

    impl SlotPlacer for Joint {
        fn choose(&mut self, t: &Task, ok: &dyn Fn(u32) -> bool, r: &mut ActorRng) -> Option<u32> {
            First.choose(t, ok, r)
        }

        fn started(&mut self, _: &Task, _: u32, _: &[TaskId], _: SimTime, _: &mut ActorRng) {}

        fn choose_gang(
            &mut self,
            _: &[Task],
            _: &dyn Fn(u32) -> bool,
            _: &mut ActorRng,
        ) -> Option<Vec<u32>> {
            Some(self.hosts.clone())
        }

        fn places_gangs(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_gang_placed_jointly_starts_only_in_free_slots_on_distinct_hosts() {
        for policy in [SlotPolicy::Priority, SlotPolicy::Wasp, SlotPolicy::Hybrid] {
            let mut rng = actor_rng(6, "gang");
            let mut s = stage(policy, EvictionPolicy::Mrs, &[(2, 1.0), (2, 1.0), (2, 1.0)]);
            for id in 0..2 {
                s.enqueue(task(id, 0, id));
            }
            assert_eq!(s.schedule_placed(1, &mut rng, Some(&mut First)).len(), 2);
            assert!(!s.slots.has_free(0), "{policy:?}: server 0 is full");
            let (first, rest) = gang(100, 2, 0);
            s.enqueue_gang(first, rest);
            // a host without a free slot, or one host for two units:
            // nothing of the run starts, nothing stays booked
            for hosts in [vec![0, 1], vec![1, 0], vec![2, 2], vec![1], vec![1, 7]] {
                let mut placer = Joint { hosts };
                let out = s.schedule_placed(2, &mut rng, Some(&mut placer));
                assert!(started(&out).is_empty(), "{policy:?}: {out:?}");
                assert_eq!((s.queued(), s.slots.free_total), (2, 4), "{policy:?}");
                assert!(conserved(&s), "{policy:?}");
            }
            let out = s.schedule_placed(3, &mut rng, Some(&mut Joint { hosts: vec![2, 1] }));
            assert_eq!(
                started(&out),
                vec![vec![(100, ActorId(12)), (101, ActorId(11))]],
                "{policy:?}: where the placement chose"
            );
            assert_eq!((s.queued(), s.slots.free_total), (0, 2), "{policy:?}");
            assert!(conserved(&s), "{policy:?}");
        }
    }
}
