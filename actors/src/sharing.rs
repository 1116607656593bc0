//! Processor sharing of a server's cores among its running tasks
//! (thesis §6.2.4.1, eq. 6.2).
//!
//! A server with `N_c` cores running `N_r` tasks gives each task the share
//! `min(1, N_c / N_r)` of a core: the cores are shared equally, but a task
//! runs on at most one core. A task with `k` threads (a multithreaded
//! application) counts as `k` of them and runs on at most `k` cores: every
//! task gets the share `min(1, N_c / D)` of its own cores, `D` being the
//! threads of all running tasks; with one thread each this is eq. 6.2. What a core-share is worth to a task is its
//! multiplier `m`: the core speed for a plain task; for an application, its
//! speed on this server configuration times its slowdown from interference
//! (ground truth). A task's work is the time it needs at rate 1, so it
//! finishes when the integral of its rate `m · min(1, N_c / N_r)` reaches its
//! work (`Δ_C = ∫ Γ_c(t) dt`). Rates change only at events (a task starts or
//! ends, a multiplier changes), so progress is advanced exactly between them,
//! and the next completion is the earliest `remaining / rate`.
//!
//! **Background threads.** A server's primary tenant normally has its
//! cores first: the tasks share what it leaves (`set_cores`). Without
//! performance isolation (stock YARN's node managers know nothing of the
//! primary tenant, harvesting §5.3, §6.1) the operating system shares the
//! cores among the primary's busy threads and the tasks' alike: with `B`
//! background threads every task gets `min(1, N_c / (D + B))` of its
//! cores, so a primary bursting into cores the tasks hold slows them, and
//! is slowed by them (§6.3: stock YARN hurts the primary's tail latency).

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::task::TaskId;

#[derive(Clone, Debug)]
pub struct CpuShare {
    cores: u32,
    /// Busy threads outside the tasks that take equal shares of the cores
    /// (a primary tenant without isolation); 0 when the tasks share the
    /// cores alone.
    background: u32,
    /// Time up to which the work left is accurate.
    last: SimTime,
    jobs: BTreeMap<TaskId, Job>,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    /// Work left, in ns at rate 1.
    left: f64,
    multiplier: f64,
    threads: u32,
}

impl CpuShare {
    pub fn new(cores: u32) -> Self {
        CpuShare {
            cores: cores.max(1),
            background: 0,
            last: 0,
            jobs: BTreeMap::new(),
        }
    }

    /// Share of its cores each task gets when the running tasks have
    /// `threads` threads in all (eq. 6.2).
    pub fn share(&self, threads: u32) -> f64 {
        if threads == 0 {
            return 1.0;
        }
        (f64::from(self.cores) / f64::from(threads + self.background)).min(1.0)
    }

    /// Threads of all running tasks.
    pub fn threads(&self) -> u32 {
        self.jobs.values().map(|j| j.threads).sum()
    }

    pub fn running(&self) -> usize {
        self.jobs.len()
    }

    /// Cores the tasks use: one per thread, up to all of them less the
    /// background threads' (with both, the cores are full).
    pub fn busy_cores(&self) -> u32 {
        self.threads()
            .min(self.cores.saturating_sub(self.background.min(self.cores)))
    }

    pub fn cores(&self) -> u32 {
        self.cores
    }

    /// Changes the cores the tasks share from `now` on (at least one: a
    /// server never has fewer for the tasks it still runs).
    pub fn set_cores(&mut self, now: SimTime, cores: u32) {
        self.advance(now);
        self.cores = cores.max(1);
    }

    /// Changes the busy threads outside the tasks that share the cores
    /// with them from `now` on.
    pub fn set_background(&mut self, now: SimTime, threads: u32) {
        self.advance(now);
        self.background = threads;
    }

