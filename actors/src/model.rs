//! Today's model: what crosses between actors and how the actors of a
//! scenario are built, named and wired.

use std::sync::Arc;

use dcemu_topology::{
    Attach, Network, NetworkError, PowerConfig, PowerPolicy, SimTime, TopologyConfig,
};

use crate::ground_truth::{AppProfile, CatalogSpec, generate};
use crate::kernel::actor_rng;
use crate::trace::TraceTask;
use serde::{Deserialize, Serialize};

use crate::config::StorageConfig;
use crate::config::{
    MemoryEviction, PlacementKind, PrimaryTenantConfig, SchedulerConfig, ServerTypeConfig,
    TenantConfig,
};
use crate::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use crate::namenode::{NameNode, StorageLink};
use crate::net::Packet;
use crate::primary::PrimaryTenant;
use crate::scheduler::{Scheduler, ServerSpec};
use crate::server::Server;
use crate::slot_plan;
use crate::switch::Switch;
use crate::tenant::WorkloadTenant;

/// Globally unique task id: `tenant_ordinal * TASK_ID_BLOCK + sequence`, so
/// ids stay short and readable in logs yet never collide across tenants.
pub type TaskId = u64;
pub const TASK_ID_BLOCK: u64 = 1_000_000_000;

/// A unit of work as the scheduler and servers see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    pub tenant: ActorId,
    pub submitted_at: SimTime,
    /// Work of the task: the time it runs alone on one full core of speed 1.
    pub service_ns: u64,
    /// Bandwidth its traffic to the outside world needs while it runs (0: none).
    pub flow_bps: u64,
    /// The catalog application it runs, if any (its ground truth then sets
    /// its speed and interference; `service_ns` is its ideal time).
    pub app: Option<u32>,
    /// Priority class, 0 (lowest) to 11 (Google trace, thesis Table 5.2).
    pub priority: u8,
    /// Average memory it uses once fully grown (thesis §6.2.3.4), MB.
    pub memory_mb: u64,
    /// Threads: it takes this many slots and runs on at most this many cores.
    pub cores: u32,
    /// When it first started running; kept across migrations and
    /// evictions, so that performance is measured over its whole execution.
    pub first_start: Option<SimTime>,
    /// Its full work (`service_ns` at submission; `service_ns` shrinks to
    /// what is left when a migrated or resumed task restarts).
    pub total_ns: u64,
    /// Time the work it finished on the servers it left (migrated or
    /// resumed elsewhere) would have taken there alone, at its ground-truth
    /// speed on each: grading only (Paragon Fig. 9's platform share, see
    /// `Server::complete`), never read by a scheduler.
    #[serde(default)]
    pub solo_ns: u64,
    /// Times it was evicted so far, for any reason (priority or memory;
    /// thesis §6.2.3), and of those, for a higher priority task.
    pub evictions: u32,
    pub priority_evictions: u32,
    /// CPU the task asks for, in millionths of the reference machine's
    /// normalised capacity (thesis §3.1, §4.2.1: 1.0 = type D); 0 when it
    /// declares none. Energy-aware placements admit a task on a server only
    /// while the requirements there sum to at most its capacity.
    pub cpu_ppm: u32,
    /// The MapReduce-like job it belongs to (thesis §4.2.2), if any.
    pub job: Option<JobRef>,
    /// The DAG job it belongs to (harvesting §4.1, §6.1), if any.
    pub dag: Option<crate::google::DagRef>,
    /// The distributed run it is a unit of (ASPLOS'16), if any. Always
    /// written: bincode (the wire format) has no field names, so a skipped
    /// field would make the decoder read the next value in its place.
    #[serde(default)]
    pub dist: Option<crate::distributed::DistRef>,
}

impl Task {
    /// A one-core task of `service_ns` work that nothing more is known of:
    /// no application, flow, memory, job or history yet. Tenants and tests
    /// fill in the rest with struct update syntax.
    pub fn new(id: TaskId, tenant: ActorId, submitted_at: SimTime, service_ns: u64) -> Task {
        Task {
            id,
            tenant,
            submitted_at,
            service_ns,
            flow_bps: 0,
            app: None,
            priority: 0,
            memory_mb: 0,
            cores: 1,
            first_start: None,
            total_ns: service_ns,
            solo_ns: 0,
            evictions: 0,
            priority_evictions: 0,
            cpu_ppm: 0,
            job: None,
            dag: None,
            dist: None,
        }
    }
}

