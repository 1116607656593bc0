use dcemu_actors::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use dcemu_actors::sampling::index;
use rand::RngCore;
use serde::Serialize;

use super::reference::run_sequential;
use super::threads::run_threads_with;
use super::*;

const L: SimTime = 1_000;

/// Sends to random actors with random latencies ≥ L and arms short timers
/// (< L) on itself, logging everything it sees: if any event reached an actor
/// out of order, its log would differ from the sequential run's.
struct Chatty {
    n: u32,
    received: u64,
    fail_at: Option<SimTime>,
    panic_at: Option<SimTime>,
    /// Only message the two neighbours on a ring of the `n` actors.
    ring: bool,
}

#[derive(Serialize)]
struct Seen {
    src: u32,
    seq: u64,
    hop: u32,
}

impl Chatty {
    /// A random actor other than this one (messages to oneself are timers).
    fn other(&self, ctx: &mut Ctx<'_, u32>) -> ActorId {
        if self.ring {
            let step = if ctx.rng().next_u32() % 2 == 0 {
                1
            } else {
                self.n - 1
            };
            return ActorId((ctx.me().0 + step) % self.n);
        }
        ActorId((ctx.me().0 + 1 + index(ctx.rng(), self.n - 1)) % self.n)
    }
}

impl Actor for Chatty {
    type Msg = u32;

    fn start(&mut self, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
        for _ in 0..3 {
            let dst = self.other(ctx);
            let lat = L + u64::from(ctx.rng().next_u32() % 3_000);
            ctx.send(dst, lat, 0)?;
        }
        Ok(())
    }

    fn handle(&mut self, ev: Envelope<u32>, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
        self.received += 1;
        ctx.log(
            "seen",
            &Seen {
                src: ev.src.0,
                seq: ev.src_seq,
                hop: ev.payload,
            },
        );
        if self.fail_at.is_some_and(|t| ctx.now() >= t) {
            return ctx.send(ActorId((ctx.me().0 + 1) % self.n), L - 1, 0);
        }
        if self.panic_at.is_some_and(|t| ctx.now() >= t) {
            panic!("chatty blew up");
        }
        if ev.src == ctx.me() {
            return Ok(());
        }
        if ctx.rng().next_u32() % 4 == 0 {
            let delay = u64::from(ctx.rng().next_u32()) % (2 * L);
            ctx.timer(delay, ev.payload)?;
        }
        let dst = self.other(ctx);
        let lat = L + u64::from(ctx.rng().next_u32() % 3_000);
        ctx.send(dst, lat, ev.payload + 1)
    }

    fn finish(&mut self, undelivered: &[Envelope<u32>], _end: SimTime, out: &mut Metrics) {
        out.add("received", self.received);
        out.add("undelivered", undelivered.len() as u64);
        // in the order given: the partitioned runs must hand them over as
        // the sequential one does, earliest first
        for env in undelivered {
            out.sample("undelivered_at", env.deliver_at as f64);
            out.sample("undelivered_from", f64::from(env.src.0));
        }
        out.sample("received_each", self.received as f64);
    }
}

fn chatty(n: u32) -> Vec<(String, Chatty)> {
    (0..n)
        .map(|i| {
            (
                format!("chatty-{i}"),
                Chatty {
                    n,
                    received: 0,
                    fail_at: None,
                    panic_at: None,
                    ring: false,
                },
            )
        })
        .collect()
}

fn config(seed: u64) -> EngineConfig {
    EngineConfig {
        lookahead: L,
        end: 1_000_000,
        seed,
        logs: Logs::InMemory,
        states: true,
        weights: None,
        reach: Default::default(),
    }
}

fn fingerprint(out: &EngineOutput) -> Vec<(String, Option<Vec<u8>>, Metrics)> {
    out.actors
        .iter()
        .map(|a| (a.name.clone(), a.log.clone(), a.metrics.clone()))
        .collect()
}

