//! Each energy-aware placement's choice rule (phase I), one file per
//! policy behind [`ChoiceRule`]; `table.rs` maps the stage's [`Rule`]
//! (from `scheduler.placement`) to it. What the rules share (the
//! least-energy search, BEPS's path to a chosen server, the node costs)
//! is `choice.rs`'s; the queue, the ledgers and phase II are the stage's.
//!
//! - `gems.rs`: GEMS (§4.3), the least shared energy of server and path,
//!   eq. 4.4; `gems-nonetwork` (§4.4.2), the server alone and a random
//!   feasible path;
//! - `beps.rs`: BEPS (§3.3.1), the least added energy of server and path;
//! - `brfs.rs`: BRFS (§3.3.2), the best-fitting server (dot product or
//!   norm), then BEPS's path to it;
//! - `rrs.rs`: RRS (§3.3.3), the next server in round-robin order that
//!   fits, then BEPS's path to it.
//!
//! [`Rule`]: super::types::Rule

mod beps;
mod brfs;
mod gems;
mod rrs;
mod table;

pub(super) use table::rule;

use dcemu_topology::Route;
use rand::RngCore;

use crate::task::Task;

use super::stage::EnergyStage;

/// One policy's phase-I choice.
pub(super) trait ChoiceRule: Sync {
    /// The server and the path from a core switch down to it for `task`,
    /// among the servers `allow` admits; `None`: it fits nowhere now.
    /// Books nothing (it may advance the policy's own state: RRS's turn).
    /// Draws only from `rng`.
    fn choose(
        &self,
        stage: &mut EnergyStage,
        task: &Task,
        allow: &dyn Fn(u32) -> bool,
        rng: &mut dyn RngCore,
    ) -> Option<(u32, Route)>;
}
