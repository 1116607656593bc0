//! Building a model: one small step per actor kind, in actor-id order.
//!
//! The scenario's servers are laid out first (names, ids, network), then the
//! ground truth and the shared [`World`], then each kind of actor. Nothing
//! here draws from a stream other than the catalog's own (`"catalog"`), so
//! the build is the same on every partitioning.

use std::sync::Arc;

use dcemu_topology::{Attach, Network, PowerPolicy, SimTime};

use super::{BuildError, Model, ModelSpec, Node, host_attachments};
use crate::config::{PlacementKind, ServerTypeConfig};
use crate::ground_truth::{AppProfile, Latent, NonCatalog, generate_with_latent, stats};
use crate::kernel::{ActorId, actor_rng};
use crate::namenode::{self, NameNode};
use crate::primary::PrimaryTenant;
use crate::scheduler::{Scheduler, ServerSpec};
use crate::server::Server;
use crate::slot_plan::{self, Slots as SlotPlan};
use crate::switch::Switch;
use crate::tenant::WorkloadTenant;
use crate::trace_formats::TraceFormat;
use crate::world::{KindTruth, StorageLink, World};

/// Builds the actors of the scenario that `spec.hosts` selects, in id
/// order: the scheduler, the tenants in file order, the primary tenants,
/// the servers in file order, the name node (with `[storage]`), then the
/// switches (core, aggregation, access). Names: `scheduler`,
/// `tenant-<name>-<i>`, `primary-<name>`, `server-<index>` (zero-padded to
/// at least 4 digits), `namenode`, `switch-<tier>-<index>`. An actor not
/// selected is never built, so a node of a split run holds only its share
/// (each actor's state depends on the scenario and its own id alone).
pub fn build(spec: &ModelSpec<'_>) -> Result<Model, BuildError> {
    let (layout, network) = Layout::of(spec)?;
    let types: Vec<&ServerTypeConfig> = layout.servers.iter().map(|(_, st)| *st).collect();
    let slots = slot_plan::plan(spec.scheduler, &types, spec.tenants, spec.traces)
        .map_err(BuildError::SlotConfig)?;
    let (catalog, latent) = catalog(spec)?;
    let world = Arc::new(world(spec, &layout, network, catalog, latent, &slots));

    let want = |id: ActorId| (spec.hosts)(id);
    let mut nodes: Vec<(ActorId, Node)> = Vec::new();
    let asks_program =
        spec.scheduler.placement == PlacementKind::External || spec.scheduler.external.is_some();
    if asks_program && spec.external.is_none() {
        return Err(BuildError::NoExternalRunner);
    }
    if want(world.scheduler) {
        nodes.push((world.scheduler, scheduler(spec, &world, &layout, &slots)?));
    }
    nodes.extend(tenants(spec, &world, &want));
    nodes.extend(primary_tenants(spec, &world, &layout, &want));
    nodes.extend(servers(&world, &layout, &slots, &want));
    nodes.extend(name_node(spec, &world, &layout));
    nodes.extend(switches(&world, &layout, &want));

    let links = world
        .network
        .least_hop_latencies()
        .filter(|links| links.len() == world.names.len());
    Ok(Model {
        names: world.names.clone(),
        actors: nodes,
        lookahead: world.network.min_latency(),
        links,
        slot_table: slots.table,
    })
}

/// Who is who: every actor's name in id order and the servers with their
/// configuration.
struct Layout<'a> {
    names: Vec<String>,
    /// Each server's configuration index and configuration, in id order.
    servers: Vec<(usize, &'a ServerTypeConfig)>,
    first_server: usize,
    namenode: Option<ActorId>,
    /// Servers owned by primary tenants: the first `owned` ones.
    owned: usize,
}

impl<'a> Layout<'a> {
    /// The layout, and the network its hosts are wired into.
    fn of(spec: &ModelSpec<'a>) -> Result<(Self, Network), BuildError> {
        let mut attach = host_attachments(spec.server_types, spec.tenants, spec.primary_tenants);
        if spec.storage.is_some() {
            // the name node runs on a dedicated machine (harvesting §5.2), outside the racks
            attach.push(Attach::Core);
        }
        let network = Network::build(spec.topology, &attach)?;
        let count: u32 = spec.server_types.iter().map(|s| s.count).sum();
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
        let width = count.saturating_sub(1).to_string().len().max(4);
        let mut servers = Vec::new();
        for (class, st) in spec.server_types.iter().enumerate() {
            for _ in 0..st.count {
                names.push(format!("server-{:0width$}", servers.len()));
                servers.push((class, st));
            }
        }
        let namenode = spec.storage.map(|_| {
            names.push("namenode".to_string());
            ActorId(names.len() as u32 - 1)
        });
        names.extend(network.switches().iter().map(|s| s.name.clone()));
        let owned = spec
            .primary_tenants
            .iter()
            .map(|p| p.servers as usize)
            .sum();
        let layout = Layout {
            names,
            servers,
            first_server,
            namenode,
            owned,
        };
        Ok((layout, network))
    }

