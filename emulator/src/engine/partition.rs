use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use dcemu_actors::kernel::{
    Actor, ActorId, ActorLog, ActorRng, Ctx, Envelope, Metrics, ModelError, actor_rng,
};
use dcemu_topology::SimTime;

use super::horizon::{Distances, Horizon};
use super::queue::Queued;
use super::rounds::{Agreed, Rounds};
use super::{
    ActorOutput, EngineConfig, EngineError, EngineOutput, LOG_BUDGET_BYTES, Logs, PartitionLoad,
    Progress, Transport, TransportError,
};

/// Events between two updates of the live progress counters.
const PROGRESS_EVERY: u64 = 4096;

/// One event in this many is timed (wall clock, engine bookkeeping never
/// read by a model) to estimate each actor's share of the work
/// ([`ActorOutput::busy_ns`]) at a cost the run does not notice.
pub(crate) const BUSY_SAMPLE: u64 = 32;

/// One hosted actor with the state the engine keeps for it.
struct Slot<A> {
    id: ActorId,
    name: String,
    actor: A,
    seq: u64,
    rng: ActorRng,
    log: ActorLog,
    /// The longest chain of cross-partition messages behind this actor's
    /// state (see [`Envelope::causal_hops`]).
    causal_hops: u32,
    events: u64,
    /// Wall time of the sampled events' handling (see [`BUSY_SAMPLE`]).
    sampled_ns: u64,
}

/// A set of actors hosted by one runtime, with their pending events.
pub struct Partition<A: Actor> {
    index: usize,
    slots: Vec<Slot<A>>,
    /// For every actor id of the run: (partition, index in that partition's slots).
    location: Arc<Vec<(u32, u32)>>,
    distances: Arc<Distances>,
    /// Check every message against the distances: with several partitions
    /// and declared links (`Ctx::send`'s lookahead check covers
    /// [`Reach::Uniform`](super::Reach::Uniform)).
    check_links: bool,
    partitions: usize,
    heap: BinaryHeap<Queued<A::Msg>>,
    /// With several partitions and hosted actors of unlike distances: the
    /// pending event times of each distance class, whose minima bound the
    /// horizon (see [`Partition::horizon`]). Empty otherwise.
    class_times: Vec<BinaryHeap<Reverse<SimTime>>>,
    outbox: Vec<Envelope<A::Msg>>,
    remote: Vec<Vec<Envelope<A::Msg>>>,
    /// `sent[p]`: the earliest envelope in `remote[p]`.
    sent: Vec<SimTime>,
    /// Everything before this time has been handled: no envelope may still
    /// arrive for it.
    handled_until: SimTime,
    /// Where the current window ends: the agreed bound from the other
    /// partitions, lowered as this partition sends envelopes out to the time
    /// their consequences could first come back (see [`Partition::horizon`]).
    window_end: SimTime,
    config: EngineConfig,
    actors_total: u32,
    events: u64,
    windows: u64,
    /// Windows this partition took part in (it sits out the others).
    windows_taken: u64,
    last_event: SimTime,
    /// Log bytes buffered by this partition's actors.
    log_bytes: usize,
    /// Wall time spent in the rounds' exchanges (waiting for peers
    /// included): engine bookkeeping for `run.json`, never read by a model.
    exchange: ExchangeStats,
}

/// What [`Partition::run_streaming`] hands over, in this order (passed
/// by value once per actor, never stored here).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Handed<'a> {
    /// The run is over: everything but the actors' outputs, which follow
    /// (a node tells the coordinator first, so it takes the larger frames
    /// of results from then on).
    Ended(&'a PartitionOutput),
    /// One actor's output, once it is finished.
    Actor(ActorId, ActorOutput),
}

pub(crate) struct PartitionOutput {
    pub(crate) actors: Vec<(ActorId, ActorOutput)>,
    pub(crate) events: u64,
    pub(crate) windows: u64,
    pub(crate) windows_taken: u64,
    pub(crate) last_event: SimTime,
    pub(crate) pending: bool,
    /// The longest chain of cross-partition messages behind any event
    /// handled here.
    pub(crate) causal_steps: u32,
    pub(crate) exchange: ExchangeStats,
}

/// Wall time of a partition's exchanges: how many, in total, the shortest
/// and the longest (the shortest is the round trip when no peer is late).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExchangeStats {
    pub count: u64,
    pub total: std::time::Duration,
    pub min: std::time::Duration,
    pub max: std::time::Duration,
}

