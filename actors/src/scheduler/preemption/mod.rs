//! The thesis's slot stages (`scheduler.slots = priority | wasp | hybrid`):
//! slot-based assignment with a central priority queue, preemptive priority
//! evictions, workload-aware slot choice and sticky slots.
//!
//! This file is what the three share; what differs between them is a
//! [`Preemption`], one file per policy, and `registry.rs` maps
//! `scheduler.slots` to it (docs/scheduler.md, "Adding a policy"):
//!
//! - **Slots** (thesis §6.2.3.1): a task takes one slot per thread, all on
//!   one server, placed, evicted and released together: the thesis's
//!   single-threaded tasks one slot each, a four-thread application four
//!   (as Hadoop gives a job a slot per task, issue 39). A server runs at
//!   most its slot count.
//! - **Queue** (§6.2.3.2, Statement 7.1): by priority, highest first, then by
//!   first arrival (`Task::submitted_at`, which an evicted task keeps, so it
//!   goes back in front of the tasks of its class that never ran).
//! - **Time slots** (§6.2.3.2): the queue is scheduled at the start of each
//!   `slot_interval` until it is empty or no task at its head can get a slot.
//! - **Evictions** (§6.2.3.3): a task that finds no free slot evicts the
//!   running task its policy names, if any, and takes the freed slot at once.
//!   One that needs `k` slots evicts by the same rule on the server of the
//!   rule's first pick until `k` slots are free there (the server's free
//!   slots count), or, where that server cannot give `k`, evicts nothing
//!   there and asks the rule again among the other servers.
//!   A task evicted more than `eviction_threshold` times leaves (§7.3.4).
//! - **Sticky slots** (§9.2.1): a policy may hold a pool of slots back for
//!   a first phase that takes the queue in first-arrival order,
//!   non-preemptively.
//! - The policies: `priority.rs` (§6.2.3.3, §7.3.1: the lowest running
//!   priority, by `mrs` / `rnd` / `lrs`, `eviction.rs`), `wasp.rs` (§8.1.2:
//!   production on the most powerful slots) and `hybrid.rs` (§9.2: sticky
//!   slots, then WASP); a crate of yours adds one with a
//!   [`PreemptionPolicy`] and [`register`] (`custom.rs`).
//!
//! This is the scheduler's view: slots it gave out, freed when the server's
//! `Finished` or `Evicted` arrives (a server may free a slot earlier; never
//! later), so a server is never sent more tasks than it has slots.

pub mod custom;
mod eviction;
mod eviction_stats;
mod fenwick;
mod gang;
mod hybrid;
// A local variable named `priority` in this file would read as a path into
// this module to the layers test (actors/tests/layers.rs): they are `class`.
mod placer;
mod priority;
mod registry;
#[cfg(test)]
mod size_tests;
mod slots;
mod wasp;
#[cfg(test)]
mod wide_tests;

pub use custom::{PreemptionContext, PreemptionPolicy, register};
pub use eviction::pick;
pub use eviction_stats::EvictionStats;
pub use registry::build;

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};

use dcemu_topology::SimTime;

use crate::config::EvictionPolicy;
use crate::kernel::{ActorId, ActorRng, Metrics};
use crate::task::{Task, TaskId};

pub use placer::{RunningSlot, SlotPlacer};
pub use slots::{Admits, Scope, SlotServer, Slots};
use slots::{Need, Run};

/// What one slot policy decides; the rest (queue, slots, time slots,
/// thresholds) is the stage's. Each policy is one file of this folder;
/// `registry.rs` maps `scheduler.slots` to it, and a crate adds its own
/// through [`register`].
///
/// Randomness comes only from the `rng` argument (the scheduler's stream),
/// and a policy reads nothing but its arguments (no clock, no process
/// state), so a run stays deterministic: the same digest on any
/// partitioning.
pub trait Preemption: Send {
    /// How many slots are sticky (HYBRID's pool, §9.2.1; capped at the
    /// cluster's slots). While fewer tasks hold one, a start goes to a
    /// sticky slot: phase I takes the queue in first-arrival order onto
    /// them, whatever the priority; the other starts share the rest.
    /// 0 (the default): no sticky phase.
    fn sticky_slots(&self) -> u32 {
        0
    }

    /// Whether phase I may put `task`, queued, on a sticky slot at `now`
    /// (HYBRID, §9.2.1, [`crate::config::StickyPhase`]); only asked while
    /// [`Preemption::sticky_slots`] has one free.
    fn sticky_admits(&self, _task: &Task, _now: SimTime) -> bool {
        true
    }

