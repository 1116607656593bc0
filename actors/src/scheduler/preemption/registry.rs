//! The slot-policy registry: which [`Preemption`] `scheduler.slots` names.
//! Adding a policy is its file in this folder and one line here
//! (docs/scheduler.md, "Adding a policy").
//!
//! [`SlotStage::new`] lives here rather than in `mod.rs`, because it is
//! the one place that names the policies: `mod.rs` naming them would make
//! the folder a module cycle (they implement its trait), which the layers
//! test refuses.

use crate::config::{SchedulerConfig, SlotPolicy};

use super::hybrid::Hybrid;
use super::priority::Priority;
use super::wasp::Wasp;
use super::{Preemption, SlotServer, SlotStage};

/// The registry: the policy `cfg.slots` names.
pub fn build(cfg: &SchedulerConfig) -> Box<dyn Preemption> {
    let priority = Priority {
        eviction: cfg.eviction,
    };
    let wasp = Wasp {
        base: priority,
        production: cfg.production_priority,
    };
    match cfg.slots {
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
    }
}

impl SlotStage {
    /// The slot stage `cfg.slots` names, over `servers`.
    pub fn new(cfg: &SchedulerConfig, servers: Vec<SlotServer>) -> Self {
        SlotStage::with_policy(build(cfg), cfg.eviction_threshold, servers)
    }
}