    fn server_id(&self, i: usize) -> ActorId {
        ActorId((self.first_server + i) as u32)
    }
}

/// The applications' ground truth, drawn from the `"catalog"` stream
/// (empty without `[applications]`), and its latent structure.
fn catalog(spec: &ModelSpec<'_>) -> Result<(Vec<AppProfile>, Option<Latent>), BuildError> {
    let Some(catalog) = spec.applications else {
        return Ok((Vec::new(), None));
    };
    let classes: Vec<_> = spec
        .server_types
        .iter()
        .map(ServerTypeConfig::class)
        .collect();
    generate_with_latent(catalog, &classes, &mut actor_rng(spec.seed, "catalog"))
        .map(|(apps, latent)| (apps, Some(latent)))
        .map_err(|problems| {
            let text: Vec<String> = problems.iter().map(|(f, p)| format!("{f}: {p}")).collect();
            BuildError::Catalog(text.join("; "))
        })
}

fn world(
    spec: &ModelSpec<'_>,
    layout: &Layout<'_>,
    network: Network,
    catalog: Vec<AppProfile>,
    latent: Option<Latent>,
    slots: &SlotPlan,
) -> World {
    // tasks without a catalog entry are unknown workloads over the
    // catalog's latent structure (`World::kind_truth`)
    let kinds = spec
        .applications
        .filter(|a| a.non_catalog == NonCatalog::Workloads)
        .zip(latent)
        .map(|(a, latent)| KindTruth {
            latent,
            spec: a.clone(),
            seed: spec.seed,
        });
    let truth_inputs = stats::metrics(
        &catalog,
        &spec
            .server_types
            .iter()
            .enumerate()
            .map(|(class, s)| stats::ClusterType {
                class,
                cores: s.cores(),
                count: s.count,
            })
            .collect::<Vec<_>>(),
    );
    let mut power = spec.power.clone();
    if spec.scheduler.placement == PlacementKind::GemsNosleep {
        // GEMS(noSleep) (thesis §4.4.1): idle instead of sleep.
        power.policy = PowerPolicy::Idle;
    }
    World {
        names: layout.names.clone(),
        network,
        scheduler: ActorId(0),
        power,
        power_orders: spec
            .scheduler
            .external
            .as_ref()
            .is_some_and(|e| e.stages.contains(&crate::config::ExternalStage::Power)),
        packet_logs: spec.packet_logs,
        catalog,
        kinds,
        memory_eviction: spec.scheduler.memory_eviction,
        resume: spec.scheduler.resume,
        max_core_speed: spec
            .server_types
            .iter()
            .map(|s| s.core_speed)
            .fold(1.0, f64::max),
        cpu_sharing: spec.scheduler.cpu_sharing,
        strongest_capacity: spec
            .server_types
            .iter()
            .map(|s| s.core_speed * f64::from(s.cores()))
            .fold(0.0, f64::max),
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
        hpc_tenants: hpc_tenants(spec),
        truth_inputs,
        monitor_rates: spec.scheduler.detects_phases(),
        reclassify_time: spec.scheduler.reclassify_time.as_nanos(),
        profile_noise: spec.scheduler.profile_noise,
        primary_kills: spec.scheduler.placement != PlacementKind::YarnStock,
        storage: spec
            .storage
            .zip(layout.namenode)
            .map(|(s, id)| StorageLink {
                namenode: id,
                busy_above: s.busy_above,
            }),
        distributed: spec.workload.map(|w| crate::distributed::DistWorld {
            catalog: crate::distributed::truth::catalog(),
            workload: w.clone(),
        }),
    }
}

/// The ids of the workload tenants that replay an SWF log, in id order:
/// tenants come right after the scheduler, `count` of each entry.
fn hpc_tenants(spec: &ModelSpec<'_>) -> Vec<ActorId> {
    let mut next = 1u32;
    let mut out = Vec::new();
    for t in spec.tenants {
        let ids = next..next.saturating_add(t.count);
        next = ids.end;
        if t.arrivals.format == TraceFormat::Swf {
            out.extend(ids.map(ActorId));
        }
    }
    out
}

fn scheduler(
    spec: &ModelSpec<'_>,
    world: &Arc<World>,
    layout: &Layout<'_>,
    slots: &SlotPlan,
) -> Result<Node, BuildError> {
    let servers: Vec<ServerSpec> = layout
        .servers
        .iter()
        .enumerate()
        .map(|(i, (class, st))| ServerSpec {
            id: layout.server_id(i),
            slots: slots.per_server[i],
            cores: st.cores(),
            class: *class,
            memory_mb: st.memory_mb(),
            core_speed: st.core_speed,
            idle_w: st.power().idle_w,
            peak_w: st.power().peak(),
        })
        .collect();
    Ok(Node::Scheduler(Box::new(Scheduler::new(
        world.clone(),
        spec.scheduler,
        &servers,
        spec.primary_tenants,
        spec.tenants.iter().any(|t| t.flow_bandwidth.is_some()),
        spec.external
            .filter(|_| spec.scheduler.external.is_some())
            .map(|make| make()),
    )?)))
}

