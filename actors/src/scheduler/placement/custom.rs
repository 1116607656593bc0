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

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use dcemu_topology::Network;

use crate::config::{PlacementKind, PolicyName, PrimaryTenantConfig, Problem, SchedulerConfig};
use crate::scheduler::cluster_view::ServerSpec;

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

/// A scenario names a policy this process has not registered.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("scheduler.placement: no placement policy named {0:?} is registered in this process")]
pub struct UnknownPolicy(pub String);

/// Why a policy could not be registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegisterError {
    #[error("{0:?} is the name of a built-in placement")]
    BuiltIn(String),
    #[error("a placement policy named {0:?} is registered already")]
    Taken(String),
    #[error(
        "{0:?} is not a policy name: 1-64 ASCII letters, digits, '-' and '_', starting with a letter"
    )]
    Invalid(String),
}

type Registry = BTreeMap<String, Arc<dyn PlacementPolicy>>;

static PLACEMENTS: RwLock<Registry> = RwLock::new(BTreeMap::new());

/// Registers `policy` under `name` for this process: scenarios may then
/// say `scheduler.placement = "<name>"`.
pub fn register(name: &str, policy: impl PlacementPolicy) -> Result<(), RegisterError> {
    let valid = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(RegisterError::Invalid(name.to_string()));
    }
    let parsed: Result<PlacementKind, _> =
        serde_json::from_value(serde_json::Value::String(name.to_string()));
    if !matches!(parsed, Ok(PlacementKind::Custom(_))) {
        return Err(RegisterError::BuiltIn(name.to_string()));
    }
    let mut all = PLACEMENTS.write().unwrap_or_else(|e| e.into_inner());
    if all.contains_key(name) {
        return Err(RegisterError::Taken(name.to_string()));
    }
    all.insert(name.to_string(), Arc::new(policy));
    Ok(())
}

/// The policy registered under `name`, if any.
pub fn registered(name: PolicyName) -> Option<Arc<dyn PlacementPolicy>> {
    let all = PLACEMENTS.read().unwrap_or_else(|e| e.into_inner());
    all.get(name.as_str()).cloned()
}

/// Every registered name, sorted (for "did you mean …?").
pub fn names() -> Vec<String> {
    let all = PLACEMENTS.read().unwrap_or_else(|e| e.into_inner());
    all.keys().cloned().collect()
}

/// Problems with a scenario's choice of a registered policy: the name
/// must be registered, and its parameters pass its check; `params` is for
/// a registered policy only. Field paths are relative to `[scheduler]`.
pub fn problems(scheduler: &SchedulerConfig) -> Vec<Problem> {
    match scheduler.placement {
        PlacementKind::Custom(name) => match registered(name) {
            Some(policy) => policy
                .check(&scheduler.params)
                .into_iter()
                .map(|(field, why)| (format!("params.{field}"), why))
                .collect(),
            None => vec![(
                "placement".to_string(),
                format!(
                    "no placement policy named {:?} is built in or registered",
                    name.as_str()
                ),
            )],
        },
        _ if !scheduler.params.is_empty() => vec![(
            "params".to_string(),
            "only a registered placement policy reads [scheduler.params]".to_string(),
        )],
        _ => Vec::new(),
    }
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
            Err(RegisterError::BuiltIn("paragon".into()))
        );
        assert_eq!(
            register("9lives", Uniform),
            Err(RegisterError::Invalid("9lives".into()))
        );
        register("custom-test-uniform", Uniform).expect("a new name");
        assert_eq!(
            register("custom-test-uniform", Uniform),
            Err(RegisterError::Taken("custom-test-uniform".into()))
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
