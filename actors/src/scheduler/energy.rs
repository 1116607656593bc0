//! The thesis's energy-aware placements over the three-tier network
//! (`scheduler.placement = gems | gems-nosleep | gems-nonetwork | beps |
//! brfs-dot | brfs-norm | rrs`), chapters 3 and 4.
//!
//! Every time slot (`scheduler.slot_interval`) the queued tasks are taken in
//! the policy's order. A task fits a server only while the CPU and memory
//! its co-runners ask for, plus its own, stay within the server's capacity,
//! and only along a path whose links have its bandwidth free (§4.2.2); a
//! task that fits nowhere waits for the next slot. A task's bandwidth is a
//! flow size divided by its shortest execution time on the chosen server
//! (its work spread over every core of that server).
//!
//! - **GEMS** (§4.3). Phase I: tasks by memory ascending; each takes the path
//!   from a core switch to a server of least estimated energy, eq. 4.4: every
//!   node on it costs `(P_peak·T_wu + P_idle·T_x) / (N + 1)`, where `T_wu` is
//!   the node's wake-up if it sleeps (else 0), `T_x` the task's execution
//!   time on that server with its co-runners (processor sharing, eq. 6.2)
//!   and `N` the tasks already using the node. Phase II: each worker takes
//!   the least-energy path to its master's server (switches only).
//!   `gems-nosleep` is the same with servers and switches idling instead of
//!   sleeping (the run's power policy becomes `idle`); `gems-nonetwork`
//!   costs the server alone and takes random feasible paths (§4.4.2).
//! - **BEPS** (§3.3.1): tasks sorted by `scheduler.sort_by`; the path of least
//!   added energy, where a node already on adds nothing and a sleeping or
//!   idle node adds its wake-up energy and its idle power over `T_x`: tasks
//!   pack onto what is on.
//! - **BRFS** (§3.3.2): the server of best fit first (`dot`: smallest dot
//!   product of the requirement with the residual capacity, as Figure 3.4's
//!   `min b`; `norm`: smallest squared distance between them), then the
//!   BEPS path to it.
//! - **RRS** (§3.3.3): the next server in round-robin order that fits, then
//!   the BEPS path to it.
//!
//! Chapter 3 derives bandwidth from memory (§3.4); here every policy uses the
//! tasks' own flows, so that they are compared on the same workload.
//!
//! The stage is the network's controller: it keeps the one ledger of
//! reservations and tells the switches on every reserved path, which keeps
//! them on; a reservation is released when its task finishes (or is
//! killed, or evicted).
//!
//! Under `admission = "fifo"` without a slot stage the stage keeps its own
//! queue, as above. Behind ARQ or a slot stage (docs/scheduler.md, "How the
//! stages combine") that stage holds the queue and its order and decides
//! whether a task starts and whom it evicts; this one answers where:
//! [`EnergyStage::choose`] runs phase I for one task among the servers the
//! other stage allows, [`EnergyStage::start`] books it with phase II at
//! once, and [`EnergyStage::evictable`] says whether evicting a task would
//! make room for another.

use std::cell::RefCell;
use std::collections::BTreeMap;

use std::collections::BTreeSet;

use dcemu_topology::{Bandwidth, Network, Route, SimTime, Tier};
use rand::RngCore;

use crate::config::{CpuSharing, PlacementKind, SchedulerConfig, SortKey};
use crate::kernel::{ActorId, Metrics};
use crate::sampling::index;
use crate::slot_share::{slots_for, threads_in};
use crate::task::{Task, TaskId};

use super::unplaceable::{Demand, Free, Unplaceable};

/// One server as the energy stage sees it.
#[derive(Clone, Debug)]
pub struct EnergyServer {
    pub id: ActorId,
    /// Tasks it can hold at most (its slots; a task takes one here).
    pub slots: u32,
    pub cores: u32,
    pub core_speed: f64,
    pub memory_mb: u64,
    pub idle_w: f64,
    pub peak_w: f64,
}

/// A placement decided in one time slot: the task, its server, and the
/// flows to reserve (its own, and those of workers whose master it is or
/// whose master only now got a server).
#[derive(Debug)]
pub struct Placed {
    pub task: Task,
    pub server: ActorId,
    pub flows: Vec<Flow>,
}

/// A reservation of `bandwidth` along `route` for `task`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    pub task: TaskId,
    pub route: Route,
    pub bandwidth: Bandwidth,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Costing {
    /// eq. 4.4: wake-up and idle energy shared over the node's tasks.
    Shared,
    /// GEMS on servers only; paths at random.
    ServerOnly,
    /// Chapter 3: the energy a node adds, nothing if it is already on.
    Marginal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    Path,
    FitDot,
    FitNorm,
    RoundRobin,
}

#[derive(Clone, Debug)]
struct ServerState {
    spec: EnergyServer,
    /// Normalised CPU capacity (1.0: the most powerful server).
    capacity: f64,
    /// Its access switch (the first of its pod's under a full mesh).
    access: u32,
    /// The link from `access` down to it (its capacity bounds its flows:
    /// every link down to it has the same).
    down: usize,
    /// How it reaches the access layer: what the path search walks.
    downlinks: Downlinks,
    /// Servers of one kind under switches of one pod are interchangeable
    /// while they and their access switch carry nothing.
    group: (usize, u32),
    /// Flows booked on its own links (to or from it).
    link_flows: u32,
    cpu_used: f64,
    memory_used: u64,
    tasks: u32,
    /// Slots its tasks hold, as the server counts them
    /// ([`crate::slot_share::slots_for`]), and their threads.
    slots_used: u32,
    threads_used: u32,
    /// Cores its primary tenant leaves to tasks, by its latest report
    /// (harvesting §5.3; `ClusterView`'s primary room); `u32::MAX` without
    /// a primary tenant.
    room: u32,
    /// The trace job of each of its tasks with the different-machine
    /// restriction ([`Task::apart`]): no other such task of it may join.
    apart: Vec<u64>,
}

/// The link topology below the access layer, as one path search sees it
/// (thesis §4.2.3): which access switches lead down to a server.
#[derive(Clone, Debug)]
enum Downlinks {
    /// One access switch (`ServerState::access`, a rack), with the
    /// aggregation switches above it with the link down from each, and the
    /// core switches above each with their links.
    Rack { uppers: Vec<Upper> },
    /// Every access switch of a pod (`topology.access_server =
    /// "full-mesh"`), by rule: see [`MeshAccess`].
    Mesh { pod: u32 },
}

impl ServerState {
    /// Pod whose every access switch it is linked to.
    fn mesh_pod(&self) -> Option<u32> {
        match self.downlinks {
            Downlinks::Mesh { pod } => Some(pod),
            Downlinks::Rack { .. } => None,
        }
    }
}

/// An access switch whose servers all link to its whole pod, with the
/// aggregation switches above it.
#[derive(Clone, Debug)]
struct MeshAccess {
    id: u32,
    pod: u32,
    uppers: Vec<Upper>,
    /// Access switches of one pod under the same aggregation switches are
    /// interchangeable while they carry no flow (thesis §4.2.3: all of
    /// them reach every server of the pod, over links of one capacity).
    group: usize,
}

#[derive(Clone, Debug)]
struct Upper {
    agg: u32,
    link: usize,
    cores: Vec<(u32, usize)>,
}

/// Free bandwidth on every directed link, by link id, and capacity. A
/// listed link's id is its sender's first id plus its index among the
/// sender's listed ports (sorted by peer), so a lookup is a binary search
/// among one node's ports. The links of a full-mesh pod (thesis §4.2.3:
/// every server to every access switch) follow, `sender × nodes +
/// receiver`, and only those carrying a flow are stored.
#[derive(Clone, Debug)]
struct Links {
    net: Network,
    first: Vec<usize>,
    free: Vec<u64>,
    capacity: Vec<u64>,
    nodes: usize,
    /// Free bandwidth on the full-mesh links that carry a flow.
    mesh_free: BTreeMap<usize, u64>,
    /// Capacity of every full-mesh link.
    mesh_capacity: u64,
    /// Bumped by every booking: what a cache of free bandwidth is valid for.
    version: u64,
}

impl Links {
    fn new(net: &Network) -> Self {
        let nodes = net.hosts() + net.switches().len() as u32;
        let (mut first, mut free, mut capacity) = (Vec::new(), Vec::new(), Vec::new());
        let mut mesh_capacity = 0;
        for node in 0..nodes {
            first.push(free.len());
            let mesh = net.mesh_ports(node);
            for (i, port) in net.ports(node).enumerate() {
                if i < mesh {
                    mesh_capacity = port.bandwidth.bps();
                    continue;
                }
                free.push(port.bandwidth.bps());
                capacity.push(port.bandwidth.bps());
            }
        }
        Links {
            net: net.clone(),
            first,
            free,
            capacity,
            nodes: nodes as usize,
            mesh_free: BTreeMap::new(),
            mesh_capacity,
            version: 0,
        }
    }

    fn of(&self, from: u32, to: u32) -> Option<usize> {
        let base = *self.first.get(from as usize)?;
        let (i, _) = self.net.port_to(from, to)?;
        match i.checked_sub(self.net.mesh_ports(from)) {
            Some(listed) => Some(base + listed),
            None => Some(self.mesh_id(from, to)),
        }
    }

    /// The id of the full-mesh link from `from` to `to`, which must exist
    /// (both of one full-mesh pod, one a host and the other an access
    /// switch): [`Links::of`] without the search.
    fn mesh_id(&self, from: u32, to: u32) -> usize {
        self.free.len() + from as usize * self.nodes + to as usize
    }

    /// Whether `link` is a full-mesh link.
    fn is_mesh(&self, link: usize) -> bool {
        link >= self.free.len() && link - self.free.len() < self.nodes * self.nodes
    }

    fn free(&self, link: usize) -> Option<u64> {
        if self.is_mesh(link) {
            return Some(
                self.mesh_free
                    .get(&link)
                    .copied()
                    .unwrap_or(self.mesh_capacity),
            );
        }
        self.free.get(link).copied()
    }

    fn capacity(&self, link: usize) -> Option<u64> {
        if self.is_mesh(link) {
            return Some(self.mesh_capacity);
        }
        self.capacity.get(link).copied()
    }

    fn fits(&self, link: usize, bw: u64) -> bool {
        self.free(link).is_some_and(|f| f >= bw)
    }

