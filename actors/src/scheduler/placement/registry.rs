//! The placement registry: which policy `scheduler.placement` names. Adding
//! a policy is its file in this folder and one line here
//! (docs/scheduler.md, "Adding a policy").

use crate::config::{ExternalStage, PlacementKind, PrimaryTenantConfig, SchedulerConfig};
use crate::scheduler::cluster_view::ServerSpec;

use super::paragon::{Awareness, ParagonPlacement};
use super::yarn::{YarnH, YarnPt, YarnStock};
use super::{BestFit, External, LeastLoaded, Placement, RandomPlacement};
use crate::external::Oracle;

/// The registry: the policy `cfg.placement` names, over `servers` (whose
/// first ones the `primaries` own, in order); `oracle` runs the program of
/// `[scheduler.external]`. A program that does not decide placement
/// (`stages = ["preemption"]`) gets the built-in placement beside it
/// ([`External`] with an inner placement).
pub fn build(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
    primaries: &[PrimaryTenantConfig],
    oracle: Option<Box<dyn Oracle>>,
) -> Box<dyn Placement> {
    match &cfg.external {
        Some(e)
            if cfg.placement != PlacementKind::External
                && !e.stages.contains(&ExternalStage::Placement) =>
        {
            let inner = builtin(cfg, servers, primaries, None);
            Box::new(External::new(e, servers, primaries, oracle, Some(inner)))
        }
        _ => builtin(cfg, servers, primaries, oracle),
    }
}

/// The policy `cfg.placement` names by itself.
fn builtin(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
    primaries: &[PrimaryTenantConfig],
    oracle: Option<Box<dyn Oracle>>,
) -> Box<dyn Placement> {
    let paragon = |awareness| {
        Box::new(ParagonPlacement::new(
            awareness,
            cfg.selection,
            cfg.samples,
            cfg.max_steps,
        ))
    };
    match cfg.placement {
        PlacementKind::Random => Box::new(RandomPlacement),
        PlacementKind::LeastLoaded => Box::new(LeastLoaded),
        PlacementKind::BestFit => Box::new(BestFit),
        PlacementKind::YarnStock => Box::new(YarnStock),
        PlacementKind::YarnPt => Box::new(YarnPt::new(servers)),
        PlacementKind::YarnH => Box::new(YarnH::new(servers, primaries, cfg)),
        PlacementKind::Paragon => paragon(Awareness::Full),
        PlacementKind::ParagonNh => paragon(Awareness::InterferenceOnly),
        PlacementKind::ParagonNi => paragon(Awareness::HeterogeneityOnly),
        PlacementKind::External => match &cfg.external {
            Some(e) => Box::new(External::new(e, servers, primaries, oracle, None)),
            None => Box::new(RandomPlacement),
        },
        // The energy-aware and annealing stages place by themselves (the
        // scheduler's `energy` and `annealing`); this one is never asked.
        PlacementKind::Gems
        | PlacementKind::GemsNonetwork
        | PlacementKind::GemsNosleep
        | PlacementKind::Beps
        | PlacementKind::BrfsDot
        | PlacementKind::BrfsNorm
        | PlacementKind::Rrs
        | PlacementKind::Annealing => Box::new(RandomPlacement),
    }
}
