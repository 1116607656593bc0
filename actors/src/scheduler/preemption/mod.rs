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
//!   slots, then WASP).
//!
//! This is the scheduler's view: slots it gave out, freed when the server's
//! `Finished` or `Evicted` arrives (a server may free a slot earlier; never
//! later), so a server is never sent more tasks than it has slots.

mod eviction;
mod fenwick;
mod gang;
mod hybrid;
// A local variable named `priority` in this file would read as a path into
// this module to the layers test (actors/tests/layers.rs): they are `class`.
mod priority;
mod registry;
mod wasp;
#[cfg(test)]
mod wide_tests;

pub use registry::build;

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};

use dcemu_topology::SimTime;
use rand::RngCore;

use crate::config::EvictionPolicy;
use crate::kernel::{ActorId, ActorRng, Metrics};
use crate::sampling::index;
use crate::task::{Task, TaskId};

use fenwick::Fenwick;

/// The servers a start may use (an admission stage's scope, ARQ's pools);
/// `None`: all of them.
pub type Admits<'a> = Option<&'a dyn Fn(u32) -> bool>;

/// Where a victim may run: on a server the admission stage's scope holds,
/// and, for a task that needs more than a slot (a flow's bandwidth, an
/// energy-aware placement's room, [`SlotPlacer::gates_victims`]), where its
/// eviction makes that room (server, victim). The default: anywhere.
#[derive(Clone, Copy, Default)]
pub struct Scope<'a> {
    pub servers: Admits<'a>,
    pub victims: Option<&'a dyn Fn(u32, TaskId) -> bool>,
}

impl Scope<'_> {
    /// Whether any running task may be a victim.
    fn is_all(&self) -> bool {
        self.servers.is_none() && self.victims.is_none()
    }
}

/// What one slot policy decides; the rest (queue, slots, time slots,
/// thresholds) is the stage's. Each policy is one file of this folder;
/// `registry.rs` maps `scheduler.slots` to it.
///
/// Randomness comes only from the `rng` argument (the scheduler's stream),
/// so a run stays deterministic.
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
}

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

    /// `task` starts on `server`, in the slots of `victims` if it preempts
    /// them (none: in free slots; `rng`: for a placement that still draws
    /// its path there).
    fn started(
        &mut self,
        task: &Task,
        server: u32,
        victims: &[TaskId],
        now: SimTime,
        rng: &mut ActorRng,
    );

    /// `task`, a unit of a distributed run, starts on `server` in a free
    /// slot if the placement can book it there (a path with its bandwidth
    /// included); `false` books nothing (`gang.rs`).
    fn start_unit(&mut self, task: &Task, server: u32, now: SimTime, rng: &mut ActorRng) -> bool {
        self.started(task, server, &[], now, rng);
        true
    }

    /// Undoes [`SlotPlacer::start_unit`] of `task` on `server`: its run
    /// cannot start whole.
    fn withdraw(&mut self, _task: &Task, _server: u32) {}

    /// The hosts of a distributed run's `units`, in their order, chosen
    /// jointly among the servers `candidates` holds (`annealing` under a
    /// slot stage, ASPLOS'16 §5.1); `None` starts nothing. Only asked if
    /// [`SlotPlacer::places_gangs`]; the slot stage still checks every
    /// host (a free slot it allows, distinct) before it books one.
    fn choose_gang(
        &mut self,
        _units: &[Task],
        _candidates: &dyn Fn(u32) -> bool,
        _rng: &mut ActorRng,
    ) -> Option<Vec<u32>> {
        None
    }

    /// Whether at least `hosts` servers could each give `slots` slots now
    /// if none of the scheduler's tasks held them: within what a primary
    /// tenant's use and reserve leave (harvesting §5.3). A task for which
    /// this is false is passed in the queue rather than holding its head
    /// ([`SlotStage::could_hold`]). The default bounds nothing beyond the
    /// stage's own slots.
    fn could_hold(&self, _slots: u32, _hosts: usize) -> bool {
        true
    }

    /// Whether the placement chooses a run's hosts jointly
    /// ([`SlotPlacer::choose_gang`]) rather than unit by unit.
    fn places_gangs(&self) -> bool {
        false
    }

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

    /// Whether the placement has a criterion of its own among the servers
    /// holding admissible victims for `task` ([`SlotPlacer::choose_victim`]).
    /// The default, `false`, leaves the preemption stage's choice alone
    /// (and draws nothing more).
    fn scores_victims(&self, _task: &Task) -> bool {
        false
    }

    /// Where `task` starts by evicting: an index into `options`, one
    /// (server, victim) per server holding admissible victims, the victim
    /// the eviction rule picks there, the preemption stage's own choice
    /// first; `None` keeps that choice.
    fn choose_victim(
        &mut self,
        _task: &Task,
        _options: &[(u32, TaskId)],
        _rng: &mut ActorRng,
    ) -> Option<usize> {
        None
    }

    /// Whether the placement picks `task`'s victim itself among every
    /// admissible one ([`SlotPlacer::pick_victim`]), in place of the
    /// eviction rule (an external program deciding the preemption stage).
    /// Asked only where [`SlotPlacer::scores_victims`] holds.
    fn picks_victims(&self, _task: &Task) -> bool {
        false
    }

    /// The victim `task` evicts, one of `running` (every running task, by
    /// server and start, the ones the stage admits marked); `None`: it
    /// waits.
    fn pick_victim(
        &mut self,
        _task: &Task,
        _running: &[RunningSlot],
        _rng: &mut ActorRng,
    ) -> Option<TaskId> {
        None
    }

    /// The migrations the placement's latest decisions ordered (an external
    /// program's migration stage, protocol v3), as (task, target server),
    /// in order; the stage takes them right after each decision and begins
    /// each move in its own slots ([`SlotStage::begin_move`]), so that the
    /// pass's later decisions see the move: the target's slot held, the
    /// moving task no victim.
    fn take_moves(&mut self) -> Vec<(TaskId, u32)> {
        Vec::new()
    }

    /// The stage began the move of `task` to `to` (`begun`), or declined
    /// it: then nothing of it may stay booked. Returns whether the
    /// placement booked a move it was told began; `false` makes the stage
    /// undo it.
    fn move_begun(&mut self, _task: TaskId, _to: u32, begun: bool) -> bool {
        begun
    }
}

