//! The thesis's slot stages (`scheduler.slots = priority | wasp | hybrid`):
//! slot-based assignment with a central priority queue, preemptive priority
//! evictions, workload-aware slot choice and sticky slots.
//!
//! - **Slots** (thesis §6.2.3.1): every task takes exactly one slot, whatever
//!   it uses; a server runs at most its slot count.
//! - **Queue** (§6.2.3.2, Statement 7.1): by priority, highest first, then by
//!   first arrival (`Task::submitted_at`, which an evicted task keeps, so it
//!   goes back in front of the tasks of its class that never ran).
//! - **Time slots** (§6.2.3.2): the queue is scheduled at the start of each
//!   `slot_interval` until it is empty or no task at its head can get a slot.
//! - **Priority evictions** (§6.2.3.3, §7.3.1): a task that finds no free
//!   slot evicts one running task of the lowest running priority, if that is
//!   strictly below its own, chosen by `mrs` (most recently started), `rnd`
//!   or `lrs` (least recently started); it takes the freed slot at once.
//! - **WASP** (§8.1.2): production tasks take the most powerful free slot
//!   (most CPU per slot), the others a random one; a production task's
//!   eviction frees the most powerful slot held by the lowest priority.
//!   Figure 8.2's pseudo-code swaps the two eviction branches; we follow the
//!   text of §8.1.2 and §9.2.2, which agree with each other.
//! - **HYBRID** (§9.2): phase I takes the queue in first-arrival order onto
//!   a fixed pool of sticky slots (labels, not machines: the task still takes
//!   a free slot somewhere), non-preemptively, and those tasks can never be
//!   priority-evicted; phase II is WASP on the other slots. With no sticky
//!   slots, phase I does nothing and HYBRID is WASP decision for decision.
//!
//! This is the scheduler's view: slots it gave out, freed when the server's
//! `Finished` or `Evicted` arrives (a server may free a slot earlier; never
//! later), so a server is never sent more tasks than it has slots.

mod fenwick;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use dcemu_topology::SimTime;
use rand::RngCore;

use crate::config::{EvictionPolicy, SchedulerConfig, SlotPolicy};
use crate::kernel::{ActorId, ActorRng, Metrics};
use crate::sampling::index;
use crate::task::{Task, TaskId};

use fenwick::Fenwick;

/// The placement stage, as the slot stage consults it when the scenario's
/// `scheduler.placement` is not `random` (docs/scheduler.md, "How the
/// stages combine"): the slot stage decides *whether* a task starts now and
/// which task it evicts; the placement decides *where* a task that gets a
/// free slot goes.
pub trait SlotPlacer {
    /// The server (index) `task` should take a free slot of, among the
    /// servers for which `candidates` holds; `None` leaves it queued, and
    /// with it the rest of the queue this time slot (§6.2.3.2).
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32>;

    /// `task` starts on `server`, in the slot of `victim` if it preempts one
    /// (`rng`: for a placement that still draws its path there).
    fn started(
        &mut self,
        task: &Task,
        server: u32,
        victim: Option<TaskId>,
        now: SimTime,
        rng: &mut ActorRng,
    );

    /// Whether a start of `task` needs more than a slot where the placement
    /// is concerned (bandwidth on a path for its flow, an energy-aware
    /// placement's CPU, memory and path): then a victim is one whose
    /// eviction makes that room ([`SlotPlacer::victim_fits`]).
    fn gates_victims(&self, _task: &Task) -> bool {
        false
    }

    /// Whether `task` would fit on `server` once `victim` left it.
    fn victim_fits(&mut self, _task: &Task, _server: u32, _victim: TaskId) -> bool {
        true
    }
}

/// One server as the slot stage sees it.
#[derive(Clone, Debug)]
pub struct SlotServer {
    pub id: ActorId,
    pub slots: u32,
    /// CPU a slot gets when the server is full: `core_speed × cores / slots`.
    pub cpu_per_slot: f64,
}

