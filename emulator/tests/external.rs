//! An external scheduler that misbehaves (docs/external-scheduler.md,
//! "Errors"): each way stops `dcemu run` with exit code 1 and an error
//! naming the program, the request and the problem, and leaves the results
//! directory marked `INCOMPLETE` with what the actors logged before, as
//! for a node that dies. One that behaves runs and replays identically.
//! Over a coordinator and nodes the program runs beside the scheduler
//! actor's node, from the coordinator's scenario directory, and gives the
//! one-process run's results (protocol v1, and v2 with evictions); one that
//! dies fails the run the same way.
//! Skipped, saying so, where `python3` is absent.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::{Procs, SECRET, assert_replays_identical, assert_run_fails, dcemu, python};

/// A scheduler that behaves (`ok`: first fit) or misbehaves one way.
const PROGRAM: &str = r#"
import json, sys, time
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
if mode == "silent-exit":
    sys.exit(0)
send({"type": "hello", "protocol": 2 if mode == "version" else 1})
for n, line in enumerate(sys.stdin):
    req = json.loads(line)
    fits = [s["index"] for s in req["servers"] if s["free_slots"] >= req["task"]["cores"]]
    answer = {"id": req["id"], "task": req["task"]["id"], "decision": "place", "server": fits[0]} if fits \
        else {"id": req["id"], "task": req["task"]["id"], "decision": "wait"}
    if n == 2:
        if mode == "exit":
            print("boom: giving up", file=sys.stderr)
            sys.exit(3)
        if mode == "hang":
            time.sleep(60)
        if mode == "malformed":
            sys.stdout.write("this is not json\n"); sys.stdout.flush(); continue
        if mode == "unknown":
            answer = {"id": req["id"], "task": req["task"]["id"], "decision": "migrate"}
        if mode == "no-server":
            answer = {"id": req["id"], "task": req["task"]["id"], "decision": "place", "server": 99}
        if mode == "task":
            answer["task"] += 1000
        if mode == "stale":
            send(answer)
    if mode == "busy":
        answer = {"id": req["id"], "task": req["task"]["id"], "decision": "place", "server": 0}
    send(answer)
"#;

/// Three one-slot servers; tasks of 50 s arriving every 2 s fill them.
fn scenario(dir: &Path, mode: &str, timeout: &str) -> String {
    let text = format!(
        r#"
[run]
name = "small"
end = "10m"

[scheduler.external]
command = ["python3", "misbehave.py", "{mode}"]
timeout = "{timeout}"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 3
slots = 1

[[tenants]]
name = "w"
arrivals = {{ process = "poisson", rate_per_s = 0.5 }}
service = {{ distribution = "exponential", mean = "50s" }}
"#
    );
    let path = dir.join(format!("{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_scheduler_that_behaves_runs_and_replays_identically() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("misbehave.py"), PROGRAM).unwrap();
    let path = scenario(tmp.path(), "ok", "30s");
    let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "ok"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(tmp.path().join("ok/digest").is_file());
    // replay finds the program again through run.json's stream_base
    assert_replays_identical(tmp.path(), "ok");
}

#[test]
fn each_misbehaviour_stops_the_run_with_its_error_and_incomplete_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("misbehave.py"), PROGRAM).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("exit", &["request 3", "it exited", "boom: giving up"]),
        (
            "hang",
            &["request 3", "no answer within the timeout of 1 s"],
        ),
        (
            "malformed",
            &["request 3", "malformed response \"this is not json\""],
        ),
        ("unknown", &["request 3", "unknown decision \"migrate\""]),
        ("no-server", &["request 3", "server 99 does not exist"]),
        ("busy", &["server 0 is not free for the task"]),
        ("task", &["request 3", "which is not the task asked about"]),
        ("stale", &["request 4", "answers request 3 (stale"]),
        ("version", &["hello", "protocol v2, dcemu speaks v1"]),
        ("silent-exit", &["hello", "it exited", "without answering"]),
    ];
    for (mode, words) in cases {
        let path = scenario(tmp.path(), mode, "1s");
        let out = format!("out-{mode}");
        let program = format!("python3 misbehave.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
        let dir = tmp.path().join(&out);
        assert!(
            dir.join("actors/scheduler.jsonl").is_file(),
            "{mode}: the logs written so far are kept"
        );
    }
    let path = scenario(tmp.path(), "missing", "1s").replace("missing.toml", "missing2.toml");
    let text = std::fs::read_to_string(tmp.path().join("missing.toml"))
        .unwrap()
        .replace(
            "\"python3\", \"misbehave.py\", \"missing\"",
            "\"./no-such-program\"",
        );
    std::fs::write(&path, text).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", &path, "--quiet", "--out", "out-missing"],
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "a scenario error: {err}");
    assert!(
        err.contains(
            "field `scheduler.external.command`: the program \"./no-such-program\" does not exist"
        ),
        "{err}"
    );
    assert!(!tmp.path().join("out-missing").exists(), "no run started");
}

