//! The slots as the scheduler handed them out ([`Slots`]): free slots per
//! server and per level, and the running tasks indexed for eviction. The
//! policies read it to decide; the stage (`mod.rs`) changes it.

use std::collections::{BTreeMap, BTreeSet};

use dcemu_topology::SimTime;
use rand::RngCore;

use crate::kernel::{ActorId, ActorRng};
use crate::sampling::index;
use crate::task::{Task, TaskId};

use super::fenwick::Fenwick;
use super::placer::SlotPlacer;
use crate::slot_share::{SlotSize, slots_for};

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

/// One server as the slot stage sees it.
#[derive(Clone, Debug)]
pub struct SlotServer {
    pub id: ActorId,
    pub slots: u32,
    pub cores: u32,
    /// CPU a slot gets when the server is full: `core_speed × cores / slots`.
    pub cpu_per_slot: f64,
}

impl SlotServer {
    /// Slots a task of `threads` threads takes here
    /// ([`crate::slot_share::slots_for`]).
    pub fn slots_for(&self, threads: u32) -> u32 {
        slots_for(threads, self.cores, self.slots)
    }

    /// How large one of its slots is, in cores.
    pub fn size(&self) -> SlotSize {
        SlotSize::of(self.cores, self.slots)
    }
}

/// Servers of equal CPU per slot, with a Fenwick tree over their free slots
/// so that a uniformly random free slot is found in O(log n).
#[derive(Clone, Debug)]
pub(super) struct Level {
    pub(super) servers: Vec<u32>,
    pub(super) free: Fenwick,
}

#[derive(Clone, Debug)]
pub(super) struct Running {
    pub(super) server: u32,
    pub(super) priority: u8,
    /// When its current execution started: MRS evicts the youngest
    /// execution, the least work lost (thesis §6.2.3.3). (Keeping the first
    /// start across evictions instead, as Statement 7.3's wording could
    /// suggest, makes LRS evict just-restarted tasks and waste less than
    /// RND, against Table 7.2.)
    pub(super) started: SimTime,
    pub(super) level: u16,
    pub(super) sticky: bool,
    /// Indexed in `by_start` and `by_power` ([`Preemption::evictable`]);
    /// never while it migrates, so that no `Preempt` can reach a server
    /// before the task does.
    pub(super) evictable: bool,
    /// The server whose slots a migration holds for it (Paragon §3.4),
    /// until it leaves this one.
    pub(super) moving_to: Option<u32>,
    /// Slots it holds on `server` ([`SlotServer::slots_for`] its threads).
    pub(super) slots: u32,
    pub(super) threads: u32,
    /// Its trace job, if it must not share a server with that job's
    /// other such tasks ([`Task::apart`]).
    pub(super) apart: Option<u64>,
}

/// What a start asks of the slots: the task's threads, the most slots the
/// stage's share leaves it (`cap`: HYBRID's sticky pool or the regular
/// rest), and, where the cluster's slots come in several sizes, the one
/// size it takes: the smallest that holds it in one slot (WASC's
/// heterogeneous slots, issue 39). `None`: any size.
#[derive(Clone, Copy, Debug)]
pub(super) struct Need {
    pub(super) threads: u32,
    pub(super) cap: u32,
    pub(super) size: Option<SlotSize>,
    /// The trace job whose restricted tasks' servers it must avoid.
    pub(super) apart: Option<u64>,
}

/// The slots as the scheduler handed them out: free slots per server and
/// per level (servers of equal CPU per slot, most powerful first), and the
/// running tasks indexed for eviction. The policies read it to decide.
pub struct Slots {
    pub(super) servers: Vec<SlotServer>,
    pub(super) index_of: BTreeMap<ActorId, u32>,
    /// Level of each server; levels are ordered most powerful first.
    pub(super) level_of: Vec<u16>,
    pub(super) levels: Vec<Level>,
    /// Free slots of each server (the Fenwick trees hold the same counts).
    pub(super) free: Vec<u32>,
    pub(super) free_total: u32,
    pub(super) total: u32,
    pub(super) running: BTreeMap<TaskId, Running>,
    /// Evictable running tasks by priority and start.
    pub(super) by_start: BTreeSet<(u8, SimTime, TaskId)>,
    /// The same, by priority, level and start.
    pub(super) by_power: BTreeSet<(u8, u16, SimTime, TaskId)>,
    /// Running tasks per priority among `by_start`, for `rnd`.
    pub(super) evictable_at: [u32; 256],
    /// The slot sizes of the cluster, smallest first, where it has more
    /// than one (empty otherwise: no task has a size to choose).
    pub(super) sizes: Vec<SlotSize>,
    /// The distinct (cores, slots) of its servers.
    shapes: Vec<(u32, u32)>,
    /// Running tasks with the different-machine restriction, per (job,
    /// server) ([`Task::apart`]).
    apart: BTreeMap<(u64, u32), u32>,
}

