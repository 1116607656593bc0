//! The external scheduler (issue 24, docs/external-scheduler.md) with the
//! Python client's examples (clients/python): the protocol carries enough
//! for a program to take exactly the built-in policies' decisions. Python
//! `least-loaded` gives the built-in's results on the catalog scenarios it
//! applies to, Python `random` (drawing from the scheduler's stream with
//! the client's ChaCha8) the built-in's, file for file: every results file
//! but `scenario.toml`, which names the program, and `program/`, the copy
//! of it the record keeps. Skipped, saying so, where `python3` is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

use dcemu::run::Outcome;
use dcemu_tests::{TWO_TENANTS, assert_no_task_lost, run_with, scenario};
use rand::RngCore;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Whether `python3` runs here; says so when it does not.
fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: python3 is not installed; the external scheduler tests need it");
    }
    ok
}

fn example(name: &str) -> String {
    root()
        .join("clients/python/examples")
        .join(name)
        .display()
        .to_string()
}

/// `text` with its placement handed to the Python example `program`.
fn external(text: &str, builtin: &str, program: &str) -> String {
    let line = format!("placement = \"{builtin}\"");
    assert!(text.contains(&line), "the scenario places by {builtin}");
    format!(
        "{}\n[scheduler.external]\ncommand = [\"python3\", {:?}]\n",
        text.replacen(&line, "placement = \"external\"", 1),
        example(program)
    )
}

/// Every results file but `scenario.toml` and the copy of the program
/// the external run keeps (`program/`) is byte-identical.
fn assert_same_results(a: &Outcome, b: &Outcome, label: &str) {
    let model = |o: &Outcome| -> Vec<String> {
        o.results
            .paths()
            .filter(|p| !p.starts_with("program/"))
            .map(str::to_string)
            .collect()
    };
    let paths = model(a);
    assert_eq!(paths, model(b), "{label}");
    for p in paths
        .iter()
        .map(String::as_str)
        .filter(|p| *p != "scenario.toml")
    {
        let (x, y) = (a.results.read(p).unwrap(), b.results.read(p).unwrap());
        assert!(x == y, "{label}: {p} differs between built-in and external");
    }
}

/// Runs the catalog scenario at `path` (with `sets`) under the built-in
/// `builtin` and under the Python example `program` in place of its
/// `placement = "<written>"`, and compares.
fn compare(
    path: &str,
    (written, builtin): (&str, &str),
    program: &str,
    sets: &[&str],
) -> (Outcome, Outcome) {
    let label = root().join(path).display().to_string();
    let text = std::fs::read_to_string(&label).unwrap();
    let placement = format!("scheduler.placement={builtin}");
    let with_builtin: Vec<&str> = sets.iter().copied().chain([placement.as_str()]).collect();
    let ours = run_with(&scenario(&label, &text, &with_builtin), 1);
    let theirs = run_with(
        &scenario(&label, &external(&text, written, program), sets),
        1,
    );
    assert_same_results(&ours, &theirs, path);
    assert!(
        dcemu_tests::metric(&ours, "tasks_dispatched") > 0.0,
        "{path}: something was placed"
    );
    (ours, theirs)
}

#[test]
fn python_random_draws_the_builtin_random_and_gives_its_results() {
    if !python() {
        return;
    }
    compare(
        "scenarios/basic/two-tenants.toml",
        ("random", "random"),
        "random_placement.py",
        &["run.end=30m"],
    );
    // primary tenants bound each server's room (`primary_room`), reports on
    compare(
        "scenarios/harvest/primary-tenants.toml",
        ("random", "random"),
        "random_placement.py",
        &["run.end=30m"],
    );
}

#[test]
fn python_least_loaded_gives_the_builtin_least_loaded_metrics() {
    if !python() {
        return;
    }
    for path in [
        "scenarios/traces/swf.toml",
        "scenarios/traces/alibaba-2018.toml",
    ] {
        let placement = ("least-loaded", "least-loaded");
        let (ours, theirs) = compare(path, placement, "least_loaded.py", &[]);
        assert_eq!(ours.metrics, theirs.metrics, "{path}");
    }
    // Paragon's local cluster under ARQ: profiles, pools and ARQ's
    // appropriate-server filter, with reports every 10 s
    let (ours, _) = compare(
        "scenarios/paragon/local-low.toml",
        ("paragon", "least-loaded"),
        "least_loaded.py",
        &["scheduler.admission=arq", "run.end=20m"],
    );
    assert!(dcemu_tests::metric(&ours, "apps_profiled") > 0.0);
}