/// A task's place in a MapReduce-like job (thesis §4.2.2): the job's tasks
/// arrive together, one of them is the master, and each task talks to the
/// outside world (from a core switch) and to its master while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRef {
    /// The job: its master task's id.
    pub id: TaskId,
    pub master: bool,
    /// Flow sizes of its traffic with the outside world and with its
    /// master, bytes; a placement turns them into bandwidth by dividing by
    /// the task's shortest execution time on the chosen server.
    pub external_bytes: u64,
    pub internal_bytes: u64,
}

/// Every event of the model: a packet arriving, or one of an actor's timers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// A message on the wire, arriving at its next node.
    Packet(Packet),
    /// Tenant timer: time to submit the next task.
    Arrival,
    /// Server timer: the earliest running task should have finished its work
    /// (stale unless `generation` is the server's latest).
    Progress { generation: u64 },
    /// Server or switch timer: waking from sleep is done.
    WakeDone,
    /// Switch timer: the last queued transmission has left; go idle if nothing else is on.
    IdleCheck,
    /// Primary tenant timer: time to update its utilisation.
    PrimaryTick,
    /// Primary tenant timer: a reimage event.
    ReimageTick,
    /// Scheduler timer: a killed task goes back into the queue.
    Requeue(Task),
    /// Server timer: time to report to the scheduler.
    ReportTick,
    /// Server timer: a task whose memory could not all be given at start
    /// reaches its checkpoint and needs the rest (thesis §6.2.3.4).
    MemoryCheck { task: TaskId },
    /// Scheduler timer: a new application's profiling runs are done
    /// (Paragon §2.4); it can be classified and admitted.
    Profiled(Task),
    /// Scheduler timer: a migrating application's state has been copied;
    /// it resumes on the server whose slots were reserved for it (Paragon §3.4).
    Migrated { task: Task, server: ActorId },
    /// Scheduler timer: an ARQ switching time has come (Paragon §4.2).
    AdmissionTick,
    /// Server timer: the in-vivo reclassification of a task is done (Paragon §3.4).
    Reclassified { task: TaskId },
    /// Scheduler timer: the start of a time slot, when the slot stages
    /// schedule their queue (thesis §6.2.3.2).
    SlotTick,
    /// Name node timer: each data node may send its next block copy
    /// (harvesting §5.1's re-replication budget).
    Rereplicate,
    /// Name node timer at the end of the run: the last reads are due.
    ReadTick,
    /// Coordinating server timer: a distributed run's work is done
    /// (stale unless `generation` is the run's latest).
    DistFinish { run: TaskId, generation: u64 },
    /// Scheduler timer: profiles are ready; place the queued distributed runs.
    DistPlace,
}

impl Msg {
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Packet(p) => p.body.name(),
            Msg::Arrival => "arrival",
            Msg::Progress { .. } => "progress",
            Msg::WakeDone => "wake_done",
            Msg::IdleCheck => "idle_check",
            Msg::PrimaryTick => "primary_tick",
            Msg::ReimageTick => "reimage_tick",
            Msg::Requeue(_) => "requeue",
            Msg::MemoryCheck { .. } => "memory_check",
            Msg::ReportTick => "report_tick",
            Msg::Profiled(_) => "profiled",
            Msg::Migrated { .. } => "migrated",
            Msg::AdmissionTick => "admission_tick",
            Msg::Reclassified { .. } => "reclassified",
            Msg::SlotTick => "slot_tick",
            Msg::Rereplicate => "rereplicate",
            Msg::ReadTick => "read_tick",
            Msg::DistFinish { .. } => "dist_finish",
            Msg::DistPlace => "dist_place",
        }
    }
}

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

/// The message an actor got but has no use for: a wiring bug, reported with names.
pub(crate) fn unexpected(actor: &str, what: &str) -> ModelError {
    ModelError::Invariant(format!("{actor} cannot handle a `{what}` message"))
}

/// Any actor of the model; the engine drives this one type.
pub enum Node {
    Scheduler(Box<Scheduler>),
    Tenant(WorkloadTenant),
    Primary(PrimaryTenant),
    Server(Box<Server>),
    Switch(Switch),
    NameNode(Box<NameNode>),
}

