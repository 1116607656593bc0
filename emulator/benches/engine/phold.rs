//! The peer comparison of the engine bench: one PHOLD model run by dcemu's
//! engine (1 and 2 partitions), by the bare `BinaryHeap` loop, and by
//! nexosim (single-threaded), with the same event count checked.
//!
//! The model is the classic PHOLD of tokens: every actor starts with
//! `fanout` tokens; each token, on arriving, is counted and sent on to
//! another actor after a latency in `[L, 4L)`. Where it goes and how long it
//! takes is a hash of the token's identity and hop count, not a draw from
//! the receiving actor's state, so the set of events does not depend on the
//! order in which simultaneous events run: the two engines order ties each
//! in their own way and must still agree on every actor's event count and on
//! an order-free sum over the events it handled. Nothing is sent that would
//! arrive at or after the end, so both stop on an empty queue.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dcemu_actors::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use dcemu_topology::SimTime;
use nexosim::model::Model;
use nexosim::ports::EventSource;
use nexosim::simulation::{EventId, Mailbox, Scheduler, SimInit};
use nexosim::time::MonotonicTime;
use serde::{Deserialize, Serialize};

/// A token on the wire: its identity in the high 24 bits, its hop count in
/// the low 40.
fn payload(token: u64, hop: u64) -> u64 {
    (token << 40) | (hop & ((1 << 40) - 1))
}

/// SplitMix64's finaliser: a well-mixed 64-bit hash.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Where a token sent by actor `me` goes next and how long it takes.
fn hop(me: u32, n: u32, lookahead: SimTime, wire: u64) -> (u32, SimTime) {
    let h = mix(wire);
    let dst = ((u64::from(me) + 1 + h % u64::from(n - 1)) % u64::from(n)) as u32;
    let latency = lookahead + (h >> 32) % (3 * lookahead);
    (dst, latency)
}

/// The same model as a dcemu actor.
pub struct TokenHopper {
    n: u32,
    fanout: u32,
    lookahead: SimTime,
    end: SimTime,
    received: u64,
    sum: u64,
}

impl TokenHopper {
    fn send_on(&self, ctx: &mut Ctx<'_, u64>, wire: u64) -> Result<(), ModelError> {
        let (dst, latency) = hop(ctx.me().0, self.n, self.lookahead, wire);
        if ctx.now().saturating_add(latency) < self.end {
            ctx.send(ActorId(dst), latency, wire)?;
        }
        Ok(())
    }
}

impl Actor for TokenHopper {
    type Msg = u64;

    fn start(&mut self, ctx: &mut Ctx<'_, u64>) -> Result<(), ModelError> {
        let first = u64::from(ctx.me().0) * u64::from(self.fanout);
        for token in first..first + u64::from(self.fanout) {
            self.send_on(ctx, payload(token, 0))?;
        }
        Ok(())
    }

    fn handle(&mut self, ev: Envelope<u64>, ctx: &mut Ctx<'_, u64>) -> Result<(), ModelError> {
        self.received += 1;
        self.sum = self.sum.wrapping_add(mix(ev.payload ^ ev.deliver_at));
        self.send_on(
            ctx,
            payload(ev.payload >> 40, (ev.payload & ((1 << 40) - 1)) + 1),
        )
    }

    fn finish(&mut self, undelivered: &[Envelope<u64>], _end: SimTime, out: &mut Metrics) {
        out.add("received", self.received);
        out.add("undelivered", undelivered.len() as u64);
        out.add("sum", self.sum >> 32);
    }
}

/// The dcemu actors of the model.
pub fn token_hoppers(
    n: u32,
    fanout: u32,
    lookahead: SimTime,
    end: SimTime,
) -> Vec<(String, TokenHopper)> {
    (0..n)
        .map(|i| {
            let actor = TokenHopper {
                n,
                fanout,
                lookahead,
                end,
                received: 0,
                sum: 0,
            };
            (format!("token-{i:05}"), actor)
        })
        .collect()
}

/// What one actor handled: its event count and the order-free sum.
#[derive(Default)]
pub struct Tally {
    pub received: AtomicU64,
    pub sum: AtomicU64,
}

