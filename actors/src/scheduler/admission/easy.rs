//! `easy-backfill`: EASY backfilling (Lifka 1995, the Argonne SP's EASY
//! scheduler; as Mu'alem and Feitelson 2001 define it), the policy HPC
//! schedulers and their simulators compare with FCFS.
//!
//! - Tasks start in arrival order while they get room (FCFS); a run (a
//!   log's parallel job, a distributed application) starts whole.
//! - The first that gets none, the head, gets a **reservation**: the
//!   earliest time at which, the running tasks ending by their requested
//!   times (`Task::requested_ns`, else their work), its parts would fit, and
//!   the servers they would take then (each part on a distinct server, the
//!   fewest free slots that hold it).
//! - Every later task, in order, may start now ("backfill") if it does not
//!   delay that reservation: it should end by then, or it uses only slots
//!   the reservation leaves on the servers it takes ("extra" slots, per
//!   server here rather than the textbook's one pool of processors, so that
//!   a reservation of whole nodes holds).
//!
//! The reservation is computed again at every pass from what runs then, so
//! a task that ends earlier than requested brings it forward, never later.
//! A task that runs past its requested time can delay it (EASY's known
//! weakness; the log's own machine killed such jobs). Slots only: memory,
//! primary tenants and flows are the placement's to check, not the
//! reservation's.

use std::collections::{BTreeMap, VecDeque};

use dcemu_topology::SimTime;

use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::task::{Task, TaskId};

use super::fifo::place_in_order;
use super::{Admission, Attempt, Machine, PlaceFn, PoolState, Scope, slots_at};

/// One queue in arrival order with EASY backfilling.
#[derive(Default)]
pub struct EasyBackfill {
    queue: VecDeque<(Task, SimTime)>,
    backfilled: u64,
    /// Each head's first reservation (`reservations.csv`): what EASY
    /// promises it, and what its start is checked against.
    reserved: BTreeMap<TaskId, SimTime>,
}

/// The head's reservation: when, and the slots it leaves per server then.
#[derive(Clone, Debug, PartialEq)]
pub struct Reservation {
    pub at: SimTime,
    pub extra: Vec<u32>,
    /// The servers the head's parts would take (in the order of `parts`).
    pub servers: Vec<u32>,
}

/// Threads of each part of `task`, widest first (a run's unit 0 with its
/// other parts, as the machine lists them).
pub fn parts(task: &Task, m: &Machine) -> Vec<u32> {
    let mut p = vec![task.cores.max(1)];
    if let Some(rest) = m.parts.get(&task.id) {
        p.extend(rest.iter().map(|&t| t.max(1)));
    }
    p.sort_unstable_by(|a, b| b.cmp(a));
    p
}

/// The servers for `parts` (widest first) on the free slots `free`: each
/// part on a distinct server, the one with the fewest free slots that hold
/// it (lowest index on a tie); `None` if one finds none.
pub fn fit(parts: &[u32], free: &[u32], shape: &[(u32, u32)]) -> Option<Vec<(u32, u32)>> {
    let mut used = vec![false; free.len()];
    let mut out = Vec::with_capacity(parts.len());
    for &t in parts {
        let (_, i, k) = (0..free.len())
            .filter(|&i| !used[i])
            .filter_map(|i| {
                let k = slots_at(shape, i as u32, t);
                (free[i] >= k).then(|| (free[i] - k, i, k))
            })
            .min()?;
        used[i] = true;
        out.push((i as u32, k));
    }
    Some(out)
}

/// The reservation of a head of `parts` on machine `m` at `now`: the
/// running tasks end in order of when they should, and the first moment
/// the parts fit is it. `None` if they never fit (nothing is reserved).
pub fn reserve(m: &Machine, parts: &[u32], now: SimTime) -> Option<Reservation> {
    let need: u64 = parts.iter().map(|&p| u64::from(p)).sum();
    let mut free = m.free.clone();
    let mut ends = m.running.clone();
    ends.sort_unstable();
    let mut at = now;
    let mut k = 0;
    loop {
        let threads: u64 = free
            .iter()
            .zip(&m.shape)
            .map(|(&f, &(c, s))| u64::from(crate::slot_share::threads_in(f, c, s)))
            .sum();
        if threads >= need
            && let Some(taken) = fit(parts, &free, &m.shape)
        {
            let servers = taken.iter().map(|t| t.0).collect();
            for (i, n) in taken {
                free[i as usize] -= n;
            }
            return Some(Reservation {
                at,
                extra: free,
                servers,
            });
        }
        let (t, _, _) = *ends.get(k)?;
        at = t.max(now);
        while let Some(&(_, i, n)) = ends.get(k).filter(|e| e.0.max(now) == at) {
            if let Some(f) = free.get_mut(i as usize) {
                *f += n;
            }
            k += 1;
        }
    }
}

