//! Today's model: what crosses between actors and how the actors of a
//! scenario are built, named and wired.

use std::sync::Arc;

use dcemu_topology::{Network, SimTime};
use serde::{Deserialize, Serialize};

use crate::config::{SchedulerConfig, ServerTypeConfig, TenantConfig};
use crate::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use crate::scheduler::Scheduler;
use crate::server::Server;
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
    /// Time the task needs once it holds a slot.
    pub service_ns: u64,
}

/// Every message of the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Tenant timer: time to submit the next task.
    Arrival,
    /// Tenant → scheduler.
    Submit(Task),
    /// Scheduler → server: run this task in a free slot.
    Dispatch(Task),
    /// Server timer: a running task has finished its service.
    Complete { task: TaskId },
    /// Server → scheduler: the slot that ran `task` is free again.
    Finished { task: TaskId },
    /// Server → tenant: your task ran from `started_at` to `finished_at`.
    Done {
        task: TaskId,
        submitted_at: SimTime,
        started_at: SimTime,
        finished_at: SimTime,
    },
}

impl Msg {
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Arrival => "arrival",
            Msg::Submit(_) => "submit",
            Msg::Dispatch(_) => "dispatch",
            Msg::Complete { .. } => "complete",
            Msg::Finished { .. } => "finished",
            Msg::Done { .. } => "done",
        }
    }
}

/// What every actor knows about the run it is part of.
#[derive(Debug)]
pub struct World {
    /// Actor names by id.
    pub names: Vec<String>,
    pub network: Network,
    pub scheduler: ActorId,
}

impl World {
    pub fn name(&self, id: ActorId) -> &str {
        self.names.get(id.index()).map_or("?", String::as_str)
    }

    /// Sends `msg` across the network, with the modeled latency from `ctx.me()` to `dst`.
    pub fn send(&self, ctx: &mut Ctx<'_, Msg>, dst: ActorId, msg: Msg) -> Result<(), ModelError> {
        let latency = self.network.latency(ctx.me().0, dst.0);
        ctx.send(dst, latency, msg)
    }
}

/// The message an actor got but has no use for: a wiring bug, reported with names.
pub(crate) fn unexpected(actor: &str, msg: &Msg) -> ModelError {
    ModelError::Invariant(format!("{actor} cannot handle a `{}` message", msg.name()))
}

/// Any actor of the model; the engine drives this one type.
pub enum Node {
    Scheduler(Scheduler),
    Tenant(WorkloadTenant),
    Server(Server),
}

impl Actor for Node {
    type Msg = Msg;

    fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            Node::Tenant(t) => t.start(ctx),
            Node::Scheduler(_) | Node::Server(_) => Ok(()),
        }
    }

    fn handle(&mut self, event: Envelope<Msg>, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            Node::Scheduler(s) => s.handle(event, ctx),
            Node::Tenant(t) => t.handle(event, ctx),
            Node::Server(s) => s.handle(event, ctx),
        }
    }

    fn finish(&mut self, undelivered: &[Envelope<Msg>], end: SimTime, out: &mut Metrics) {
        match self {
            Node::Scheduler(s) => s.finish(undelivered, out),
            Node::Tenant(t) => t.finish(out),
            Node::Server(s) => s.finish(undelivered, end, out),
        }
    }
}

/// The model sections of a scenario.
pub struct ModelSpec<'a> {
    pub server_types: &'a [ServerTypeConfig],
    pub tenants: &'a [TenantConfig],
    pub scheduler: &'a SchedulerConfig,
    pub network: Network,
    /// End of the run: tenants without a `stop` submit until then.
    pub end: SimTime,
}

/// Builds every actor of the scenario, in id order: the scheduler, the
/// tenants in file order, then the servers in file order. Names: `scheduler`,
/// `tenant-<name>-<i>`, `server-<index>` (zero-padded to at least 4 digits).
pub fn build(spec: &ModelSpec<'_>) -> Vec<(String, Node)> {
    let mut names = vec!["scheduler".to_string()];
    for t in spec.tenants {
        names.extend((0..t.count).map(|i| format!("tenant-{}-{i}", t.name)));
    }
    let first_server = names.len();
    let total_servers: u64 = spec.server_types.iter().map(|s| u64::from(s.count)).sum();
    let width = total_servers.saturating_sub(1).to_string().len().max(4);
    let mut server_slots = Vec::new();
    for st in spec.server_types {
        for _ in 0..st.count {
            names.push(format!("server-{:0width$}", server_slots.len()));
            server_slots.push((st.name.clone(), st.slots));
        }
    }
    let world = Arc::new(World {
        names: names.clone(),
        network: spec.network.clone(),
        scheduler: ActorId(0),
    });
    let server_ids: Vec<(ActorId, u32)> = server_slots
        .iter()
        .enumerate()
        .map(|(i, (_, slots))| (ActorId((first_server + i) as u32), *slots))
        .collect();

    let mut nodes = Vec::with_capacity(names.len());
    nodes.push(Node::Scheduler(Scheduler::new(
        world.clone(),
        spec.scheduler,
        &server_ids,
    )));
    let mut ordinal = 0u64;
    for t in spec.tenants {
        for _ in 0..t.count {
            nodes.push(Node::Tenant(WorkloadTenant::new(
                world.clone(),
                t,
                ordinal,
                spec.end,
            )));
            ordinal += 1;
        }
    }
    for (type_name, slots) in server_slots {
        nodes.push(Node::Server(Server::new(world.clone(), type_name, slots)));
    }
    names.into_iter().zip(nodes).collect()
}