impl Actor for Node {
    type Msg = Msg;

    fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            Node::Tenant(t) => t.start(ctx),
            Node::Primary(p) => p.start(ctx),
            Node::Server(s) => s.start(ctx),
            Node::Scheduler(s) => s.start(ctx),
            Node::Switch(_) => Ok(()),
            Node::NameNode(n) => n.start(ctx),
        }
    }

    fn handle(&mut self, event: Envelope<Msg>, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            Node::Scheduler(s) => s.handle(event.payload, ctx),
            Node::Tenant(t) => t.handle(event.payload, ctx),
            Node::Primary(p) => p.handle(event.payload, ctx),
            Node::Server(s) => s.handle(event.payload, ctx),
            Node::Switch(s) => s.handle(event.payload, ctx),
            Node::NameNode(n) => n.handle(event.payload, ctx),
        }
    }

    fn finish(&mut self, undelivered: &[Envelope<Msg>], end: SimTime, out: &mut Metrics) {
        match self {
            Node::Scheduler(s) => s.finish(undelivered, out),
            Node::Tenant(t) => t.finish(out),
            Node::Primary(p) => p.finish(end, out),
            Node::Server(s) => s.finish(end, out),
            Node::Switch(s) => s.finish(end, out),
            Node::NameNode(n) => n.finish(out),
        }
        let in_flight = undelivered.iter().filter_map(|e| match &e.payload {
            Msg::Packet(p) => Some(&p.body),
            _ => None,
        });
        crate::accounting::count_in_transit(in_flight, out);
    }

    /// Servers describe their tasks and power; other actors only their kind.
    fn describe(&self) -> serde_json::Value {
        let kind = match self {
            Node::Server(s) => return s.describe(),
            Node::Scheduler(_) => "scheduler",
            Node::Tenant(_) => "tenant",
            Node::Primary(_) => "primary",
            Node::Switch(_) => "switch",
            Node::NameNode(_) => "namenode",
        };
        serde_json::json!({ "kind": kind })
    }
}

/// The model sections of a scenario.
pub struct ModelSpec<'a> {
    pub server_types: &'a [ServerTypeConfig],
    pub tenants: &'a [TenantConfig],
    pub primary_tenants: &'a [PrimaryTenantConfig],
    pub scheduler: &'a SchedulerConfig,
    pub topology: &'a TopologyConfig,
    pub power: &'a PowerConfig,
    pub packet_logs: bool,
    pub applications: Option<&'a CatalogSpec>,
    /// Per `[[tenants]]` entry: the trace it replays, if any.
    pub traces: &'a [Option<Arc<Vec<TraceTask>>>],
    pub seed: u64,
    /// End of the run: tenants without a `stop` submit until then.
    pub end: SimTime,
    /// `[storage]`: a name node and harvested block storage (harvesting §4.2).
    pub storage: Option<&'a StorageConfig>,
    /// `[workload]`: distributed applications (ASPLOS'16).
    pub workload: Option<&'a crate::distributed::WorkloadConfig>,
}

/// Why a model could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error("cannot generate the application catalog: {0}")]
    Catalog(String),
    #[error("scheduler.slot_config: {0}")]
    SlotConfig(String),
}

/// Where each host actor plugs into the network, in id order: the scheduler
/// in the first rack, workload and primary tenants outside the datacenter
/// (at the core: a primary tenant's control plane, not its servers), servers
/// in racks.
pub fn host_attachments(
    server_types: &[ServerTypeConfig],
    tenants: &[TenantConfig],
    primary_tenants: &[PrimaryTenantConfig],
) -> Vec<Attach> {
    let tenants: usize =
        tenants.iter().map(|t| t.count as usize).sum::<usize>() + primary_tenants.len();
    let servers: usize = server_types.iter().map(|s| s.count as usize).sum();
    let mut out = Vec::with_capacity(1 + tenants + servers);
    out.push(Attach::Rack);
    out.extend(std::iter::repeat_n(Attach::Core, tenants));
    out.extend(std::iter::repeat_n(Attach::Rack, servers));
    out
}

