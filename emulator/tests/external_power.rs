//! An external scheduler that decides the servers' power too (protocol
//! v3, `stages = ["placement", "power"]`, docs/external-scheduler.md):
//! the Python `sleep_idle.py` example saves server energy against the
//! same placement without sleeping, and runs identically twice, on three
//! partitions and in replay, with migrations (`"migration"`) too; servers
//! that go idle are a decision point of their own (`idle` requests), where
//! `sleep_idle.py` sleeps them at once and saves more; each way
//! of misbehaving with a power or migrate order
//! stops `dcemu run` with exit code 1, an error naming the program, the
//! request and the problem, and `INCOMPLETE` results, as the placement's
//! misbehaviours do (`external.rs`). Scenarios that hand out a power stage
//! they cannot are refused at load. Skipped, saying so, where `python3`
//! is absent.

use std::path::Path;

mod common;
use common::{
    assert_replays_identical, assert_run_fails, assert_same_twice_and_on_three_partitions, dcemu,
    metrics, python, run_ok, with_client,
};

/// A v3 scheduler: first fit on an awake server (else any), or one way of
/// misbehaving with a power order once the run is under way.
const PROGRAM: &str = r#"
import json, sys
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
if mode != "v1-power" and (hello["protocol"] != 3 or hello["stages"] != ["placement", "power"]):
    sys.exit("unexpected hello: %r" % hello)
version = {"v2": 2, "v1-power": 1}.get(mode, 3)
send({"type": "hello", "protocol": version})
asleep = set()
owned = hello["servers"][0]["slots"] == 4
for line in sys.stdin:
    req = json.loads(line)
    if mode != "v1-power":
        assert all(s.get("primary") == ("db" if owned and s["index"] == 0 else None)
                   for s in req["servers"]), req
    if req["type"] == "idle":
        slots = {s["index"]: s["free_slots"] for s in req["servers"]}
        assert req["idle"] == sorted(req["idle"]) and req["idle"], req
        assert all(slots.get(i) == hello["servers"][i]["slots"] for i in req["idle"]), req
        answer = {"id": req["id"]}
        if mode == "idle-place":
            answer.update(task=0, decision="place", server=req["idle"][0])
        elif mode == "idle-ok":
            with open("idle.jsonl", "a") as f:
                f.write(line)
            awake = {s["index"] for s in req["servers"]
                     if s["power"] == "awake" and "primary" not in s}
            answer["power"] = [{"server": i, "to": "sleep"} for i in req["idle"] if i in awake]
        send(answer)
        continue
    if mode != "v1-power":
        assert all(s["power"] in ("awake", "asleep", "waking") for s in req["servers"]), req
    cores = req["task"]["cores"]
    fits = [s for s in req["servers"] if s["free_slots"] >= cores and
            hello["servers"][s["index"]]["slots"] - s["free_slots"] + cores <= s.get("primary_room", 1 << 30)]
    awake = [s for s in fits if s.get("power", "awake") == "awake"]
    pick = (awake or fits)[:1]
    answer = {"id": req["id"], "task": req["task"]["id"]}
    if pick:
        answer.update(decision="place", server=pick[0]["index"])
    else:
        answer["decision"] = "wait"
    idle = [s["index"] for s in req["servers"]
            if s.get("power", "awake") == "awake" and s["free_slots"] == hello["servers"][s["index"]]["slots"]
            and (not pick or s["index"] != pick[0]["index"])]
    busy = [s["index"] for s in req["servers"] if s["free_slots"] < hello["servers"][s["index"]]["slots"]]
    orders = None
    if mode == "sleep-placed" and pick:
        orders = [{"server": pick[0]["index"], "to": "sleep"}]
    elif mode == "sleep-busy" and [b for b in busy if not pick or b != pick[0]["index"]]:
        orders = [{"server": [b for b in busy if not pick or b != pick[0]["index"]][0], "to": "sleep"}]
    elif mode == "sleep-twice-listed" and idle:
        orders = [{"server": idle[0], "to": "sleep"}, {"server": idle[0], "to": "sleep"}]
    elif mode == "sleep-asleep-again" and asleep:
        orders = [{"server": min(asleep), "to": "sleep"}]
    elif mode == "wake-awake" and idle:
        orders = [{"server": idle[0], "to": "wake"}]
    elif mode == "sleep-primary" and any(s.get("primary") for s in req["servers"]):
        owned = [s["index"] for s in req["servers"] if s.get("primary")]
        if not pick or pick[0]["index"] != owned[0]:
            orders = [{"server": owned[0], "to": "sleep"}]
    elif mode == "ghost":
        orders = [{"server": 99, "to": "sleep"}]
    elif mode == "bad-to":
        orders = [{"server": 0, "to": "off"}]
    elif mode == "v1-power":
        orders = [{"server": 0, "to": "sleep"}]
    if mode in ("wake-waking", "sleep-waking"):
        if not asleep and idle:
            target = idle[0]
            asleep.add(target)
            orders = [{"server": target, "to": "sleep"}]
        elif len(asleep) == 1:
            asleep.add(-1)
            orders = [{"server": target, "to": "wake"}]
        elif asleep:
            orders = [{"server": target, "to": "wake" if mode == "wake-waking" else "sleep"}]
    if mode == "sleep-asleep-again" and not asleep and idle:
        orders = [{"server": idle[0], "to": "sleep"}]
        asleep.add(idle[0])
    if orders:
        answer["power"] = orders
    send(answer)