/// The same model as a nexosim model. A token is scheduled straight onto
/// its destination's `arrive` input at its arrival time, through the
/// simulation's global scheduler and one registered event source per actor:
/// one handler call per event, as in dcemu. (Sending through outputs needs
/// one output per destination, n² in all, since a model can address another
/// only through a connected port, and a self-scheduled departure: measured
/// 30× slower than this at 1,000 actors, 0.14 M events/s.)
#[derive(Serialize, Deserialize)]
pub struct NxHopper {
    me: u32,
    n: u32,
    lookahead: u64,
    end: u64,
    #[serde(skip)]
    shared: Arc<Shared>,
    #[serde(skip)]
    tally: Arc<Tally>,
}

/// What every model of a run shares: the scheduler (set once the
/// simulation is built, before it runs), each actor's `arrive` event source,
/// and a count of events that could not be scheduled.
#[derive(Default)]
pub struct Shared {
    scheduler: OnceLock<Scheduler>,
    arrive: Vec<EventId<(u64, u64)>>,
    failures: AtomicU64,
}

impl Shared {
    /// Schedules token `wire`, sent by `me` at `now`, on its destination.
    fn send_on(&self, me: u32, n: u32, lookahead: u64, end: u64, now: u64, wire: u64) {
        let (dst, latency) = hop(me, n, lookahead, wire);
        let at = now.saturating_add(latency);
        if at >= end {
            return;
        }
        let scheduled = self.scheduler.get().is_some_and(|scheduler| {
            scheduler
                .schedule_event(
                    Duration::from_nanos(latency),
                    &self.arrive[dst as usize],
                    (wire, at),
                )
                .is_ok()
        });
        if !scheduled {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[Model]
impl NxHopper {
    /// A token arrives; `at` is the virtual time in ns.
    pub async fn arrive(&mut self, (wire, at): (u64, u64)) {
        self.tally.received.fetch_add(1, Ordering::Relaxed);
        let sum = self.tally.sum.load(Ordering::Relaxed);
        self.tally
            .sum
            .store(sum.wrapping_add(mix(wire ^ at)), Ordering::Relaxed);
        let next = payload(wire >> 40, (wire & ((1 << 40) - 1)) + 1);
        self.shared
            .send_on(self.me, self.n, self.lookahead, self.end, at, next);
    }
}

/// A nexosim run of the model: per-actor tallies, events, and the wall time
/// of the run alone (building the simulation is not timed).
pub struct NxRun {
    pub tallies: Vec<Arc<Tally>>,
    pub events: u64,
    pub wall: Duration,
}

/// Builds the model on a single-threaded nexosim simulation and runs it to
/// an empty queue.
pub fn run_nexosim(n: u32, fanout: u32, lookahead: u64, end: u64) -> Result<NxRun, String> {
    let mailboxes: Vec<Mailbox<NxHopper>> = (0..n).map(|_| Mailbox::new()).collect();
    let mut init = SimInit::with_num_threads(1);
    let arrive = mailboxes
        .iter()
        .map(|mailbox| {
            EventSource::new()
                .connect(NxHopper::arrive, mailbox)
                .register(&mut init)
        })
        .collect();
    let shared = Arc::new(Shared {
        arrive,
        ..Shared::default()
    });
    let tallies: Vec<Arc<Tally>> = (0..n).map(|_| Arc::default()).collect();
    for (me, mailbox) in (0..n).zip(mailboxes) {
        let model = NxHopper {
            me,
            n,
            lookahead,
            end,
            shared: Arc::clone(&shared),
            tally: Arc::clone(&tallies[me as usize]),
        };
        init = init.add_model(model, mailbox, &format!("token-{me:05}"));
    }
    let mut simulation = init
        .init(MonotonicTime::EPOCH)
        .map_err(|e| format!("nexosim: init: {e}"))?;
    if shared.scheduler.set(simulation.scheduler()).is_err() {
        return Err("nexosim: the scheduler was already set".into());
    }
    for me in 0..n {
        let first = u64::from(me) * u64::from(fanout);
        for token in first..first + u64::from(fanout) {
            shared.send_on(me, n, lookahead, end, 0, payload(token, 0));
        }
    }
    let started = std::time::Instant::now();
    simulation.run().map_err(|e| format!("nexosim: run: {e}"))?;
    let wall = started.elapsed();
    let failed = shared.failures.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("nexosim: {failed} events could not be scheduled"));
    }
    let events = tallies
        .iter()
        .map(|t| t.received.load(Ordering::Relaxed))
        .sum();
    Ok(NxRun {
        tallies,
        events,
        wall,
    })
}