impl EasyBackfill {
    /// Records on the pass's `machine` what a start of `task` on `on`
    /// takes, until when.
    fn took(machine: &mut Machine, task: &Task, on: &[u32], now: SimTime) {
        let mut threads = vec![task.cores.max(1)];
        threads.extend(machine.parts.get(&task.id).into_iter().flatten().copied());
        let ends = now.saturating_add(task.expected_ns());
        for (&i, &t) in on.iter().zip(&threads) {
            let k = machine.slots_at(i, t);
            if let Some(f) = machine.free.get_mut(i as usize) {
                *f = f.saturating_sub(k);
            }
            machine.running.push((ends, i, k));
        }
    }
}

impl Admission for EasyBackfill {
    fn reads_machine(&self) -> bool {
        true
    }

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
        now: SimTime,
        pools: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError> {
        let mut machine = pools.machine.clone();
        let took = |task: &Task, on: &[u32]| {
            if let Some(m) = machine.as_mut() {
                Self::took(m, task, on, now);
            }
        };
        let Some(head) = place_in_order(&mut self.queue, place, took)? else {
            return Ok(());
        };
        let Some(mut machine) = machine else {
            return Ok(());
        };
        let Some(res) = reserve(&machine, &parts(&self.queue[head].0, &machine), now) else {
            return Ok(());
        };
        self.reserved.entry(self.queue[head].0.id).or_insert(res.at);
        let mut extra = res.extra;
        let mut j = head + 1;
        while let Some((task, arrived)) = self.queue.get(j) {
            let short = now.saturating_add(task.expected_ns()) <= res.at;
            let widest = parts(task, &machine)[0];
            let m = &machine;
            let leaves = |s: u32| {
                short
                    || extra
                        .get(s as usize)
                        .is_some_and(|&e| m.slots_at(s, widest) <= e)
            };
            let scope = Scope {
                servers: Some(&leaves),
                ..Scope::ANY
            };
            match place(task, *arrived, scope)? {
                Attempt::Placed { on, .. } => {
                    if !short {
                        for &s in &on {
                            let k = machine.slots_at(s, widest);
                            if let Some(e) = extra.get_mut(s as usize) {
                                *e = e.saturating_sub(k);
                            }
                        }
                    }
                    let task = task.clone();
                    Self::took(&mut machine, &task, &on, now);
                    self.queue.remove(j);
                    self.backfilled += 1;
                }
                Attempt::NoRoom | Attempt::TooLarge => j += 1,
            }
        }
        Ok(())
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("easy_backfilled", self.backfilled);
        out.add("easy_reservations", self.reserved.len() as u64);
        for (&task, &at) in &self.reserved {
            out.row("reservations", task, format!("{task},{}", at as f64 / 1e9));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(free: &[u32], running: &[(SimTime, u32, u32)]) -> Machine {
        Machine {
            free: free.to_vec(),
            shape: vec![(4, 4); free.len()],
            running: running.to_vec(),
            parts: Default::default(),
        }
    }

    /// Four nodes of four slots, three partly busy: a head of two whole
    /// nodes waits until the first ends (100) and takes nodes 0 and 1.
    #[test]
    fn the_reservation_is_the_first_end_after_which_the_head_fits() {
        let m = machine(&[0, 4, 0, 1], &[(100, 0, 4), (200, 2, 4), (300, 3, 3)]);
        let r = reserve(&m, &[4, 4], 10).expect("fits at 100");
        assert_eq!(r.at, 100);
        assert_eq!(r.servers, vec![0, 1]);
        assert_eq!(r.extra, vec![0, 0, 0, 1]);
        assert_eq!(reserve(&m, &[4], 10).map(|r| r.at), Some(10));
        assert_eq!(reserve(&m, &[4, 4, 4, 4, 4], 10), None);
        // parts on distinct servers: two parts of 2 cannot share node 1
        let one = machine(&[4, 0], &[(50, 1, 4)]);
        assert_eq!(reserve(&one, &[2, 2], 0).map(|r| r.at), Some(50));
    }

    #[test]
    fn fit_takes_the_tightest_server_for_each_part_widest_first() {
        let shape = vec![(4, 4); 3];
        assert_eq!(fit(&[3, 1], &[4, 3, 1], &shape), Some(vec![(1, 3), (2, 1)]));
        assert_eq!(fit(&[4, 4], &[4, 3, 4], &shape), Some(vec![(0, 4), (2, 4)]));
        assert_eq!(fit(&[4, 4], &[4, 3, 3], &shape), None);
    }
}
