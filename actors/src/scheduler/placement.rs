//! The placement stage: given a task and the scheduler's view of the cluster,
//! pick a server. Adding a policy is one file implementing [`Placement`] and
//! one variant of `PlacementKind`.

use crate::kernel::{ActorId, ActorRng};
use crate::net::ServerReport;
use crate::profiling::Profile;
use crate::sampling::index;
use crate::server::pressure_weights;
use crate::task::Task;

use super::greedy::ServerInterference;

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
}

/// What the scheduler knows of a server: its configuration and what it
/// handed out.
#[derive(Debug, Clone, Copy)]
pub struct ServerSlots {
    pub id: ActorId,
    pub slots: u32,
    pub free: u32,
    /// Index of its configuration (server type), as in profiles' `speed`.
    pub class: usize,
    pub memory_mb: u64,
    /// Memory not promised to the tasks dispatched to it.
    pub memory_free_mb: u64,
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

    /// Whether `task` fits its free slots, and its free memory if `memory`.
    pub fn fits(&self, task: &Task, memory: bool) -> bool {
        self.free >= task.cores && (!memory || self.memory_free_mb >= task.memory_mb)
    }
}

impl ClusterView {
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
                    class: s.class,
                    memory_mb: s.memory_mb,
                    memory_free_mb: s.memory_mb,
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
        };
        for i in 0..view.servers.len() {
            if view.servers[i].free > 0 {
                view.mark_free(i as u32);
            }
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

    /// Keeps `report` as the latest from the server with actor id `id`.
    pub(crate) fn record_report(&mut self, id: ActorId, report: ServerReport) {
        if let Some(&i) = self.by_actor.get(&id) {
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

    /// Takes `k` slots and `memory_mb` on server `i` and returns its actor id.
    pub(crate) fn take(&mut self, i: u32, k: u32, memory_mb: u64) -> ActorId {
        let s = &mut self.servers[i as usize];
        s.memory_free_mb = s.memory_free_mb.saturating_sub(memory_mb);
        s.free = s.free.saturating_sub(k);
        let id = s.id;
        if s.free == 0 {
            self.unmark_free(i);
        }
        id
    }

    /// Returns `k` slots and `memory_mb` of the server with actor id `id`;
    /// `None` if it is not a server of this view or has fewer than `k`
    /// slots out.
    pub(crate) fn release(&mut self, id: ActorId, k: u32, memory_mb: u64) -> Option<()> {
        let i = *self.by_actor.get(&id)?;
        let s = &mut self.servers[i as usize];
        if s.free + k > s.slots {
            return None;
        }
        s.memory_free_mb = (s.memory_free_mb + memory_mb).min(s.memory_mb);
        let was_full = s.free == 0;
        s.free += k;
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

/// What the scheduler asks the placement stage.
pub struct Request<'a> {
    pub task: &'a Task,
    /// The task's classification, if it was classified (Paragon §2).
    pub profile: Option<&'a Profile>,
    /// Servers the admission stage allows now (ARQ pools); `None`: all.
    pub allowed: Option<&'a dyn Fn(u32) -> bool>,
    /// A server not to choose (the one a migrating task leaves).
    pub exclude: Option<u32>,
}

impl Request<'_> {
    /// Whether server `i` may be chosen at all.
    pub fn may_use(&self, i: u32) -> bool {
        self.exclude != Some(i) && self.allowed.is_none_or(|ok| ok(i))
    }
}

/// A placement decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// Index into `cluster.servers()`.
    pub server: u32,
    /// How far the chosen server is from the policy's constraints (Paragon:
    /// the negative parts of D1 and D2, in score points; 0 when none).
    pub violation: f64,
}

impl Choice {
    pub fn clean(server: u32) -> Self {
        Choice {
            server,
            violation: 0.0,
        }
    }
}

/// A placement policy.
pub trait Placement: Send {
    /// The server that should run `req.task`, or `None` to leave it queued.
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice>;

    /// Reports what the policy counted over the run.
    fn finish(&self, _out: &mut crate::kernel::Metrics) {}

    /// Server `server`'s report at `now` was just recorded in `cluster`
    /// (for policies that learn from reports over time, such as YARN-H's
    /// clustering service).
    fn observe(
        &mut self,
        _server: u32,
        _cluster: &ClusterView,
        _now: dcemu_topology::SimTime,
        _rng: &mut ActorRng,
    ) {
    }

    /// Log entries (`kind`, fields) the policy made since the last call;
    /// the scheduler writes them to its log.
    fn take_logs(&mut self) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }
}