    /// Starts `task` with `work` ns of work on `threads` threads and rate
    /// multiplier `multiplier` (> 0) at `now`.
    pub fn add(&mut self, now: SimTime, task: TaskId, work: u64, threads: u32, multiplier: f64) {
        self.advance(now);
        self.jobs.insert(
            task,
            Job {
                left: work as f64,
                multiplier,
                threads: threads.max(1),
            },
        );
    }

    /// Changes the multiplier of `task` from `now` on.
    pub fn set_multiplier(&mut self, now: SimTime, task: TaskId, multiplier: f64) {
        self.advance(now);
        if let Some(job) = self.jobs.get_mut(&task) {
            job.multiplier = multiplier;
        }
    }

    /// Stops `task` at `now`; returns the work it had left.
    pub fn remove(&mut self, now: SimTime, task: TaskId) -> Option<f64> {
        self.advance(now);
        self.jobs.remove(&task).map(|j| j.left)
    }

    /// Brings every task's work left up to `now`.
    pub fn advance_to(&mut self, now: SimTime) {
        self.advance(now);
    }

    /// Work `task` had left at the last event.
    pub fn left(&self, task: TaskId) -> Option<f64> {
        self.jobs.get(&task).map(|j| j.left)
    }

    /// Current progress rate of `task` (work per ns): its share of cores
    /// times its multiplier.
    pub fn rate(&self, task: TaskId) -> Option<f64> {
        let job = self.jobs.get(&task)?;
        Some(self.share(self.threads()) * job.multiplier)
    }

