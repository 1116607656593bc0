//! The external migration stage under a slot stage (protocol v3,
//! `stages = ["placement", "migration"]` with `slots = "priority" |
//! "wasp" | "hybrid"`, docs/external-scheduler.md): a move decided inside
//! a slot pass is begun in the slot stage at once (the target's slot held,
//! the task no victim) and booked in the scheduler's view, so the pass's
//! later requests show the task migrating; its order leaves when its own
//! decision is done, in decision order. No server ever runs more tasks
//! than it has slots, every move ends on its target, and the runs are the
//! same twice, on three partitions and in replay. Skipped, saying so,
//! where `python3` is absent.

use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{
    assert_replays_identical, assert_run_fails, assert_same_twice_and_on_three_partitions,
    json_lines, python, run_ok, server_logs,
};

/// A v3 program deciding placement and migration under a slot stage.
/// First fit; every answer (`idle` ones too) moves the first running task
/// not migrating to the last listed server with a free slot left (after
/// its own placement) other than the task's. It asserts that every task it
/// ordered to move is shown migrating by the later requests of the same
/// instant, and writes each move with the virtual time its decision is
/// done: decisions that place or order take 1 s each, one after the other
/// (`busy`), as dcemu's own clock of decisions. Mode `full` instead moves
/// a task onto the server it just filled (a misbehaviour).
const MIGRATOR: &str = r#"
import json, sys
LAT = 1_000_000_000
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
assert hello["protocol"] == 3 and hello["stages"] == ["placement", "migration"], hello
send({"type": "hello", "protocol": 3})
busy = 0
ordered = {}
seen = 0
out = open("moves.jsonl", "w")
for line in sys.stdin:
    req = json.loads(line)
    now = req["time_ns"]
    running = req.get("running") or []
    for r in running:
        if ordered.get(r["id"]) == now:
            assert r["migrating"], (req["id"], r)
            seen += 1
    free = {s["index"]: s["free_slots"] for s in req["servers"]}
    answer = {"id": req["id"]}
    chosen = None
    if req["type"] != "idle":
        answer["task"] = req["task"]["id"]
        fits = [i for i in sorted(free) if free[i] >= 1]
        if fits:
            chosen = fits[0]
            answer.update(decision="place", server=chosen)
            free[chosen] -= 1
        else:
            answer["decision"] = "wait"
    migrate = []
    if mode == "ok":
        targets = [i for i in sorted(free) if free[i] >= 1]
        for r in running:
            if r["migrating"]:
                continue
            to = [i for i in targets if i != r["server"]]
            if to:
                migrate.append({"task": r["id"], "server": to[-1], "from": r["server"]})
                break
    elif mode == "full" and chosen is not None and free[chosen] == 0:
        other = [r for r in running if r["server"] != chosen and not r["migrating"]]
        if other:
            migrate.append({"task": other[0]["id"], "server": chosen, "from": other[0]["server"]})
    if chosen is not None or migrate:
        busy = max(busy, now) + LAT
    for m in migrate:
        ordered[m["task"]] = now
        out.write(json.dumps({"task": m["task"], "from": m["from"], "decided": now, "leaves": busy, "seen": seen}) + "\n")
    out.flush()
    if migrate:
        answer["migrate"] = [{"task": m["task"], "server": m["server"]} for m in migrate]
    send(answer)
"#;

/// Eight two-slot servers under slot stage `slots`, class-0 tasks
/// arriving one every 4 s on average and class-5 ones every 20 s (which
/// evict when no slot is free), scheduled every 30 s (several decisions a
/// pass), each decision taking 1 s.
fn scenario(dir: &Path, mode: &str, slots: &str) -> String {
    let sticky = if slots == "hybrid" {
        "sticky_slots = 4\n"
    } else {
        ""
    };
    let text = format!(
        r#"
[run]
name = "migrate-slots"
end = "1h"
seed = 7

[scheduler]
report_interval = "10s"
slots = "{slots}"
slot_interval = "30s"
{sticky}
[scheduler.external]
command = ["python3", "migrate.py", "{mode}"]
stages = ["placement", "migration"]
decision_latency = "1s"
timeout = "5s"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 8
slots = 2

[[tenants]]
name = "t"
arrivals = {{ process = "poisson", rate_per_s = 0.25 }}
service = {{ distribution = "exponential", mean = "60s" }}

[[tenants]]
name = "high"
priority = 5
arrivals = {{ process = "poisson", rate_per_s = 0.05 }}
service = {{ distribution = "exponential", mean = "60s" }}
"#
    );
    let name = format!("{slots}-{mode}.toml");
    std::fs::write(dir.join(&name), text).unwrap();
    name
}

