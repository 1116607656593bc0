//! The thesis's energy-aware placements over the three-tier network
//! (`scheduler.placement = gems | gems-nosleep | gems-nonetwork | beps |
//! brfs-dot | brfs-norm | rrs`), chapters 3 and 4.
//!
//! Every time slot (`scheduler.slot_interval`) the queued tasks are taken in
//! the policy's order. A task fits a server only while the CPU and memory
//! its co-runners ask for, plus its own, stay within the server's capacity,
//! and only along a path whose links have its bandwidth free (§4.2.2); a
//! task that fits nowhere waits for the next slot. A task's bandwidth is a
//! flow size divided by its shortest execution time on the chosen server
//! (its work spread over every core of that server).
//!
//! - **GEMS** (§4.3). Phase I: tasks by memory ascending; each takes the path
//!   from a core switch to a server of least estimated energy, eq. 4.4: every
//!   node on it costs `(P_peak·T_wu + P_idle·T_x) / (N + 1)`, where `T_wu` is
//!   the node's wake-up if it sleeps (else 0), `T_x` the task's execution
//!   time on that server with its co-runners (processor sharing, eq. 6.2)
//!   and `N` the tasks already using the node. Phase II: each worker takes
//!   the least-energy path to its master's server (switches only).
//!   `gems-nosleep` is the same with servers and switches idling instead of
//!   sleeping (the run's power policy becomes `idle`); `gems-nonetwork`
//!   costs the server alone and takes random feasible paths (§4.4.2).
//! - **BEPS** (§3.3.1): tasks sorted by `scheduler.sort_by`; the path of least
//!   added energy, where a node already on adds nothing and a sleeping or
//!   idle node adds its wake-up energy and its idle power over `T_x`: tasks
//!   pack onto what is on.
//! - **BRFS** (§3.3.2): the server of best fit first (`dot`: smallest dot
//!   product of the requirement with the residual capacity, as Figure 3.4's
//!   `min b`; `norm`: smallest squared distance between them), then the
//!   BEPS path to it.
//! - **RRS** (§3.3.3): the next server in round-robin order that fits, then
//!   the BEPS path to it.
//!
//! Each policy's choice rule is a file of `policies/`; what they share,
//! `choice.rs`.
//!
//! Chapter 3 derives bandwidth from memory (§3.4); here every policy uses the
//! tasks' own flows, so that they are compared on the same workload.
//!
//! The stage is the network's controller: it keeps the one ledger of
//! reservations and tells the switches on every reserved path, which keeps
//! them on; a reservation is released when its task finishes (or is
//! killed, or evicted).
//!
//! Under `admission = "fifo"` without a slot stage the stage keeps its own
//! queue, as above. Behind ARQ or a slot stage (docs/scheduler.md, "How the
//! stages combine") that stage holds the queue and its order and decides
//! whether a task starts and whom it evicts; this one answers where:
//! [`EnergyStage::choose`] runs phase I for one task among the servers the
//! other stage allows, [`EnergyStage::start`] books it with phase II at
//! once, and [`EnergyStage::evictable`] says whether evicting a task would
//! make room for another.

mod choice;
mod ledger;
mod paths;
mod policies;
mod stage;
mod state;
mod types;

#[cfg(test)]
mod tests;

pub use stage::EnergyStage;
pub use types::{EnergyServer, Flow, Placed};