#[test]
fn windows_equal_the_sequential_run_under_any_partitioning() {
    for seed in [1, 2, 3] {
        let reference = run_sequential(&config(seed), chatty(37)).unwrap();
        assert!(
            reference.events > 5_000,
            "the load is not trivial: {} events",
            reference.events
        );
        assert!(
            reference.virtual_end == 1_000_000,
            "events remain at the end"
        );
        for partitions in [1, 2, 3, 4, 37] {
            for sit_out in [false, true] {
                let out =
                    run_threads_with(&config(seed), chatty(37), partitions, None, sit_out).unwrap();
                assert_eq!(
                    out.events, reference.events,
                    "seed {seed}, {partitions} partitions"
                );
                assert_eq!(out.virtual_end, reference.virtual_end);
                assert!(
                    fingerprint(&out) == fingerprint(&reference),
                    "seed {seed}: {partitions} partitions (sitting out: {sit_out}) differ from \
                     the sequential run"
                );
            }
        }
    }
}

/// `n` chatty actors that only message their ring neighbours, and the
/// reach that declares it.
fn ring(n: u32) -> (Vec<(String, Chatty)>, Reach) {
    let mut actors = chatty(n);
    for (_, a) in &mut actors {
        a.ring = true;
    }
    let links = (0..n)
        .map(|i| vec![((i + 1) % n, L), ((i + n - 1) % n, L)])
        .collect();
    (actors, Reach::Graph(links))
}

#[test]
fn distance_windows_equal_the_sequential_run_and_are_fewer() {
    for seed in [1, 2] {
        let (actors, reach) = ring(40);
        let reference = run_sequential(&config(seed), actors).unwrap();
        assert!(reference.events > 5_000, "{} events", reference.events);
        let graph = EngineConfig {
            reach: Arc::new(reach),
            ..config(seed)
        };
        for partitions in [1, 2, 4, 40] {
            let assignment = reach_assignment(&graph.reach, 40, partitions);
            assert_eq!(assignment, contiguous_assignment(40, partitions));
            let out = run_threads(&graph, ring(40).0, partitions, None).unwrap();
            assert!(
                fingerprint(&out) == fingerprint(&reference),
                "seed {seed}: {partitions} partitions with distances differ from the sequential run"
            );
            if (2..40).contains(&partitions) {
                let uniform = run_threads(&config(seed), ring(40).0, partitions, None).unwrap();
                assert!(fingerprint(&uniform) == fingerprint(&reference));
                assert!(
                    out.windows < uniform.windows,
                    "{partitions} partitions: {} windows with distances, {} without",
                    out.windows,
                    uniform.windows
                );
            }
        }
    }
}