    /// Whether a task that starts now (in a sticky slot or not) may ever be
    /// priority-evicted. Every running task may (§6.2.3.3), except where
    /// a policy protects some (HYBRID's sticky tasks, §9.2.1).
    fn evictable(&self, _sticky: bool) -> bool {
        true
    }

    /// The level (see [`Slots`]: servers of equal CPU per slot, most
    /// powerful first) whose free slots a task of `priority` must take, on
    /// the servers `admits` holds; `None`: any free slot. WASP gives
    /// production the most powerful level with a free slot (§8.1.2).
    fn level(&self, _priority: u8, _slots: &Slots, _admits: Admits<'_>) -> Option<u16> {
        None
    }

    /// The running task a task of `priority` that found no free slot
    /// evicts, among those `scope` holds; `None`: it waits. Only an
    /// evictable task of strictly lower priority may be chosen (§6.2.3.3).
    fn victim(
        &self,
        priority: u8,
        slots: &Slots,
        scope: Scope<'_>,
        rng: &mut ActorRng,
    ) -> Option<TaskId>;

    /// Every running task that [`Preemption::victim`] chooses from (the
    /// admissible victims: its class, WASP's level, within `scope`), least
    /// recently started first, so that the placement may choose among
    /// them by its own criterion. Draws nothing.
    fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId>;

    /// The rule `victim` applies among the admissible victims
    /// (`scheduler.eviction`, §6.2.3.3).
    fn eviction(&self) -> EvictionPolicy;

    /// Adds the policy's own counters to the run's metrics, at its end.
    /// None by default (the stage's are `preemptions` and the like).
    fn finish(&self, _out: &mut Metrics) {}
}

/// What a scheduling pass decided.
#[derive(Debug, PartialEq)]
pub enum SlotAction {
    /// Run `task` in a free slot of `server`.
    Dispatch { task: Task, server: ActorId },
    /// Evict `victim` (and `also`, for a task of more slots than one
    /// victim frees) from `server` and run `task` in their slots.
    Preempt {
        victim: TaskId,
        victim_priority: u8,
        task: Task,
        server: ActorId,
        also: Vec<TaskId>,
    },
    /// Run every unit of a distributed run, each in a free slot of its own
    /// server, unit 0 first (`gang.rs`).
    Gang { units: Vec<(Task, ActorId)> },
}

/// A task evicted more than `eviction_threshold` times leaves (§7.3.4).
#[derive(Debug, PartialEq)]
pub enum Returned {
    Requeued,
    /// Back to the admission stage that holds the queue (`admission` other
    /// than `fifo`).
    ToAdmission(Task),
    Dropped(Task),
}

/// The slot stage: the queue, the slots and the policy's decisions.
pub struct SlotStage {
    policy: Box<dyn Preemption>,
    slots: Slots,
    threshold: u32,
    /// Sticky slots (the policy's, capped at the cluster's); the other
    /// starts share the rest.
    sticky_cap: u32,
    sticky_used: u32,
    regular_used: u32,
    tasks: BTreeMap<TaskId, Task>,
    /// Queued distributed runs: unit 0's task (in `tasks`) → the other
    /// units (`gang.rs`).
    gang_rest: BTreeMap<TaskId, Vec<Task>>,
    by_priority: BTreeSet<(Reverse<u8>, SimTime, TaskId)>,
    by_arrival: BTreeSet<(SimTime, TaskId)>,
    /// Victims whose `Preempt` is on its way: their slot already went to
    /// the evictor, so their `Finished` or `Evicted` frees nothing.
    preempted: BTreeSet<TaskId>,
    preemptions: u64,
    /// Preemptions whose victim was of class 0: §8.2.1 and §9.3.1 report
    /// that on SC3, SC4 and WASC every priority eviction hits class 0.
    preemptions_class0: u64,
    /// Preemptions whose victim the placement chose instead of the
    /// eviction rule's own pick ([`SlotStage::placed_victim`]).
    victims_placed: u64,
    sticky_starts: u64,
    /// Sticky starts of tasks evicted before: phase I is meant for the
    /// long-waited and evicted tasks (§9.2.1).
    sticky_starts_evicted: u64,
    dropped: u64,
}