"#;

/// A v3 scheduler with the migration stage: first fit, and one move per
/// decision (the first task that can move to another server with room),
/// or one way of misbehaving with a migrate order.
const MIGRATOR: &str = r#"
import json, sys
mode = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
send({"type": "hello", "protocol": hello["protocol"]})
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "idle":
        send({"id": req["id"]})
        continue
    fits = [s for s in req["servers"] if s["free_slots"] >= req["task"]["cores"]]
    answer = {"id": req["id"], "task": req["task"]["id"]}
    if fits:
        answer.update(decision="place", server=fits[0]["index"])
    else:
        answer["decision"] = "wait"
    free = {s["index"]: s["free_slots"] for s in req["servers"]}
    if fits:
        free[fits[0]["index"]] -= req["task"]["cores"]
    running = req.get("running") or []
    moves = [(r, i) for r in running if not r["migrating"]
             for i in sorted(free) if i != r["server"] and free[i] >= r["cores"]]
    migrate = None
    if mode == "ok" and moves:
        migrate = [{"task": moves[0][0]["id"], "server": moves[0][1]}]
    elif mode == "ghost":
        migrate = [{"task": 99999, "server": 0}]
    elif mode == "same" and running:
        migrate = [{"task": running[0]["id"], "server": running[0]["server"]}]
    elif mode == "nowhere" and running:
        migrate = [{"task": running[0]["id"], "server": 99}]
    elif mode == "full" and running and fits:
        r = [x for x in running if x["server"] != fits[0]["index"]]
        if r and free[fits[0]["index"]] < r[0]["cores"]:
            migrate = [{"task": r[0]["id"], "server": fits[0]["index"]}]
    elif mode == "twice" and moves:
        migrate = [{"task": moves[0][0]["id"], "server": moves[0][1]}] * 2
    elif mode == "again":
        busy = [r for r in running if r["migrating"]]
        if busy:
            others = [i for i in range(len(hello["servers"])) if i != busy[0]["server"]]
            migrate = [{"task": busy[0]["id"], "server": others[0]}]
        elif moves:
            migrate = [{"task": moves[0][0]["id"], "server": moves[0][1]}]
    elif mode == "no-stage" and req["task"]["id"] > 0:
        migrate = [{"task": 0, "server": 1}]
    elif mode == "both" and moves:
        migrate = [{"task": moves[0][0]["id"], "server": moves[0][1]}]
    if mode == "both":
        slots = {s["index"]: hello["servers"][s["index"]]["slots"] for s in req["servers"]}
        keep = {fits[0]["index"]} if fits else set()
        keep |= {m["server"] for m in migrate or []}
        idle = [s["index"] for s in req["servers"] if s["power"] == "awake"
                and s["free_slots"] == slots[s["index"]] and s["index"] not in keep]
        if idle:
            answer["power"] = [{"server": i, "to": "sleep"} for i in idle]
    if migrate:
        answer["migrate"] = migrate
    send(answer)
"#;

