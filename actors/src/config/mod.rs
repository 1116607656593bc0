//! The parts of a scenario that configure model actors, one file per part:
//! `[[server_types]]` (`servers.rs`), `[[tenants]]` (`tenants.rs`, its job
//! generators in `jobs.rs`),
//! `[scheduler]` (`scheduler.rs`), `[[primary_tenants]]` (`primary.rs`) and
//! `[storage]` (`storage.rs`). Every field, its default and its unit is
//! documented in `scenarios/README.md`. Plain data: no model module is
//! imported here (ARCHITECTURE.md "Layers").

mod jobs;
mod primary;
mod scheduler;
mod servers;
mod storage;
mod tenants;

pub use jobs::{
    DagHistory, DagJobsConfig, MAX_DAG_STAGES, MAX_DAG_TASKS, MAX_DAG_TEMPLATES, MAX_TASKS_PER_JOB,
    MapReduceConfig, SyntheticConfig,
};
pub use primary::{
    MAX_COPIES, PrimaryScalingConfig, PrimaryTenantConfig, UtilPattern, UtilScaling, expand_copies,
};
pub use scheduler::{
    AdmissionKind, Algorithm, AnnealingGoal, ArqHold, ArqOrder, CfDefaults, Contention, CpuSharing,
    EvictionPolicy, ExternalConfig, ExternalStage, InterferenceModel, MemoryEviction,
    PlacementKind, PolicyName, SchedulerConfig, SelectionKind, SlotConfig, SlotPolicy, SortKey,
    StickyPhase, default_dist_noise, default_dist_scale, default_iterations, default_restarts,
};
pub use servers::{ClassMix, REFERENCE_CORES, ServerClass, ServerPreset, ServerTypeConfig};
pub use storage::{MAX_REPLICAS, MAX_STORED_REPLICAS, StorageConfig, StoragePlacement};
pub use tenants::{
    AppOrder, ArrivalConfig, ArrivalProcess, DEFAULT_LOOKAHEAD, ServiceConfig, ServiceDistribution,
    TenantConfig, TenantKind,
};

/// A field-level problem: dotted path relative to the section, and why.
pub type Problem = (String, String);

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u32 {
    1
}

fn unit_speed() -> f64 {
    1.0
}

/// Names must be usable in actor names and file names.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(format!(
            "{name:?} may only contain ASCII letters, digits, '-' and '_'"
        ));
    }
    None
}
