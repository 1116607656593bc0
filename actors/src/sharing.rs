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
//!
//! **Free capacity** (thesis §4.2.5, `scheduler.cpu_sharing =
//! "free-capacity"`). GEMS's response-time model shares the server's
//! capacity `C = cores · core speed` instead: a task gets its requirement
//! `r` (in the same units) and an equal share of what the requirements
//! leave free, `r + (C − Σr) / N_r`, so alone it runs `C / r` times faster
//! than at its requirement, and with the server exactly full at it (§4.2.5's
//! two examples). Were the requirements ever to exceed `C` (a placement
//! that ignores them), each gets `r · C / Σr`. The multiplier then counts
//! relative to the core speed (1 for a plain task). Background threads take
//! equal shares of whole cores first: the tasks share `C · N_c / (N_c + B)`.
//! The thesis updates rates at the start of each slot; here they change at
//! the events that change them, exactly.

use std::collections::BTreeMap;

use dcemu_topology::SimTime;

use crate::task::TaskId;

/// How the cores are split (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Eq. 6.2: equal core shares, at most one core per thread.
    Cores,
    /// §4.2.5: requirement plus an equal share of the free capacity; the
    /// core speed converts cores to capacity and multipliers to relative
    /// speeds.
    FreeCapacity { speed: f64 },
}

#[derive(Clone, Debug)]
pub struct CpuShare {
    cores: u32,
    mode: Mode,
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
    /// CPU requirement in cores of speed 1 (free-capacity sharing only).
    demand: f64,
}

/// Work per ns `job` makes under `split` in `mode`.
fn rate_in(mode: Mode, split: Split, job: &Job) -> f64 {
    match mode {
        Mode::Cores => split.share * job.multiplier,
        Mode::FreeCapacity { speed } => {
            let capacity = if split.demand > split.capacity {
                job.demand * split.capacity / split.demand
            } else {
                job.demand + (split.capacity - split.demand) / split.tasks.max(1.0)
            };
            capacity * job.multiplier / speed
        }
    }
}

/// What every task's rate depends on at one instant.
#[derive(Clone, Copy)]
struct Split {
    /// Eq. 6.2's share of a core.
    share: f64,
    /// Free capacity: capacity the tasks share, their requirements' sum,
    /// and how many they are.
    capacity: f64,
    demand: f64,
    tasks: f64,
}

impl CpuShare {
    pub fn new(cores: u32) -> Self {
        CpuShare {
            cores: cores.max(1),
            mode: Mode::Cores,
            background: 0,
            last: 0,
            jobs: BTreeMap::new(),
        }
    }

