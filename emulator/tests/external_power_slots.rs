//! The external power stage under a slot stage (protocol v3,
//! `stages = ["placement", "power"]` with `slots = "priority" | "wasp" |
//! "hybrid"`, docs/external-scheduler.md): a slot pass takes all its
//! decisions before it sends anything, yet every power order leaves when
//! its own decision is done, in decision order, and the pass's later
//! decisions already see a server ordered to sleep as asleep. The Python
//! `sleep_idle.py` example saves energy under HYBRID as it does without a
//! slot stage, and runs identically twice, on three partitions and in
//! replay. Skipped, saying so, where `python3` is absent.

use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{
    assert_replays_identical, assert_same_twice_and_on_three_partitions, json_lines, metrics,
    python, run_ok, server_logs, with_client,
};

/// A v3 program under a slot stage. Best fit on an awake (or waking)
/// server; when only asleep servers have a free slot, it alternately
/// places on one (the dispatch wakes it) and orders one awake and waits;
/// every fourth placement request it waits instead; each answer (`idle`
/// ones too) sleeps one of the idle awake servers beyond one spare. It asserts
/// that every server it ordered to sleep, and neither placed on nor woke
/// since, is shown asleep, and writes each order with the virtual time
/// its decision is done: decisions that order or place take 1 s each,
/// one after the other (`busy`), as dcemu's own clock of decisions.
const SLOTTED: &str = r#"
import json, sys
LAT = 1_000_000_000
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
assert hello["protocol"] == 3 and hello["stages"] == ["placement", "power"], hello
send({"type": "hello", "protocol": 3})
slots = {s["index"]: s["slots"] for s in hello["servers"]}
asleep = set()
busy = 0
n = 0
out = open("orders.jsonl", "w")
for line in sys.stdin:
    req = json.loads(line)
    now = req["time_ns"]
    shown = {s["index"]: s for s in req["servers"]}
    for i in asleep:
        if i in shown:
            assert shown[i]["power"] == "asleep", (req["id"], i, shown[i])
    answer = {"id": req["id"]}
    chosen = None
    wake = None
    if req["type"] != "idle":
        n += 1
        answer["task"] = req["task"]["id"]
        fits = [s for s in req["servers"] if s["free_slots"] >= 1]
        awake = [s for s in fits if s["power"] != "asleep"]
        if n % 4 == 0:
            answer["decision"] = "wait"
        elif awake:
            chosen = min(awake, key=lambda s: (s["free_slots"], s["index"]))["index"]
        elif fits and n % 2 == 0:
            chosen = fits[0]["index"]
        elif fits:
            wake = fits[0]["index"]
            answer["decision"] = "wait"
        else:
            answer["decision"] = "wait"
        if chosen is not None:
            answer.update(decision="place", server=chosen)
            asleep.discard(chosen)
    idle = [s["index"] for s in req["servers"] if s["power"] == "awake"
            and s["free_slots"] == slots[s["index"]] and s["index"] != chosen
            and "primary" not in s]
    orders = [{"server": i, "to": "sleep"} for i in idle[1:2]]
    if wake is not None:
        orders.append({"server": wake, "to": "wake"})
        asleep.discard(wake)
    asleep |= {o["server"] for o in orders if o["to"] == "sleep"}
    if orders:
        answer["power"] = orders
    if orders or chosen is not None:
        busy = max(busy, now) + LAT
    for o in orders:
        out.write(json.dumps({"server": o["server"], "to": o["to"], "decided": now, "leaves": busy}) + "\n")
    out.flush()
    send(answer)
"#;

/// Eight two-slot servers under slot stage `slots`, tasks arriving one
/// every 10 s on average, scheduled every 30 s (several decisions a
/// pass), each decision taking `latency`.
fn scenario(dir: &Path, command: &str, slots: &str, latency: &str) -> String {
    let sticky = if slots == "hybrid" {
        "sticky_slots = 4\n"
    } else {
        ""
    };
    let text = format!(
        r#"
[run]
name = "power-slots"
end = "1h"
seed = 5

[scheduler]
report_interval = "10s"
slots = "{slots}"
slot_interval = "30s"
{sticky}
[scheduler.external]
command = {command}
stages = ["placement", "power"]
decision_latency = "{latency}"
timeout = "5s"

[output]
actor_logs = true

[[server_types]]
name = "a"
count = 8
slots = 2

[[tenants]]
name = "t"
arrivals = {{ process = "poisson", rate_per_s = 0.1 }}
service = {{ distribution = "exponential", mean = "60s" }}
"#
    );
    let name = format!("{slots}-{}.toml", text.len() ^ command.len() << 8);
    std::fs::write(dir.join(&name), text).unwrap();
    name
}

