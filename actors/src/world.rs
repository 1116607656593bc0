//! What every actor knows about the run it is part of: built once by
//! [`crate::model::build`], then shared read-only.

use dcemu_topology::{Network, PowerConfig, SimTime};

use crate::config::{CpuSharing, MemoryEviction};
use crate::ground_truth::{AppProfile, CatalogSpec, Family, Latent};
use crate::kernel::{ActorId, actor_rng};
use crate::task::Kind;

/// What every actor knows about the run it is part of (immutable, shared).
#[derive(Debug)]
pub struct World {
    /// Actor names by id.
    pub names: Vec<String>,
    pub network: Network,
    pub scheduler: ActorId,
    pub power: PowerConfig,
    /// Whether servers take sleep and wake orders from the scheduler (an
    /// external program deciding power, protocol v3) and tell it when a
    /// wake-up is over ([`crate::net::Body::Awake`]).
    pub power_orders: bool,
    /// Log every packet delivery (hosts) and forward (switches).
    pub packet_logs: bool,
    /// The applications' ground truth (empty without `[applications]`);
    /// only servers and tenants read it, never the scheduler.
    pub catalog: Vec<AppProfile>,
    /// The hidden truth of tasks without a catalog entry, when the scenario
    /// has `[applications]` and `non_catalog = "workloads"` (the default):
    /// read through [`World::kind_truth`], only by servers and the
    /// profiling lab, never the scheduler.
    pub kinds: Option<KindTruth>,
    /// What a server does when a task's memory cannot be satisfied.
    pub memory_eviction: MemoryEviction,
    /// Evicted tasks keep their progress (resume) or lose it (non-resume).
    pub resume: bool,
    /// Speed of the fastest core in the datacenter (for memory checkpoints).
    pub max_core_speed: f64,
    /// How servers share their CPU among their tasks
    /// (`scheduler.cpu_sharing`).
    pub cpu_sharing: CpuSharing,
    /// Cores × core speed of the strongest server type: the normalised
    /// capacity 1.0 that tasks' `cpu_ppm` requirements refer to (thesis
    /// §3.1, §4.2.1), in cores of speed 1.
    pub strongest_capacity: f64,
    /// How often servers report to the scheduler (0: never).
    pub report_interval: SimTime,
    /// Slots of the largest server: no task takes more.
    pub max_slots: u32,
    /// Cores of all servers together (Paragon §5 measures load against it).
    pub cluster_cores: u64,
    /// The tenants replaying an SWF log, sorted: at the end of a run,
    /// servers count their tasks still running into the log's utilisation
    /// ([`crate::hpc_jobs::running_at_end`]).
    pub hpc_tenants: Vec<ActorId>,
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

    /// The distributed applications' catalog (ASPLOS'16), empty without a
    /// `[workload]`: runs of a log's parallel jobs need none.
    pub fn dist_catalog(&self) -> &[crate::distributed::truth::DistApp] {
        self.distributed.as_ref().map_or(&[], |w| &w.catalog)
    }

    /// The stable name of a kind: its tenant's name and what it is
    /// (`kind/<tenant>/task/<id>`, `kind/<tenant>/job/<id>`,
    /// `kind/<tenant>/stage/<template>.<stage>`). It names the kind's own
    /// random stream, and the logs.
    pub fn kind_name(&self, kind: Kind) -> String {
        match kind {
            Kind::Task { tenant, task } => format!("kind/{}/task/{task}", self.name(tenant)),
            Kind::Job { tenant, job } => format!("kind/{}/job/{job}", self.name(tenant)),
            Kind::Stage {
                tenant,
                template,
                stage,
            } => format!("kind/{}/stage/{template}.{stage}", self.name(tenant)),
        }
    }

    /// The hidden profile of `kind` (MODEL.md §4: every application has
    /// one), `None` without [`World::kinds`]. It is one more application of
    /// the catalog's family model ([`Latent::app`], over the same class
    /// traits and interference concepts, so collaborative filtering against
    /// the catalog's training set can find it), drawn from the kind's own
    /// stream (seed, [`World::kind_name`]): every task of the kind, on every
    /// server and partition, has the same truth, and no other stream is
    /// touched. Its family follows what the tasks are: a MapReduce job's
    /// or a DAG stage's tasks are single-node data mining, Paragon §5's
    /// I/O-bound family ("Hadoop", and §3.5's "Hadoop analytics jobs"); a
    /// task without a job takes one core (thesis §6.2.3.1), so it is
    /// single-threaded. docs/ground-truth.md "Tasks without a
    /// catalog entry".
    pub fn kind_truth(&self, kind: Kind) -> Option<AppProfile> {
        let truth = self.kinds.as_ref()?;
        let family = match kind {
            Kind::Task { .. } => Family::SingleThreaded,
            Kind::Job { .. } | Kind::Stage { .. } => Family::IoBound,
        };
        let mut rng = actor_rng(truth.seed, &self.kind_name(kind));
        Some(truth.latent.app(u32::MAX, family, &truth.spec, &mut rng))
    }
}

/// What [`World::kind_truth`] draws from: the catalog's latent structure
/// and spec (noise, phases), and the run's seed.
#[derive(Debug)]
pub struct KindTruth {
    pub latent: Latent,
    pub spec: CatalogSpec,
    pub seed: u64,
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
