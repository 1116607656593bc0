//! Slot policies from outside the project: a crate that depends on dcemu
//! registers its [`Preemption`] under a name ([`register`]), and a
//! scenario names it like a built-in one (`scheduler.slots =
//! "my-preemption"`, with its parameters in `[scheduler.slots_params]`).
//! The registry (`registry.rs`) builds it through
//! [`PreemptionPolicy::build`]; the scenario's validation asks
//! [`PreemptionPolicy::check`] about its parameters, so their problems
//! come with the file, line and field of the built-in ones.
//!
//! A registered policy runs inside the slot stage as `priority`, `wasp`
//! and `hybrid` do: the stage keeps the queue, the slots, the time slots
//! and the eviction threshold, and asks the policy which level a start
//! takes, whom a task that found no free slot evicts, and which running
//! tasks are sticky or protected ([`Preemption`]); it reads the slots
//! through [`super::Slots`]' queries and draws only from the scheduler's
//! seeded stream (`victim`'s `rng`), so its runs keep the determinism
//! guarantees. Every process that builds the model must register it.

use std::sync::Arc;

use crate::config::{PolicyName, Problem, SchedulerConfig, SlotPolicy};
pub use crate::scheduler::registered::{RegisterError, UnknownPolicy};
use crate::scheduler::registered::{Registry, Stage};

use super::{Preemption, SlotServer};

/// What a registered slot policy is built from, once per run.
pub struct PreemptionContext<'a> {
    /// The scenario's `[scheduler]`, its `slots_params` included (and
    /// `eviction`, the rule a policy may reuse through [`super::pick`]).
    pub scheduler: &'a SchedulerConfig,
    /// The servers as the slot stage sees them, by index.
    pub servers: &'a [SlotServer],
}

impl PreemptionContext<'_> {
    /// `[scheduler.slots_params]`.
    #[expect(
        clippy::misnamed_getters,
        reason = "every stage's context names its own table `params()`"
    )]
    pub fn params(&self) -> &toml::Table {
        &self.scheduler.slots_params
    }
}

/// A slot policy a crate registers ([`register`]).
pub trait PreemptionPolicy: Send + Sync + 'static {
    /// Problems with `[scheduler.slots_params]`: each a field path
    /// relative to that table and why. None by default.
    fn check(&self, _params: &toml::Table) -> Vec<Problem> {
        Vec::new()
    }

    /// The policy for one run. Called after [`PreemptionPolicy::check`]
    /// found no problem.
    fn build(&self, ctx: &PreemptionContext<'_>) -> Box<dyn Preemption>;
}

static SLOT_POLICIES: Registry<dyn PreemptionPolicy> = Registry::new(Stage::Slots);

/// Registers `policy` under `name` for this process: scenarios may then
/// say `scheduler.slots = "<name>"`. A built-in slot policy's name is
/// refused, and so is a name registered already.
pub fn register(name: &str, policy: impl PreemptionPolicy) -> Result<(), RegisterError> {
    let parsed: Result<SlotPolicy, _> =
        serde_json::from_value(serde_json::Value::String(name.to_string()));
    let built_in = !matches!(parsed, Ok(SlotPolicy::Custom(_)));
    SLOT_POLICIES.register(name, built_in, Arc::new(policy))
}

/// The policy registered under `name`, or why there is none.
pub(super) fn find(name: PolicyName) -> Result<Arc<dyn PreemptionPolicy>, UnknownPolicy> {
    SLOT_POLICIES.find(name)
}

/// Every registered name, sorted (for "did you mean …?").
pub fn names() -> Vec<String> {
    SLOT_POLICIES.names()
}

