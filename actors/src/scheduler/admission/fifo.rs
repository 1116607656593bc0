//! `fifo`: one queue in arrival order (Paragon's application-agnostic
//! admission, ARQ §2).

use std::collections::VecDeque;

use dcemu_topology::SimTime;

use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::task::Task;

use super::{Admission, Attempt, PlaceFn, PoolState, Scope};

/// Places the tasks of `queue` in order, on any server, until one finds no
/// room (it then blocks the rest); one no server could hold
/// ([`Attempt::TooLarge`]) keeps its place and is passed. `placed` hears of
/// each start and the servers it took. Returns the blocking task's place
/// in the queue, if one blocks.
pub(super) fn place_in_order(
    queue: &mut VecDeque<(Task, SimTime)>,
    place: &mut PlaceFn<'_>,
    mut placed: impl FnMut(&Task, &[u32]),
) -> Result<Option<usize>, ModelError> {
    let mut i = 0;
    while let Some((task, arrived)) = queue.get(i) {
        match place(task, *arrived, Scope::ANY)? {
            Attempt::Placed { on, .. } => {
                placed(task, &on);
                queue.remove(i);
            }
            Attempt::TooLarge => i += 1,
            Attempt::NoRoom => return Ok(Some(i)),
        }
    }
    Ok(None)
}

/// One queue; the head blocks the rest (unless no server could hold it).
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
        place_in_order(&mut self.queue, place, |_, _| {}).map(|_| ())
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn finish(&self, _: &mut Metrics) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ActorId;

    /// The head that finds no room blocks the queue; one no server could
    /// hold is passed and keeps its place at the head.
    #[test]
    fn the_head_blocks_unless_no_server_could_hold_it() {
        let mut fifo = Fifo::default();
        let pools = PoolState {
            busy: vec![0],
            free: vec![0],
            machine: None,
        };
        for id in 1..=4 {
            fifo.enqueue(Task::new(id, ActorId(1), 0, 1), 0, None, 0, 0, &pools);
        }
        let mut tried = Vec::new();
        let mut place = |t: &Task, _: SimTime, _: Scope<'_>| {
            tried.push(t.id);
            Ok(match t.id {
                1 => Attempt::TooLarge,
                3 => Attempt::NoRoom,
                _ => Attempt::Placed {
                    pool: 0,
                    on: vec![0],
                },
            })
        };
        fifo.schedule(0, &pools, &mut place).unwrap();
        assert_eq!(tried, [1, 2, 3]);
        let left: Vec<_> = fifo.queue.iter().map(|(t, _)| t.id).collect();
        assert_eq!(left, [1, 3, 4]);
    }
}
