//! How the actors of a scenario are built, named and wired into one
//! [`Node`] type that the engine drives. The types every actor shares live
//! below in their own modules ([`crate::task`], [`crate::net`],
//! [`crate::world`]) and are re-exported here for the crates that drive a
//! model.

use std::sync::Arc;

use dcemu_topology::{Attach, NetworkError, PowerConfig, SimTime, TopologyConfig};

use crate::ground_truth::CatalogSpec;
use crate::trace::TraceTask;

use crate::config::StorageConfig;
use crate::config::{PrimaryTenantConfig, SchedulerConfig, ServerTypeConfig, TenantConfig};
use crate::kernel::{Actor, Ctx, Envelope, Metrics, ModelError};
use crate::namenode::NameNode;
mod build;

pub use crate::net::Msg;
use crate::primary::PrimaryTenant;
use crate::scheduler::Scheduler;
use crate::server::Server;
use crate::switch::Switch;
pub use crate::task::{JobRef, TASK_ID_BLOCK, Task, TaskId};
use crate::tenant::WorkloadTenant;
pub use crate::world::World;
pub use build::build;

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
            Msg::Deferred { body, .. } => Some(body),
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
    /// Per `[[tenants]]` entry: every row of its trace, when something needs
    /// them all before the run (`slot_config = "wasc"`); a tenant with a
    /// stream below reads that instead.
    pub traces: &'a [Option<Arc<Vec<TraceTask>>>],
    /// Per `[[tenants]]` entry: the trace (csv or public format) it streams.
    pub streams: &'a [Option<crate::trace_formats::StreamSpec>],
    pub seed: u64,
    /// End of the run: tenants without a `stop` submit until then.
    pub end: SimTime,
    /// `[storage]`: a name node and harvested block storage (harvesting §4.2).
    pub storage: Option<&'a StorageConfig>,
    /// `[workload]`: distributed applications (ASPLOS'16).
    pub workload: Option<&'a crate::distributed::WorkloadConfig>,
    /// Runs the program of `[scheduler.external]`, when the scenario has one.
    pub external: Option<crate::external::OracleFactory<'a>>,
    /// Which actors this process builds: [`every_actor`] in one process, a
    /// node's share in a split run (the others are only named).
    pub hosts: &'a dyn Fn(crate::kernel::ActorId) -> bool,
}

/// [`ModelSpec::hosts`] of a run in one process.
pub fn every_actor(_: crate::kernel::ActorId) -> bool {
    true
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
    #[error(
        "scheduler.external: the scenario names an external scheduler but no runner for it was given"
    )]
    NoExternalRunner,
    /// `scheduler.admission`, `placement` or `slots` names a policy no
    /// crate registered in this process (`scheduler::placement::register`
    /// and its admission and preemption likes).
    #[error(transparent)]
    Policy(#[from] crate::scheduler::registered::UnknownPolicy),
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
    /// Every actor's name, in id order (hosted here or not).
    pub names: Vec<String>,
    /// The actors [`ModelSpec::hosts`] selected, in id order.
    pub actors: Vec<(crate::kernel::ActorId, Node)>,
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
