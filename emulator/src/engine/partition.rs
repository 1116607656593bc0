use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;

use dcemu_actors::kernel::{Actor, ActorId, ActorLog, ActorRng, Ctx, Envelope, Metrics, actor_rng};
use dcemu_topology::SimTime;

use super::{
    ActorOutput, EngineConfig, EngineError, EngineOutput, LOG_BUDGET_BYTES, Logs, Progress,
    Transport, TransportError,
};

/// One hosted actor with the state the engine keeps for it.
struct Slot<A> {
    id: ActorId,
    name: String,
    actor: A,
    seq: u64,
    rng: ActorRng,
    log: ActorLog,
}

/// An envelope in a min-heap on `(deliver_at, src, src_seq)`. The key sits
/// beside a boxed envelope: sifting the heap then moves 32 bytes instead
/// of a whole message (over 250 bytes for the model's `Msg`), which
/// dominated large runs.
pub(crate) struct Queued<M> {
    key: (SimTime, ActorId, u64),
    env: Box<Envelope<M>>,
}

impl<M> Queued<M> {
    pub(crate) fn new(env: Envelope<M>) -> Self {
        Queued {
            key: env.key(),
            env: Box::new(env),
        }
    }

    pub(crate) fn deliver_at(&self) -> SimTime {
        self.key.0
    }

    pub(crate) fn into_inner(self) -> Envelope<M> {
        *self.env
    }
}

impl<M> PartialEq for Queued<M> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<M> Eq for Queued<M> {}
impl<M> PartialOrd for Queued<M> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl<M> Ord for Queued<M> {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.key.cmp(&self.key)
    }
}

/// A set of actors hosted by one runtime, with their pending events.
pub struct Partition<A: Actor> {
    index: usize,
    slots: Vec<Slot<A>>,
    /// For every actor id of the run: (partition, index in that partition's slots).
    location: std::sync::Arc<Vec<(u32, u32)>>,
    heap: BinaryHeap<Queued<A::Msg>>,
    outbox: Vec<Envelope<A::Msg>>,
    remote: Vec<Vec<Envelope<A::Msg>>>,
    remote_min: SimTime,
    config: EngineConfig,
    actors_total: u32,
    events: u64,
    windows: u64,
    last_event: SimTime,
    /// Log bytes buffered by this partition's actors.
    log_bytes: usize,
}

pub(crate) struct PartitionOutput {
    pub(crate) actors: Vec<(ActorId, ActorOutput)>,
    pub(crate) events: u64,
    pub(crate) windows: u64,
    pub(crate) last_event: SimTime,
    pub(crate) pending: bool,
}

/// Distributes actors to partitions by `assignment[actor id] = partition`.
pub(crate) fn split<A: Actor>(
    config: &EngineConfig,
    actors: Vec<(String, A)>,
    assignment: &[usize],
    partitions: usize,
) -> Result<Vec<Partition<A>>, EngineError> {
    if config.lookahead == 0 {
        return Err(EngineError::Setup(
            "the lookahead (minimum link latency) must be greater than 0".into(),
        ));
    }
    let total = u32::try_from(actors.len())
        .map_err(|_| EngineError::Setup("more than 2^32 actors".into()))?;
    if assignment.len() != actors.len() || assignment.iter().any(|&p| p >= partitions) {
        return Err(EngineError::Setup(
            "partition assignment does not cover every actor".into(),
        ));
    }
    let mut location = Vec::with_capacity(actors.len());
    let mut per_part: Vec<Vec<Slot<A>>> = (0..partitions).map(|_| Vec::new()).collect();
    for (i, (name, actor)) in actors.into_iter().enumerate() {
        let p = assignment[i];
        location.push((p as u32, per_part[p].len() as u32));
        per_part[p].push(Slot {
            id: ActorId(i as u32),
            rng: actor_rng(config.seed, &name),
            name,
            actor,
            seq: 0,
            log: ActorLog::new(config.logs != Logs::Off),
        });
    }
    let location = std::sync::Arc::new(location);
    Ok(per_part
        .into_iter()
        .enumerate()
        .map(|(index, slots)| Partition {
            index,
            slots,
            location: location.clone(),
            heap: BinaryHeap::new(),
            outbox: Vec::new(),
            remote: (0..partitions).map(|_| Vec::new()).collect(),
            remote_min: SimTime::MAX,
            config: config.clone(),
            actors_total: total,
            events: 0,
            windows: 0,
            last_event: 0,
            log_bytes: 0,
        })
        .collect())
}