/// `random`: uniformly among servers with as many free slots as the task
/// has threads.
pub struct RandomPlacement;

impl Placement for RandomPlacement {
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let fits: Vec<u32> = cluster
            .with_free()
            .iter()
            .copied()
            .filter(|&i| req.may_use(i) && cluster.servers()[i as usize].fits(req.task, false))
            .collect();
        (!fits.is_empty()).then(|| Choice::clean(fits[index(rng, fits.len() as u32) as usize]))
    }
}

/// `least-loaded` (Paragon §5's LL baseline): among the servers with the
/// task's cores and memory free, the one with the lowest CPU utilisation
/// (busy cores over cores, as Paragon's Fig. 2b measures load) in its latest
/// report; ties go to the lowest index. Blind to configurations and
/// interference.
///
/// Like a real least-loaded scheduler it trusts monitored load, so between
/// two reports it keeps sending work to the server that looked idlest,
/// which is how such schedulers pile work onto a few servers. Without
/// reports (`report_interval = "0s"`) it uses its own count of the slots it
/// handed out instead.
pub struct LeastLoaded;

impl LeastLoaded {
    fn load(cluster: &ClusterView, i: u32) -> f64 {
        match cluster.report(i) {
            Some(r) => f64::from(r.busy_cores) / f64::from(r.cores.max(1)),
            None => cluster.servers()[i as usize].load(),
        }
    }
}

impl Placement for LeastLoaded {
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        _: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        cluster
            .with_free()
            .iter()
            .copied()
            .filter(|&i| req.may_use(i) && servers[i as usize].fits(req.task, true))
            .map(|i| (Self::load(cluster, i), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, i)| Choice::clean(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

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
}

#[cfg(test)]
mod least_loaded_tests {
    use super::*;
    use crate::kernel::actor_rng;

    #[test]
    fn least_loaded_takes_the_emptiest_server_with_room_for_cores_and_memory() {
        let specs: Vec<ServerSpec> = [(4, 8_000), (8, 1_000), (2, 16_000)]
            .iter()
            .enumerate()
            .map(|(i, &(slots, memory_mb))| ServerSpec {
                core_speed: 1.0,
                idle_w: 100.0,
                peak_w: 200.0,
                id: ActorId(i as u32),
                slots,
                cores: slots,
                class: 0,
                memory_mb,
            })
            .collect();
        let mut view = ClusterView::new(&specs, false);
        view.take(0, 1, 1_000);
        view.take(2, 1, 1_000);
        let task = Task {
            memory_mb: 2_000,
            ..Task::new(1, ActorId(9), 0, 1)
        };
        let req = Request {
            task: &task,
            profile: None,
            allowed: None,
            exclude: None,
        };
        let mut rng = actor_rng(1, "scheduler");
        // without reports: server 1 is empty but has too little memory;
        // server 0 is 1/4 loaded, server 2 half.
        assert_eq!(
            LeastLoaded.place(&req, &view, &mut rng),
            Some(Choice::clean(0))
        );
        let req = Request {
            exclude: Some(0),
            ..req
        };
        assert_eq!(
            LeastLoaded.place(&req, &view, &mut rng),
            Some(Choice::clean(2))
        );
    }
}