impl ExchangeStats {
    fn record(&mut self, took: std::time::Duration) {
        self.min = if self.count == 0 {
            took
        } else {
            self.min.min(took)
        };
        self.max = self.max.max(took);
        self.total += took;
        self.count += 1;
    }
}

/// Distributes actors to partitions by `assignment[actor id] = partition`.
/// `hosted` holds, in id order, the actors built in this process: every
/// actor in a threaded run, only the node's own in a split one (the others'
/// partitions are then returned empty; where an actor lives follows from
/// `assignment` alone).
pub(crate) fn split<A: Actor>(
    config: &EngineConfig,
    hosted: Vec<(ActorId, String, A)>,
    assignment: &[usize],
    partitions: usize,
) -> Result<Vec<Partition<A>>, EngineError> {
    if config.lookahead == 0 {
        return Err(EngineError::Setup(
            "the lookahead (minimum link latency) must be greater than 0".into(),
        ));
    }
    let total = u32::try_from(assignment.len())
        .map_err(|_| EngineError::Setup("more than 2^32 actors".into()))?;
    if assignment.iter().any(|&p| p >= partitions) {
        return Err(EngineError::Setup(
            "partition assignment names a partition that does not exist".into(),
        ));
    }
    let mut counts = vec![0u32; partitions];
    let location: Vec<(u32, u32)> = assignment
        .iter()
        .map(|&p| {
            counts[p] += 1;
            (p as u32, counts[p] - 1)
        })
        .collect();
    let mut per_part: Vec<Vec<Slot<A>>> = (0..partitions).map(|_| Vec::new()).collect();
    let mut last: Option<ActorId> = None;
    for (id, name, actor) in hosted {
        if id.0 >= total || last.is_some_and(|l| l >= id) {
            return Err(EngineError::Setup(format!(
                "hosted actor {} ({name}) out of id order or beyond the assignment",
                id.0
            )));
        }
        last = Some(id);
        let (p, _) = location[id.0 as usize];
        per_part[p as usize].push(Slot {
            id,
            rng: actor_rng(config.seed, &name),
            name,
            actor,
            seq: 0,
            log: ActorLog::new(config.logs != Logs::Off),
            causal_hops: 0,
            events: 0,
            sampled_ns: 0,
        });
    }
    for (p, slots) in per_part.iter().enumerate() {
        let partial = !slots.is_empty() && slots.len() != counts[p] as usize;
        if partial
            || slots
                .iter()
                .enumerate()
                .any(|(i, slot)| location[slot.id.0 as usize].1 as usize != i)
        {
            return Err(EngineError::Setup(format!(
                "partition {p} does not host every actor the assignment gives it"
            )));
        }
    }
    let location = Arc::new(location);
    let distances = Arc::new(
        Distances::new(&config.reach, config.lookahead, assignment, partitions)
            .map_err(EngineError::Setup)?,
    );
    Ok(per_part
        .into_iter()
        .enumerate()
        .map(|(index, slots)| Partition {
            index,
            slots,
            location: location.clone(),
            distances: distances.clone(),
            check_links: partitions > 1 && matches!(*config.reach, super::Reach::Graph(_)),
            partitions,
            heap: BinaryHeap::new(),
            class_times: if partitions > 1 && distances.alike(index).is_none() {
                (0..distances.classes())
                    .map(|_| BinaryHeap::new())
                    .collect()
            } else {
                Vec::new()
            },
            outbox: Vec::new(),
            remote: (0..partitions).map(|_| Vec::new()).collect(),
            sent: vec![SimTime::MAX; partitions],
            handled_until: 0,
            window_end: 0,
            config: config.clone(),
            actors_total: total,
            events: 0,
            windows: 0,
            windows_taken: 0,
            exchange: ExchangeStats::default(),
            last_event: 0,
            log_bytes: 0,
        })
        .collect())
}

impl<A: Actor> Partition<A> {
    /// The ids of the actors this partition hosts, in id order.
    #[cfg(test)]
    pub(crate) fn hosted(&self) -> Vec<ActorId> {
        self.slots.iter().map(|s| s.id).collect()
    }