/// The Python priority scheduler with evictions (protocol v2, placement
/// and preemption) re-implements the built-in `least-loaded` under the
/// `priority` slot stage with `mrs` and with `lrs`: the thesis's Google
/// scenario gives the built-in's results, file for file, evictions
/// included.
#[test]
fn python_priority_evict_gives_the_builtin_priority_stage_results() {
    if !python() {
        return;
    }
    let path = "scenarios/thesis/google-15h.toml";
    let label = root().join(path).display().to_string();
    let text = std::fs::read_to_string(&label).unwrap();
    for rule in ["mrs", "lrs"] {
        let eviction = format!("scheduler.eviction={rule}");
        let sets = ["run.end=1h", eviction.as_str()];
        let builtin: Vec<&str> = sets
            .iter()
            .copied()
            .chain(["scheduler.placement=least-loaded"])
            .collect();
        let ours = run_with(&scenario(&label, &text, &builtin), 1);
        let program = format!(
            "{}\n[scheduler.external]\ncommand = [\"python3\", {:?}, \"{rule}\"]\n\
             stages = [\"placement\", \"preemption\"]\n",
            text.replacen("placement = \"random\"", "placement = \"external\"", 1),
            example("priority_evict.py")
        );
        let theirs = run_with(&scenario(&label, &program, &sets), 1);
        assert_same_results(&ours, &theirs, rule);
        assert_eq!(ours.metrics, theirs.metrics, "{rule}");
        assert!(
            dcemu_tests::metric(&ours, "preemptions") > 50.0,
            "{rule}: the built-in evicts here"
        );
    }
}

/// The preemption stage alone (protocol v2, `stages = ["preemption"]`):
/// the scenario's built-in placement places, the program picks victims.
/// `evict_only.py` re-implements the `priority` stage's `mrs` and `lrs`
/// beside `yarn-stock` (no victim criterion of its own), and
/// `priority_evict.py`'s `on_preempt` least-loaded's criterion beside
/// `least-loaded` (its `on_request` never asked): each gives the built-in
/// pipeline's results on the thesis's Google scenario, file for file. The
/// program was asked (its round trips are in `run.json`'s wall metrics).
#[test]
fn python_preemption_beside_a_builtin_placement_gives_the_builtin_results() {
    if !python() {
        return;
    }
    let path = "scenarios/thesis/google-15h.toml";
    let label = root().join(path).display().to_string();
    let text = std::fs::read_to_string(&label).unwrap();
    let cases = [
        ("mrs", "yarn-stock", "evict_only.py"),
        ("lrs", "yarn-stock", "evict_only.py"),
        ("mrs", "least-loaded", "priority_evict.py"),
    ];
    for (rule, placement, program) in cases {
        let eviction = format!("scheduler.eviction={rule}");
        let placed = format!("scheduler.placement={placement}");
        let sets = ["run.end=1h", eviction.as_str(), placed.as_str()];
        let ours = run_with(&scenario(&label, &text, &sets), 1);
        let with_program = format!(
            "{text}\n[scheduler.external]\ncommand = [\"python3\", {:?}, \"{rule}\"]\n\
             stages = [\"preemption\"]\n",
            example(program)
        );
        let theirs = run_with(&scenario(&label, &with_program, &sets), 1);
        let case = format!("{program} {rule} beside {placement}");
        assert_same_results(&ours, &theirs, &case);
        assert_eq!(ours.metrics, theirs.metrics, "{case}");
        assert!(
            dcemu_tests::metric(&ours, "preemptions") > 50.0,
            "{case}: the built-in evicts here"
        );
        assert!(
            theirs
                .wall_metrics
                .get("external_round_trip_us_mean")
                .is_some_and(|v| v.as_f64().is_some()),
            "{case}: the program was asked"
        );
    }
}

/// Three one-slot servers under the `priority` slot stage: class-0 tasks
/// fill them, class-5 tasks evict them; `priority_evict.py` decides
/// placement and preemption.
const EVICTIONS: &str = r#"
[run]
name = "evictions"
end = "30m"

[scheduler]
slots = "priority"

[[server_types]]
name = "a"
count = 3
slots = 1

[[tenants]]
name = "low"
arrivals = { process = "poisson", rate_per_s = 0.5 }
service = { distribution = "exponential", mean = "50s" }

[[tenants]]
name = "high"
priority = 5
arrivals = { process = "poisson", rate_per_s = 0.05 }
service = { distribution = "exponential", mean = "20s" }
"#;

