use dcemu_topology::SimTime;
use serde::Serialize;

use super::{ActorId, ActorLog, ActorRng, Envelope, ModelError};

/// What an actor may touch while handling one event: the clock, its own
/// random stream and log, and an outbox. Built by the engine for each event.
pub struct Ctx<'a, M> {
    now: SimTime,
    me: ActorId,
    lookahead: SimTime,
    actors: u32,
    seq: &'a mut u64,
    rng: &'a mut ActorRng,
    log: &'a mut ActorLog,
    outbox: &'a mut Vec<Envelope<M>>,
}

impl<'a, M> Ctx<'a, M> {
    /// For engines (and reference loops in tests and benchmarks) only.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        now: SimTime,
        me: ActorId,
        lookahead: SimTime,
        actors: u32,
        seq: &'a mut u64,
        rng: &'a mut ActorRng,
        log: &'a mut ActorLog,
        outbox: &'a mut Vec<Envelope<M>>,
    ) -> Self {
        Ctx {
            now,
            me,
            lookahead,
            actors,
            seq,
            rng,
            log,
            outbox,
        }
    }

    /// Virtual time of the event being handled.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The actor being driven.
    #[inline]
    pub fn me(&self) -> ActorId {
        self.me
    }

    /// The lookahead `L`: the smallest latency a message to another actor may have.
    pub fn lookahead(&self) -> SimTime {
        self.lookahead
    }

    /// This actor's own random stream.
    #[inline]
    pub fn rng(&mut self) -> &mut ActorRng {
        self.rng
    }

    /// Sends `msg` to `dst`, delivered `latency` ns from now. A message to
    /// another actor must take at least the lookahead; a shorter one is an
    /// error, never clamped.
    pub fn send(&mut self, dst: ActorId, latency: SimTime, msg: M) -> Result<(), ModelError> {
        if dst.0 >= self.actors {
            return Err(ModelError::NoSuchActor {
                dst: dst.0,
                actors: self.actors,
            });
        }
        if dst != self.me && latency < self.lookahead {
            return Err(ModelError::LatencyBelowLookahead {
                dst: dst.0,
                latency_ns: latency,
                lookahead_ns: self.lookahead,
            });
        }
        self.push(dst, latency, msg)
    }

    /// Arms a timer: `msg` comes back to this actor `delay` ns from now.
    pub fn timer(&mut self, delay: SimTime, msg: M) -> Result<(), ModelError> {
        self.push(self.me, delay, msg)
    }

    /// Appends an entry to this actor's log (see [`ActorLog::record`]).
    #[inline]
    pub fn log<F: Serialize + ?Sized>(&mut self, kind: &str, fields: &F) {
        self.log.record(self.now, kind, fields);
    }

    fn push(&mut self, dst: ActorId, delay: SimTime, msg: M) -> Result<(), ModelError> {
        let deliver_at = self
            .now
            .checked_add(delay)
            .ok_or(ModelError::TimeOverflow)?;
        let src_seq = *self.seq;
        *self.seq += 1;
        self.outbox.push(Envelope {
            deliver_at,
            src: self.me,
            dst,
            src_seq,
            payload: msg,
            causal_hops: 0,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    #[test]
    fn refuses_latency_below_lookahead_but_allows_short_timers() {
        let (mut seq, mut rng, mut log, mut outbox) =
            (0u64, actor_rng(1, "a"), ActorLog::new(false), Vec::new());
        let mut ctx = Ctx::new(
            100,
            ActorId(0),
            50,
            2,
            &mut seq,
            &mut rng,
            &mut log,
            &mut outbox,
        );
        assert_eq!(
            ctx.send(ActorId(1), 49, ()),
            Err(ModelError::LatencyBelowLookahead {
                dst: 1,
                latency_ns: 49,
                lookahead_ns: 50
            })
        );
        assert_eq!(
            ctx.send(ActorId(5), 50, ()),
            Err(ModelError::NoSuchActor { dst: 5, actors: 2 })
        );
        ctx.send(ActorId(1), 50, ()).unwrap();
        ctx.timer(0, ()).unwrap();
        assert_eq!(outbox.len(), 2);
        assert_eq!(outbox[0].key(), (150, ActorId(0), 0));
        assert_eq!(outbox[1].key(), (100, ActorId(0), 1));
        assert_eq!(seq, 2);
    }
}