/// Starts `dcemu args` in `cwd` with its stderr collected line by line.
fn spawn(cwd: &Path, args: &[&str], procs: &mut Procs) -> mpsc::Receiver<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the dcemu binary runs");
    let stderr = child.stderr.take().expect("stderr piped");
    procs.0.push(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs `scenario` (relative to `cwd`, the coordinator's working directory)
/// on a coordinator and two loopback nodes working in `/`, so the program's
/// relative path resolves only through the coordinator's scenario
/// directory. Returns the coordinator's exit status and stderr, the
/// nodes' stderr, and each node's exit status.
fn on_two_nodes(
    cwd: &Path,
    scenario: &str,
    out: &str,
) -> (Option<i32>, String, String, Vec<Option<i32>>) {
    let mut procs = Procs::default();
    let coordinator = spawn(
        cwd,
        &[
            "coordinator",
            "--scenario",
            scenario,
            "--nodes",
            "2",
            "--listen",
            "127.0.0.1:0",
            "--failure-timeout",
            "5s",
            "-q",
            "--secret",
            SECRET,
            "--out",
            out,
        ],
        &mut procs,
    );
    let mut log = Vec::new();
    let addr = loop {
        let line = coordinator
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the coordinator never listened:\n{}", log.join("\n")));
        if let Some(rest) = line.split("listening on ").nth(1) {
            let addr = rest.split(',').next().unwrap_or_default().to_string();
            log.push(line);
            break addr;
        }
        log.push(line);
    };
    // their stderr is kept open (a closed pipe would fail their writes)
    let mut nodes = Vec::new();
    for name in ["n0", "n1"] {
        nodes.push(spawn(
            Path::new("/"),
            &[
                "node",
                "--coordinator",
                &addr,
                "--name",
                name,
                "--listen",
                "127.0.0.1:0",
                "--secret",
                SECRET,
            ],
            &mut procs,
        ));
    }
    let status = wait_exit(&mut procs.0[0], Duration::from_secs(180));
    while let Ok(line) = coordinator.recv_timeout(Duration::from_millis(300)) {
        log.push(line);
    }
    let codes = (1..3)
        .map(|i| wait_exit(&mut procs.0[i], Duration::from_secs(20)).and_then(|s| s.code()))
        .collect();
    let node_log: Vec<String> = nodes.iter().flat_map(|n| n.try_iter()).collect();
    (
        status.and_then(|s| s.code()),
        log.join("\n"),
        node_log.join("\n"),
        codes,
    )
}

/// Every file under `dir`, by path relative to it, but `run.json` and
/// `work.csv` (wall clock) and those in `skip`.
fn results(dir: &Path, skip: &[&str]) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.retain(|(p, _)| p != "run.json" && p != "work.csv" && !skip.contains(&p.as_str()));
    files.sort();
    files
}

fn assert_same(a: &Path, b: &Path, skip: &[&str]) {
    let (x, y) = (results(a, skip), results(b, skip));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&x), names(&y), "{} vs {}", a.display(), b.display());
    for ((p, x), (_, y)) in x.iter().zip(&y) {
        assert!(
            x == y,
            "{p} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Two tenants on six servers placed at random; `placement` is either the
/// built-in `random` or the Python example, by a path relative to the
/// scenario's directory.
fn random_scenario(dir: &Path, name: &str, external: bool) -> String {
    let scheduler = if external {
        "[scheduler.external]\ncommand = [\"python3\", \"py/examples/random_placement.py\"]\n"
    } else {
        "[scheduler]\nplacement = \"random\"\n"
    };
    let text = format!(
        r#"
[run]
name = "random"
end = "20m"
seed = 7

{scheduler}
[output]
actor_logs = true

[[server_types]]
name = "a"
count = 6
slots = 2

[[tenants]]
name = "batch"
arrivals = {{ process = "poisson", rate_per_s = 0.2 }}
service = {{ distribution = "exponential", mean = "60s" }}

[[tenants]]
name = "web"
arrivals = {{ process = "poisson", rate_per_s = 0.1 }}
service = {{ distribution = "exponential", mean = "20s" }}
"#
    );
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

#[test]
fn over_a_coordinator_and_two_nodes_python_random_gives_the_one_process_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    std::os::unix::fs::symlink(client, tmp.path().join("py")).unwrap();
    let external = random_scenario(tmp.path(), "external.toml", true);
    let builtin = random_scenario(tmp.path(), "builtin.toml", false);
    for (scenario, out) in [(&external, "one-external"), (&builtin, "one-builtin")] {
        let o = dcemu(tmp.path(), &["run", scenario, "--quiet", "--out", out]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (status, log, node_log, nodes) = on_two_nodes(tmp.path(), &external, "multi");
    assert_eq!(status, Some(0), "coordinator:\n{log}\nnodes:\n{node_log}");
    assert_eq!(
        nodes,
        vec![Some(0), Some(0)],
        "nodes exit cleanly:\n{node_log}"
    );
    let multi = tmp.path().join("multi");
    assert!(multi.join("digest").is_file() && !multi.join("INCOMPLETE").exists());
    assert!(
        multi.join("actors/scheduler.jsonl").is_file(),
        "actor logs are compared too"
    );
    // the same scenario: every file, the digest included
    assert_same(&multi, &tmp.path().join("one-external"), &[]);
    // the built-in: every file but the scenario naming the program and
    // the copy of the program the record keeps
    assert!(multi.join("program/random_placement.py").is_file());
    assert_same(
        &multi,
        &tmp.path().join("one-builtin"),
        &["scenario.toml", "digest", "program/random_placement.py"],
    );
    // run.json names where the program ran, for `dcemu replay`
    let facts = std::fs::read_to_string(multi.join("run.json")).unwrap();
    let here = std::fs::canonicalize(tmp.path()).unwrap();
    assert!(
        facts.contains(&format!(
            "\"stream_base\": {:?}",
            here.display().to_string()
        )),
        "{facts}"
    );
}

/// Protocol v2 over a coordinator and two nodes: `priority_evict.py`
/// deciding placement and preemption under the `priority` slot stage gives
/// the one-process run's results, file for file, evictions included.
#[test]
fn over_a_coordinator_and_two_nodes_python_priority_evict_gives_the_one_process_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    std::os::unix::fs::symlink(client, tmp.path().join("py")).unwrap();
    let text = r#"
[run]
name = "evict"
end = "20m"
seed = 7

[scheduler]
slots = "priority"

[scheduler.external]
command = ["python3", "py/examples/priority_evict.py"]
stages = ["placement", "preemption"]

[output]
actor_logs = true

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
    std::fs::write(tmp.path().join("evict.toml"), text).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", "evict.toml", "--quiet", "--out", "one"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let metrics = std::fs::read_to_string(tmp.path().join("one/metrics.json")).unwrap();
    let metrics: serde_json::Value = serde_json::from_str(&metrics).unwrap();
    assert!(
        metrics["preemptions"].as_f64().unwrap_or(0.0) > 10.0,
        "it evicts"
    );
    let (status, log, node_log, nodes) = on_two_nodes(tmp.path(), "evict.toml", "multi");
    assert_eq!(status, Some(0), "coordinator:\n{log}\nnodes:\n{node_log}");
    assert_eq!(
        nodes,
        vec![Some(0), Some(0)],
        "nodes exit cleanly:\n{node_log}"
    );
    assert_same(&tmp.path().join("multi"), &tmp.path().join("one"), &[]);
}

/// Protocol v3 over a coordinator and two nodes: `sleep_idle.py` putting
/// idle servers to sleep gives the one-process run's results, file for
/// file: its orders and the servers' wake-ups cross nodes as messages.
#[test]
fn over_a_coordinator_and_two_nodes_python_sleep_idle_gives_the_one_process_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    std::os::unix::fs::symlink(client, tmp.path().join("py")).unwrap();
    let text = r#"
[run]
name = "sleep"
end = "20m"
seed = 5

[scheduler]
report_interval = "10s"

[scheduler.external]
command = ["python3", "py/examples/sleep_idle.py"]
stages = ["placement", "power"]

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 4
slots = 2

[[tenants]]
name = "t"
arrivals = { process = "poisson", rate_per_s = 0.05 }
service = { distribution = "exponential", mean = "60s" }
"#;
    std::fs::write(tmp.path().join("sleep.toml"), text).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", "sleep.toml", "--quiet", "--out", "one"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let metrics = std::fs::read_to_string(tmp.path().join("one/metrics.json")).unwrap();
    let metrics: serde_json::Value = serde_json::from_str(&metrics).unwrap();
    assert!(
        metrics["wake_ups_server"].as_f64().unwrap_or(0.0) > 0.0,
        "servers slept and woke"
    );
    let (status, log, node_log, nodes) = on_two_nodes(tmp.path(), "sleep.toml", "multi");
    assert_eq!(status, Some(0), "coordinator:\n{log}\nnodes:\n{node_log}");
    assert_eq!(
        nodes,
        vec![Some(0), Some(0)],
        "nodes exit cleanly:\n{node_log}"
    );
    assert_same(&tmp.path().join("multi"), &tmp.path().join("one"), &[]);
}

#[test]
fn over_a_coordinator_and_two_nodes_a_program_that_exits_fails_the_run() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("misbehave.py"), PROGRAM).unwrap();
    let path = scenario(tmp.path(), "exit", "5s");
    let name = Path::new(&path).file_name().unwrap().to_str().unwrap();
    let (status, log, node_log, nodes) = on_two_nodes(tmp.path(), name, "out");
    assert_eq!(status, Some(1), "coordinator:\n{log}\nnodes:\n{node_log}");
    // the coordinator names the root cause, not a peer's lost link to it
    for words in [
        "external scheduler `python3 misbehave.py exit`",
        "request 3",
        "it exited",
    ] {
        assert!(log.contains(words), "says {words:?}:\n{log}");
    }
    assert!(
        !log.contains("panicked") && !node_log.contains("panicked"),
        "{log}\n{node_log}"
    );
    let dir = tmp.path().join("out");
    assert!(dir.join("INCOMPLETE").is_file(), "marked incomplete");
    assert!(!dir.join("digest").exists(), "no digest");
    assert!(
        nodes.iter().all(|c| *c != Some(0)),
        "no node reports success: {nodes:?}"
    );
    let listing: Vec<String> = std::fs::read_dir(dir.join("actors"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    // what the actors logged up to the stop reaches the results, from the
    // node that failed and from the one that was stopped
    let scheduler = std::fs::read_to_string(dir.join("actors/scheduler.jsonl")).unwrap_or_default();
    assert!(
        scheduler.lines().count() > 0,
        "the failed node's logs are kept: {listing:?}"
    );
    assert!(
        listing
            .iter()
            .any(|f| f == "server-0001.jsonl" || f == "server-0002.jsonl"),
        "the stopped node's logs are kept: {listing:?}"
    );
}
