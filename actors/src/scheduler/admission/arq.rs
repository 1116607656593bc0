//! ARQ: multi-class admission control with resource-quality awareness
//! (the ARQ paper, and Paragon §4 "Application-aware admission control").
//!
//! Applications wait in one queue per class of the resource quality they
//! demand; servers fall into pools by the resource quality they can still
//! offer, and queue `i` is served by pool `i` (ARQ §3.1, Fig. 1; Paragon
//! §4.1, Fig. 6). An application that cannot get a server of its own pool may
//! borrow one from the pool above when that pool's queue is empty, and moves
//! one queue down once waiting longer in its queue no longer pays off (ARQ
//! §3.2; Paragon §4.2). This module holds the queues and the arithmetic; the
//! scheduler owns the servers and decides, through a closure, whether an
//! application fits a server of a given pool.
//!
//! # Our reading of the papers
//!
//! * **Scale.** Every score is on Paragon's 0–100 scale, one per source of
//!   interference ([`SOURCES`] of them). Inputs are clamped into [0, 100];
//!   a NaN is read as the worst case for its direction (caused = 100,
//!   tolerated = 0).
//! * **Application demand** (ARQ eq. 1; Paragon §4.1 eq. 1). The papers write
//!   the quality as a sum of caused interference but describe a high value
//!   as "high caused and low tolerated". We average both sides:
//!   `Q_a = mean_k (c_k + (100 − t_k)) / 2`, in [0, 100].
//! * **Server quality.** The papers sum a server's tolerated interference. We
//!   take what the server can still absorb: `Q_s = mean_k min(t_s,k,
//!   100 − c_s,k)`, where `t_s` is the smallest tolerated score and `c_s` the
//!   summed caused score of the applications it hosts (an empty server scores
//!   100).
//! * **Classes and pools.** `classes` equal bands of the scale (ten by
//!   default, ARQ §3.1). Class 0 is the most demanding band (`[90, 100]` for
//!   ten classes), class `classes − 1` the least. A server's pool is the band
//!   of its `Q_s`, numbered the same way, so pool 0 holds the best servers.
//!   [`Arq::class_of`] is the single banding function for both.
//! * **Queue bypassing** (ARQ §3.2; Paragon §4.2). *Up*: an application in
//!   queue `i` may use pool `i`, and also pool `i − 1` if queue `i − 1` is
//!   empty, continuing upwards through consecutive empty queues. *Down*: at
//!   its switching time it moves to the tail of queue `i + 1` (Paragon §4.3
//!   assumes tail placement) and gets a fresh switching time for the next
//!   pair, until the last queue, which it never leaves.
//! * **Busy periods** (ARQ §3.2, Fig. 2a; Paragon §4.2, Fig. 7(a)). Per pool,
//!   the time from a server being given a workload to that workload
//!   finishing. The papers' fitted curve resembles a normal, so each pool
//!   keeps an online (Welford) normal fit, [`BusyFit`]. Because a busy period
//!   cannot be negative, we use the normal *left-truncated at zero*. Until a
//!   pool has [`MIN_FIT_SAMPLES`] samples we fall back to the fit over all
//!   pools, and until that has enough, to a normal with mean and standard
//!   deviation both equal to `ArqParams::default_busy_s`.
//! * **Free-server probability** (ARQ Fig. 2b; Paragon Fig. 7(b)). For pool
//!   `i` with `n` busy servers and none free,
//!   `Pr_i[t] = 1 − (1 − F_i(t))^n`. This treats every busy period as if it
//!   had just started (we do not track their ages) and the servers as
//!   independent. `Pr_i[t] = 1` if the pool already has a server with room,
//!   and 0 if the pool has no servers at all.
//! * **Switching point** (ARQ §3.2; Paragon §4.2 eq. 2). For an application
//!   with optimal computation time `CT` and classification overhead `P`, the
//!   slack is `S = 1.05·CT − P` and the queueing budget `B = 0.05·CT − P`. If
//!   `B ≤ 0` the application switches at once. Otherwise the switching time
//!   `t*` in `[0, B]` maximises
//!   `max{(S − t)·Q_i·Pr_i[t], (S − B)·Q_j·Pr_j[B − t]}` with `i` the current
//!   queue, `j = i + 1`, and `Q_i`, `Q_j` the midpoints of their bands (95
//!   and 85 for the top two of ten). We evaluate [`SWITCH_GRID`] evenly spaced
//!   points of `[0, B]` (both ends included) and break ties, within a
//!   relative 1e-9, in favour of the *later* point: ARQ would rather wait for
//!   the right class (`Q_i > Q_j`). After a move, the next switching time
//!   uses what is left of `S` and `B`. Note that when pool `i` already has a
//!   free server, `Pr_i ≡ 1` and the objective peaks at `t = 0`: the
//!   application gets its pass in the queue and, if it is not placed, moves
//!   on.
//! * **Diversion timing.** An application is moved down only once its switching
//!   time has come *and* it has been present for at least one scheduling
//!   pass in its current queue, so an application that must switch at once
//!   still gets to try its own pool at no cost in time; it then descends at
//!   most one queue per [`Arq::divert_due`] call.
//! * **Order within a queue** (Paragon §4.4). FIFO by default. `Sjf`: shorter
//!   `CT` first, except that an application whose switching time (in the
//!   last queue: its queueing budget) has come goes ahead of the SJF order,
//!   so SJF never holds it past that point. `Priority`: higher `priority`
//!   first, FIFO within a priority. Head-of-line blocking applies within a
//!   queue only.
//!
//! Time is integer nanoseconds ([`SimTime`]); the optimisation is done in
//! `f64` seconds and converted back with [`to_nanos`].

use std::collections::{BTreeMap, VecDeque};
use std::f64::consts::SQRT_2;

use dcemu_topology::SimTime;

use crate::ground_truth::SOURCES;
use crate::kernel::{Metrics, ModelError};
use crate::profiling::Profile;
use crate::sampling::to_nanos;
use crate::task::{Task, TaskId};

use super::fifo::place_in_order;
use super::{Admission, Attempt, PlaceFn, PoolState, Scope};