/// What a scheduling pass decided.
#[derive(Debug, PartialEq)]
pub enum SlotAction {
    /// Run `task` in a free slot of `server`.
    Dispatch { task: Task, server: ActorId },
    /// Evict `victim` from `server` and run `task` in its slot.
    Preempt {
        victim: TaskId,
        victim_priority: u8,
        task: Task,
        server: ActorId,
    },
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

/// Servers of equal CPU per slot, with a Fenwick tree over their free slots
/// so that a uniformly random free slot is found in O(log n).
#[derive(Clone, Debug)]
struct Level {
    servers: Vec<u32>,
    free: Fenwick,
}

#[derive(Clone, Debug)]
struct Running {
    server: u32,
    priority: u8,
    /// When its current execution started: MRS evicts the youngest
    /// execution, the least work lost (thesis §6.2.3.3). (Keeping the first
    /// start across evictions instead, as Statement 7.3's wording could
    /// suggest, makes LRS evict just-restarted tasks and waste less than
    /// RND, against Table 7.2.)
    started: SimTime,
    level: u16,
    sticky: bool,
}

/// The slot stage: queue, slot accounting and eviction indexes.
pub struct SlotStage {
    policy: SlotPolicy,
    eviction: EvictionPolicy,
    threshold: u32,
    production: u8,
    servers: Vec<SlotServer>,
    index_of: BTreeMap<ActorId, u32>,
    /// Level of each server; levels are ordered most powerful first.
    level_of: Vec<u16>,
    levels: Vec<Level>,
    /// Free slots of each server (the Fenwick trees hold the same counts).
    free: Vec<u32>,
    free_total: u32,
    slots_total: u32,
    sticky_cap: u32,
    sticky_used: u32,
    regular_used: u32,
    tasks: BTreeMap<TaskId, Task>,
    by_priority: BTreeSet<(Reverse<u8>, SimTime, TaskId)>,
    by_arrival: BTreeSet<(SimTime, TaskId)>,
    running: BTreeMap<TaskId, Running>,
    /// Evictable (non-sticky) running tasks by priority and start.
    by_start: BTreeSet<(u8, SimTime, TaskId)>,
    /// The same, by priority, level and start.
    by_power: BTreeSet<(u8, u16, SimTime, TaskId)>,
    /// Running tasks per priority among `by_start`, for `rnd`.
    evictable_at: [u32; 256],
    /// Victims whose `Preempt` is on its way: their slot already went to
    /// the evictor, so their `Finished` or `Evicted` frees nothing.
    preempted: BTreeSet<TaskId>,
    preemptions: u64,
    /// Preemptions whose victim was of class 0: §8.2.1 and §9.3.1 report
    /// that on SC3, SC4 and WASC every priority eviction hits class 0.
    preemptions_class0: u64,
    sticky_starts: u64,
    /// Sticky starts of tasks evicted before: phase I is meant for the
    /// long-waited and evicted tasks (§9.2.1).
    sticky_starts_evicted: u64,
    dropped: u64,
}

/// Per-task eviction statistics (thesis Table 7.3, Table 9.1), from the
/// evicted tasks that come back to the scheduler: each carries its counts.
#[derive(Clone, Debug, Default)]
pub struct EvictionStats {
    evicted_tasks: u64,
    max_evictions: u32,
    priority_evicted_tasks: u64,
    max_priority_evictions: u32,
}

impl EvictionStats {
    /// Records a task just evicted (its counters include this eviction).
    pub fn record(&mut self, task: &Task, priority: bool) {
        if task.evictions == 1 {
            self.evicted_tasks += 1;
        }
        if priority && task.priority_evictions == 1 {
            self.priority_evicted_tasks += 1;
        }
        self.max_evictions = self.max_evictions.max(task.evictions);
        self.max_priority_evictions = self.max_priority_evictions.max(task.priority_evictions);
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("evicted_tasks", self.evicted_tasks);
        out.add("priority_evicted_tasks", self.priority_evicted_tasks);
        out.add("evictions_per_task_max", u64::from(self.max_evictions));
        out.add(
            "priority_evictions_per_task_max",
            u64::from(self.max_priority_evictions),
        );
    }
}

impl SlotStage {
    pub fn new(cfg: &SchedulerConfig, servers: Vec<SlotServer>) -> Self {
        let mut powers: Vec<f64> = servers.iter().map(|s| s.cpu_per_slot).collect();
        powers.sort_by(|a, b| b.total_cmp(a));
        powers.dedup();
        let level_of: Vec<u16> = servers
            .iter()
            .map(|s| {
                powers
                    .iter()
                    .position(|p| p.total_cmp(&s.cpu_per_slot).is_eq())
                    .unwrap_or(0) as u16
            })
            .collect();
        let mut levels: Vec<Level> = (0..powers.len())
            .map(|_| Level {
                servers: Vec::new(),
                free: Fenwick::default(),
            })
            .collect();
        for (i, &l) in level_of.iter().enumerate() {
            levels[l as usize].servers.push(i as u32);
        }
        for level in &mut levels {
            let counts: Vec<u32> = level
                .servers
                .iter()
                .map(|&s| servers[s as usize].slots)
                .collect();
            level.free = Fenwick::from_counts(&counts);
        }
        let free: Vec<u32> = servers.iter().map(|s| s.slots).collect();
        let slots_total: u32 = free.iter().sum();
        SlotStage {
            policy: cfg.slots,
            eviction: cfg.eviction,
            threshold: cfg.eviction_threshold,
            production: cfg.production_priority,
            index_of: servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id, i as u32))
                .collect(),
            servers,
            level_of,
            levels,
            free_total: slots_total,
            free,
            slots_total,
            sticky_cap: if cfg.slots == SlotPolicy::Hybrid {
                cfg.sticky_slots.min(slots_total)
            } else {
                0
            },
            sticky_used: 0,
            regular_used: 0,
            tasks: BTreeMap::new(),
            by_priority: BTreeSet::new(),
            by_arrival: BTreeSet::new(),
            running: BTreeMap::new(),
            by_start: BTreeSet::new(),
            by_power: BTreeSet::new(),
            evictable_at: [0; 256],
            preempted: BTreeSet::new(),
            preemptions: 0,
            preemptions_class0: 0,
            sticky_starts: 0,
            sticky_starts_evicted: 0,
            dropped: 0,
        }
    }

    pub fn queued(&self) -> usize {
        self.tasks.len()
    }

    pub fn slots_total(&self) -> u32 {
        self.slots_total
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
        let Some(r) = self.running.remove(&task) else {
            return;
        };
        if self.index_of.get(&server) != Some(&r.server) {
            // Not where we sent it: nothing of ours to free.
            self.running.insert(task, r);
            return;
        }
        self.unindex(task, &r);
        if r.sticky {
            self.sticky_used -= 1;
        } else {
            self.regular_used -= 1;
        }
        self.free_slot(r.server, 1);
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

    /// Starts `task`, which an admission stage holds in its own queue, if
    /// it can start now on a server `allowed` admits (`None`: any): in a
    /// sticky slot while HYBRID has one, else in a free regular slot (WASP:
    /// of the most powerful configuration `allowed` has one of), else in the
    /// slot of a task of lower priority it evicts there (§6.2.3.3). The
    /// admission stage's order then stands for the slot stage's queue
    /// (ARQ §4, "Priorities": with `arq_order = "priority"`, the more
    /// critical first). `placer` chooses the free slot, as in
    /// [`SlotStage::schedule_placed`].
    pub fn try_start(
        &mut self,
        task: &Task,
        allowed: Option<&dyn Fn(u32) -> bool>,
        now: SimTime,
        rng: &mut ActorRng,
        placer: &mut dyn SlotPlacer,
    ) -> Option<SlotAction> {
        let admits = |i: u32| allowed.is_none_or(|ok| ok(i));
        let regular_cap = self.slots_total - self.sticky_cap;
        let sticky = self.sticky_used < self.sticky_cap;
        if sticky || self.regular_used < regular_cap {
            let level = if sticky {
                None
            } else {
                self.wasp_level_among(task.priority, &admits)
            };
            let candidates = |i: u32| {
                self.free.get(i as usize).is_some_and(|&f| f > 0)
                    && admits(i)
                    && level.is_none_or(|l| self.level_of[i as usize] == l)
            };
            let server = placer
                .choose(task, &candidates, rng)
                .filter(|&i| candidates(i));
            if let Some(server) = server {
                if sticky {
                    self.sticky_used += 1;
                    self.sticky_starts += 1;
                    if task.evictions > 0 {
                        self.sticky_starts_evicted += 1;
                    }
                } else {
                    self.regular_used += 1;
                }
                placer.started(task, server, None, now, rng);
                return Some(self.start(task.clone(), server, now, sticky, true));
            }
        }
        let victim = if placer.gates_victims(task) {
            let mut fits = |server: u32, victim: TaskId| placer.victim_fits(task, server, victim);
            self.victim_among(task.priority, &admits, &mut fits, rng)?
        } else {
            match allowed {
                None => self.victim(task.priority, rng)?,
                Some(_) => self.victim_among(task.priority, &admits, &mut |_, _| true, rng)?,
            }
        };
        let v = self.running.remove(&victim)?;
        self.unindex(victim, &v);
        self.preempted.insert(victim);
        self.preemptions += 1;
        if v.priority == 0 {
            self.preemptions_class0 += 1;
        }
        placer.started(task, v.server, Some(victim), now, rng);
        match self.start(task.clone(), v.server, now, false, false) {
            SlotAction::Dispatch { task, server } => Some(SlotAction::Preempt {
                victim,
                victim_priority: v.priority,
                task,
                server,
            }),
            other => Some(other),
        }
    }

    /// Whether WASP treats a task of `priority` as production: the most
    /// powerful slots for it, and its victims on them (§8.1.2).
    fn wasp_production(&self, priority: u8) -> bool {
        matches!(self.policy, SlotPolicy::Wasp | SlotPolicy::Hybrid) && priority >= self.production
    }

    /// [`SlotStage::wasp_level`] among the servers `admits` holds.
    fn wasp_level_among(&self, priority: u8, admits: &dyn Fn(u32) -> bool) -> Option<u16> {
        if !self.wasp_production(priority) {
            return None;
        }
        self.levels
            .iter()
            .position(|l| {
                l.servers
                    .iter()
                    .any(|&i| self.free[i as usize] > 0 && admits(i))
            })
            .map(|l| l as u16)
    }

    /// [`SlotStage::victim`] among the tasks running on servers `admits`
    /// holds and whose eviction `fits` says makes room for the evictor
    /// (server, victim): of the lowest priority running there, strictly
    /// below `priority`; for a WASP production task on the most powerful of
    /// those servers; then by `eviction`.
    fn victim_among(
        &self,
        priority: u8,
        admits: &dyn Fn(u32) -> bool,
        fits: &mut dyn FnMut(u32, TaskId) -> bool,
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        let lowest = self
            .by_start
            .iter()
            .take_while(|k| k.0 < priority)
            .find(|k| {
                self.running
                    .get(&k.2)
                    .is_some_and(|r| admits(r.server) && fits(r.server, k.2))
            })?
            .0;
        let mut found: Vec<(u16, SimTime, TaskId)> = self
            .by_start
            .range((lowest, 0, 0)..=(lowest, SimTime::MAX, TaskId::MAX))
            .filter_map(|&(_, started, id)| {
                let r = self.running.get(&id)?;
                (admits(r.server) && fits(r.server, id)).then_some((r.level, started, id))
            })
            .collect();
        if self.wasp_production(priority) {
            let best = found.iter().map(|f| f.0).min()?;
            found.retain(|f| f.0 == best);
        }
        let pick = match self.eviction {
            EvictionPolicy::Mrs => found.last(),
            EvictionPolicy::Lrs => found.first(),
            EvictionPolicy::Rnd => found.get(index(rng, found.len() as u32) as usize),
        };
        pick.map(|f| f.2)
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
        while self.sticky_used < self.sticky_cap && self.free_total > 0 {
            let Some(&(_, id)) = self.by_arrival.first() else {
                break;
            };
            let server = match placer.as_deref_mut() {
                None => None,
                Some(p) => match self.place(p, id, None, rng) {
                    Some(server) => Some(server),
                    None => break,
                },
            };
            let Some(task) = self.take(id) else { break };
            let server = server.unwrap_or_else(|| self.random_free(rng));
            self.sticky_used += 1;
            self.sticky_starts += 1;
            if task.evictions > 0 {
                self.sticky_starts_evicted += 1;
            }
            if let Some(p) = placer.as_deref_mut() {
                p.started(&task, server, None, now, rng);
            }
            out.push(self.start(task, server, now, true, true));
        }
        let regular_cap = self.slots_total - self.sticky_cap;
        while let Some(&(_, _, id)) = self.by_priority.first() {
            let Some(priority) = self.tasks.get(&id).map(|t| t.priority) else {
                break;
            };
            let gated = match (placer.as_deref(), self.tasks.get(&id)) {
                (Some(p), Some(t)) => p.gates_victims(t),
                _ => false,
            };
            if self.regular_used < regular_cap && self.free_total > 0 {
                let server = match placer.as_deref_mut() {
                    None => Some(self.choose_free(priority, rng)),
                    Some(p) => {
                        let level = self.wasp_level(priority);
                        self.place(p, id, level, rng)
                    }
                };
                match server {
                    Some(server) => {
                        let Some(task) = self.take(id) else { break };
                        self.regular_used += 1;
                        if let Some(p) = placer.as_deref_mut() {
                            p.started(&task, server, None, now, rng);
                        }
                        out.push(self.start(task, server, now, false, true));
                        continue;
                    }
                    // free slots, but none the placement takes: a task
                    // that needs more than a slot (a path's bandwidth,
                    // an energy-aware placement's room) may still evict
                    // for it; any other waits, and the queue behind it
                    None if gated => {}
                    None => break,
                }
            }
            let victim = match placer.as_deref_mut() {
                Some(p) if gated => {
                    let Some(task) = self.tasks.get(&id) else {
                        break;
                    };
                    let mut fits =
                        |server: u32, victim: TaskId| p.victim_fits(task, server, victim);
                    self.victim_among(priority, &|_| true, &mut fits, rng)
                }
                _ => self.victim(priority, rng),
            };
            let Some(victim) = victim else {
                break;
            };
            let Some(task) = self.take(id) else { break };
            let Some(v) = self.running.remove(&victim) else {
                break;
            };
            self.unindex(victim, &v);
            self.preempted.insert(victim);
            self.preemptions += 1;
            if v.priority == 0 {
                self.preemptions_class0 += 1;
            }
            let server = v.server;
            if let Some(p) = placer.as_deref_mut() {
                p.started(&task, server, Some(victim), now, rng);
            }
            match self.start(task, server, now, false, false) {
                SlotAction::Dispatch { task, server } => out.push(SlotAction::Preempt {
                    victim,
                    victim_priority: v.priority,
                    task,
                    server,
                }),
                other => out.push(other),
            }
        }
        out
    }

    /// The running task a task of `priority` evicts, if any runs at a
    /// strictly lower priority (thesis §6.2.3.3, §8.1.2).
    fn victim(&self, priority: u8, rng: &mut impl RngCore) -> Option<TaskId> {
        let &(lowest, _, _) = self.by_start.first()?;
        if lowest >= priority {
            return None;
        }
        if self.wasp_production(priority) {
            let &(_, level, _, _) = self
                .by_power
                .range((lowest, 0, 0, 0)..=(lowest, u16::MAX, SimTime::MAX, TaskId::MAX))
                .next()?;
            let mut range = self
                .by_power
                .range((lowest, level, 0, 0)..=(lowest, level, SimTime::MAX, TaskId::MAX));
            return match self.eviction {
                EvictionPolicy::Mrs => range.next_back().map(|k| k.3),
                EvictionPolicy::Lrs => range.next().map(|k| k.3),
                EvictionPolicy::Rnd => {
                    let n = range.clone().count() as u32;
                    range.nth(index(rng, n) as usize).map(|k| k.3)
                }
            };
        }
        let mut range = self
            .by_start
            .range((lowest, 0, 0)..=(lowest, SimTime::MAX, TaskId::MAX));
        match self.eviction {
            EvictionPolicy::Mrs => range.next_back().map(|k| k.2),
            EvictionPolicy::Lrs => range.next().map(|k| k.2),
            EvictionPolicy::Rnd => {
                let n = self.evictable_at[lowest as usize];
                range.nth(index(rng, n) as usize).map(|k| k.2)
            }
        }
    }

    /// The level whose free slots a task of `priority` must take: WASP
    /// gives production the most powerful level with a free slot (§8.1.2).
    fn wasp_level(&self, priority: u8) -> Option<u16> {
        if !self.wasp_production(priority) {
            return None;
        }
        self.levels
            .iter()
            .position(|l| l.free.total() > 0)
            .map(|l| l as u16)
    }

    /// Asks `placer` where queued task `id` goes, among the servers with a
    /// free slot (of `level`, if given).
    fn place(
        &self,
        placer: &mut dyn SlotPlacer,
        id: TaskId,
        level: Option<u16>,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        let task = self.tasks.get(&id)?;
        let candidates = |i: u32| {
            self.free.get(i as usize).is_some_and(|&f| f > 0)
                && level.is_none_or(|l| self.level_of[i as usize] == l)
        };
        placer
            .choose(task, &candidates, rng)
            .filter(|&i| candidates(i))
    }

    /// A free slot for a task of `priority`: WASP gives production the most
    /// powerful one; everything else takes a uniformly random free slot.
    fn choose_free(&mut self, priority: u8, rng: &mut impl RngCore) -> u32 {
        if self.wasp_production(priority) {
            for level in &self.levels {
                let n = level.free.total();
                if n > 0 {
                    let k = index(rng, n);
                    return level.servers[level.free.find(k)];
                }
            }
        }
        self.random_free(rng)
    }

    fn random_free(&mut self, rng: &mut impl RngCore) -> u32 {
        let mut k = index(rng, self.free_total.max(1));
        for level in &self.levels {
            let n = level.free.total();
            if k < n {
                return level.servers[level.free.find(k)];
            }
            k -= n;
        }
        self.levels
            .iter()
            .find(|l| l.free.total() > 0)
            .map_or(0, |l| l.servers[l.free.find(0)])
    }

    fn take(&mut self, id: TaskId) -> Option<Task> {
        let task = self.tasks.remove(&id)?;
        self.by_priority
            .remove(&(Reverse(task.priority), task.submitted_at, id));
        self.by_arrival.remove(&(task.submitted_at, id));
        Some(task)
    }

    /// Starts `task` on `server`, in a free slot (`take`) or in the slot of
    /// the task it preempts.
    fn start(
        &mut self,
        task: Task,
        server: u32,
        now: SimTime,
        sticky: bool,
        take: bool,
    ) -> SlotAction {
        let level = self.level_of[server as usize];
        if take {
            self.take_slot(server);
        }
        let r = Running {
            server,
            priority: task.priority,
            started: now,
            level,
            sticky,
        };
        if !sticky {
            self.by_start.insert((r.priority, r.started, task.id));
            self.by_power
                .insert((r.priority, level, r.started, task.id));
            self.evictable_at[r.priority as usize] += 1;
        }
        self.running.insert(task.id, r);
        SlotAction::Dispatch {
            task,
            server: self.servers[server as usize].id,
        }
    }

    fn unindex(&mut self, id: TaskId, r: &Running) {
        if !r.sticky {
            self.by_start.remove(&(r.priority, r.started, id));
            self.by_power.remove(&(r.priority, r.level, r.started, id));
            self.evictable_at[r.priority as usize] -= 1;
        }
    }

    fn take_slot(&mut self, server: u32) {
        self.free[server as usize] -= 1;
        self.free_total -= 1;
        let level = &mut self.levels[self.level_of[server as usize] as usize];
        let pos = level.servers.binary_search(&server).unwrap_or(0);
        level.free.add(pos, -1);
    }

    fn free_slot(&mut self, server: u32, n: u32) {
        self.free[server as usize] += n;
        self.free_total += n;
        let level = &mut self.levels[self.level_of[server as usize] as usize];
        let pos = level.servers.binary_search(&server).unwrap_or(0);
        level.free.add(pos, n as i64);
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("preemptions", self.preemptions);
        out.add("preemptions_class0_victim", self.preemptions_class0);
        out.add("sticky_starts", self.sticky_starts);
        out.add("sticky_starts_evicted", self.sticky_starts_evicted);
        out.add("dropped_tasks", self.dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    fn task(id: TaskId, priority: u8, arrived: SimTime) -> Task {
        Task {
            priority,
            ..Task::new(id, ActorId(1), arrived, 1_000_000_000)
        }
    }

    fn stage(policy: SlotPolicy, eviction: EvictionPolicy, servers: &[(u32, f64)]) -> SlotStage {
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
                cpu_per_slot: cpu,
            })
            .collect();
        SlotStage::new(&cfg, servers)
    }

    /// Fills the stage with class-0 tasks started at times 1, 2, 3, ... and
    /// returns the id of each start time's task.
    fn fill(s: &mut SlotStage, n: u64, rng: &mut ActorRng) {
        for i in 0..n {
            s.enqueue(task(i, 0, i));
            let out = s.schedule(i + 1, rng);
            assert_eq!(out.len(), 1);
        }
    }

    fn victim_of(actions: &[SlotAction]) -> Option<TaskId> {
        actions.iter().find_map(|a| match a {
            SlotAction::Preempt { victim, .. } => Some(*victim),
            _ => None,
        })
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

        fn started(&mut self, t: &Task, at: u32, v: Option<TaskId>, _: SimTime, _: &mut ActorRng) {
            self.started.push((t.id, at, v));
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
        let server: BTreeMap<TaskId, u32> = s.running.iter().map(|(&t, r)| (t, r.server)).collect();
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
                cpu_per_slot: 0.5,
            }],
        );
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
                cpu_per_slot: 0.5,
            }],
        );
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

    #[test]
    fn fenwick_finds_the_kth_unit() {
        let mut f = Fenwick::from_counts(&[2, 0, 3, 1]);
        let found: Vec<usize> = (0..6).map(|k| f.find(k)).collect();
        assert_eq!(found, vec![0, 0, 2, 2, 2, 3]);
        f.add(0, -2);
        assert_eq!(f.total(), 4);
        assert_eq!(f.find(0), 2);
    }
}