/// A running task as the slot stage knows it, offered to a placement that
/// picks victims itself ([`SlotPlacer::pick_victim`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningSlot {
    pub server: u32,
    pub task: TaskId,
    pub priority: u8,
    pub started: SimTime,
    /// Whether the stage admits it as a victim for the task asking.
    pub admissible: bool,
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
    /// Indexed in `by_start` and `by_power` ([`Preemption::evictable`]);
    /// never while it migrates, so that no `Preempt` can reach a server
    /// before the task does.
    evictable: bool,
    /// The server whose slots a migration holds for it (Paragon §3.4),
    /// until it leaves this one.
    moving_to: Option<u32>,
    /// Slots it holds: one per thread ([`slots_of`]).
    slots: u32,
}

/// Slots a task holds under a slot stage: one per thread, at least one
/// (thesis §6.2.3.1's tasks are single-threaded: one slot each).
pub fn slots_of(task: &Task) -> u32 {
    task.cores.max(1)
}

/// The slots as the scheduler handed them out: free slots per server and
/// per level (servers of equal CPU per slot, most powerful first), and the
/// running tasks indexed for eviction. The policies read it to decide.
pub struct Slots {
    servers: Vec<SlotServer>,
    index_of: BTreeMap<ActorId, u32>,
    /// Level of each server; levels are ordered most powerful first.
    level_of: Vec<u16>,
    levels: Vec<Level>,
    /// Free slots of each server (the Fenwick trees hold the same counts).
    free: Vec<u32>,
    free_total: u32,
    total: u32,
    running: BTreeMap<TaskId, Running>,
    /// Evictable running tasks by priority and start.
    by_start: BTreeSet<(u8, SimTime, TaskId)>,
    /// The same, by priority, level and start.
    by_power: BTreeSet<(u8, u16, SimTime, TaskId)>,
    /// Running tasks per priority among `by_start`, for `rnd`.
    evictable_at: [u32; 256],
}

