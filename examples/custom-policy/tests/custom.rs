//! This crate's policies run from outside the project: a scenario names
//! them, each is the policy that decides (its own counters in the
//! metrics, and decisions no built-in makes), their parameters are checked
//! at their line, and their digests are the same on 1 and 3 partitions
//! (and `p2c-memory`'s over a coordinator and 2 nodes, each process this
//! crate's `custom-dcemu`, which registers them; issue 44).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{self, QUICKSTART, Scenario};
use dcemu_custom_policy::{NAME, register_all};

const BIN: &str = env!("CARGO_BIN_EXE_custom-dcemu");
const SECRET: &str = "custom-policy-example-secret";

fn registered() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| register_all().expect("the policies register"));
}

/// The quickstart, shortened so that test builds stay quick, under
/// `placement` with `params` (TOML lines of `[scheduler.params]`).
fn quickstart(placement: &str, params: &str) -> Result<Scenario, String> {
    load(
        "params",
        params,
        &[&format!("scheduler.placement={placement}")],
    )
}

/// The quickstart shortened to 10 min, with `lines` in its
/// `[scheduler.<table>]` and the overrides `set`.
fn load(table: &str, lines: &str, set: &[&str]) -> Result<Scenario, String> {
    registered();
    let text = format!("{QUICKSTART}\n[scheduler.{table}]\n{lines}\n");
    let set: Vec<_> = ["run.end=10min"]
        .iter()
        .chain(set)
        .map(|s| s.parse().expect("override"))
        .collect();
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

/// `token-bucket` decides admission: with a bucket of 4 tokens and one
/// more every 20 s, at most 4 + 600 / 20 = 34 tasks start in 10 min (the
/// quickstart's `arq` and `fifo` start some 170), every start is one it
/// let through, and it found the bucket empty; its digest is the same on
/// 1 and 3 partitions.
#[test]
fn token_bucket_admits_at_its_rate_and_its_digest_is_the_same_on_1_and_3_partitions() {
    let s = load(
        "admission_params",
        "rate = 0.05\nburst = 4",
        &["scheduler.admission=token-bucket"],
    )
    .expect("the scenario");
    let one = run(&s, 1);
    let admitted = counter(&one, "token_bucket_admitted");
    assert!(admitted > 0 && admitted <= 34, "{admitted} admitted");
    assert_eq!(counter(&one, "tasks_dispatched"), admitted);
    assert!(counter(&one, "token_bucket_empty") > 0);
    let three = run(&s, 3);
    assert_eq!(one.digest, three.digest, "1 and 3 partitions");
    assert_eq!(admitted, counter(&three, "token_bucket_admitted"));
    let fifo = run(
        &load("params", "", &["scheduler.admission=fifo"]).expect("fifo"),
        1,
    );
    assert!(counter(&fifo, "tasks_dispatched") > 2 * admitted);
    assert_eq!(counter(&fifo, "token_bucket_admitted"), 0);
    // its parameters move its decisions
    let faster = load(
        "admission_params",
        "rate = 0.1\nburst = 4",
        &["scheduler.admission=token-bucket"],
    )
    .expect("rate = 0.1");
    assert!(counter(&run(&faster, 1), "token_bucket_admitted") > admitted);
}

/// The quickstart's slot stage without sticky slots, with `random`
/// placement (so that the slot policy, not the placement, chooses each
/// victim) and Google-like tasks at 1 per second, so that the higher
/// classes evict within 10 min.
const EVICTING: [&str; 3] = [
    "scheduler.sticky_slots=0",
    "scheduler.placement=random",
    "tenants.1.arrivals.rate_per_s=1.0",
];

/// `least-work-lost` decides evictions: every preemption is a victim it
/// chose, some of them above the lowest class it could evict from (which
/// `priority`, `wasp` and `hybrid` never choose), and the run differs from
/// `priority`'s; its digest is the same on 1 and 3 partitions.
#[test]
fn least_work_lost_evicts_across_classes_and_its_digest_is_the_same_on_1_and_3_partitions() {
    let mut set = EVICTING.to_vec();
    set.push("scheduler.slots=least-work-lost");
    let s = load("slots_params", "min_gap = 1", &set).expect("the scenario");
    let one = run(&s, 1);
    let preemptions = counter(&one, "preemptions");
    assert!(preemptions > 0, "no eviction");
    assert_eq!(counter(&one, "lwl_victims"), preemptions);
    assert!(counter(&one, "lwl_above_lowest") > 0);
    let three = run(&s, 3);
    assert_eq!(one.digest, three.digest, "1 and 3 partitions");
    assert_eq!(preemptions, counter(&three, "preemptions"));
    let mut set = EVICTING.to_vec();
    set.push("scheduler.slots=priority");
    let priority = run(&load("slots_params", "", &set).expect("priority"), 1);
    assert!(counter(&priority, "preemptions") > 0);
    assert_eq!(counter(&priority, "lwl_victims"), 0);
    assert_ne!(one.digest, priority.digest);
}

/// All three stages registered at once, each reading its own table: the
/// three decide together, the same on 1 and 3 partitions.
#[test]
fn an_admission_a_placement_and_a_slot_policy_of_ours_run_together() {
    let mut set = EVICTING.to_vec();
    set.extend([
        "scheduler.slots=least-work-lost",
        "scheduler.admission=token-bucket",
        "scheduler.placement=p2c-memory",
    ]);
    let text = "rate = 0.5\nburst = 50\n[scheduler.params]\nsamples = 3\n\
                [scheduler.slots_params]\nmin_gap = 2";
    let s = load("admission_params", text, &set).expect("the scenario");
    let one = run(&s, 1);
    for name in ["token_bucket_admitted", "p2c_decisions", "lwl_victims"] {
        assert!(counter(&one, name) > 0, "{name}");
    }
    assert_eq!(one.digest, run(&s, 3).digest, "1 and 3 partitions");
}

#[test]
fn admission_and_slot_parameters_are_checked_in_their_own_tables() {
    let line = QUICKSTART.lines().count() + 3;
    let bucket = ["scheduler.admission=token-bucket"];
    let e = load("admission_params", "rate = 0", &bucket).expect_err("rate = 0");
    assert!(
        e.contains("scheduler.admission_params.rate") && e.contains(&format!(":{line}:")),
        "{e}"
    );
    // the placement's table is not the admission's
    let e = load("params", "rate = 1", &bucket).expect_err("rate in [scheduler.params]");
    assert!(e.contains("scheduler.params"), "{e}");
    let lwl = [
        "scheduler.slots=least-work-lost",
        "scheduler.sticky_slots=0",
    ];
    let e = load("slots_params", "min_gap = 0", &lwl).expect_err("min_gap = 0");
    assert!(
        e.contains("scheduler.slots_params.min_gap") && e.contains("from 1 to 255"),
        "{e}"
    );
    let e = load("slots_params", "samples = 2", &lwl).expect_err("a placement's key");
    assert!(e.contains("scheduler.slots_params.samples"), "{e}");
    let e = load("slots_params", "", &["scheduler.slots=least-work-lsot"]).expect_err("a typo");
    assert!(e.contains("did you mean \"least-work-lost\"?"), "{e}");
    let e = load("admission_params", "", &["scheduler.admission=tokenbucket"]).expect_err("a typo");
    assert!(e.contains("did you mean \"token-bucket\"?"), "{e}");
    let e = load(
        "admission_params",
        "burst = 2",
        &["scheduler.admission=arq"],
    )
    .expect_err("params under arq");
    assert!(e.contains("scheduler.admission_params"), "{e}");
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
