//! `gems`, `gems-nosleep`, `gems-nonetwork`, `beps`, `brfs-dot`,
//! `brfs-norm`, `rrs`: the thesis's energy-aware placements over the
//! three-tier network (chapters 3-4), as a placement policy. The policy is
//! its [`EnergyStage`] (`scheduler/energy/`: the bandwidth ledger, the
//! switches' and servers' states, each policy's criterion in `choice.rs`);
//! [`Placement::place`] is the policy's phase-I choice for one task among
//! the servers the request allows, and the scheduler's passes reach the
//! rest of the stage (its own queue, booking a start with its path,
//! releases) through [`Placement::energy`].

use crate::config::PlacementKind;
use crate::kernel::{ActorRng, Metrics};
use crate::scheduler::energy::EnergyStage;

use super::{Choice, ClusterView, Placement, Request};

/// An energy-aware placement: its name and its stage.
pub struct EnergyAware {
    kind: PlacementKind,
    stage: EnergyStage,
}

impl EnergyAware {
    /// The policy `kind` (one of the energy-aware ones) over `stage`.
    pub fn new(kind: PlacementKind, stage: EnergyStage) -> Self {
        debug_assert!(kind.energy_aware());
        EnergyAware { kind, stage }
    }
}

impl Placement for EnergyAware {
    fn name(&self) -> &str {
        match self.kind {
            PlacementKind::Gems => "gems",
            PlacementKind::GemsNosleep => "gems-nosleep",
            PlacementKind::GemsNonetwork => "gems-nonetwork",
            PlacementKind::Beps => "beps",
            PlacementKind::BrfsDot => "brfs-dot",
            PlacementKind::BrfsNorm => "brfs-norm",
            _ => "rrs",
        }
    }

    /// Phase I for `req.task` among the servers it may use: the server and
    /// the path from a core switch down to it, by the policy's criterion
    /// ([`EnergyStage::choose`]); books nothing. The stage keeps the path
    /// for the start the choice leads to ([`EnergyStage::take_choice`]).
    fn place(
        &mut self,
        req: &Request<'_>,
        _cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let (server, route) = self.stage.choose(req.task, &|i| req.may_use(i), rng)?;
        self.stage.keep_choice(req.task.id, server, route);
        Some(Choice::clean(server))
    }

    fn finish(&self, out: &mut Metrics) {
        self.stage.finish(out);
    }

    fn energy(&mut self) -> Option<&mut EnergyStage> {
        Some(&mut self.stage)
    }

    fn energy_ref(&self) -> Option<&EnergyStage> {
        Some(&self.stage)
    }
}