    /// Takes `bw` off a link's free bandwidth (`add`: gives it back).
    fn book(&mut self, link: usize, bw: u64, add: bool) {
        self.version += 1;
        if self.is_mesh(link) {
            let free = self.free(link).unwrap_or(self.mesh_capacity);
            let free = if add { free + bw } else { free - bw };
            if free == self.mesh_capacity {
                self.mesh_free.remove(&link);
            } else {
                self.mesh_free.insert(link, free);
            }
        } else if let Some(f) = self.free.get_mut(link) {
            *f = if add { *f + bw } else { *f - bw };
        }
    }

    fn route(&self, route: &Route) -> Option<Vec<usize>> {
        route
            .nodes()
            .windows(2)
            .map(|w| self.of(w[0], w[1]))
            .collect()
    }
}

#[derive(Clone, Debug)]
struct SwitchState {
    on_w: f64,
    idle_w: f64,
    flows: u32,
}

#[derive(Clone, Debug)]
struct Running {
    server: u32,
    cpu: f64,
    memory_mb: u64,
    /// Slots it holds and its threads.
    slots: u32,
    threads: u32,
    job: Option<TaskId>,
    master: bool,
    /// Its worst-case execution time estimate and bandwidths, kept for
    /// phase II when its master is placed later.
    t_x: f64,
    work_ns: u64,
    internal_bytes: u64,
    flows: Vec<Flow>,
    apart: Option<u64>,
}

/// The energy stage: queue, capacity and bandwidth ledgers, node states.
pub struct EnergyStage {
    costing: Costing,
    choice: Choice,
    sort_by: Option<SortKey>,
    sleeps: bool,
    server_wake_s: f64,
    switch_wake_s: f64,
    servers: Vec<ServerState>,
    index_of: BTreeMap<ActorId, u32>,
    /// Switch states by node id minus `switch_base`.
    switches: Vec<SwitchState>,
    switch_base: u32,
    links: Links,
    /// Access switches of the pods whose servers link to all of them, in
    /// id order.
    mesh: Vec<MeshAccess>,
    /// Index into `mesh` by switch id minus `switch_base`.
    mesh_index: Vec<Option<u32>>,
    /// Of `mesh`, those carrying a flow; and of the others, by group, the
    /// indices: each group's first stands for all of it.
    mesh_warm: BTreeSet<u32>,
    mesh_cold: Vec<BTreeSet<u32>>,
    /// Servers worth evaluating: every server in use or under a switch in
    /// use, and of the others the lowest-numbered of each group.
    warm: BTreeSet<u32>,
    cold: BTreeMap<(usize, u32), BTreeSet<u32>>,
    is_cold: Vec<bool>,
    under_access: BTreeMap<u32, Vec<u32>>,
    queue: Vec<Task>,
    running: BTreeMap<TaskId, Running>,
    /// Server of each job's master while it runs, and workers placed
    /// before it that still wait for their internal flow.
    masters: BTreeMap<TaskId, u32>,
    waiting_for_master: BTreeMap<TaskId, Vec<TaskId>>,
    next_rr: usize,
    placed: u64,
    woken: u64,
    internal_flows: u64,
    internal_refused: u64,
    /// Placements put off to the next slot: nothing fit.
    deferred: u64,
    booked: u64,
    /// How servers share their CPU (`scheduler.cpu_sharing`): what a
    /// task's execution time on a server is estimated with.
    sharing: CpuSharing,
    /// Cores × core speed of the strongest server: normalised capacity 1.
    strongest: f64,
    /// [`EnergyStage::widest_above`] per pod, with the links' version it
    /// was computed at.
    widest_cache: RefCell<BTreeMap<u32, (u64, u64)>>,
}

