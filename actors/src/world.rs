//! What every actor knows about the run it is part of: built once by
//! [`crate::model::build`], then shared read-only.

use dcemu_topology::{Network, PowerConfig, SimTime};

use crate::config::MemoryEviction;
use crate::ground_truth::AppProfile;
use crate::kernel::ActorId;

/// What every actor knows about the run it is part of (immutable, shared).
#[derive(Debug)]
pub struct World {
    /// Actor names by id.
    pub names: Vec<String>,
    pub network: Network,
    pub scheduler: ActorId,
    pub power: PowerConfig,
    /// Log every packet delivery (hosts) and forward (switches).
    pub packet_logs: bool,
    /// The applications' ground truth (empty without `[applications]`);
    /// only servers and tenants read it, never the scheduler.
    pub catalog: Vec<AppProfile>,
    /// What a server does when a task's memory cannot be satisfied.
    pub memory_eviction: MemoryEviction,
    /// Evicted tasks keep their progress (resume) or lose it (non-resume).
    pub resume: bool,
    /// Speed of the fastest core in the datacenter (for memory checkpoints).
    pub max_core_speed: f64,
    /// How often servers report to the scheduler (0: never).
    pub report_interval: SimTime,
    /// Slots of the largest server: no task takes more.
    pub max_slots: u32,
    /// Cores of all servers together (Paragon §5 measures load against it).
    pub cluster_cores: u64,
    /// From the earliest start to the latest stop of the tenants that submit
    /// catalog applications: the window `offered_load` averages over.
    pub app_window: (SimTime, SimTime),
    /// The catalog's input statistics against this cluster (Paragon §2.2),
    /// as metric name and value; grading only, emitted by the scheduler.
    pub truth_inputs: Vec<(&'static str, f64)>,
    /// Servers send each running application's progress rate with their
    /// reports (the scheduler detects phases from it, Paragon §3.4).
    pub monitor_rates: bool,
    /// How long an in-vivo reclassification takes on a server (§3.4).
    pub reclassify_time: SimTime,
    /// Relative noise of a profiling measurement (`scheduler.profile_noise`).
    pub profile_noise: f64,
    /// Servers kill secondary tasks to keep their primary tenant's reserve
    /// (harvesting §5.3); not under `yarn-stock`, whose node managers do
    /// not know the primary tenants.
    pub primary_kills: bool,
    /// The name node and the busy rule, when the scenario has `[storage]`.
    pub storage: Option<StorageLink>,
    /// Distributed applications' ground truth and `[workload]`, when the
    /// scenario has that section; servers and tenants read it, never the
    /// scheduler.
    pub distributed: Option<crate::distributed::DistWorld>,
}

impl World {
    pub fn name(&self, id: ActorId) -> &str {
        self.names.get(id.index()).map_or("?", String::as_str)
    }
}

/// What a server needs to know to act as a data node of the run's storage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StorageLink {
    pub namenode: ActorId,
    pub busy_above: Option<f64>,
}

impl StorageLink {
    /// §5.4: a data node is busy, and denies accesses, while serving one
    /// would eat into its primary tenant's reserve, that is while the primary
    /// uses more than `cores − reserve` cores (8 of 12 with §6.1's reserve:
    /// §6.4's 66 %); with `storage.busy_above`, while it uses more than that
    /// share of the cores.
    pub fn busy(&self, primary_cores: u32, reserve: u32, cores: u32) -> bool {
        match self.busy_above {
            Some(share) => f64::from(primary_cores) > share * f64::from(cores),
            None => primary_cores.saturating_add(reserve) > cores,
        }
    }
}
