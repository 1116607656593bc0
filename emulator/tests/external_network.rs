//! The external network stage (protocol v3, `stages = ["placement",
//! "network"]`, docs/external-scheduler.md): a `place` request for a task
//! with a flow shows every path its flow could take to each server, with
//! the bandwidth free on it, and the program's `path` is the one the
//! scheduler reserves (its `flow_reserve` log line), with and without a
//! slot stage; the run is the same twice, on three partitions and in
//! replay. Each way of naming a wrong path stops the run with exit code 1,
//! an error naming the program, the request and the problem, and
//! `INCOMPLETE` results; a flat network refuses the stage at load.
//! Skipped, saying so, where `python3` is absent.

use std::path::Path;

mod common;
use common::{
    assert_replays_identical, assert_run_fails, assert_same_twice_and_on_three_partitions, dcemu,
    json_lines, python, run_ok, with_client,
};

/// A v3 program with the network stage: first fit among the servers with
/// a path that has the flow's bandwidth, on the path with the most free
/// bandwidth (ties: the last listed, which dcemu's own choice seldom is);
/// it writes each choice to `paths.jsonl`. Without the stage it places
/// the same way and names no path. Other modes misbehave once a task with
/// a flow is placed (`narrow`: once a path lacks the flow's bandwidth).
const WIDEST: &str = r#"
import json, sys
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
send({"type": "hello", "protocol": hello["protocol"]})
out = open("paths.jsonl", "w")
network = "network" in hello["stages"]
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "idle":
        send({"id": req["id"]})
        continue
    task = req["task"]
    flow = task["flow_bps"]
    answer = {"id": req["id"], "task": task["id"]}
    if network:
        for s in req["servers"]:
            assert ("paths" in s) == (flow > 0), (task, s)
    def widest(s):
        paths = s.get("paths") or []
        best = max(range(len(paths)), key=lambda k: (paths[k]["free_bps"], k), default=None)
        return best if best is not None and paths[best]["free_bps"] >= flow else None
    fits = [s for s in req["servers"] if s["free_slots"] >= task["cores"]
            and (flow == 0 or not network or widest(s) is not None)]
    if not fits:
        answer["decision"] = "wait"
        send(answer)
        continue
    s = fits[0]
    answer.update(decision="place", server=s["index"])
    narrow = [k for k, p in enumerate(s.get("paths") or []) if p["free_bps"] < flow]
    if flow > 0 and network and (mode == "ok" or mode == "narrow" and not narrow):
        k = widest(s)
        answer["path"] = k
        out.write(json.dumps({"task": task["id"], "switches": s["paths"][k]["switches"]}) + "\n")
        out.flush()
    elif flow > 0 and mode == "ghost":
        answer["path"] = len(s["paths"])
    elif flow > 0 and mode == "narrow":
        answer["path"] = narrow[0]
    elif flow == 0 and mode == "no-flow":
        answer["path"] = 0
    elif mode == "no-stage":
        answer["path"] = 0
    elif flow > 0 and mode == "wait-path":
        answer = {"id": req["id"], "task": task["id"], "decision": "wait", "path": 0}
    send(answer)
"#;

/// Eight 2-slot servers under a three-tier network of 2 core switches and
/// 2 pods of 2 aggregation and 2 access switches (4 paths from the core
/// to each server), 1 Gb/s below the core; tenant `f`'s tasks each need
/// 400 Mb/s to the outside world (a fourth flow under one access switch
/// leaves one of its uplinks too narrow), tenant `p`'s none.
fn scenario(dir: &Path, mode: &str, stages: &str, extra: &str) -> String {
    let text = format!(
        r#"
[run]
name = "paths"
end = "30m"
seed = 4
{extra}
[topology]
kind = "three-tier"
core = 2
aggregation = 4
access = 4
pods = 2
core_link = "10Gbps"
aggregation_link = "1Gbps"
access_link = "1Gbps"

[scheduler]
report_interval = "10s"

[scheduler.external]
command = ["python3", "widest.py", "{mode}"]
stages = {stages}
timeout = "5s"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 8
slots = 2

[[tenants]]
name = "f"
arrivals = {{ process = "poisson", rate_per_s = 0.05 }}
service = {{ distribution = "exponential", mean = "90s" }}
flow_bandwidth = "400Mbps"

[[tenants]]
name = "p"
arrivals = {{ process = "poisson", rate_per_s = 0.02 }}
service = {{ distribution = "exponential", mean = "60s" }}
"#
    );
    let name = format!("{mode}-{}.toml", text.len() ^ stages.len() << 8);
    std::fs::write(dir.join(&name), text).unwrap();
    std::fs::write(dir.join("widest.py"), WIDEST).unwrap();
    name
}

const NETWORK: &str = r#"["placement", "network"]"#;