impl Slots {
    pub(super) fn new(servers: Vec<SlotServer>) -> Self {
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
        let mut sizes: Vec<SlotSize> = servers.iter().map(SlotServer::size).collect();
        sizes.sort();
        sizes.dedup();
        if sizes.len() < 2 {
            sizes.clear();
        }
        let shapes: BTreeSet<(u32, u32)> = servers.iter().map(|s| (s.cores, s.slots)).collect();
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
            sizes,
            shapes: shapes.into_iter().collect(),
            apart: BTreeMap::new(),
        }
    }

    /// Slots a task of `threads` threads takes on server `i`.
    pub(super) fn slots_at(&self, i: u32, threads: u32) -> u32 {
        self.servers
            .get(i as usize)
            .map_or(threads.max(1), |s| s.slots_for(threads))
    }

    /// The fewest slots a task of `threads` threads takes on any server.
    pub(super) fn fewest(&self, threads: u32) -> u32 {
        self.shapes
            .iter()
            .map(|&(cores, slots)| slots_for(threads, cores, slots))
            .min()
            .unwrap_or(threads.max(1))
    }

    /// What a start of a task of `threads` threads within `cap` slots
    /// asks (see [`Need`]): among the servers `admits` holds, the smallest
    /// slot size that holds it in one slot and has one free.
    pub(super) fn need(&self, task: &Task, cap: u32, admits: Admits<'_>) -> Need {
        let threads = task.cores;
        let size = match self.sizes.is_empty() || cap == 0 {
            true => None,
            false => (0..self.servers.len() as u32)
                .filter(|&i| self.free[i as usize] > 0 && admits.is_none_or(|ok| ok(i)))
                .map(|i| self.servers[i as usize].size())
                .filter(|z| z.holds(threads))
                .min(),
        };
        Need {
            threads,
            cap,
            size,
            apart: task.apart,
        }
    }

    /// Whether a task of trace job `apart` may run on server `i`: no
    /// running task of that job with the restriction is there.
    pub(super) fn apart_allows(&self, apart: Option<u64>, i: u32) -> bool {
        apart.is_none_or(|job| !self.apart.contains_key(&(job, i)))
    }

    /// The servers running tasks of trace job `job` with the restriction.
    pub(super) fn apart_hosts(&self, job: u64) -> Vec<u32> {
        self.apart
            .range((job, 0)..=(job, u32::MAX))
            .map(|(&(_, i), _)| i)
            .collect()
    }

    fn hold_apart(&mut self, r: &Running) {
        if let Some(job) = r.apart {
            *self.apart.entry((job, r.server)).or_insert(0) += 1;
        }
    }

    fn free_apart(&mut self, r: &Running) {
        let Some(job) = r.apart else { return };
        if let Some(n) = self.apart.get_mut(&(job, r.server)) {
            *n -= 1;
            if *n == 0 {
                self.apart.remove(&(job, r.server));
            }
        }
    }

    /// Whether server `i` has room for a start of `need`.
    pub(super) fn fits(&self, i: u32, need: Need) -> bool {
        let k = self.slots_at(i, need.threads);
        k <= need.cap
            && self.has_room(i, k)
            && need
                .size
                .is_none_or(|z| self.servers[i as usize].size() == z)
            && self.apart_allows(need.apart, i)
    }

    /// Whether `need` takes one slot of any server with no size to
    /// choose: then the levels' Fenwick trees find its slot.
    pub(super) fn one_slot(&self, need: Need) -> bool {
        need.threads <= 1
            && need.size.is_none()
            && need.cap >= 1
            && need.apart.is_none_or(|job| {
                self.apart
                    .range((job, 0)..=(job, u32::MAX))
                    .next()
                    .is_none()
            })
    }

    /// When running task `id`'s current execution started (what `mrs`
    /// and `lrs` order by); `None` if it does not run.
    pub fn started(&self, id: TaskId) -> Option<SimTime> {
        self.running.get(&id).map(|r| r.started)
    }

    /// The server (index) running task `id` runs on, and its priority.
    pub fn running_on(&self, id: TaskId) -> Option<(u32, u8)> {
        self.running.get(&id).map(|r| (r.server, r.priority))
    }

    /// The most powerful level with a free slot on a server `admits` holds.
    pub fn most_powerful_free(&self, admits: Admits<'_>) -> Option<u16> {
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
    pub fn admitted(&self, id: TaskId, scope: Scope<'_>) -> bool {
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
    pub fn lowest_evictable(&self, below: u8, admits: Scope<'_>) -> Option<u8> {
        self.by_start
            .iter()
            .take_while(|k| k.0 < below)
            .find(|k| self.admitted(k.2, admits))
            .map(|k| k.0)
    }

    /// The evictable tasks of priority `class` running on servers `admits`
    /// holds, least recently started first.
    pub fn by_start(
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
    pub fn evictable_count(&self, class: u8, admits: Scope<'_>) -> u32 {
        match admits.is_all() {
            true => self.evictable_at[class as usize],
            false => self.by_start(class, admits).count() as u32,
        }
    }

    /// The most powerful level an evictable task of priority `class` runs
    /// on, among the servers `admits` holds.
    pub fn most_powerful_running(&self, class: u8, admits: Scope<'_>) -> Option<u16> {
        self.by_power
            .range((class, 0, 0, 0)..=(class, u16::MAX, SimTime::MAX, TaskId::MAX))
            .find(|k| self.admitted(k.3, admits))
            .map(|k| k.1)
    }

    /// The evictable tasks of priority `class` running on `level`, on
    /// servers `admits` holds, least recently started first.
    pub fn by_power(
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
    pub(super) fn random_free(&self, level: Option<u16>, rng: &mut impl RngCore) -> u32 {
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

    /// A server with room for `need` (of `level` if it has one), drawn as
    /// [`Slots::random_free`] draws a slot: with probability in proportion
    /// to its free slots. `None`: no server has room.
    pub(super) fn random_room(
        &self,
        level: Option<u16>,
        need: Need,
        rng: &mut impl RngCore,
    ) -> Option<u32> {
        if self.one_slot(need) {
            return (self.free_total > 0).then(|| self.random_free(level, rng));
        }
        let of_level = |l: u16| {
            self.levels
                .get(l as usize)
                .into_iter()
                .flat_map(|lv| lv.servers.iter().copied())
                .filter(|&i| self.fits(i, need))
                .map(|i| (i, self.free[i as usize]))
                .collect::<Vec<(u32, u32)>>()
        };
        let mut room = level.map(of_level).unwrap_or_default();
        if room.is_empty() {
            room = (0..self.servers.len() as u32)
                .filter(|&i| self.fits(i, need))
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

    /// Asks `placer` where `task` goes, among the servers with room for
    /// `need` that `admits` holds (of `level`, if given).
    pub(super) fn place(
        &mut self,
        placer: &mut dyn SlotPlacer,
        task: &Task,
        (admits, level): (Admits<'_>, Option<u16>),
        need: Need,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        let chosen = {
            let candidates = |i: u32| {
                self.fits(i, need)
                    && admits.is_none_or(|ok| ok(i))
                    && level.is_none_or(|l| self.level_of[i as usize] == l)
            };
            placer
                .choose(task, &candidates, rng)
                .filter(|&i| candidates(i))
        };
        let keep = chosen.map(|i| (i, self.slots_at(i, task.cores)));
        self.begin_moves(placer, keep, &[]);
        chosen
    }

    /// Begins the moves `placer`'s latest decision ordered
    /// ([`SlotPlacer::take_moves`]) and tells it which began. `keep`: the
    /// server and number of free slots the decision's own start is about
    /// to take; `victims`: the tasks it is about to evict. A move the
    /// slots cannot hold (too few free slots left beside the start, a
    /// victim, a task not running or already moving) is declined; one the
    /// placement could not book on its side is undone.
    pub(super) fn begin_moves(
        &mut self,
        placer: &mut (dyn SlotPlacer + '_),
        keep: Option<(u32, u32)>,
        victims: &[TaskId],
    ) {
        for (task, to) in placer.take_moves() {
            let free = self.free.get(to as usize).copied().unwrap_or(0);
            let kept = keep.filter(|k| k.0 == to).map_or(0, |k| k.1);
            let need = self
                .running
                .get(&task)
                .map_or(1, |r| self.slots_at(to, r.threads));
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
    pub(super) fn undo_move(&mut self, id: TaskId, evictable: bool) {
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        let Some(to) = r.moving_to.take() else {
            return;
        };
        r.evictable = evictable;
        let r = r.clone();
        self.index(id, &r);
        self.free_slot(to, self.slots_at(to, r.threads));
    }

    /// Records task `id` of `threads` threads running on `server` from
    /// `now` in its slots there, free ones (`take`) or those of the tasks
    /// it preempts.
    pub(super) fn run(&mut self, task: &Task, server: u32, now: SimTime, mode: Run) {
        let (id, class, threads) = (task.id, task.priority, task.cores);
        let slots = self.slots_at(server, threads);
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
            threads,
            apart: task.apart,
        };
        self.index(id, &r);
        self.hold_apart(&r);
        self.running.insert(id, r);
    }

    pub(super) fn index(&mut self, id: TaskId, r: &Running) {
        if r.evictable {
            self.by_start.insert((r.priority, r.started, id));
            self.by_power.insert((r.priority, r.level, r.started, id));
            self.evictable_at[r.priority as usize] += 1;
        }
    }

    pub(super) fn unindex(&mut self, id: TaskId, r: &Running) {
        if r.evictable {
            self.by_start.remove(&(r.priority, r.started, id));
            self.by_power.remove(&(r.priority, r.level, r.started, id));
            self.evictable_at[r.priority as usize] -= 1;
        }
    }

    /// Whether server `i` has a free slot.
    pub(super) fn has_free(&self, i: u32) -> bool {
        self.has_room(i, 1)
    }

    /// Whether server `i` has `n` free slots (at least one).
    pub(super) fn has_room(&self, i: u32, n: u32) -> bool {
        self.free.get(i as usize).is_some_and(|&f| f >= n.max(1))
    }

    /// Running task `id` is to migrate to free slots of `to`, held from
    /// now on; it is out of the eviction indexes until [`Slots::arrived`].
    pub(super) fn begin_move(&mut self, id: TaskId, to: u32) -> bool {
        let Some(r) = self.running.get(&id).cloned() else {
            return false;
        };
        let k = self.slots_at(to, r.threads);
        if !self.has_room(to, k)
            || r.moving_to.is_some()
            || r.server == to
            || !self.apart_allows(r.apart, to)
        {
            return false;
        }
        self.unindex(id, &r);
        self.take_slot(to, k);
        if let Some(r) = self.running.get_mut(&id) {
            r.moving_to = Some(to);
            r.evictable = false;
        }
        true
    }

    /// Migrating task `id` left `from`: it now holds only its new slots.
    /// Returns the slots it held there and holds now, and whether sticky.
    pub(super) fn left(&mut self, id: TaskId, from: ActorId) -> Option<(u32, u32, bool)> {
        let &i = self.index_of.get(&from)?;
        let before = self.running.get(&id)?.clone();
        let to = before.moving_to.filter(|_| before.server == i)?;
        let level = self.level_of[to as usize];
        let slots = self.servers[to as usize].slots_for(before.threads);
        self.free_apart(&before);
        let r = self.running.get_mut(&id)?;
        r.server = to;
        r.level = level;
        r.moving_to = None;
        r.slots = slots;
        let after = r.clone();
        self.hold_apart(&after);
        self.free_slot(i, before.slots);
        Some((before.slots, slots, before.sticky))
    }

    /// Migrated task `id` runs on its new server: evictable again if its
    /// policy says so.
    pub(super) fn arrived(&mut self, id: TaskId, evictable: bool) {
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
    pub(super) fn vacate(&mut self, id: TaskId, server: ActorId) -> Option<Running> {
        let r = self.running.get(&id)?;
        if self.index_of.get(&server) != Some(&r.server) {
            // Not where we sent it: nothing of ours to free.
            return None;
        }
        let r = self.evict(id)?;
        self.free_slot(r.server, r.slots);
        if let Some(to) = r.moving_to {
            self.free_slot(to, self.slots_at(to, r.threads));
        }
        Some(r)
    }

    /// Task `id` stops running; its slot goes to its evictor.
    pub(super) fn evict(&mut self, id: TaskId) -> Option<Running> {
        let r = self.running.remove(&id)?;
        self.unindex(id, &r);
        self.free_apart(&r);
        Some(r)
    }

    pub(super) fn take_slot(&mut self, server: u32, n: u32) {
        self.free[server as usize] -= n;
        self.free_total -= n;
        let level = &mut self.levels[self.level_of[server as usize] as usize];
        let pos = level.servers.binary_search(&server).unwrap_or(0);
        level.free.add(pos, -i64::from(n));
    }

    pub(super) fn free_slot(&mut self, server: u32, n: u32) {
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
pub(super) struct Run {
    pub(super) take: bool,
    pub(super) sticky: bool,
    pub(super) evictable: bool,
}
