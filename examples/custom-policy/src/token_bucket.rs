//! `token-bucket`: an admission policy of this crate's that dcemu runs by
//! name (docs/scheduler.md, "Adding a policy", from your own crate).
//!
//! Tasks wait in one queue in arrival order (a killed or evicted task goes
//! back in front, as under `fifo`), and each start spends a token of a
//! bucket that holds at most `burst` tokens and gains one every `1 /
//! rate` seconds of virtual time: the classic traffic shaper (Turner's
//! leaky bucket, 1986), here bounding how fast the scheduler lets work
//! into the cluster, e.g. to keep a warm-up from overrunning it. A head
//! that finds no room blocks the rest, as under `fifo`; one that no server
//! could hold is passed. While the bucket is empty the queue waits for
//! the next token, when the policy asks to be called again
//! ([`Admission::next_wakeup`]).
//!
//! It decides from virtual time and the queue alone (integer nanoseconds:
//! no clock, no float drift), so its runs give the same digest on any
//! partitioning. `[scheduler.admission_params]` takes `rate` (tokens per
//! second, above 0 and at most 1,000,000; default 1) and `burst` (an
//! integer from 1 to 1,000,000; default 10).

use std::collections::VecDeque;

use dcemu_actors::config::Problem;
use dcemu_actors::kernel::{Metrics, ModelError};
use dcemu_actors::profiling::Profile;
use dcemu_actors::scheduler::admission::{
    Admission, AdmissionContext, AdmissionPolicy, Attempt, PlaceFn, PoolState, Scope,
};
use dcemu_actors::task::Task;
use dcemu_topology::SimTime;

use crate::{integer, unknown_keys};

/// The name scenarios give it: `scheduler.admission = "token-bucket"`.
pub const NAME: &str = "token-bucket";

/// Tokens per second when `[scheduler.admission_params]` does not say.
pub const DEFAULT_RATE: f64 = 1.0;

/// Tokens the bucket holds at most, when not said.
pub const DEFAULT_BURST: i64 = 10;

const MAX: i64 = 1_000_000;

/// The policy for one run.
pub struct TokenBucket {
    queue: VecDeque<(Task, SimTime)>,
    /// Virtual time one token takes to come, ns (at least 1).
    period: u64,
    burst: u64,
    tokens: u64,
    /// The time up to which tokens are counted in `tokens`.
    since: SimTime,
    /// Tasks it let start (`token_bucket_admitted`).
    admitted: u64,
    /// Passes in which a task waited for a token
    /// (`token_bucket_empty`): what the policy did that `fifo` does not.
    empty: u64,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens gaining `rate` per second.
    pub fn new(rate: f64, burst: u64) -> Self {
        let period = (1e9 / rate).round();
        TokenBucket {
            queue: VecDeque::new(),
            period: if period.is_finite() && period >= 1.0 {
                period as u64
            } else {
                1
            },
            burst: burst.max(1),
            tokens: burst.max(1),
            since: 0,
            admitted: 0,
            empty: 0,
        }
    }

    /// Counts the tokens that came by `now`.
    fn refill(&mut self, now: SimTime) {
        let came = now.saturating_sub(self.since) / self.period;
        self.tokens = self.tokens.saturating_add(came).min(self.burst);
        self.since = match self.tokens == self.burst {
            true => now.max(self.since),
            false => self.since + came * self.period,
        };
    }
}

impl Admission for TokenBucket {
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
        _: &PoolState,
        place: &mut PlaceFn<'_>,
    ) -> Result<(), ModelError> {
        self.refill(now);
        let mut i = 0;
        while let Some((task, arrived)) = self.queue.get(i) {
            if self.tokens == 0 {
                self.empty += 1;
                break;
            }
            match place(task, *arrived, Scope::ANY)? {
                Attempt::Placed { .. } => {
                    self.queue.remove(i);
                    self.tokens -= 1;
                    self.admitted += 1;
                }
                Attempt::TooLarge => i += 1,
                Attempt::NoRoom => break,
            }
        }
        Ok(())
    }

    /// The next token's time, while a task waits for one.
    fn next_wakeup(&self) -> Option<SimTime> {
        (self.tokens == 0 && !self.queue.is_empty()).then(|| self.since + self.period)
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("token_bucket_admitted", self.admitted);
        out.add("token_bucket_empty", self.empty);
    }
}

/// What dcemu's registry builds the policy from.
pub struct Policy;

impl Policy {
    /// `rate` from `params`, when it is valid.
    fn rate(params: &toml::Table) -> Result<f64, String> {
        let rate = match params.get("rate") {
            None => return Ok(DEFAULT_RATE),
            Some(toml::Value::Float(r)) => *r,
            Some(toml::Value::Integer(n)) => *n as f64,
            Some(v) => return Err(format!("must be a number of tokens per second, found {v}")),
        };
        if rate.is_finite() && rate > 0.0 && rate <= MAX as f64 {
            Ok(rate)
        } else {
            Err(format!(
                "must be above 0 and at most {MAX} tokens per second, found {rate}"
            ))
        }
    }

    fn burst(params: &toml::Table) -> Result<u64, String> {
        integer(params, "burst", 1..=MAX, DEFAULT_BURST).map(|n| n as u64)
    }
}

impl AdmissionPolicy for Policy {
    fn check(&self, params: &toml::Table) -> Vec<Problem> {
        let mut problems = unknown_keys(NAME, params, &["rate", "burst"]);
        if let Err(why) = Self::rate(params) {
            problems.push(("rate".to_string(), why));
        }
        if let Err(why) = Self::burst(params) {
            problems.push(("burst".to_string(), why));
        }
        problems
    }

    fn build(&self, ctx: &AdmissionContext<'_>) -> Box<dyn Admission> {
        let params = ctx.params();
        Box::new(TokenBucket::new(
            Self::rate(params).unwrap_or(DEFAULT_RATE),
            Self::burst(params).unwrap_or(DEFAULT_BURST as u64),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three tokens, one more per second: of ten tasks offered at 0 s
    /// three start, then one a second.
    #[test]
    fn the_bucket_bounds_the_starts() {
        let mut bucket = TokenBucket::new(1.0, 3);
        let pools = PoolState {
            busy: vec![0],
            free: vec![0],
            machine: None,
        };
        for id in 0..10 {
            bucket.enqueue(
                Task::new(id, dcemu_actors::kernel::ActorId(1), 0, 1),
                0,
                None,
                0,
                0,
                &pools,
            );
        }
        let mut started = Vec::new();
        let mut place = |t: &Task, _: SimTime, _: Scope<'_>| {
            started.push(t.id);
            Ok(Attempt::Placed {
                pool: 0,
                on: vec![0],
            })
        };
        bucket.schedule(0, &pools, &mut place).expect("a pass");
        assert_eq!(bucket.len(), 7);
        assert_eq!(bucket.next_wakeup(), Some(1_000_000_000));
        bucket
            .schedule(1_500_000_000, &pools, &mut place)
            .expect("a pass");
        assert_eq!(bucket.len(), 6);
        assert_eq!(bucket.next_wakeup(), Some(2_000_000_000));
        bucket
            .schedule(60_000_000_000, &pools, &mut place)
            .expect("a pass");
        assert_eq!(bucket.len(), 3);
        assert_eq!(started, (0..7).collect::<Vec<_>>());
        let mut m = Metrics::default();
        bucket.finish(&mut m);
    }
}
