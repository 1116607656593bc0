//! `random`: the application-agnostic baseline.

use crate::kernel::ActorRng;
use crate::sampling::index;

use super::{Choice, ClusterView, Placement, Request};

/// `random`: uniformly among servers with as many free slots as the task
/// has threads.
pub struct RandomPlacement;

impl Placement for RandomPlacement {
    fn name(&self) -> &str {
        "random"
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let fits: Vec<u32> = req.fitting(cluster, false).collect();
        (!fits.is_empty()).then(|| Choice::clean(fits[index(rng, fits.len() as u32) as usize]))
    }
}