    /// Runs the window loop to the end of the run (see the module docs),
    /// with every actor's output in [`PartitionOutput::actors`].
    pub(crate) fn run<T: Transport<A::Msg>>(
        self,
        transport: T,
        progress: &Progress,
    ) -> Result<PartitionOutput, EngineError> {
        let mut actors = Vec::with_capacity(self.slots.len());
        let mut output = self.run_streaming(transport, progress, |handed| {
            if let Handed::Actor(id, out) = handed {
                actors.push((id, out));
            }
        })?;
        output.actors = actors;
        Ok(output)
    }

    /// As [`Partition::run`], but the results go to `sink` as they are
    /// ready: first [`Handed::Ended`], then each actor's output as soon as
    /// the actor is finished (and dropped), in id order; the
    /// [`PartitionOutput::actors`] returned stay empty. A node hands its
    /// results over this way, so it never holds all of its actors' metrics
    /// at once (issue 43: a node's peak memory).
    pub(crate) fn run_streaming<T: Transport<A::Msg>>(
        mut self,
        mut transport: T,
        progress: &Progress,
        sink: impl FnMut(Handed<'_>),
    ) -> Result<PartitionOutput, EngineError> {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run_windows(&mut transport, progress)
        }));
        match result {
            Ok(Ok(())) => self.finish(sink),
            Ok(Err(e)) => {
                transport.abort();
                // what the actors logged up to the error stays with the
                // incomplete results (a write error here changes nothing)
                let _ = self.spill_logs(false);
                Err(e)
            }
            Err(panic) => {
                transport.abort();
                std::panic::resume_unwind(panic)
            }
        }
    }

    fn run_windows<T: Transport<A::Msg>>(
        &mut self,
        transport: &mut T,
        progress: &Progress,
    ) -> Result<(), EngineError> {
        let transport_err = |partition, source| EngineError::Transport { partition, source };
        for i in 0..self.slots.len() {
            self.start_actor(i)?;
        }
        let mut incoming = Vec::new();
        let mut hosts = vec![false; self.partitions];
        for &(p, _) in self.location.iter() {
            hosts[p as usize] = true;
        }
        let sit_out = transport.lets_partitions_sit_out();
        let mut rounds = Rounds::new(self.index, hosts, self.config.end, sit_out);
        loop {
            let (local, standing) = self.horizon(sit_out);
            let waiting = std::time::Instant::now();
            let agreed = rounds
                .exchange(transport, &mut self.remote, local, standing, &mut incoming)
                .map_err(|e| transport_err(self.index, e))?;
            self.exchange.record(waiting.elapsed());
            for env in incoming.drain(..) {
                self.check_incoming(&env)
                    .map_err(|e| transport_err(self.index, e))?;
                self.enqueue(env);
            }
            let (round, agreed) = match agreed {
                Agreed::Done { rounds: total } => {
                    self.windows = total;
                    self.windows_taken = rounds.taken();
                    return Ok(());
                }
                Agreed::Window { round, horizon } => (round, horizon),
            };
            self.window_end = agreed
                .reach
                .get(self.index)
                .copied()
                .unwrap_or(SimTime::MAX)
                .min(self.config.end);
            self.windows = round + 1;
            progress.vtime[self.index].store(agreed.next, Ordering::Relaxed);
            while let Some(t) = self.heap.peek().map(Queued::deliver_at) {
                if t >= self.window_end {
                    break;
                }
                let Some(queued) = self.heap.pop() else {
                    break;
                };
                if !self.class_times.is_empty() {
                    let c = self.distances.class(queued.dst().index());
                    self.class_times[c].pop();
                }
                self.deliver(queued.into_inner())?;
                if self.events % PROGRESS_EVERY == 0 {
                    progress.vtime[self.index].store(t, Ordering::Relaxed);
                    progress.events[self.index].store(self.events, Ordering::Relaxed);
                }
            }
            self.handled_until = self.handled_until.max(self.window_end);
            progress.events[self.index].store(self.events, Ordering::Relaxed);
        }
    }

    /// Queues an event for a hosted actor.
    #[inline]
    fn enqueue(&mut self, env: Envelope<A::Msg>) {
        enqueue(&mut self.heap, &mut self.class_times, &self.distances, env);
    }

    /// This partition's contribution to the next window: its envelopes in
    /// flight and its pending events, each at its time plus its actor's
    /// distance to every partition but the actor's own (see
    /// [`super::horizon`]).
    /// Pending events count by distance class: the earliest of each class is
    /// enough (the event popped from the heap is always the earliest of its
    /// class).
    ///
    /// An event bounds the window of the partition that handles it only
    /// through what it actually sends out, and that is known the moment it
    /// is sent: the window then ends where the envelope's consequences could
    /// first come back ([`Partition::route_outbox`]). An event not yet
    /// handled is later than every event handled so far, so its own way
    /// back cannot cut in before it; an envelope in flight is pending at its
    /// receiver's partition when that partition's window opens.
    ///
    /// Returns the horizon and, when partitions may sit rounds out, its
    /// standing part: the pending events alone, what stays true while the
    /// partition handles and receives nothing (see [`super::rounds`]);
    /// otherwise nobody reads it and it is left empty.
    fn horizon(&mut self, standing_too: bool) -> (Horizon, Horizon) {
        let mut standing = Horizon::idle(self.partitions);
        let distances = &self.distances;
        if let Some(local_next) = self.heap.peek().map(Queued::deliver_at) {
            standing.next = local_next;
            match distances.alike(self.index) {
                Some(x) => standing.include_others(local_next, distances.of(x), self.index),
                None => {
                    for (c, times) in self.class_times.iter().enumerate() {
                        if let Some(Reverse(t)) = times.peek() {
                            standing.include_others(*t, distances.class_row(c), self.index);
                        }
                    }
                }
            }
        }
        let (mut h, standing) = if standing_too {
            (standing.clone(), standing)
        } else {
            (standing, Horizon::unused())
        };
        for (p, (first, envelopes)) in self.sent.iter_mut().zip(&self.remote).enumerate() {
            if *first == SimTime::MAX {
                continue;
            }
            h.next = h.next.min(*first);
            match distances.alike(p) {
                Some(x) => h.include_others(*first, distances.of(x), p),
                None => {
                    for env in envelopes {
                        h.include_others(env.deliver_at, distances.of(env.dst.index()), p);
                    }
                }
            }
            *first = SimTime::MAX;
        }
        (h, standing)
    }

    fn start_actor(&mut self, i: usize) -> Result<(), EngineError> {
        let slot = &mut self.slots[i];
        let me = slot.id;
        let logged = slot.log.len();
        let mut ctx = Ctx::new(
            0,
            slot.id,
            self.config.lookahead,
            self.actors_total,
            &mut slot.seq,
            &mut slot.rng,
            &mut slot.log,
            &mut self.outbox,
        );
        slot.actor
            .start(&mut ctx)
            .map_err(|source| EngineError::Model {
                actor: slot.name.clone(),
                at: 0,
                source,
            })?;
        self.log_bytes += slot.log.len() - logged;
        self.route_outbox(me, 0, 0)?;
        self.spill_if_over_budget()
    }

    #[inline]
    fn deliver(&mut self, env: Envelope<A::Msg>) -> Result<(), EngineError> {
        let now = env.deliver_at;
        let (_, local) = self.location[env.dst.index()];
        let slot = &mut self.slots[local as usize];
        slot.causal_hops = slot.causal_hops.max(env.causal_hops);
        slot.events += 1;
        let hops = slot.causal_hops;
        let logged = slot.log.len();
        self.events += 1;
        self.last_event = now;
        let mut ctx = Ctx::new(
            now,
            slot.id,
            self.config.lookahead,
            self.actors_total,
            &mut slot.seq,
            &mut slot.rng,
            &mut slot.log,
            &mut self.outbox,
        );
        let timed = (self.events % BUSY_SAMPLE == 0).then(std::time::Instant::now);
        slot.actor
            .handle(env, &mut ctx)
            .map_err(|source| EngineError::Model {
                actor: slot.name.clone(),
                at: now,
                source,
            })?;
        if let Some(started) = timed {
            slot.sampled_ns += u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        }
        self.log_bytes += slot.log.len() - logged;
        let me = slot.id;
        self.route_outbox(me, now, hops)?;
        self.spill_if_over_budget()
    }

    #[inline]
    fn spill_if_over_budget(&mut self) -> Result<(), EngineError> {
        if self.log_bytes > LOG_BUDGET_BYTES {
            self.spill_logs(false)?;
        }
        Ok(())
    }

    /// Appends every buffered log to its actor's file (with [`Logs::Files`]);
    /// with `all`, also creates the files of actors that logged nothing.
    fn spill_logs(&mut self, all: bool) -> Result<(), EngineError> {
        let Logs::Files(dir) = &self.config.logs else {
            return Ok(());
        };
        for slot in &mut self.slots {
            if slot.log.is_empty() && !all {
                continue;
            }
            let path = dir.join(format!("{}.jsonl", slot.name));
            let io_err = |source| EngineError::Io {
                actor: slot.name.clone(),
                path: path.clone(),
                source,
            };
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io_err)?;
            std::io::Write::write_all(&mut file, slot.log.bytes()).map_err(io_err)?;
            slot.log.clear();
        }
        self.log_bytes = 0;
        Ok(())
    }

    /// Queues what actor `src` sent at `now`, with `hops` cross-partition
    /// messages behind it: here, or for the partition hosting the
    /// destination (one hop more), ending the window no later than anything
    /// it leads to could come back. With several partitions, every message
    /// is checked against the distances the windows rely on.
    #[inline]
    fn route_outbox(&mut self, src: ActorId, now: SimTime, hops: u32) -> Result<(), EngineError> {
        for mut env in self.outbox.drain(..) {
            let (part, _) = self.location[env.dst.index()];
            if self.check_links && env.dst != src {
                check_distance(&self.distances, &self.location, src, now, &env).map_err(|why| {
                    EngineError::Model {
                        actor: self.slots[self.location[src.index()].1 as usize]
                            .name
                            .clone(),
                        at: now,
                        source: ModelError::Invariant(why),
                    }
                })?;
            }
            if part as usize == self.index {
                env.causal_hops = hops;
                enqueue(&mut self.heap, &mut self.class_times, &self.distances, env);
            } else {
                env.causal_hops = hops.saturating_add(1);
                let back = env
                    .deliver_at
                    .saturating_add(self.distances.of(env.dst.index())[self.index]);
                self.window_end = self.window_end.min(back);
                let first = &mut self.sent[part as usize];
                *first = (*first).min(env.deliver_at);
                self.remote[part as usize].push(env);
            }
        }
        Ok(())
    }

    /// An envelope from a peer must be for an actor hosted here, and not
    /// for a time this partition has already handled.
    fn check_incoming(&self, env: &Envelope<A::Msg>) -> Result<(), TransportError> {
        match self.location.get(env.dst.index()) {
            Some(&(p, _)) if p as usize == self.index => {}
            _ => {
                return Err(TransportError::Misrouted {
                    dst: env.dst.0,
                    partition: self.index,
                });
            }
        }
        if env.deliver_at < self.handled_until {
            return Err(TransportError::Late {
                dst: env.dst.0,
                at: env.deliver_at,
                handled_until: self.handled_until,
            });
        }
        Ok(())
    }

    /// Hands `sink` the run's summary, then finishes each actor with its
    /// undelivered events and hands over its output.
    fn finish(mut self, mut sink: impl FnMut(Handed<'_>)) -> Result<PartitionOutput, EngineError> {
        self.spill_logs(true)?;
        let in_memory = !matches!(self.config.logs, Logs::Files(_));
        let pending = !self.heap.is_empty();
        let mut queued = std::mem::take(&mut self.heap).into_vec();
        let location = self.location.clone();
        let local = |q: &Queued<A::Msg>| location[q.dst().index()].1 as usize;
        // by actor, then earliest first (`Queued`'s order is reversed)
        queued.sort_unstable_by(|a, b| local(a).cmp(&local(b)).then_with(|| b.cmp(a)));
        let mut queued = queued.into_iter().peekable();
        let end = self.config.end;
        let summary = PartitionOutput {
            actors: Vec::new(),
            events: self.events,
            windows: self.windows,
            windows_taken: self.windows_taken,
            last_event: self.last_event,
            pending,
            causal_steps: self.slots.iter().map(|s| s.causal_hops).max().unwrap_or(0),
            exchange: self.exchange,
        };
        sink(Handed::Ended(&summary));
        for (i, slot) in self.slots.into_iter().enumerate() {
            // unboxed one actor at a time: all of them at once doubled the
            // memory of the pending events (issue 43)
            let mut undelivered = Vec::new();
            while let Some(q) = queued.next_if(|q| local(q) == i) {
                undelivered.push(q.into_inner());
            }
            let Slot {
                id,
                name,
                mut actor,
                log,
                events,
                sampled_ns,
                ..
            } = slot;
            let mut metrics = Metrics::default();
            let state = if self.config.states {
                actor.describe()
            } else {
                serde_json::Value::Null
            };
            let before = crate::heap::thread_net_bytes();
            actor.finish(&undelivered, end, &mut metrics);
            let given = crate::heap::given_back_since(before, actor);
            let held_bytes = u64::try_from(
                given
                    .saturating_add(metrics.heap_bytes() as i64)
                    .saturating_add(std::mem::size_of::<Slot<A>>() as i64),
            )
            .unwrap_or(0);
            sink(Handed::Actor(
                id,
                ActorOutput {
                    name,
                    log: in_memory.then(|| log.into_bytes()),
                    metrics,
                    state,
                    events,
                    busy_ns: sampled_ns.saturating_mul(BUSY_SAMPLE),
                    held_bytes,
                },
            ));
        }
        crate::heap::return_freed_to_system();
        Ok(summary)
    }
}

