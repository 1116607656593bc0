//! Engine benchmark: throughput of the windowed engine against the plain
//! sequential event loop, on the same synthetic load and the same handler.
//!
//! The load: `ACTORS` actors (10,000 by default), each starting with
//! `FANOUT` (4) messages in flight to random other actors. Every received
//! message is folded into the receiver's checksum and answered by one message
//! to a random other actor with a latency uniform in `[L, 4L)`, with the
//! lookahead `L` = 1 µs. Logs are off, so the engine is measured, not JSON.
//!
//! Three configurations run the same events:
//!
//! * (a) `run_threads` with 1 partition;
//! * (b) `run_threads` with 2 partitions (threads);
//! * (c) `run_sequential`, one `BinaryHeap` of every event in the run.
//!
//! They run interleaved (a, b, c, a, b, c, ...) and the best wall time of each
//! is reported as events/s, with the ratios a/c (target ≥ 0.5) and b/a. Every
//! run must produce the same event count, end time and per-actor metrics
//! (including an order-sensitive checksum of the events each actor saw) as
//! the first run; otherwise the benchmark exits with status 1.
//!
//! A second part puts the engine beside a peer, nexosim (a Rust
//! discrete-event framework), on a PHOLD model of circulating tokens
//! (`engine/phold.rs`): (a) and (b) as above, (c) the `BinaryHeap` loop and
//! (d) nexosim on one thread, interleaved, best of the repeats, with every
//! actor's event count and an order-free sum over its events checked equal.
//! The peer model has fewer actors (1,000 by default): nexosim addresses
//! another model through a connected output, so every actor holds one per
//! destination, n² in all.
//!
//! Where SimGrid is installed (Debian: `libsimgrid-dev`) the same PHOLD
//! also runs as (e), a C++ program on SimGrid's S4U interface with raw
//! contexts (`engine/simgrid_phold.cpp`): each token an actor that sleeps
//! its latency and lands on the next LP. The bench compiles it with the
//! system C++ compiler (`$CXX` or `c++`, flags from `pkg-config simgrid`)
//! into `target/release/simgrid-peers/`, runs it as a child process and
//! checks every LP's count and sum against the other runs. Without SimGrid
//! or a compiler it prints one line saying so and skips (e).
//!
//! Run with `cargo bench -p dcemu-emulator --bench engine`. Environment
//! variables override the defaults:
//!
//! * `DCEMU_BENCH_ACTORS`  number of actors (default 10000);
//! * `DCEMU_BENCH_END_US`  virtual end time in µs (default 400);
//! * `DCEMU_BENCH_FANOUT`  messages in flight per actor at start (default 4);
//! * `DCEMU_BENCH_REPEATS` runs of each configuration (default 3);
//! * `DCEMU_BENCH_SEED`    scenario seed (default 1);
//! * `DCEMU_BENCH_PEER_ACTORS` actors of the peer comparison (default 1000);
//! * `DCEMU_BENCH_PEER_END_US` its virtual end time in µs (default 1000).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use dcemu::engine::reference::run_sequential;
use dcemu::engine::{EngineConfig, EngineOutput, Logs, run_threads};
use dcemu_actors::kernel::{Actor, ActorId, Ctx, Envelope, Metrics, ModelError};
use dcemu_actors::sampling::index;
use dcemu_topology::SimTime;

#[path = "engine/phold.rs"]
mod phold;
#[path = "common/simgrid.rs"]
mod simgrid;

/// The lookahead: the minimum latency of every message, in ns.
const L: SimTime = 1_000;

/// A bench actor: answers every message with one message to a random other
/// actor, keeping an order-sensitive checksum of the events it handled.
struct Hopper {
    n: u32,
    fanout: u32,
    received: u64,
    checksum: u64,
}

impl Hopper {
    /// A random actor other than this one.
    #[inline]
    fn other(&self, ctx: &mut Ctx<'_, u64>) -> ActorId {
        ActorId((ctx.me().0 + 1 + index(ctx.rng(), self.n - 1)) % self.n)
    }

    /// Sends `hops` to a random other actor with a latency in `[L, 4L)`.
    #[inline]
    fn forward(&self, ctx: &mut Ctx<'_, u64>, hops: u64) -> Result<(), ModelError> {
        let dst = self.other(ctx);
        let latency = L + SimTime::from(index(ctx.rng(), 3 * L as u32));
        ctx.send(dst, latency, hops)
    }
}

impl Actor for Hopper {
    type Msg = u64;

    fn start(&mut self, ctx: &mut Ctx<'_, u64>) -> Result<(), ModelError> {
        for _ in 0..self.fanout {
            self.forward(ctx, 0)?;
        }
        Ok(())
    }

