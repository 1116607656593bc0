//! The scheduler's view of the cluster: each server's configuration, the
//! slots and memory it handed out, its latest report and Paragon's
//! interference state. Every stage reads it; only the scheduler writes it.

use crate::external::PowerView;
use crate::kernel::ActorId;
use crate::net::ServerReport;
use crate::server::pressure_weights;
use crate::slot_share::{slots_for, threads_in};
use crate::task::Task;

use super::placement::greedy::ServerInterference;

/// The scheduler's belief about free slots.
///
/// It is conservative by construction: a slot is taken when the scheduler
/// dispatches to it and returned only when the server reports the task done,
/// so the scheduler never over-commits a server however late messages arrive.
#[derive(Debug, Clone)]
pub struct ClusterView {
    servers: Vec<ServerSlots>,
    /// Indices of servers with at least one free slot, in no meaningful but
    /// deterministic order.
    with_free: Vec<u32>,
    /// Position of each server in `with_free`, if present.
    position: Vec<Option<u32>>,
    by_actor: std::collections::BTreeMap<ActorId, u32>,
    /// The latest report of each server, if it sent one.
    reports: Vec<Option<ServerReport>>,
    /// Paragon's interference state of each server (§3.1), kept by the
    /// scheduler from the profiles of the applications it placed there.
    interference: Vec<ServerInterference>,
    /// Whether a server's room is also bounded by what its primary tenant
    /// uses and reserves, as its latest report tells ([`ServerSlots::primary_room`]).
    primary_aware: bool,
    /// Each server's power state as the scheduler knows it and the power
    /// orders it sent it, when an external program decides power
    /// (protocol v3, [`ClusterView::track_power`]); empty otherwise.
    power: Vec<(PowerView, u64)>,
    /// When the scheduler asks a program at the moments servers go idle
    /// ([`ClusterView::watch_idle`]): each server whose slots changed
    /// since the last decision point, with whether it was idle then.
    idle_watch: Option<std::collections::BTreeMap<u32, bool>>,
    /// Tasks with the different-machine restriction ([`Task::apart`]) per
    /// (job, server), and where each such task holds its place.
    apart: std::collections::BTreeMap<(u64, u32), u32>,
    apart_of: std::collections::BTreeMap<crate::task::TaskId, (u64, u32)>,
    /// How many servers have each [`ServerSlots::capacity`]: answers
    /// [`ClusterView::could_hold`] without visiting the servers. A task
    /// too wide for every server stays queued and is asked about at every
    /// pass, so a scan made each refusal cost the whole cluster (at
    /// 100,000 servers, 6 % of a run).
    capacities: std::collections::BTreeMap<u32, u32>,
}

/// What the scheduler knows of a server: its configuration and what it
/// handed out.
#[derive(Debug, Clone, Copy)]
pub struct ServerSlots {
    pub id: ActorId,
    pub slots: u32,
    pub free: u32,
    pub cores: u32,
    /// Threads of the tasks it was handed (a task takes
    /// [`ServerSlots::slots_for`] slots for them).
    pub threads: u32,
    /// Index of its configuration (server type), as in profiles' `speed`.
    pub class: usize,
    pub memory_mb: u64,
    /// Memory not promised to the tasks dispatched to it.
    pub memory_free_mb: u64,
    /// Cores the server's primary tenant leaves to secondary tasks, from
    /// its latest report: cores less the primary's use and reserve
    /// (harvesting §5.3; its node manager kills the youngest tasks beyond
    /// that). `u32::MAX` when the view is not primary-aware or no report
    /// came yet.
    pub primary_room: u32,
}

/// A server as the scheduler is told about it when the model is built.
#[derive(Debug, Clone, Copy)]
pub struct ServerSpec {
    pub id: ActorId,
    pub slots: u32,
    pub cores: u32,
    pub class: usize,
    pub memory_mb: u64,
    /// Speed of a core relative to the reference core (1.0).
    pub core_speed: f64,
    /// Power at idle and at peak (thesis Table 3.1), for energy-aware
    /// placements.
    pub idle_w: f64,
    pub peak_w: f64,
}