/// What offering a waiting application to the servers made of it
/// ([`Arq::schedule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Placed in this pool.
    Placed(usize),
    /// Not placed: it blocks the rest of its queue (head-of-line).
    Wait,
    /// Not placed, and no departure can make room for it
    /// ([`Attempt::TooLarge`]): the ones behind it are offered.
    Pass,
}

impl From<Option<usize>> for Offer {
    fn from(pool: Option<usize>) -> Self {
        pool.map_or(Offer::Wait, Offer::Placed)
    }
}

/// Number of evenly spaced points of `[0, B]` on which the switching time is
/// chosen.
pub const SWITCH_GRID: usize = 64;

/// Samples a busy-time fit needs before it is trusted over its fallback.
pub const MIN_FIT_SAMPLES: u64 = 5;

/// Default prior for busy periods, in seconds, used by
/// [`ArqParams::default`] and in place of an invalid `default_busy_s`.
pub const DEFAULT_BUSY_S: f64 = 60.0;

/// `switch_at` of an application in the last queue: it never switches.
pub const NEVER: SimTime = SimTime::MAX;

/// Relative tolerance under which two objective values count as a tie.
const TIE_TOLERANCE: f64 = 1e-9;

const NS_PER_S: f64 = 1e9;

/// Order of applications within one queue (Paragon §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueOrder {
    /// Arrival order into the queue.
    Fifo,
    /// Shortest optimal computation time first, bounded by switching times.
    Sjf,
    /// Higher priority first, FIFO within a priority.
    Priority,
}

#[derive(Clone, Copy, Debug)]
pub struct ArqParams {
    /// Number of classes (queues) and pools; values below 1 are read as 1.
    pub classes: usize,
    pub order: QueueOrder,
    /// Prior mean and standard deviation of a busy period, in seconds, used
    /// until enough busy periods have been recorded.
    pub default_busy_s: f64,
    /// Whether an application is diverted down when its switching time
    /// comes (§4.2); `false` holds it in its own queue until a server of
    /// its pool, or of a better pool whose queue is empty, takes it (§4.1,
    /// `scheduler.arq_hold = "until-suitable"`). An application whose pool
    /// has no server then waits for the better queues to empty, for as
    /// long as that takes: the reading holds for a suitable server, not
    /// for a bounded time.
    pub divert: bool,
}

impl Default for ArqParams {
    fn default() -> Self {
        ArqParams {
            classes: 10,
            order: QueueOrder::Fifo,
            default_busy_s: DEFAULT_BUSY_S,
            divert: true,
        }
    }
}

/// A score clamped into [0, 100], with `nan_as` standing for NaN.
fn score(x: f64, nan_as: f64) -> f64 {
    if x.is_nan() {
        nan_as
    } else {
        x.clamp(0.0, 100.0)
    }
}

/// Resource quality an application needs, in [0, 100] (our reading of ARQ
/// eq. 1): the mean over sources of the average of what it causes and how
/// little it tolerates. High means demanding.
pub fn app_demand(tolerated: &[f64; SOURCES], caused: &[f64; SOURCES]) -> f64 {
    let sum: f64 = tolerated
        .iter()
        .zip(caused)
        .map(|(&t, &c)| (score(c, 100.0) + (100.0 - score(t, 0.0))) / 2.0)
        .sum();
    sum / SOURCES as f64
}

/// Resource quality a server still offers, in [0, 100]: the mean over
/// sources of `min(tolerated, 100 − caused)`, where `server_tolerated` is the
/// smallest tolerated score and `server_caused` the summed caused score of
/// the applications it hosts. An empty server (`[100; _]`, `[0; _]`) scores
/// 100.
pub fn server_quality(server_tolerated: &[f64; SOURCES], server_caused: &[f64; SOURCES]) -> f64 {
    let sum: f64 = server_tolerated
        .iter()
        .zip(server_caused)
        .map(|(&t, &c)| score(t, 0.0).min(100.0 - score(c, 100.0)))
        .sum();
    sum / SOURCES as f64
}

/// A normal distribution of busy periods, left-truncated at zero.
#[derive(Clone, Copy, Debug)]
struct Normal {
    mean: f64,
    sd: f64,
}

impl Normal {
    /// Probability that a busy period lasts longer than `seconds`.
    fn survival(&self, seconds: f64) -> f64 {
        if seconds.is_nan() || seconds < 0.0 {
            return 1.0;
        }
        if self.sd.is_nan() || self.sd <= 0.0 {
            // A point mass at the mean.
            return if seconds >= self.mean { 0.0 } else { 1.0 };
        }
        let scale = self.sd * SQRT_2;
        let z = (seconds - self.mean) / scale;
        let z0 = -self.mean / scale;
        // erfc(z)/2 is the upper tail of the untruncated normal; dividing by
        // the mass above zero truncates it. The mean is never negative, so the
        // denominator is at least 1.
        (libm::erfc(z) / libm::erfc(z0)).clamp(0.0, 1.0)
    }

    fn cdf(&self, seconds: f64) -> f64 {
        1.0 - self.survival(seconds)
    }
}

/// Online normal fit of busy periods (Welford's algorithm), in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BusyFit {
    count: u64,
    mean: f64,
    m2: f64,
}

impl BusyFit {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one busy period. Negative values count as zero; non-finite ones
    /// are ignored.
    pub fn record(&mut self, seconds: f64) {
        if !seconds.is_finite() {
            return;
        }
        let x = seconds.max(0.0);
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sample mean (0 without samples).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample variance with Bessel's correction (0 below two samples).
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).max(0.0)
        }
    }

    /// Sample standard deviation (0 below two samples).
    pub fn sd(&self) -> f64 {
        libm::sqrt(self.variance())
    }

    /// `F(seconds)`: the fitted normal's CDF, left-truncated at zero. With a
    /// zero standard deviation it is a step at the mean. Meaningless without
    /// samples; [`Arq`] falls back to a prior then.
    pub fn cdf(&self, seconds: f64) -> f64 {
        self.normal().cdf(seconds)
    }

    fn normal(&self) -> Normal {
        Normal {
            mean: self.mean,
            sd: self.sd(),
        }
    }
}