    fn handle(&mut self, ev: Envelope<u64>, ctx: &mut Ctx<'_, u64>) -> Result<(), ModelError> {
        self.received += 1;
        // Fold the event key into the checksum; rotate-xor-multiply makes it
        // depend on the order of this actor's events, not just their set.
        let key = ev.deliver_at ^ (u64::from(ev.src.0) << 40) ^ ev.src_seq.rotate_left(20);
        self.checksum =
            (self.checksum.rotate_left(5) ^ key ^ ev.payload).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.forward(ctx, ev.payload + 1)
    }

    fn finish(&mut self, undelivered: &[Envelope<u64>], _end: SimTime, out: &mut Metrics) {
        out.add("received", self.received);
        out.add("undelivered", undelivered.len() as u64);
        // Summed over actors when merged: keep each term to 32 bits so the
        // sum cannot overflow.
        out.add("checksum", self.checksum >> 32);
    }
}

fn hoppers(n: u32, fanout: u32) -> Vec<(String, Hopper)> {
    (0..n)
        .map(|i| {
            (
                format!("hopper-{i:05}"),
                Hopper {
                    n,
                    fanout,
                    received: 0,
                    checksum: 0,
                },
            )
        })
        .collect()
}

/// A positive integer from the environment, or `default` when unset.
fn env_u64(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(e) => Err(format!("{name}: {e}")),
        Ok(s) => match s.trim().replace('_', "").parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("{name} must be a positive integer, got {s:?}")),
        },
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Config {
    OnePartition,
    TwoPartitions,
    Sequential,
}

impl Config {
    const ALL: [Config; 3] = [
        Config::OnePartition,
        Config::TwoPartitions,
        Config::Sequential,
    ];

    fn label(self) -> &'static str {
        match self {
            Config::OnePartition => "(a) engine, 1 partition",
            Config::TwoPartitions => "(b) engine, 2 partitions",
            Config::Sequential => "(c) sequential BinaryHeap",
        }
    }

    fn run(self, cfg: &EngineConfig, n: u32, fanout: u32) -> Result<EngineOutput, String> {
        let actors = hoppers(n, fanout);
        let out = match self {
            Config::OnePartition => run_threads(cfg, actors, 1, None),
            Config::TwoPartitions => run_threads(cfg, actors, 2, None),
            Config::Sequential => run_sequential(cfg, actors),
        };
        out.map_err(|e| format!("{}: {e}", self.label()))
    }
}

/// What a run must agree on with the reference run.
#[derive(PartialEq)]
struct Fingerprint {
    events: u64,
    virtual_end: SimTime,
    merged: Metrics,
    per_actor: Vec<Metrics>,
}

impl Fingerprint {
    fn of(out: &EngineOutput) -> Self {
        let per_actor: Vec<Metrics> = out.actors.iter().map(|a| a.metrics.clone()).collect();
        let mut merged = Metrics::default();
        for m in per_actor.iter().cloned() {
            merged.merge(m);
        }
        Fingerprint {
            events: out.events,
            virtual_end: out.virtual_end,
            merged,
            per_actor,
        }
    }
}

#[derive(Default)]
struct Best {
    wall: Option<Duration>,
    events: u64,
    windows: u64,
}

impl Best {
    /// Events per second of the fastest repeat.
    fn rate(&self) -> f64 {
        self.wall
            .map_or(0.0, |w| self.events as f64 / w.as_secs_f64().max(1e-9))
    }
}

