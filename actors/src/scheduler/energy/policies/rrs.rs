//! RRS, Round Robin Scheduling (thesis §3.3.3): the next server in
//! round-robin order, from the one after the last chosen, that fits and
//! has a path with the task's bandwidth, with BEPS's path to it.

use dcemu_topology::Route;
use rand::RngCore;

use crate::scheduler::energy::stage::EnergyStage;
use crate::task::Task;

use super::ChoiceRule;

pub(super) struct Rrs;

impl ChoiceRule for Rrs {
    fn choose(
        &self,
        stage: &mut EnergyStage,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        _: &mut dyn RngCore,
    ) -> Option<(u32, Route)> {
        let n = stage.servers.len();
        let order: Vec<u32> = (0..n).map(|k| ((stage.next_rr + k) % n) as u32).collect();
        let found = stage.first_with_path(task, order, allow);
        if let Some((i, _)) = &found {
            stage.next_rr = (*i as usize + 1) % n.max(1);
        }
        found
    }
}