impl EnergyStage {
    /// `sleeps`: whether idle servers and switches sleep (the run's power
    /// policy); `wake`: server and switch wake-up times.
    pub fn new(
        cfg: &SchedulerConfig,
        net: &Network,
        servers: Vec<EnergyServer>,
        sleeps: bool,
        wake: (SimTime, SimTime),
    ) -> Self {
        let strongest = servers
            .iter()
            .map(|s| s.core_speed * f64::from(s.cores))
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        let switch_base = net.switches().iter().map(|s| s.id).min().unwrap_or(0);
        let span = net
            .switches()
            .iter()
            .map(|s| s.id - switch_base + 1)
            .max()
            .unwrap_or(0);
        let mut switches = vec![
            SwitchState {
                on_w: 0.0,
                idle_w: 0.0,
                flows: 0,
            };
            span as usize
        ];
        for sw in net.switches() {
            switches[(sw.id - switch_base) as usize] = SwitchState {
                on_w: sw.power.on_w,
                idle_w: sw.power.idle_w,
                flows: 0,
            };
        }
        let links = Links::new(net);
        let info = |node: u32| {
            node.checked_sub(switch_base)
                .and_then(|k| net.switches().get(k as usize))
                .filter(|s| s.id == node)
        };
        let tier_of = |node: u32| info(node).map(|s| s.tier);
        let peers_in = |node: u32, tier: Tier| -> Vec<u32> {
            net.ports(node)
                .map(|p| p.peer)
                .filter(|&p| tier_of(p) == Some(tier))
                .collect()
        };
        let pod_of = |node: u32| info(node).and_then(|s| s.pod).unwrap_or(node);
        // the aggregation switches above an access switch with the link
        // down from each, and the core switches above each with theirs
        let uppers_of = |access: u32| -> Vec<Upper> {
            peers_in(access, Tier::Aggregation)
                .into_iter()
                .map(|agg| Upper {
                    agg,
                    link: links.of(agg, access).unwrap_or(usize::MAX),
                    cores: peers_in(agg, Tier::Core)
                        .into_iter()
                        .map(|core| (core, links.of(core, agg).unwrap_or(usize::MAX)))
                        .collect(),
                })
                .collect()
        };
        let mut kinds: Vec<(u32, u64, u64, u64, u64, u64)> = Vec::new();
        let states: Vec<ServerState> = servers
            .into_iter()
            .map(|spec| {
                let access = net.ports(spec.id.0).next().map_or(spec.id.0, |p| p.peer);
                let link = |a: u32, b: u32| links.of(a, b).unwrap_or(usize::MAX);
                let kind = (
                    spec.cores,
                    spec.core_speed.to_bits(),
                    spec.memory_mb,
                    spec.idle_w.to_bits(),
                    spec.peak_w.to_bits(),
                    0,
                );
                let k = kinds.iter().position(|x| *x == kind).unwrap_or_else(|| {
                    kinds.push(kind);
                    kinds.len() - 1
                });
                // linked to more than one access switch: to every one of
                // its pod (a pod of one access switch is a rack)
                let downlinks = if net.port_count(spec.id.0) > 1 {
                    Downlinks::Mesh {
                        pod: pod_of(access),
                    }
                } else {
                    Downlinks::Rack {
                        uppers: uppers_of(access),
                    }
                };
                ServerState {
                    capacity: spec.core_speed * f64::from(spec.cores) / strongest,
                    access,
                    down: link(access, spec.id.0),
                    downlinks,
                    group: (k, pod_of(access)),
                    link_flows: 0,
                    cpu_used: 0.0,
                    memory_used: 0,
                    tasks: 0,
                    apart: Vec::new(),
                    slots_used: 0,
                    threads_used: 0,
                    room: u32::MAX,
                    spec,
                }
            })
            .collect();
        let mut cold: BTreeMap<(usize, u32), BTreeSet<u32>> = BTreeMap::new();
        let mut under_access: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut mesh_pods: BTreeSet<u32> = BTreeSet::new();
        for (i, st) in states.iter().enumerate() {
            cold.entry(st.group).or_default().insert(i as u32);
            match st.mesh_pod() {
                // every server of the pod is under every access switch:
                // their state moves all servers of the pod alike
                Some(pod) => {
                    mesh_pods.insert(pod);
                }
                None => under_access.entry(st.access).or_default().push(i as u32),
            }
        }
        let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
        let mesh: Vec<MeshAccess> = net
            .switches()
            .iter()
            .filter(|sw| sw.tier == Tier::Access)
            .filter(|sw| sw.pod.is_some_and(|p| mesh_pods.contains(&p)))
            .map(|sw| {
                let pod = sw.pod.unwrap_or(0);
                let uppers = uppers_of(sw.id);
                let key = (pod, uppers.iter().map(|up| up.agg).collect::<Vec<u32>>());
                let group = groups.iter().position(|g| *g == key).unwrap_or_else(|| {
                    groups.push(key);
                    groups.len() - 1
                });
                MeshAccess {
                    id: sw.id,
                    pod,
                    uppers,
                    group,
                }
            })
            .collect();
        let mut mesh_index = vec![None; span as usize];
        let mut mesh_cold = vec![BTreeSet::new(); groups.len()];
        for (k, acc) in mesh.iter().enumerate() {
            if let Some(slot) = mesh_index.get_mut((acc.id - switch_base) as usize) {
                *slot = Some(k as u32);
            }
            mesh_cold[acc.group].insert(k as u32);
        }
        let is_cold = vec![true; states.len()];
        let (costing, choice) = match cfg.placement {
            PlacementKind::GemsNonetwork => (Costing::ServerOnly, Choice::Path),
            PlacementKind::Beps => (Costing::Marginal, Choice::Path),
            PlacementKind::BrfsDot => (Costing::Marginal, Choice::FitDot),
            PlacementKind::BrfsNorm => (Costing::Marginal, Choice::FitNorm),
            PlacementKind::Rrs => (Costing::Marginal, Choice::RoundRobin),
            _ => (Costing::Shared, Choice::Path),
        };
        let sort_by = match cfg.placement {
            PlacementKind::Gems | PlacementKind::GemsNosleep | PlacementKind::GemsNonetwork => {
                Some(SortKey::Memory)
            }
            PlacementKind::Beps => Some(cfg.sort_by),
            _ => None,
        };
        EnergyStage {
            sharing: cfg.cpu_sharing,
            strongest,
            widest_cache: RefCell::default(),
            costing,
            choice,
            sort_by,
            sleeps,
            server_wake_s: wake.0 as f64 / 1e9,
            switch_wake_s: wake.1 as f64 / 1e9,
            index_of: states
                .iter()
                .enumerate()
                .map(|(i, s)| (s.spec.id, i as u32))
                .collect(),
            servers: states,
            switches,
            switch_base,
            links,
            mesh,
            mesh_index,
            mesh_warm: BTreeSet::new(),
            mesh_cold,
            warm: BTreeSet::new(),
            cold,
            is_cold,
            under_access,
            queue: Vec::new(),
            running: BTreeMap::new(),
            masters: BTreeMap::new(),
            waiting_for_master: BTreeMap::new(),
            next_rr: 0,
            placed: 0,
            woken: 0,
            internal_flows: 0,
            internal_refused: 0,
            deferred: 0,
            booked: 0,
        }
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn enqueue(&mut self, task: Task) {
        self.queue.push(task);
    }

    /// Server `i`'s primary tenant now leaves `room` slots to tasks (its
    /// latest report): placements do not fill it past that, as its node
    /// manager would kill what does not fit.
    pub fn set_room(&mut self, i: u32, room: u32) {
        if let Some(s) = self.servers.get_mut(i as usize) {
            s.room = room;
        }
    }

    /// `task` left `server`: its CPU, memory and flows are free again (the
    /// flows are returned so the switches can be told).
    pub fn release(&mut self, task: TaskId, server: ActorId) -> Vec<Flow> {
        let Some(r) = self.running.get(&task) else {
            return Vec::new();
        };
        if self.index_of.get(&server) != Some(&r.server) {
            return Vec::new();
        }
        let Some(r) = self.running.remove(&task) else {
            return Vec::new();
        };
        let s = &mut self.servers[r.server as usize];
        s.cpu_used = (s.cpu_used - r.cpu).max(0.0);
        s.memory_used = s.memory_used.saturating_sub(r.memory_mb);
        s.tasks = s.tasks.saturating_sub(1);
        if let Some(at) = r.apart.and_then(|j| s.apart.iter().position(|&a| a == j)) {
            s.apart.swap_remove(at);
        }
        s.slots_used = s.slots_used.saturating_sub(r.slots);
        s.threads_used = s.threads_used.saturating_sub(r.threads);
        if s.tasks == 0 {
            s.cpu_used = 0.0;
            s.memory_used = 0;
            s.slots_used = 0;
            s.threads_used = 0;
        }
        self.refresh(r.server);
        if let (Some(job), true) = (r.job, r.master) {
            self.masters.remove(&job);
            self.waiting_for_master.remove(&job);
        }
        for f in &r.flows {
            self.unbook(f);
        }
        r.flows
    }

    /// As the placement behind an admission or slot stage (docs/scheduler.md,
    /// "How the stages combine"): phase I's choice (§4.3.1) for `task`
    /// among the servers `allow` admits, the server and its path; that
    /// stage decides whether and in which order tasks start, this one
    /// where. Books nothing: [`EnergyStage::start`] does, once the task
    /// starts. `None`: no admitted server has the task's CPU, memory and a
    /// path with its bandwidth.
    pub fn choose(
        &mut self,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        rng: &mut impl RngCore,
    ) -> Option<(u32, Route)> {
        let chosen = self.choose_among(task, allow, rng);
        if chosen.is_none() {
            self.deferred += 1;
        }
        chosen
    }

    /// `task` starts on server `i` with its external flow on `route` (from
    /// [`EnergyStage::choose`], or `None`: the best path to `i` now, as for
    /// an evictor taking its victim's slot): books it, then phase II
    /// (§4.3.2) for it at once, its worker's flow to its master (or, for a
    /// master, those of its workers that waited for it). The per-slot batch
    /// of Figure 4.1 becomes the admission or slot stage's pass, in that
    /// stage's order. Returns the flows to tell the switches of; `None` if
    /// the external flow fits on no path (the caller offered a server that
    /// did not have one): then nothing is booked.
    pub fn start(
        &mut self,
        net: &Network,
        task: &Task,
        i: u32,
        route: Option<Route>,
        rng: &mut impl RngCore,
    ) -> Option<Vec<Flow>> {
        let route = match route {
            Some(route) => route,
            None => self.choose_among(task, &|j| j == i, rng)?.1,
        };
        let (_, flow) = self.commit(task, i, route)?;
        let mut flows: Vec<Flow> = flow.into_iter().collect();
        if let Some(job) = task.job {
            if job.master {
                let waiting = self.waiting_for_master.remove(&job.id).unwrap_or_default();
                for worker in waiting {
                    flows.extend(self.connect(net, worker, rng));
                }
            } else {
                flows.extend(self.connect(net, task.id, rng));
            }
        }
        Some(flows)
    }

    /// Whether `task` would fit on server `i` (CPU, memory, a slot, and a
    /// path with its bandwidth) once `victim` left it: a slot stage's
    /// eviction must make that room (thesis §6.2.3.3's victim, where
    /// §4.2.2's constraints hold). Tries it on the ledgers and puts
    /// everything back exactly.
    pub fn evictable(&mut self, task: &Task, i: u32, victim: TaskId) -> bool {
        let cpu = cpu_of(task);
        let Some(r) = self.running.get(&victim).filter(|r| r.server == i) else {
            let s = &self.servers[i as usize];
            return fits(task, cpu, s) && self.has_path(s, self.task_bps(task, s));
        };
        let (flows, victim_cpu, victim_mb, victim_slots, victim_threads) =
            (r.flows.clone(), r.cpu, r.memory_mb, r.slots, r.threads);
        let s = &self.servers[i as usize];
        let saved = (
            s.cpu_used,
            s.memory_used,
            s.tasks,
            s.slots_used,
            s.threads_used,
        );
        for f in &flows {
            self.unbook(f);
        }
        let s = &mut self.servers[i as usize];
        s.cpu_used = (s.cpu_used - victim_cpu).max(0.0);
        s.memory_used = s.memory_used.saturating_sub(victim_mb);
        s.tasks = s.tasks.saturating_sub(1);
        s.slots_used = s.slots_used.saturating_sub(victim_slots);
        s.threads_used = s.threads_used.saturating_sub(victim_threads);
        let s = &self.servers[i as usize];
        let ok = fits(task, cpu, s) && self.has_path(s, self.task_bps(task, s));
        let s = &mut self.servers[i as usize];
        (
            s.cpu_used,
            s.memory_used,
            s.tasks,
            s.slots_used,
            s.threads_used,
        ) = saved;
        for f in &flows {
            self.rebook(f);
        }
        ok
    }

    /// One time slot: phase I places what fits, phase II connects workers
    /// to their masters (thesis Figure 4.1).
    pub fn schedule(&mut self, net: &Network, rng: &mut impl RngCore) -> Vec<Placed> {
        let mut queue = std::mem::take(&mut self.queue);
        if let Some(key) = self.sort_by {
            queue.sort_by(|a, b| sort_value(a, key).total_cmp(&sort_value(b, key)));
        }
        let mut out: Vec<Placed> = Vec::new();
        let mut unplaceable = Unplaceable::with_most_free(self.most_free());
        for task in queue {
            let demand = Demand::of(&task, cpu_of(&task));
            if unplaceable.rules_out(&demand) {
                self.deferred += 1;
                self.queue.push(task);
                continue;
            }
            match self.place(&task, &mut unplaceable, demand, rng) {
                Some((server, flow)) => {
                    let mut flows = Vec::new();
                    flows.extend(flow);
                    out.push(Placed {
                        server: self.servers[server as usize].spec.id,
                        task,
                        flows,
                    });
                }
                None => self.queue.push(task),
            }
        }
        for p in &mut out {
            let Some(job) = p.task.job else { continue };
            if job.master {
                let waiting = self.waiting_for_master.remove(&job.id).unwrap_or_default();
                for worker in waiting {
                    if let Some(f) = self.connect(net, worker, rng) {
                        p.flows.push(f);
                    }
                }
            } else if let Some(f) = self.connect(net, p.task.id, rng) {
                p.flows.push(f);
            }
        }
        out
    }

    /// What the roomiest server has free, in each respect apart: CPU,
    /// memory and threads (within its free slots and its primary tenant's room), as [`fits`]
    /// reads them.
    fn most_free(&self) -> Free {
        let mut most = Free {
            cpu: 0.0,
            memory_mb: 0,
            threads: 0,
        };
        for s in &self.servers {
            most.cpu = most.cpu.max(s.capacity - s.cpu_used);
            most.memory_mb = most
                .memory_mb
                .max(s.spec.memory_mb.saturating_sub(s.memory_used));
            let free = s.spec.slots.saturating_sub(s.slots_used);
            let threads = threads_in(free, s.spec.cores, s.spec.slots)
                .min(s.room.saturating_sub(s.threads_used));
            most.threads = most.threads.max(threads);
        }
        most
    }

    /// Phase I for one task: the server (and external flow) of least cost;
    /// where there is none, `unplaceable` learns its demand.
    fn place(
        &mut self,
        task: &Task,
        unplaceable: &mut Unplaceable,
        demand: Demand,
        rng: &mut impl RngCore,
    ) -> Option<(u32, Option<Flow>)> {
        let Some((i, route)) = self.choose_among(task, &|_| true, rng) else {
            self.deferred += 1;
            unplaceable.remember(demand);
            return None;
        };
        self.commit(task, i, route)
    }

    /// Phase I's choice for one task among the servers `allow` admits (an
    /// admission or slot stage's candidates; all of them when this stage
    /// queues by itself): the server and the path from a core switch down
    /// to it, by the policy's criterion. Books nothing.
    fn choose_among(
        &mut self,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        rng: &mut impl RngCore,
    ) -> Option<(u32, Route)> {
        let cpu = cpu_of(task);
        let mut cores_cache = CoreCache::default();
        match self.choice {
            Choice::Path if self.costing == Costing::ServerOnly => {
                // GEMS(noNetwork) costs the server alone (§4.4.2): a path
                // only has to exist, and the one taken is drawn at random
                let mut best: Option<(f64, u32)> = None;
                for i in self.candidates_among(allow) {
                    let s = &self.servers[i as usize];
                    if !fits(task, cpu, s) {
                        continue;
                    }
                    let cost = self.server_cost(s, self.exec_time(task, s));
                    // the path check, the costlier, only where it could win
                    if best
                        .is_some_and(|b| cost.partial_cmp(&b.0) != Some(std::cmp::Ordering::Less))
                        || !self.has_path(s, self.task_bps(task, s))
                    {
                        continue;
                    }
                    best = Some((cost, i));
                }
                best.and_then(|(cost, i)| {
                    let i = self.any_tied(task, cpu, cost, allow, rng).unwrap_or(i);
                    let s = &self.servers[i as usize];
                    let bw = self.task_bps(task, s);
                    // a feasible path exists: the draw finds one
                    self.random_path(s, bw, rng).map(|route| (i, route))
                })
            }
            Choice::Path => {
                let mut best: Option<(f64, u32, Route)> = None;
                for i in self.candidates_among(allow) {
                    let s = &self.servers[i as usize];
                    if !fits(task, cpu, s) {
                        continue;
                    }
                    let t_x = self.exec_time(task, s);
                    let server = self.server_cost(s, t_x);
                    // a path costs ≥ 0 (watts are validated non-negative):
                    // where the server alone does not win, no path can
                    if best
                        .as_ref()
                        .is_some_and(|b| server.partial_cmp(&b.0) != Some(std::cmp::Ordering::Less))
                    {
                        continue;
                    }
                    let bw = self.task_bps(task, s);
                    let Some((path_cost, route)) = self.best_path(s, bw, t_x, &mut cores_cache)
                    else {
                        continue;
                    };
                    let cost = server + path_cost;
                    if best.as_ref().is_none_or(|b| cost < b.0) {
                        best = Some((cost, i, route));
                    }
                }
                best.map(|(_, i, route)| (i, route))
            }
            Choice::FitDot | Choice::FitNorm | Choice::RoundRobin => {
                let n = self.servers.len();
                let order: Vec<u32> = match self.choice {
                    Choice::RoundRobin => (0..n).map(|k| ((self.next_rr + k) % n) as u32).collect(),
                    _ => {
                        let mut scored: Vec<(f64, u32)> = self
                            .servers
                            .iter()
                            .enumerate()
                            .filter(|&(i, s)| allow(i as u32) && fits(task, cpu, s))
                            .map(|(i, s)| (self.fit(task, s), i as u32))
                            .collect();
                        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                        scored.into_iter().map(|(_, i)| i).collect()
                    }
                };
                let mut found = None;
                for i in order {
                    let s = &self.servers[i as usize];
                    if !allow(i) || !fits(task, cpu, s) {
                        continue;
                    }
                    let (t_x, bw) = (self.exec_time(task, s), self.task_bps(task, s));
                    if let Some((_, route)) = self.best_path(s, bw, t_x, &mut cores_cache) {
                        found = Some((i, route));
                        break;
                    }
                }
                if let (Some((i, _)), Choice::RoundRobin) = (&found, self.choice) {
                    self.next_rr = (*i as usize + 1) % n.max(1);
                }
                found
            }
        }
    }

    /// Its execution time on `s` with the co-runners already there, as the
    /// servers share their CPU: eq. 6.2's processor sharing, at most one
    /// core each, or §4.2.5's requirement plus an equal share of the
    /// capacity left free.
    fn exec_time(&self, task: &Task, s: &ServerState) -> f64 {
        let rate = match self.sharing {
            CpuSharing::Cores => {
                let share = (f64::from(s.spec.cores) / f64::from(s.tasks + 1)).min(1.0);
                s.spec.core_speed * share
            }
            CpuSharing::FreeCapacity => {
                let need = cpu_of(task);
                let free = (s.capacity - s.cpu_used - need).max(0.0);
                (need + free / f64::from(s.tasks + 1)) * self.strongest
            }
        };
        task.service_ns as f64 / 1e9 / rate.max(f64::MIN_POSITIVE)
    }

    /// Books `task` onto server `i` with its external flow on `route`: its
    /// CPU, memory and bandwidth. `None` (nothing booked) if the flow does
    /// not fit there.
    fn commit(&mut self, task: &Task, i: u32, route: Route) -> Option<(u32, Option<Flow>)> {
        let cpu = cpu_of(task);
        let s = &self.servers[i as usize];
        let bw = self.task_bps(task, s);
        let t_x = self.exec_time(task, s);
        let flow = (bw > 0).then(|| Flow {
            task: task.id,
            route,
            bandwidth: Bandwidth::from_bps(bw),
        });
        if let Some(f) = &flow
            && self.book(f).is_err()
        {
            self.deferred += 1;
            return None;
        }
        let s = &mut self.servers[i as usize];
        if s.tasks == 0 {
            self.woken += 1;
        }
        s.cpu_used += cpu;
        s.memory_used += task.memory_mb;
        s.tasks += 1;
        s.apart.extend(task.apart);
        let slots = slots_for(task.cores, s.spec.cores, s.spec.slots);
        s.slots_used += slots;
        s.threads_used += task.cores.max(1);
        self.refresh(i);
        self.placed += 1;
        if let Some(job) = task.job
            && job.master
        {
            self.masters.insert(job.id, i);
        }
        self.running.insert(
            task.id,
            Running {
                server: i,
                cpu,
                memory_mb: task.memory_mb,
                slots,
                threads: task.cores.max(1),
                job: task.job.map(|j| j.id),
                master: task.job.is_some_and(|j| j.master),
                t_x,
                work_ns: task.service_ns,
                internal_bytes: task.job.map_or(0, |j| j.internal_bytes),
                flows: flow.iter().cloned().collect(),
                apart: task.apart,
            },
        );
        Some((i, flow))
    }

    /// GEMS(noNetwork) knows nothing of where servers sit in the network,
    /// so among the servers of least cost it takes any, uniformly (a cold
    /// group's representative stands for all of its members).
    fn any_tied(
        &self,
        task: &Task,
        cpu: f64,
        cost: f64,
        allow: &dyn Fn(u32) -> bool,
        rng: &mut impl RngCore,
    ) -> Option<u32> {
        let mut tied: Vec<u32> = Vec::new();
        for i in self.candidates_among(allow) {
            let s = &self.servers[i as usize];
            if !fits(task, cpu, s) || self.server_cost(s, self.exec_time(task, s)) != cost {
                continue;
            }
            if self.is_cold[i as usize] {
                let group = self.cold.get(&s.group).into_iter().flatten();
                tied.extend(group.copied().filter(|&j| allow(j)));
            } else {
                tied.push(i);
            }
        }
        tied.retain(|&i| {
            let s = &self.servers[i as usize];
            self.has_path(s, self.task_bps(task, s))
        });
        let n = tied.len() as u32;
        (n > 0).then(|| tied[index(rng, n) as usize])
    }

    /// Whether some path from a core switch down to `s` has `bw` free on
    /// every link (as [`EnergyStage::best_path`] finds one, without
    /// costing it).
    fn has_path(&self, s: &ServerState, bw: u64) -> bool {
        match &s.downlinks {
            Downlinks::Mesh { .. } => self.mesh_reachable(s, bw),
            Downlinks::Rack { uppers } => {
                self.links.fits(s.down, bw) && self.feasible_above(uppers, bw)
            }
        }
    }

    /// Whether some aggregation switch of `uppers`, and some core switch
    /// above it, have `bw` free on the links down.
    fn feasible_above(&self, uppers: &[Upper], bw: u64) -> bool {
        uppers.iter().any(|up| {
            self.links.fits(up.link, bw) && up.cores.iter().any(|&(_, l)| self.links.fits(l, bw))
        })
    }

    /// Bandwidth of a task's external traffic on `s`: its flow over its
    /// shortest execution there (§4.2.2), or a plain tenant's fixed
    /// `flow_bandwidth`.
    fn task_bps(&self, task: &Task, s: &ServerState) -> u64 {
        match task.job {
            Some(j) => bandwidth_bps(j.external_bytes, task.service_ns, s)
                .min(self.links.capacity(s.down).unwrap_or(u64::MAX)),
            None => task.flow_bps,
        }
    }

    /// Phase II for one running worker: the least-energy path from its
    /// server to its master's (§4.3.2), or later if the master waits.
    fn connect(&mut self, net: &Network, worker: TaskId, rng: &mut impl RngCore) -> Option<Flow> {
        let r = self.running.get(&worker)?;
        let job = r.job?;
        if r.master || r.internal_bytes == 0 {
            return None;
        }
        let Some(&master) = self.masters.get(&job) else {
            self.waiting_for_master.entry(job).or_default().push(worker);
            return None;
        };
        if master == r.server {
            return None;
        }
        let (src, t_x, bytes, work_ns) = (r.server, r.t_x, r.internal_bytes, r.work_ns);
        let s = &self.servers[src as usize];
        let link = self.links.capacity(s.down).unwrap_or(u64::MAX);
        let bw = bandwidth_bps(bytes, work_ns, s).clamp(1, link);
        let from = s.spec.id.0;
        let to = self.servers[master as usize].spec.id.0;
        let direct = self.mesh_internal(s, &self.servers[master as usize], bw, t_x, rng);
        let paths: Vec<Route> = if direct.is_some() {
            Vec::new()
        } else {
            net.shortest_paths(from, to)
                .into_iter()
                .filter(|p| self.has_room(p, bw))
                .collect()
        };
        let route = if let Some(route) = direct {
            route
        } else if self.costing == Costing::ServerOnly {
            let n = paths.len() as u32;
            (n > 0).then(|| paths[index(rng, n) as usize])
        } else {
            paths
                .into_iter()
                .map(|p| (self.switches_cost(&p, t_x), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, p)| p)
        };
        let Some(route) = route else {
            self.internal_refused += 1;
            return None;
        };
        let flow = Flow {
            task: worker,
            route,
            bandwidth: Bandwidth::from_bps(bw),
        };
        if self.book(&flow).is_err() {
            self.internal_refused += 1;
            return None;
        }
        self.internal_flows += 1;
        if let Some(r) = self.running.get_mut(&worker) {
            r.flows.push(flow.clone());
        }
        Some(flow)
    }

    /// Energy a server adds for a task running `t_x` there (eq. 4.3 for
    /// GEMS; the marginal energy for chapter 3's policies).
    fn server_cost(&self, s: &ServerState, t_x: f64) -> f64 {
        let asleep = self.sleeps && s.tasks == 0;
        let wake = if asleep {
            s.spec.peak_w * self.server_wake_s
        } else {
            0.0
        };
        match self.costing {
            Costing::Shared | Costing::ServerOnly => {
                (wake + s.spec.idle_w * t_x) / f64::from(s.tasks + 1)
            }
            Costing::Marginal if s.tasks == 0 => wake + s.spec.idle_w * t_x,
            Costing::Marginal => 0.0,
        }
    }

    fn switch_cost(&self, node: u32, t_x: f64) -> f64 {
        let Some(sw) = self.switch(node) else {
            return 0.0;
        };
        let asleep = self.sleeps && sw.flows == 0;
        let wake = if asleep {
            sw.on_w * self.switch_wake_s
        } else {
            0.0
        };
        match self.costing {
            Costing::Shared | Costing::ServerOnly => {
                (wake + sw.idle_w * t_x) / f64::from(sw.flows + 1)
            }
            Costing::Marginal if sw.flows == 0 => wake + sw.idle_w * t_x,
            Costing::Marginal => 0.0,
        }
    }

    fn switches_cost(&self, route: &Route, t_x: f64) -> f64 {
        route
            .nodes()
            .iter()
            .map(|&n| self.switch_cost(n, t_x))
            .sum()
    }

    /// The least-energy path from a core switch down to server `s` with
    /// `bw` free on every link, and its switches' cost (eq. 4.4): one
    /// search over the server's link topology ([`Downlinks`]). The access
    /// switches above the server are ranked by the cost of the cheapest path
    /// from a core switch down to each, cheapest (then lowest id) first,
    /// and the first whose link down to the server has `bw` free is taken.
    ///
    /// Under a rack that is its one access switch. Under a full mesh
    /// (thesis §4.2.3) it is every access switch of its pod, whose ranking
    /// does not depend on the server: it is made once per task, bandwidth
    /// and `T_x` (once per task and bandwidth when switches wake instantly:
    /// their cost is then `T_x` times a sum of `P_idle / (N + 1)`), over the
    /// access switches carrying flows and one of each group of idle ones
    /// (the others, alike and with a higher id, would rank right after it).
    /// The best core switch above an aggregation switch is cached per task
    /// when switches wake instantly (it then does not depend on the server).
    fn best_path(
        &self,
        s: &ServerState,
        bw: u64,
        t_x: f64,
        cache: &mut CoreCache,
    ) -> Option<(f64, Route)> {
        let me = s.spec.id.0;
        let own;
        let (ranking, per_unit) = match &s.downlinks {
            Downlinks::Rack { uppers } => {
                // one link down: without room on it there is no path
                if !self.links.fits(s.down, bw) {
                    return None;
                }
                let above = [(s.access, uppers.as_slice())];
                own = self.rank(&above, bw, t_x, &mut cache.cores);
                (&own, None)
            }
            Downlinks::Mesh { pod } => {
                let instant = self.switch_wake_s == 0.0;
                let unit = if instant { 1.0 } else { t_x };
                let key = (*pod, bw, unit.to_bits());
                if !cache.ranked.contains_key(&key) {
                    let above: Vec<(u32, &[Upper])> = self
                        .mesh_candidates(*pod)
                        .map(|acc| (acc.id, acc.uppers.as_slice()))
                        .collect();
                    let ranking = self.rank(&above, bw, unit, &mut cache.cores);
                    cache.ranked.insert(key, ranking);
                }
                (cache.ranked.get(&key)?, instant.then_some(t_x))
            }
        };
        let reaches = |access: u32| {
            self.down_link(s, access)
                .is_some_and(|l| self.links.fits(l, bw))
        };
        let (cost, access, agg, core) = ranking.first_reaching(reaches)?;
        let cost = per_unit.map_or(cost, |t_x| cost * t_x);
        Route::new(&[core, agg, access, me]).map(|r| (cost, r))
    }

    /// The link from access switch `access` down to server `s`: its one
    /// link in a rack; under a full mesh (thesis §4.2.3) every access switch
    /// of its pod has one, by rule (`access` must be of its pod).
    fn down_link(&self, s: &ServerState, access: u32) -> Option<usize> {
        match s.downlinks {
            Downlinks::Rack { .. } => (access == s.access).then_some(s.down),
            Downlinks::Mesh { .. } => Some(self.links.mesh_id(access, s.spec.id.0)),
        }
    }

    /// Each of `accesses` (an access switch with the aggregation switches
    /// above it) with the cheapest path from a core switch down to it that
    /// has `bw` free: `(cost, access, aggregation, core)`. The path above
    /// an aggregation switch does not depend on the access switch below it:
    /// each aggregation switch is costed with its best core switch once.
    fn rank(
        &self,
        accesses: &[(u32, &[Upper])],
        bw: u64,
        t_x: f64,
        cores: &mut BTreeMap<(u32, u64), Option<u32>>,
    ) -> Ranking {
        // one access switch (a rack) shares nothing: no memo, no list
        let one = accesses.len() == 1;
        let mut above_agg: BTreeMap<u32, Option<(f64, u32)>> = BTreeMap::new();
        let mut ranked = Vec::new();
        for &(access, uppers) in accesses {
            let mut best: Option<(f64, u32, u32)> = None;
            for up in uppers {
                if !self.links.fits(up.link, bw) {
                    continue;
                }
                let above = if one {
                    self.above(up, bw, t_x, cores)
                } else {
                    *above_agg
                        .entry(up.agg)
                        .or_insert_with(|| self.above(up, bw, t_x, cores))
                };
                let Some((cost, core)) = above else { continue };
                if best.is_none_or(|b| cost < b.0) {
                    best = Some((cost, up.agg, core));
                }
            }
            if let Some((cost, agg, core)) = best {
                let r = (cost + self.switch_cost(access, t_x), access, agg, core);
                if one {
                    return Ranking {
                        first: Some(r),
                        all: std::cell::OnceCell::new(),
                        unsorted: Vec::new(),
                    };
                }
                ranked.push(r);
            }
        }
        Ranking::new(ranked)
    }

    /// The cost of an aggregation switch with the best core switch above
    /// it for `bw`, and that core switch. With instant wake-ups the best
    /// core switch does not depend on `T_x`: it is kept per task.
    fn above(
        &self,
        up: &Upper,
        bw: u64,
        t_x: f64,
        cores: &mut BTreeMap<(u32, u64), Option<u32>>,
    ) -> Option<(f64, u32)> {
        let core = if self.switch_wake_s == 0.0 {
            *cores
                .entry((up.agg, bw))
                .or_insert_with(|| self.best_core(up, bw, t_x))
        } else {
            self.best_core(up, bw, t_x)
        };
        core.map(|core| {
            (
                self.switch_cost(up.agg, t_x) + self.switch_cost(core, t_x),
                core,
            )
        })
    }

    /// The access switches of full-mesh pod `pod` worth evaluating, in id
    /// order: those carrying flows, and of each group of the others its
    /// first, which stands for all (they have its cost, its paths above and
    /// its free links, and come after it in id order).
    fn mesh_candidates(&self, pod: u32) -> impl Iterator<Item = &MeshAccess> + '_ {
        let mut firsts: Vec<u32> = self
            .mesh_cold
            .iter()
            .filter_map(|g| g.first().copied())
            .collect();
        firsts.sort_unstable();
        // both sorted, and disjoint: merge them
        let mut firsts = firsts.into_iter().peekable();
        let mut warm = self.mesh_warm.iter().copied().peekable();
        std::iter::from_fn(move || match (warm.peek(), firsts.peek()) {
            (Some(w), Some(f)) if w < f => warm.next(),
            (_, Some(_)) => firsts.next(),
            (Some(_), None) => warm.next(),
            (None, None) => None,
        })
        .filter_map(|k| self.mesh.get(k as usize))
        .filter(move |acc| acc.pod == pod)
    }

