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
    /// The run time its submitter asked for, ns (an SWF job's requested
    /// time, field 9); 0: none given. EASY backfilling reserves by it
    /// (else by the task's work).
    #[serde(default)]
    pub requested_ns: u64,
    /// The distributed run it is a unit of (ASPLOS'16), if any. Always
    /// written: bincode (the wire format) has no field names, so a skipped
    /// field would make the decoder read the next value in its place.
    #[serde(default)]
    pub dist: Option<DistRef>,
    /// The trace job whose other tasks with the same mark it never shares
    /// a server with (Google 2011's different-machine restriction); every
    /// placement keeps them apart ([`crate::scheduler::ClusterView::apart_allows`]).
    #[serde(default)]
    pub apart: Option<u64>,
}

impl Task {
    /// How long it should run: its requested time where it has one, else
    /// its work (EASY backfilling's estimate).
    pub fn expected_ns(&self) -> u64 {
        match self.requested_ns {
            0 => self.service_ns,
            r => r,
        }
    }

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
            requested_ns: 0,
            dist: None,
            apart: None,
        }
    }
}

/// The workload of a task that is not a catalog application, as a
/// scheduler tells it from what the task carries (its tenant, job, DAG
/// stage): tasks of one kind run the same program, so they share one hidden
/// profile (`World::kind_truth`), and a kind that recurs (a job's tasks, a
/// query template's stage) is known to Paragon once it has classified one
/// of its tasks, as a real cluster manager recognises a job's tasks. A task
/// with neither job nor DAG is a program of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A task with no job: a Google-like task (thesis Table 5.2), a
    /// generated or trace task without an application. The trace gives
    /// only a priority class, and a class is many programs (one kind per
    /// class would let one draw decide the behaviour of most of the
    /// workload: docs/ground-truth.md), so it is its own workload.
    Task { tenant: ActorId, task: TaskId },
    /// The tasks of one MapReduce-like job (thesis §4.2.2): one program
    /// over different input splits.
    Job { tenant: ActorId, job: TaskId },
    /// The tasks of one stage (Tez vertex) of a DAG job template, a
    /// TPC-DS-like query that recurs (harvesting §4.1).
    Stage {
        tenant: ActorId,
        template: u32,
        stage: u32,
    },
}

impl Task {
    /// The recurring workload this task is an instance of, if it is not a
    /// catalog application (nor a unit of a distributed run, whose truth
    /// is `crate::distributed`'s).
    pub fn kind(&self) -> Option<Kind> {
        if self.app.is_some() || self.dist.is_some() {
            return None;
        }
        let tenant = self.tenant;
        Some(match (&self.job, &self.dag) {
            (Some(j), _) => Kind::Job { tenant, job: j.id },
            (None, Some(d)) => Kind::Stage {
                tenant,
                template: d.template,
                stage: d.stage,
            },
            (None, None) => Kind::Task {
                tenant,
                task: self.id,
            },
        })
    }
}

impl Kind {
    /// Whether more tasks of the kind may follow (a job's, a stage's).
    pub fn recurs(self) -> bool {
        !matches!(self, Kind::Task { .. })
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
    /// Which attempt of the run this unit belongs to (set by the scheduler;
    /// a run whose unit was killed starts again as the next attempt, and
    /// what the old attempt's units still say is told apart by it).
    #[serde(default)]
    pub attempt: u32,
    /// How long the run lasts once all its units run, ns: a parallel job
    /// of a log (SWF), whose run time the log records, ends exactly then
    /// whatever shares its servers. 0: its application's profile and its
    /// units' co-runners decide (ASPLOS'16 §3).
    #[serde(default)]
    pub fixed_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_what_recurs() {
        let plain = Task {
            priority: 4,
            ..Task::new(7, ActorId(3), 0, 1)
        };
        assert_eq!(
            plain.kind(),
            Some(Kind::Task {
                tenant: ActorId(3),
                task: 7
            })
        );
        assert!(!plain.kind().unwrap().recurs(), "a program of its own");
        let job = JobRef {
            id: 5,
            master: false,
            external_bytes: 0,
            internal_bytes: 0,
        };
        let worker = Task {
            job: Some(job),
            ..plain.clone()
        };
        assert_eq!(
            worker.kind(),
            Some(Kind::Job {
                tenant: ActorId(3),
                job: 5
            })
        );
        assert!(worker.kind().unwrap().recurs());
        let app = Task {
            app: Some(2),
            ..plain.clone()
        };
        assert_eq!(app.kind(), None, "a catalog application has its own truth");
    }
}