/// Each server's log events of `kind`, by server index: their times, in
/// log order.
fn server_events(out: &Path, kind: &str) -> BTreeMap<u64, Vec<u64>> {
    server_logs(out)
        .into_iter()
        .map(|(index, log)| {
            let times = log
                .iter()
                .filter(|e| e["kind"] == kind)
                .map(|e| e["t_ns"].as_u64().unwrap())
                .collect();
            (index, times)
        })
        .collect()
}

/// Under every slot stage, each order to sleep reaches its server a fixed
/// link latency after the moment its own decision is done: the decisions
/// of a pass are done one after the other (1 s each), and orders decided
/// in a pass that only waited still leave in their turn. No order to sleep
/// is refused (no dispatch decided after it overtakes it), and no request
/// shows a server ordered to sleep as awake (the program asserts it).
#[test]
fn power_orders_in_a_slot_pass_leave_in_decision_order_when_their_decision_is_done() {
    if !python() {
        return;
    }
    for slots in ["priority", "wasp", "hybrid"] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("slotted.py"), SLOTTED).unwrap();
        let path = scenario(tmp.path(), r#"["python3", "slotted.py"]"#, slots, "1s");
        run_ok(tmp.path(), &path, "out", &[]);
        let out = tmp.path().join("out");
        let orders = json_lines(&tmp.path().join("orders.jsonl"));
        let mut sleeps: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for o in orders.iter().filter(|o| o["to"] == "sleep") {
            let server = o["server"].as_u64().unwrap();
            sleeps
                .entry(server)
                .or_default()
                .push(o["leaves"].as_u64().unwrap());
        }
        let arrived = server_events(&out, "sleep");
        let mut delays = std::collections::BTreeSet::new();
        for (server, leaves) in &sleeps {
            let got = arrived.get(server).cloned().unwrap_or_default();
            assert_eq!(
                got.len(),
                leaves.len(),
                "{slots}: server {server} slept once per order to sleep"
            );
            delays.extend(got.iter().zip(leaves).map(|(a, l)| a.checked_sub(*l)));
        }
        assert_eq!(
            delays.len(),
            1,
            "{slots}: every order to sleep arrives one link latency after its decision is \
             done: {delays:?}"
        );
        let delay = delays.into_iter().next().flatten().unwrap();
        assert!(delay < 1_000_000, "{slots}: {delay} ns");
        let refused: usize = server_events(&out, "sleep_refused")
            .values()
            .map(Vec::len)
            .sum();
        assert_eq!(refused, 0, "{slots}: no order to sleep was refused");
        let mut per_pass: BTreeMap<u64, std::collections::BTreeSet<u64>> = BTreeMap::new();
        for o in &orders {
            per_pass
                .entry(o["decided"].as_u64().unwrap())
                .or_default()
                .insert(o["leaves"].as_u64().unwrap());
        }
        assert!(
            per_pass.values().any(|l| l.len() > 1),
            "{slots}: some pass took several decisions with orders"
        );
        assert!(
            orders.iter().any(|o| o["to"] == "wake"),
            "{slots}: the program woke servers"
        );
        assert!(metrics(&out)["wake_ups_server"].as_f64().unwrap() > 0.0);
    }
}

/// `sleep_idle.py` under HYBRID saves server energy against the same
/// placement that never sleeps, runs the same tasks, and runs identically
/// twice, on three partitions and in replay.
#[test]
fn sleep_idle_under_hybrid_saves_energy_and_runs_identically_everywhere() {
    if !python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    with_client(tmp.path());
    let sleeps = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py"]"#,
        "hybrid",
        "0s",
    );
    let awake = scenario(
        tmp.path(),
        r#"["python3", "py/examples/sleep_idle.py", "1", "--no-sleep"]"#,
        "hybrid",
        "0s",
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
        "sleeping idle servers under HYBRID saves energy: {} J against {} J",
        energy(&s),
        energy(&a)
    );
    assert_eq!(s["tasks_dispatched"], a["tasks_dispatched"]);
    assert!(s["sticky_starts"].as_f64().unwrap_or(0.0) > 0.0, "{s}");
    assert_same_twice_and_on_three_partitions(tmp.path(), &sleeps, &digest, "hybrid");
    assert_replays_identical(tmp.path(), "sleeps");
}