    /// Whether a server linked to a whole pod has a feasible path from a
    /// core switch down to it.
    fn mesh_reachable(&self, s: &ServerState, bw: u64) -> bool {
        let me = s.spec.id.0;
        let Some(pod) = s.mesh_pod() else {
            return false;
        };
        if self.widest_above(pod).is_some_and(|widest| bw > widest) {
            return false;
        }
        let found = self.mesh_candidates(pod).any(|acc| {
            self.links.fits(self.links.mesh_id(acc.id, me), bw)
                && self.feasible_above(&acc.uppers, bw)
        });
        if !found && self.widest_above(pod).is_none() {
            self.learn_widest_above(pod);
        }
        found
    }

    /// The most bandwidth any path from a core switch down to an access
    /// switch of `pod` has free: no flow wider than it reaches a server of
    /// the pod, whatever its own links. Near saturation the core and
    /// aggregation links fill first, and this one bound answers what a
    /// walk over every access switch's paths would (512 × 16 × 8 links on
    /// §4.2.3's network) for every server the search tries. Computed after
    /// such a walk fails and kept until a booking changes a link, so a
    /// search that succeeds never pays for it.
    fn widest_above(&self, pod: u32) -> Option<u64> {
        self.widest_cache
            .borrow()
            .get(&pod)
            .filter(|&&(v, _)| v == self.links.version)
            .map(|&(_, widest)| widest)
    }

