//! Admission policies from outside the project: a crate that depends on
//! dcemu registers its policy under a name ([`register`]), and a scenario
//! names it like a built-in one (`scheduler.admission = "my-admission"`,
//! with its parameters in `[scheduler.admission_params]`). The registry
//! (`registry.rs`) builds it through [`AdmissionPolicy::build`]; the
//! scenario's validation asks [`AdmissionPolicy::check`] about its
//! parameters, so their problems come with the file, line and field of
//! the built-in ones.
//!
//! A registered admission is an [`Admission`] like `fifo`, `arq` and
//! `easy-backfill`, and holds the queue as `arq` and `easy-backfill` do:
//! the scheduler offers it every task that is ready to be placed, asks it
//! to [`Admission::schedule`] at every event that may make room (and at
//! its [`Admission::next_wakeup`]), and it places tasks through the
//! callback, in its order and within its scopes, whatever the placement
//! and the slot stage. It decides from what it is given (virtual time,
//! the tasks, the pools' state), never from a clock or the process, so
//! its runs keep the determinism guarantees: the same digest on any
//! partitioning, one process or several. (No built-in admission draws at
//! random, so the trait passes no random stream; randomness is the
//! placement's.) Every process that builds the model must register it.

use std::sync::Arc;

use crate::config::{AdmissionKind, PolicyName, Problem, SchedulerConfig};
use crate::scheduler::cluster_view::ServerSpec;
pub use crate::scheduler::registered::{RegisterError, UnknownPolicy};
use crate::scheduler::registered::{Registry, Stage};

use super::Admission;

/// What a registered admission is built from, once per run.
pub struct AdmissionContext<'a> {
    /// The scenario's `[scheduler]`, its `admission_params` included.
    pub scheduler: &'a SchedulerConfig,
    /// The servers, by index.
    pub servers: &'a [ServerSpec],
}

impl AdmissionContext<'_> {
    /// `[scheduler.admission_params]`.
    #[expect(
        clippy::misnamed_getters,
        reason = "every stage's context names its own table `params()`"
    )]
    pub fn params(&self) -> &toml::Table {
        &self.scheduler.admission_params
    }
}

/// An admission policy a crate registers ([`register`]).
pub trait AdmissionPolicy: Send + Sync + 'static {
    /// Problems with `[scheduler.admission_params]`: each a field path
    /// relative to that table and why. The scenario is refused with them,
    /// at their lines. None by default.
    fn check(&self, _params: &toml::Table) -> Vec<Problem> {
        Vec::new()
    }

    /// The policy for one run. Called after [`AdmissionPolicy::check`]
    /// found no problem.
    fn build(&self, ctx: &AdmissionContext<'_>) -> Box<dyn Admission>;
}

static ADMISSIONS: Registry<dyn AdmissionPolicy> = Registry::new(Stage::Admission);

/// Registers `policy` under `name` for this process: scenarios may then
/// say `scheduler.admission = "<name>"`. A built-in admission's name is
/// refused, and so is a name registered already.
pub fn register(name: &str, policy: impl AdmissionPolicy) -> Result<(), RegisterError> {
    let parsed: Result<AdmissionKind, _> =
        serde_json::from_value(serde_json::Value::String(name.to_string()));
    let built_in = !matches!(parsed, Ok(AdmissionKind::Custom(_)));
    ADMISSIONS.register(name, built_in, Arc::new(policy))
}

/// The policy registered under `name`, or why there is none.
pub(super) fn find(name: PolicyName) -> Result<Arc<dyn AdmissionPolicy>, UnknownPolicy> {
    ADMISSIONS.find(name)
}

/// Every registered name, sorted (for "did you mean …?").
pub fn names() -> Vec<String> {
    ADMISSIONS.names()
}

/// Problems with a scenario's choice of a registered admission (field
/// paths relative to `[scheduler]`): the name must be registered, its
/// parameters pass its check, and `admission_params` is for a registered
/// policy only.
pub fn problems(scheduler: &SchedulerConfig) -> Vec<Problem> {
    ADMISSIONS.problems(
        scheduler.admission.custom(),
        &scheduler.admission_params,
        |p, t| p.check(t),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::admission::Fifo;

    struct Plain;

    impl AdmissionPolicy for Plain {
        fn check(&self, params: &toml::Table) -> Vec<Problem> {
            params
                .keys()
                .map(|k| (k.clone(), "no parameters".to_string()))
                .collect()
        }

        fn build(&self, _: &AdmissionContext<'_>) -> Box<dyn Admission> {
            Box::new(Fifo::default())
        }
    }

    #[test]
    fn a_scenario_names_a_registered_admission_and_gives_it_parameters() {
        assert!(matches!(
            register("easy-backfill", Plain),
            Err(RegisterError::BuiltIn { .. })
        ));
        register("custom-test-admission", Plain).expect("a new name");
        let kind: AdmissionKind =
            serde_json::from_str("\"custom-test-admission\"").expect("a name");
        assert_eq!(
            kind,
            AdmissionKind::Custom(PolicyName::new("custom-test-admission"))
        );
        assert_eq!(kind.name(), "custom-test-admission");
        let arq: AdmissionKind = serde_json::from_str("\"arq\"").expect("a name");
        assert_eq!(arq, AdmissionKind::Arq);
        let mut cfg = SchedulerConfig {
            admission: kind,
            ..SchedulerConfig::default()
        };
        assert!(problems(&cfg).is_empty());
        cfg.admission_params
            .insert("colour".into(), toml::Value::Integer(1));
        assert_eq!(
            problems(&cfg),
            vec![(
                "admission_params.colour".to_string(),
                "no parameters".to_string()
            )]
        );
        // a placement's table is not the admission's
        cfg.admission_params.clear();
        cfg.params.insert("colour".into(), toml::Value::Integer(1));
        assert!(problems(&cfg).is_empty());
        cfg.admission = AdmissionKind::Fifo;
        cfg.admission_params
            .insert("colour".into(), toml::Value::Integer(1));
        assert_eq!(problems(&cfg)[0].0, "admission_params");
    }
}