    /// A server of `cores` cores of speed `speed` that shares its capacity
    /// as thesis §4.2.5 does (module doc).
    pub fn free_capacity(cores: u32, speed: f64) -> Self {
        CpuShare {
            mode: Mode::FreeCapacity {
                speed: speed.max(f64::MIN_POSITIVE),
            },
            ..CpuShare::new(cores)
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
    /// background threads' (with both, the cores are full). Sharing free
    /// capacity, the tasks use all of it whenever one runs.
    pub fn busy_cores(&self) -> u32 {
        let free = self.cores.saturating_sub(self.background.min(self.cores));
        match self.mode {
            Mode::Cores => self.threads().min(free),
            Mode::FreeCapacity { .. } if self.jobs.is_empty() => 0,
            Mode::FreeCapacity { .. } => free,
        }
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
    /// multiplier `multiplier` (> 0) at `now`; under free-capacity sharing
    /// its requirement is one of this server's cores per thread.
    pub fn add(&mut self, now: SimTime, task: TaskId, work: u64, threads: u32, multiplier: f64) {
        self.add_with_demand(now, task, work, threads, multiplier, 0.0);
    }

    /// The core speed free-capacity sharing converts with (1 otherwise).
    fn speed(&self) -> f64 {
        match self.mode {
            Mode::Cores => 1.0,
            Mode::FreeCapacity { speed } => speed,
        }
    }

    /// As [`CpuShare::add`], with the task's CPU requirement `demand` in
    /// cores of speed 1 (read only under free-capacity sharing; 0 counts as
    /// one of this server's cores per thread).
    pub fn add_with_demand(
        &mut self,
        now: SimTime,
        task: TaskId,
        work: u64,
        threads: u32,
        multiplier: f64,
        demand: f64,
    ) {
        self.advance(now);
        let threads = threads.max(1);
        let demand = if demand.is_finite() && demand > 0.0 {
            demand
        } else {
            f64::from(threads) * self.speed()
        };
        self.jobs.insert(
            task,
            Job {
                left: work as f64,
                multiplier,
                threads,
                demand,
            },
        );
    }

    /// The instant's split of the cores among the running tasks.
    fn split(&self) -> Split {
        let share = self.share(self.threads());
        match self.mode {
            Mode::Cores => Split {
                share,
                capacity: 0.0,
                demand: 0.0,
                tasks: 0.0,
            },
            Mode::FreeCapacity { speed } => {
                let cores = f64::from(self.cores);
                let capacity = speed * cores * cores / (cores + f64::from(self.background));
                Split {
                    share,
                    capacity,
                    demand: self.jobs.values().map(|j| j.demand).sum(),
                    tasks: self.jobs.len() as f64,
                }
            }
        }
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
        Some(rate_in(self.mode, self.split(), job))
    }

    /// When `task`, at its current rate, gets down to `left` work left.
    pub fn reaches(&self, task: TaskId, left: f64) -> Option<SimTime> {
        let job = self.jobs.get(&task)?;
        let rate = rate_in(self.mode, self.split(), job);
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
        let split = self.split();
        let soonest = self
            .jobs
            .values()
            .map(|j| j.left.max(0.0) / rate_in(self.mode, split, j))
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
        let split = self.split();
        let done: Vec<TaskId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.left < rate_in(self.mode, split, j))
            .map(|(&id, _)| id)
            .collect();
        for id in &done {
            self.jobs.remove(id);
        }
        done
    }

    fn advance(&mut self, now: SimTime) {
        if now > self.last && !self.jobs.is_empty() {
            let elapsed = (now - self.last) as f64;
            match self.mode {
                Mode::Cores => {
                    let elapsed = self.share(self.threads()) * elapsed;
                    for job in self.jobs.values_mut() {
                        job.left -= job.multiplier * elapsed;
                    }
                }
                mode @ Mode::FreeCapacity { .. } => {
                    let split = self.split();
                    for job in self.jobs.values_mut() {
                        job.left -= rate_in(mode, split, job) * elapsed;
                    }
                }
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
    fn free_capacity_gives_a_lone_task_the_server_as_section_4_2_5_says() {
        // capacity 1 core of speed 1 (two cores at 0.5); a plain task's
        // multiplier is the core speed. Work W = 100 s on one core of speed 1.
        let w = 100 * S;
        // requirement 0.5 alone: it gets all of the capacity, 1, so it runs
        // 1 / 0.5 = 2 times faster than at its requirement (2 W): W
        let mut alone = CpuShare::free_capacity(2, 0.5);
        alone.add_with_demand(0, 1, w, 1, 0.5, 0.5);
        assert_eq!(alone.next_finish(), Some(w));
        assert_eq!(alone.busy_cores(), 2, "the free capacity is used");
        // with a second task of requirement 0.5 it gets only its
        // requirement: the trace's time, 2 W
        let mut two = CpuShare::free_capacity(2, 0.5);
        two.add_with_demand(0, 1, w, 1, 0.5, 0.5);
        two.add_with_demand(0, 2, w, 1, 0.5, 0.5);
        assert_eq!(two.next_finish(), Some(2 * w));
        // unequal requirements: 0.2 and 0.3 leave 0.5 free, 0.25 each, so
        // the first runs at 0.45 and the second at 0.55
        let mut uneven = CpuShare::free_capacity(2, 0.5);
        uneven.add_with_demand(0, 1, w, 1, 0.5, 0.2);
        uneven.add_with_demand(0, 2, w, 1, 0.5, 0.3);
        assert!((uneven.rate(1).unwrap() - 0.45).abs() < 1e-12);
        assert!((uneven.rate(2).unwrap() - 0.55).abs() < 1e-12);
        // the faster one leaves; the other then has the whole capacity
        let t = uneven.next_finish().unwrap();
        assert_eq!(uneven.finished(t), vec![2]);
        assert!((uneven.rate(1).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn free_capacity_scales_requirements_down_when_they_exceed_it() {
        // requirements 1.5 and 0.5 on a capacity of 1: 0.75 and 0.25, the
        // capacity used and no more
        let mut over = CpuShare::free_capacity(1, 1.0);
        over.add_with_demand(0, 1, 100 * S, 1, 1.0, 1.5);
        over.add_with_demand(0, 2, 100 * S, 1, 1.0, 0.5);
        let (a, b) = (over.rate(1).unwrap(), over.rate(2).unwrap());
        assert!(
            (a - 0.75).abs() < 1e-12 && (b - 0.25).abs() < 1e-12,
            "{a} {b}"
        );
        // a task that declares no requirement asks one of the server's
        // cores per thread
        let mut plain = CpuShare::free_capacity(4, 0.5);
        plain.add(0, 1, 100 * S, 1, 0.5);
        plain.add(0, 2, 100 * S, 1, 0.5);
        // capacity 2, requirements 0.5 each: 1 free, 0.5 more each
        assert!((plain.rate(1).unwrap() - 1.0).abs() < 1e-12);
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