    fn learn_widest_above(&self, pod: u32) {
        let mut above_agg: BTreeMap<u32, u64> = BTreeMap::new();
        let mut widest = 0;
        for up in self
            .mesh
            .iter()
            .filter(|acc| acc.pod == pod)
            .flat_map(|acc| &acc.uppers)
        {
            let above = *above_agg.entry(up.agg).or_insert_with(|| {
                up.cores
                    .iter()
                    .map(|&(_, l)| self.links.free(l).unwrap_or(0))
                    .max()
                    .unwrap_or(0)
            });
            widest = widest.max(self.links.free(up.link).unwrap_or(0).min(above));
        }
        self.widest_cache
            .borrow_mut()
            .insert(pod, (self.links.version, widest));
    }

    fn best_core(&self, up: &Upper, bw: u64, t_x: f64) -> Option<u32> {
        up.cores
            .iter()
            .filter(|&&(_, link)| self.links.fits(link, bw))
            .map(|&(core, _)| (self.switch_cost(core, t_x), core))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, core)| core)
    }

    /// A uniformly random feasible path from a core switch to `s`.
    fn random_path(&self, s: &ServerState, bw: u64, rng: &mut impl RngCore) -> Option<Route> {
        if s.mesh_pod().is_some() {
            return self.random_mesh_path(s, bw, rng);
        }
        let options = self.path_options(s, bw);
        let n = options.len() as u32;
        if n == 0 {
            return None;
        }
        let (agg, core) = options[index(rng, n) as usize];
        Route::new(&[core, agg, s.access, s.spec.id.0])
    }

    /// GEMS(noNetwork)'s random path to a server linked to a whole pod: an
    /// access switch drawn uniformly among those with a feasible path down
    /// to it, then an aggregation switch and a core switch uniformly among
    /// the feasible ones above it (uniform over paths while links are free:
    /// every access switch has as many paths above it).
    fn random_mesh_path(&self, s: &ServerState, bw: u64, rng: &mut impl RngCore) -> Option<Route> {
        let me = s.spec.id.0;
        let feasible = |up: &&Upper| {
            self.links.fits(up.link, bw) && up.cores.iter().any(|&(_, l)| self.links.fits(l, bw))
        };
        let ok = |acc: &MeshAccess| {
            self.links
                .of(acc.id, me)
                .is_some_and(|l| self.links.fits(l, bw))
                && acc.uppers.iter().any(|up| feasible(&up))
        };
        let pod: Vec<&MeshAccess> = self
            .mesh
            .iter()
            .filter(|acc| Some(acc.pod) == s.mesh_pod())
            .collect();
        let acc = draw_feasible(&pod, |acc| ok(acc), rng)?;
        let ups: Vec<&Upper> = acc.uppers.iter().filter(feasible).collect();
        let up = ups[index(rng, ups.len() as u32) as usize];
        let cores: Vec<u32> = up
            .cores
            .iter()
            .filter(|&&(_, l)| self.links.fits(l, bw))
            .map(|&(c, _)| c)
            .collect();
        let core = cores[index(rng, cores.len() as u32) as usize];
        Route::new(&[core, up.agg, acc.id, me])
    }

    /// Phase II between two servers linked to every access switch of one
    /// pod: through the access switch of least cost with `bw` free on both
    /// links (the first such in id order among equals, as a scan of
    /// `shortest_paths` would take: idle access switches of a group are
    /// alike, so the first of each stands for all), or a uniformly random
    /// feasible one for GEMS(noNetwork). `None` when the servers are not
    /// of one such pod.
    fn mesh_internal(
        &self,
        from: &ServerState,
        to: &ServerState,
        bw: u64,
        t_x: f64,
        rng: &mut impl RngCore,
    ) -> Option<Option<Route>> {
        let pod = from.mesh_pod()?;
        if to.mesh_pod() != Some(pod) {
            return None;
        }
        let (a, b) = (from.spec.id.0, to.spec.id.0);
        let feasible = |acc: &MeshAccess| {
            self.links
                .of(a, acc.id)
                .is_some_and(|l| self.links.fits(l, bw))
                && self
                    .links
                    .of(acc.id, b)
                    .is_some_and(|l| self.links.fits(l, bw))
        };
        let chosen = if self.costing == Costing::ServerOnly {
            let pod: Vec<&MeshAccess> = self.mesh.iter().filter(|acc| acc.pod == pod).collect();
            draw_feasible(&pod, |acc| feasible(acc), rng)
        } else {
            let mut best: Option<(f64, &MeshAccess)> = None;
            for acc in self.mesh_candidates(pod) {
                let cost = self.switch_cost(acc.id, t_x);
                if best.is_none_or(|(c, _)| cost < c) && feasible(acc) {
                    best = Some((cost, acc));
                }
            }
            best.map(|(_, acc)| acc)
        };
        Some(chosen.and_then(|acc| Route::new(&[a, acc.id, b])))
    }

    /// The (aggregation, core) switch pairs above `s` in a rack with `bw`
    /// free on every link down to it.
    fn path_options(&self, s: &ServerState, bw: u64) -> Vec<(u32, u32)> {
        let Downlinks::Rack { uppers } = &s.downlinks else {
            return Vec::new();
        };
        if !self.links.fits(s.down, bw) {
            return Vec::new();
        }
        uppers
            .iter()
            .filter(|up| self.links.fits(up.link, bw))
            .flat_map(|up| {
                up.cores
                    .iter()
                    .filter(|&&(_, link)| self.links.fits(link, bw))
                    .map(move |&(core, _)| (up.agg, core))
            })
            .collect()
    }

    fn has_room(&self, route: &Route, bw: u64) -> bool {
        self.links
            .route(route)
            .is_some_and(|ids| ids.iter().all(|&l| self.links.fits(l, bw)))
    }

    /// Servers to evaluate among those `allow` admits, in index order: the
    /// warm ones, and of each cold group (interchangeable servers) its
    /// first admitted member, which stands for the group.
    fn candidates_among<'a>(
        &'a self,
        allow: &'a dyn Fn(u32) -> bool,
    ) -> impl Iterator<Item = u32> + 'a {
        let mut firsts: Vec<u32> = self
            .cold
            .values()
            .filter_map(|set| set.iter().copied().find(|&i| allow(i)))
            .collect();
        firsts.sort_unstable();
        // both sorted, and disjoint (a group's members are cold): merge them
        let mut firsts = firsts.into_iter().peekable();
        let mut warm = self.warm.iter().copied().filter(|&i| allow(i)).peekable();
        std::iter::from_fn(move || match (warm.peek(), firsts.peek()) {
            (Some(w), Some(f)) if w < f => warm.next(),
            (_, Some(_)) => firsts.next(),
            (Some(_), None) => warm.next(),
            (None, None) => None,
        })
    }

    /// Moves server `i` between the warm and cold sets after its load or
    /// its access switch's flows changed.
    fn refresh(&mut self, i: u32) {
        let s = &self.servers[i as usize];
        let cold = match s.mesh_pod() {
            Some(_) => s.tasks == 0 && s.link_flows == 0,
            None => s.tasks == 0 && self.switch(s.access).is_none_or(|sw| sw.flows == 0),
        };
        if cold == self.is_cold[i as usize] {
            return;
        }
        self.is_cold[i as usize] = cold;
        let group = s.group;
        if cold {
            self.warm.remove(&i);
            self.cold.entry(group).or_default().insert(i);
        } else {
            if let Some(set) = self.cold.get_mut(&group) {
                set.remove(&i);
            }
            self.warm.insert(i);
        }
    }

    /// The index in `mesh` of a full-mesh access switch.
    fn mesh_at(&self, node: u32) -> Option<u32> {
        let k = node.checked_sub(self.switch_base)?;
        self.mesh_index.get(k as usize).copied().flatten()
    }

    fn switch(&self, node: u32) -> Option<&SwitchState> {
        node.checked_sub(self.switch_base)
            .and_then(|k| self.switches.get(k as usize))
    }

    fn switch_mut(&mut self, node: u32) -> Option<&mut SwitchState> {
        node.checked_sub(self.switch_base)
            .and_then(|k| self.switches.get_mut(k as usize))
    }

    /// BRFS's fit of a task on a server (§3.3.2), over CPU and memory as
    /// shares of the server's capacity: smaller is better.
    fn fit(&self, task: &Task, s: &ServerState) -> f64 {
        let need = [
            cpu_of(task) / s.capacity.max(f64::MIN_POSITIVE),
            task.memory_mb as f64 / s.spec.memory_mb.max(1) as f64,
        ];
        let free = [
            1.0 - s.cpu_used / s.capacity.max(f64::MIN_POSITIVE),
            1.0 - s.memory_used as f64 / s.spec.memory_mb.max(1) as f64,
        ];
        match self.choice {
            Choice::FitNorm => need.iter().zip(free).map(|(a, c)| (a - c) * (a - c)).sum(),
            _ => need.iter().zip(free).map(|(a, c)| a * c).sum(),
        }
    }

    /// Reserves a flow on every link of its path (all or nothing) and
    /// counts it on its switches.
    fn book(&mut self, f: &Flow) -> Result<(), ()> {
        let ids = self.links.route(&f.route).ok_or(())?;
        let bw = f.bandwidth.bps();
        if !ids.iter().all(|&l| self.links.fits(l, bw)) {
            return Err(());
        }
        for l in ids {
            self.links.book(l, bw, false);
        }
        self.count_flow(&f.route, true);
        self.booked += 1;
        Ok(())
    }

    /// Books a flow just unbooked on its path again (no count: it is the
    /// same reservation).
    fn rebook(&mut self, f: &Flow) {
        if let Some(ids) = self.links.route(&f.route) {
            for l in ids {
                self.links.book(l, f.bandwidth.bps(), false);
            }
        }
        self.count_flow(&f.route, true);
    }

    fn unbook(&mut self, f: &Flow) {
        if let Some(ids) = self.links.route(&f.route) {
            for l in ids {
                self.links.book(l, f.bandwidth.bps(), true);
            }
        }
        self.count_flow(&f.route, false);
    }

    fn count_flow(&mut self, route: &Route, add: bool) {
        for &n in route.nodes() {
            if let Some(&i) = self.index_of.get(&ActorId(n))
                && self.servers[i as usize].mesh_pod().is_some()
            {
                let s = &mut self.servers[i as usize];
                s.link_flows = if add {
                    s.link_flows + 1
                } else {
                    s.link_flows.saturating_sub(1)
                };
                self.refresh(i);
                continue;
            }
            let Some(sw) = self.switch_mut(n) else {
                continue;
            };
            let before = sw.flows;
            sw.flows = if add {
                before + 1
            } else {
                before.saturating_sub(1)
            };
            let now_idle = sw.flows == 0;
            let flipped = (before == 0) != now_idle;
            if flipped && let Some(under) = self.under_access.get(&n).cloned() {
                for i in under {
                    self.refresh(i);
                }
            }
            if flipped && let Some(k) = self.mesh_at(n) {
                let group = self.mesh[k as usize].group;
                if now_idle {
                    self.mesh_warm.remove(&k);
                    self.mesh_cold[group].insert(k);
                } else {
                    self.mesh_warm.insert(k);
                    self.mesh_cold[group].remove(&k);
                }
            }
        }
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("energy_placements", self.placed);
        out.add("energy_server_wakeups_chosen", self.woken);
        out.add("flows_internal", self.internal_flows);
        out.add("flows_internal_refused", self.internal_refused);
        out.add("placements_deferred", self.deferred);
        out.add("flows_reserved", self.booked);
        let bps: u64 = self
            .running
            .values()
            .flat_map(|r| &r.flows)
            .map(|f| (f.route.hops() as u64).saturating_mul(f.bandwidth.bps()))
            .sum();
        out.add(
            "flows_active_end",
            self.running.values().map(|r| r.flows.len() as u64).sum(),
        );
        out.add("reserved_link_bps_end", bps);
    }
}