/// Under every slot stage the program's moves happen and end on their
/// targets, no server runs more tasks than its two slots, each move's
/// order reaches its source a fixed link latency after the moment its own
/// decision is done (decisions of a pass are done one after the other,
/// 1 s each), later requests of the same pass show the moving task
/// migrating (the program asserts it), and the run is the same twice, on
/// three partitions and in replay.
#[test]
fn migrations_under_a_slot_stage_keep_slots_leave_in_decision_order_and_run_identically() {
    if !python() {
        return;
    }
    for slots in ["priority", "wasp", "hybrid"] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("migrate.py"), MIGRATOR).unwrap();
        let path = scenario(tmp.path(), "ok", slots);
        let digest = run_ok(tmp.path(), &path, "out", &[]);
        let out = tmp.path().join("out");
        let metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap())
                .unwrap();
        let migrations = metrics["migrations"].as_u64().unwrap();
        assert!(
            migrations > 10,
            "{slots}: the program's moves happen: {metrics}"
        );
        assert_eq!(metrics["migrations_declined"], 0, "{slots}: {metrics}");
        let scheduler = json_lines(&out.join("actors/scheduler.jsonl"));
        let count = |kind: &str| scheduler.iter().filter(|e| e["kind"] == kind).count() as u64;
        assert_eq!(count("migrate_done"), migrations, "{slots}");
        let started = count("migrate_start");
        assert!(
            metrics["preemptions"].as_u64().unwrap() > 0,
            "{slots}: priority evictions happen beside the moves: {metrics}"
        );
        let mut moving = std::collections::BTreeSet::new();
        for e in &scheduler {
            match e["kind"].as_str() {
                Some("migrate_start") => {
                    moving.insert(e["task"].as_u64().unwrap());
                }
                Some("migrate_done" | "slot_release") => {
                    moving.remove(&e["task"].as_u64().unwrap());
                }
                Some("preempt") => assert!(
                    !moving.contains(&e["victim"].as_u64().unwrap()),
                    "{slots}: a moving task is no victim: {e}"
                ),
                _ => {}
            }
        }

        let logs = server_logs(&out);
        let mut out_at: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
        let (mut starts, mut ends) = (0u64, 0u64);
        for (server, entries) in &logs {
            for e in entries {
                match e["kind"].as_str() {
                    Some("task_start") => {
                        starts += 1;
                        let running = e["running"].as_u64().unwrap();
                        assert!(
                            running <= 2,
                            "{slots}: server {server} runs {running} tasks on 2 slots: {e}"
                        );
                    }
                    Some("task_end") => ends += 1,
                    Some("migrate_out") => out_at
                        .entry((e["task"].as_u64().unwrap(), *server))
                        .or_default()
                        .push(e["t_ns"].as_u64().unwrap()),
                    _ => {}
                }
            }
        }
        let moved: u64 = out_at.values().map(|v| v.len() as u64).sum();
        assert!(
            started >= moved && moved >= migrations && moved <= migrations + 16,
            "{slots}: every move that left its source ends on its target, but for those \
             under way at the end (at most one a slot): {started} begun (a task may end \
             before its order reaches it), {moved} left, {migrations} done"
        );
        assert_eq!(
            starts,
            metrics["tasks_dispatched"].as_u64().unwrap() + migrations,
            "{slots}: a task starts once per dispatch and once per move it ends: no task lost \
             or started twice"
        );
        assert!(ends > 0 && ends <= starts, "{slots}");

        let moves = json_lines(&tmp.path().join("moves.jsonl"));
        let mut delays = std::collections::BTreeSet::new();
        for (&(task, from), times) in &out_at {
            for &at in times {
                let left = moves
                    .iter()
                    .filter(|m| m["task"] == task && m["from"] == from)
                    .map(|m| m["leaves"].as_u64().unwrap())
                    .filter(|&l| l <= at)
                    .max();
                delays.insert(left.map(|l| at - l));
            }
        }
        assert_eq!(
            delays.len(),
            1,
            "{slots}: every move leaves its source one link latency after its decision is \
             done: {delays:?}"
        );
        let delay = delays.into_iter().next().flatten().unwrap();
        assert!(delay < 1_000_000, "{slots}: {delay} ns");
        let mut per_pass: BTreeMap<u64, std::collections::BTreeSet<u64>> = BTreeMap::new();
        for m in &moves {
            per_pass
                .entry(m["decided"].as_u64().unwrap())
                .or_default()
                .insert(m["leaves"].as_u64().unwrap());
        }
        assert!(
            per_pass.values().any(|l| l.len() > 1),
            "{slots}: some pass took several decisions with moves"
        );
        let seen = moves.last().map_or(0, |m| m["seen"].as_u64().unwrap());
        assert!(
            seen > 0,
            "{slots}: later requests of a pass showed a task ordered to move as migrating"
        );

        assert_same_twice_and_on_three_partitions(tmp.path(), &path, &digest, slots);
        assert_replays_identical(tmp.path(), "out");
    }
}

