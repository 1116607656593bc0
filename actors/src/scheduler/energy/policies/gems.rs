//! GEMS (thesis §4.3), phase I: the path from a core switch to a server
//! of least estimated energy, eq. 4.4 (each node on it costs its wake-up
//! and idle energy over the task's execution time, shared with the tasks
//! already using it: the stage's shared costing, `choice.rs`).
//! `gems-nosleep` is the same rule (its nodes idle instead of sleeping).
//! `gems-nonetwork` (§4.4.2) costs the server alone and takes a random
//! feasible path.

use dcemu_topology::Route;
use rand::RngCore;

use crate::sampling::index;
use crate::scheduler::energy::stage::EnergyStage;
use crate::scheduler::energy::state::fits;
use crate::scheduler::energy::types::cpu_of;
use crate::task::Task;

use super::ChoiceRule;

/// `gems`, `gems-nosleep`.
pub(super) struct Gems;

impl ChoiceRule for Gems {
    fn choose(
        &self,
        stage: &mut EnergyStage,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        _: &mut dyn RngCore,
    ) -> Option<(u32, Route)> {
        stage.least_energy_path(task, allow)
    }
}

/// `gems-nonetwork`.
pub(super) struct GemsNoNetwork;

impl ChoiceRule for GemsNoNetwork {
    fn choose(
        &self,
        stage: &mut EnergyStage,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        mut rng: &mut dyn RngCore,
    ) -> Option<(u32, Route)> {
        // GEMS(noNetwork) costs the server alone (§4.4.2): a path only
        // has to exist, and the one taken is drawn at random
        let cpu = cpu_of(task);
        let mut best: Option<(f64, u32)> = None;
        for i in stage.candidates_among(allow) {
            let s = &stage.servers[i as usize];
            if !fits(task, cpu, s) {
                continue;
            }
            let cost = stage.server_cost(s, stage.exec_time(task, s));
            // the path check, the costlier, only where it could win
            if best.is_some_and(|b| cost.partial_cmp(&b.0) != Some(std::cmp::Ordering::Less))
                || !stage.has_path(s, stage.task_bps(task, s))
            {
                continue;
            }
            best = Some((cost, i));
        }
        best.and_then(|(cost, i)| {
            let i = any_tied(stage, task, cpu, cost, allow, &mut rng).unwrap_or(i);
            let s = &stage.servers[i as usize];
            let bw = stage.task_bps(task, s);
            // a feasible path exists: the draw finds one
            stage.random_path(s, bw, &mut rng).map(|route| (i, route))
        })
    }
}

/// GEMS(noNetwork) knows nothing of where servers sit in the network, so
/// among the servers of least cost it takes any, uniformly (a cold
/// group's representative stands for all of its members).
fn any_tied(
    stage: &EnergyStage,
    task: &Task,
    cpu: f64,
    cost: f64,
    allow: &dyn Fn(u32) -> bool,
    rng: &mut impl RngCore,
) -> Option<u32> {
    let mut tied: Vec<u32> = Vec::new();
    for i in stage.candidates_among(allow) {
        let s = &stage.servers[i as usize];
        if !fits(task, cpu, s) || stage.server_cost(s, stage.exec_time(task, s)) != cost {
            continue;
        }
        if stage.is_cold[i as usize] {
            let group = stage.cold.get(&s.group).into_iter().flatten();
            tied.extend(group.copied().filter(|&j| allow(j)));
        } else {
            tied.push(i);
        }
    }
    tied.retain(|&i| {
        let s = &stage.servers[i as usize];
        stage.has_path(s, stage.task_bps(task, s))
    });
    let n = tied.len() as u32;
    (n > 0).then(|| tied[index(rng, n) as usize])
}