/// Four two-slot servers, tasks arriving one every 20 s on average.
fn scenario(dir: &Path, command: &str, stages: &str, extra: &str) -> String {
    let text = format!(
        r#"
[run]
name = "power"
end = "20m"
seed = 3
{extra}
[scheduler]
report_interval = "10s"

[scheduler.external]
command = {command}
stages = {stages}
timeout = "5s"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 4
slots = 2

[[tenants]]
name = "t"
arrivals = {{ process = "poisson", rate_per_s = 0.05 }}
service = {{ distribution = "exponential", mean = "60s" }}
"#
    );
    let name = format!("s{}.toml", text.len() ^ command.len() ^ stages.len() << 8);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const POWER: &str = r#"["placement", "power"]"#;

fn count(dir: &Path, actor_prefix: &str, kind: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir.join("actors")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(actor_prefix) {
            let text = std::fs::read_to_string(&path).unwrap();
            n += text
                .lines()
                .filter(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
                .count();
        }
    }
    n
}

#[test]
fn sleeping_idle_servers_saves_energy_and_runs_identically_everywhere() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    let sleeps = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py"]"#,
        POWER,
        "",
    );
    let awake = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py", "1", "--no-sleep"]"#,
        POWER,
        "",
    );
    let digest = run_ok(tmp.path(), &sleeps, "sleeps", &[]);
    run_ok(tmp.path(), &awake, "awake", &[]);
    let (s, a) = (
        metrics(&tmp.path().join("sleeps")),
        metrics(&tmp.path().join("awake")),
    );
    let energy = |m: &serde_json::Value| m["energy_j_server"].as_f64().unwrap();
    assert!(
        energy(&s) < 0.8 * energy(&a),
        "sleeping idle servers saves energy: {} J against {} J",
        energy(&s),
        energy(&a)
    );
    assert!(s["wake_ups_server"].as_f64().unwrap() > 0.0, "servers woke");
    assert_eq!(a["wake_ups_server"].as_f64().unwrap_or(0.0), 0.0);
    assert_eq!(
        s["tasks_dispatched"], a["tasks_dispatched"],
        "the same tasks ran"
    );
    let dir = tmp.path().join("sleeps");
    let orders = count(&dir, "scheduler", "power_order");
    assert!(orders > 0, "the program ordered servers to sleep");
    assert_eq!(
        count(&dir, "server", "sleep"),
        orders,
        "every order to sleep reached an idle server and put it to sleep"
    );
    assert_eq!(count(&dir, "server", "sleep_refused"), 0);
    assert_eq!(
        count(&tmp.path().join("awake"), "scheduler", "power_order"),
        0
    );
    assert_same_twice_and_on_three_partitions(tmp.path(), &sleeps, &digest, "power");
    assert_replays_identical(tmp.path(), "sleeps");
}

