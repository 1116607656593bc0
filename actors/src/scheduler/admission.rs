//! The admission stage: which waiting task the scheduler tries to place
//! next, and on which servers it may go. Adding a policy is one type
//! implementing [`Admission`] and one variant of `AdmissionKind`.
//!
//! * [`Fifo`]: one queue in arrival order; its head waits until a server
//!   has room (Paragon's application-agnostic admission, ARQ §2).
//! * [`ArqAdmission`]: ARQ (Paragon §4, ARQ §3): a queue per class of
//!   resource quality, each served by a pool of servers, with diversions up
//!   and down so that no application waits past its QoS slack.

use std::collections::{BTreeMap, VecDeque};

use dcemu_topology::SimTime;

use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::task::{Task, TaskId};

use super::arq::{Arq, ArqParams, app_demand};

/// What a placement attempt made of a task.
pub enum Attempt {
    /// Dispatched to a server of this ARQ pool (pool 0 without ARQ).
    Placed { pool: usize },
    /// No server it may use has room now.
    NoRoom,
}

/// What the scheduler knows about the servers, for admission decisions.
pub struct PoolState {
    /// Per pool: servers running something, and servers with a free slot.
    pub busy: Vec<u32>,
    pub free: Vec<u32>,
}

/// Where a placement attempt may go.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// Servers of these pools only (`None`: any server).
    pub pools: Option<&'a [usize]>,
    /// Only a server the placement expects to meet the task's QoS (no
    /// interference constraint violated, predicted speed on its
    /// configuration at least the QoS share): ARQ's "appropriate server".
    pub strict: bool,
}

impl Scope<'_> {
    pub const ANY: Scope<'static> = Scope {
        pools: None,
        strict: false,
    };
}

/// The place callback: tries to dispatch `task` (which first reached the
/// scheduler at `arrived`) within `scope`.
pub type PlaceFn<'a> = dyn FnMut(&Task, SimTime, Scope<'_>) -> Result<Attempt, ModelError> + 'a;

pub trait Admission: Send {
    /// A task is ready to be placed: `profile` is its classification, if
    /// any; `overhead_ns` what profiling cost it (ARQ's P_a).
    fn enqueue(
        &mut self,
        task: Task,
        arrived: SimTime,
        profile: Option<&Profile>,
        overhead_ns: u64,
        now: SimTime,
        pools: &PoolState,
    );

    /// A task that was killed or evicted goes back, ahead of the others.
    fn requeue(&mut self, task: Task, arrived: SimTime);

    /// Places waiting tasks through `place` until none more can go.
    fn schedule(
        &mut self,
        now: SimTime,
        pools: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError>;

    /// When the stage next wants [`Admission::schedule`] called even if
    /// nothing else happens (an ARQ switching time).
    fn next_wakeup(&self) -> Option<SimTime>;

    /// Tasks waiting.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn finish(&self, out: &mut Metrics);

    /// Number of server pools (1 without ARQ).
    fn pools(&self) -> usize {
        1
    }

    /// Pool of a server whose resource quality is `q` (0–100).
    fn pool_of(&self, _q: f64) -> usize {
        0
    }

    /// A busy period of a server of `pool` ended after `seconds` (ARQ §3.2).
    fn record_busy(&mut self, _pool: usize, _seconds: f64) {}
}

/// Places the tasks of `queue` in order, on any server, until one finds no
/// room (it then blocks the rest).
fn place_in_order(
    queue: &mut VecDeque<(Task, SimTime)>,
    place: &mut PlaceFn<'_>,
) -> Result<(), ModelError> {
    while let Some((task, arrived)) = queue.front() {
        match place(task, *arrived, Scope::ANY)? {
            Attempt::Placed { .. } => {
                queue.pop_front();
            }
            Attempt::NoRoom => break,
        }
    }
    Ok(())
}

/// One queue; the head blocks the rest.
#[derive(Default)]
pub struct Fifo {
    queue: VecDeque<(Task, SimTime)>,
}

impl Admission for Fifo {
    fn enqueue(
        &mut self,
        task: Task,
        arrived: SimTime,
        _: Option<&Profile>,
        _: u64,
        _: SimTime,
        _: &PoolState,
    ) {
        self.queue.push_back((task, arrived));
    }