/// The best core switch above each aggregation switch for one task, per
/// bandwidth (a few distinct values: one per server capacity).
/// With servers linked to whole pods, also each pod's access switches
/// ranked by the cost of their best path, per bandwidth and `T_x` (bits).
#[derive(Default)]
struct CoreCache {
    cores: BTreeMap<(u32, u64), Option<u32>>,
    ranked: BTreeMap<(u32, u64, u64), Ranking>,
}

/// Access switches by the cost of their cheapest path: the cheapest (then
/// lowest id), and all of them, sorted so on first need.
struct Ranking {
    first: Option<Ranked>,
    all: std::cell::OnceCell<Vec<Ranked>>,
    unsorted: Vec<Ranked>,
}

impl Ranking {
    fn new(all: Vec<Ranked>) -> Self {
        let first = all
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .copied();
        Ranking {
            first,
            all: std::cell::OnceCell::new(),
            unsorted: all,
        }
    }

    /// The first access switch in the ranking that `reaches` accepts: the
    /// cheapest nearly always (the rest are sorted only when it is not).
    fn first_reaching(&self, reaches: impl Fn(u32) -> bool) -> Option<Ranked> {
        if let Some(r) = self.first.filter(|r| reaches(r.1)) {
            return Some(r);
        }
        self.all
            .get_or_init(|| {
                let mut all = self.unsorted.clone();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                all
            })
            .iter()
            .find(|r| reaches(r.1))
            .copied()
    }
}