impl ServerSlots {
    /// Share of its slots in use.
    pub fn load(&self) -> f64 {
        f64::from(self.slots - self.free) / f64::from(self.slots.max(1))
    }

    /// Whether `task` fits its free slots and the room its primary tenant
    /// leaves, and its free memory if `memory`.
    pub fn fits(&self, task: &Task, memory: bool) -> bool {
        self.free >= self.slots_for(task.cores)
            && self.primary_leaves(task.cores)
            && (!memory || self.memory_free_mb >= task.memory_mb)
    }

    /// Slots a task of `threads` threads takes here
    /// ([`crate::slot_share::slots_for`]).
    pub fn slots_for(&self, threads: u32) -> u32 {
        slots_for(threads, self.cores, self.slots)
    }

    /// The most threads a task may have to fit its free slots
    /// ([`crate::slot_share::threads_in`]).
    pub fn free_threads(&self) -> u32 {
        threads_in(self.free, self.cores, self.slots)
    }

    /// Whether its primary tenant's room ([`ServerSlots::primary_room`])
    /// takes `threads` more beside what the scheduler has there.
    pub fn primary_leaves(&self, threads: u32) -> bool {
        self.threads.saturating_add(threads) <= self.primary_room
    }

    /// Whether it could hold a task of `threads` threads if none of the
    /// scheduler's tasks ran there.
    pub fn could_hold(&self, threads: u32) -> bool {
        self.slots_for(threads) <= self.slots && threads <= self.primary_room
    }

    /// The most threads (at least one) a task could have and be held here
    /// ([`ServerSlots::could_hold`]); 0 if not even one thread. Exact: for
    /// `t ≥ 1`, `could_hold(t)` exactly when `t <= capacity()`, because
    /// [`slots_for`] grows with the threads.
    pub fn capacity(&self) -> u32 {
        let fits = |t: u32| self.slots_for(t) <= self.slots;
        if !fits(1) {
            return 0;
        }
        let (mut lo, mut hi) = (1u32, u32::MAX);
        if !fits(hi) {
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi = lo;
        }
        hi.min(self.primary_room)
    }
}

impl ClusterView {
    /// Whether at least `hosts` servers could each hold `cores` now if
    /// none of the scheduler's tasks ran there: within their slots and
    /// within the room their primary tenant's use and reserve leave
    /// ([`ServerSlots::primary_room`]). Where this is false no departure
    /// can make room ([`super::admission::Attempt::TooLarge`]).
    pub fn could_hold(&self, cores: u32, hosts: usize) -> bool {
        if cores == 0 {
            return self
                .servers
                .iter()
                .filter(|s| s.could_hold(cores))
                .take(hosts)
                .count()
                >= hosts;
        }
        let mut found = 0usize;
        for (_, &n) in self.capacities.range(cores..) {
            found += n as usize;
            if found >= hosts {
                return true;
            }
        }
        found >= hosts
    }

    fn count_capacity(&mut self, i: usize, delta: i64) {
        let capacity = self.servers[i].capacity();
        let n = self.capacities.entry(capacity).or_insert(0);
        *n = u32::try_from(i64::from(*n) + delta).unwrap_or(0);
        if *n == 0 {
            self.capacities.remove(&capacity);
        }
    }