/// Problems with a scenario's choice of a registered slot policy (field
/// paths relative to `[scheduler]`): the name must be registered, its
/// parameters pass its check, and `slots_params` is for a registered
/// policy only.
pub fn problems(scheduler: &SchedulerConfig) -> Vec<Problem> {
    SLOT_POLICIES.problems(scheduler.slots.custom(), &scheduler.slots_params, |p, t| {
        p.check(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EvictionPolicy;
    use crate::kernel::{ActorId, ActorRng, Metrics, actor_rng};
    use crate::scheduler::preemption::{Scope, SlotAction, SlotStage, Slots};
    use crate::task::TaskId;

    use super::super::tests::task;

    /// Evicts the least recently started task of the lowest running
    /// class (`lrs` whatever `scheduler.eviction` says), and counts.
    struct Oldest {
        asked: std::cell::Cell<u64>,
    }

    impl Preemption for Oldest {
        fn victim(
            &self,
            priority: u8,
            slots: &Slots,
            scope: Scope<'_>,
            _: &mut ActorRng,
        ) -> Option<TaskId> {
            self.asked.set(self.asked.get() + 1);
            let lowest = slots.lowest_evictable(priority, scope)?;
            slots.by_start(lowest, scope).next()
        }

        fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId> {
            slots
                .lowest_evictable(priority, scope)
                .map_or_else(Vec::new, |c| slots.by_start(c, scope).collect())
        }

        fn eviction(&self) -> EvictionPolicy {
            EvictionPolicy::Lrs
        }

        fn finish(&self, out: &mut Metrics) {
            out.add("oldest_asked", self.asked.get());
        }
    }

    struct OldestPolicy;

    impl PreemptionPolicy for OldestPolicy {
        fn check(&self, params: &toml::Table) -> Vec<Problem> {
            params
                .keys()
                .map(|k| (k.clone(), "no parameters".to_string()))
                .collect()
        }

        fn build(&self, _: &PreemptionContext<'_>) -> Box<dyn Preemption> {
            Box::new(Oldest {
                asked: std::cell::Cell::new(0),
            })
        }
    }

    /// The stage asks the registered policy: under `mrs` (the default)
    /// the youngest would go, but the policy evicts the oldest.
    #[test]
    fn a_registered_slot_policy_decides_the_evictions() {
        assert!(matches!(
            register("hybrid", OldestPolicy),
            Err(RegisterError::BuiltIn { .. })
        ));
        register("custom-test-oldest", OldestPolicy).expect("a new name");
        let slots: SlotPolicy = serde_json::from_str("\"custom-test-oldest\"").expect("a name");
        assert_eq!(slots.name(), "custom-test-oldest");
        assert!(slots.slotted());
        let mut cfg = SchedulerConfig {
            slots,
            ..SchedulerConfig::default()
        };
        assert!(problems(&cfg).is_empty());
        cfg.slots_params
            .insert("colour".into(), toml::Value::Integer(1));
        assert_eq!(problems(&cfg)[0].0, "slots_params.colour");
        cfg.slots_params.clear();
        let server = SlotServer {
            id: ActorId(3),
            slots: 2,
            cores: 2,
            cpu_per_slot: 0.5,
        };
        let mut s = SlotStage::new(&cfg, vec![server]).expect("registered");
        let mut rng = actor_rng(1, "t");
        s.enqueue(task(1, 0, 1));
        assert_eq!(s.schedule(1, &mut rng).len(), 1);
        s.enqueue(task(2, 0, 2));
        assert_eq!(s.schedule(2, &mut rng).len(), 1);
        s.enqueue(task(3, 5, 3));
        let out = s.schedule(3, &mut rng);
        assert!(
            matches!(out.as_slice(), [SlotAction::Preempt { victim: 1, .. }]),
            "{out:?}"
        );
        let mut m = Metrics::default();
        s.finish(&mut m);
        let mut want = Metrics::default();
        for (name, n) in [
            ("preemptions", 1),
            ("preemptions_class0_victim", 1),
            ("sticky_starts", 0),
            ("sticky_starts_evicted", 0),
            ("dropped_tasks", 0),
            ("oldest_asked", 1),
        ] {
            want.add(name, n);
        }
        assert_eq!(m, want);
        cfg.slots = SlotPolicy::Custom(PolicyName::new("custom-test-nobody"));
        assert!(SlotStage::new(&cfg, Vec::new()).is_err());
    }
}
