//! An external scheduler that decides the preemption stage too (protocol
//! v2, `stages = ["placement", "preemption"]`, docs/external-scheduler.md):
//! one that behaves evicts, runs and replays identically; each way of
//! misbehaving with an eviction stops `dcemu run` with exit code 1, an
//! error naming the program, the request and the problem, and `INCOMPLETE`
//! results, as the placement's misbehaviours do (`external.rs`). A
//! scenario that hands out a preemption stage it has not is refused at
//! load. Skipped, saying so, where `python3` is absent.

use std::path::Path;

mod common;
use common::{assert_replays_identical, assert_run_fails, dcemu, python};

/// A v2 scheduler: first fit, and the most recently started admissible
/// victim (`ok`), or one way of misbehaving at its first `preempt`.
const PROGRAM: &str = r#"
import json, sys
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
if hello["protocol"] != 2 or hello["stages"] != ["placement", "preemption"]:
    sys.exit("unexpected hello: %r" % hello)
send({"type": "hello", "protocol": 1 if mode == "v1" else 2})
for line in sys.stdin:
    req = json.loads(line)
    base = {"id": req["id"], "task": req["task"]["id"]}
    if req["type"] == "place":
        fits = [s["index"] for s in req["servers"] if s["free_slots"] >= req["task"]["cores"]]
        answer = dict(base, decision="place", server=fits[0]) if fits else dict(base, decision="wait")
        if mode == "evict-on-place" and fits:
            answer["evict"] = [{"task": 0}]
        send(answer)
        continue
    running = [(s["index"], r) for s in req["servers"] for r in s["running"]]
    admissible = sorted((r["started_ns"], r["id"], i) for i, r in running if r["admissible"])
    _, victim, server = admissible[-1]
    answer = dict(base, decision="place", server=server, evict=[{"task": victim, "reason": "youngest"}])
    if mode == "evict-none":
        del answer["evict"]
    if mode == "evict-two":
        answer["evict"].append({"task": running[0][1]["id"]})
    if mode == "evict-ghost":
        answer["evict"] = [{"task": 99999, "reason": "made up"}]
    if mode == "evict-elsewhere":
        answer["server"] = (server + 1) % len(hello["servers"])
    if mode == "evict-inadmissible":
        others = [(i, r["id"]) for i, r in running if not r["admissible"]]
        if others:
            answer["server"], answer["evict"] = others[0][0], [{"task": others[0][1]}]
    send(answer)
"#;

/// Three one-slot servers under the `priority` slot stage: class-0 tasks
/// fill them, class-5 tasks evict them.
fn scenario(dir: &Path, mode: &str, slots: &str, stages: &str) -> String {
    let text = format!(
        r#"
[run]
name = "evictions"
end = "10m"

[scheduler]
slots = "{slots}"

[scheduler.external]
command = ["python3", "evict.py", "{mode}"]
stages = {stages}
timeout = "5s"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 3
slots = 1

[[tenants]]
name = "low"
arrivals = {{ process = "poisson", rate_per_s = 0.5 }}
service = {{ distribution = "exponential", mean = "50s" }}

[[tenants]]
name = "high"
priority = 5
arrivals = {{ process = "poisson", rate_per_s = 0.1 }}
service = {{ distribution = "exponential", mean = "50s" }}
"#
    );
    let path = dir.join(format!("{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const BOTH: &str = r#"["placement", "preemption"]"#;

fn metric(dir: &Path, name: &str) -> f64 {
    let text = std::fs::read_to_string(dir.join("metrics.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v[name].as_f64().unwrap_or(0.0)
}

#[test]
fn a_program_that_evicts_runs_and_replays_identically() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evict.py"), PROGRAM).unwrap();
    let path = scenario(tmp.path(), "ok", "priority", BOTH);
    let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "ok"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = tmp.path().join("ok");
    assert!(metric(&dir, "preemptions") > 0.0, "the program evicted");
    assert_eq!(
        metric(&dir, "preemptions"),
        metric(&dir, "evictions_priority"),
        "every eviction it decided reached its server"
    );
    assert_replays_identical(tmp.path(), "ok");
}

#[test]
fn each_eviction_misbehaviour_stops_the_run_with_its_error_and_incomplete_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evict.py"), PROGRAM).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("evict-none", &["(preempt task", "evicts nothing"]),
        ("evict-two", &["(preempt task", "evicts 2 tasks"]),
        (
            "evict-ghost",
            &[
                "(preempt task",
                "it evicts task 99999, which is not running",
                "\"made up\"",
            ],
        ),
        (
            "evict-elsewhere",
            &["(preempt task", "but the task runs on server"],
        ),
        (
            "evict-inadmissible",
            &["(preempt task", "may not be evicted for task", "admissible"],
        ),
        (
            "evict-on-place",
            &[
                "request 1 (place task",
                "evictions answer only a \"preempt\" request",
            ],
        ),
        ("v1", &["hello", "it speaks protocol v1, dcemu speaks v2"]),
    ];
    for (mode, words) in cases {
        let path = scenario(tmp.path(), mode, "priority", BOTH);
        let out = format!("out-{mode}");
        let program = format!("python3 evict.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
    }
}

#[test]
fn a_preemption_stage_that_is_not_there_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("none", BOTH, "scheduler.slots is \"none\""),
        (
            "priority",
            r#"["preemption"]"#,
            "names \"preemption\" without \"placement\"",
        ),
    ];
    for (slots, stages, says) in cases {
        let path = scenario(tmp.path(), "ok", slots, stages);
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "refused"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{slots} {stages}: refused");
        assert!(
            err.contains("external.stages") && err.contains(says),
            "{slots} {stages}: {err}"
        );
    }
}
