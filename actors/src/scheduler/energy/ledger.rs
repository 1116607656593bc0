//! Booking and releasing bandwidth on a path's links, and the warm / cold
//! sets that keep the search to servers worth evaluating.

use crate::kernel::ActorId;
use dcemu_topology::Route;

use super::stage::EnergyStage;
use super::state::SwitchState;
use super::types::Flow;

impl EnergyStage {
    pub(super) fn has_room(&self, route: &Route, bw: u64) -> bool {
        self.links
            .route(route)
            .is_some_and(|ids| ids.iter().all(|&l| self.links.fits(l, bw)))
    }

    /// Moves server `i` between the warm and cold sets after its load or
    /// its access switch's flows changed.
    pub(super) fn refresh(&mut self, i: u32) {
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
    pub(super) fn mesh_at(&self, node: u32) -> Option<u32> {
        let k = node.checked_sub(self.switch_base)?;
        self.mesh_index.get(k as usize).copied().flatten()
    }

    pub(super) fn switch(&self, node: u32) -> Option<&SwitchState> {
        node.checked_sub(self.switch_base)
            .and_then(|k| self.switches.get(k as usize))
    }

    pub(super) fn switch_mut(&mut self, node: u32) -> Option<&mut SwitchState> {
        node.checked_sub(self.switch_base)
            .and_then(|k| self.switches.get_mut(k as usize))
    }

    /// Reserves a flow on every link of its path (all or nothing) and
    /// counts it on its switches.
    pub(super) fn book(&mut self, f: &Flow) -> Result<(), ()> {
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
    pub(super) fn rebook(&mut self, f: &Flow) {
        if let Some(ids) = self.links.route(&f.route) {
            for l in ids {
                self.links.book(l, f.bandwidth.bps(), false);
            }
        }
        self.count_flow(&f.route, true);
    }

    pub(super) fn unbook(&mut self, f: &Flow) {
        if let Some(ids) = self.links.route(&f.route) {
            for l in ids {
                self.links.book(l, f.bandwidth.bps(), true);
            }
        }
        self.count_flow(&f.route, false);
    }

    pub(super) fn count_flow(&mut self, route: &Route, add: bool) {
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
}
