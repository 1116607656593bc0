//! What the energy-aware policies share in phase I: the dispatch to the
//! policy's own choice rule (`policies/`, one file per policy), the two
//! searches those rules are made of (the least-energy server and path,
//! GEMS's and BEPS's; the first server of an order with a best-energy
//! path, BRFS's and RRS's), and the energy each node costs (eq. 4.3-4.4
//! shared for GEMS, the marginal energy of chapter 3 for the others).

use crate::task::Task;
use dcemu_topology::Route;
use rand::RngCore;

use super::paths::CoreCache;
use super::policies::rule;
use super::stage::EnergyStage;
use super::state::{ServerState, fits};
use super::types::{Costing, cpu_of};

impl EnergyStage {
    /// Phase I's choice for one task among the servers `allow` admits (an
    /// admission or slot stage's candidates; all of them when this stage
    /// queues by itself): the server and the path from a core switch down
    /// to it, by the policy's criterion (`policies/`). Books nothing.
    pub(super) fn choose_among(
        &mut self,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        rng: &mut impl RngCore,
    ) -> Option<(u32, Route)> {
        rule(self.rule).choose(self, task, allow, rng)
    }

    /// The server and path of least energy (server plus switches, by the
    /// stage's costing) among the servers `allow` admits where `task`
    /// fits: GEMS's eq. 4.4 (§4.3) and BEPS's least added energy (§3.3.1).
    pub(super) fn least_energy_path(
        &mut self,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
    ) -> Option<(u32, Route)> {
        let cpu = cpu_of(task);
        let mut cores_cache = CoreCache::default();
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
            let Some((path_cost, route)) = self.best_path(s, bw, t_x, &mut cores_cache) else {
                continue;
            };
            let cost = server + path_cost;
            if best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, i, route));
            }
        }
        best.map(|(_, i, route)| (i, route))
    }

    /// The first server of `order` that `allow` admits, where `task` fits
    /// and a path has its bandwidth, with that path of least added energy
    /// (BEPS's, §3.3.1): how BRFS and RRS route the server they choose.
    pub(super) fn first_with_path(
        &mut self,
        task: &Task,
        order: Vec<u32>,
        allow: &dyn Fn(u32) -> bool,
    ) -> Option<(u32, Route)> {
        let cpu = cpu_of(task);
        let mut cores_cache = CoreCache::default();
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
        found
    }

    /// Energy a server adds for a task running `t_x` there (eq. 4.3 for
    /// GEMS; the marginal energy for chapter 3's policies).
    pub(super) fn server_cost(&self, s: &ServerState, t_x: f64) -> f64 {
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

    pub(super) fn switch_cost(&self, node: u32, t_x: f64) -> f64 {
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

    pub(super) fn switches_cost(&self, route: &Route, t_x: f64) -> f64 {
        route
            .nodes()
            .iter()
            .map(|&n| self.switch_cost(n, t_x))
            .sum()
    }
}