/// The results table, one row per labelled configuration.
fn print_table<'a>(rows: impl Iterator<Item = (&'static str, &'a Best)>) {
    println!();
    println!("| config | events | wall s | events/s |");
    println!("|---|---:|---:|---:|");
    for (label, b) in rows {
        println!(
            "| {label} | {} | {:.3} | {:.2} M |",
            b.events,
            b.wall.map_or(0.0, |w| w.as_secs_f64()),
            b.rate() / 1e6
        );
    }
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engine bench FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<(), String> {
    let n = env_u64("DCEMU_BENCH_ACTORS", 10_000)?;
    let n = u32::try_from(n)
        .ok()
        .filter(|&n| n >= 2)
        .ok_or("DCEMU_BENCH_ACTORS must be between 2 and 2^32 - 1")?;
    let end_us = env_u64("DCEMU_BENCH_END_US", 400)?;
    let fanout = u32::try_from(env_u64("DCEMU_BENCH_FANOUT", 4)?)
        .map_err(|_| "DCEMU_BENCH_FANOUT is too large")?;
    let repeats = env_u64("DCEMU_BENCH_REPEATS", 3)?;
    let seed = env_u64("DCEMU_BENCH_SEED", 1)?;
    let cfg = EngineConfig {
        lookahead: L,
        end: end_us
            .checked_mul(1_000)
            .ok_or("DCEMU_BENCH_END_US is too large")?,
        seed,
        logs: Logs::Off,
        states: false,
        weights: None,
        reach: Default::default(),
    };
    println!(
        "engine bench: {n} actors, {fanout} messages in flight each, latency [L, 4L) with \
         L = {L} ns, end = {end_us} µs, seed {seed}, logs off, best of {repeats}"
    );

    let mut reference: Option<Fingerprint> = None;
    let mut best: [Best; 3] = Default::default();
    for round in 1..=repeats {
        for (i, config) in Config::ALL.into_iter().enumerate() {
            let started = Instant::now();
            let out = config.run(&cfg, n, fanout)?;
            let wall = started.elapsed();
            eprintln!(
                "  round {round}: {:<26} {:>11} events in {:.3} s",
                config.label(),
                out.events,
                wall.as_secs_f64()
            );
            let fingerprint = Fingerprint::of(&out);
            if fingerprint.merged.counter("received") != out.events {
                return Err(format!(
                    "{}: {} events handled but actors received {}",
                    config.label(),
                    out.events,
                    fingerprint.merged.counter("received")
                ));
            }
            match &reference {
                None => reference = Some(fingerprint),
                Some(r) => check_same(config, r, &fingerprint)?,
            }
            let b = &mut best[i];
            if b.wall.is_none_or(|w| wall < w) {
                b.wall = Some(wall);
            }
            b.events = out.events;
            b.windows = out.windows;
        }
    }

    print_table(Config::ALL.into_iter().map(Config::label).zip(&best));
    let [a, b, c] = &best;
    println!();
    for (label, x) in [("(a)", a), ("(b)", b)] {
        println!(
            "{label} windows: {}, mean events per window: {:.1}",
            x.windows,
            x.events as f64 / x.windows.max(1) as f64
        );
    }
    println!("a/c = {:.2} (target >= 0.5)", a.rate() / c.rate());
    println!("b/a = {:.2}", b.rate() / a.rate());
    println!("equivalence: all {} runs identical", 3 * repeats);
    peer(fanout, repeats, seed)
}

/// The peer comparison: the token PHOLD on the engine, the heap loop and
/// nexosim.
fn peer(fanout: u32, repeats: u64, seed: u64) -> Result<(), String> {
    let n = u32::try_from(env_u64("DCEMU_BENCH_PEER_ACTORS", 1_000)?)
        .ok()
        .filter(|&n| (2..=1 << 16).contains(&n))
        .ok_or("DCEMU_BENCH_PEER_ACTORS must be between 2 and 65536")?;
    let end_us = env_u64("DCEMU_BENCH_PEER_END_US", 1_000)?;
    let end = end_us
        .checked_mul(1_000)
        .ok_or("DCEMU_BENCH_PEER_END_US is too large")?;
    let cfg = EngineConfig {
        lookahead: L,
        end,
        seed,
        logs: Logs::Off,
        states: false,
        weights: None,
        reach: Default::default(),
    };
    println!();
    println!(
        "peer comparison: token PHOLD, {n} actors, {fanout} tokens each, latency [L, 4L) \
         with L = {L} ns, end = {end_us} µs, best of {repeats}"
    );
    const LABELS: [&str; 5] = [
        "(a) engine, 1 partition",
        "(b) engine, 2 partitions",
        "(c) sequential BinaryHeap",
        "(d) nexosim, 1 thread",
        "(e) SimGrid S4U, raw contexts",
    ];
    let sg = match simgrid::build("simgrid_phold", "benches/engine/simgrid_phold.cpp") {
        Ok(program) => Some(program),
        Err(simgrid::Skip(why)) => {
            println!("(e) SimGrid S4U skipped: {why}");
            None
        }
    };
    let configs = if sg.is_some() { 5 } else { 4 };
    let mut version = None;
    let mut reference: Option<Vec<(u64, u64)>> = None;
    let mut best: [Best; 5] = Default::default();
    for round in 1..=repeats {
        for (i, label) in LABELS.into_iter().enumerate().take(configs) {
            let (tallies, events, wall) = if let (4, Some(program)) = (i, &sg) {
                let (tallies, events, wall, v) = run_simgrid(program, n, fanout, end)?;
                version = Some(v);
                (tallies, events, wall)
            } else if i == 3 {
                let run = phold::run_nexosim(n, fanout, L, end)?;
                let tallies = run
                    .tallies
                    .iter()
                    .map(|t| {
                        (
                            t.received.load(std::sync::atomic::Ordering::Relaxed),
                            t.sum.load(std::sync::atomic::Ordering::Relaxed) >> 32,
                        )
                    })
                    .collect::<Vec<_>>();
                (tallies, run.events, run.wall)
            } else {
                let actors = phold::token_hoppers(n, fanout, L, end);
                let started = Instant::now();
                let out = match i {
                    0 => run_threads(&cfg, actors, 1, None),
                    1 => run_threads(&cfg, actors, 2, None),
                    _ => run_sequential(&cfg, actors),
                }
                .map_err(|e| format!("{label}: {e}"))?;
                let wall = started.elapsed();
                let tallies = out
                    .actors
                    .iter()
                    .map(|a| (a.metrics.counter("received"), a.metrics.counter("sum")))
                    .collect::<Vec<_>>();
                best[i].windows = out.windows;
                (tallies, out.events, wall)
            };
            eprintln!(
                "  round {round}: {label:<29} {events:>11} events in {:.3} s",
                wall.as_secs_f64()
            );
            let handled: u64 = tallies.iter().map(|t| t.0).sum();
            if handled != events {
                return Err(format!(
                    "{label}: {events} events but actors handled {handled}"
                ));
            }
            match &reference {
                None => reference = Some(tallies),
                Some(r) if *r == tallies => {}
                Some(r) => {
                    let first = r.iter().zip(&tallies).position(|(a, b)| a != b);
                    return Err(format!(
                        "{label}: per-actor event counts or sums differ from the first run \
                         (first at actor #{first:?})"
                    ));
                }
            }
            let b = &mut best[i];
            if b.wall.is_none_or(|w| wall < w) {
                b.wall = Some(wall);
            }
            b.events = events;
        }
    }
    print_table(LABELS.into_iter().zip(&best).take(configs));
    let [a, b, c, d, e] = &best;
    println!();
    println!(
        "a/d = {:.2} (engine against nexosim; target >= 3.0)",
        a.rate() / d.rate()
    );
    println!("b/d = {:.2}", b.rate() / d.rate());
    println!("c/d = {:.2}", c.rate() / d.rate());
    if let Some(v) = version {
        println!(
            "a/e = {:.2} (engine against SimGrid {v}; target >= 5.0)",
            a.rate() / e.rate()
        );
        println!("b/e = {:.2}", b.rate() / e.rate());
        println!("c/e = {:.2}", c.rate() / e.rate());
    }
    println!(
        "equivalence: all {} runs handled the same events per actor",
        configs as u64 * repeats
    );
    Ok(())
}