/// A decision latency under a slot stage: each decision of the program
/// (placement and preemption under the `priority` stage) takes 5 s of
/// virtual time, so victims are often chosen while their own dispatch
/// still waits. Dispatches and preemptions leave in decision order, so no
/// preemption overtakes its victim's dispatch (no server ever runs more
/// than its slot), no task is lost, every start waits at least the
/// latency, and the run is deterministic, on 1 and on 3 partitions.
#[test]
fn decision_latency_under_a_slot_stage_defers_dispatches_and_preemptions_in_order() {
    if !python() {
        return;
    }
    let program = format!(
        "{EVICTIONS}\n[scheduler.external]\ncommand = [\"python3\", {:?}]\n\
         stages = [\"placement\", \"preemption\"]\n",
        example("priority_evict.py")
    );
    let s = |latency: &str| {
        let set = format!("scheduler.external.decision_latency={latency}");
        scenario("evictions-latency", &program, &[set.as_str()])
    };
    let zero = run_with(&s("0s"), 1);
    let slow = run_with(&s("5s"), 1);
    assert_no_task_lost(&slow, "latency 5s under a slot stage");
    let m = |o: &Outcome, name: &str| dcemu_tests::metric(o, name);
    assert!(
        m(&slow, "preemptions") > 20.0,
        "it evicts: {}",
        m(&slow, "preemptions")
    );
    assert_within_slots(&zero, 1);
    assert_within_slots(&slow, 1);
    let log = slow
        .results
        .read("actors/scheduler.jsonl")
        .unwrap()
        .unwrap();
    let waits: Vec<u64> = String::from_utf8(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "task_dispatch")
        .map(|v| v["queued_ns"].as_u64().unwrap())
        .collect();
    assert!(waits.len() > 20, "{} dispatches", waits.len());
    assert!(
        waits.iter().all(|&w| w >= 5_000_000_000),
        "each start, evicting or not, leaves 5 s after its decision at the earliest"
    );
    assert_eq!(slow.digest, run_with(&s("5s"), 1).digest, "deterministic");
    assert_eq!(slow.digest, run_with(&s("5s"), 3).digest, "on 3 partitions");
}

/// [`EVICTIONS`] with fewer low-priority tasks, so that many tasks also
/// find a free slot.
fn fewer() -> String {
    EVICTIONS
        .replace("name = \"evictions\"", "name = \"evictions-alone\"")
        .replace("rate_per_s = 0.5 }", "rate_per_s = 0.04 }")
}

/// A program deciding only preemption beside `least-loaded`, each of its
/// `preempt` decisions taking 5 s of virtual time: starts in a free slot
/// are the built-in's and take none, starts that evict take the 5 s; no
/// server runs more than its slot, no task is lost, the victims are the
/// program's (`lrs` differs from `mrs`), and the run is deterministic, on
/// 1 and on 3 partitions.
#[test]
fn preemption_alone_takes_its_decision_latency_and_runs_identically_everywhere() {
    if !python() {
        return;
    }
    let program = |rule: &str| {
        format!(
            "{}\n[scheduler.external]\ncommand = [\"python3\", {:?}, \"{rule}\"]\n\
             stages = [\"preemption\"]\ndecision_latency = \"5s\"\n",
            fewer(),
            example("evict_only.py")
        )
    };
    let sets = ["scheduler.placement=least-loaded"];
    let s = scenario("evictions-alone", &program("mrs"), &sets);
    let one = run_with(&s, 1);
    assert_no_task_lost(&one, "preemption alone");
    assert_within_slots(&one, 1);
    assert!(
        dcemu_tests::metric(&one, "preemptions") > 20.0,
        "it evicts: {}",
        dcemu_tests::metric(&one, "preemptions")
    );
    let log = one.results.read("actors/scheduler.jsonl").unwrap().unwrap();
    let entries: Vec<serde_json::Value> = String::from_utf8(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut evicting = std::collections::BTreeSet::new();
    let (mut fast, mut evicted) = (0, 0);
    for v in &entries {
        let task = v["task"].as_u64();
        if v["kind"] == "preempt" {
            evicting.insert(task);
        } else if v["kind"] == "task_dispatch" {
            let queued = v["queued_ns"].as_u64().unwrap();
            if evicting.remove(&task) {
                evicted += 1;
                assert!(queued >= 5_000_000_000, "an evicting start waits 5 s: {v}");
            } else if queued < 5_000_000_000 {
                fast += 1;
            }
        }
    }
    assert!(evicted > 20, "{evicted} evicting starts");
    assert!(
        fast > 20,
        "{fast} starts in a free slot without the latency"
    );
    assert_eq!(one.digest, run_with(&s, 1).digest, "deterministic");
    assert_eq!(one.digest, run_with(&s, 3).digest, "on 3 partitions");
    let lrs = run_with(&scenario("evictions-alone", &program("lrs"), &sets), 1);
    assert_ne!(
        one.digest, lrs.digest,
        "the program's victims are the run's"
    );
    // beside `random` too (whose slot stage otherwise draws free slots
    // itself, without asking the placement stage)
    let random = ["scheduler.placement=random"];
    let beside_random = run_with(&scenario("evictions-alone", &program("lrs"), &random), 1);
    assert!(
        beside_random
            .wall_metrics
            .contains_key("external_round_trip_us_mean"),
        "the program was asked beside random"
    );
    assert!(dcemu_tests::metric(&beside_random, "preemptions") > 20.0);
}

/// No server ever runs more tasks than its `slots` (its `task_start`
/// log's `running`), which a preemption that overtook its victim's
/// dispatch would make it do: the victim would start after its evictor
/// took its slot.
fn assert_within_slots(o: &Outcome, slots: u64) {
    let mut starts = 0;
    for path in o
        .results
        .paths()
        .filter(|p| p.starts_with("actors/server-"))
    {
        let text = o.results.read(path).unwrap().unwrap();
        for line in String::from_utf8(text).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["kind"] == "task_start" {
                starts += 1;
                assert!(v["running"].as_u64().unwrap() <= slots, "{path}: {line}");
            }
        }
    }
    assert!(starts > 100, "the servers logged their starts");
}