/// Workload tenants, `count` of each `[[tenants]]` entry, numbered across
/// entries (their task-id blocks).
fn tenants<'a>(
    spec: &'a ModelSpec<'_>,
    world: &'a Arc<World>,
    want: &'a dyn Fn(ActorId) -> bool,
) -> impl Iterator<Item = (ActorId, Node)> + 'a {
    spec.tenants
        .iter()
        .enumerate()
        .flat_map(move |(i, t)| {
            let trace = spec.traces.get(i).cloned().flatten();
            let stream = spec.streams.get(i).cloned().flatten();
            (0..t.count).map(move |_| (t, trace.clone(), stream.clone()))
        })
        .enumerate()
        .filter(move |(ordinal, _)| want(ActorId(1 + *ordinal as u32)))
        .map(move |(ordinal, (t, trace, stream))| {
            let tenant =
                WorkloadTenant::new(world.clone(), t, (trace, stream), ordinal as u64, spec.end);
            (ActorId(1 + ordinal as u32), Node::Tenant(tenant))
        })
}

/// Primary tenants, each owning the next `servers` servers in id order.
fn primary_tenants(
    spec: &ModelSpec<'_>,
    world: &Arc<World>,
    layout: &Layout<'_>,
    want: &dyn Fn(ActorId) -> bool,
) -> Vec<(ActorId, Node)> {
    let tenants: u32 = spec.tenants.iter().map(|t| t.count).sum();
    let mut first = 0;
    let mut out = Vec::new();
    for (p, cfg) in spec.primary_tenants.iter().enumerate() {
        let id = ActorId(1 + tenants + p as u32);
        if !want(id) {
            first += cfg.servers as usize;
            continue;
        }
        let owned: Vec<(ActorId, u32)> = (first..first + cfg.servers as usize)
            .filter_map(|i| {
                layout
                    .servers
                    .get(i)
                    .map(|(_, st)| (layout.server_id(i), st.cores()))
            })
            .collect();
        first += cfg.servers as usize;
        out.push((
            id,
            Node::Primary(PrimaryTenant::new(world.clone(), cfg, owned)),
        ));
    }
    out
}

fn servers(
    world: &Arc<World>,
    layout: &Layout<'_>,
    slots: &SlotPlan,
    want: &dyn Fn(ActorId) -> bool,
) -> Vec<(ActorId, Node)> {
    layout
        .servers
        .iter()
        .enumerate()
        .filter(|(i, _)| want(layout.server_id(*i)))
        .map(|(i, (class, st))| {
            let server = Server::new(
                world.clone(),
                st,
                slots.per_server[i],
                *class,
                i < layout.owned,
            );
            (layout.server_id(i), Node::Server(Box::new(server)))
        })
        .collect()
}

/// The name node with the block storage of every server's harvested disk,
/// when the scenario has `[storage]`.
fn name_node(
    spec: &ModelSpec<'_>,
    world: &Arc<World>,
    layout: &Layout<'_>,
) -> Option<(ActorId, Node)> {
    let cfg = spec.storage?;
    let id = layout.namenode?;
    if !(spec.hosts)(id) {
        return None;
    }
    let disk_mb: Vec<u64> = layout
        .servers
        .iter()
        .map(|(_, st)| crate::sampling::to_nanos(st.disk_gb.unwrap_or(1000.0) * 1024.0))
        .collect();
    let mut owners = vec![None; layout.servers.len()];
    let mut next = 0usize;
    for (p, primary) in spec.primary_tenants.iter().enumerate() {
        for o in owners.iter_mut().skip(next).take(primary.servers as usize) {
            *o = Some(p);
        }
        next += primary.servers as usize;
    }
    let first = layout.first_server as u32;
    let cluster = namenode::cluster(
        &world.network,
        first,
        &disk_mb,
        &owners,
        spec.primary_tenants,
        cfg,
    );
    let node = NameNode::new(world.clone(), cfg, cluster, first, spec.end);
    Some((id, Node::NameNode(Box::new(node))))
}

fn switches(
    world: &Arc<World>,
    layout: &Layout<'_>,
    want: &dyn Fn(ActorId) -> bool,
) -> Vec<(ActorId, Node)> {
    let first = layout.names.len() - world.network.switches().len();
    world
        .network
        .switches()
        .iter()
        .enumerate()
        .map(|(k, info)| (ActorId((first + k) as u32), info))
        .filter(|(id, _)| want(*id))
        .map(|(id, info)| (id, Node::Switch(Switch::new(world.clone(), info))))
        .collect()
}