impl SlotStage {
    /// The stage over `servers` with `policy`'s decisions (`SlotStage::new`,
    /// in `registry.rs`, picks the scenario's); a task evicted more than
    /// `threshold` times is dropped (0: never).
    fn with_policy(policy: Box<dyn Preemption>, threshold: u32, servers: Vec<SlotServer>) -> Self {
        let slots = Slots::new(servers);
        SlotStage {
            sticky_cap: policy.sticky_slots().min(slots.total),
            policy,
            slots,
            threshold,
            sticky_used: 0,
            regular_used: 0,
            tasks: BTreeMap::new(),
            gang_rest: BTreeMap::new(),
            by_priority: BTreeSet::new(),
            by_arrival: BTreeSet::new(),
            preempted: BTreeSet::new(),
            preemptions: 0,
            preemptions_class0: 0,
            victims_placed: 0,
            sticky_starts: 0,
            sticky_starts_evicted: 0,
            dropped: 0,
        }
    }

    pub fn queued(&self) -> usize {
        self.tasks.len() + self.gang_rest.values().map(Vec::len).sum::<usize>()
    }

    /// Whether server `i` has a free slot.
    pub fn has_free(&self, i: u32) -> bool {
        self.slots.has_free(i)
    }

    /// Whether server `i` has room for `task`: its slots there free.
    pub fn has_room(&self, i: u32, task: &Task) -> bool {
        self.slots.has_room(i, self.slots.slots_at(i, task.cores))
    }

    /// Paragon's migration (§3.4) under a slot stage: running `task` is to
    /// move to a free slot of server `to`, which it holds from now on. It
    /// cannot be evicted until it runs there ([`SlotStage::arrived`]).
    /// `false` if it is not running, already moving, or `to` has no free
    /// slot.
    pub fn begin_move(&mut self, task: TaskId, to: u32) -> bool {
        self.slots.begin_move(task, to)
    }

    /// A migrating task left `from` with its progress: its slots there are
    /// free, and its share counts the slots it holds on its new server.
    pub fn left(&mut self, task: TaskId, from: ActorId) {
        let Some((before, now, sticky)) = self.slots.left(task, from) else {
            return;
        };
        let used = match sticky {
            true => &mut self.sticky_used,
            false => &mut self.regular_used,
        };
        *used = (*used + now).saturating_sub(before);
    }

    /// A migrated task is dispatched to its new server: it can be evicted
    /// there from now on, as its policy allows.
    pub fn arrived(&mut self, task: TaskId) {
        let sticky = self.slots.running.get(&task).is_some_and(|r| r.sticky);
        let evictable = self.policy.evictable(sticky);
        self.slots.arrived(task, evictable);
    }

    pub fn slots_total(&self) -> u32 {
        self.slots.total
    }

    /// Puts a task in the central queue at its first arrival.
    pub fn enqueue(&mut self, task: Task) {
        self.by_priority
            .insert((Reverse(task.priority), task.submitted_at, task.id));
        self.by_arrival.insert((task.submitted_at, task.id));
        self.tasks.insert(task.id, task);
    }

    /// A task left `server` (finished, killed or evicted there): its slot is
    /// free again, unless it had been preempted and the slot already went to
    /// its evictor.
    pub fn release(&mut self, task: TaskId, server: ActorId) {
        if self.preempted.remove(&task) {
            return;
        }
        let Some(r) = self.slots.vacate(task, server) else {
            return;
        };
        if r.sticky {
            self.sticky_used -= r.slots;
        } else {
            self.regular_used -= r.slots;
        }
    }

    /// An evicted task came back: requeue it, or drop it past the
    /// eviction threshold (thesis §7.3.4).
    pub fn evicted(&mut self, task: Task, server: ActorId) -> Returned {
        match self.evicted_out(task, server) {
            Returned::ToAdmission(task) => {
                self.enqueue(task);
                Returned::Requeued
            }
            other => other,
        }
    }

    /// The same when an admission stage holds the queue: the task goes back
    /// to it, unless dropped.
    pub fn evicted_out(&mut self, task: Task, server: ActorId) -> Returned {
        self.release(task.id, server);
        if self.threshold > 0 && task.evictions > self.threshold {
            self.dropped += 1;
            return Returned::Dropped(task);
        }
        Returned::ToAdmission(task)
    }

    /// Whether a start of `n` slots goes to sticky slots
    /// ([`Preemption::sticky_slots`]): the pool counts slots.
    fn sticky_free(&self, n: u32) -> bool {
        self.sticky_used + n <= self.sticky_cap
    }

    /// Whether a regular (not sticky) start of `n` slots is within its
    /// share of slots.
    fn regular_free(&self, n: u32) -> bool {
        self.regular_used + n <= self.slots.total - self.sticky_cap
    }

