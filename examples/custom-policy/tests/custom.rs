//! `p2c-memory` runs from outside the project: a scenario names it, it is
//! the policy that decides (its own counter in the metrics, and other
//! decisions than `random`'s), its parameters are checked at their line,
//! and its digest is the same on 1 and 3 partitions and over a coordinator
//! and 2 nodes (each process this crate's `custom-dcemu`, which registers
//! it; issue 44).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{self, QUICKSTART, Scenario};
use dcemu_custom_policy::{NAME, register_policy};

const BIN: &str = env!("CARGO_BIN_EXE_custom-dcemu");
const SECRET: &str = "custom-policy-example-secret";

fn registered() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| register_policy().expect("p2c-memory registers"));
}

/// The quickstart, shortened so that test builds stay quick, under
/// `placement` with `params` (TOML lines of `[scheduler.params]`).
fn quickstart(placement: &str, params: &str) -> Result<Scenario, String> {
    registered();
    let text = format!("{QUICKSTART}\n[scheduler.params]\n{params}\n");
    let set = [
        format!("scheduler.placement={placement}"),
        "run.end=10min".to_string(),
    ];
    let set: Vec<_> = set.iter().map(|s| s.parse().expect("override")).collect();
    scenario::load("quickstart", &text, &set).map_err(|e| e.to_string())
}

fn run(s: &Scenario, partitions: usize) -> Outcome {
    execute(
        s,
        &RunOptions {
            partitions,
            ..RunOptions::default()
        },
    )
    .expect("the run")
}

fn counter(o: &Outcome, name: &str) -> u64 {
    o.metrics.get(name).and_then(|v| v.as_u64()).unwrap_or(0)
}

#[test]
fn the_policy_decides_and_its_digest_is_the_same_on_1_and_3_partitions() {
    let s = quickstart(NAME, "samples = 2").expect("the scenario");
    let one = run(&s, 1);
    let decisions = counter(&one, "p2c_decisions");
    assert!(decisions > 0, "p2c-memory placed nothing");
    assert!(counter(&one, "tasks_dispatched") > 0);
    let three = run(&s, 3);
    assert_eq!(one.digest, three.digest, "1 and 3 partitions");
    assert_eq!(decisions, counter(&three, "p2c_decisions"));
    // the same pipeline under `random` decides otherwise, and has no such
    // counter
    let random = run(&quickstart("random", "").expect("random"), 1);
    assert_ne!(one.digest, random.digest);
    assert_eq!(counter(&random, "p2c_decisions"), 0);
    // a parameter moves its decisions
    let four = run(&quickstart(NAME, "samples = 4").expect("samples = 4"), 1);
    assert_ne!(one.digest, four.digest);
}

#[test]
fn its_parameters_and_name_are_checked_like_built_in_fields() {
    let e = quickstart(NAME, "samples = 0").expect_err("samples = 0");
    assert!(
        e.contains("scheduler.params.samples") && e.contains("from 1 to 16"),
        "{e}"
    );
    let line = QUICKSTART.lines().count() + 3;
    assert!(e.contains(&format!(":{line}:")), "line {line}: {e}");
    let e = quickstart(NAME, "colour = 1").expect_err("an unknown parameter");
    assert!(e.contains("scheduler.params.colour"), "{e}");
    let e = quickstart("p2c-memroy", "").expect_err("a typo");
    assert!(e.contains("did you mean \"p2c-memory\"?"), "{e}");
    let e = quickstart("random", "samples = 2").expect_err("params under random");
    assert!(e.contains("scheduler.params"), "{e}");
}

/// Kills what it spawned, however the test ends.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_coordinator_and_2_nodes_give_the_single_process_digest() {
    let s = quickstart(NAME, "samples = 2").expect("the scenario");
    let single = run(&s, 1).digest;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("p2c.toml");
    std::fs::write(
        &file,
        format!("{QUICKSTART}\n[scheduler.params]\nsamples = 2\n"),
    )
    .expect("write the scenario");
    let out = dir.path().join("multi");
    let mut procs = Procs(Vec::new());
    let mut coordinator = Command::new(BIN)
        .arg("coordinator")
        .arg("--scenario")
        .arg(&file)
        .args(["--set", "scheduler.placement=p2c-memory"])
        .args(["--set", "run.end=10min"])
        .args([
            "--nodes",
            "2",
            "--listen",
            "127.0.0.1:0",
            "--secret",
            SECRET,
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the coordinator");
    let stderr = coordinator.stderr.take().expect("stderr");
    procs.0.push(coordinator);
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the coordinator says where it listens")
            .expect("a line");
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split(',').next().expect("an address").to_string();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    for name in ["n0", "n1"] {
        let node = Command::new(BIN)
            .args(["node", "--coordinator", &addr, "--name", name])
            .args(["--listen", "127.0.0.1:0", "--secret", SECRET])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a node");
        procs.0.push(node);
    }
    assert!(
        wait(&mut procs.0[0], Duration::from_secs(180)),
        "the coordinator failed"
    );
    for i in 1..3 {
        assert!(wait(&mut procs.0[i], Duration::from_secs(30)), "node {i}");
    }
    let multi = std::fs::read_to_string(out.join("digest")).expect("the digest");
    assert_eq!(single, multi.trim(), "coordinator + 2 nodes");
}