#[test]
fn a_message_faster_than_the_declared_links_is_refused() {
    let (_, reach) = ring(8);
    let graph = EngineConfig {
        reach: Arc::new(reach),
        ..config(1)
    };
    // chatty messages anyone, the ring declares neighbours only
    match run_threads(&graph, chatty(8), 2, None) {
        Err(EngineError::Model { actor, source, .. }) => {
            assert!(actor.starts_with("chatty-"), "{actor}");
            assert!(source.to_string().contains("faster than"), "{source}");
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(out) => panic!("ran to the end: {} events", out.events),
    }
}

#[test]
fn other_seeds_give_other_runs() {
    let a = run_threads(&config(1), chatty(10), 1, None).unwrap();
    let b = run_threads(&config(2), chatty(10), 1, None).unwrap();
    assert!(fingerprint(&a) != fingerprint(&b));
}

#[test]
fn empty_stretches_of_time_cost_no_windows() {
    /// One timer far in the future.
    struct Sleeper;
    impl Actor for Sleeper {
        type Msg = ();
        fn start(&mut self, ctx: &mut Ctx<'_, ()>) -> Result<(), ModelError> {
            ctx.timer(3_600_000_000_000, ())
        }
        fn handle(&mut self, _: Envelope<()>, _: &mut Ctx<'_, ()>) -> Result<(), ModelError> {
            Ok(())
        }
    }
    let cfg = EngineConfig {
        lookahead: 1,
        end: u64::MAX,
        seed: 0,
        logs: Logs::Off,
        states: true,
        weights: None,
        reach: Default::default(),
    };
    let out = run_threads(&cfg, vec![("s".into(), Sleeper)], 2, None).unwrap();
    assert_eq!(out.events, 1);
    assert_eq!(out.windows, 1);
    assert_eq!(out.virtual_end, 3_600_000_000_000);
}

/// Two actors pass one token back and forth `rounds` times while each also
/// ticks a local timer: with them on two partitions every pass crosses, so
/// the chain of cross-partition messages is exactly `rounds` long whatever
/// the timers do; on one partition nothing crosses.
#[test]
fn causal_steps_count_the_chain_of_messages_between_partitions() {
    struct Passer {
        rounds: u32,
    }
    impl Actor for Passer {
        type Msg = u32;
        fn start(&mut self, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
            ctx.timer(L / 3, u32::MAX)?;
            if ctx.me().0 == 0 {
                ctx.send(ActorId(1), L, 1)?;
            }
            Ok(())
        }
        fn handle(&mut self, ev: Envelope<u32>, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
            if ev.payload == u32::MAX {
                return ctx.timer(L / 3, u32::MAX);
            }
            if ev.payload < self.rounds {
                ctx.send(ActorId(1 - ctx.me().0), L + 7, ev.payload + 1)?;
            }
            Ok(())
        }
    }
    let passers = || {
        (0..2)
            .map(|i| (format!("p{i}"), Passer { rounds: 25 }))
            .collect()
    };
    let cfg = EngineConfig {
        end: 200 * L,
        ..config(1)
    };
    let one = run_threads(&cfg, passers(), 1, None).unwrap();
    let two = run_threads(&cfg, passers(), 2, None).unwrap();
    assert_eq!(one.causal_steps, 0);
    assert_eq!(two.causal_steps, 25);
    assert!(two.windows >= two.causal_steps);
    assert_eq!(fingerprint(&one), fingerprint(&two));
    assert_eq!(run_sequential(&cfg, passers()).unwrap().causal_steps, 0);
}

#[test]
fn a_message_below_the_lookahead_stops_every_partition_with_the_actor_named() {
    let mut actors = chatty(8);
    actors[5].1.fail_at = Some(50_000);
    for partitions in [1, 2, 4] {
        let mut actors = chatty(8);
        actors[5].1.fail_at = Some(50_000);
        let err = run_threads(&config(1), actors, partitions, None).unwrap_err();
        match err {
            EngineError::Model { actor, source, .. } => {
                assert_eq!(actor, "chatty-5");
                assert!(matches!(source, ModelError::LatencyBelowLookahead { .. }));
            }
            other => panic!("unexpected error {other}"),
        }
    }
    let err = run_sequential(&config(1), actors).unwrap_err().to_string();
    assert!(
        err.contains("chatty-5") && err.contains("below the minimum link latency"),
        "{err}"
    );
}

#[test]
fn a_panicking_actor_ends_the_run_instead_of_hanging_it() {
    let mut actors = chatty(8);
    actors[7].1.panic_at = Some(20_000);
    let err = run_threads(&config(1), actors, 4, None).unwrap_err();
    assert!(
        matches!(&err, EngineError::Panicked { partition: 3, message } if message.contains("blew up")),
        "{err}"
    );
}

#[test]
fn setup_errors_are_reported() {
    assert!(matches!(
        run_threads(&config(1), chatty(2), 0, None),
        Err(EngineError::Setup(_))
    ));
    let zero = EngineConfig {
        lookahead: 0,
        ..config(1)
    };
    assert!(matches!(
        run_threads(&zero, chatty(2), 1, None),
        Err(EngineError::Setup(_))
    ));
}

/// A node builds only its own actors: `split` places them by the
/// assignment alone, leaves the other partitions empty, and refuses a share
/// with an actor missing or out of order (a node would otherwise run with
/// the wrong actors at the locations its peers address).
#[test]
fn a_node_share_is_placed_by_the_assignment_and_a_short_share_is_refused() {
    let assignment = [0, 1, 1, 0, 1];
    let share = |ids: &[u32]| -> Vec<(ActorId, String, Chatty)> {
        ids.iter()
            .map(|&i| {
                let (name, actor) = chatty(10).swap_remove(i as usize);
                (ActorId(i), name, actor)
            })
            .collect()
    };
    let parts = partition::split(&config(1), share(&[1, 2, 4]), &assignment, 2).unwrap();
    assert_eq!(parts[0].hosted(), Vec::<ActorId>::new());
    assert_eq!(parts[1].hosted(), [ActorId(1), ActorId(2), ActorId(4)]);
    for bad in [&[1, 4][..], &[2, 1, 4], &[1, 2, 4, 9]] {
        let refused = partition::split(&config(1), share(bad), &assignment, 2);
        assert!(matches!(refused, Err(EngineError::Setup(_))), "{bad:?}");
    }
}

#[test]
fn contiguous_assignment_is_balanced_and_ordered() {
    assert_eq!(contiguous_assignment(5, 2), vec![0, 0, 0, 1, 1]);
    assert_eq!(contiguous_assignment(4, 4), vec![0, 1, 2, 3]);
    assert_eq!(contiguous_assignment(2, 4), vec![0, 2]);
}

/// Actors 0-2 chat among themselves on one partition while actor 3 pings
/// actor 4, on the other, every `PING` ns, and 4 answers (5-7 only make up
/// the other partition): the chatter never leaves its partition, so it must
/// not cut that partition's windows; only the pings and their answers may.
#[test]
fn events_that_stay_home_do_not_bound_their_own_windows() {
    const PING: SimTime = 100 * L;
    const PONG: u32 = u32::MAX;
    struct Group;
    impl Actor for Group {
        type Msg = u32;
        fn start(&mut self, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
            match ctx.me().0 {
                0..=2 => ctx.timer(ctx.me().0.into(), 0),
                3 => ctx.timer(PING, 0),
                _ => Ok(()),
            }
        }
        fn handle(&mut self, ev: Envelope<u32>, ctx: &mut Ctx<'_, u32>) -> Result<(), ModelError> {
            let me = ctx.me().0;
            ctx.log("seen", &(ev.src.0, ev.src_seq, ev.payload));
            match me {
                4 => ctx.send(ev.src, L, PONG),
                3 if ev.src == ctx.me() => {
                    ctx.send(ActorId(4), L, 0)?;
                    ctx.timer(PING, 0)
                }
                0..=2 => {
                    let peer = (me + 1 + ctx.rng().next_u32() % 2) % 3;
                    let lat = L + u64::from(ctx.rng().next_u32()) % L;
                    ctx.send(ActorId(peer), lat, ev.payload.wrapping_add(1))
                }
                _ => Ok(()),
            }
        }
    }
    let l = |x: u32| (x, L);
    let reach = Reach::Graph(vec![
        vec![l(1), l(2), l(3)],
        vec![l(0), l(2), l(3)],
        vec![l(0), l(1), l(3)],
        vec![l(0), l(1), l(2), l(4)],
        vec![l(3), l(5)],
        vec![l(4), l(6)],
        vec![l(5), l(7)],
        vec![l(6), l(4)],
    ]);
    let cfg = EngineConfig {
        end: 100 * PING,
        reach: Arc::new(reach),
        ..config(1)
    };
    let group = || (0..8).map(|i| (format!("g{i}"), Group)).collect::<Vec<_>>();
    assert_eq!(
        reach_assignment(&cfg.reach, 8, 2),
        vec![0, 0, 0, 0, 1, 1, 1, 1]
    );
    let reference = run_sequential(&cfg, group()).unwrap();
    assert!(reference.events > 10_000, "{} events", reference.events);
    let two = run_threads(&cfg, group(), 2, None).unwrap();
    assert!(fingerprint(&two) == fingerprint(&reference));
    assert_eq!(two.causal_steps, 2 * 99);
    assert!(
        two.windows <= 3 * 100,
        "{} windows for 100 pings over {} events",
        two.windows,
        reference.events
    );
}

/// Partitions sit out the windows with nothing for them, and the results
/// stay the sequential run's: with declared ring links, each window's work
/// is in a few partitions.
#[test]
fn partitions_sit_out_windows_without_work_and_change_nothing() {
    let (actors, reach) = ring(24);
    let config = EngineConfig {
        reach: Arc::new(reach),
        ..config(5)
    };
    let reference = run_sequential(&config, actors).unwrap();
    for partitions in [2, 4, 6] {
        let out = run_threads_with(&config, ring(24).0, partitions, None, true).unwrap();
        assert!(
            fingerprint(&out) == fingerprint(&reference),
            "{partitions} partitions differ from the sequential run"
        );
        let meeting = run_threads(&config, ring(24).0, partitions, None).unwrap();
        assert!(
            meeting.loads.iter().all(|l| l.windows == meeting.windows),
            "threads meet every round by default"
        );
        assert_eq!(meeting.windows, out.windows, "the same windows either way");
        let taken: Vec<u64> = out.loads.iter().map(|l| l.windows).collect();
        assert!(
            taken.iter().all(|&t| t <= out.windows),
            "{partitions} partitions: {taken:?} of {} windows",
            out.windows
        );
        assert!(
            taken.iter().any(|&t| t < out.windows),
            "{partitions} partitions: every partition took part in all {} windows",
            out.windows
        );
    }
}

/// A node hands each actor's output over as soon as it is finished
/// (`Partition::run_streaming`): the summary first, then every actor once,
/// in id order, with what `run` would have collected, and nothing is kept.
#[test]
fn streamed_outputs_are_the_collected_ones_in_id_order() {
    let build = || {
        let hosted = chatty(9)
            .into_iter()
            .enumerate()
            .map(|(i, (name, actor))| (ActorId(i as u32), name, actor))
            .collect();
        partition::split(&config(4), hosted, &[0; 9], 1)
            .unwrap()
            .swap_remove(0)
    };
    let transport = || super::transport::in_memory_mesh::<u32>(1).swap_remove(0);
    let collected = build().run(transport(), &Progress::new(1)).unwrap();
    let mut streamed = Vec::new();
    let mut ended_first = None;
    let rest = build()
        .run_streaming(transport(), &Progress::new(1), |handed| match handed {
            partition::Handed::Ended(summary) => {
                ended_first = Some(streamed.is_empty() && summary.actors.is_empty());
                assert_eq!(summary.events, collected.events);
            }
            partition::Handed::Actor(id, out) => streamed.push((id, out)),
        })
        .unwrap();
    assert_eq!(ended_first, Some(true), "the summary comes once, first");
    assert!(rest.actors.is_empty());
    assert_eq!(rest.events, collected.events);
    assert_eq!(streamed.len(), 9);
    for ((id, out), (want_id, want)) in streamed.iter().zip(&collected.actors) {
        assert_eq!(id, want_id);
        assert_eq!(
            (&out.name, &out.log, &out.metrics, out.events),
            (&want.name, &want.log, &want.metrics, want.events)
        );
    }
    let ids: Vec<u32> = streamed.iter().map(|(id, _)| id.0).collect();
    assert_eq!(ids, (0..9).collect::<Vec<_>>());
    assert!(collected.actors.iter().map(|(_, a)| a.events).sum::<u64>() > 100);
}
