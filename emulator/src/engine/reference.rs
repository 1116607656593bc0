//! The plainest correct event loop: one `BinaryHeap` of every envelope in the
//! run, popped in `(deliver_at, src, src_seq)` order until `end`.
//!
//! It is the yardstick twice over: tests check that the windowed engine gives
//! exactly its logs and metrics under any partitioning, and the engine
//! benchmark measures the engine's throughput against it.

use std::collections::BinaryHeap;

use super::queue::Queued;
use super::{ActorOutput, EngineConfig, EngineError, EngineOutput, Logs};
use dcemu_actors::kernel::{Actor, ActorId, ActorLog, Ctx, Metrics, actor_rng};

/// Runs `actors` sequentially in global timestamp order. Logs are kept in
/// memory unless they are off.
pub fn run_sequential<A: Actor>(
    config: &EngineConfig,
    actors: Vec<(String, A)>,
) -> Result<EngineOutput, EngineError> {
    let total = actors.len() as u32;
    let mut seqs = vec![0u64; actors.len()];
    let mut rngs: Vec<_> = actors
        .iter()
        .map(|(n, _)| actor_rng(config.seed, n))
        .collect();
    let mut logs: Vec<_> = actors
        .iter()
        .map(|_| ActorLog::new(config.logs != Logs::Off))
        .collect();
    let (names, mut actors): (Vec<String>, Vec<A>) = actors.into_iter().unzip();
    let mut heap = BinaryHeap::new();
    let mut outbox = Vec::new();
    let model_err = |i: usize, at, source| EngineError::Model {
        actor: names[i].clone(),
        at,
        source,
    };
    for i in 0..actors.len() {
        let mut ctx = Ctx::new(
            0,
            ActorId(i as u32),
            config.lookahead,
            total,
            &mut seqs[i],
            &mut rngs[i],
            &mut logs[i],
            &mut outbox,
        );
        actors[i].start(&mut ctx).map_err(|e| model_err(i, 0, e))?;
        heap.extend(outbox.drain(..).map(Queued::new));
    }
    let (mut events, mut last_event) = (0u64, 0);
    let mut handled = vec![0u64; actors.len()];
    while let Some(top) = heap.peek() {
        if top.deliver_at() >= config.end {
            break;
        }
        let Some(env) = heap.pop().map(Queued::into_inner) else {
            break;
        };
        let (now, i) = (env.deliver_at, env.dst.index());
        events += 1;
        handled[i] += 1;
        last_event = now;
        let mut ctx = Ctx::new(
            now,
            env.dst,
            config.lookahead,
            total,
            &mut seqs[i],
            &mut rngs[i],
            &mut logs[i],
            &mut outbox,
        );
        actors[i]
            .handle(env, &mut ctx)
            .map_err(|e| model_err(i, now, e))?;
        heap.extend(outbox.drain(..).map(Queued::new));
    }
    let pending = !heap.is_empty();
    let mut undelivered: Vec<Vec<_>> = actors.iter().map(|_| Vec::new()).collect();
    for env in heap
        .into_sorted_vec()
        .into_iter()
        .rev()
        .map(Queued::into_inner)
    {
        undelivered[env.dst.index()].push(env);
    }
    let outputs = actors
        .into_iter()
        .zip(names)
        .zip(logs)
        .zip(undelivered)
        .zip(handled)
        .map(|((((mut actor, name), log), pending), events)| {
            let mut metrics = Metrics::default();
            let state = actor.describe();
            actor.finish(&pending, config.end, &mut metrics);
            ActorOutput {
                name,
                log: Some(log.into_bytes()),
                metrics,
                state,
                events,
                busy_ns: 0,
                held_bytes: 0,
            }
        })
        .collect();
    Ok(EngineOutput {
        actors: outputs,
        events,
        windows: 0,
        virtual_end: if pending { config.end } else { last_event },
        causal_steps: 0,
        loads: Vec::new(),
    })
}