/// One run of the SimGrid program: per-LP (count, sum >> 32), events, the
/// wall time of the run alone as the program measured it, and SimGrid's
/// version.
type SgRun = (Vec<(u64, u64)>, u64, Duration, String);

fn run_simgrid(
    program: &simgrid::Program,
    n: u32,
    fanout: u32,
    end: SimTime,
) -> Result<SgRun, String> {
    let out = program.run(&[
        n.to_string(),
        fanout.to_string(),
        L.to_string(),
        end.to_string(),
        "--cfg=contexts/factory:raw".into(),
        "--log=root.thres:warning".into(),
    ])?;
    let mut tallies = vec![None; n as usize];
    for words in out.all("lp") {
        let [i, received, sum] = out.ints::<3>("lp", words)?;
        let slot = usize::try_from(i)
            .ok()
            .and_then(|i| tallies.get_mut(i))
            .ok_or_else(|| format!("simgrid_phold: LP {i} out of range (n = {n})"))?;
        if slot.replace((received, sum)).is_some() {
            return Err(format!("simgrid_phold: LP {i} reported twice"));
        }
    }
    let tallies = tallies
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.ok_or_else(|| format!("simgrid_phold: no line for LP {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        tallies,
        out.u64("events")?,
        out.seconds("wall_s")?,
        out.word("simgrid")?.to_owned(),
    ))
}

fn check_same(config: Config, reference: &Fingerprint, got: &Fingerprint) -> Result<(), String> {
    if got == reference {
        return Ok(());
    }
    let label = config.label();
    if got.events != reference.events {
        return Err(format!(
            "{label}: {} events, the reference run had {}",
            got.events, reference.events
        ));
    }
    if got.virtual_end != reference.virtual_end {
        return Err(format!(
            "{label}: virtual end {} ns, the reference run ended at {} ns",
            got.virtual_end, reference.virtual_end
        ));
    }
    if got.merged != reference.merged {
        return Err(format!(
            "{label}: merged metrics {:?} differ from the reference run's {:?}",
            got.merged, reference.merged
        ));
    }
    let first = got
        .per_actor
        .iter()
        .zip(&reference.per_actor)
        .position(|(g, r)| g != r);
    Err(format!(
        "{label}: per-actor metrics differ from the reference run (first at actor #{first:?})"
    ))
}
