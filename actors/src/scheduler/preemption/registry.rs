//! The slot-policy registry: which [`Preemption`] `scheduler.slots` names.
//! Adding a policy is its file in this folder and one line here, or, from
//! a crate of your own, [`super::register`] (docs/scheduler.md, "Adding a
//! policy").
//!
//! [`SlotStage::new`] lives here rather than in `mod.rs`, because it is
//! the one place that names the policies: `mod.rs` naming them would make
//! the folder a module cycle (they implement its trait), which the layers
//! test refuses.

use crate::config::{SchedulerConfig, SlotPolicy};

use super::custom::{PreemptionContext, UnknownPolicy, find};
use super::hybrid::Hybrid;
use super::priority::Priority;
use super::wasp::Wasp;
use super::{Preemption, SlotServer, SlotStage};

/// The registry: the policy `cfg.slots` names, over `servers`.
pub fn build(
    cfg: &SchedulerConfig,
    servers: &[SlotServer],
) -> Result<Box<dyn Preemption>, UnknownPolicy> {
    let priority = Priority {
        eviction: cfg.eviction,
    };
    let wasp = Wasp {
        base: priority,
        production: cfg.production_priority,
    };
    Ok(match cfg.slots {
        // `none` builds no slot stage (a task takes a slot per thread);
        // asked anyway, it is `priority` without sticky slots.
        SlotPolicy::None | SlotPolicy::Priority => Box::new(priority),
        SlotPolicy::Wasp => Box::new(wasp),
        SlotPolicy::Hybrid => Box::new(Hybrid {
            wasp,
            sticky: cfg.sticky_slots,
            phase: cfg.sticky_phase,
            slot_ns: cfg.slot_interval.as_nanos().max(1),
        }),
        // a policy a crate registered (`custom.rs`)
        SlotPolicy::Custom(name) => find(name)?.build(&PreemptionContext {
            scheduler: cfg,
            servers,
        }),
    })
}

impl SlotStage {
    /// The slot stage `cfg.slots` names, over `servers`.
    pub fn new(cfg: &SchedulerConfig, servers: Vec<SlotServer>) -> Result<Self, UnknownPolicy> {
        let policy = build(cfg, &servers)?;
        Ok(SlotStage::with_policy(
            policy,
            cfg.eviction_threshold,
            servers,
        ))
    }
}