    /// When `task`, at its current rate, gets down to `left` work left.
    pub fn reaches(&self, task: TaskId, left: f64) -> Option<SimTime> {
        let job = self.jobs.get(&task)?;
        let rate = self.share(self.threads()) * job.multiplier;
        let ns = libm::ceil((job.left - left).max(0.0) / rate);
        let ns = if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        };
        Some(self.last.saturating_add(ns))
    }

    /// When the next task finishes at the current rates, if any runs.
    pub fn next_finish(&self) -> Option<SimTime> {
        let share = self.share(self.threads());
        let soonest = self
            .jobs
            .values()
            .map(|j| j.left.max(0.0) / (share * j.multiplier))
            .reduce(f64::min)?;
        let ns = libm::ceil(soonest);
        let ns = if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        };
        Some(self.last.saturating_add(ns))
    }

    /// Removes and returns, in id order, the tasks whose work is done by `now`
    /// (less than one nanosecond of running left: the clock's resolution).
    pub fn finished(&mut self, now: SimTime) -> Vec<TaskId> {
        self.advance(now);
        let share = self.share(self.threads());
        let done: Vec<TaskId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.left < share * j.multiplier)
            .map(|(&id, _)| id)
            .collect();
        for id in &done {
            self.jobs.remove(id);
        }
        done
    }

    fn advance(&mut self, now: SimTime) {
        if now > self.last && !self.jobs.is_empty() {
            let elapsed = self.share(self.threads()) * (now - self.last) as f64;
            for job in self.jobs.values_mut() {
                job.left -= job.multiplier * elapsed;
            }
        }
        self.last = self.last.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Runs the share until every task has finished; returns (task, finish time).
    fn finish_times(
        mut share: CpuShare,
        arrivals: &[(SimTime, TaskId, u64)],
    ) -> Vec<(TaskId, SimTime)> {
        let mut pending: Vec<_> = arrivals.to_vec();
        pending.reverse();
        let mut out = Vec::new();
        loop {
            let next_arrival = pending.last().map(|a| a.0);
            match (share.next_finish(), next_arrival) {
                (None, None) => return out,
                (Some(f), a) if a.is_none_or(|a| f <= a) => {
                    out.extend(share.finished(f).into_iter().map(|id| (id, f)));
                }
                _ => {
                    let (t, id, work) = pending.pop().expect("an arrival is pending");
                    share.add(t, id, work, 1, 1.0);
                }
            }
        }
    }

    #[test]
    fn two_tasks_on_one_core_share_it_as_eq_6_2_says() {
        // together from 0: each at rate 1/2, both done at 200 s
        let both = finish_times(CpuShare::new(1), &[(0, 1, 100 * S), (0, 2, 100 * S)]);
        assert_eq!(both, vec![(1, 200 * S), (2, 200 * S)]);
        // the second starts at 50 s: task 1 has 50 s left at rate 1/2 → 150 s;
        // task 2 then has 50 s left alone at rate 1 → 200 s
        let staggered = finish_times(CpuShare::new(1), &[(0, 1, 100 * S), (50 * S, 2, 100 * S)]);
        assert_eq!(staggered, vec![(1, 150 * S), (2, 200 * S)]);
    }

    #[test]
    fn background_threads_take_equal_shares_only_when_the_cores_are_full() {
        // 12 cores, a primary busy on 4: 8 tasks still get a core each
        let mut share = CpuShare::new(12);
        share.set_background(0, 4);
        assert_eq!(share.share(8), 1.0);
        share.add(0, 1, 60 * S, 1, 1.0);
        assert_eq!(share.next_finish(), Some(60 * S));
        assert_eq!(share.busy_cores(), 1);
        // it bursts to all 12: 20 threads on 12 cores, 3/5 of a core each,
        // where giving the primary its cores first would leave the tasks
        // none (set_cores keeps one)
        share.set_background(30 * S, 12);
        assert!((share.share(8) - 0.6).abs() < 1e-12);
        // the task alone gets 12/13 of a core: its last 30 s take 32.5 s
        assert_eq!(share.next_finish(), Some(62_500_000_000));
        // the background fills every core: none counted as the tasks'
        assert_eq!(share.busy_cores(), 0);
    }

    #[test]
    fn a_task_never_gets_more_than_one_core() {
        let share = CpuShare::new(8);
        assert_eq!(share.share(1), 1.0);
        assert_eq!(share.share(8), 1.0);
        assert_eq!(share.share(16), 0.5);
        let mut mt = CpuShare::new(4);
        mt.add(0, 1, 100 * S, 4, 1.0);
        assert_eq!(
            mt.next_finish(),
            Some(100 * S),
            "four threads on four cores"
        );
        mt.add(0, 2, 100 * S, 4, 1.0);
        assert_eq!(mt.busy_cores(), 4);
        assert_eq!(
            mt.next_finish(),
            Some(200 * S),
            "eight threads share four cores"
        );
        // eq. 6.1: with N_s slots full the task takes N_s/N_c times its work
        let full = finish_times(
            CpuShare::new(2),
            &[
                (0, 1, 10 * S),
                (0, 2, 10 * S),
                (0, 3, 10 * S),
                (0, 4, 10 * S),
            ],
        );
        assert!(full.iter().all(|&(_, t)| t == 20 * S), "{full:?}");
    }

    #[test]
    fn a_larger_multiplier_finishes_sooner_and_can_change_midway() {
        let mut share = CpuShare::new(1);
        share.add(0, 1, 100 * S, 1, 2.0);
        assert_eq!(share.next_finish(), Some(50 * S));
        // slowed to half speed after 20 s (40 s of work done, 60 s left at rate 0.5)
        share.set_multiplier(20 * S, 1, 0.5);
        assert_eq!(share.next_finish(), Some(140 * S));
        assert_eq!(share.finished(140 * S), vec![1]);
    }

    #[test]
    fn removing_a_task_returns_its_remaining_work_and_speeds_up_the_rest() {
        let mut share = CpuShare::new(1);
        share.add(0, 1, 100 * S, 1, 1.0);
        share.add(0, 2, 100 * S, 1, 1.0);
        let left = share.remove(40 * S, 2).unwrap();
        assert!((left - 80.0 * S as f64).abs() < 1.0);
        assert_eq!(share.next_finish(), Some(120 * S));
        assert_eq!(share.busy_cores(), 1);
    }
}
