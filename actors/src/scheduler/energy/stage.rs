//! [`EnergyStage`]: its queue and time slots (phase I, then phase II,
//! thesis Figure 4.1), and its answers to the stage that holds the queue
//! (`choose`, `start`, `evictable`).

use super::super::unplaceable::{Demand, Free, Unplaceable};
use crate::config::{CpuSharing, PlacementKind, SchedulerConfig, SortKey};
use crate::kernel::{ActorId, Metrics};
use crate::slot_share::{slots_for, threads_in};
use crate::task::{Task, TaskId};
use dcemu_topology::{Bandwidth, Network, Route, SimTime, Tier};
use rand::RngCore;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::BTreeSet;

use super::state::{
    Downlinks, Links, MeshAccess, Running, ServerState, SwitchState, Upper, bandwidth_bps, fits,
};
use super::types::{Costing, EnergyServer, Flow, Placed, Rule, cpu_of, sort_value};

/// The energy stage: queue, capacity and bandwidth ledgers, node states.
pub struct EnergyStage {
    pub(super) costing: Costing,
    pub(super) rule: Rule,
    pub(super) sort_by: Option<SortKey>,
    pub(super) sleeps: bool,
    pub(super) server_wake_s: f64,
    pub(super) switch_wake_s: f64,
    pub(super) servers: Vec<ServerState>,
    pub(super) index_of: BTreeMap<ActorId, u32>,
    /// Switch states by node id minus `switch_base`.
    pub(super) switches: Vec<SwitchState>,
    pub(super) switch_base: u32,
    pub(super) links: Links,
    /// Access switches of the pods whose servers link to all of them, in
    /// id order.
    pub(super) mesh: Vec<MeshAccess>,
    /// Index into `mesh` by switch id minus `switch_base`.
    pub(super) mesh_index: Vec<Option<u32>>,
    /// Of `mesh`, those carrying a flow; and of the others, by group, the
    /// indices: each group's first stands for all of it.
    pub(super) mesh_warm: BTreeSet<u32>,
    pub(super) mesh_cold: Vec<BTreeSet<u32>>,
    /// Servers worth evaluating: every server in use or under a switch in
    /// use, and of the others the lowest-numbered of each group.
    pub(super) warm: BTreeSet<u32>,
    pub(super) cold: BTreeMap<(usize, u32), BTreeSet<u32>>,
    pub(super) is_cold: Vec<bool>,
    pub(super) under_access: BTreeMap<u32, Vec<u32>>,
    pub(super) queue: Vec<Task>,
    pub(super) running: BTreeMap<TaskId, Running>,
    /// Server of each job's master while it runs, and workers placed
    /// before it that still wait for their internal flow.
    pub(super) masters: BTreeMap<TaskId, u32>,
    pub(super) waiting_for_master: BTreeMap<TaskId, Vec<TaskId>>,
    pub(super) next_rr: usize,
    pub(super) placed: u64,
    pub(super) woken: u64,
    pub(super) internal_flows: u64,
    pub(super) internal_refused: u64,
    /// Placements put off to the next slot: nothing fit.
    pub(super) deferred: u64,
    pub(super) booked: u64,
    /// How servers share their CPU (`scheduler.cpu_sharing`): what a
    /// task's execution time on a server is estimated with.
    pub(super) sharing: CpuSharing,
    /// Cores × core speed of the strongest server: normalised capacity 1.
    pub(super) strongest: f64,
    /// [`EnergyStage::widest_above`] per pod, with the links' version it
    /// was computed at.
    pub(super) widest_cache: RefCell<BTreeMap<u32, (u64, u64)>>,
    /// The latest choice made through the placement policy (task, server
    /// and path), until the start it leads to takes it.
    pub(super) chosen: Option<(TaskId, u32, Route)>,
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
        let (costing, rule) = match cfg.placement {
            PlacementKind::GemsNonetwork => (Costing::ServerOnly, Rule::GemsNoNetwork),
            PlacementKind::Beps => (Costing::Marginal, Rule::Beps),
            PlacementKind::BrfsDot => (Costing::Marginal, Rule::BrfsDot),
            PlacementKind::BrfsNorm => (Costing::Marginal, Rule::BrfsNorm),
            PlacementKind::Rrs => (Costing::Marginal, Rule::Rrs),
            _ => (Costing::Shared, Rule::Gems),
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
            chosen: None,
            costing,
            rule,
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

    /// Keeps a choice of [`EnergyStage::choose`] for the start it leads to.
    pub fn keep_choice(&mut self, task: TaskId, server: u32, route: Route) {
        self.chosen = Some((task, server, route));
    }

    /// The choice kept last, once.
    pub fn take_choice(&mut self) -> Option<(TaskId, u32, Route)> {
        self.chosen.take()
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
    pub(super) fn most_free(&self) -> Free {
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
    pub(super) fn place(
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

    /// Its execution time on `s` with the co-runners already there, as the
    /// servers share their CPU: eq. 6.2's processor sharing, at most one
    /// core each, or §4.2.5's requirement plus an equal share of the
    /// capacity left free.
    pub(super) fn exec_time(&self, task: &Task, s: &ServerState) -> f64 {
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
    pub(super) fn commit(
        &mut self,
        task: &Task,
        i: u32,
        route: Route,
    ) -> Option<(u32, Option<Flow>)> {
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

    /// Bandwidth of a task's external traffic on `s`: its flow over its
    /// shortest execution there (§4.2.2), or a plain tenant's fixed
    /// `flow_bandwidth`.
    pub(super) fn task_bps(&self, task: &Task, s: &ServerState) -> u64 {
        match task.job {
            Some(j) => bandwidth_bps(j.external_bytes, task.service_ns, s)
                .min(self.links.capacity(s.down).unwrap_or(u64::MAX)),
            None => task.flow_bps,
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