impl Slots {
    fn new(servers: Vec<SlotServer>) -> Self {
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
        let total: u32 = free.iter().sum();
        Slots {
            index_of: servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id, i as u32))
                .collect(),
            servers,
            level_of,
            levels,
            free_total: total,
            free,
            total,
            running: BTreeMap::new(),
            by_start: BTreeSet::new(),
            by_power: BTreeSet::new(),
            evictable_at: [0; 256],
        }
    }

    /// The most powerful level with a free slot on a server `admits` holds.
    fn most_powerful_free(&self, admits: Admits<'_>) -> Option<u16> {
        let found = match admits {
            None => self.levels.iter().position(|l| l.free.total() > 0),
            Some(ok) => self.levels.iter().position(|l| {
                l.servers
                    .iter()
                    .any(|&i| self.free[i as usize] > 0 && ok(i))
            }),
        };
        found.map(|l| l as u16)
    }

    /// Whether running task `id` may be a victim within `scope`.
    fn admitted(&self, id: TaskId, scope: Scope<'_>) -> bool {
        if scope.is_all() {
            return true;
        }
        self.running.get(&id).is_some_and(|r| {
            scope.servers.is_none_or(|ok| ok(r.server))
                && scope.victims.is_none_or(|fits| fits(r.server, id))
        })
    }

    /// The lowest priority of an evictable task running on a server
    /// `admits` holds, if it is strictly below `below`.
    fn lowest_evictable(&self, below: u8, admits: Scope<'_>) -> Option<u8> {
        self.by_start
            .iter()
            .take_while(|k| k.0 < below)
            .find(|k| self.admitted(k.2, admits))
            .map(|k| k.0)
    }

    /// The evictable tasks of priority `class` running on servers `admits`
    /// holds, least recently started first.
    fn by_start(
        &self,
        class: u8,
        admits: Scope<'_>,
    ) -> impl DoubleEndedIterator<Item = TaskId> + Clone {
        self.by_start
            .range((class, 0, 0)..=(class, SimTime::MAX, TaskId::MAX))
            .map(|k| k.2)
            .filter(move |&id| self.admitted(id, admits))
    }

    /// How many [`Slots::by_start`] lists.
    fn evictable_count(&self, class: u8, admits: Scope<'_>) -> u32 {
        match admits.is_all() {
            true => self.evictable_at[class as usize],
            false => self.by_start(class, admits).count() as u32,
        }
    }

    /// The most powerful level an evictable task of priority `class` runs
    /// on, among the servers `admits` holds.
    fn most_powerful_running(&self, class: u8, admits: Scope<'_>) -> Option<u16> {
        self.by_power
            .range((class, 0, 0, 0)..=(class, u16::MAX, SimTime::MAX, TaskId::MAX))
            .find(|k| self.admitted(k.3, admits))
            .map(|k| k.1)
    }

    /// The evictable tasks of priority `class` running on `level`, on
    /// servers `admits` holds, least recently started first.
    fn by_power(
        &self,
        class: u8,
        level: u16,
        admits: Scope<'_>,
    ) -> impl DoubleEndedIterator<Item = TaskId> + Clone {
        self.by_power
            .range((class, level, 0, 0)..=(class, level, SimTime::MAX, TaskId::MAX))
            .map(|k| k.3)
            .filter(move |&id| self.admitted(id, admits))
    }

    /// A uniformly random free slot (§6.2.3.1), of `level` if given.
    fn random_free(&self, level: Option<u16>, rng: &mut impl RngCore) -> u32 {
        if let Some(level) = level.and_then(|l| self.levels.get(l as usize)) {
            let n = level.free.total();
            if n > 0 {
                return level.servers[level.free.find(index(rng, n))];
            }
        }
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

    /// A server with `n` free slots (of `level` if it has one), drawn as
    /// [`Slots::random_free`] draws a slot: with probability in proportion
    /// to its free slots. `None`: no server has `n`.
    fn random_room(&self, level: Option<u16>, n: u32, rng: &mut impl RngCore) -> Option<u32> {
        if n <= 1 {
            return (self.free_total > 0).then(|| self.random_free(level, rng));
        }
        let of_level = |l: u16| {
            self.levels
                .get(l as usize)
                .into_iter()
                .flat_map(|lv| lv.servers.iter().copied())
                .filter(|&i| self.free[i as usize] >= n)
                .map(|i| (i, self.free[i as usize]))
                .collect::<Vec<(u32, u32)>>()
        };
        let mut room = level.map(of_level).unwrap_or_default();
        if room.is_empty() {
            room = (0..self.servers.len() as u32)
                .filter(|&i| self.free[i as usize] >= n)
                .map(|i| (i, self.free[i as usize]))
                .collect();
        }
        let total: u32 = room.iter().map(|r| r.1).sum();
        if total == 0 {
            return None;
        }
        let mut k = index(rng, total);
        for (i, f) in room {
            if k < f {
                return Some(i);
            }
            k -= f;
        }
        None
    }

    /// Asks `placer` where `task` goes, among the servers with room for it
    /// that `admits` holds (of `level`, if given).
    fn place(
        &mut self,
        placer: &mut dyn SlotPlacer,
        task: &Task,
        admits: Admits<'_>,
        level: Option<u16>,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        let n = slots_of(task);
        let chosen = {
            let candidates = |i: u32| {
                self.has_room(i, n)
                    && admits.is_none_or(|ok| ok(i))
                    && level.is_none_or(|l| self.level_of[i as usize] == l)
            };
            placer
                .choose(task, &candidates, rng)
                .filter(|&i| candidates(i))
        };
        self.begin_moves(placer, chosen.map(|i| (i, n)), &[]);
        chosen
    }

    /// Begins the moves `placer`'s latest decision ordered
    /// ([`SlotPlacer::take_moves`]) and tells it which began. `keep`: the
    /// server and number of free slots the decision's own start is about
    /// to take; `victims`: the tasks it is about to evict. A move the
    /// slots cannot hold (too few free slots left beside the start, a
    /// victim, a task not running or already moving) is declined; one the
    /// placement could not book on its side is undone.
    fn begin_moves(
        &mut self,
        placer: &mut (dyn SlotPlacer + '_),
        keep: Option<(u32, u32)>,
        victims: &[TaskId],
    ) {
        for (task, to) in placer.take_moves() {
            let free = self.free.get(to as usize).copied().unwrap_or(0);
            let kept = keep.filter(|k| k.0 == to).map_or(0, |k| k.1);
            let need = self.running.get(&task).map_or(1, |r| r.slots);
            let room = free >= kept + need;
            let evictable = self.running.get(&task).is_some_and(|r| r.evictable);
            let begun = room && !victims.contains(&task) && self.begin_move(task, to);
            if !placer.move_begun(task, to, begun) && begun {
                self.undo_move(task, evictable);
            }
        }
    }

    /// Undoes [`Slots::begin_move`] of `id`: its target's slot is free
    /// again and it is `evictable` as before.
    fn undo_move(&mut self, id: TaskId, evictable: bool) {
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        let Some(to) = r.moving_to.take() else {
            return;
        };
        r.evictable = evictable;
        let r = r.clone();
        self.index(id, &r);
        self.free_slot(to, r.slots);
    }

    /// Records task `id` running on `server` from `now` in `slots` slots,
    /// free ones (`take`) or those of the tasks it preempts.
    fn run(&mut self, id: TaskId, class: u8, server: u32, now: SimTime, slots: u32, mode: Run) {
        if mode.take {
            self.take_slot(server, slots);
        }
        let level = self.level_of[server as usize];
        let r = Running {
            server,
            priority: class,
            started: now,
            level,
            sticky: mode.sticky,
            evictable: mode.evictable,
            moving_to: None,
            slots,
        };
        self.index(id, &r);
        self.running.insert(id, r);
    }

    fn index(&mut self, id: TaskId, r: &Running) {
        if r.evictable {
            self.by_start.insert((r.priority, r.started, id));
            self.by_power.insert((r.priority, r.level, r.started, id));
            self.evictable_at[r.priority as usize] += 1;
        }
    }

    fn unindex(&mut self, id: TaskId, r: &Running) {
        if r.evictable {
            self.by_start.remove(&(r.priority, r.started, id));
            self.by_power.remove(&(r.priority, r.level, r.started, id));
            self.evictable_at[r.priority as usize] -= 1;
        }
    }

    /// Whether server `i` has a free slot.
    fn has_free(&self, i: u32) -> bool {
        self.has_room(i, 1)
    }

    /// Whether server `i` has `n` free slots (at least one).
    fn has_room(&self, i: u32, n: u32) -> bool {
        self.free.get(i as usize).is_some_and(|&f| f >= n.max(1))
    }

    /// Running task `id` is to migrate to free slots of `to`, held from
    /// now on; it is out of the eviction indexes until [`Slots::arrived`].
    fn begin_move(&mut self, id: TaskId, to: u32) -> bool {
        let Some(r) = self.running.get(&id).cloned() else {
            return false;
        };
        if !self.has_room(to, r.slots) || r.moving_to.is_some() || r.server == to {
            return false;
        }
        self.unindex(id, &r);
        self.take_slot(to, r.slots);
        if let Some(r) = self.running.get_mut(&id) {
            r.moving_to = Some(to);
            r.evictable = false;
        }
        true
    }

    /// Migrating task `id` left `from`: it now holds only its new slot.
    fn left(&mut self, id: TaskId, from: ActorId) {
        let Some(&i) = self.index_of.get(&from) else {
            return;
        };
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        let Some(to) = r.moving_to.filter(|_| r.server == i) else {
            return;
        };
        r.server = to;
        r.level = self.level_of[to as usize];
        r.moving_to = None;
        let n = r.slots;
        self.free_slot(i, n);
    }

    /// Migrated task `id` runs on its new server: evictable again if its
    /// policy says so.
    fn arrived(&mut self, id: TaskId, evictable: bool) {
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        if r.moving_to.is_some() || r.evictable || !evictable {
            return;
        }
        r.evictable = true;
        let r = r.clone();
        self.index(id, &r);
    }

    /// Task `id` left `server`: its slot is free again. `None` if it was
    /// not running there (as far as we know).
    fn vacate(&mut self, id: TaskId, server: ActorId) -> Option<Running> {
        let r = self.running.get(&id)?;
        if self.index_of.get(&server) != Some(&r.server) {
            // Not where we sent it: nothing of ours to free.
            return None;
        }
        let r = self.evict(id)?;
        self.free_slot(r.server, r.slots);
        if let Some(to) = r.moving_to {
            self.free_slot(to, r.slots);
        }
        Some(r)
    }

    /// Task `id` stops running; its slot goes to its evictor.
    fn evict(&mut self, id: TaskId) -> Option<Running> {
        let r = self.running.remove(&id)?;
        self.unindex(id, &r);
        Some(r)
    }

    fn take_slot(&mut self, server: u32, n: u32) {
        self.free[server as usize] -= n;
        self.free_total -= n;
        let level = &mut self.levels[self.level_of[server as usize] as usize];
        let pos = level.servers.binary_search(&server).unwrap_or(0);
        level.free.add(pos, -i64::from(n));
    }

    fn free_slot(&mut self, server: u32, n: u32) {
        self.free[server as usize] += n;
        self.free_total += n;
        let level = &mut self.levels[self.level_of[server as usize] as usize];
        let pos = level.servers.binary_search(&server).unwrap_or(0);
        level.free.add(pos, n as i64);
    }
}

/// How a task starts: in a free slot or a preempted one, sticky or not,
/// evictable or not.
#[derive(Clone, Copy)]
struct Run {
    take: bool,
    sticky: bool,
    evictable: bool,
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
    pub fn record(&mut self, task: &Task, priority_eviction: bool) {
        if task.evictions == 1 {
            self.evicted_tasks += 1;
        }
        if priority_eviction && task.priority_evictions == 1 {
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

    /// Whether server `i` has room for `task`: a free slot per thread.
    pub fn has_room(&self, i: u32, task: &Task) -> bool {
        self.slots.has_room(i, slots_of(task))
    }

    /// Paragon's migration (§3.4) under a slot stage: running `task` is to
    /// move to a free slot of server `to`, which it holds from now on. It
    /// cannot be evicted until it runs there ([`SlotStage::arrived`]).
    /// `false` if it is not running, already moving, or `to` has no free
    /// slot.
    pub fn begin_move(&mut self, task: TaskId, to: u32) -> bool {
        self.slots.begin_move(task, to)
    }

    /// A migrating task left `from` with its progress: its slot there is
    /// free.
    pub fn left(&mut self, task: TaskId, from: ActorId) {
        self.slots.left(task, from);
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

    /// The level [`Preemption::level`] names for a start of `task` on the
    /// servers `allowed` admits, among those with room for it.
    fn level_for(&self, task: &Task, allowed: Admits<'_>) -> Option<u16> {
        let n = slots_of(task);
        if n <= 1 {
            return self.policy.level(task.priority, &self.slots, allowed);
        }
        let room = |i: u32| self.slots.has_room(i, n) && allowed.is_none_or(|ok| ok(i));
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
        let n = slots_of(task);
        let sticky = self.sticky_free(n) && self.policy.sticky_admits(task, now);
        if sticky || self.regular_free(n) {
            let level = if sticky {
                None
            } else {
                self.level_for(task, allowed)
            };
            if let Some(server) = self.slots.place(placer, task, allowed, level, rng) {
                placer.started(task, server, &[], now, rng);
                return Some(self.start(task.clone(), server, now, sticky));
            }
        }
        if n > 1 {
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
            let n = self.tasks.get(&id).map_or(1, slots_of);
            if n > self.sticky_cap {
                passed.insert(id);
                continue;
            }
            if !self.sticky_free(n) {
                break;
            }
            let server = match placer.as_deref_mut() {
                None => self.slots.random_room(None, n, rng),
                Some(p) => self.place_queued(p, id, None, rng),
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
            let Some((class, n)) = self.tasks.get(&id).map(|t| (t.priority, slots_of(t))) else {
                break;
            };
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
                    let level = match self.tasks.get(&id) {
                        Some(task) => self.level_for(task, None),
                        None => None,
                    };
                    let server = match placer.as_deref_mut() {
                        None => self.slots.random_room(level, n, rng),
                        Some(p) => self.place_queued(p, id, level, rng),
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
                if n > 1 {
                    let victims = match (placer.as_deref_mut(), self.tasks.get(&id)) {
                        (Some(p), Some(task)) if p.gates_victims(task) => {
                            let cell = RefCell::new(p);
                            let fits = |server: u32, v: TaskId| {
                                cell.borrow_mut().victim_fits(task, server, v)
                            };
                            let scope = Scope {
                                servers: None,
                                victims: Some(&fits),
                            };
                            self.victims_for(task, scope, rng)
                        }
                        (_, Some(task)) => self.victims_for(task, Scope::default(), rng),
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
                            servers: None,
                            victims: Some(&fits),
                        };
                        self.victims(class, scope, scores, rng)
                    }
                    _ => self.victims(class, Scope::default(), scores, rng),
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
    /// slot: enough servers of its slots count (one per unit) that also
    /// leave them beside a primary tenant ([`SlotPlacer::could_hold`]).
    fn could_hold(&self, id: TaskId, placer: Option<&dyn SlotPlacer>) -> bool {
        let Some(task) = self.tasks.get(&id) else {
            return true;
        };
        let rest = self.gang_rest.get(&id).map_or(&[][..], Vec::as_slice);
        let n = rest.iter().chain([task]).map(slots_of).max().unwrap_or(1);
        let hosts = 1 + rest.len();
        let servers = &self.slots.servers;
        servers.iter().filter(|s| s.slots >= n).take(hosts).count() >= hosts
            && placer.is_none_or(|p| p.could_hold(n, hosts))
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
        let n = slots_of(task);
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

    /// Asks `placer` where queued task `id` goes, among the servers with a
    /// free slot (of `level`, if given).
    fn place_queued(
        &mut self,
        placer: &mut dyn SlotPlacer,
        id: TaskId,
        level: Option<u16>,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        let task = self.tasks.get(&id)?;
        self.slots.place(placer, task, None, level, rng)
    }

    fn take(&mut self, id: TaskId) -> Option<Task> {
        let task = self.tasks.remove(&id)?;
        self.by_priority
            .remove(&(Reverse(task.priority), task.submitted_at, id));
        self.by_arrival.remove(&(task.submitted_at, id));
        Some(task)
    }

    /// Starts `task` in free slots of `server`, sticky or regular.
    fn start(&mut self, task: Task, server: u32, now: SimTime, sticky: bool) -> SlotAction {
        let n = slots_of(&task);
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
        self.slots.run(task.id, task.priority, server, now, n, mode);
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
        let n = slots_of(&task);
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
        self.slots.run(task.id, task.priority, server, now, n, mode);
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
    }
}

#[cfg(test)]
mod tests {
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
                cpu_per_slot: cpu,
            })
            .collect();
        SlotStage::new(&cfg, servers)
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
}