    /// Slots the sticky pool and the regular share have left.
    fn sticky_left(&self) -> u32 {
        self.sticky_cap.saturating_sub(self.sticky_used)
    }

    fn regular_left(&self) -> u32 {
        (self.slots.total - self.sticky_cap).saturating_sub(self.regular_used)
    }

    /// The level [`Preemption::level`] names for a start of `task` on the
    /// servers `allowed` admits, among those with room for `need`.
    fn level_for(&self, task: &Task, need: Need, allowed: Admits<'_>) -> Option<u16> {
        if self.slots.one_slot(need) {
            return self.policy.level(task.priority, &self.slots, allowed);
        }
        let room = |i: u32| self.slots.fits(i, need) && allowed.is_none_or(|ok| ok(i));
        self.policy.level(task.priority, &self.slots, Some(&room))
    }

    /// Starts `task`, which an admission stage holds in its own queue, if
    /// it can start now on a server `allowed` admits (`None`: any): in a
    /// sticky slot while the policy has one free, else in a free regular
    /// slot (of the level [`Preemption::level`] names, for WASP production
    /// the most powerful configuration `allowed` has one of), else in the
    /// slot of the task it evicts there ([`Preemption::victim`],
    /// §6.2.3.3). The admission stage's order then stands for the slot
    /// stage's queue (ARQ §4, "Priorities": with `arq_order = "priority"`,
    /// the more critical first). `placer` chooses the free slot, as in
    /// [`SlotStage::schedule_placed`].
    pub fn try_start(
        &mut self,
        task: &Task,
        allowed: Admits<'_>,
        now: SimTime,
        rng: &mut ActorRng,
        placer: &mut dyn SlotPlacer,
    ) -> Option<SlotAction> {
        let n = self.slots.fewest(task.cores);
        let sticky = self.sticky_free(n) && self.policy.sticky_admits(task, now);
        if sticky || self.regular_free(n) {
            let cap = match sticky {
                true => self.sticky_left(),
                false => self.regular_left(),
            };
            let need = self.slots.need(task, cap, allowed);
            let level = if sticky {
                None
            } else {
                self.level_for(task, need, allowed)
            };
            let within = (allowed, level);
            if let Some(server) = self.slots.place(placer, task, within, need, rng) {
                placer.started(task, server, &[], now, rng);
                return Some(self.start(task.clone(), server, now, sticky));
            }
        }
        let blocked = self.apart_blocked(task);
        let keep = |i: u32| {
            allowed.is_none_or(|ok| ok(i)) && blocked.as_ref().is_none_or(|b| !b.contains(&i))
        };
        let allowed = match blocked {
            Some(_) => Some(&keep as &dyn Fn(u32) -> bool),
            None => allowed,
        };
        if task.cores > 1 {
            let gated = placer.gates_victims(task);
            let victims = {
                let cell = RefCell::new(&mut *placer);
                let fits = |server: u32, v: TaskId| cell.borrow_mut().victim_fits(task, server, v);
                let scope = Scope {
                    servers: allowed,
                    victims: gated.then_some(&fits as &dyn Fn(u32, TaskId) -> bool),
                };
                self.victims_for(task, scope, rng)
            }?;
            return self.preempt(task.clone(), victims, now, Some(placer), rng);
        }
        let scores = placer.scores_victims(task);
        let (victim, admissible) = {
            let gated = placer.gates_victims(task);
            let cell = RefCell::new(&mut *placer);
            let fits = |server: u32, v: TaskId| cell.borrow_mut().victim_fits(task, server, v);
            let scope = Scope {
                servers: allowed,
                victims: gated.then_some(&fits as &dyn Fn(u32, TaskId) -> bool),
            };
            self.victims(task.priority, scope, scores, rng)
        }?;
        let victim = self.placed_victim(task, victim, &admissible, placer, rng)?;
        self.preempt(task.clone(), vec![victim], now, Some(placer), rng)
    }

    /// One time slot's pass over the queue (thesis §6.2.3.2, §9.2), free
    /// slots drawn at random (§6.2.3.1).
    pub fn schedule(&mut self, now: SimTime, rng: &mut ActorRng) -> Vec<SlotAction> {
        self.schedule_placed(now, rng, None)
    }

