//! The unit of work: what tenants submit, the scheduler places and servers
//! run.

use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

use crate::kernel::ActorId;

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
    pub dist: Option<DistRef>,
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

/// A unit's place in its distributed run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistRef {
    /// Catalog index of the application.
    pub app: u32,
    /// The run: its unit 0's task id.
    pub run: TaskId,
    pub unit: u16,
    pub units: u16,
    /// QoS bound, millionths of solo performance (0: none).
    pub qos_ppm: u32,
    /// The server that coordinates the run (set by the scheduler).
    pub coordinator: Option<ActorId>,
}
