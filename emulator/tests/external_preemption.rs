//! An external scheduler that decides the preemption stage (protocol v2,
//! docs/external-scheduler.md), with the placement stage (`stages =
//! ["placement", "preemption"]`) or alone beside a built-in placement
//! (`stages = ["preemption"]`): one that behaves evicts, runs and replays
//! identically; each way of misbehaving with an eviction stops `dcemu run`
//! with exit code 1, an error naming the program, the request and the
//! problem, and `INCOMPLETE` results, as the placement's misbehaviours do
//! (`external.rs`). A scenario that hands out a preemption stage it has
//! not, or a placement to a program that does not decide it, is refused at
//! load. Skipped, saying so, where `python3` is absent.

use std::path::Path;

mod common;
use common::{assert_replays_identical, assert_run_fails, dcemu, python};

/// A v2 scheduler: first fit (with the placement stage), and the most
/// recently started admissible victim (`ok`; `admissible`: the same,
/// asking in its hello for requests that list only admissible tasks, and
/// asserting they do), or one way of misbehaving at its first `preempt`.
const PROGRAM: &str = r#"
import json, sys
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
if hello["protocol"] != 2 or hello["stages"] not in (["placement", "preemption"], ["preemption"]):
    sys.exit("unexpected hello: %r" % hello)
reply = {"type": "hello", "protocol": 1 if mode == "v1" else 2}
if mode == "admissible":
    reply["preempt_lists"] = "admissible"
send(reply)
for line in sys.stdin:
    req = json.loads(line)
    base = {"id": req["id"], "task": req["task"]["id"]}
    if req["type"] == "place" and "placement" not in hello["stages"]:
        sys.exit("a place request, but this program does not decide placement")
    if req["type"] == "place":
        fits = [s["index"] for s in req["servers"] if s["free_slots"] >= req["task"]["cores"]]
        answer = dict(base, decision="place", server=fits[0]) if fits else dict(base, decision="wait")
        if mode == "evict-on-place" and fits:
            answer["evict"] = [{"task": 0}]
        send(answer)
        continue
    running = [(s["index"], r) for s in req["servers"] for r in s["running"]]
    if mode == "admissible":
        assert running and all(r["admissible"] for _, r in running), req
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
/// fill them, class-5 tasks evict them; `placement` places them.
fn scenario(dir: &Path, mode: &str, (slots, placement): (&str, &str), stages: &str) -> String {
    let text = format!(
        r#"
[run]
name = "evictions"
end = "10m"

[scheduler]
slots = "{slots}"
placement = "{placement}"

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
const ALONE: &str = r#"["preemption"]"#;
const PRIORITY: (&str, &str) = ("priority", "external");
/// The built-in placement beside a program that decides only preemption.
const BESIDE: (&str, &str) = ("priority", "least-loaded");

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
    for (out, stages, at) in [("ok", BOTH, PRIORITY), ("alone", ALONE, BESIDE)] {
        let path = scenario(tmp.path(), "ok", at, stages);
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", out]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let dir = tmp.path().join(out);
        assert!(
            metric(&dir, "preemptions") > 0.0,
            "{out}: the program evicted"
        );
        assert_eq!(
            metric(&dir, "preemptions"),
            metric(&dir, "evictions_priority"),
            "{out}: every eviction it decided reached its server"
        );
        assert_replays_identical(tmp.path(), out);
    }
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
        let path = scenario(tmp.path(), mode, PRIORITY, BOTH);
        let out = format!("out-{mode}");
        let program = format!("python3 evict.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
    }
}

/// Beside a built-in placement the program's first request is a
/// `preempt`, and its misbehaviours stop the run as with the placement
/// stage.
#[test]
fn a_program_deciding_only_preemption_that_misbehaves_stops_the_run() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evict.py"), PROGRAM).unwrap();
    let cases: &[(&str, &[&str])] = &[
        (
            "evict-ghost",
            &[
                "request 1 (preempt task",
                "it evicts task 99999, which is not running",
            ],
        ),
        (
            "evict-inadmissible",
            &["(preempt task", "may not be evicted for task", "admissible"],
        ),
        ("v1", &["hello", "it speaks protocol v1, dcemu speaks v2"]),
    ];
    for (mode, words) in cases {
        let path = scenario(tmp.path(), mode, BESIDE, ALONE);
        let out = format!("alone-{mode}");
        let program = format!("python3 evict.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
    }
}

#[test]
fn a_preemption_stage_that_is_not_there_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            ("none", "external"),
            BOTH,
            "external.stages",
            "scheduler.slots is \"none\"",
        ),
        (
            ("none", "least-loaded"),
            ALONE,
            "external.stages",
            "scheduler.slots is \"none\"",
        ),
        (
            PRIORITY,
            ALONE,
            "scheduler.placement",
            "does not name the placement stage",
        ),
    ];
    for (at, stages, field, says) in cases {
        let path = scenario(tmp.path(), "ok", at, stages);
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "refused"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{at:?} {stages}: refused");
        assert!(
            err.contains(field) && err.contains(says),
            "{at:?} {stages}: {err}"
        );
    }
}

/// A program that asks for `preempt` requests listing only the admissible
/// tasks gets them, evicts the same victims, and the run's metrics and
/// logs are those of the program reading every running task; asking for
/// it in a session without `preempt` requests is an error.
#[test]
fn preempt_requests_list_only_the_admissible_tasks_when_the_program_asks() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evict.py"), PROGRAM).unwrap();
    for (mode, out) in [("ok", "every"), ("admissible", "admissible")] {
        let path = scenario(tmp.path(), mode, BESIDE, ALONE);
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", out]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let read = |out: &str, file: &str| std::fs::read(tmp.path().join(out).join(file)).unwrap();
    assert!(metric(&tmp.path().join("admissible"), "preemptions") > 0.0);
    for file in [
        "metrics.json",
        "actors/scheduler.jsonl",
        "actors/server-0000.jsonl",
    ] {
        assert_eq!(
            read("every", file),
            read("admissible", file),
            "{file}: the same run either way"
        );
    }
    assert_replays_identical(tmp.path(), "admissible");
    std::fs::write(
        tmp.path().join("v1.py"),
        "import json, sys\njson.loads(sys.stdin.readline())\n\
         print(json.dumps({\"type\": \"hello\", \"protocol\": 1, \"preempt_lists\": \"admissible\"}), flush=True)\n\
         sys.stdin.read()\n",
    )
    .unwrap();
    let path = scenario(tmp.path(), "v1-lists", PRIORITY, r#"["placement"]"#);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        r#"["python3", "evict.py", "v1-lists"]"#,
        r#"["python3", "v1.py"]"#,
    );
    std::fs::write(&path, text).unwrap();
    assert_run_fails(
        tmp.path(),
        &path,
        "v1-lists",
        "preempt_lists without preemption",
        "python3 v1.py",
        &["its hello asks for \"preempt_lists\", but this session sends no \"preempt\" request"],
    );
}