#[test]
fn best_fit_by_memory_runs_deterministically_without_losing_a_task() {
    if !python() {
        return;
    }
    let text = external(TWO_TENANTS, "random", "best_fit_memory.py");
    let s = scenario("two-tenants-best-fit", &text, &["run.end=20m"]);
    let a = run_with(&s, 1);
    let b = run_with(&s, 3);
    assert_eq!(a.digest, b.digest, "the same digest on 1 and 3 partitions");
    assert_no_task_lost(&a, "best-fit-memory");
    assert!(dcemu_tests::metric(&a, "tasks_dispatched") > 100.0);
}

#[test]
fn decision_latency_delays_dispatches_in_virtual_time() {
    if !python() {
        return;
    }
    let text = external(TWO_TENANTS, "random", "random_placement.py");
    let at = |latency: &str| {
        let s = scenario(
            "two-tenants-latency",
            &text,
            &[
                "run.end=10m",
                &format!("scheduler.external.decision_latency={latency}"),
            ],
        );
        run_with(&s, 1)
    };
    let (zero, slow) = (at("0s"), at("50ms"));
    assert_no_task_lost(&slow, "latency 50ms");
    let wait = |o: &Outcome| dcemu_tests::metric(o, "queue_wait_s_mean");
    assert!(
        wait(&slow) >= wait(&zero) + 0.05,
        "each dispatch leaves at least 50 ms later: {} vs {}",
        wait(&slow),
        wait(&zero)
    );
    assert_eq!(slow.digest, at("50ms").digest, "deterministic");
}

/// The client's ChaCha8 draws rand_chacha's words: the scheduler's stream
/// of seed 7, from word 0 and from word 37 (mid-block), and `index` as
/// `sampling::index` draws it.
#[test]
fn python_chacha8_draws_the_words_of_rand_chacha() {
    if !python() {
        return;
    }
    let mut rng = dcemu_actors::kernel::actor_rng(7, "scheduler");
    let key: String = rng.get_seed().iter().map(|b| format!("{b:02x}")).collect();
    let stream = rng.get_stream();
    let words: Vec<u32> = (0..70).map(|_| rng.next_u32()).collect();
    rng.set_word_pos(37);
    let indices: Vec<u32> = (1..40)
        .map(|n| dcemu_actors::sampling::index(&mut rng, n * 7919))
        .collect();
    let script = format!(
        "import sys; sys.path.insert(0, {:?})\n\
         from dcemu_scheduler import ChaCha8\n\
         r = ChaCha8(bytes.fromhex({key:?}), {stream})\n\
         print(' '.join(str(r.next_u32()) for _ in range(70)))\n\
         r = ChaCha8(bytes.fromhex({key:?}), {stream}, 37)\n\
         print(' '.join(str(r.index(n * 7919)) for n in range(1, 40)))\n",
        root().join("clients/python").display().to_string()
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<u32>> = text
        .lines()
        .map(|l| l.split(' ').map(|w| w.parse().unwrap()).collect())
        .collect();
    assert_eq!(lines[0], words);
    assert_eq!(lines[1], indices);
}
