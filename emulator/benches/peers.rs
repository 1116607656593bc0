//! Peers bench: a datacenter-level workload on dcemu's engine and on
//! SimGrid, wall time side by side.
//!
//! The workload (`peers/master_worker.rs`, and the same in
//! `peers/simgrid_master_worker.cpp`): one master places M tasks on N hosts
//! of C cores, FIFO and least-loaded, with a constant control delay each
//! way and no network. Arrivals and works are a hash of the seed and the
//! task, so both sides see the same sequence; each must complete every
//! task, and the master's checksum over (task, host, time its notice
//! arrived), its last notice and its summed waiting times must agree.
//!
//! dcemu runs the workload as a model on its engine with one partition,
//! the master and every host an actor; SimGrid as an S4U program with raw
//! contexts, the master and one worker actor per core, which executes each
//! task's work on its host's CPU. Both are timed on the run alone: building
//! dcemu's actors, or SimGrid's platform and workers, is not timed (the
//! table shows SimGrid's build time beside its run).
//! Sizes run in ascending order, the two sides interleaved, best of the
//! repeats.
//!
//! SimGrid is compiled at bench time where it is installed (Debian:
//! `libsimgrid-dev`; see `common/simgrid.rs`); without it the bench prints
//! one line saying so and runs dcemu alone.
//!
//! Run with `cargo bench -p dcemu-emulator --bench peers`. Environment
//! variables override the defaults:
//!
//! * `DCEMU_PEERS_HOSTS`          comma-separated sizes (default 1000,10000,100000);
//! * `DCEMU_PEERS_TASKS_PER_HOST` tasks per host (default 10);
//! * `DCEMU_PEERS_CORES`          cores per host (default 4);
//! * `DCEMU_PEERS_REPEATS`        runs of each side per size (default 3);
//! * `DCEMU_PEERS_SEED`           seed of the arrivals and works (default 1).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use dcemu::engine::{EngineConfig, Logs, run_threads};
use dcemu_topology::SimTime;

#[path = "peers/master_worker.rs"]
mod master_worker;
#[path = "common/simgrid.rs"]
mod simgrid;

use master_worker::{Totals, Workload};

/// Mean work of a task: 10⁵ s (about 28 h), in ns. Long, so that two
/// events of the master almost never fall within SimGrid's clock
/// resolution of each other (see `Master::close`).
const MEAN_WORK: SimTime = 100_000 * 1_000_000_000;
/// Offered load: arrivals ask for 1.25× the cores, so queues build and the
/// FIFO serves the later tasks.
const LOAD_NUM: u64 = 5;
const LOAD_DEN: u64 = 4;
/// The control delay each way: 1 ms.
const DELTA: SimTime = 1_000_000;

/// The SimGrid configuration: raw contexts (the fastest factory), and
/// small stacks without guard pages so that 400,000 live actors fit in
/// memory and in Linux's default 65,530 mappings per process.
const SIMGRID_CFG: [&str; 4] = [
    "--cfg=contexts/factory:raw",
    "--cfg=contexts/stack-size:16",
    "--cfg=contexts/guard-size:0",
    "--log=root.thres:warning",
];

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

fn env_sizes(name: &str, default: &[u32]) -> Result<Vec<u32>, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default.to_vec()),
        Err(e) => Err(format!("{name}: {e}")),
        Ok(s) => s
            .split(',')
            .map(|x| match x.trim().replace('_', "").parse::<u32>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(format!(
                    "{name} must be comma-separated positive integers, got {s:?}"
                )),
            })
            .collect(),
    }
}

/// This process's peak resident set in KB (Linux's `VmHWM`), if known.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peers bench FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One SimGrid run: its totals, run wall time, build wall time, peak RSS
/// in KB and SimGrid's version.
struct SgRun {
    totals: Totals,
    wall: Duration,
    build: Duration,
    rss_kb: u64,
    version: String,
}