    /// The same pass, the free slot of each start chosen by `placer` when
    /// there is one.
    pub fn schedule_placed(
        &mut self,
        now: SimTime,
        rng: &mut ActorRng,
        mut placer: Option<&mut dyn SlotPlacer>,
    ) -> Vec<SlotAction> {
        let mut out = Vec::new();
        // Sticky phase (HYBRID phase I, §9.2.1): first arrivals first,
        // whatever their priority, while a sticky slot is left; runs start
        // in phase II only (`gang.rs`). A task more sticky slots than the
        // pool has, or one no server could hold (`could_hold`), is passed.
        let mut passed: BTreeSet<TaskId> = BTreeSet::new();
        while self.sticky_free(1) && self.slots.free_total > 0 {
            let policy = &self.policy;
            let tasks = &self.tasks;
            let gangs = &self.gang_rest;
            let Some(&(_, id)) = self.by_arrival.iter().find(|(_, id)| {
                !gangs.contains_key(id)
                    && !passed.contains(id)
                    && tasks
                        .get(id)
                        .is_some_and(|task| policy.sticky_admits(task, now))
            }) else {
                break;
            };
            let threads = self.tasks.get(&id).map_or(1, |t| t.cores);
            let n = self.slots.fewest(threads);
            if n > self.sticky_cap {
                passed.insert(id);
                continue;
            }
            if !self.sticky_free(n) {
                break;
            }
            let Some(task) = self.tasks.get(&id) else {
                break;
            };
            let need = self.slots.need(task, self.sticky_left(), None);
            let server = match placer.as_deref_mut() {
                None => self.slots.random_room(None, need, rng),
                Some(p) => self.place_queued(p, id, None, need, rng),
            };
            let Some(server) = server else {
                if self.could_hold(id, placer.as_deref()) {
                    break;
                }
                passed.insert(id);
                continue;
            };
            let Some(task) = self.take(id) else { break };
            if let Some(p) = placer.as_deref_mut() {
                p.started(&task, server, &[], now, rng);
            }
            out.push(self.start(task, server, now, true));
        }
        // Priority order onto the regular slots, evicting when none is free
        // (§6.2.3.2, §6.2.3.3; HYBRID phase II). A task that gets no slot
        // holds the head, unless no server could ever give it its slots
        // now: then it is passed (`could_hold`).
        let mut passed: Option<(Reverse<u8>, SimTime, TaskId)> = None;
        'queue: loop {
            let next = match passed {
                None => self.by_priority.first(),
                Some(key) => self.by_priority.range((Excluded(key), Unbounded)).next(),
            };
            let Some(&key) = next else { break };
            let id = key.2;
            let Some((class, threads)) = self.tasks.get(&id).map(|t| (t.priority, t.cores)) else {
                break;
            };
            let n = self.slots.fewest(threads);
            'attempt: {
                if self.gang_rest.contains_key(&id) {
                    match self.start_queued_gang(id, now, placer.as_deref_mut(), rng) {
                        Some(action) => {
                            out.push(action);
                            continue 'queue;
                        }
                        None => break 'attempt,
                    }
                }
                // A free slot the placement accepts, else a victim's: slots the
                // placement refuses (a primary tenant's room, Paragon's
                // constraints) are not free to this task.
                if self.regular_free(n) && self.slots.free_total >= n {
                    let Some(task) = self.tasks.get(&id) else {
                        break 'queue;
                    };
                    let need = self.slots.need(task, self.regular_left(), None);
                    let level = match self.tasks.get(&id) {
                        Some(task) => self.level_for(task, need, None),
                        None => None,
                    };
                    let server = match placer.as_deref_mut() {
                        None => self.slots.random_room(level, need, rng),
                        Some(p) => self.place_queued(p, id, level, need, rng),
                    };
                    if let Some(server) = server {
                        let Some(task) = self.take(id) else {
                            break 'queue;
                        };
                        if let Some(p) = placer.as_deref_mut() {
                            p.started(&task, server, &[], now, rng);
                        }
                        out.push(self.start(task, server, now, false));
                        continue 'queue;
                    }
                }
                let blocked = self.tasks.get(&id).and_then(|t| self.apart_blocked(t));
                let keep = |i: u32| blocked.as_ref().is_none_or(|b| !b.contains(&i));
                let servers = blocked.is_some().then_some(&keep as &dyn Fn(u32) -> bool);
                if threads > 1 {
                    let victims = match (placer.as_deref_mut(), self.tasks.get(&id)) {
                        (Some(p), Some(task)) if p.gates_victims(task) => {
                            let cell = RefCell::new(p);
                            let fits = |server: u32, v: TaskId| {
                                cell.borrow_mut().victim_fits(task, server, v)
                            };
                            let scope = Scope {
                                servers,
                                victims: Some(&fits),
                            };
                            self.victims_for(task, scope, rng)
                        }
                        (_, Some(task)) => {
                            let scope = Scope {
                                servers,
                                victims: None,
                            };
                            self.victims_for(task, scope, rng)
                        }
                        (_, None) => None,
                    };
                    let Some(victims) = victims else {
                        break 'attempt;
                    };
                    let Some(task) = self.take(id) else {
                        break 'queue;
                    };
                    let Some(action) = self.preempt(task, victims, now, placer.as_deref_mut(), rng)
                    else {
                        break 'attempt;
                    };
                    out.push(action);
                    continue 'queue;
                }
                let (gated, scores) = match (placer.as_deref(), self.tasks.get(&id)) {
                    (Some(p), Some(t)) => (p.gates_victims(t), p.scores_victims(t)),
                    _ => (false, false),
                };
                let victims = match placer.as_deref_mut() {
                    Some(p) if gated => {
                        let Some(task) = self.tasks.get(&id) else {
                            break 'attempt;
                        };
                        let cell = RefCell::new(p);
                        let fits =
                            |server: u32, v: TaskId| cell.borrow_mut().victim_fits(task, server, v);
                        let scope = Scope {
                            servers,
                            victims: Some(&fits),
                        };
                        self.victims(class, scope, scores, rng)
                    }
                    _ => {
                        let scope = Scope {
                            servers,
                            victims: None,
                        };
                        self.victims(class, scope, scores, rng)
                    }
                };
                let Some((mut victim, admissible)) = victims else {
                    break 'attempt;
                };
                if scores
                    && let (Some(p), Some(task)) =
                        (placer.as_deref_mut(), self.tasks.get(&id).cloned())
                {
                    let Some(placed) = self.placed_victim(&task, victim, &admissible, p, rng)
                    else {
                        break 'attempt;
                    };
                    victim = placed;
                }
                let Some(task) = self.take(id) else {
                    break 'queue;
                };
                let Some(action) =
                    self.preempt(task, vec![victim], now, placer.as_deref_mut(), rng)
                else {
                    break 'attempt;
                };
                out.push(action);
                continue 'queue;
            }
            if self.could_hold(id, placer.as_deref()) {
                break 'queue;
            }
            passed = Some(key);
        }
        out
    }

    /// Whether queued task `id` (with its run's other units, if it is a
    /// run's unit 0) could start if none of the scheduler's tasks held any
    /// slot: within the larger of the sticky pool and the regular share,
    /// on enough servers with its slots (one per unit) that also leave its
    /// threads beside a primary tenant ([`SlotPlacer::could_hold`]).
    fn could_hold(&self, id: TaskId, placer: Option<&dyn SlotPlacer>) -> bool {
        let Some(task) = self.tasks.get(&id) else {
            return true;
        };
        let rest = self.gang_rest.get(&id).map_or(&[][..], Vec::as_slice);
        let threads = rest
            .iter()
            .chain([task])
            .map(|t| t.cores)
            .max()
            .unwrap_or(1);
        let share = self.sticky_cap.max(self.slots.total - self.sticky_cap);
        if self.slots.fewest(threads) > share {
            return false;
        }
        let hosts = 1 + rest.len();
        let servers = &self.slots.servers;
        let holding = servers.iter().filter(|s| s.slots_for(threads) <= s.slots);
        holding.take(hosts).count() >= hosts && placer.is_none_or(|p| p.could_hold(threads, hosts))
    }

    /// The victim the policy picks for a task of `class` within `scope`
    /// (the thesis's cluster-wide choice), and with `all` every admissible
    /// one ([`Preemption::admissible`]).
    fn victims(
        &self,
        class: u8,
        scope: Scope<'_>,
        all: bool,
        rng: &mut ActorRng,
    ) -> Option<(TaskId, Vec<TaskId>)> {
        let victim = self.policy.victim(class, &self.slots, scope, rng)?;
        let admissible = match all {
            true => self.policy.admissible(class, &self.slots, scope),
            false => Vec::new(),
        };
        Some((victim, admissible))
    }

    /// The victims a task of more than one slot evicts (module docs): the
    /// rule's pick within `scope`, then on that pick's server the rule's
    /// next picks there until the server has the task's slots free; a
    /// server that cannot give them is left out (nothing evicted there)
    /// and the rule asked again among the others. `None`: no server can.
    fn victims_for(
        &self,
        task: &Task,
        scope: Scope<'_>,
        rng: &mut ActorRng,
    ) -> Option<Vec<TaskId>> {
        let class = task.priority;
        let mut excluded: BTreeSet<u32> = BTreeSet::new();
        loop {
            let outside = |i: u32| !excluded.contains(&i) && scope.servers.is_none_or(|ok| ok(i));
            let wide = Scope {
                servers: Some(&outside),
                victims: scope.victims,
            };
            let first = self.policy.victim(class, &self.slots, wide, rng)?;
            let server = self.slots.running.get(&first)?.server;
            let n = self.slots.slots_at(server, task.cores);
            if self.slots.servers[server as usize].slots < n {
                excluded.insert(server);
                continue;
            }
            let mut chosen = vec![first];
            let held = self.slots.running.get(&first).map_or(0, |r| r.slots);
            let mut room = self.slots.free[server as usize] + held;
            while room < n {
                let here = |i: u32| i == server;
                let taken = |i: u32, v: TaskId| {
                    !chosen.contains(&v) && scope.victims.is_none_or(|fits| fits(i, v))
                };
                let narrow = Scope {
                    servers: Some(&here),
                    victims: Some(&taken),
                };
                let Some(next) = self.policy.victim(class, &self.slots, narrow, rng) else {
                    break;
                };
                room += self.slots.running.get(&next).map_or(0, |r| r.slots);
                chosen.push(next);
            }
            if room >= n {
                return Some(chosen);
            }
            excluded.insert(server);
        }
    }

    /// The preemption stage decides which running tasks `task` may evict
    /// (`admissible`: its class, WASP's level, sticky and migrating tasks
    /// left out) and its eviction rule ranks them (§6.2.3.3: `mrs` by
    /// latest start, the least work lost; `lrs` by earliest; `rnd` not at
    /// all); the placement chooses where among the victims the rule ranks
    /// equal, by its own criterion ([`SlotPlacer::choose_victim`]). Under
    /// `rnd` that is every admissible victim; under `mrs` and `lrs` those
    /// that started with the rule's own pick (a time slot starts its tasks
    /// together, §6.2.3.2), so the work an eviction loses stays the rule's.
    /// One option per server: the rule's own pick on its server first (a
    /// placement indifferent between servers keeps it), and on each other
    /// server the victim the rule picks among its equals there (`rnd`: one
    /// drawn uniformly). Placements without a criterion are not asked. A
    /// placement that picks victims itself chooses among all admissible
    /// ones, or none: the task waits ([`SlotStage::picked_victim`]).
    fn placed_victim(
        &mut self,
        task: &Task,
        victim: TaskId,
        admissible: &[TaskId],
        placer: &mut dyn SlotPlacer,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        if placer.picks_victims(task) {
            return self.picked_victim(task, victim, admissible, placer, rng);
        }
        let at = |id: TaskId| self.slots.running.get(&id).map(|r| (r.server, r.started));
        let Some((home, started)) = at(victim) else {
            return Some(victim);
        };
        let eviction = self.policy.eviction();
        let mut on: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
        for &id in admissible {
            let Some((s, t)) = at(id) else { continue };
            let equal = eviction == EvictionPolicy::Rnd || t == started;
            if s != home && equal {
                on.entry(s).or_default().push(id);
            }
        }
        if on.is_empty() {
            return Some(victim);
        }
        let mut options = vec![(home, victim)];
        for (server, ids) in on {
            let n = ids.len() as u32;
            if let Some(v) = eviction::pick(eviction, ids.into_iter(), || n, rng) {
                options.push((server, v));
            }
        }
        let chosen = placer
            .choose_victim(task, &options, rng)
            .and_then(|i| options.get(i))
            .map_or(victim, |o| o.1);
        self.victims_placed += u64::from(chosen != victim);
        Some(chosen)
    }

    /// The victim `placer` picks among every running task, the admissible
    /// ones marked; one it was not offered as admissible is none.
    fn picked_victim(
        &mut self,
        task: &Task,
        victim: TaskId,
        admissible: &[TaskId],
        placer: &mut dyn SlotPlacer,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        let ok: BTreeSet<TaskId> = admissible.iter().copied().collect();
        let mut running: Vec<RunningSlot> = self
            .slots
            .running
            .iter()
            .map(|(&id, r)| RunningSlot {
                server: r.server,
                task: id,
                priority: r.priority,
                started: r.started,
                admissible: ok.contains(&id),
            })
            .collect();
        running.sort_by_key(|r| (r.server, r.started, r.task));
        let chosen = placer
            .pick_victim(task, &running, rng)
            .filter(|v| ok.contains(v));
        self.slots.begin_moves(placer, None, chosen.as_slice());
        let chosen = chosen?;
        self.victims_placed += u64::from(chosen != victim);
        Some(chosen)
    }

    /// Asks `placer` where queued task `id` goes, among the servers with
    /// room for `need` (of `level`, if given).
    fn place_queued(
        &mut self,
        placer: &mut dyn SlotPlacer,
        id: TaskId,
        level: Option<u16>,
        need: Need,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        let task = self.tasks.get(&id)?;
        self.slots.place(placer, task, (None, level), need, rng)
    }

    fn take(&mut self, id: TaskId) -> Option<Task> {
        let task = self.tasks.remove(&id)?;
        self.by_priority
            .remove(&(Reverse(task.priority), task.submitted_at, id));
        self.by_arrival.remove(&(task.submitted_at, id));
        Some(task)
    }

    /// The servers `task` may not start on, evicting or not, for its
    /// job's tasks with the different-machine restriction running there
    /// ([`Task::apart`]); `None` where nothing bars it.
    fn apart_blocked(&self, task: &Task) -> Option<Vec<u32>> {
        let hosts = self.slots.apart_hosts(task.apart?);
        (!hosts.is_empty()).then_some(hosts)
    }

    /// Starts `task` in free slots of `server`, sticky or regular.
    fn start(&mut self, task: Task, server: u32, now: SimTime, sticky: bool) -> SlotAction {
        let n = self.slots.slots_at(server, task.cores);
        if sticky {
            self.sticky_used += n;
            self.sticky_starts += 1;
            if task.evictions > 0 {
                self.sticky_starts_evicted += 1;
            }
        } else {
            self.regular_used += n;
        }
        let mode = Run {
            take: true,
            sticky,
            evictable: self.policy.evictable(sticky),
        };
        self.slots.run(&task, server, now, mode);
        SlotAction::Dispatch {
            task,
            server: self.slots.servers[server as usize].id,
        }
    }

    /// Evicts `victims` (the first the rule's pick, all on its server) and
    /// starts `task` in their slots, taking free ones there for what they
    /// leave short and freeing what they hold beyond its need (§6.2.3.3).
    fn preempt(
        &mut self,
        task: Task,
        victims: Vec<TaskId>,
        now: SimTime,
        placer: Option<&mut (dyn SlotPlacer + '_)>,
        rng: &mut ActorRng,
    ) -> Option<SlotAction> {
        let first = *victims.first()?;
        let server = self.slots.running.get(&first)?.server;
        if victims
            .iter()
            .any(|v| self.slots.running.get(v).is_none_or(|r| r.server != server))
        {
            return None;
        }
        let mut held = 0;
        let mut first_priority = 0;
        for &victim in &victims {
            let v = self.slots.evict(victim)?;
            self.preempted.insert(victim);
            self.preemptions += 1;
            if v.priority == 0 {
                self.preemptions_class0 += 1;
            }
            if victim == first {
                first_priority = v.priority;
            }
            held += v.slots;
            if v.sticky {
                self.sticky_used -= v.slots;
            } else {
                self.regular_used -= v.slots;
            }
        }
        let n = self.slots.slots_at(server, task.cores);
        if held > n {
            self.slots.free_slot(server, held - n);
        } else if n > held {
            self.slots.take_slot(server, n - held);
        }
        self.regular_used += n;
        if let Some(p) = placer {
            p.started(&task, server, &victims, now, rng);
        }
        let mode = Run {
            take: false,
            sticky: false,
            evictable: self.policy.evictable(false),
        };
        self.slots.run(&task, server, now, mode);
        Some(SlotAction::Preempt {
            victim: first,
            victim_priority: first_priority,
            task,
            server: self.slots.servers[server as usize].id,
            also: victims[1..].to_vec(),
        })
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("preemptions", self.preemptions);
        out.add("preemptions_class0_victim", self.preemptions_class0);
        out.add("sticky_starts", self.sticky_starts);
        out.add("sticky_starts_evicted", self.sticky_starts_evicted);
        out.add("dropped_tasks", self.dropped);
        // only runs whose placement scores victims have it
        if self.victims_placed > 0 {
            out.add("victims_placed", self.victims_placed);
        }
        self.policy.finish(out);
    }
}

#[cfg(test)]
mod tests;