/// An access switch with the cost of the cheapest path down to it: `(cost,
/// access, aggregation, core)`.
type Ranked = (f64, u32, u32, u32);

/// A uniformly random element of `items` among those `ok` accepts: a few
/// draws from all of them (accepted ones are uniform among the accepted),
/// then, if none was accepted, a draw among the accepted ones.
fn draw_feasible<'a, T>(
    items: &[&'a T],
    ok: impl Fn(&T) -> bool,
    rng: &mut impl RngCore,
) -> Option<&'a T> {
    let n = items.len() as u32;
    if n == 0 {
        return None;
    }
    for _ in 0..8 {
        let item = items[index(rng, n) as usize];
        if ok(item) {
            return Some(item);
        }
    }
    let accepted: Vec<&T> = items.iter().copied().filter(|&t| ok(t)).collect();
    let m = accepted.len() as u32;
    (m > 0).then(|| accepted[index(rng, m) as usize])
}

fn fits(task: &Task, cpu: f64, s: &ServerState) -> bool {
    s.slots_used + slots_for(task.cores, s.spec.cores, s.spec.slots) <= s.spec.slots
        && s.threads_used + task.cores.max(1) <= s.room
        && s.cpu_used + cpu <= s.capacity + 1e-9
        && s.memory_used + task.memory_mb <= s.spec.memory_mb
        && task.apart.is_none_or(|job| !s.apart.contains(&job))
}

/// The CPU a task asks for, normalised to the reference machine: its
/// declared requirement, or one core of the reference machine per thread.
fn cpu_of(task: &Task) -> f64 {
    if task.cpu_ppm > 0 {
        f64::from(task.cpu_ppm) / 1e6
    } else {
        f64::from(task.cores) / 8.0
    }
}

/// `bytes` over the task's shortest execution time on `s` (its work on all
/// of the server's cores, §4.2.2), in bits/s; at least 1 b/s so that every
/// flow holds its path.
fn bandwidth_bps(bytes: u64, work_ns: u64, s: &ServerState) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let t_min =
        work_ns as f64 / 1e9 / (s.spec.core_speed * f64::from(s.spec.cores)).max(f64::MIN_POSITIVE);
    ((bytes as f64 * 8.0 / t_min.max(1e-3)).ceil() as u64).max(1)
}

