//! BEPS, Best Energy Path Scheduling (thesis §3.3.1): the server and path
//! of least added energy, where a node already on adds nothing and a
//! sleeping or idle one its wake-up energy and its idle power over the
//! task's execution time, so tasks pack onto what is on. The search is
//! GEMS's; the stage's marginal costing (`choice.rs`) makes it BEPS's.
//! Its queue order is `scheduler.sort_by`'s (the stage's).

use dcemu_topology::Route;
use rand::RngCore;

use crate::scheduler::energy::stage::EnergyStage;
use crate::task::Task;

use super::ChoiceRule;

pub(super) struct Beps;

impl ChoiceRule for Beps {
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
