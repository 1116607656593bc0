//! Placement policies from outside the project: a crate that depends on
//! dcemu registers its policy under a name ([`register`]), and a scenario
//! names it like a built-in one (`scheduler.placement = "my-policy"`, with
//! its parameters in `[scheduler.params]`). The registry (`registry.rs`)
//! builds it through [`PlacementPolicy::build`]; the scenario's validation
//! asks [`PlacementPolicy::check`] about its parameters, so their problems
//! come with the file, line and field of the built-in ones.
//!
//! A registered policy is a [`Placement`] like the built-ins: it sees the
//! same [`ClusterView`](super::ClusterView), is asked at the same points,
//! and draws randomness only from the scheduler's seeded stream (the `rng`
//! of [`Placement::place`]), so its runs keep the determinism guarantees:
//! the same digest on any partitioning, one process or several. Every
//! process that builds the model (with `dcemu coordinator` and `dcemu
//! node`, each node) must register it before it loads the scenario.
//!
//! The registry is the process's: names are looked up, never iterated
//! into a result, so the order of registration cannot reach a run.

use std::sync::Arc;

use dcemu_topology::Network;

use crate::config::{PlacementKind, PolicyName, PrimaryTenantConfig, Problem, SchedulerConfig};
use crate::scheduler::cluster_view::ServerSpec;
pub use crate::scheduler::registered::{RegisterError, UnknownPolicy};
use crate::scheduler::registered::{Registry, Stage};

use super::Placement;

/// What a registered policy is built from, once per run (each process
/// that hosts the scheduler builds it alike).
pub struct PolicyContext<'a> {
    /// The scenario's `[scheduler]`, its `params` included.
    pub scheduler: &'a SchedulerConfig,
    /// The servers, by index (the indices [`super::Choice::server`] names).
    pub servers: &'a [ServerSpec],
    /// The primary tenants, owning the first servers in order.
    pub primaries: &'a [PrimaryTenantConfig],
    /// The network the servers sit in.
    pub network: &'a Network,
}

impl PolicyContext<'_> {
    /// `[scheduler.params]`.
    pub fn params(&self) -> &toml::Table {
        &self.scheduler.params
    }
}

/// A placement policy a crate registers ([`register`]).
pub trait PlacementPolicy: Send + Sync + 'static {
    /// Problems with `[scheduler.params]`: each a field path relative to
    /// that table (`"samples"`) and why. The scenario is refused with them,
    /// at their lines. None by default.
    fn check(&self, _params: &toml::Table) -> Vec<Problem> {
        Vec::new()
    }

    /// The policy for one run. Called after [`PlacementPolicy::check`]
    /// found no problem.
    fn build(&self, ctx: &PolicyContext<'_>) -> Box<dyn Placement>;
}

static PLACEMENTS: Registry<dyn PlacementPolicy> = Registry::new(Stage::Placement);

/// Registers `policy` under `name` for this process: scenarios may then
/// say `scheduler.placement = "<name>"`. A built-in placement's name is
/// refused, and so is a name registered already.
pub fn register(name: &str, policy: impl PlacementPolicy) -> Result<(), RegisterError> {
    let parsed: Result<PlacementKind, _> =
        serde_json::from_value(serde_json::Value::String(name.to_string()));
    let built_in = !matches!(parsed, Ok(PlacementKind::Custom(_)));
    PLACEMENTS.register(name, built_in, Arc::new(policy))
}

/// The policy registered under `name`, if any.
pub fn registered(name: PolicyName) -> Option<Arc<dyn PlacementPolicy>> {
    PLACEMENTS.get(name)
}

/// The policy registered under `name`, or why there is none.
pub(super) fn find(name: PolicyName) -> Result<Arc<dyn PlacementPolicy>, UnknownPolicy> {
    PLACEMENTS.find(name)
}

/// Every registered name, sorted (for "did you mean …?").
pub fn names() -> Vec<String> {
    PLACEMENTS.names()
}

/// Problems with a scenario's choice of a registered policy: the name
/// must be registered, and its parameters pass its check; `params` is for
/// a registered policy only. Field paths are relative to `[scheduler]`.
pub fn problems(scheduler: &SchedulerConfig) -> Vec<Problem> {
    PLACEMENTS.problems(scheduler.placement.custom(), &scheduler.params, |p, t| {
        p.check(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::placement::RandomPlacement;

    struct Uniform;

    impl PlacementPolicy for Uniform {
        fn check(&self, params: &toml::Table) -> Vec<Problem> {
            params
                .keys()
                .map(|k| (k.clone(), "no parameters".to_string()))
                .collect()
        }

        fn build(&self, _: &PolicyContext<'_>) -> Box<dyn Placement> {
            Box::new(RandomPlacement)
        }
    }

    #[test]
    fn names_are_checked_as_they_are_registered() {
        assert_eq!(
            register("paragon", Uniform),
            Err(RegisterError::BuiltIn {
                stage: Stage::Placement,
                name: "paragon".into()
            })
        );
        assert_eq!(
            register("9lives", Uniform),
            Err(RegisterError::Invalid("9lives".into()))
        );
        register("custom-test-uniform", Uniform).expect("a new name");
        assert_eq!(
            register("custom-test-uniform", Uniform),
            Err(RegisterError::Taken {
                stage: Stage::Placement,
                name: "custom-test-uniform".into()
            })
        );
        assert!(names().contains(&"custom-test-uniform".to_string()));
    }

    #[test]
    fn a_scenario_names_a_registered_policy_and_gives_it_parameters() {
        register("custom-test-params", Uniform).expect("a new name");
        let kind: PlacementKind = serde_json::from_str("\"custom-test-params\"").expect("a name");
        assert_eq!(
            kind,
            PlacementKind::Custom(PolicyName::new("custom-test-params"))
        );
        assert_eq!(kind.name(), "custom-test-params");
        assert_eq!(
            serde_json::to_string(&kind).expect("serialises"),
            "\"custom-test-params\""
        );
        let built_in: PlacementKind = serde_json::from_str("\"best-fit\"").expect("a name");
        assert_eq!(built_in, PlacementKind::BestFit);
        let mut cfg = SchedulerConfig {
            placement: kind,
            ..SchedulerConfig::default()
        };
        assert!(problems(&cfg).is_empty());
        cfg.params.insert("colour".into(), toml::Value::Integer(1));
        assert_eq!(
            problems(&cfg),
            vec![("params.colour".to_string(), "no parameters".to_string())]
        );
        cfg.placement = PlacementKind::Custom(PolicyName::new("custom-test-nobody"));
        assert_eq!(problems(&cfg)[0].0, "placement");
        cfg.placement = PlacementKind::Random;
        assert_eq!(problems(&cfg)[0].0, "params");
    }
}
