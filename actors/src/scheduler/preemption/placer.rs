//! The placement stage as a slot stage consults it ([`SlotPlacer`]): the
//! slot stage decides whether a task starts and whom it evicts, the
//! placement where.

use dcemu_topology::SimTime;

use crate::kernel::ActorRng;
use crate::task::{Task, TaskId};

/// The placement stage, as the slot stage consults it when the scenario's
/// `scheduler.placement` is not `random` (docs/scheduler.md, "How the
/// stages combine"): the slot stage decides *whether* a task starts now and
/// which task it evicts; the placement decides *where* a task that gets a
/// free slot goes.
pub trait SlotPlacer {
    /// The server (index) `task` should take a free slot of, among the
    /// servers for which `candidates` holds; `None` leaves it queued, and
    /// with it the rest of the queue this time slot (§6.2.3.2).
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32>;

    /// `task` starts on `server`, in the slots of `victims` if it preempts
    /// them (none: in free slots; `rng`: for a placement that still draws
    /// its path there).
    fn started(
        &mut self,
        task: &Task,
        server: u32,
        victims: &[TaskId],
        now: SimTime,
        rng: &mut ActorRng,
    );

    /// `task`, a unit of a distributed run, starts on `server` in a free
    /// slot if the placement can book it there (a path with its bandwidth
    /// included); `false` books nothing (`gang.rs`).
    fn start_unit(&mut self, task: &Task, server: u32, now: SimTime, rng: &mut ActorRng) -> bool {
        self.started(task, server, &[], now, rng);
        true
    }

    /// Undoes [`SlotPlacer::start_unit`] of `task` on `server`: its run
    /// cannot start whole.
    fn withdraw(&mut self, _task: &Task, _server: u32) {}

    /// The hosts of a distributed run's `units`, in their order, chosen
    /// jointly among the servers `candidates` holds (`annealing` under a
    /// slot stage, ASPLOS'16 §5.1); `None` starts nothing. Only asked if
    /// [`SlotPlacer::places_gangs`]; the slot stage still checks every
    /// host (a free slot it allows, distinct) before it books one.
    fn choose_gang(
        &mut self,
        _units: &[Task],
        _candidates: &dyn Fn(u32) -> bool,
        _rng: &mut ActorRng,
    ) -> Option<Vec<u32>> {
        None
    }

    /// Whether at least `hosts` servers could each hold a task of
    /// `threads` threads now if none of the scheduler's tasks ran there:
    /// within what a primary tenant's use and reserve leave (harvesting
    /// §5.3). A task for which this is false is passed in the queue rather
    /// than holding its head ([`SlotStage::could_hold`]). The default
    /// bounds nothing beyond the stage's own slots.
    fn could_hold(&self, _threads: u32, _hosts: usize) -> bool {
        true
    }

    /// Whether the placement chooses a run's hosts jointly
    /// ([`SlotPlacer::choose_gang`]) rather than unit by unit.
    fn places_gangs(&self) -> bool {
        false
    }

    /// Whether a start of `task` needs more than a slot where the placement
    /// is concerned (bandwidth on a path for its flow, an energy-aware
    /// placement's CPU, memory and path): then a victim is one whose
    /// eviction makes that room ([`SlotPlacer::victim_fits`]).
    fn gates_victims(&self, _task: &Task) -> bool {
        false
    }

    /// Whether `task` would fit on `server` once `victim` left it.
    fn victim_fits(&mut self, _task: &Task, _server: u32, _victim: TaskId) -> bool {
        true
    }

    /// Whether the placement has a criterion of its own among the servers
    /// holding admissible victims for `task` ([`SlotPlacer::choose_victim`]).
    /// The default, `false`, leaves the preemption stage's choice alone
    /// (and draws nothing more).
    fn scores_victims(&self, _task: &Task) -> bool {
        false
    }

    /// Where `task` starts by evicting: an index into `options`, one
    /// (server, victim) per server holding admissible victims, the victim
    /// the eviction rule picks there, the preemption stage's own choice
    /// first; `None` keeps that choice.
    fn choose_victim(
        &mut self,
        _task: &Task,
        _options: &[(u32, TaskId)],
        _rng: &mut ActorRng,
    ) -> Option<usize> {
        None
    }

    /// Whether the placement picks `task`'s victim itself among every
    /// admissible one ([`SlotPlacer::pick_victim`]), in place of the
    /// eviction rule (an external program deciding the preemption stage).
    /// Asked only where [`SlotPlacer::scores_victims`] holds.
    fn picks_victims(&self, _task: &Task) -> bool {
        false
    }

    /// The victim `task` evicts, one of `running` (every running task, by
    /// server and start, the ones the stage admits marked); `None`: it
    /// waits.
    fn pick_victim(
        &mut self,
        _task: &Task,
        _running: &[RunningSlot],
        _rng: &mut ActorRng,
    ) -> Option<TaskId> {
        None
    }

    /// The migrations the placement's latest decisions ordered (an external
    /// program's migration stage, protocol v3), as (task, target server),
    /// in order; the stage takes them right after each decision and begins
    /// each move in its own slots ([`SlotStage::begin_move`]), so that the
    /// pass's later decisions see the move: the target's slot held, the
    /// moving task no victim.
    fn take_moves(&mut self) -> Vec<(TaskId, u32)> {
        Vec::new()
    }

    /// The stage began the move of `task` to `to` (`begun`), or declined
    /// it: then nothing of it may stay booked. Returns whether the
    /// placement booked a move it was told began; `false` makes the stage
    /// undo it.
    fn move_begun(&mut self, _task: TaskId, _to: u32, begun: bool) -> bool {
        begun
    }
}

/// A running task as the slot stage knows it, offered to a placement that
/// picks victims itself ([`SlotPlacer::pick_victim`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningSlot {
    pub server: u32,
    pub task: TaskId,
    pub priority: u8,
    pub started: SimTime,
    /// Whether the stage admits it as a victim for the task asking.
    pub admissible: bool,
}
