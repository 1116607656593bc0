//! Bandwidth for tasks' traffic (thesis §4.2.2: a task's traffic to the
//! outside world enters at a core switch and runs down to its server).
//!
//! The scheduler acts as the network's controller: it keeps the one ledger
//! of reservations, so it knows what fits without asking, and it tells the
//! switches on a reserved path (they stay on while they carry a reservation).
//! A task whose flow fits on no path to its server does not start.

use std::collections::BTreeMap;

use dcemu_topology::{Bandwidth, Ecmp, Network, PathChooser, Reservations, Route};

use crate::kernel::{ActorId, Metrics};
use crate::task::TaskId;

#[derive(Debug, Default)]
pub struct FlowTable {
    ledger: Reservations,
    active: BTreeMap<TaskId, (Route, Bandwidth)>,
    reserved: u64,
    refused: u64,
}

impl FlowTable {
    /// Reserves `bandwidth` from some core switch to `server` for `task`:
    /// the first path that fits among all shortest paths from every core
    /// switch, starting at a place chosen by hashing the task id (so flows
    /// spread over the core). `None` if no path has the bandwidth.
    pub fn reserve(
        &mut self,
        net: &Network,
        task: TaskId,
        server: ActorId,
        bandwidth: Bandwidth,
    ) -> Option<Route> {
        let mut paths = core_paths(net, server);
        if paths.is_empty() {
            self.refused += 1;
            return None;
        }
        let ids: Vec<u32> = (0..paths.len() as u32).collect();
        let start = Ecmp.choose(server.0, &ids, task);
        paths.rotate_left(start);
        for route in paths {
            if self.ledger.reserve(net, &route, bandwidth).is_ok() {
                self.active.insert(task, (route, bandwidth));
                self.reserved += 1;
                return Some(route);
            }
        }
        self.refused += 1;
        None
    }

    /// Reserves `bandwidth` for `task` on `route`, a path a placement
    /// chose among [`FlowTable::options`]. `None` if a link of it lacks
    /// the bandwidth.
    pub fn reserve_on(
        &mut self,
        net: &Network,
        task: TaskId,
        route: Route,
        bandwidth: Bandwidth,
    ) -> Option<Route> {
        if self.ledger.reserve(net, &route, bandwidth).is_err() {
            self.refused += 1;
            return None;
        }
        self.active.insert(task, (route, bandwidth));
        self.reserved += 1;
        Some(route)
    }

    /// Every shortest path from a core switch down to `server`, core
    /// switches in id order, each with the bandwidth free on its busiest
    /// link after the reservations held.
    pub fn options(&self, net: &Network, server: ActorId) -> Vec<(Route, u64)> {
        core_paths(net, server)
            .into_iter()
            .map(|route| {
                let free = route
                    .nodes()
                    .windows(2)
                    .map(|link| {
                        net.port_to(link[0], link[1]).map_or(0, |(_, port)| {
                            let used = self.ledger.on_link(net, link[0], link[1]);
                            port.bandwidth.bps().saturating_sub(used)
                        })
                    })
                    .min()
                    .unwrap_or(0);
                (route, free)
            })
            .collect()
    }

    /// Whether `bandwidth` is free on some path from a core switch down to
    /// `server`, counting the bandwidth of `freeing`'s flow as free (a task
    /// a slot stage would evict to start this one there). Reserves nothing.
    pub fn fits(
        &self,
        net: &Network,
        server: ActorId,
        bandwidth: Bandwidth,
        freeing: Option<TaskId>,
    ) -> bool {
        let freed = freeing.and_then(|t| self.active.get(&t));
        core_paths(net, server).iter().any(|route| {
            route.nodes().windows(2).all(|link| {
                let Some((_, port)) = net.port_to(link[0], link[1]) else {
                    return false;
                };
                let mut used = self.ledger.on_link(net, link[0], link[1]);
                if let Some((r, bw)) = freed
                    && r.nodes().windows(2).any(|l| l == link)
                {
                    used = used.saturating_sub(bw.bps());
                }
                port.bandwidth.bps().saturating_sub(used) >= bandwidth.bps()
            })
        })
    }

    /// Whether `task` holds a reservation.
    pub fn holds(&self, task: TaskId) -> bool {
        self.active.contains_key(&task)
    }

    /// Releases the flow of `task`, if it had one.
    pub fn release(&mut self, net: &Network, task: TaskId) -> Option<(Route, Bandwidth)> {
        let (route, bandwidth) = self.active.remove(&task)?;
        self.ledger.release(net, &route, bandwidth);
        Some((route, bandwidth))
    }

    pub fn finish(&self, out: &mut Metrics) {
        out.add("flows_reserved", self.reserved);
        out.add("flows_refused", self.refused);
        let bps: u64 = self
            .active
            .values()
            .map(|(route, bw)| route.hops() as u64 * bw.bps())
            .sum();
        out.add("flows_active_end", self.active.len() as u64);
        out.add("reserved_link_bps_end", bps);
    }
}

/// Every shortest path from a core switch down to `server`, core switches
/// in id order (thesis §4.2.2: external traffic enters at the core).
fn core_paths(net: &Network, server: ActorId) -> Vec<Route> {
    net.switches()
        .iter()
        .filter(|s| s.tier == dcemu_topology::Tier::Core)
        .flat_map(|core| net.shortest_paths(core.id, server.0))
        .collect()
}