/// A waiting application (the integrator keys them by task id `u64`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub key: u64,
    /// The class its demand falls in.
    pub home: usize,
    /// The queue it waits in now (`home` or below).
    pub queue: usize,
    /// When it was enqueued.
    pub since: SimTime,
    /// When it moves to the next queue; [`NEVER`] in the last queue.
    pub switch_at: SimTime,
    /// Its optimal computation time.
    pub ct_ns: u64,
    pub priority: u8,
}

#[derive(Clone, Debug)]
struct Entry {
    w: Waiting,
    /// Arrival order into the current queue.
    seq: u64,
    /// `since + S`: when its slack runs out.
    slack_end: SimTime,
    /// `since + B`: when its queueing budget runs out.
    budget_end: SimTime,
    /// Scheduling passes made before it entered its current queue: a pass
    /// has seen it there once `Arq::passes` is larger.
    entered_pass: u64,
}

/// The ARQ queues, busy-time fits and diversion counters.
#[derive(Clone, Debug)]
pub struct Arq {
    params: ArqParams,
    /// One queue per class, each in arrival order (`seq` ascending).
    queues: Vec<Vec<Entry>>,
    /// Queue of each waiting key.
    index: BTreeMap<u64, usize>,
    fits: Vec<BusyFit>,
    all: BusyFit,
    next_seq: u64,
    /// Latest time seen by `enqueue` or `divert_due`.
    now: SimTime,
    diverted_up: u64,
    diverted_down: u64,
    /// Scheduling passes so far.
    passes: u64,
    /// `(switch_at, key)` of every waiting application that can still
    /// switch, so that finding the due ones costs no scan of the queues.
    switches: std::collections::BTreeSet<(SimTime, u64)>,
}

impl Arq {
    pub fn new(params: ArqParams) -> Self {
        let mut params = params;
        params.classes = params.classes.max(1);
        if !(params.default_busy_s.is_finite() && params.default_busy_s > 0.0) {
            params.default_busy_s = DEFAULT_BUSY_S;
        }
        Arq {
            params,
            queues: vec![Vec::new(); params.classes],
            index: BTreeMap::new(),
            fits: vec![BusyFit::new(); params.classes],
            all: BusyFit::new(),
            next_seq: 0,
            now: 0,
            diverted_up: 0,
            diverted_down: 0,
            passes: 0,
            switches: std::collections::BTreeSet::new(),
        }
    }

    pub fn params(&self) -> &ArqParams {
        &self.params
    }

    pub fn classes(&self) -> usize {
        self.params.classes
    }