    /// A view of `servers`; with `hardware_contention`, each server's
    /// interference state weighs caused scores by how its hardware passes
    /// contention on ([`crate::server::pressure_weights`] at full slots),
    /// else by Paragon's plain sum.
    pub fn new(servers: &[ServerSpec], hardware_contention: bool) -> Self {
        let mut view = ClusterView {
            servers: servers
                .iter()
                .map(|s| ServerSlots {
                    id: s.id,
                    slots: s.slots,
                    free: s.slots,
                    cores: s.cores,
                    threads: 0,
                    class: s.class,
                    memory_mb: s.memory_mb,
                    memory_free_mb: s.memory_mb,
                    primary_room: u32::MAX,
                })
                .collect(),
            with_free: Vec::new(),
            position: vec![None; servers.len()],
            reports: vec![None; servers.len()],
            interference: servers
                .iter()
                .map(|s| match hardware_contention {
                    true => ServerInterference::with_contention(pressure_weights(
                        s.cores,
                        s.slots as usize,
                    )),
                    false => ServerInterference::default(),
                })
                .collect(),
            by_actor: servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id, i as u32))
                .collect(),
            primary_aware: false,
            power: Vec::new(),
            idle_watch: None,
            apart: std::collections::BTreeMap::new(),
            apart_of: std::collections::BTreeMap::new(),
            capacities: std::collections::BTreeMap::new(),
        };
        for i in 0..view.servers.len() {
            if view.servers[i].free > 0 {
                view.mark_free(i as u32);
            }
            view.count_capacity(i, 1);
        }
        view
    }

    pub fn servers(&self) -> &[ServerSlots] {
        &self.servers
    }

    /// The latest report of server `i` (policies that weigh load read it).
    pub fn report(&self, i: u32) -> Option<&ServerReport> {
        self.reports.get(i as usize).and_then(Option::as_ref)
    }

    /// Makes every server's room also bounded by what its primary tenant
    /// uses and reserves, as reported: what a resource manager sees when
    /// node managers give primary tenants their cores first (harvesting
    /// §5.3, YARN-PT's view), so that a placement blind to primary tenants
    /// does not send tasks to servers that would kill them at once.
    pub(crate) fn set_primary_aware(&mut self) {
        self.primary_aware = true;
    }

    pub fn primary_aware(&self) -> bool {
        self.primary_aware
    }

    /// Makes the view follow the servers' power states (all awake at
    /// first, as under `power.policy = "idle"`) from the orders the
    /// scheduler sends and the wake-ups servers tell it of.
    pub(crate) fn track_power(&mut self) {
        self.power = vec![(PowerView::Awake, 0); self.servers.len()];
    }

    /// Server `i`'s power state as the scheduler knows it, when the view
    /// follows power states.
    pub fn power(&self, i: u32) -> Option<PowerView> {
        self.power.get(i as usize).map(|p| p.0)
    }

    /// The scheduler sends server `i` an order to sleep (`sleep`) or to
    /// wake: it counts as asleep, or waking, from now on.
    pub(crate) fn order_power(&mut self, i: u32, sleep: bool) {
        if let Some(p) = self.power.get_mut(i as usize) {
            p.0 = if sleep {
                PowerView::Asleep
            } else {
                PowerView::Waking
            };
            p.1 += 1;
        }
    }

    /// Makes the view note which servers go idle between decision points
    /// ([`ClusterView::went_idle`]).
    pub(crate) fn watch_idle(&mut self) {
        self.idle_watch = Some(Default::default());
    }

    /// Whether the scheduler has nothing out on server `i`: no task
    /// running, dispatched or migrating there (every slot free).
    pub fn idle(&self, i: u32) -> bool {
        self.servers
            .get(i as usize)
            .is_some_and(|s| s.free == s.slots)
    }

    /// Before server `i`'s slots change: remembers whether it was idle at
    /// the last decision point, if this is its first change since.
    fn note(&mut self, i: u32) {
        let was = self.idle(i);
        if let Some(watch) = self.idle_watch.as_mut() {
            watch.entry(i).or_insert(was);
        }
    }

    /// A request just showed the program the servers `shown` admits: those
    /// idle now count as seen idle (a decision point for them).
    pub(crate) fn shown(&mut self, shown: &dyn Fn(u32) -> bool) {
        let idle: Vec<u32> = match &self.idle_watch {
            Some(watch) => watch
                .keys()
                .copied()
                .filter(|&i| shown(i) && self.idle(i))
                .collect(),
            None => return,
        };
        if let Some(watch) = self.idle_watch.as_mut() {
            for i in idle {
                watch.insert(i, true);
            }
        }
    }

    /// The servers that went idle since the last decision point, by index
    /// (busy then, idle now); starts the next period.
    pub(crate) fn went_idle(&mut self) -> Vec<u32> {
        let Some(watch) = self.idle_watch.as_mut() else {
            return Vec::new();
        };
        let changed = std::mem::take(watch);
        changed
            .into_iter()
            .filter(|&(i, was)| !was && self.idle(i))
            .map(|(i, _)| i)
            .collect()
    }

    /// The server with actor id `id` says it is awake, having received
    /// `orders` power orders: believed only if it had them all (an order
    /// still on its way makes the message stale). Returns whether the
    /// view changed.
    pub(crate) fn awake(&mut self, id: ActorId, orders: u64) -> bool {
        let Some(&i) = self.by_actor.get(&id) else {
            return false;
        };
        match self.power.get_mut(i as usize) {
            Some(p) if p.1 == orders && p.0 != PowerView::Awake => {
                p.0 = PowerView::Awake;
                true
            }
            _ => false,
        }
    }

    /// Keeps `report` as the latest from the server with actor id `id`.
    pub(crate) fn record_report(&mut self, id: ActorId, report: ServerReport) {
        if let Some(&i) = self.by_actor.get(&id) {
            let claimed = report.primary_cores + report.reserve_cores;
            if self.primary_aware {
                self.count_capacity(i as usize, -1);
                self.servers[i as usize].primary_room = match claimed {
                    0 => u32::MAX,
                    _ => report.cores.saturating_sub(claimed),
                };
                self.count_capacity(i as usize, 1);
            }
            self.reports[i as usize] = Some(report);
        }
    }

    /// Servers that have a free slot.
    pub fn with_free(&self) -> &[u32] {
        &self.with_free
    }

    /// Index of the server with actor id `id`.
    pub fn index_of(&self, id: ActorId) -> Option<u32> {
        self.by_actor.get(&id).copied()
    }

    /// Paragon's interference state of server `i`.
    pub fn interference(&self, i: u32) -> &ServerInterference {
        &self.interference[i as usize]
    }

    pub(crate) fn interference_mut(&mut self, i: u32) -> &mut ServerInterference {
        &mut self.interference[i as usize]
    }

    /// Whether `task` may run on server `i`: no running task of its trace
    /// job with the different-machine restriction is there (Google 2011
    /// `task_events` field 13; [`Task::apart`]).
    pub fn apart_allows(&self, task: &Task, i: u32) -> bool {
        task.apart
            .is_none_or(|job| !self.apart.contains_key(&(job, i)))
    }

    /// The servers holding restricted tasks of `task`'s job: those
    /// [`ClusterView::apart_allows`] refuses it.
    pub fn apart_hosts(&self, task: &Task) -> Vec<u32> {
        match task.apart {
            None => Vec::new(),
            Some(job) => self
                .apart
                .range((job, 0)..=(job, u32::MAX))
                .map(|(&(_, i), _)| i)
                .collect(),
        }
    }

    /// `task` now holds its place on server `i`.
    pub(crate) fn hold_apart(&mut self, task: &Task, i: u32) {
        if let Some(job) = task.apart
            && self.apart_of.insert(task.id, (job, i)).is_none()
        {
            *self.apart.entry((job, i)).or_insert(0) += 1;
        }
    }

    /// Task `task` left server `i`.
    pub(crate) fn free_apart(&mut self, task: crate::task::TaskId, i: u32) {
        let Some(&(job, at)) = self.apart_of.get(&task) else {
            return;
        };
        if at != i {
            return;
        }
        self.apart_of.remove(&task);
        if let Some(n) = self.apart.get_mut(&(job, i)) {
            *n -= 1;
            if *n == 0 {
                self.apart.remove(&(job, i));
            }
        }
    }

    /// Takes the slots of a task of `threads` threads and `memory_mb` on
    /// server `i` and returns its actor id.
    pub(crate) fn take(&mut self, i: u32, threads: u32, memory_mb: u64) -> ActorId {
        self.note(i);
        if let Some(p) = self.power.get_mut(i as usize)
            && p.0 == PowerView::Asleep
        {
            p.0 = PowerView::Waking;
        }
        let s = &mut self.servers[i as usize];
        s.memory_free_mb = s.memory_free_mb.saturating_sub(memory_mb);
        s.free = s.free.saturating_sub(s.slots_for(threads));
        s.threads = s.threads.saturating_add(threads.max(1));
        let id = s.id;
        if s.free == 0 {
            self.unmark_free(i);
        }
        id
    }

    /// Returns the slots of a task of `threads` threads and `memory_mb` of
    /// the server with actor id `id`; `None` if it is not a server of this
    /// view or has fewer than those slots out.
    pub(crate) fn release(&mut self, id: ActorId, threads: u32, memory_mb: u64) -> Option<()> {
        let i = *self.by_actor.get(&id)?;
        let k = self.servers[i as usize].slots_for(threads);
        if self.servers[i as usize].free + k > self.servers[i as usize].slots {
            return None;
        }
        self.note(i);
        let s = &mut self.servers[i as usize];
        s.memory_free_mb = (s.memory_free_mb + memory_mb).min(s.memory_mb);
        let was_full = s.free == 0;
        s.free += k;
        s.threads = s.threads.saturating_sub(threads.max(1));
        if was_full && k > 0 {
            self.mark_free(i);
        }
        Some(())
    }

    fn mark_free(&mut self, i: u32) {
        self.position[i as usize] = Some(self.with_free.len() as u32);
        self.with_free.push(i);
    }

    fn unmark_free(&mut self, i: u32) {
        if let Some(pos) = self.position[i as usize].take() {
            self.with_free.swap_remove(pos as usize);
            if let Some(&moved) = self.with_free.get(pos as usize) {
                self.position[moved as usize] = Some(pos);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ActorRng;
    use crate::kernel::actor_rng;
    use crate::scheduler::placement::{Placement, RandomPlacement, Request};

    /// The capacity index answers as the scan over the servers would, for
    /// every width and host count, as primary tenants' reports move the
    /// room (servers with fewer, equal and more slots than cores).
    #[test]
    fn could_hold_by_capacity_answers_as_a_scan_of_the_servers() {
        let specs: Vec<ServerSpec> = [(8, 8), (12, 6), (4, 16), (16, 12), (2, 0)]
            .iter()
            .enumerate()
            .map(|(i, &(cores, slots))| ServerSpec {
                id: ActorId(10 + i as u32),
                slots,
                cores,
                class: 0,
                memory_mb: 1024,
                core_speed: 1.0,
                idle_w: 1.0,
                peak_w: 2.0,
            })
            .collect();
        let mut view = ClusterView::new(&specs, false);
        view.set_primary_aware();
        let scan = |v: &ClusterView, cores: u32, hosts: usize| {
            v.servers().iter().filter(|s| s.could_hold(cores)).count() >= hosts
        };
        let check = |v: &ClusterView| {
            for cores in 0..40 {
                for hosts in 0..7 {
                    assert_eq!(
                        v.could_hold(cores, hosts),
                        scan(v, cores, hosts),
                        "{cores} cores on {hosts} hosts"
                    );
                }
            }
        };
        check(&view);
        for (round, (primary, reserve)) in [(3, 1), (0, 0), (10, 5), (1, 0), (0, 2)]
            .into_iter()
            .enumerate()
        {
            for (i, spec) in specs.iter().enumerate() {
                if (i + round) % 2 == 0 {
                    let report = ServerReport {
                        cores: spec.cores,
                        primary_cores: primary,
                        reserve_cores: reserve,
                        ..ServerReport::default()
                    };
                    view.record_report(spec.id, report);
                }
            }
            check(&view);
        }
    }

    fn task() -> Task {
        Task::new(0, ActorId(1), 0, 1)
    }

    fn specs(slots: &[(u32, u32)]) -> Vec<ServerSpec> {
        slots
            .iter()
            .map(|&(id, slots)| ServerSpec {
                core_speed: 1.0,
                idle_w: 100.0,
                peak_w: 200.0,
                id: ActorId(id),
                slots,
                cores: slots,
                class: 0,
                memory_mb: 1 << 20,
            })
            .collect()
    }

    fn random(task: &Task, view: &ClusterView, rng: &mut ActorRng) -> Option<u32> {
        let req = Request {
            task,
            profile: None,
            allowed: None,
            exclude: None,
        };
        RandomPlacement.place(&req, view, rng).map(|c| c.server)
    }

    #[test]
    fn slots_are_conserved_through_take_and_release() {
        let mut view = ClusterView::new(&specs(&[(5, 2), (6, 1)]), false);
        let mut rng = actor_rng(1, "scheduler");
        let mut placed = Vec::new();
        while let Some(i) = random(&task(), &view, &mut rng) {
            placed.push(view.take(i, 1, 0));
        }
        assert_eq!(placed.len(), 3, "exactly the three slots are handed out");
        assert!(view.with_free().is_empty());
        assert_eq!(view.release(ActorId(6), 1, 0), Some(()));
        assert_eq!(
            view.release(ActorId(6), 1, 0),
            None,
            "no slot of server 6 is out"
        );
        assert_eq!(view.release(ActorId(9), 1, 0), None, "not a server");
        assert_eq!(view.with_free(), &[1]);
        let total_free: u32 = view.servers().iter().map(|s| s.free).sum();
        assert_eq!(total_free, 1);
    }

    #[test]
    fn power_states_follow_orders_dispatches_and_only_fresh_wake_ups() {
        let mut view = ClusterView::new(&specs(&[(5, 2), (6, 1)]), false);
        assert_eq!(view.power(0), None, "not tracked unless asked");
        view.track_power();
        assert_eq!(view.power(0), Some(PowerView::Awake));
        view.order_power(0, true);
        assert_eq!(view.power(0), Some(PowerView::Asleep));
        assert!(
            !view.awake(ActorId(5), 0),
            "an awake message sent before the order is stale"
        );
        view.take(0, 1, 0);
        assert_eq!(
            view.power(0),
            Some(PowerView::Waking),
            "a dispatch wakes it"
        );
        assert!(view.awake(ActorId(5), 1));
        assert_eq!(view.power(0), Some(PowerView::Awake));
        view.order_power(1, true);
        view.order_power(1, false);
        assert_eq!(view.power(1), Some(PowerView::Waking));
        assert!(
            !view.awake(ActorId(6), 1),
            "the wake order is still on its way"
        );
        assert!(view.awake(ActorId(6), 2));
        assert!(!view.awake(ActorId(7), 0), "not a server");
    }

    #[test]
    fn servers_that_went_idle_are_those_busy_at_the_last_decision_point() {
        let mut view = ClusterView::new(&specs(&[(5, 2), (6, 1), (7, 1)]), false);
        view.take(0, 1, 0);
        assert_eq!(view.went_idle(), Vec::<u32>::new(), "not watched");
        view.watch_idle();
        view.take(1, 1, 0);
        view.take(2, 1, 0);
        assert_eq!(view.went_idle(), Vec::<u32>::new(), "they went busy");
        view.release(ActorId(5), 1, 0);
        view.release(ActorId(6), 1, 0);
        view.take(1, 1, 0);
        view.release(ActorId(6), 1, 0);
        assert_eq!(view.went_idle(), vec![0, 1]);
        view.take(1, 1, 0);
        view.release(ActorId(6), 1, 0);
        assert_eq!(
            view.went_idle(),
            Vec::<u32>::new(),
            "busy then idle again within one period: idle at both ends"
        );
        view.take(0, 1, 0);
        assert_eq!(view.went_idle(), Vec::<u32>::new());
        view.release(ActorId(5), 1, 0);
        view.shown(&|i| i == 0);
        assert_eq!(
            view.went_idle(),
            Vec::<u32>::new(),
            "a request showed it idle already"
        );
    }

    #[test]
    fn a_task_with_threads_goes_only_where_its_slots_fit() {
        let mut view = ClusterView::new(&specs(&[(1, 2), (2, 4), (3, 8)]), false);
        let mut rng = actor_rng(1, "scheduler");
        let wide = Task { cores: 3, ..task() };
        for _ in 0..50 {
            let i = random(&wide, &view, &mut rng).unwrap();
            assert!(view.servers()[i as usize].free >= 3);
        }
        view.take(2, 8, 0);
        view.take(1, 2, 0);
        assert_eq!(
            random(&wide, &view, &mut rng),
            None,
            "2 free slots left, none on one server"
        );
        assert_eq!(view.release(ActorId(3), 4, 0), Some(()));
        assert_eq!(random(&wide, &view, &mut rng), Some(2));
    }

    /// A server of 12 cores in 6 slots (a slot is 2 cores) counts a task
    /// of 4 threads as 2 slots, in `fits`, `take` and `release` alike,
    /// and its primary tenant's room in threads.
    #[test]
    fn a_slot_of_several_cores_holds_as_many_threads() {
        let spec = ServerSpec {
            cores: 12,
            slots: 6,
            ..specs(&[(1, 6)])[0]
        };
        let mut view = ClusterView::new(&[spec], false);
        let four = Task { cores: 4, ..task() };
        assert!(view.servers()[0].fits(&four, true));
        view.take(0, 4, 0);
        view.take(0, 4, 0);
        assert_eq!(view.servers()[0].free, 2);
        assert_eq!(view.servers()[0].threads, 8);
        assert_eq!(view.servers()[0].free_threads(), 4);
        assert!(view.servers()[0].fits(&four, true));
        assert!(!view.servers()[0].fits(&Task { cores: 5, ..task() }, true));
        view.set_primary_aware();
        view.record_report(
            ActorId(1),
            ServerReport {
                cores: 12,
                primary_cores: 2,
                reserve_cores: 0,
                ..ServerReport::default()
            },
        );
        assert!(
            !view.servers()[0].fits(&four, true),
            "10 cores left, 8 used"
        );
        assert!(view.could_hold(10, 1) && !view.could_hold(11, 1));
        assert_eq!(view.release(ActorId(1), 4, 0), Some(()));
        assert_eq!(view.servers()[0].free, 4);
        assert_eq!(view.servers()[0].threads, 4);
    }

    #[test]
    fn random_placement_spreads_over_free_servers() {
        let mut view =
            ClusterView::new(&specs(&[(0, 1000), (1, 1000), (2, 1000), (3, 1000)]), false);
        let mut rng = actor_rng(1, "scheduler");
        let mut counts = [0u32; 4];
        for _ in 0..2000 {
            let i = random(&task(), &view, &mut rng).unwrap();
            counts[i as usize] += 1;
            view.take(i, 1, 0);
        }
        assert!(
            counts.iter().all(|&c| (400..600).contains(&c)),
            "{counts:?}"
        );
    }

    /// A task wider than every server, or than what every primary tenant
    /// leaves, could not be held however many tasks left; one within a
    /// server's room could, even while that server is full.
    #[test]
    fn could_hold_bounds_by_slots_and_the_primary_tenants_room() {
        let mut view = ClusterView::new(&specs(&[(1, 12), (2, 4), (3, 4)]), false);
        view.set_primary_aware();
        assert!(view.could_hold(12, 1) && !view.could_hold(13, 1));
        assert!(view.could_hold(4, 3) && !view.could_hold(5, 2));
        let report = |primary_cores, reserve_cores| ServerReport {
            free_slots: 0,
            running: 0,
            busy_cores: primary_cores,
            cores: 12,
            primary_cores,
            reserve_cores,
            memory_used_mb: 0,
            memory_mb: 1 << 20,
        };
        view.record_report(ActorId(1), report(2, 4));
        assert!(view.could_hold(6, 1), "12 cores less 2 used and 4 kept");
        assert!(!view.could_hold(7, 1), "no server leaves 7 now");
        view.take(0, 6, 0);
        assert!(view.could_hold(6, 1), "a full server's room still counts");
        view.record_report(ActorId(1), report(0, 0));
        assert!(view.could_hold(12, 1), "the primary tenant let go");
    }
}
