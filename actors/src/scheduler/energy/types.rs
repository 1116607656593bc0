//! What the energy stage hands out and reads: servers as it sees them,
//! placements and flows, and the policies' two axes (costing, rule).

use crate::config::SortKey;
use crate::kernel::ActorId;
use crate::task::{Task, TaskId};
use dcemu_topology::{Bandwidth, Route};

/// One server as the energy stage sees it.
#[derive(Clone, Debug)]
pub struct EnergyServer {
    pub id: ActorId,
    /// Tasks it can hold at most (its slots; a task takes one here).
    pub slots: u32,
    pub cores: u32,
    pub core_speed: f64,
    pub memory_mb: u64,
    pub idle_w: f64,
    pub peak_w: f64,
}

/// A placement decided in one time slot: the task, its server, and the
/// flows to reserve (its own, and those of workers whose master it is or
/// whose master only now got a server).
#[derive(Debug)]
pub struct Placed {
    pub task: Task,
    pub server: ActorId,
    pub flows: Vec<Flow>,
}

/// A reservation of `bandwidth` along `route` for `task`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    pub task: TaskId,
    pub route: Route,
    pub bandwidth: Bandwidth,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Costing {
    /// eq. 4.4: wake-up and idle energy shared over the node's tasks.
    Shared,
    /// GEMS on servers only; paths at random.
    ServerOnly,
    /// Chapter 3: the energy a node adds, nothing if it is already on.
    Marginal,
}

/// Which policy's choice rule phase I applies (`policies/table.rs` maps
/// it to the rule's file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// `gems`, `gems-nosleep`.
    Gems,
    GemsNoNetwork,
    Beps,
    BrfsDot,
    BrfsNorm,
    Rrs,
}

/// The CPU a task asks for, normalised to the reference machine: its
/// declared requirement, or one core of the reference machine per thread.
pub(super) fn cpu_of(task: &Task) -> f64 {
    if task.cpu_ppm > 0 {
        f64::from(task.cpu_ppm) / 1e6
    } else {
        f64::from(task.cores) / 8.0
    }
}

pub(super) fn sort_value(task: &Task, key: SortKey) -> f64 {
    match key {
        SortKey::Memory => task.memory_mb as f64,
        SortKey::Cpu => cpu_of(task),
        SortKey::Network => task.job.map_or(task.flow_bps as f64, |j| {
            (j.external_bytes + j.internal_bytes) as f64
        }),
    }
}