/// A model ready to run.
pub struct Model {
    /// Every actor with its name, in id order.
    pub actors: Vec<(String, Node)>,
    /// The smallest latency of any message between two actors: the engine's lookahead.
    pub lookahead: SimTime,
    /// `links[x]`: every actor `x` sends to and the least latency of that
    /// message, when messages follow a 3-tier network hop by hop; `None`
    /// when any actor may message any other (flat network).
    pub links: Option<Vec<Vec<(u32, SimTime)>>>,
    /// The slot configuration table, when `scheduler.slot_config` computed
    /// one (thesis Table 8.1).
    pub slot_table: Option<String>,
}

/// Builds every actor of the scenario, in id order: the scheduler, the
/// tenants in file order, the servers in file order, the name node (with
/// `[storage]`), then the switches (core, aggregation, access). Names:
/// `scheduler`, `tenant-<name>-<i>`, `server-<index>` (zero-padded to at
/// least 4 digits), `namenode`, `switch-<tier>-<index>`.
pub fn build(spec: &ModelSpec<'_>) -> Result<Model, BuildError> {
    let mut attach = host_attachments(spec.server_types, spec.tenants, spec.primary_tenants);
    if spec.storage.is_some() {
        // the name node runs on a dedicated machine (harvesting §5.2), outside the racks
        attach.push(Attach::Core);
    }
    let network = Network::build(spec.topology, &attach)?;
    let servers: u32 = spec.server_types.iter().map(|s| s.count).sum();
    let mut names = vec!["scheduler".to_string()];
    for t in spec.tenants {
        names.extend((0..t.count).map(|i| format!("tenant-{}-{i}", t.name)));
    }
    names.extend(
        spec.primary_tenants
            .iter()
            .map(|p| format!("primary-{}", p.name)),
    );
    let first_server = names.len();
    let width = servers.saturating_sub(1).to_string().len().max(4);
    let mut server_types = Vec::new();
    for (class, st) in spec.server_types.iter().enumerate() {
        for _ in 0..st.count {
            names.push(format!("server-{:0width$}", server_types.len()));
            server_types.push((class, st));
        }
    }
    let types: Vec<&ServerTypeConfig> = server_types.iter().map(|(_, st)| *st).collect();
    let slots = slot_plan::plan(spec.scheduler, &types, spec.tenants, spec.traces)
        .map_err(BuildError::SlotConfig)?;
    let namenode = spec.storage.map(|_| {
        names.push("namenode".to_string());
        ActorId(names.len() as u32 - 1)
    });
    names.extend(network.switches().iter().map(|s| s.name.clone()));
    let switches = network.switches().to_vec();
    let catalog = match spec.applications {
        None => Vec::new(),
        Some(catalog) => {
            let classes: Vec<_> = spec
                .server_types
                .iter()
                .map(ServerTypeConfig::class)
                .collect();
            generate(catalog, &classes, &mut actor_rng(spec.seed, "catalog")).map_err(
                |problems| {
                    let text: Vec<String> =
                        problems.iter().map(|(f, p)| format!("{f}: {p}")).collect();
                    BuildError::Catalog(text.join("; "))
                },
            )?
        }
    };
    let truth_inputs = crate::ground_truth::stats::metrics(
        &catalog,
        &spec
            .server_types
            .iter()
            .enumerate()
            .map(|(class, s)| crate::ground_truth::stats::ClusterType {
                class,
                cores: s.cores(),
                count: s.count,
            })
            .collect::<Vec<_>>(),
    );
    let world = Arc::new(World {
        names: names.clone(),
        network,
        scheduler: ActorId(0),
        power: {
            // GEMS(noSleep) (thesis §4.4.1): idle instead of sleep.
            let mut power = spec.power.clone();
            if spec.scheduler.placement == PlacementKind::GemsNosleep {
                power.policy = PowerPolicy::Idle;
            }
            power
        },
        packet_logs: spec.packet_logs,
        catalog,
        memory_eviction: spec.scheduler.memory_eviction,
        resume: spec.scheduler.resume,
        max_core_speed: spec
            .server_types
            .iter()
            .map(|s| s.core_speed)
            .fold(1.0, f64::max),
        report_interval: spec.scheduler.report_interval.as_nanos(),
        max_slots: slots.per_server.iter().copied().max().unwrap_or(1),
        app_window: spec
            .tenants
            .iter()
            .filter(|t| t.applications.is_some())
            .map(|t| {
                (
                    t.start.as_nanos(),
                    t.stop.map_or(spec.end, |d| d.as_nanos()),
                )
            })
            .fold((SimTime::MAX, 0), |(a, b), (s, e)| (a.min(s), b.max(e))),
        cluster_cores: spec
            .server_types
            .iter()
            .map(|s| u64::from(s.count) * u64::from(s.cores()))
            .sum(),
        truth_inputs,
        monitor_rates: spec.scheduler.detects_phases(),
        reclassify_time: spec.scheduler.reclassify_time.as_nanos(),
        profile_noise: spec.scheduler.profile_noise,
        primary_kills: spec.scheduler.placement != PlacementKind::YarnStock,
        storage: spec.storage.zip(namenode).map(|(s, id)| StorageLink {
            namenode: id,
            busy_above: s.busy_above,
        }),
        distributed: spec.workload.map(|w| crate::distributed::DistWorld {
            catalog: crate::distributed::truth::catalog(),
            workload: w.clone(),
        }),
    });
    let server_ids: Vec<ServerSpec> = server_types
        .iter()
        .enumerate()
        .map(|(i, (class, st))| ServerSpec {
            id: ActorId((first_server + i) as u32),
            slots: slots.per_server[i],
            cores: st.cores(),
            class: *class,
            memory_mb: st.memory_mb(),
            core_speed: st.core_speed,
            idle_w: st.power().idle_w,
            peak_w: st.power().peak(),
        })
        .collect();

    let mut nodes = Vec::with_capacity(names.len());
    nodes.push(Node::Scheduler(Box::new(Scheduler::new(
        world.clone(),
        spec.scheduler,
        &server_ids,
        spec.primary_tenants,
    ))));
    let mut ordinal = 0u64;
    for (i, t) in spec.tenants.iter().enumerate() {
        let trace = spec.traces.get(i).cloned().flatten();
        for _ in 0..t.count {
            nodes.push(Node::Tenant(WorkloadTenant::new(
                world.clone(),
                t,
                trace.clone(),
                ordinal,
                spec.end,
            )));
            ordinal += 1;
        }
    }
    let mut owner = 0;
    for cfg in spec.primary_tenants {
        let owned: Vec<(ActorId, u32)> = (owner..owner + cfg.servers as usize)
            .filter_map(|i| {
                server_types
                    .get(i)
                    .map(|(_, st)| (ActorId((first_server + i) as u32), st.cores()))
            })
            .collect();
        owner += cfg.servers as usize;
        nodes.push(Node::Primary(PrimaryTenant::new(world.clone(), cfg, owned)));
    }
    let storage_cluster = spec.storage.map(|cfg| {
        let disk_mb: Vec<u64> = server_types
            .iter()
            .map(|(_, st)| crate::sampling::to_nanos(st.disk_gb.unwrap_or(1000.0) * 1024.0))
            .collect();
        let mut owners = vec![None; server_types.len()];
        let mut next = 0usize;
        for (p, cfg) in spec.primary_tenants.iter().enumerate() {
            for o in owners.iter_mut().skip(next).take(cfg.servers as usize) {
                *o = Some(p);
            }
            next += cfg.servers as usize;
        }
        crate::namenode::cluster(
            &world.network,
            first_server as u32,
            &disk_mb,
            &owners,
            spec.primary_tenants,
            cfg,
        )
    });
    for (i, (class, st)) in server_types.into_iter().enumerate() {
        let owned = i < owner;
        nodes.push(Node::Server(Box::new(Server::new(
            world.clone(),
            st,
            slots.per_server[i],
            class,
            owned,
        ))));
    }
    if let (Some(cfg), Some(cluster)) = (spec.storage, storage_cluster) {
        nodes.push(Node::NameNode(Box::new(NameNode::new(
            world.clone(),
            cfg,
            cluster,
            first_server as u32,
            spec.end,
        ))));
    }
    for info in switches {
        nodes.push(Node::Switch(Switch::new(world.clone(), &info)));
    }
    let links = world
        .network
        .least_hop_latencies()
        .filter(|links| links.len() == names.len());
    Ok(Model {
        actors: names.into_iter().zip(nodes).collect(),
        lookahead: world.network.min_latency(),
        links,
        slot_table: slots.table,
    })
}
