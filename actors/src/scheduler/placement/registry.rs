//! The placement registry: which policy `scheduler.placement` names. Adding
//! a policy is its file in this folder and one line here
//! (docs/scheduler.md, "Adding a policy").

use dcemu_topology::{Network, PowerConfig, PowerPolicy};

use crate::config::{ExternalStage, PlacementKind, PrimaryTenantConfig, SchedulerConfig};
use crate::external::Oracle;
use crate::scheduler::annealing::AnnealingStage;
use crate::scheduler::cluster_view::ServerSpec;
use crate::scheduler::energy::{EnergyServer, EnergyStage};

use super::custom::{PolicyContext, UnknownPolicy, find};
use super::paragon::{Awareness, ParagonPlacement};
use super::yarn::{YarnH, YarnPt, YarnStock};
use super::{Annealing, BestFit, EnergyAware, External, LeastLoaded, Placement, RandomPlacement};

/// The registry: the policy `cfg.placement` names, over `servers` (whose
/// first ones the `primaries` own, in order) in `network`, with the run's
/// `power` policy; `oracle` runs the program of `[scheduler.external]`. A program that does not
/// decide placement (`stages = ["preemption"]`) gets the built-in
/// placement beside it ([`External`] with an inner placement).
pub fn build(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
    primaries: &[PrimaryTenantConfig],
    oracle: Option<Box<dyn Oracle>>,
    network: &Network,
    power: &PowerConfig,
) -> Result<Box<dyn Placement>, UnknownPolicy> {
    Ok(match &cfg.external {
        Some(e)
            if cfg.placement != PlacementKind::External
                && !e.stages.contains(&ExternalStage::Placement) =>
        {
            let inner = builtin(cfg, servers, primaries, None, network, power)?;
            Box::new(External::new(e, servers, primaries, oracle, Some(inner)))
        }
        _ => builtin(cfg, servers, primaries, oracle, network, power)?,
    })
}

/// The policy `cfg.placement` names by itself.
fn builtin(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
    primaries: &[PrimaryTenantConfig],
    oracle: Option<Box<dyn Oracle>>,
    network: &Network,
    power: &PowerConfig,
) -> Result<Box<dyn Placement>, UnknownPolicy> {
    let paragon = |awareness| {
        Box::new(ParagonPlacement::new(
            awareness,
            cfg.selection,
            cfg.samples,
            cfg.max_steps,
        ))
    };
    Ok(match cfg.placement {
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
        kind @ (PlacementKind::Gems
        | PlacementKind::GemsNonetwork
        | PlacementKind::GemsNosleep
        | PlacementKind::Beps
        | PlacementKind::BrfsDot
        | PlacementKind::BrfsNorm
        | PlacementKind::Rrs) => Box::new(EnergyAware::new(
            kind,
            energy_stage(cfg, servers, network, power),
        )),
        PlacementKind::Annealing => Box::new(Annealing::new(AnnealingStage::new(cfg, servers))),
        // a policy a crate registered (`custom.rs`)
        PlacementKind::Custom(name) => {
            let policy = find(name)?;
            policy.build(&PolicyContext {
                scheduler: cfg,
                servers,
                primaries,
                network,
            })
        }
    })
}

/// The energy-aware stage over `servers` in `network`, with the power
/// policy (idle servers and switches sleep or not) and wake times.
fn energy_stage(
    cfg: &SchedulerConfig,
    servers: &[ServerSpec],
    network: &Network,
    power: &PowerConfig,
) -> EnergyStage {
    EnergyStage::new(
        cfg,
        network,
        servers
            .iter()
            .map(|s| EnergyServer {
                id: s.id,
                slots: s.slots,
                cores: s.cores,
                core_speed: s.core_speed,
                memory_mb: s.memory_mb,
                idle_w: s.idle_w,
                peak_w: s.peak_w,
            })
            .collect(),
        power.policy == PowerPolicy::Sleep,
        (power.server_wake.as_nanos(), power.switch_wake.as_nanos()),
    )
}

#[cfg(test)]
mod tests {
    use dcemu_topology::{Attach, TopologyConfig, TopologyKind};

    use super::*;
    use crate::kernel::ActorId;

    /// Every name `scheduler.placement` takes. The match is exhaustive, so
    /// a new variant cannot be left out of the test below.
    fn every_kind() -> Vec<PlacementKind> {
        use PlacementKind as K;
        let all = PlacementKind::BUILT_IN;
        for k in all {
            match k {
                K::Random
                | K::LeastLoaded
                | K::BestFit
                | K::Paragon
                | K::ParagonNh
                | K::ParagonNi
                | K::Gems
                | K::GemsNosleep
                | K::GemsNonetwork
                | K::Beps
                | K::BrfsDot
                | K::BrfsNorm
                | K::Rrs
                | K::YarnStock
                | K::YarnPt
                | K::YarnH
                | K::Annealing
                | K::External => {}
                // not built in: registered by a crate (`custom.rs`)
                K::Custom(_) => panic!("{k:?} in BUILT_IN"),
            }
        }
        all.to_vec()
    }

    /// Each registered name builds the policy that decides: the one that
    /// answers to that name, with the stage of its own where it has one
    /// (the energy-aware ones' ledger, annealing's runs) and none where it
    /// has not. No name builds a stand-in.
    #[test]
    fn each_name_builds_the_policy_that_decides() {
        let network = Network::build(
            &TopologyConfig {
                kind: TopologyKind::ThreeTier,
                core: 2,
                aggregation: 2,
                access: 2,
                ..TopologyConfig::default()
            },
            &[Attach::Rack; 4],
        )
        .expect("a small three-tier network");
        let servers: Vec<ServerSpec> = (0..4)
            .map(|i| ServerSpec {
                id: ActorId(i),
                slots: 8,
                cores: 8,
                class: 0,
                memory_mb: 16_384,
                core_speed: 1.0,
                idle_w: 100.0,
                peak_w: 200.0,
            })
            .collect();
        for kind in every_kind() {
            let cfg = SchedulerConfig {
                placement: kind,
                external: (kind == PlacementKind::External)
                    .then(|| toml::from_str("command = [\"true\"]").expect("an external table")),
                ..SchedulerConfig::default()
            };
            let policy = build(&cfg, &servers, &[], None, &network, &PowerConfig::default())
                .expect("a built-in policy");
            assert_eq!(policy.name(), kind.name(), "{kind:?}");
            assert_eq!(
                policy.energy_ref().is_some(),
                kind.energy_aware(),
                "{kind:?}"
            );
            assert_eq!(
                policy.annealing_ref().is_some(),
                kind == PlacementKind::Annealing,
                "{kind:?}"
            );
        }
    }
}
