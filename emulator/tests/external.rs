//! An external scheduler that misbehaves (docs/external-scheduler.md,
//! "Errors"): each way stops `dcemu run` with exit code 1 and an error
//! naming the program, the request and the problem, and leaves the results
//! directory marked `INCOMPLETE` with what the actors logged before, as
//! for a node that dies. One that behaves runs and replays identically.
//! Skipped, saying so, where `python3` is absent.

use std::path::Path;
use std::process::{Command, Output};

fn dcemu(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the dcemu binary runs")
}

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
    let r = dcemu(tmp.path(), &["replay", "ok"]);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        r.status.success() && out.contains("identical"),
        "{out}{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let c = dcemu(
        tmp.path(),
        &["coordinator", "--nodes", "1", "--scenario", &path],
    );
    assert_eq!(c.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&c.stderr).contains("scheduler.external"));
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
        (
            "silent-exit",
            &["hello", "it closed its output", "it exited"],
        ),
    ];
    for (mode, words) in cases {
        let path = scenario(tmp.path(), mode, "1s");
        let out = format!("out-{mode}");
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", &out]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{mode}: {err}");
        let program = format!("external scheduler `python3 misbehave.py {mode}`");
        assert!(err.contains(&program), "{mode}: names the program: {err}");
        for w in *words {
            assert!(err.contains(w), "{mode}: says {w:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{mode}: {err}");
        let dir = tmp.path().join(&out);
        assert!(
            dir.join("INCOMPLETE").is_file(),
            "{mode}: marked incomplete"
        );
        assert!(!dir.join("digest").exists(), "{mode}: no digest");
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
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`./no-such-program`: hello: cannot start it"),
        "{err}"
    );
}