    /// Band of a quality score: 0 for the top band (most demanding
    /// application, best server), `classes − 1` for the bottom one. Bands
    /// are closed below and open above, except that 100 belongs to the top
    /// band; NaN is read as 0.
    pub fn class_of(&self, q: f64) -> usize {
        let classes = self.classes();
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 100.0) };
        // Non-negative, so the cast truncates like floor.
        let band = ((q * classes as f64 / 100.0) as usize).min(classes - 1);
        classes - 1 - band
    }

    /// Quality `Q_i` of a pool in the switching objective: its band's
    /// midpoint (95, 85, … for ten classes).
    pub fn pool_quality(&self, pool: usize) -> f64 {
        let width = 100.0 / self.classes() as f64;
        100.0 - (pool as f64 + 0.5) * width
    }

    /// The busy-time fit of one pool (out-of-range pools read as the last).
    pub fn busy_fit(&self, pool: usize) -> &BusyFit {
        &self.fits[pool.min(self.classes() - 1)]
    }

    /// The busy-time fit over all pools.
    pub fn all_busy_fit(&self) -> &BusyFit {
        &self.all
    }

    /// Records a busy period of a server in `pool` (out-of-range pools read
    /// as the last).
    pub fn record_busy(&mut self, pool: usize, seconds: f64) {
        let pool = pool.min(self.classes() - 1);
        self.fits[pool].record(seconds);
        self.all.record(seconds);
    }

    /// The busy-time distribution used for `pool`: its own fit, else the
    /// all-pool fit, else the prior.
    fn busy_dist(&self, pool: usize) -> Normal {
        let own = self.busy_fit(pool);
        if own.count() >= MIN_FIT_SAMPLES {
            own.normal()
        } else if self.all.count() >= MIN_FIT_SAMPLES {
            self.all.normal()
        } else {
            Normal {
                mean: self.params.default_busy_s,
                sd: self.params.default_busy_s,
            }
        }
    }

    /// `Pr_pool[seconds]`: probability that `pool` has a free server within
    /// `seconds`, given `busy` busy servers and `free` servers with room.
    pub fn free_probability(&self, pool: usize, seconds: f64, busy: u32, free: u32) -> f64 {
        if free > 0 {
            return 1.0;
        }
        if busy == 0 {
            return 0.0;
        }
        let survival = self.busy_dist(pool).survival(seconds);
        (1.0 - libm::pow(survival, f64::from(busy))).clamp(0.0, 1.0)
    }

    /// Switching time of an application now in `queue`, from what is left of
    /// its slack and budget at `now` (Paragon §4.2 eq. 2).
    fn switch_time(
        &self,
        queue: usize,
        now: SimTime,
        slack_end: SimTime,
        budget_end: SimTime,
        busy_in_pool: &[u32],
        free_in_pool: &[u32],
    ) -> SimTime {
        if queue + 1 >= self.classes() || !self.params.divert {
            return NEVER;
        }
        if budget_end <= now {
            return now;
        }
        let (i, j) = (queue, queue + 1);
        let count = |v: &[u32], p: usize| v.get(p).copied().unwrap_or(0);
        let (busy_i, free_i) = (count(busy_in_pool, i), count(free_in_pool, i));
        let (busy_j, free_j) = (count(busy_in_pool, j), count(free_in_pool, j));
        let (q_i, q_j) = (self.pool_quality(i), self.pool_quality(j));
        let budget_ns = budget_end - now;
        let budget_s = budget_ns as f64 / NS_PER_S;
        let slack_s = slack_end.saturating_sub(now) as f64 / NS_PER_S;

        let offset = |k: usize| -> u64 {
            (u128::from(budget_ns) * k as u128 / (SWITCH_GRID - 1) as u128) as u64
        };
        let mut values = [0.0_f64; SWITCH_GRID];
        for (k, value) in values.iter_mut().enumerate() {
            let t = offset(k) as f64 / NS_PER_S;
            let stay = (slack_s - t) * q_i * self.free_probability(i, t, busy_i, free_i);
            let go =
                (slack_s - budget_s) * q_j * self.free_probability(j, budget_s - t, busy_j, free_j);
            *value = stay.max(go);
        }
        let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let floor = best - best.abs() * TIE_TOLERANCE;
        let k = values.iter().rposition(|&v| v >= floor).unwrap_or(0);
        now.saturating_add(offset(k))
    }

    fn observe(&mut self, now: SimTime) {
        self.now = self.now.max(now);
    }

    fn push(&mut self, mut entry: Entry) {
        entry.seq = self.next_seq;
        self.next_seq += 1;
        entry.entered_pass = self.passes;
        if entry.w.switch_at != NEVER {
            self.switches.insert((entry.w.switch_at, entry.w.key));
        }
        self.index.insert(entry.w.key, entry.w.queue);
        self.queues[entry.w.queue].push(entry);
    }

    /// Queues an application: `demand` is its `Q_a`, `ct_ns` its optimal
    /// computation time, `p_ns` its classification overhead.
    /// `busy_in_pool[i]` counts busy servers of pool `i` and
    /// `free_in_pool[i]` servers with room (missing entries count as 0);
    /// they feed the free-server probabilities of the switching time. A key
    /// already waiting is replaced.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &mut self,
        key: u64,
        demand: f64,
        ct_ns: u64,
        p_ns: u64,
        priority: u8,
        now: SimTime,
        busy_in_pool: &[u32],
        free_in_pool: &[u32],
    ) {
        self.observe(now);
        self.remove(key);
        let class = self.class_of(demand);
        let ct_s = ct_ns as f64 / NS_PER_S;
        let p_s = p_ns as f64 / NS_PER_S;
        let slack_s = 1.05 * ct_s - p_s;
        let budget_s = 0.05 * ct_s - p_s;
        // to_nanos maps non-positive values to 0: no budget left.
        let slack_end = now.saturating_add(to_nanos(slack_s * NS_PER_S));
        let budget_end = now.saturating_add(to_nanos(budget_s * NS_PER_S));
        let switch_at = self.switch_time(
            class,
            now,
            slack_end,
            budget_end,
            busy_in_pool,
            free_in_pool,
        );
        self.push(Entry {
            w: Waiting {
                key,
                home: class,
                queue: class,
                since: now,
                switch_at,
                ct_ns,
                priority,
            },
            seq: 0,
            slack_end,
            budget_end,
            entered_pass: 0,
        });
    }

    /// Moves every application whose switching time has come (`switch_at ≤
    /// now`) and that has been through a scheduling pass in its current
    /// queue to the tail of the next queue, with a new switching time for
    /// the next pair; returns how many moved. Each application moves at most
    /// one queue per call. Call it before each scheduling pass.
    pub fn divert_due(&mut self, now: SimTime, busy_in_pool: &[u32], free_in_pool: &[u32]) -> u32 {
        self.observe(now);
        let last = self.classes() - 1;
        let passes = self.passes;
        let due: Vec<(SimTime, u64)> = self
            .switches
            .range(..=(now, u64::MAX))
            .copied()
            .filter(|&(_, key)| {
                self.index.get(&key).is_some_and(|&q| {
                    q < last
                        && self.queues[q]
                            .iter()
                            .any(|e| e.w.key == key && e.entered_pass < passes)
                })
            })
            .collect();
        let mut moving = Vec::with_capacity(due.len());
        for (at, key) in due {
            self.switches.remove(&(at, key));
            let Some(q) = self.index.remove(&key) else {
                continue;
            };
            if let Some(pos) = self.queues[q].iter().position(|e| e.w.key == key) {
                moving.push(self.queues[q].remove(pos));
            }
        }
        moving.sort_by_key(|e| (e.w.queue, e.seq));
        let moved = moving.len();
        for mut entry in moving {
            entry.w.queue += 1;
            entry.w.switch_at = self.switch_time(
                entry.w.queue,
                now,
                entry.slack_end,
                entry.budget_end,
                busy_in_pool,
                free_in_pool,
            );
            self.diverted_down += 1;
            self.push(entry);
        }
        moved as u32
    }

    /// Earliest pending switching time, if any application can still switch.
    pub fn next_switch(&self) -> Option<SimTime> {
        self.switches.first().map(|&(t, _)| t)
    }

    /// Positions of queue `q`'s entries in the order they are served.
    fn service_order(&self, q: usize) -> Vec<usize> {
        let queue = &self.queues[q];
        let mut order: Vec<usize> = (0..queue.len()).collect();
        match self.params.order {
            QueueOrder::Fifo => {}
            QueueOrder::Priority => {
                // Stable: FIFO within a priority.
                order.sort_by_key(|&i| std::cmp::Reverse(queue[i].w.priority));
            }
            QueueOrder::Sjf => {
                let now = self.now;
                // Stable: urgent ones first in FIFO order, then by CT, FIFO
                // among equal CTs.
                order.sort_by_key(|&i| {
                    let e = &queue[i];
                    let urgent = now >= e.w.switch_at.min(e.budget_end);
                    (!urgent, if urgent { 0 } else { e.w.ct_ns })
                });
            }
        }
        order
    }

    /// One scheduling pass, queues from the top (0) down, each in its
    /// service order. Every application of queue `q` is offered the pools
    /// `[q, q − 1, …]`: its own, then those above it whose queues are empty
    /// at that point of the pass, nearest first. `try_place(key, pools)`
    /// places it and returns the pool used, or returns `None`, which blocks
    /// the rest of that queue (but not the queues below). Returns the placed
    /// keys in order. A placement in a pool above the application's queue
    /// counts as a diversion up. [`Offer::Pass`] leaves the application in
    /// its place without blocking the ones behind it.
    pub fn schedule<O: Into<Offer>>(
        &mut self,
        mut try_place: impl FnMut(u64, &[usize]) -> O,
    ) -> Vec<u64> {
        let mut placed = Vec::new();
        let mut allowed = Vec::with_capacity(self.classes());
        for q in 0..self.classes() {
            if self.queues[q].is_empty() {
                continue;
            }
            allowed.clear();
            allowed.push(q);
            let mut p = q;
            while p > 0 && self.queues[p - 1].is_empty() {
                p -= 1;
                allowed.push(p);
            }
            let order: Vec<usize> = match self.params.order {
                QueueOrder::Fifo => Vec::new(),
                _ => self.service_order(q),
            };
            let fifo = self.params.order == QueueOrder::Fifo;
            let mut taken: Vec<usize> = Vec::new();
            let len = self.queues[q].len();
            let positions: Box<dyn Iterator<Item = usize>> = if fifo {
                Box::new(0..len)
            } else {
                Box::new(order.iter().copied())
            };
            for i in positions {
                let key = self.queues[q][i].w.key;
                let pool = match try_place(key, &allowed).into() {
                    Offer::Placed(pool) => pool,
                    Offer::Pass => continue,
                    Offer::Wait => break,
                };
                debug_assert!(allowed.contains(&pool), "pool {pool} not offered");
                taken.push(i);
                placed.push(key);
                if pool < q {
                    self.diverted_up += 1;
                }
            }
            if taken.is_empty() {
                continue;
            }
            taken.sort_unstable();
            let entries = std::mem::take(&mut self.queues[q]);
            for (i, entry) in entries.into_iter().enumerate() {
                if taken.binary_search(&i).is_ok() {
                    self.index.remove(&entry.w.key);
                    self.switches.remove(&(entry.w.switch_at, entry.w.key));
                } else {
                    self.queues[q].push(entry);
                }
            }
        }
        self.passes += 1;
        placed
    }

    /// The waiting application `key`, if any.
    pub fn get(&self, key: u64) -> Option<&Waiting> {
        let q = *self.index.get(&key)?;
        self.queues[q].iter().find(|e| e.w.key == key).map(|e| &e.w)
    }

    /// Takes `key` out of its queue.
    pub fn remove(&mut self, key: u64) -> Option<Waiting> {
        let q = self.index.remove(&key)?;
        let at = self.queues[q].iter().position(|e| e.w.key == key)?;
        let entry = self.queues[q].remove(at);
        self.switches.remove(&(entry.w.switch_at, key));
        Some(entry.w)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn diverted_up(&self) -> u64 {
        self.diverted_up
    }

    pub fn diverted_down(&self) -> u64 {
        self.diverted_down
    }

    pub fn queue_lengths(&self) -> Vec<usize> {
        self.queues.iter().map(Vec::len).collect()
    }
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
        place_in_order(&mut self.urgent, place, |_, _| {})?;
        let none_free = vec![0; pools.free.len()];
        self.arq.divert_due(now, &pools.busy, &none_free);
        let mut failure = None;
        let tasks = &self.tasks;
        let homes = &self.homes;
        let keys = self.arq.schedule(|key, allowed| {
            if failure.is_some() {
                return Offer::Wait;
            }
            let Some((task, arrived)) = tasks.get(&key) else {
                return Offer::Wait;
            };
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
                    servers: None,
                },
                true => Scope::ANY,
            };
            match place(task, *arrived, scope) {
                Ok(Attempt::Placed { .. }) if diverted => Offer::Placed(current),
                Ok(Attempt::Placed { pool, .. }) => Offer::Placed(pool),
                Ok(Attempt::NoRoom) => Offer::Wait,
                Ok(Attempt::TooLarge) => Offer::Pass,
                Err(e) => {
                    failure = Some(e);
                    Offer::Wait
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

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const NONE: [u32; 10] = [0; 10];
    const ALL_FREE: [u32; 10] = [1; 10];
    const ONE_BUSY: [u32; 10] = [1; 10];

    fn arq() -> Arq {
        Arq::new(ArqParams::default())
    }

    fn arq_with(order: QueueOrder) -> Arq {
        Arq::new(ArqParams {
            order,
            ..ArqParams::default()
        })
    }

    /// A demand in the middle of class `c` of ten.
    fn demand_of(c: usize) -> f64 {
        100.0 - (c as f64 + 0.5) * 10.0
    }

    /// Enqueues into class `c` with `P = 0`, every pool with one busy
    /// server and none free: under the default prior the switching time is
    /// the end of the budget, `0.05·CT`.
    fn put(a: &mut Arq, key: u64, c: usize, ct_s: u64, priority: u8) {
        a.enqueue(
            key,
            demand_of(c),
            ct_s * S,
            0,
            priority,
            0,
            &ONE_BUSY,
            &NONE,
        );
        let w = a.get(key).unwrap();
        assert_eq!(w.queue, c);
        if c < 9 {
            assert_eq!(w.switch_at, ct_s * S / 20);
        }
    }

    #[test]
    fn classes_band_the_scale_from_the_top() {
        let a = arq();
        assert_eq!(a.class_of(95.0), 0);
        assert_eq!(a.class_of(5.0), 9);
        assert_eq!(a.class_of(100.0), 0);
        assert_eq!(a.class_of(90.0), 0);
        assert_eq!(a.class_of(89.999), 1);
        assert_eq!(a.class_of(10.0), 8);
        assert_eq!(a.class_of(9.999), 9);
        assert_eq!(a.class_of(0.0), 9);
        assert_eq!(a.class_of(-3.0), 9);
        assert_eq!(a.class_of(150.0), 0);
        assert_eq!(a.class_of(f64::NAN), 9);
        let four = Arq::new(ArqParams {
            classes: 4,
            ..ArqParams::default()
        });
        assert_eq!(four.class_of(75.0), 0);
        assert_eq!(four.class_of(74.9), 1);
        assert_eq!(four.class_of(24.9), 3);
        assert_eq!(a.pool_quality(0), 95.0);
        assert_eq!(a.pool_quality(1), 85.0);
        let one = Arq::new(ArqParams {
            classes: 0,
            ..ArqParams::default()
        });
        assert_eq!(one.classes(), 1);
        assert_eq!(one.class_of(99.0), 0);
        assert_eq!(one.class_of(1.0), 0);
    }

    #[test]
    fn empty_server_is_top_quality_and_pool_zero() {
        let q = server_quality(&[100.0; SOURCES], &[0.0; SOURCES]);
        assert_eq!(q, 100.0);
        assert_eq!(arq().class_of(q), 0);
    }

    #[test]
    fn demand_and_quality_on_hand_made_vectors() {
        // Harmless and tolerant: no demand. Aggressive and fragile: full.
        assert_eq!(app_demand(&[100.0; SOURCES], &[0.0; SOURCES]), 0.0);
        assert_eq!(app_demand(&[0.0; SOURCES], &[100.0; SOURCES]), 100.0);
        // (30 + (100 − 80)) / 2 = 25 on every source.
        assert_eq!(app_demand(&[80.0; SOURCES], &[30.0; SOURCES]), 25.0);
        // One fragile source among tolerant ones: (0 + 100)/2 / 10 = 5.
        let mut t = [100.0; SOURCES];
        t[3] = 0.0;
        assert!((app_demand(&t, &[0.0; SOURCES]) - 5.0).abs() < 1e-12);
        // Out-of-range and NaN inputs are clamped, NaN read as worst case.
        assert_eq!(app_demand(&[150.0; SOURCES], &[-10.0; SOURCES]), 0.0);
        assert_eq!(
            app_demand(&[f64::NAN; SOURCES], &[f64::NAN; SOURCES]),
            100.0
        );

        // min(60, 100 − 70) = 30.
        assert_eq!(server_quality(&[60.0; SOURCES], &[70.0; SOURCES]), 30.0);
        // min(20, 100 − 10) = 20.
        assert_eq!(server_quality(&[20.0; SOURCES], &[10.0; SOURCES]), 20.0);
        // Summed caused scores beyond 100 leave nothing.
        assert_eq!(server_quality(&[50.0; SOURCES], &[150.0; SOURCES]), 0.0);
        // Mixed: source 0 gives min(40, 100) = 40, the rest 100 → 94.
        let mut st = [100.0; SOURCES];
        st[0] = 40.0;
        assert!((server_quality(&st, &[0.0; SOURCES]) - 94.0).abs() < 1e-12);
    }

    #[test]
    fn busy_fit_moments_and_cdf() {
        let mut f = BusyFit::new();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            f.record(x);
        }
        f.record(f64::NAN);
        f.record(f64::INFINITY);
        assert_eq!(f.count(), 8);
        assert!((f.mean() - 5.0).abs() < 1e-12);
        assert!((f.variance() - 32.0 / 7.0).abs() < 1e-12);
        assert!((f.sd() - libm::sqrt(32.0 / 7.0)).abs() < 1e-12);

        // Far from zero, truncation is negligible: the median is the mean.
        let mut g = BusyFit::new();
        for x in [102.0, 104.0, 104.0, 104.0, 105.0, 105.0, 107.0, 109.0] {
            g.record(x);
        }
        assert!((g.cdf(105.0) - 0.5).abs() < 1e-9);
        // One sd above the mean: Φ(1) ≈ 0.8413.
        assert!((g.cdf(105.0 + g.sd()) - 0.841_344_746).abs() < 1e-6);
        let mut prev = 0.0;
        for i in 0..=300 {
            let c = g.cdf(f64::from(i));
            assert!(c >= prev, "cdf fell at {i}");
            assert!((0.0..=1.0).contains(&c));
            prev = c;
        }
        assert!(prev > 0.999_999);
        // Busy periods are never negative: no mass below zero.
        assert_eq!(f.cdf(-1.0), 0.0);
        assert_eq!(f.cdf(0.0), 0.0);
        assert!(f.cdf(5.0) > 0.4 && f.cdf(5.0) < 0.5);

        // Identical samples: a step at the mean.
        let mut h = BusyFit::new();
        for _ in 0..3 {
            h.record(3.0);
        }
        assert_eq!(h.sd(), 0.0);
        assert_eq!(h.cdf(2.9), 0.0);
        assert_eq!(h.cdf(3.0), 1.0);
    }

    #[test]
    fn free_probability_grows_with_servers_and_time() {
        let mut a = arq();
        for x in [8.0, 9.0, 10.0, 11.0, 12.0] {
            a.record_busy(0, x);
        }
        let p = |n: u32, t: f64| a.free_probability(0, t, n, 0);
        assert_eq!(p(0, 100.0), 0.0, "no servers, no free server");
        assert_eq!(p(3, 0.0), 0.0);
        assert!(p(1, 9.0) < p(2, 9.0) && p(2, 9.0) < p(5, 9.0));
        assert!(p(2, 8.0) < p(2, 10.0) && p(2, 10.0) < p(2, 12.0));
        // Exact form: 1 − (1 − F)^n.
        let f = a.busy_fit(0).cdf(10.0);
        assert!((p(3, 10.0) - (1.0 - libm::pow(1.0 - f, 3.0))).abs() < 1e-12);
        assert_eq!(a.free_probability(0, 0.0, 3, 1), 1.0);
        assert_eq!(a.free_probability(0, 0.0, 0, 2), 1.0);
    }

    #[test]
    fn busy_fits_fall_back_to_all_pools_then_to_the_prior() {
        let mut a = Arq::new(ArqParams {
            default_busy_s: 10.0,
            ..ArqParams::default()
        });
        // Prior: mean = sd = 10 s, truncated at zero.
        let prior = Normal {
            mean: 10.0,
            sd: 10.0,
        };
        let expect = 1.0 - libm::pow(prior.survival(10.0), 2.0);
        assert!((a.free_probability(4, 10.0, 2, 0) - expect).abs() < 1e-12);
        // Five short periods in pool 3: pool 3 uses them, pool 0 the all-pool
        // fit, which is the same data.
        for x in [1.0, 1.1, 0.9, 1.0, 1.0] {
            a.record_busy(3, x);
        }
        assert!(a.free_probability(3, 2.0, 2, 0) > 0.999);
        assert_eq!(
            a.free_probability(0, 2.0, 2, 0),
            a.free_probability(3, 2.0, 2, 0)
        );
        // Pool 0's own fit takes over once it has enough samples.
        for _ in 0..MIN_FIT_SAMPLES {
            a.record_busy(0, 100.0);
        }
        assert!(a.free_probability(0, 2.0, 2, 0) < 1e-6);
        assert_eq!(a.all_busy_fit().count(), 5 + MIN_FIT_SAMPLES);
    }

    #[test]
    fn no_budget_switches_at_once() {
        let mut a = arq();
        // B = 0.05 · 10 s − 1 s < 0.
        a.enqueue(1, 95.0, 10 * S, S, 0, 7 * S, &NONE, &NONE);
        assert_eq!(a.get(1).unwrap().switch_at, 7 * S);
        // B = 0 exactly.
        a.enqueue(2, 95.0, 10 * S, S / 2, 0, 7 * S, &NONE, &NONE);
        assert_eq!(a.get(2).unwrap().switch_at, 7 * S);
        assert_eq!(a.next_switch(), Some(7 * S));
        // The last queue never switches.
        a.enqueue(3, 1.0, 100 * S, 0, 0, 7 * S, &NONE, &NONE);
        assert_eq!(a.get(3).unwrap().switch_at, NEVER);
    }

    #[test]
    fn holding_until_suitable_never_diverts_down() {
        let mut a = Arq::new(ArqParams {
            divert: false,
            ..ArqParams::default()
        });
        // No budget at all (B < 0): the budget rule would switch at once.
        a.enqueue(1, 95.0, 10 * S, S, 0, 7 * S, &NONE, &NONE);
        assert_eq!(a.get(1).unwrap().switch_at, NEVER);
        assert_eq!(a.next_switch(), None);
        assert_eq!(a.divert_due(1_000 * S, &NONE, &NONE), 0);
        assert_eq!(a.get(1).unwrap().queue, 0);
    }

    /// CT = 100 s, P = 0: S = 105 s, B = 5 s; pool 1 frees within about B.
    fn switching_arq(pool0: &[f64]) -> Arq {
        let mut a = arq();
        for &x in pool0 {
            a.record_busy(0, x);
        }
        for x in [2.0, 4.0, 5.0, 6.0, 8.0] {
            a.record_busy(1, x);
        }
        a
    }

    #[test]
    fn hopeless_own_pool_switches_early() {
        let mut a = switching_arq(&[1000.0, 1001.0, 999.0, 1000.0, 1000.0]);
        let busy = [3, 4, 0, 0, 0, 0, 0, 0, 0, 0];
        a.enqueue(1, 95.0, 100 * S, 0, 0, 0, &busy, &NONE);
        let w = a.get(1).unwrap();
        assert_eq!(w.queue, 0);
        assert!(w.switch_at < 5 * S / 4, "switch at {}", w.switch_at);
    }

    #[test]
    fn own_pool_freeing_soon_switches_late() {
        let mut a = switching_arq(&[3.9, 4.0, 4.1, 4.0, 4.0]);
        let busy = [2, 4, 0, 0, 0, 0, 0, 0, 0, 0];
        a.enqueue(1, 95.0, 100 * S, 0, 0, 0, &busy, &NONE);
        let w = a.get(1).unwrap();
        assert!(
            w.switch_at > 15 * S / 4 && w.switch_at < 5 * S,
            "switch at {}",
            w.switch_at
        );
    }

    #[test]
    fn free_own_pool_peaks_at_once() {
        // Pr_i ≡ 1, so (S − t)·Q_i·Pr_i[t] is largest at t = 0: the
        // application tries its pool in the next pass and moves on if it is
        // not placed there.
        let mut a = arq();
        a.enqueue(1, 95.0, 100 * S, 0, 0, 3 * S, &NONE, &ALL_FREE);
        assert_eq!(a.get(1).unwrap().switch_at, 3 * S);
        assert_eq!(a.divert_due(3 * S, &NONE, &ALL_FREE), 0);
        assert!(a.schedule(|_, _| None).is_empty());
        assert_eq!(a.divert_due(3 * S, &NONE, &ALL_FREE), 1);
    }

    #[test]
    fn ties_pick_the_latest_switching_time() {
        // Pool 0 has no servers, pool 1 a free one: the objective is flat,
        // so the application waits its whole budget.
        let mut a = arq();
        let free = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        a.enqueue(1, 95.0, 100 * S, 0, 0, 10 * S, &NONE, &free);
        assert_eq!(a.get(1).unwrap().switch_at, 15 * S);
    }

    #[test]
    fn diversion_down_steps_one_queue_until_the_last() {
        let mut a = arq();
        // Class 6, no budget.
        a.enqueue(9, 35.0, 10 * S, S, 0, 0, &NONE, &NONE);
        assert_eq!(a.get(9).unwrap().queue, 6);
        // Not yet offered a pass in its queue: stays.
        assert_eq!(a.divert_due(0, &NONE, &NONE), 0);
        let mut expected = 6;
        for step in 1..=3 {
            assert!(a.schedule(|_, _| None).is_empty());
            assert_eq!(a.divert_due(step, &NONE, &NONE), 1);
            expected += 1;
            let w = a.get(9).unwrap();
            assert_eq!((w.home, w.queue), (6, expected));
            assert_eq!(a.diverted_down(), step);
        }
        assert_eq!(a.get(9).unwrap().switch_at, NEVER);
        assert_eq!(a.next_switch(), None);
        assert!(a.schedule(|_, _| None).is_empty());
        assert_eq!(a.divert_due(100 * S, &NONE, &NONE), 0);
        assert_eq!(a.get(9).unwrap().queue, 9);
        assert_eq!(a.diverted_down(), 3);
    }

    #[test]
    fn diversion_down_waits_for_the_switching_time() {
        let mut a = arq();
        let free = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        // As in the tie test: switches at the end of its 5 s budget.
        a.enqueue(1, 95.0, 100 * S, 0, 0, 0, &NONE, &free);
        assert_eq!(a.next_switch(), Some(5 * S));
        assert!(a.schedule(|_, _| None).is_empty());
        assert_eq!(a.divert_due(5 * S - 1, &NONE, &free), 0);
        assert_eq!(a.divert_due(5 * S, &NONE, &free), 1);
        let w = a.get(1).unwrap();
        assert_eq!(w.queue, 1);
        // Budget spent: the next switch is immediate.
        assert_eq!(w.switch_at, 5 * S);
        assert_eq!(a.queue_lengths()[..2], [0, 1]);
    }

    #[test]
    fn diversion_up_through_empty_queues_only() {
        let mut a = arq();
        put(&mut a, 100, 0, 100, 0);
        put(&mut a, 3, 3, 100, 0);
        let mut seen = Vec::new();
        let placed = a.schedule(|key, pools| {
            seen.push((key, pools.to_vec()));
            None
        });
        assert!(placed.is_empty());
        assert_eq!(seen, [(100, vec![0]), (3, vec![3, 2, 1])]);

        put(&mut a, 2, 2, 100, 0);
        seen.clear();
        a.schedule(|key, pools| {
            seen.push((key, pools.to_vec()));
            None
        });
        assert_eq!(seen, [(100, vec![0]), (2, vec![2, 1]), (3, vec![3])]);

        // Queue 2 drains in this pass, so queue 3 may use pool 2.
        seen.clear();
        let placed = a.schedule(|key, pools| {
            seen.push((key, pools.to_vec()));
            match key {
                2 => Some(2),
                3 => Some(2),
                _ => None,
            }
        });
        assert_eq!(placed, [2, 3]);
        assert_eq!(seen[2], (3, vec![3, 2, 1]));
        assert_eq!(a.diverted_up(), 1);
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn head_of_line_blocks_only_its_own_queue() {
        let mut a = arq();
        put(&mut a, 10, 1, 100, 0);
        put(&mut a, 11, 1, 100, 0);
        put(&mut a, 20, 2, 100, 0);
        put(&mut a, 21, 2, 100, 0);
        let mut tried = Vec::new();
        let placed = a.schedule(|key, pools| {
            tried.push(key);
            if key == 10 { None } else { Some(pools[0]) }
        });
        assert_eq!(tried, [10, 20, 21]);
        assert_eq!(placed, [20, 21]);
        assert_eq!(a.queue_lengths()[1..3], [2, 0]);
        assert_eq!(a.diverted_up(), 0);
    }

    #[test]
    fn sjf_serves_short_jobs_first_but_not_past_a_switching_time() {
        let mut a = arq_with(QueueOrder::Sjf);
        put(&mut a, 1, 4, 30, 0);
        put(&mut a, 2, 4, 10, 0);
        put(&mut a, 3, 4, 20, 0);
        let mut b = a.clone();
        assert_eq!(a.schedule(|_, p| Some(p[0])), [2, 3, 1]);

        // A long job with no budget left goes first.
        b.enqueue(4, demand_of(4), 1000 * S, 60 * S, 0, 0, &ONE_BUSY, &NONE);
        assert_eq!(b.get(4).unwrap().switch_at, 0);
        assert_eq!(b.schedule(|_, p| Some(p[0])), [4, 2, 3, 1]);

        // FIFO ignores CT.
        let mut f = arq();
        put(&mut f, 1, 4, 30, 0);
        put(&mut f, 2, 4, 10, 0);
        assert_eq!(f.schedule(|_, p| Some(p[0])), [1, 2]);
    }

    #[test]
    fn priority_serves_higher_first_fifo_within() {
        let mut a = arq_with(QueueOrder::Priority);
        put(&mut a, 1, 5, 10, 1);
        put(&mut a, 2, 5, 10, 5);
        put(&mut a, 3, 5, 10, 5);
        put(&mut a, 4, 5, 10, 3);
        let mut tried = Vec::new();
        let placed = a.schedule(|key, p| {
            tried.push(key);
            (key != 4).then_some(p[0])
        });
        // 4 blocks the head of line; 1 waits behind it.
        assert_eq!(tried, [2, 3, 4]);
        assert_eq!(placed, [2, 3]);
        assert_eq!(a.get(1).unwrap().queue, 5);
    }

    #[test]
    fn an_application_no_server_could_hold_is_passed_not_waited_on() {
        let mut a = arq();
        for key in 1..=4 {
            put(&mut a, key, 5, 10, 0);
        }
        let mut tried = Vec::new();
        let placed = a.schedule(|key, p| {
            tried.push(key);
            match key {
                2 => Offer::Pass,
                4 => Offer::Wait,
                _ => Offer::Placed(p[0]),
            }
        });
        // 2 is passed and keeps its place; 4 blocks what would follow
        assert_eq!(tried, [1, 2, 3, 4]);
        assert_eq!(placed, [1, 3]);
        assert_eq!(a.get(2).unwrap().queue, 5);
        let placed = a.schedule(|key, p| (key == 2).then_some(p[0]));
        assert_eq!(placed, [2], "it is first again once it can be held");
    }

    #[test]
    fn remove_and_replace() {
        let mut a = arq();
        assert!(a.is_empty());
        put(&mut a, 1, 2, 10, 0);
        put(&mut a, 2, 7, 10, 0);
        assert_eq!(a.len(), 2);
        assert_eq!(a.queue_lengths(), [0, 0, 1, 0, 0, 0, 0, 1, 0, 0]);
        // Re-enqueueing a key replaces it.
        put(&mut a, 1, 4, 10, 0);
        assert_eq!(a.len(), 2);
        assert_eq!(a.queue_lengths(), [0, 0, 0, 0, 1, 0, 0, 1, 0, 0]);
        let w = a.remove(2).unwrap();
        assert_eq!((w.key, w.home, w.queue, w.ct_ns), (2, 7, 7, 10 * S));
        assert!(a.remove(2).is_none());
        assert_eq!(a.len(), 1);
        assert!(a.get(2).is_none());
    }
}