/// Pushes `env` on `heap`, and its time on its distance class's heap when
/// those are kept.
#[inline]
fn enqueue<M>(
    heap: &mut BinaryHeap<Queued<M>>,
    class_times: &mut [BinaryHeap<Reverse<SimTime>>],
    distances: &Distances,
    env: Envelope<M>,
) {
    if !class_times.is_empty() {
        class_times[distances.class(env.dst.index())].push(Reverse(env.deliver_at));
    }
    heap.push(Queued::new(env));
}

/// Whether a message from `src` sent at `now` respects the distances: for
/// every partition `q`, `D[src][q] ≤ latency + D[dst][q]`, or `≤ latency`
/// when the message enters `q`. A model sending faster than its declared
/// links would otherwise let a window run past an arriving message.
fn check_distance<M>(
    distances: &Distances,
    location: &[(u32, u32)],
    src: ActorId,
    now: SimTime,
    env: &Envelope<M>,
) -> Result<(), String> {
    let latency = env.deliver_at.saturating_sub(now);
    let (from, to) = (location[src.index()].0, location[env.dst.index()].0);
    let (ds, dd) = (distances.of(src.index()), distances.of(env.dst.index()));
    for (q, (&need, &onward)) in ds.iter().zip(dd).enumerate() {
        let enters = to as usize == q && from as usize != q;
        let got = if enters {
            latency
        } else {
            latency.saturating_add(onward)
        };
        if got < need {
            return Err(format!(
                "actor #{} sent actor #{} a message with latency {latency} ns, faster than \
                 the links the model declared allow (partition {q} needs {need} ns)",
                src.0, env.dst.0
            ));
        }
    }
    Ok(())
}