/// A move onto a server whose free slot the same answer's placement took
/// stops the run under a slot stage as without one: exit 1, the error,
/// results marked incomplete.
#[test]
fn a_move_without_a_free_slot_under_a_slot_stage_stops_the_run() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("migrate.py"), MIGRATOR).unwrap();
    for slots in ["priority", "hybrid"] {
        let path = scenario(tmp.path(), "full", slots);
        assert_run_fails(
            tmp.path(),
            &path,
            &format!("out-{slots}"),
            slots,
            "python3 migrate.py full",
            &["(place task", "which has not its 1 slot(s) free"],
        );
    }
}

/// A v3 program deciding placement, preemption and migration that evicts
/// the youngest admissible task at its first `preempt` and orders the
/// same task to move.
const EVICT_AND_MOVE: &str = r#"
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
assert hello["stages"] == ["placement", "preemption", "migration"], hello
send({"type": "hello", "protocol": 3})
n = len(hello["servers"])
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "idle":
        send({"id": req["id"]})
        continue
    base = {"id": req["id"], "task": req["task"]["id"]}
    if req["type"] == "place":
        fits = [s["index"] for s in req["servers"] if s["free_slots"] >= 1]
        send(dict(base, decision="place", server=fits[0]) if fits else dict(base, decision="wait"))
        continue
    running = [(s["index"], r) for s in req["servers"] for r in s["running"]]
    _, victim, server = max((r["started_ns"], r["id"], i) for i, r in running if r["admissible"])
    send(dict(base, decision="place", server=server, evict=[{"task": victim}],
              migrate=[{"task": victim, "server": (server + 1) % n}]))
"#;

/// A `preempt` answer that also moves the task it evicts stops the run:
/// the evicted task stops, it cannot also hold a slot on its target.
#[test]
fn moving_the_task_a_preempt_answer_evicts_stops_the_run() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("evict_move.py"), EVICT_AND_MOVE).unwrap();
    let text = r#"
[run]
name = "evict-move"
end = "10m"

[scheduler]
slots = "priority"

[scheduler.external]
command = ["python3", "evict_move.py"]
stages = ["placement", "preemption", "migration"]
timeout = "5s"

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
arrivals = { process = "poisson", rate_per_s = 0.1 }
service = { distribution = "exponential", mean = "50s" }
"#;
    std::fs::write(tmp.path().join("evict-move.toml"), text).unwrap();
    assert_run_fails(
        tmp.path(),
        "evict-move.toml",
        "out",
        "evict and move",
        "python3 evict_move.py",
        &["(preempt task", "and migrates it: an evicted task stops"],
    );
}
