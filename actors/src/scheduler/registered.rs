//! What the three extensible stages share about policies from outside
//! the project (docs/scheduler.md, "Adding a policy", from your own
//! crate): a process-wide [`Registry`] per stage, the rule for a name,
//! the errors, and the check of a scenario's choice.
//!
//! A crate registers an admission (`admission::register`), placement
//! (`placement::register`) or slot policy (`preemption::register`) under
//! a name; a scenario names it in that stage's key (`scheduler.admission`,
//! `scheduler.placement`, `scheduler.slots`) with its parameters in that
//! stage's own table (`[scheduler.admission_params]`,
//! `[scheduler.params]`, `[scheduler.slots_params]`: [`Stage::params`]),
//! so that two registered policies of one scenario never see each
//! other's keys.
//!
//! Names are looked up, never iterated into a run (only into "did you
//! mean …?"), so the order of registration cannot reach a result.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use crate::config::{PolicyName, Problem};

/// A stage whose policies a crate may register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Admission,
    Placement,
    Slots,
}

impl Stage {
    /// The `[scheduler]` key that names its policy.
    pub fn field(self) -> &'static str {
        match self {
            Stage::Admission => "admission",
            Stage::Placement => "placement",
            Stage::Slots => "slots",
        }
    }

    /// The `[scheduler]` table its registered policy's parameters are in.
    /// Placement's is `params`, the first one (kept as it was); the others
    /// are named after their stage's key.
    pub fn params(self) -> &'static str {
        match self {
            Stage::Admission => "admission_params",
            Stage::Placement => "params",
            Stage::Slots => "slots_params",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Admission => "admission",
            Stage::Placement => "placement",
            Stage::Slots => "slot",
        })
    }
}

/// Why a policy could not be registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegisterError {
    #[error("{name:?} is the name of a built-in {stage} policy")]
    BuiltIn { stage: Stage, name: String },
    #[error("a {stage} policy named {name:?} is registered already")]
    Taken { stage: Stage, name: String },
    #[error(
        "{0:?} is not a policy name: 1-64 ASCII letters, digits, '-' and '_', starting with a letter"
    )]
    Invalid(String),
}

/// A scenario names a policy this process has not registered (the model
/// is built from a scenario that was not validated in this process).
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("scheduler.{}: no {stage} policy named {name:?} is registered in this process", stage.field())]
pub struct UnknownPolicy {
    pub stage: Stage,
    pub name: String,
}

/// The policies of one stage registered in this process, by name.
pub struct Registry<P: ?Sized> {
    stage: Stage,
    all: RwLock<BTreeMap<String, Arc<P>>>,
}

impl<P: ?Sized> Registry<P> {
    pub const fn new(stage: Stage) -> Self {
        Registry {
            stage,
            all: RwLock::new(BTreeMap::new()),
        }
    }

    /// Adds `policy` under `name`; `built_in`: the name is one of the
    /// stage's own (as the scenario's key would read it).
    pub fn register(
        &self,
        name: &str,
        built_in: bool,
        policy: Arc<P>,
    ) -> Result<(), RegisterError> {
        let valid = (1..=64).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(RegisterError::Invalid(name.to_string()));
        }
        let stage = self.stage;
        if built_in {
            return Err(RegisterError::BuiltIn {
                stage,
                name: name.to_string(),
            });
        }
        let mut all = self.all.write().unwrap_or_else(|e| e.into_inner());
        if all.contains_key(name) {
            return Err(RegisterError::Taken {
                stage,
                name: name.to_string(),
            });
        }
        all.insert(name.to_string(), policy);
        Ok(())
    }

    /// The policy registered under `name`, if any.
    pub fn get(&self, name: PolicyName) -> Option<Arc<P>> {
        let all = self.all.read().unwrap_or_else(|e| e.into_inner());
        all.get(name.as_str()).cloned()
    }

    /// The policy `name` gives, or why there is none.
    pub fn find(&self, name: PolicyName) -> Result<Arc<P>, UnknownPolicy> {
        self.get(name).ok_or_else(|| UnknownPolicy {
            stage: self.stage,
            name: name.to_string(),
        })
    }

    /// Every registered name, sorted (for "did you mean …?").
    pub fn names(&self) -> Vec<String> {
        let all = self.all.read().unwrap_or_else(|e| e.into_inner());
        all.keys().cloned().collect()
    }

    /// Problems with a scenario's choice for this stage: `custom` is the
    /// registered name its key gives (`None`: a built-in policy), `params`
    /// the stage's table, `check` the policy's own check of it. The name
    /// must be registered; its parameters pass its check; the table is for
    /// a registered policy only. Field paths are relative to `[scheduler]`.
    pub fn problems(
        &self,
        custom: Option<PolicyName>,
        params: &toml::Table,
        check: impl FnOnce(&P, &toml::Table) -> Vec<Problem>,
    ) -> Vec<Problem> {
        let stage = self.stage;
        match custom {
            Some(name) => match self.get(name) {
                Some(policy) => check(&policy, params)
                    .into_iter()
                    .map(|(field, why)| (format!("{}.{field}", stage.params()), why))
                    .collect(),
                None => vec![(
                    stage.field().to_string(),
                    format!(
                        "no {stage} policy named {:?} is built in or registered",
                        name.as_str()
                    ),
                )],
            },
            None if !params.is_empty() => vec![(
                stage.params().to_string(),
                format!(
                    "only a registered {stage} policy reads [scheduler.{}]",
                    stage.params()
                ),
            )],
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Named: Send + Sync {
        fn check(&self, params: &toml::Table) -> Vec<Problem>;
    }

    struct NoParams;

    impl Named for NoParams {
        fn check(&self, params: &toml::Table) -> Vec<Problem> {
            params
                .keys()
                .map(|k| (k.clone(), "no parameters".to_string()))
                .collect()
        }
    }

    #[test]
    fn names_are_checked_and_each_stage_has_its_own_table() {
        let reg: Registry<dyn Named> = Registry::new(Stage::Admission);
        assert_eq!(
            reg.register("9lives", false, Arc::new(NoParams)),
            Err(RegisterError::Invalid("9lives".into()))
        );
        assert_eq!(
            reg.register("fifo", true, Arc::new(NoParams)),
            Err(RegisterError::BuiltIn {
                stage: Stage::Admission,
                name: "fifo".into()
            })
        );
        reg.register("mine", false, Arc::new(NoParams))
            .expect("a new name");
        assert!(matches!(
            reg.register("mine", false, Arc::new(NoParams)),
            Err(RegisterError::Taken { .. })
        ));
        assert_eq!(reg.names(), vec!["mine".to_string()]);
        let mut params = toml::Table::new();
        let mine = Some(PolicyName::new("mine"));
        assert!(reg.problems(mine, &params, |p, t| p.check(t)).is_empty());
        params.insert("colour".into(), toml::Value::Integer(1));
        assert_eq!(
            reg.problems(mine, &params, |p, t| p.check(t)),
            vec![(
                "admission_params.colour".to_string(),
                "no parameters".to_string()
            )]
        );
        assert_eq!(
            reg.problems(None, &params, |p, t| p.check(t))[0].0,
            "admission_params"
        );
        let nobody = Some(PolicyName::new("nobody"));
        assert_eq!(
            reg.problems(nobody, &params, |p, t| p.check(t))[0].0,
            "admission"
        );
        let e = reg.find(PolicyName::new("nobody")).err().expect("unknown");
        assert_eq!(
            e.to_string(),
            "scheduler.admission: no admission policy named \"nobody\" is registered in this process"
        );
    }
}
