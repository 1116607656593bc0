//! BRFS, Best Resource Fit Scheduling (thesis §3.3.2): the servers where
//! the task fits, best fit first (`brfs-dot`: the smallest dot product of
//! its requirement with the residual capacity, Figure 3.4's `min b`;
//! `brfs-norm`: the smallest squared distance between them; ties by
//! index), and the first of them with a path of the task's bandwidth,
//! with BEPS's path to it.

use dcemu_topology::Route;
use rand::RngCore;

use crate::scheduler::energy::stage::EnergyStage;
use crate::scheduler::energy::state::{ServerState, fits};
use crate::scheduler::energy::types::cpu_of;
use crate::task::Task;

use super::ChoiceRule;

/// How a fit is measured.
#[derive(Clone, Copy)]
pub(super) enum Fit {
    Dot,
    Norm,
}

pub(super) struct Brfs(pub(super) Fit);

impl Brfs {
    /// The fit of `task` on `s`, over CPU and memory as shares of the
    /// server's capacity: smaller is better.
    fn fit(&self, task: &Task, s: &ServerState) -> f64 {
        let need = [
            cpu_of(task) / s.capacity.max(f64::MIN_POSITIVE),
            task.memory_mb as f64 / s.spec.memory_mb.max(1) as f64,
        ];
        let free = [
            1.0 - s.cpu_used / s.capacity.max(f64::MIN_POSITIVE),
            1.0 - s.memory_used as f64 / s.spec.memory_mb.max(1) as f64,
        ];
        match self.0 {
            Fit::Norm => need.iter().zip(free).map(|(a, c)| (a - c) * (a - c)).sum(),
            Fit::Dot => need.iter().zip(free).map(|(a, c)| a * c).sum(),
        }
    }
}

impl ChoiceRule for Brfs {
    fn choose(
        &self,
        stage: &mut EnergyStage,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        _: &mut dyn RngCore,
    ) -> Option<(u32, Route)> {
        let cpu = cpu_of(task);
        let mut scored: Vec<(f64, u32)> = stage
            .servers
            .iter()
            .enumerate()
            .filter(|&(i, s)| allow(i as u32) && fits(task, cpu, s))
            .map(|(i, s)| (self.fit(task, s), i as u32))
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let order = scored.into_iter().map(|(_, i)| i).collect();
        stage.first_with_path(task, order, allow)
    }
}
