//! The energy stage's ledgers: each server's booked CPU, memory, slots and
//! flows, each switch's, and the links below the access layer with their
//! bandwidth (§4.2.2-4.2.3).

use crate::slot_share::slots_for;
use crate::task::{Task, TaskId};
use dcemu_topology::{Network, Route};
use std::collections::BTreeMap;

use super::types::{EnergyServer, Flow};

#[derive(Clone, Debug)]
pub(super) struct ServerState {
    pub(super) spec: EnergyServer,
    /// Normalised CPU capacity (1.0: the most powerful server).
    pub(super) capacity: f64,
    /// Its access switch (the first of its pod's under a full mesh).
    pub(super) access: u32,
    /// The link from `access` down to it (its capacity bounds its flows:
    /// every link down to it has the same).
    pub(super) down: usize,
    /// How it reaches the access layer: what the path search walks.
    pub(super) downlinks: Downlinks,
    /// Servers of one kind under switches of one pod are interchangeable
    /// while they and their access switch carry nothing.
    pub(super) group: (usize, u32),
    /// Flows booked on its own links (to or from it).
    pub(super) link_flows: u32,
    pub(super) cpu_used: f64,
    pub(super) memory_used: u64,
    pub(super) tasks: u32,
    /// Slots its tasks hold, as the server counts them
    /// ([`crate::slot_share::slots_for`]), and their threads.
    pub(super) slots_used: u32,
    pub(super) threads_used: u32,
    /// Cores its primary tenant leaves to tasks, by its latest report
    /// (harvesting §5.3; `ClusterView`'s primary room); `u32::MAX` without
    /// a primary tenant.
    pub(super) room: u32,
    /// The trace job of each of its tasks with the different-machine
    /// restriction ([`Task::apart`]): no other such task of it may join.
    pub(super) apart: Vec<u64>,
}

/// The link topology below the access layer, as one path search sees it
/// (thesis §4.2.3): which access switches lead down to a server.
#[derive(Clone, Debug)]
pub(super) enum Downlinks {
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
    pub(super) fn mesh_pod(&self) -> Option<u32> {
        match self.downlinks {
            Downlinks::Mesh { pod } => Some(pod),
            Downlinks::Rack { .. } => None,
        }
    }
}

/// An access switch whose servers all link to its whole pod, with the
/// aggregation switches above it.
#[derive(Clone, Debug)]
pub(super) struct MeshAccess {
    pub(super) id: u32,
    pub(super) pod: u32,
    pub(super) uppers: Vec<Upper>,
    /// Access switches of one pod under the same aggregation switches are
    /// interchangeable while they carry no flow (thesis §4.2.3: all of
    /// them reach every server of the pod, over links of one capacity).
    pub(super) group: usize,
}

#[derive(Clone, Debug)]
pub(super) struct Upper {
    pub(super) agg: u32,
    pub(super) link: usize,
    pub(super) cores: Vec<(u32, usize)>,
}

/// Free bandwidth on every directed link, by link id, and capacity. A
/// listed link's id is its sender's first id plus its index among the
/// sender's listed ports (sorted by peer), so a lookup is a binary search
/// among one node's ports. The links of a full-mesh pod (thesis §4.2.3:
/// every server to every access switch) follow, `sender × nodes +
/// receiver`, and only those carrying a flow are stored.
#[derive(Clone, Debug)]
pub(super) struct Links {
    pub(super) net: Network,
    pub(super) first: Vec<usize>,
    pub(super) free: Vec<u64>,
    pub(super) capacity: Vec<u64>,
    pub(super) nodes: usize,
    /// Free bandwidth on the full-mesh links that carry a flow.
    pub(super) mesh_free: BTreeMap<usize, u64>,
    /// Capacity of every full-mesh link.
    pub(super) mesh_capacity: u64,
    /// Bumped by every booking: what a cache of free bandwidth is valid for.
    pub(super) version: u64,
}

impl Links {
    pub(super) fn new(net: &Network) -> Self {
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

    pub(super) fn of(&self, from: u32, to: u32) -> Option<usize> {
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
    pub(super) fn mesh_id(&self, from: u32, to: u32) -> usize {
        self.free.len() + from as usize * self.nodes + to as usize
    }

    /// Whether `link` is a full-mesh link.
    pub(super) fn is_mesh(&self, link: usize) -> bool {
        link >= self.free.len() && link - self.free.len() < self.nodes * self.nodes
    }

    pub(super) fn free(&self, link: usize) -> Option<u64> {
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

    pub(super) fn capacity(&self, link: usize) -> Option<u64> {
        if self.is_mesh(link) {
            return Some(self.mesh_capacity);
        }
        self.capacity.get(link).copied()
    }

    pub(super) fn fits(&self, link: usize, bw: u64) -> bool {
        self.free(link).is_some_and(|f| f >= bw)
    }

    /// Takes `bw` off a link's free bandwidth (`add`: gives it back).
    pub(super) fn book(&mut self, link: usize, bw: u64, add: bool) {
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

    pub(super) fn route(&self, route: &Route) -> Option<Vec<usize>> {
        route
            .nodes()
            .windows(2)
            .map(|w| self.of(w[0], w[1]))
            .collect()
    }
}

#[derive(Clone, Debug)]
pub(super) struct SwitchState {
    pub(super) on_w: f64,
    pub(super) idle_w: f64,
    pub(super) flows: u32,
}

#[derive(Clone, Debug)]
pub(super) struct Running {
    pub(super) server: u32,
    pub(super) cpu: f64,
    pub(super) memory_mb: u64,
    /// Slots it holds and its threads.
    pub(super) slots: u32,
    pub(super) threads: u32,
    pub(super) job: Option<TaskId>,
    pub(super) master: bool,
    /// Its worst-case execution time estimate and bandwidths, kept for
    /// phase II when its master is placed later.
    pub(super) t_x: f64,
    pub(super) work_ns: u64,
    pub(super) internal_bytes: u64,
    pub(super) flows: Vec<Flow>,
    pub(super) apart: Option<u64>,
}

pub(super) fn fits(task: &Task, cpu: f64, s: &ServerState) -> bool {
    s.slots_used + slots_for(task.cores, s.spec.cores, s.spec.slots) <= s.spec.slots
        && s.threads_used + task.cores.max(1) <= s.room
        && s.cpu_used + cpu <= s.capacity + 1e-9
        && s.memory_used + task.memory_mb <= s.spec.memory_mb
        && task.apart.is_none_or(|job| !s.apart.contains(&job))
}

/// `bytes` over the task's shortest execution time on `s` (its work on all
/// of the server's cores, §4.2.2), in bits/s; at least 1 b/s so that every
/// flow holds its path.
pub(super) fn bandwidth_bps(bytes: u64, work_ns: u64, s: &ServerState) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let t_min =
        work_ns as f64 / 1e9 / (s.spec.core_speed * f64::from(s.spec.cores)).max(f64::MIN_POSITIVE);
    ((bytes as f64 * 8.0 / t_min.max(1e-3)).ceil() as u64).max(1)
}
