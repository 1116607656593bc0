//! Each policy's criterion (phase I): GEMS's least shared energy, eq. 4.4
//! (§4.3; `gems-nonetwork` on the server alone, §4.4.2), BEPS's least
//! added energy (§3.3.1), BRFS's best fit (§3.3.2) and RRS's round robin
//! (§3.3.3), and the energy each node costs.

use crate::sampling::index;
use crate::task::Task;
use dcemu_topology::Route;
use rand::RngCore;

use super::paths::CoreCache;
use super::stage::EnergyStage;
use super::state::{ServerState, fits};
use super::types::{Choice, Costing, cpu_of};

impl EnergyStage {
    /// Phase I's choice for one task among the servers `allow` admits (an
    /// admission or slot stage's candidates; all of them when this stage
    /// queues by itself): the server and the path from a core switch down
    /// to it, by the policy's criterion. Books nothing.
    pub(super) fn choose_among(
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

    /// GEMS(noNetwork) knows nothing of where servers sit in the network,
    /// so among the servers of least cost it takes any, uniformly (a cold
    /// group's representative stands for all of its members).
    pub(super) fn any_tied(
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

    /// BRFS's fit of a task on a server (§3.3.2), over CPU and memory as
    /// shares of the server's capacity: smaller is better.
    pub(super) fn fit(&self, task: &Task, s: &ServerState) -> f64 {
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
}