/// Puts the partitions' outputs back together in actor-id order. When
/// several partitions failed, the root cause is reported: a model error or
/// panic rather than the peers' "partition aborted" that followed from it.
pub(crate) fn combine(
    results: Vec<Result<PartitionOutput, EngineError>>,
    end: SimTime,
) -> Result<EngineOutput, EngineError> {
    let mut outputs = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(o) => outputs.push(o),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        let rank = |e: &EngineError| match e {
            EngineError::Transport {
                source: TransportError::PeerAborted { .. } | TransportError::PeerGone { .. },
                ..
            } => 1,
            _ => 0,
        };
        errors.sort_by_key(rank);
        return Err(errors.swap_remove(0));
    }
    let events = outputs.iter().map(|o| o.events).sum();
    let windows = outputs.iter().map(|o| o.windows).max().unwrap_or(0);
    let pending = outputs.iter().any(|o| o.pending);
    let last_event = outputs.iter().map(|o| o.last_event).max().unwrap_or(0);
    let causal_steps = outputs.iter().map(|o| o.causal_steps).max().unwrap_or(0);
    let loads = outputs
        .iter()
        .map(|o| PartitionLoad {
            events: o.events,
            windows: o.windows_taken,
            exchange_wall: o.exchange.total,
        })
        .collect();
    let mut actors: Vec<(ActorId, ActorOutput)> =
        outputs.into_iter().flat_map(|o| o.actors).collect();
    actors.sort_by_key(|(id, _)| *id);
    Ok(EngineOutput {
        actors: actors.into_iter().map(|(_, a)| a).collect(),
        events,
        windows,
        virtual_end: if pending { end } else { last_event },
        causal_steps: u64::from(causal_steps),
        loads,
    })
}