/// Every flow the program placed is reserved on the path it named, and
/// on no other; some of them are not the path dcemu reserves by itself.
fn assert_reserved_where_named(dir: &Path, out: &str) {
    let chosen = json_lines(&dir.join("paths.jsonl"));
    assert!(chosen.len() > 10, "{} flows placed", chosen.len());
    let reserved: Vec<serde_json::Value> =
        json_lines(&dir.join(out).join("actors/scheduler.jsonl"))
            .into_iter()
            .filter(|e| e["kind"] == "flow_reserve")
            .collect();
    for c in &chosen {
        let r = reserved
            .iter()
            .find(|r| r["task"] == c["task"])
            .unwrap_or_else(|| panic!("task {} reserved its flow", c["task"]));
        let path: Vec<&str> = r["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let named: Vec<&str> = c["switches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert_eq!(
            &path[..path.len() - 1],
            &named[..],
            "task {}: the flow takes the path the program named",
            c["task"]
        );
    }
}

#[test]
fn the_program_chooses_each_flows_path_and_runs_identically_everywhere() {
    if !python() {
        return;
    }
    for slots in ["", "[scheduler]\nslots = \"priority\"\n"] {
        let tmp = tempfile::tempdir().unwrap();
        let path = scenario(tmp.path(), "ok", NETWORK, "");
        if !slots.is_empty() {
            let text = std::fs::read_to_string(tmp.path().join(&path))
                .unwrap()
                .replace("[scheduler]\n", slots);
            std::fs::write(tmp.path().join(&path), text).unwrap();
        }
        let digest = run_ok(tmp.path(), &path, "out", &[]);
        assert_reserved_where_named(tmp.path(), "out");
        let own = scenario(tmp.path(), "ok", r#"["placement"]"#, "");
        let own_digest = run_ok(tmp.path(), &own, "own", &[]);
        assert_ne!(
            own_digest, digest,
            "{slots}: the program's paths are not dcemu's own"
        );
        assert_same_twice_and_on_three_partitions(tmp.path(), &path, &digest, slots);
        assert_replays_identical(tmp.path(), "out");
    }
}

#[test]
fn each_wrong_path_stops_the_run_with_its_error_and_incomplete_results() {
    if !python() {
        return;
    }
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "ghost",
            NETWORK,
            &[
                "path 4 to server",
                "does not exist (the request lists 4 path(s) to it, 0 to 3)",
            ],
        ),
        (
            "narrow",
            NETWORK,
            &["bps free, but the task's flow needs 400000000 bps"],
        ),
        (
            "no-flow",
            NETWORK,
            &["names path 0, but task", "has no flow (flow_bps 0)"],
        ),
        (
            "no-stage",
            r#"["placement", "power"]"#,
            &["names a \"path\", but paths are the network stage's"],
        ),
        (
            "wait-path",
            NETWORK,
            &["decision \"wait\" with a \"path\" (a path goes with \"place\")"],
        ),
    ];
    for (mode, stages, says) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let path = scenario(tmp.path(), mode, stages, "");
        let mut words = vec!["request"];
        words.extend_from_slice(says);
        assert_run_fails(
            tmp.path(),
            &path,
            "out",
            mode,
            &format!("python3 widest.py {mode}"),
            &words,
        );
    }
}

#[test]
fn the_network_stage_is_refused_on_a_flat_network_and_without_placement() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path(), "ok", NETWORK, "");
    let flat = std::fs::read_to_string(tmp.path().join(&path))
        .unwrap()
        .replace("kind = \"three-tier\"", "kind = \"flat\"")
        .replace("flow_bandwidth = \"400Mbps\"\n", "");
    let flat: String = flat
        .lines()
        .filter(|l| {
            !["core", "aggregation", "access", "pods"]
                .iter()
                .any(|k| l.starts_with(&format!("{k} ")) || l.starts_with(&format!("{k}_link")))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(tmp.path().join("flat.toml"), flat).unwrap();
    let o = dcemu(tmp.path(), &["run", "flat.toml", "--quiet", "--out", "x"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success());
    assert!(
        err.contains("scheduler.external.stages") && err.contains("a flat network has none"),
        "{err}"
    );
    let alone = scenario(tmp.path(), "ok", r#"["network"]"#, "");
    let o = dcemu(tmp.path(), &["run", &alone, "--quiet", "--out", "y"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success());
    assert!(
        err.contains("names \"network\" without \"placement\""),
        "{err}"
    );
}

/// The Python client's `widest_path.py` example runs the stage: every
/// flow it places is reserved (none refused), and the run is the same on
/// three partitions.
#[test]
fn the_widest_path_example_reserves_every_flow_it_places() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    let path = scenario(tmp.path(), "ok", NETWORK, "");
    let text = std::fs::read_to_string(tmp.path().join(&path))
        .unwrap()
        .replace(
            r#"["python3", "widest.py", "ok"]"#,
            r#"["python3", "py/examples/widest_path.py"]"#,
        );
    std::fs::write(tmp.path().join("example.toml"), text).unwrap();
    let digest = run_ok(tmp.path(), "example.toml", "out", &[]);
    let log = json_lines(&tmp.path().join("out/actors/scheduler.jsonl"));
    let reserved = log.iter().filter(|e| e["kind"] == "flow_reserve").count();
    let refused = log.iter().filter(|e| e["kind"] == "flow_refused").count();
    assert!(reserved > 10, "{reserved} flows reserved");
    assert_eq!(refused, 0, "the example names only paths with room");
    assert_eq!(
        run_ok(tmp.path(), "example.toml", "three", &["--partitions", "3"]),
        digest
    );
}