fn sort_value(task: &Task, key: SortKey) -> f64 {
    match key {
        SortKey::Memory => task.memory_mb as f64,
        SortKey::Cpu => cpu_of(task),
        SortKey::Network => task.job.map_or(task.flow_bps as f64, |j| {
            (j.external_bytes + j.internal_bytes) as f64
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;
    use crate::task::JobRef;
    use dcemu_topology::{Attach, TopologyConfig, TopologyKind};

    /// Four servers (ids 0–3) on two access switches of one pod under two
    /// aggregation and two core switches: servers 0, 1 on one access
    /// switch, 2, 3 on the other.
    fn network() -> Network {
        let cfg = TopologyConfig {
            kind: TopologyKind::ThreeTier,
            core: 2,
            aggregation: 2,
            access: 2,
            ..TopologyConfig::default()
        };
        Network::build(&cfg, &[Attach::Rack; 4]).unwrap()
    }

    /// Four servers linked to every one of `access` access switches of one
    /// pod (§4.2.3) under two aggregation and two core switches; `upper`:
    /// the bandwidth of the links above the access layer, if not the
    /// default.
    fn mesh_network(access: u32, upper: Option<Bandwidth>) -> Network {
        let mut cfg = TopologyConfig {
            kind: TopologyKind::ThreeTier,
            core: 2,
            aggregation: 2,
            access,
            access_server: dcemu_topology::HostWiring::FullMesh,
            ..TopologyConfig::default()
        };
        if let Some(bw) = upper {
            cfg.aggregation_link = bw;
            cfg.core_link = bw;
        }
        Network::build(&cfg, &[Attach::Rack; 4]).unwrap()
    }

    fn stage(placement: PlacementKind, net: &Network) -> EnergyStage {
        let cfg = SchedulerConfig {
            placement,
            ..SchedulerConfig::default()
        };
        let servers = (0..4)
            .map(|i| EnergyServer {
                id: ActorId(i),
                slots: 1000,
                cores: 8,
                core_speed: 1.0,
                memory_mb: 64_000,
                idle_w: 162.0,
                peak_w: 301.0,
            })
            .collect();
        EnergyStage::new(&cfg, net, servers, true, (30_000_000_000, 0))
    }

    fn task(id: TaskId, cpu: f64, job: Option<JobRef>) -> Task {
        Task {
            id,
            tenant: ActorId(9),
            submitted_at: 0,
            service_ns: 60_000_000_000,
            flow_bps: 0,
            app: None,
            priority: 0,
            memory_mb: 1_000,
            cores: 1,
            first_start: None,
            total_ns: 60_000_000_000,
            solo_ns: 0,
            evictions: 0,
            priority_evictions: 0,
            cpu_ppm: (cpu * 1e6) as u32,
            job,
            dag: None,
            requested_ns: 0,
            dist: None,
            apart: None,
        }
    }

    fn job(id: TaskId, master: bool) -> Option<JobRef> {
        Some(JobRef {
            id,
            master,
            external_bytes: 10_000_000,
            internal_bytes: if master { 0 } else { 5_000_000 },
        })
    }

    fn servers_of(placed: &[Placed]) -> Vec<u32> {
        placed.iter().map(|p| p.server.0).collect()
    }

    #[test]
    fn behind_a_slot_stage_it_places_where_allowed_and_an_eviction_trial_books_nothing() {
        let net = network();
        let mut s = stage(PlacementKind::Gems, &net);
        let mut rng = actor_rng(4, "t");
        let mut a = task(1, 0.1, None);
        a.flow_bps = 600_000_000;
        // only server 3 is a candidate (the slot stage's): it gets the
        // task, with a path from a core switch down to it
        let (i, route) = s.choose(&a, &|i| i == 3, &mut rng).unwrap();
        assert_eq!(i, 3);
        assert_eq!(route.nodes().last(), Some(&3));
        let flows = s.start(&net, &a, i, Some(route), &mut rng).unwrap();
        assert_eq!(flows.len(), 1);
        // 600 + 600 Mb/s exceed its 1 Gb/s link: not there...
        let mut b = task(2, 0.1, None);
        b.flow_bps = 600_000_000;
        assert!(s.choose(&b, &|i| i == 3, &mut rng).is_none());
        assert!(s.choose(&b, &|_| true, &mut rng).is_some_and(|c| c.0 != 3));
        // ...unless `a` is evicted; trying that changes nothing
        let state = |s: &EnergyStage| {
            (
                s.links.free.clone(),
                s.servers[3].tasks,
                s.servers[3].cpu_used,
                s.warm.clone(),
                s.switches.iter().map(|w| w.flows).collect::<Vec<_>>(),
            )
        };
        let before = state(&s);
        assert!(s.evictable(&b, 3, 1));
        assert_eq!(state(&s), before);
        // the eviction gives its flow back, and `b` takes the best path there
        assert_eq!(s.release(1, ActorId(3)), flows);
        assert_eq!(
            s.start(&net, &b, 3, None, &mut rng).map(|f| f.len()),
            Some(1)
        );
    }

    #[test]
    fn gems_shares_an_awake_server_rather_than_waking_another() {
        let net = network();
        let mut s = stage(PlacementKind::Gems, &net);
        let mut rng = actor_rng(1, "t");
        s.enqueue(task(1, 0.1, None));
        assert_eq!(servers_of(&s.schedule(&net, &mut rng)), vec![0]);
        s.enqueue(task(2, 0.1, None));
        assert_eq!(
            servers_of(&s.schedule(&net, &mut rng)),
            vec![0],
            "the wake-up (30 s at peak power) costs more than sharing"
        );
    }

    #[test]
    fn gems_spreads_once_sharing_slows_tasks_more_than_a_wake_up_costs() {
        let net = network();
        let mut s = stage(PlacementKind::Gems, &net);
        let mut rng = actor_rng(2, "t");
        for id in 0..40 {
            s.enqueue(task(id, 0.02, None));
        }
        let placed = s.schedule(&net, &mut rng);
        assert_eq!(placed.len(), 40);
        let on: BTreeSet<u32> = servers_of(&placed).into_iter().collect();
        assert!(on.len() > 1, "40 tasks on 8 cores run 5x slower: {on:?}");
    }

    #[test]
    fn under_free_capacity_sharing_a_task_is_estimated_as_section_4_2_5_runs_it() {
        let net = network();
        let cfg = SchedulerConfig {
            placement: PlacementKind::Gems,
            cpu_sharing: CpuSharing::FreeCapacity,
            ..SchedulerConfig::default()
        };
        let servers = stage(PlacementKind::Gems, &net)
            .servers
            .iter()
            .map(|s| s.spec.clone())
            .collect();
        let mut s = EnergyStage::new(&cfg, &net, servers, true, (30_000_000_000, 0));
        // 60 s on one core of speed 1 is Δ = 7.5 s of the 8-core server;
        // requirement 0.5: alone it gets the whole server (7.5 s) ...
        let t = task(1, 0.5, None);
        assert!((s.exec_time(&t, &s.servers[0]) - 7.5).abs() < 1e-9);
        // ... beside another 0.5 only its requirement: Δ / 0.5 = 15 s
        s.servers[0].cpu_used = 0.5;
        s.servers[0].tasks = 1;
        assert!((s.exec_time(&t, &s.servers[0]) - 15.0).abs() < 1e-9);
        // eq. 6.2 would give a core each: 60 s either way
        let cores = stage(PlacementKind::Gems, &net);
        assert!((cores.exec_time(&t, &cores.servers[0]) - 60.0).abs() < 1e-9);
    }

    #[test]
    fn capacity_and_memory_bound_a_server() {
        let net = network();
        let mut s = stage(PlacementKind::Beps, &net);
        let mut rng = actor_rng(3, "t");
        for id in 0..3 {
            s.enqueue(task(id, 0.4, None));
        }
        let placed = s.schedule(&net, &mut rng);
        assert_eq!(
            servers_of(&placed),
            vec![0, 0, 1],
            "0.4 + 0.4 fits, a third does not"
        );
        let mut big = task(9, 0.01, None);
        big.memory_mb = 70_000;
        s.enqueue(big);
        assert!(s.schedule(&net, &mut rng).is_empty());
        assert_eq!(s.queued(), 1, "it waits for the next slot");
    }

    #[test]
    fn rrs_goes_round_the_servers() {
        let net = network();
        let mut s = stage(PlacementKind::Rrs, &net);
        let mut rng = actor_rng(4, "t");
        for id in 0..5 {
            s.enqueue(task(id, 0.1, None));
        }
        assert_eq!(servers_of(&s.schedule(&net, &mut rng)), vec![0, 1, 2, 3, 0]);
    }

    #[test]
    fn workers_reach_their_master_and_every_flow_is_released() {
        let net = network();
        let mut s = stage(PlacementKind::Rrs, &net);
        let mut rng = actor_rng(5, "t");
        s.enqueue(task(10, 0.1, job(10, true)));
        s.enqueue(task(11, 0.1, job(10, false)));
        s.enqueue(task(12, 0.1, job(10, false)));
        let placed = s.schedule(&net, &mut rng);
        assert_eq!(servers_of(&placed), vec![0, 1, 2]);
        let flows: Vec<&Flow> = placed.iter().flat_map(|p| &p.flows).collect();
        assert_eq!(flows.len(), 5, "three external, two internal");
        let internal: Vec<&&Flow> = flows
            .iter()
            .filter(|f| f.route.dst() == 0 && f.route.src() != f.route.dst())
            .filter(|f| !net.is_switch(f.route.src()))
            .collect();
        assert_eq!(internal.len(), 2, "both workers to the master's server");
        let full = (s.links.free.clone(), s.links.mesh_free.clone());
        assert!(s.switches.iter().any(|sw| sw.flows > 0));
        for (id, server) in [(11, 1), (10, 0), (12, 2)] {
            s.release(id, ActorId(server));
        }
        assert!(s.switches.iter().all(|sw| sw.flows == 0));
        let fresh = Links::new(&net);
        let fresh = (fresh.free, fresh.mesh_free);
        assert_eq!(
            (s.links.free.clone(), s.links.mesh_free.clone()),
            fresh,
            "every link is free again"
        );
        assert_ne!(full, fresh);
    }

    #[test]
    fn a_worker_placed_before_its_master_connects_when_the_master_lands() {
        let net = network();
        let mut s = stage(PlacementKind::Gems, &net);
        let mut rng = actor_rng(6, "t");
        s.enqueue(task(21, 0.1, job(20, false)));
        assert_eq!(s.schedule(&net, &mut rng)[0].flows.len(), 1);
        s.enqueue(task(20, 0.1, job(20, true)));
        let placed = s.schedule(&net, &mut rng);
        if placed[0].server == ActorId(0) {
            assert_eq!(placed[0].flows.len(), 1, "same server: no internal flow");
        } else {
            assert_eq!(placed[0].flows.len(), 2, "its own and the worker's");
        }
    }

    #[test]
    fn gems_keeps_servers_linked_to_every_access_switch_on_one_of_them() {
        // §4.2.3: servers fully connected with the access layer. Tasks too
        // big to share a server land on different servers, yet their
        // flows all cross one access switch (already on, it is cheapest);
        // GEMS(noNetwork) draws paths at random and lights up both.
        let net = mesh_network(4, None);
        let accesses = |placement| {
            let mut s = stage(placement, &net);
            let mut rng = actor_rng(8, "t");
            for id in 0..4 {
                s.enqueue(task(id, 0.6, job(id, true)));
            }
            let placed = s.schedule(&net, &mut rng);
            assert_eq!(placed.len(), 4, "one per server");
            placed
                .iter()
                .flat_map(|p| &p.flows)
                .map(|f| f.route.nodes()[2])
                .collect::<BTreeSet<u32>>()
        };
        assert_eq!(accesses(PlacementKind::Gems).len(), 1);
        assert!(accesses(PlacementKind::GemsNonetwork).len() > 1);
    }

    #[test]
    fn the_widest_path_bound_rejects_only_what_a_walk_over_every_path_would() {
        // Flows of ~270-800 Mb/s fill the 1 Gb/s links above the access
        // switches; the cached bound must answer as a walk over every
        // access switch's paths does, before and after flows leave.
        let net = mesh_network(4, Some(Bandwidth::from_bps(1_000_000_000)));
        let mut s = stage(PlacementKind::GemsNonetwork, &net);
        let mut rng = actor_rng(10, "t");
        let mut running: Vec<(TaskId, ActorId)> = Vec::new();
        let mut refused = 0;
        for round in 0..10u64 {
            for k in 0..4 {
                let id = round * 10 + k;
                let mut j = job(id, true);
                if let Some(j) = j.as_mut() {
                    j.external_bytes = 2_000_000_000 + 1_000_000_000 * k;
                }
                s.enqueue(task(id, 0.05, j));
            }
            for p in s.schedule(&net, &mut rng) {
                running.push((p.task.id, p.server));
            }
            if round % 4 == 3 {
                for (id, server) in running.drain(..running.len() / 2) {
                    s.release(id, server);
                }
            }
            for st in &s.servers {
                let me = st.spec.id.0;
                for bw in [1, 200_000_000, 500_000_000, 900_000_000] {
                    let walk = s.mesh.iter().any(|acc| {
                        s.links.of(acc.id, me).is_some_and(|l| s.links.fits(l, bw))
                            && s.feasible_above(&acc.uppers, bw)
                    });
                    refused += usize::from(!walk);
                    for _ in 0..2 {
                        assert_eq!(
                            s.has_path(st, bw),
                            walk,
                            "round {round}, server {me}, {bw} b/s"
                        );
                    }
                }
            }
        }
        assert!(refused > 0, "the links above filled at some point");
    }

    #[test]
    fn idle_mesh_access_switches_stand_for_their_group_as_a_full_scan_would() {
        // §4.2.3: every server linked to every access switch of its pod.
        // The path search ranks the access switches carrying flows and one
        // idle one; ranking all of them must pick the same, while flows
        // come and go.
        let net = mesh_network(6, None);
        let mut s = stage(PlacementKind::Gems, &net);
        let mut rng = actor_rng(9, "t");
        let mut running: Vec<(TaskId, ActorId)> = Vec::new();
        let mut warm_seen = 0;
        for round in 0..8u64 {
            for k in 0..3 {
                let id = round * 10 + k;
                // ~270 Mb/s each: a few fill an aggregation–access link
                let mut j = job(round * 10, k == 0);
                if let Some(j) = j.as_mut() {
                    j.external_bytes = 250_000_000;
                }
                s.enqueue(task(id, 0.3, j));
            }
            for p in s.schedule(&net, &mut rng) {
                running.push((p.task.id, p.server));
            }
            if round % 3 == 2 {
                for (id, server) in running.drain(..running.len() / 2) {
                    s.release(id, server);
                }
            }
            let pod_size = s.mesh.len();
            warm_seen = warm_seen.max(s.mesh_warm.len());
            assert!(s.mesh_candidates(0).count() <= s.mesh_warm.len() + 1);
            for st in &s.servers {
                for bw in [1, 300_000_000, 700_000_000, 1_000_000_000] {
                    let me = st.spec.id.0;
                    let all: Vec<(u32, &[Upper])> =
                        s.mesh.iter().map(|a| (a.id, a.uppers.as_slice())).collect();
                    assert_eq!(all.len(), pod_size);
                    let full = s.rank(&all, bw, 1.0, &mut BTreeMap::new());
                    let expect = full
                        .first_reaching(|a| s.links.of(a, me).is_some_and(|l| s.links.fits(l, bw)))
                        .map(|r| [r.3, r.2, r.1, me]);
                    let got = s.best_path(st, bw, 7.0, &mut CoreCache::default());
                    assert_eq!(
                        got.map(|(_, r)| r.nodes().to_vec()),
                        expect.map(|n| n.to_vec()),
                        "round {round}, server {me}, {bw} b/s"
                    );
                }
            }
        }
        assert!(warm_seen > 1, "flows lit up several access switches");
    }

    #[test]
    fn pruned_candidates_choose_what_a_full_scan_would() {
        // Cold servers of one kind under cold switches are interchangeable:
        // the lowest-numbered stands for all, as a full scan's first
        // minimum would.
        let net = network();
        let mut s = stage(PlacementKind::Gems, &net);
        assert_eq!(
            s.candidates_among(&|_| true).collect::<Vec<_>>(),
            vec![0],
            "one kind, one pod: one stands for all"
        );
        let mut rng = actor_rng(7, "t");
        s.enqueue(task(1, 0.1, job(1, true)));
        s.schedule(&net, &mut rng);
        assert_eq!(
            s.candidates_among(&|_| true).collect::<Vec<_>>(),
            vec![0, 1, 2],
            "server 0 in use, 1 under a switch in use, 2 for the cold rest"
        );
        s.release(1, ActorId(0));
        assert_eq!(s.candidates_among(&|_| true).collect::<Vec<_>>(), vec![0]);
    }
}
