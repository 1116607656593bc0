//! `least-work-lost`: a slot policy of this crate's that dcemu runs by
//! name (docs/scheduler.md, "Adding a policy", from your own crate).
//!
//! The thesis's `priority` (§6.2.3.3) evicts from the lowest running
//! priority class only, then by `scheduler.eviction`. This one looks at
//! every class at least `min_gap` below the evicting task's and evicts
//! the task whose execution started last among all of them (ties: the
//! lower class): the least work lost to the eviction, whatever its class,
//! as a scheduler that charges preemption by wasted work would (cf. the
//! thesis's `mrs`, within a class). Free slots are the stage's (uniformly
//! random); nothing is sticky.
//!
//! It reads only the stage's slots ([`Slots`]) and draws nothing, so its
//! runs give the same digest on any partitioning.
//! `[scheduler.slots_params]` takes `min_gap`, an integer from 1 to 255
//! (default 1: any lower class).

use std::cell::Cell;

use dcemu_actors::config::{EvictionPolicy, Problem};
use dcemu_actors::kernel::{ActorRng, Metrics};
use dcemu_actors::scheduler::preemption::{
    Preemption, PreemptionContext, PreemptionPolicy, Scope, Slots,
};
use dcemu_actors::task::TaskId;
use dcemu_topology::SimTime;

use crate::{integer, unknown_keys};

/// The name scenarios give it: `scheduler.slots = "least-work-lost"`.
pub const NAME: &str = "least-work-lost";

/// The policy for one run.
pub struct LeastWorkLost {
    min_gap: u8,
    /// Victims it chose (`lwl_victims`), and those of them above the
    /// lowest class it could evict from (`lwl_above_lowest`): choices
    /// `priority`, `wasp` and `hybrid` never make. `Cell`s, because the
    /// stage asks through `&self`; the stage is one actor's, never shared.
    victims: Cell<u64>,
    above_lowest: Cell<u64>,
}

impl LeastWorkLost {
    pub fn new(min_gap: u8) -> Self {
        LeastWorkLost {
            min_gap: min_gap.max(1),
            victims: Cell::new(0),
            above_lowest: Cell::new(0),
        }
    }

    /// The classes a task of `priority` may evict from: below
    /// `priority + 1 - min_gap`.
    fn below(&self, priority: u8) -> u8 {
        (u16::from(priority) + 1).saturating_sub(u16::from(self.min_gap)) as u8
    }

    /// Each class's task that started last, with its start, lowest class
    /// first.
    fn latest(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<(SimTime, u8, TaskId)> {
        (0..self.below(priority))
            .filter_map(|class| {
                let id = slots.by_start(class, scope).next_back()?;
                Some((slots.started(id)?, class, id))
            })
            .collect()
    }
}

impl Preemption for LeastWorkLost {
    fn victim(
        &self,
        priority: u8,
        slots: &Slots,
        scope: Scope<'_>,
        _: &mut ActorRng,
    ) -> Option<TaskId> {
        let latest = self.latest(priority, slots, scope);
        let lowest = latest.first()?.1;
        // the latest start; among equal starts the lower class
        let &(_, class, id) = latest
            .iter()
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))?;
        self.victims.set(self.victims.get() + 1);
        if class > lowest {
            self.above_lowest.set(self.above_lowest.get() + 1);
        }
        Some(id)
    }

    /// Every evictable task at least `min_gap` classes below, least
    /// recently started first.
    fn admissible(&self, priority: u8, slots: &Slots, scope: Scope<'_>) -> Vec<TaskId> {
        let mut all: Vec<(SimTime, u8, TaskId)> = (0..self.below(priority))
            .flat_map(|class| {
                slots
                    .by_start(class, scope)
                    .filter_map(move |id| Some((slots.started(id)?, class, id)))
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        all.into_iter().map(|(_, _, id)| id).collect()
    }

    /// Most recently started first, across the classes.
    fn eviction(&self) -> EvictionPolicy {
        EvictionPolicy::Mrs
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("lwl_victims", self.victims.get());
        out.add("lwl_above_lowest", self.above_lowest.get());
    }
}

/// What dcemu's registry builds the policy from.
pub struct Policy;

impl Policy {
    fn min_gap(params: &toml::Table) -> Result<u8, String> {
        integer(params, "min_gap", 1..=255, 1).map(|n| n as u8)
    }
}

impl PreemptionPolicy for Policy {
    fn check(&self, params: &toml::Table) -> Vec<Problem> {
        let mut problems = unknown_keys(NAME, params, &["min_gap"]);
        if let Err(why) = Self::min_gap(params) {
            problems.push(("min_gap".to_string(), why));
        }
        problems
    }

    fn build(&self, ctx: &PreemptionContext<'_>) -> Box<dyn Preemption> {
        Box::new(LeastWorkLost::new(Self::min_gap(ctx.params()).unwrap_or(1)))
    }
}