#[test]
fn each_power_misbehaviour_stops_the_run_with_its_error_and_incomplete_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("power.py"), PROGRAM).unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "sleep-placed",
            POWER,
            &[
                "(place task",
                "cannot sleep: the response places the task on it",
            ],
        ),
        (
            "sleep-busy",
            POWER,
            &["cannot sleep: it has tasks running or on their way (1 of its 2 slots taken)"],
        ),
        (
            "sleep-twice-listed",
            POWER,
            &["power orders name server", "twice"],
        ),
        (
            "sleep-asleep-again",
            POWER,
            &["cannot sleep: it is already asleep"],
        ),
        (
            "wake-awake",
            POWER,
            &["cannot wake: it is awake (only an asleep server wakes)"],
        ),
        ("wake-waking", POWER, &["cannot wake: it is already waking"]),
        (
            "sleep-waking",
            POWER,
            &["cannot sleep: it is waking (it may sleep once a request shows it \"awake\")"],
        ),
        (
            "ghost",
            POWER,
            &["power order: server 99 does not exist (servers are 0 to 3)"],
        ),
        (
            "bad-to",
            POWER,
            &["power order for server 0: \"to\" must be \"sleep\" or \"wake\", got \"off\""],
        ),
        (
            "v2",
            POWER,
            &["hello", "it speaks protocol v2, dcemu speaks v3"],
        ),
        (
            "idle-place",
            POWER,
            &[
                "(idle: server",
                "the response has a decision (\"place\"), but an \"idle\" request has no \
                 task to place or evict",
            ],
        ),
        (
            "v1-power",
            r#"["placement"]"#,
            &[
                "request 1 (place task",
                "this session speaks protocol v1",
                "v3's",
            ],
        ),
    ];
    for (mode, stages, words) in cases {
        let command = format!(r#"["python3", "power.py", "{mode}"]"#);
        let path = scenario(tmp.path(), &command, stages, "");
        let out = format!("out-{mode}");
        let program = format!("python3 power.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
    }
    let path = owned(&scenario(
        tmp.path(),
        r#"["python3", "power.py", "sleep-primary"]"#,
        POWER,
        "",
    ));
    assert_run_fails(
        tmp.path(),
        &path,
        "out-sleep-primary",
        "sleep-primary",
        "python3 power.py sleep-primary",
        &[
            "power order: server 0 cannot sleep: primary tenant \"db\" owns it",
            "requests show it as \"primary\"",
        ],
    );
}

/// Scenario `path` with four-slot servers, the first owned by primary
/// tenant `db` (the programs tell the two apart by the slots).
fn owned(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap().replace(
        "slots = 2\n",
        "slots = 4\ncores = 4\n\n[[primary_tenants]]\nname = \"db\"\nservers = 1\n\
         pattern = \"constant\"\nmean = 0.25\nreserve_cores = 1\n",
    );
    let owned = format!("{path}.owned.toml");
    std::fs::write(&owned, text).unwrap();
    owned
}

/// A primary tenant's servers are public configuration: v3 requests show
/// their owner, and `sleep_idle.py`, which leaves them awake, runs with
/// no order refused (without a primary tenant no request shows one: the
/// other tests' programs check that).
#[test]
fn requests_show_the_primary_tenants_servers_and_sleep_idle_leaves_them_awake() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    std::fs::write(tmp.path().join("power.py"), PROGRAM).unwrap();
    let checks = owned(&scenario(
        tmp.path(),
        r#"["python3", "power.py", "idle-ok"]"#,
        POWER,
        "",
    ));
    let o = dcemu(tmp.path(), &["run", &checks, "--quiet", "--out", "checks"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let path = owned(&scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py", "0"]"#,
        POWER,
        "",
    ));
    let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "out"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = tmp.path().join("out");
    assert!(count(&dir, "scheduler", "power_order") > 0);
    assert_eq!(count(&dir, "server", "sleep_refused"), 0);
    assert_eq!(
        count(&dir, "server-0000", "sleep"),
        0,
        "the primary tenant's server never slept"
    );
}

#[test]
fn a_power_stage_that_cannot_be_handed_out_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let command = r#"["python3", "power.py", "ok"]"#;
    let cases = [
        (
            r#"["power"]"#,
            "",
            "scheduler.external.stages",
            "names \"power\" without \"placement\"",
        ),
        (
            r#"["migration"]"#,
            "",
            "scheduler.external.stages",
            "names \"migration\" without \"placement\"",
        ),
        (
            POWER,
            "[power]\npolicy = \"sleep\"\n",
            "power.policy",
            "servers sleep by themselves",
        ),
    ];
    for (stages, extra, field, says) in cases {
        let path = scenario(tmp.path(), command, stages, extra);
        let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "refused"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{stages} {extra}: refused");
        assert!(
            err.contains(field) && err.contains(says),
            "{stages} {extra}: {err}"
        );
    }
    // Under a slot stage migration is handed out (tests in
    // external_migration_slots.rs): the scenario passes the checks but
    // the one for the program's file, absent here; without placement it is
    // still refused.
    for (stages, refused) in [
        (r#"["placement", "migration"]"#, false),
        (MIGRATION, false),
        (r#"["migration"]"#, true),
    ] {
        let slotted = std::fs::read_to_string(scenario(tmp.path(), command, stages, ""))
            .unwrap()
            .replace("[scheduler]\n", "[scheduler]\nslots = \"priority\"\n");
        std::fs::write(tmp.path().join("slotted.toml"), slotted).unwrap();
        let o = dcemu(
            tmp.path(),
            &[
                "run",
                "slotted.toml",
                "--quiet",
                "--force",
                "--out",
                "slotted",
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{stages}: {err}");
        assert!(!err.contains("with scheduler.slots"), "{stages}: {err}");
        assert_eq!(
            err.contains("names \"migration\" without \"placement\""),
            refused,
            "{stages}: {err}"
        );
        assert_eq!(
            err.contains("python3's file \"power.py\" does not exist"),
            !refused,
            "{stages}: {err}"
        );
    }
}

const MIGRATION: &str = r#"["placement", "power", "migration"]"#;

#[test]
fn a_program_that_migrates_moves_tasks_and_runs_identically_everywhere() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    let path = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py", "1", "--migrate"]"#,
        MIGRATION,
        "",
    );
    let digest = run_ok(tmp.path(), &path, "one", &[]);
    let dir = tmp.path().join("one");
    let m = metrics(&dir);
    let started = count(&dir, "scheduler", "migrate_start");
    let done = count(&dir, "scheduler", "migrate_done");
    assert!(done > 0, "tasks moved");
    assert!(done <= started, "{done} moves done of {started} started");
    assert_eq!(m["migrations"].as_f64().unwrap() as usize, done);
    let handed = count(&dir, "server", "migrate_out");
    assert!(
        done <= handed && handed <= started,
        "every move done left its server with its progress first: {done} done, {handed} \
         handed over, {started} ordered (a task may end before its order arrives)"
    );
    let log = std::fs::read_to_string(dir.join("actors/scheduler.jsonl")).unwrap();
    for line in log
        .lines()
        .filter(|l| l.contains("\"kind\":\"migrate_start\""))
    {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(e["why"], "external");
        for unknown in ["rate_now", "rate_expected", "left_s"] {
            assert!(
                e.get(unknown).is_none(),
                "without rate monitoring the scheduler does not know {unknown}: {line}"
            );
        }
    }
    assert_same_twice_and_on_three_partitions(tmp.path(), &path, &digest, "power");
}

#[test]
fn each_migration_misbehaviour_stops_the_run_with_its_error_and_incomplete_results() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("migrate.py"), MIGRATOR).unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "ghost",
            MIGRATION,
            &[
                "(place task",
                "it migrates task 99999, which is not running",
            ],
        ),
        ("same", MIGRATION, &["where it already runs"]),
        (
            "nowhere",
            MIGRATION,
            &["migrate order: server 99 does not exist (servers are 0 to 3)"],
        ),
        ("full", MIGRATION, &["which has not its 1 slot(s) free"]),
        ("twice", MIGRATION, &["migrate orders name task", "twice"]),
        ("again", MIGRATION, &["which is already migrating"]),
        (
            "no-stage",
            POWER,
            &["does not hand out migrations (protocol v3"],
        ),
    ];
    for (mode, stages, words) in cases {
        let command = format!(r#"["python3", "migrate.py", "{mode}"]"#);
        let path = scenario(tmp.path(), &command, stages, "");
        let out = format!("out-{mode}");
        let program = format!("python3 migrate.py {mode}");
        assert_run_fails(tmp.path(), &path, &out, mode, &program, words);
    }
    let path = scenario(
        tmp.path(),
        r#"["python3", "migrate.py", "ok"]"#,
        MIGRATION,
        "",
    );
    let o = dcemu(tmp.path(), &["run", &path, "--quiet", "--out", "ok"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        metrics(&tmp.path().join("ok"))["migrations"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

/// A decision's power orders, migrations and dispatch leave together when
/// the decision is done: its latency counts once. Tasks arrive 30 s apart
/// and every decision takes 1 s, so each waits exactly 1 s.
#[test]
fn power_orders_and_migrations_take_their_decision_latency_once() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("migrate.py"), MIGRATOR).unwrap();
    let path = scenario(
        tmp.path(),
        r#"["python3", "migrate.py", "both"]"#,
        MIGRATION,
        "",
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(
            "timeout = \"5s\"",
            "timeout = \"5s\"\ndecision_latency = \"1s\"",
        )
        .replace(
            "process = \"poisson\", rate_per_s = 0.05",
            "process = \"constant\", rate_per_s = 0.0333333",
        );
    std::fs::write(tmp.path().join("latency.toml"), text).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", "latency.toml", "--quiet", "--out", "out"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = std::fs::read_to_string(tmp.path().join("out/actors/scheduler.jsonl")).unwrap();
    let entries: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |kind: &str| -> Vec<u64> {
        entries
            .iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["t_ns"].as_u64().unwrap())
            .collect()
    };
    let (power, moves) = (at("power_order"), at("migrate_start"));
    assert!(
        power.iter().any(|t| moves.contains(t)),
        "some decisions both slept servers and moved tasks: {power:?} {moves:?}"
    );
    let waits: Vec<u64> = entries
        .iter()
        .filter(|e| e["kind"] == "task_dispatch")
        .map(|e| e["queued_ns"].as_u64().unwrap())
        .collect();
    assert!(waits.len() > 10, "{waits:?}");
    assert!(
        waits.iter().all(|&w| w == 1_000_000_000),
        "each task waits its decision's 1 s, once: {waits:?}"
    );
}

/// At an idle point the same program sleeps more, sooner: `sleep_idle.py`
/// sleeps a server as soon as it goes idle, not at the next arrival
/// (`--no-idle`, what it did before `idle` requests), for less energy and
/// the same tasks; the run is the same twice, on three partitions and in
/// replay.
#[test]
fn sleeping_servers_at_their_idle_point_saves_energy_and_runs_identically() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    let at_idle = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py"]"#,
        POWER,
        "",
    );
    let at_arrival = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py", "1", "--no-idle"]"#,
        POWER,
        "",
    );
    let digest = run_ok(tmp.path(), &at_idle, "idle", &[]);
    run_ok(tmp.path(), &at_arrival, "arrival", &[]);
    let (i, a) = (
        metrics(&tmp.path().join("idle")),
        metrics(&tmp.path().join("arrival")),
    );
    let energy = |m: &serde_json::Value| m["energy_j_server"].as_f64().unwrap();
    assert!(
        energy(&i) < energy(&a),
        "sleeping at the idle point saves energy: {} J against {} J",
        energy(&i),
        energy(&a)
    );
    assert_eq!(i["tasks_dispatched"], a["tasks_dispatched"]);
    let orders_without_a_task = |dir: &str| {
        let log =
            std::fs::read_to_string(tmp.path().join(dir).join("actors/scheduler.jsonl")).unwrap();
        let entries: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let at = |kind: &str| -> Vec<u64> {
            entries
                .iter()
                .filter(|e| e["kind"] == kind)
                .map(|e| e["t_ns"].as_u64().unwrap())
                .collect()
        };
        let (dispatched, arrived) = (at("task_dispatch"), at("task_arrive"));
        at("power_order")
            .into_iter()
            .filter(|t| !dispatched.contains(t) && !arrived.contains(t))
            .count()
    };
    assert!(
        orders_without_a_task("idle") > 0,
        "some servers were slept at an idle point, with no task placed then"
    );
    assert_eq!(orders_without_a_task("arrival"), 0);
    let dir = tmp.path().join("idle");
    assert_eq!(
        count(&dir, "server", "sleep"),
        count(&dir, "scheduler", "power_order"),
        "every order to sleep put an idle server to sleep"
    );
    assert_same_twice_and_on_three_partitions(tmp.path(), &at_idle, &digest, "power");
    assert_replays_identical(tmp.path(), "idle");
}

