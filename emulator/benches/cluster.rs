//! Cluster benchmark: wall time of a 1,000-server scenario as one process
//! (`dcemu run`) against a coordinator and `NODES` node processes on
//! loopback, twice (with same-host links, and over QUIC only), and the cost
//! of the window barrier the nodes measured.
//!
//! The scenario is `scenarios/paragon/ec2-low.toml` (1,000 EC2-like servers,
//! Paragon Table VI). Both runs must give the same digest, or the benchmark
//! exits with status 1. Wall times are the runs' own (`run.json`
//! `wall_time_s`: model building, the run and the results). Per node it
//! prints the windows it took part in (it sits out those with nothing for
//! it, `engine::rounds`) and its mean and minimum wall time per exchange,
//! from handing its batches to the transport to having every member's batch
//! (the mean includes waiting for the slowest and the rounds sat out; the
//! minimum is close to the bare cost of one round).
//!
//! It also prints the floor (issue 23): the run's cross-partition causal
//! steps (`run.json` `causal_steps`, the longest chain of messages between
//! nodes, each of which must cross the transport after the one before),
//! times the transport's one-way latency, half the smallest round-trip time
//! a node measured on its peer links (`rtt_us`: the same-host sockets' own
//! timing, else QUIC's estimate). No conservative
//! protocol on this placement finishes
//! sooner; the distance from the achieved wall time to it is what a better
//! protocol could still win.
//!
//! Run with `cargo bench -p dcemu-emulator --bench cluster`. Environment:
//!
//! * `DCEMU_BENCH_NODES` node processes (default 4);
//! * `DCEMU_BENCH_END`   `run.end` override (default: the scenario's own,
//!   which runs until the last application finishes);
//! * `DCEMU_BENCH_SCENARIO` another scenario file.
//!
//! Results and the nodes' scratch go to `std::env::temp_dir()`: on a file
//! system where creating a file is slow, set `TMPDIR` to a tmpfs, or both
//! sides mostly measure file creation (one log file per actor).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_dcemu");
const SECRET: &str = "bench-secret-0123456789";

fn wall_of(dir: &Path) -> (f64, serde_json::Value) {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("run.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("run.json is JSON");
    (v["wall_time_s"].as_f64().unwrap_or(f64::NAN), v)
}

/// Runs the scenario on a coordinator and `nodes` nodes with
/// `--same-host-links links`, results in `out`; the wall time from launch
/// to the exit of every process, or `None` if the coordinator failed.
fn run_cluster(args: &[String], nodes: usize, links: &str, out: &Path) -> Option<f64> {
    let started = Instant::now();
    let mut coord = Command::new(BIN)
        .args(["coordinator", "--scenario"])
        .args(args)
        .args([
            "--nodes",
            &nodes.to_string(),
            "--listen",
            "127.0.0.1:0",
            "-q",
            "--same-host-links",
            links,
        ])
        .args(["--secret", SECRET, "--out"])
        .arg(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("dcemu coordinator");
    let mut lines = BufReader::new(coord.stderr.take().expect("stderr")).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split("listening on ")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .map(str::to_string)
        })
        .expect("the coordinator's address");
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    let mut children: Vec<_> = (0..nodes)
        .map(|i| {
            Command::new(BIN)
                .args(["node", "--coordinator", &addr, "--name", &format!("n{i}")])
                .args(["--listen", "127.0.0.1:0", "--secret", SECRET])
                .stderr(Stdio::null())
                .spawn()
                .expect("dcemu node")
        })
        .collect();
    let ok = coord.wait().map(|s| s.success()).unwrap_or(false);
    for c in &mut children {
        let _ = c.wait();
    }
    ok.then(|| started.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let nodes: usize = std::env::var("DCEMU_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let scenario = std::env::var("DCEMU_BENCH_SCENARIO").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/paragon/ec2-low.toml"
        )
        .into()
    });
    let mut args = vec![scenario.clone()];
    if let Ok(end) = std::env::var("DCEMU_BENCH_END") {
        args.extend(["--set".to_string(), format!("run.end={end}")]);
    }
    let tmp = std::env::temp_dir().join(format!("dcemu-bench-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("temp dir");

    let single = tmp.join("single");
    let status = Command::new(BIN)
        .arg("run")
        .args(&args)
        .arg("--out")
        .arg(&single)
        .arg("-q")
        .status()
        .expect("dcemu run");
    assert!(status.success(), "dcemu run failed");
    let (single_wall, single_facts) = wall_of(&single);

    println!("scenario {scenario} {}", args[1..].join(" "));
    println!(
        "  single process      {single_wall:.2} s wall, {} windows",
        single_facts["windows"]
    );
    let digest = |d: &Path| std::fs::read_to_string(d.join("digest")).unwrap_or_default();
    let mut same = true;
    for (label, links) in [("same-host links", "auto"), ("QUIC only", "off")] {
        let multi = tmp.join(format!("multi-{links}"));
        let Some(process_wall) = run_cluster(&args, nodes, links, &multi) else {
            eprintln!("the coordinator failed ({label})");
            return ExitCode::FAILURE;
        };
        let (multi_wall, facts) = wall_of(&multi);
        println!(
            "  coordinator + {nodes}, {label}: {multi_wall:.2} s wall ({process_wall:.2} s from launch to exit of every process), ratio {:.2}",
            multi_wall / single_wall
        );
        for n in facts["nodes"].as_array().into_iter().flatten() {
            println!(
                "    node     {:>4}     in {} windows, exchange mean {:.1} µs, min {:.1} µs, {} same-host links",
                n["name"].as_str().unwrap_or("?"),
                n["barrier_exchanges"]
                    .as_u64()
                    .unwrap_or(1)
                    .saturating_sub(1),
                n["barrier_mean_us"].as_f64().unwrap_or(f64::NAN),
                n["barrier_min_us"].as_f64().unwrap_or(f64::NAN),
                n["local_links"]
            );
        }
        let steps = facts["causal_steps"].as_u64().unwrap_or(0);
        let one_way_us = facts["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["rtt_us"].as_f64())
            .filter(|&us| us > 0.0)
            .fold(f64::INFINITY, f64::min)
            / 2.0;
        let floor_s = steps as f64 * one_way_us / 1e6;
        println!(
            "    windows          {} (single process {})",
            facts["windows"], single_facts["windows"]
        );
        println!("    causal steps     {steps} cross-node messages in a chain");
        println!(
            "    one-way latency  {one_way_us:.1} µs (half the smallest round trip a node measured on its peer links)"
        );
        println!(
            "    floor            {floor_s:.3} s = steps × one-way; achieved {multi_wall:.2} s, {:.1}× the floor",
            multi_wall / floor_s.max(1e-9)
        );
        same &= digest(&single) == digest(&multi);
    }
    println!(
        "  digests             {}",
        if same { "identical" } else { "DIFFER" }
    );
    let _ = std::fs::remove_dir_all(&tmp);
    if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
