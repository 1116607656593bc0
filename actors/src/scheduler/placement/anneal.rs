//! `annealing`: distributed applications placed by simulated annealing,
//! with a throughput or QoS goal (ASPLOS'16 §5), as a placement policy. The
//! policy is its [`AnnealingStage`] (`scheduler/annealing.rs`), which
//! queues the runs and places them a batch at a time on the room single
//! tasks leave, or chooses the hosts of each run a slot stage starts; the
//! scheduler reaches it through [`Placement::annealing`]. A single task
//! beside the runs takes a server uniformly at random among those with
//! its slots free (`random`'s rule: the paper places runs only).

use crate::kernel::{ActorRng, Metrics};
use crate::scheduler::annealing::AnnealingStage;

use super::{Choice, ClusterView, Placement, RandomPlacement, Request};

/// `annealing`: its stage for distributed runs, `random` for single tasks.
pub struct Annealing {
    stage: AnnealingStage,
}

impl Annealing {
    pub fn new(stage: AnnealingStage) -> Self {
        Annealing { stage }
    }
}

impl Placement for Annealing {
    fn name(&self) -> &str {
        "annealing"
    }

    /// A single task: uniformly among the servers with its slots free.
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        RandomPlacement.place(req, cluster, rng)
    }

    fn finish(&self, out: &mut Metrics) {
        self.stage.finish(out);
    }

    fn annealing(&mut self) -> Option<&mut AnnealingStage> {
        Some(&mut self.stage)
    }

    fn annealing_ref(&self) -> Option<&AnnealingStage> {
        Some(&self.stage)
    }
}