fn run_simgrid(program: &simgrid::Program, w: &Workload) -> Result<SgRun, String> {
    let mut args = w.args();
    args.extend(SIMGRID_CFG.iter().map(|s| (*s).to_owned()));
    let out = program.run(&args)?;
    Ok(SgRun {
        totals: Totals {
            completed: out.u64("completed")?,
            checksum: out.u64("checksum")?,
            makespan: out.u64("makespan_ns")?,
            wait: out.u64("wait_ns")?,
        },
        wall: out.seconds("wall_s")?,
        build: out.seconds("build_s")?,
        rss_kb: out.u64("peak_rss_kb")?,
        version: out.word("simgrid")?.to_owned(),
    })
}

/// One row of the table.
struct Row {
    hosts: u32,
    tasks: u64,
    events: u64,
    dcemu: Duration,
    dcemu_rss_kb: Option<u64>,
    sg: Option<(Duration, Duration, u64)>,
    agree: &'static str,
}

fn bench() -> Result<(), String> {
    let sizes = env_sizes("DCEMU_PEERS_HOSTS", &[1_000, 10_000, 100_000])?;
    let per_host = env_u64("DCEMU_PEERS_TASKS_PER_HOST", 10)?;
    let cores = u32::try_from(env_u64("DCEMU_PEERS_CORES", 4)?)
        .map_err(|_| "DCEMU_PEERS_CORES is too large")?;
    let repeats = env_u64("DCEMU_PEERS_REPEATS", 3)?;
    let seed = env_u64("DCEMU_PEERS_SEED", 1)?;
    println!(
        "peers bench: master/worker, FIFO + least-loaded, {per_host} tasks per host, \
         {cores} cores per host, work uniform in [{}, {}) s, offered load {LOAD_NUM}/{LOAD_DEN} \
         of the cores, control delay {} ms each way, seed {seed}, best of {repeats}",
        MEAN_WORK / 2 / 1_000_000_000,
        MEAN_WORK * 3 / 2 / 1_000_000_000,
        DELTA / 1_000_000
    );
    let sg = match simgrid::build(
        "simgrid_master_worker",
        "benches/peers/simgrid_master_worker.cpp",
    ) {
        Ok(program) => Some(program),
        Err(simgrid::Skip(why)) => {
            println!("SimGrid side skipped: {why}");
            None
        }
    };
    let mut version = None;
    let mut rows = Vec::new();
    for &hosts in &sizes {
        let tasks = per_host
            .checked_mul(u64::from(hosts))
            .ok_or("too many tasks")?;
        let mean_gap =
            (MEAN_WORK * LOAD_DEN / (LOAD_NUM * u64::from(hosts) * u64::from(cores))).max(1);
        let w = Workload {
            hosts,
            cores,
            tasks,
            mean_work: MEAN_WORK,
            mean_gap,
            delta: DELTA,
            seed,
        };
        let cfg = EngineConfig {
            lookahead: DELTA,
            end: SimTime::MAX,
            seed,
            logs: Logs::Off,
            states: false,
            weights: None,
            reach: Default::default(),
        };
        let mut best_dcemu: Option<Duration> = None;
        let mut best_sg: Option<(Duration, Duration, u64)> = None;
        let mut reference: Option<(Totals, u64)> = None;
        let mut events = 0;
        let mut agree = if sg.is_some() { "yes" } else { "-" };
        for round in 1..=repeats {
            let actors = master_worker::actors(w);
            let started = Instant::now();
            let out = run_threads(&cfg, actors, 1, None).map_err(|e| format!("dcemu: {e}"))?;
            let wall = started.elapsed();
            let master = &out
                .actors
                .first()
                .ok_or("dcemu: the run has no actors")?
                .metrics;
            let (totals, close) = master_worker::totals(master);
            if totals.completed != tasks {
                return Err(format!(
                    "dcemu, {hosts} hosts: {} of {tasks} tasks completed",
                    totals.completed
                ));
            }
            eprintln!(
                "  {hosts} hosts, round {round}: dcemu   {:>9} events in {:.3} s",
                out.events,
                wall.as_secs_f64()
            );
            match &reference {
                None => reference = Some((totals, close)),
                Some((r, _)) if *r == totals => {}
                Some((r, _)) => {
                    return Err(format!(
                        "dcemu, {hosts} hosts: {totals:?} differ from the first run's {r:?}"
                    ));
                }
            }
            events = out.events;
            best_dcemu = Some(best_dcemu.map_or(wall, |b| b.min(wall)));

            let Some(program) = &sg else { continue };
            let run = run_simgrid(program, &w)?;
            eprintln!(
                "  {hosts} hosts, round {round}: SimGrid {:>9} tasks  in {:.3} s \
                 (+ {:.3} s building), peak RSS {} MB",
                run.totals.completed,
                run.wall.as_secs_f64(),
                run.build.as_secs_f64(),
                run.rss_kb / 1024
            );
            if run.totals.completed != tasks {
                return Err(format!(
                    "SimGrid, {hosts} hosts: {} of {tasks} tasks completed",
                    run.totals.completed
                ));
            }
            if run.totals != totals {
                if close == 0 {
                    return Err(format!(
                        "SimGrid, {hosts} hosts: {:?} differ from dcemu's {totals:?}, \
                         with no two events of the master within 2 ns",
                        run.totals
                    ));
                }
                // Two events of the master within SimGrid's clock
                // resolution may run in either order there: say so, do
                // not fail.
                agree = "no (close events)";
                eprintln!(
                    "  {hosts} hosts: SimGrid {:?} differ from dcemu's {totals:?}; the master \
                     had {close} pairs of events within 2 ns, which SimGrid's clock may order \
                     otherwise",
                    run.totals
                );
            }
            version = Some(run.version);
            let b = best_sg.get_or_insert((run.wall, run.build, run.rss_kb));
            if run.wall < b.0 {
                *b = (run.wall, run.build, run.rss_kb);
            }
        }
        rows.push(Row {
            hosts,
            tasks,
            events,
            dcemu: best_dcemu.unwrap_or_default(),
            dcemu_rss_kb: peak_rss_kb(),
            sg: best_sg,
            agree,
        });
        if let Some((t, close)) = reference {
            println!(
                "{hosts} hosts: {} tasks completed, checksum {:016x}, last notice at {:.0} s, \
                 mean wait {:.0} s, master events within 2 ns of each other: {close}",
                t.completed,
                t.checksum,
                t.makespan as f64 / 1e9,
                // The wrapping sum is exact while it does not wrap.
                t.wait as f64 / 1e9 / tasks.max(1) as f64
            );
        }
    }

    println!();
    if let Some(v) = &version {
        println!("SimGrid {v}, {}", SIMGRID_CFG[..3].join(" "));
        println!();
    }
    println!(
        "| hosts | tasks | dcemu events | dcemu s | dcemu peak RSS MB | SimGrid s | SimGrid build s \
         | SimGrid peak RSS MB | SimGrid s / dcemu s | agree |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &rows {
        let rss = r
            .dcemu_rss_kb
            .map_or_else(|| "-".to_owned(), |k| (k / 1024).to_string());
        let (sg_s, sg_build, sg_rss, ratio) = match r.sg {
            Some((wall, build, rss)) => (
                format!("{:.3}", wall.as_secs_f64()),
                format!("{:.3}", build.as_secs_f64()),
                (rss / 1024).to_string(),
                format!(
                    "{:.1}",
                    wall.as_secs_f64() / r.dcemu.as_secs_f64().max(1e-9)
                ),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {} | {:.3} | {rss} | {sg_s} | {sg_build} | {sg_rss} | {ratio} | {} |",
            r.hosts,
            r.tasks,
            r.events,
            r.dcemu.as_secs_f64(),
            r.agree
        );
    }
    println!();
    println!(
        "dcemu peak RSS: this process's VmHWM after the size's runs (sizes ascend, so the \
         largest so far dominates); SimGrid's: the child's own VmHWM."
    );
    Ok(())
}