    fn requeue(&mut self, task: Task, arrived: SimTime) {
        self.queue.push_front((task, arrived));
    }

    fn schedule(
        &mut self,
        _: SimTime,
        _: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError> {
        place_in_order(&mut self.queue, place)
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn finish(&self, _: &mut Metrics) {}
}

/// ARQ over the tasks it holds. Tasks without a profile (short jobs,
/// tasks that are not catalog applications) count as the least demanding
/// class: nothing is known that would make them wait for a better server.
pub struct ArqAdmission {
    arq: Arq,
    tasks: BTreeMap<TaskId, (Task, SimTime)>,
    /// Killed or evicted tasks: placed first, on any server.
    urgent: VecDeque<(Task, SimTime)>,
    /// The class each waiting task's demand puts it in.
    homes: BTreeMap<TaskId, usize>,
    classes: usize,
}

impl ArqAdmission {
    pub fn new(params: ArqParams) -> Self {
        ArqAdmission {
            classes: params.classes.max(1),
            homes: BTreeMap::new(),
            arq: Arq::new(params),
            tasks: BTreeMap::new(),
            urgent: VecDeque::new(),
        }
    }
}

impl Admission for ArqAdmission {
    fn enqueue(
        &mut self,
        task: Task,
        arrived: SimTime,
        profile: Option<&Profile>,
        overhead_ns: u64,
        now: SimTime,
        pools: &PoolState,
    ) {
        let demand = profile.map_or(0.0, |p| app_demand(&p.tolerated, &p.caused));
        // A task reaches a queue only when no appropriate server took it at
        // once, so a server with a free slot says nothing about when one it
        // can use frees up: the chance comes from the busy periods alone.
        let none_free = vec![0; pools.free.len()];
        self.arq.enqueue(
            task.id,
            demand,
            task.service_ns,
            overhead_ns,
            task.priority,
            now,
            &pools.busy,
            &none_free,
        );
        self.homes.insert(task.id, self.arq.class_of(demand));
        self.tasks.insert(task.id, (task, arrived));
    }

    fn requeue(&mut self, task: Task, arrived: SimTime) {
        self.urgent.push_back((task, arrived));
    }

    fn schedule(
        &mut self,
        now: SimTime,
        pools: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError> {
        place_in_order(&mut self.urgent, place)?;
        let none_free = vec![0; pools.free.len()];
        self.arq.divert_due(now, &pools.busy, &none_free);
        let mut failure = None;
        let tasks = &self.tasks;
        let homes = &self.homes;
        let keys = self.arq.schedule(|key, allowed| {
            if failure.is_some() {
                return None;
            }
            let (task, arrived) = tasks.get(&key)?;
            // In its own queue (the first of `allowed` is its current one) an
            // application waits for an appropriate server of its pool or of
            // the empty queues' pools above. Once its switching time has sent
            // it down, it takes the best server available anywhere, even one
            // of lower quality than it needs (Paragon §4.2: "assigned to the
            // best available server" within its QoS window).
            let home = homes.get(&key).copied().unwrap_or(0);
            let current = allowed.first().copied().unwrap_or(0);
            let diverted = current > home;
            let scope = match diverted {
                false => Scope {
                    pools: Some(allowed),
                    strict: true,
                },
                true => Scope::ANY,
            };
            match place(task, *arrived, scope) {
                Ok(Attempt::Placed { .. }) if diverted => Some(current),
                Ok(Attempt::Placed { pool }) => Some(pool),
                Ok(Attempt::NoRoom) => None,
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        });
        for key in keys {
            self.homes.remove(&key);
            self.tasks.remove(&key);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.arq.next_switch()
    }

    fn len(&self) -> usize {
        self.tasks.len() + self.urgent.len()
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("arq_diverted_up", self.arq.diverted_up());
        out.add("arq_diverted_down", self.arq.diverted_down());
    }

    fn pools(&self) -> usize {
        self.classes
    }

    fn pool_of(&self, q: f64) -> usize {
        self.arq.class_of(q)
    }

    fn record_busy(&mut self, pool: usize, seconds: f64) {
        self.arq.record_busy(pool, seconds);
    }
}
