//! `fifo`: one queue in arrival order (Paragon's application-agnostic
//! admission, ARQ §2).

use std::collections::VecDeque;

use dcemu_topology::SimTime;

use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::task::Task;

use super::{Admission, Attempt, PlaceFn, PoolState, Scope};

/// Places the tasks of `queue` in order, on any server, until one finds no
/// room (it then blocks the rest).
pub(super) fn place_in_order(
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