/// An `idle` request names the servers that just went idle (each listed
/// with every slot free), at the moment the scheduler hears of it (a
/// release), and its orders leave when its decision latency is done.
#[test]
fn an_idle_request_comes_with_the_release_and_its_orders_take_its_latency() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("power.py"), PROGRAM).unwrap();
    let path = scenario(
        tmp.path(),
        r#"["python3", "power.py", "idle-ok"]"#,
        POWER,
        "",
    );
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "timeout = \"5s\"",
        "timeout = \"5s\"\ndecision_latency = \"1s\"",
    );
    std::fs::write(tmp.path().join("latency.toml"), text).unwrap();
    let o = dcemu(
        tmp.path(),
        &["run", "latency.toml", "--quiet", "--out", "out"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let requests: Vec<serde_json::Value> = std::fs::read_to_string(tmp.path().join("idle.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(requests.len() > 3, "{} idle requests", requests.len());
    let log = std::fs::read_to_string(tmp.path().join("out/actors/scheduler.jsonl")).unwrap();
    let entries: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &requests {
        let t = r["time_ns"].as_u64().unwrap();
        assert!(
            entries
                .iter()
                .any(|e| e["kind"] == "slot_release" && e["t_ns"].as_u64() == Some(t)),
            "an idle request at {t} comes with a release then"
        );
        assert!(r["queued"].is_u64() && r["rng_word_pos"].is_u64(), "{r}");
    }
    let sleeps: Vec<u64> = std::fs::read_dir(tmp.path().join("out/actors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("server-"))
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|e| e["kind"] == "sleep")
                .map(|e| e["t_ns"].as_u64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let orders: Vec<u64> = entries
        .iter()
        .filter(|e| e["kind"] == "power_order")
        .map(|e| e["t_ns"].as_u64().unwrap())
        .collect();
    assert!(!orders.is_empty() && sleeps.len() == orders.len());
    for t in &orders {
        assert!(
            sleeps.iter().any(|s| *s >= t + 1_000_000_000),
            "the order decided at {t} leaves after its 1 s: {sleeps:?}"
        );
    }
    let mut first_sleep = sleeps.clone();
    first_sleep.sort_unstable();
    assert!(
        first_sleep[0] >= orders[0] + 1_000_000_000,
        "no server sleeps before the first order's decision is done"
    );
}