impl<A: Actor> Partition<A> {
    /// Runs the window loop to the end of the run (see the module docs).
    pub(crate) fn run<T: Transport<A::Msg>>(
        mut self,
        mut transport: T,
        progress: &Progress,
    ) -> Result<PartitionOutput, EngineError> {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run_windows(&mut transport, progress)
        }));
        match result {
            Ok(Ok(())) => self.finish(),
            Ok(Err(e)) => {
                transport.abort();
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
        loop {
            let local_next = self.heap.peek().map_or(SimTime::MAX, Queued::deliver_at);
            let candidate = local_next.min(self.remote_min);
            self.remote_min = SimTime::MAX;
            let next = transport
                .exchange(&mut self.remote, candidate, &mut incoming)
                .map_err(|e| transport_err(self.index, e))?;
            for env in incoming.drain(..) {
                self.check_incoming(&env)
                    .map_err(|e| transport_err(self.index, e))?;
                self.heap.push(Queued::new(env));
            }
            if next >= self.config.end {
                return Ok(());
            }
            let window_end = next
                .saturating_add(self.config.lookahead)
                .min(self.config.end);
            self.windows += 1;
            progress.vtime[self.index].store(next, Ordering::Relaxed);
            while let Some(top) = self.heap.peek() {
                if top.deliver_at() >= window_end {
                    break;
                }
                let Some(queued) = self.heap.pop() else {
                    break;
                };
                self.deliver(queued.into_inner())?;
            }
            progress.events[self.index].store(self.events, Ordering::Relaxed);
        }
    }

    fn start_actor(&mut self, i: usize) -> Result<(), EngineError> {
        let slot = &mut self.slots[i];
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
        self.route_outbox();
        self.spill_if_over_budget()
    }

    #[inline]
    fn deliver(&mut self, env: Envelope<A::Msg>) -> Result<(), EngineError> {
        let now = env.deliver_at;
        let (_, local) = self.location[env.dst.index()];
        let slot = &mut self.slots[local as usize];
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
        slot.actor
            .handle(env, &mut ctx)
            .map_err(|source| EngineError::Model {
                actor: slot.name.clone(),
                at: now,
                source,
            })?;
        self.log_bytes += slot.log.len() - logged;
        self.route_outbox();
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

    #[inline]
    fn route_outbox(&mut self) {
        for env in self.outbox.drain(..) {
            let (part, _) = self.location[env.dst.index()];
            if part as usize == self.index {
                self.heap.push(Queued::new(env));
            } else {
                self.remote_min = self.remote_min.min(env.deliver_at);
                self.remote[part as usize].push(env);
            }
        }
    }

    /// An envelope from a peer must be for an actor hosted here.
    fn check_incoming(&self, env: &Envelope<A::Msg>) -> Result<(), TransportError> {
        match self.location.get(env.dst.index()) {
            Some(&(p, _)) if p as usize == self.index => Ok(()),
            _ => Err(TransportError::Misrouted {
                dst: env.dst.0,
                partition: self.index,
            }),
        }
    }

    /// Hands each actor its undelivered events and collects its output.
    fn finish(mut self) -> Result<PartitionOutput, EngineError> {
        self.spill_logs(true)?;
        let in_memory = !matches!(self.config.logs, Logs::Files(_));
        let pending = !self.heap.is_empty();
        let mut undelivered: Vec<Vec<Envelope<A::Msg>>> =
            (0..self.slots.len()).map(|_| Vec::new()).collect();
        for env in std::mem::take(&mut self.heap)
            .into_sorted_vec()
            .into_iter()
            .rev()
            .map(Queued::into_inner)
        {
            let (_, local) = self.location[env.dst.index()];
            undelivered[local as usize].push(env);
        }
        let end = self.config.end;
        let actors = self
            .slots
            .into_iter()
            .zip(undelivered)
            .map(|(mut slot, pending)| {
                let mut metrics = Metrics::default();
                let state = slot.actor.describe();
                slot.actor.finish(&pending, end, &mut metrics);
                (
                    slot.id,
                    ActorOutput {
                        name: slot.name,
                        log: in_memory.then(|| slot.log.into_bytes()),
                        metrics,
                        state,
                    },
                )
            })
            .collect();
        Ok(PartitionOutput {
            actors,
            events: self.events,
            windows: self.windows,
            last_event: self.last_event,
            pending,
        })
    }
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
    let mut actors: Vec<(ActorId, ActorOutput)> =
        outputs.into_iter().flat_map(|o| o.actors).collect();
    actors.sort_by_key(|(id, _)| *id);
    Ok(EngineOutput {
        actors: actors.into_iter().map(|(_, a)| a).collect(),
        events,
        windows,
        virtual_end: if pending { end } else { last_event },
    })
}
