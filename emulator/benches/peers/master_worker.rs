//! The master/worker workload of the peers bench on dcemu's engine: one
//! master places M tasks on N hosts, FIFO and least-loaded, with no
//! network. `simgrid_master_worker.cpp` is the same workload on SimGrid;
//! both must complete the same tasks on the same hosts at the same times.
//!
//! * N hosts of C cores; a task takes one core, and the master never
//!   places more than C tasks on a host, so a task of d ns of work ends
//!   d ns after it starts;
//! * task i arrives at the master at a_i (a_i - a_(i-1) = `gap(i)`) and
//!   needs `work(i)` ns, both a SplitMix64 hash of the seed and i;
//! * the master keeps arrived tasks in a FIFO queue and places its head on
//!   the host with the fewest tasks outstanding (ties to the lowest index)
//!   whenever one has fewer than C;
//! * placing a task and hearing that it finished each take `delta` ns, a
//!   constant control delay: there is no network to contend for.
//!
//! Actor 0 is the master, actor h + 1 host h. An arrival is a timer of the
//! master (the next is armed when one arrives); a placement a message to
//! the host, which arms a timer for the task's work and, when it fires,
//! sends the master its notice. Four events per task.

use std::collections::{BTreeSet, VecDeque};

use dcemu_actors::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use dcemu_topology::SimTime;

/// SplitMix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The workload, as both peers read it.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub hosts: u32,
    pub cores: u32,
    pub tasks: u64,
    /// Mean work of a task in ns; works are uniform in [mean/2, 3 mean/2).
    pub mean_work: u64,
    /// Mean gap between arrivals in ns; gaps are uniform in [1, 2 gap).
    pub mean_gap: u64,
    /// The control delay each way, in ns.
    pub delta: SimTime,
    pub seed: u64,
}

impl Workload {
    fn hash(&self, i: u64, which: u64) -> u64 {
        mix(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (2 * i + which))
    }

    /// Nanoseconds from task i-1's arrival (or 0) to task i's.
    fn gap(&self, i: u64) -> SimTime {
        1 + self.hash(i, 0) % (2 * self.mean_gap - 1)
    }

    /// Task i's work, in ns on one core.
    fn work(&self, i: u64) -> SimTime {
        self.mean_work / 2 + self.hash(i, 1) % self.mean_work
    }

    /// The command-line arguments of `simgrid_master_worker`.
    pub fn args(&self) -> Vec<String> {
        [
            u64::from(self.hosts),
            u64::from(self.cores),
            self.tasks,
            self.mean_work,
            self.mean_gap,
            self.delta,
            self.seed,
        ]
        .iter()
        .map(u64::to_string)
        .collect()
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Msg {
    /// The next task arrives (a timer of the master).
    Arrive,
    /// Run this task (master to host).
    Run(u64),
    /// This task's work is done (a timer of the host).
    Done(u64),
    /// This task finished (host to master).
    Notice(u64),
}

/// What the master reports, as the SimGrid program prints it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub completed: u64,
    /// Order-free: a wrapping sum over tasks of a hash of the task, its host
    /// and the time its notice reached the master.
    pub checksum: u64,
    /// When the last notice reached the master, ns.
    pub makespan: SimTime,
    /// Wrapping sum over tasks of the time from arrival to placement, ns.
    pub wait: u64,
}

pub struct Master {
    w: Workload,
    /// Hosts with fewer than C tasks outstanding, by how many they have.
    by_load: Vec<BTreeSet<u32>>,
    load: Vec<u32>,
    /// Arrived tasks not yet placed: (task, arrival time).
    queue: VecDeque<(u64, SimTime)>,
    /// The next task to arrive, and when.
    next: u64,
    next_at: SimTime,
    totals: Totals,
    /// Events of the master less than 2 ns after its previous one: where
    /// SimGrid's clock (a double in seconds) may order them otherwise.
    close: u64,
    last: Option<SimTime>,
}

impl Master {
    fn dispatch(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        while let Some(&(task, arrived)) = self.queue.front() {
            let Some(k) = self.by_load.iter().position(|s| !s.is_empty()) else {
                return Ok(());
            };
            let Some(h) = self.by_load[k].pop_first() else {
                return Ok(());
            };
            self.load[h as usize] = k as u32 + 1;
            if k + 1 < self.w.cores as usize {
                self.by_load[k + 1].insert(h);
            }
            self.queue.pop_front();
            self.totals.wait = self.totals.wait.wrapping_add(ctx.now() - arrived);
            ctx.send(ActorId(h + 1), self.w.delta, Msg::Run(task))?;
        }
        Ok(())
    }
}

pub struct Host {
    w: Workload,
    ran: u64,
}

pub enum MwActor {
    Master(Box<Master>),
    Host(Host),
}

impl Actor for MwActor {
    type Msg = Msg;

    fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            MwActor::Master(m) if m.w.tasks > 0 => ctx.timer(m.next_at, Msg::Arrive),
            _ => Ok(()),
        }
    }

    fn handle(&mut self, ev: Envelope<Msg>, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match self {
            MwActor::Master(m) => {
                let now = ctx.now();
                if m.last.is_some_and(|t| now - t < 2) {
                    m.close += 1;
                }
                m.last = Some(now);
                match ev.payload {
                    Msg::Arrive => {
                        m.queue.push_back((m.next, now));
                        m.next += 1;
                        if m.next < m.w.tasks {
                            let gap = m.w.gap(m.next);
                            m.next_at += gap;
                            ctx.timer(gap, Msg::Arrive)?;
                        }
                    }
                    Msg::Notice(task) => {
                        let h = ev.src.0 - 1;
                        let k = m.load[h as usize];
                        if k < m.w.cores {
                            m.by_load[k as usize].remove(&h);
                        }
                        m.load[h as usize] = k - 1;
                        m.by_load[k as usize - 1].insert(h);
                        let t = &mut m.totals;
                        t.completed += 1;
                        t.checksum = t
                            .checksum
                            .wrapping_add(mix(task ^ (u64::from(h) << 40) ^ now.rotate_left(24)));
                        t.makespan = now;
                    }
                    Msg::Run(_) | Msg::Done(_) => {}
                }
                m.dispatch(ctx)
            }
            MwActor::Host(host) => match ev.payload {
                Msg::Run(task) => ctx.timer(host.w.work(task), Msg::Done(task)),
                Msg::Done(task) => {
                    host.ran += 1;
                    ctx.send(ActorId(0), host.w.delta, Msg::Notice(task))
                }
                Msg::Arrive | Msg::Notice(_) => Ok(()),
            },
        }
    }

    fn finish(&mut self, undelivered: &[Envelope<Msg>], _end: SimTime, out: &mut Metrics) {
        out.add("undelivered", undelivered.len() as u64);
        match self {
            MwActor::Master(m) => {
                out.add("completed", m.totals.completed);
                out.add("checksum", m.totals.checksum);
                out.add("makespan", m.totals.makespan);
                out.add("wait", m.totals.wait);
                out.add("close", m.close);
            }
            MwActor::Host(h) => out.add("ran", h.ran),
        }
    }
}

/// The actors of a run: the master, then the hosts.
pub fn actors(w: Workload) -> Vec<(String, MwActor)> {
    let mut by_load = vec![BTreeSet::new(); w.cores as usize];
    by_load[0] = (0..w.hosts).collect();
    let master = Master {
        w,
        by_load,
        load: vec![0; w.hosts as usize],
        queue: VecDeque::new(),
        next: 0,
        next_at: w.gap(0),
        totals: Totals::default(),
        close: 0,
        last: None,
    };
    std::iter::once(("master".to_owned(), MwActor::Master(Box::new(master))))
        .chain((0..w.hosts).map(|h| (format!("host-{h:06}"), MwActor::Host(Host { w, ran: 0 }))))
        .collect()
}

/// The master's totals and its count of close events, from a run's
/// output metrics.
pub fn totals(master: &Metrics) -> (Totals, u64) {
    (
        Totals {
            completed: master.counter("completed"),
            checksum: master.counter("checksum"),
            makespan: master.counter("makespan"),
            wait: master.counter("wait"),
        },
        master.counter("close"),
    )
}
