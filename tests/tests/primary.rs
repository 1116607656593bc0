//! Primary tenants on their servers (harvesting §3, §5.3): secondary work
//! makes room when they spike, youngest containers first.

use std::collections::BTreeSet;

use dcemu::run::Outcome;
use dcemu::scenario::load;
use dcemu_tests::{log, run_text};
use serde_json::Value;

/// One 12-core server owned by a primary tenant whose use follows
/// `0.5 + 0.5 sin(2πt / 4000 s)` exactly (no noise): nothing at 3000 s, half
/// the server at 4000 s. Six long secondary tasks arrive at 3000–3005 s.
fn scenario(extra: &str) -> String {
    format!(
        r#"
[run]
name = "spike"
end = "4500s"

[[server_types]]
name = "box"
count = 1
slots = 12
cores = 12

[[tenants]]
name = "batch"
start = "2999s"
stop = "3005.5s"
arrivals = {{ process = "constant", rate_per_s = 1.0 }}
service = {{ distribution = "constant", mean = "10000s" }}

[[primary_tenants]]
name = "search"
servers = 1
pattern = "periodic"
mean = 0.5
amplitude = 0.5
period = "4000s"
noise = 0.0
update_interval = "10s"
reserve_cores = 2
{extra}
"#
    )
}

fn run(text: &str) -> Outcome {
    run_text("spike.toml", text, &[])
}

fn server_log(o: &Outcome) -> Vec<Value> {
    log(o, "server-0000")
}

#[test]
fn a_spike_above_the_reserve_kills_the_youngest_container_first() {
    let o = run(&scenario("reimages_per_month = 0.0"));
    let log = server_log(&o);
    let kills: Vec<u64> = log
        .iter()
        .filter(|v| v["kind"] == "kill")
        .map(|v| v["task"].as_u64().unwrap())
        .collect();
    assert!(
        !kills.is_empty(),
        "the primary tenant grew past the reserve"
    );
    // the six tasks started in id order 0..5; the first victims are 5, then 4
    let mut first = Vec::new();
    for k in &kills {
        if !first.contains(k) {
            first.push(*k);
        }
    }
    assert_eq!(&first[..2], &[5, 4], "youngest first: {kills:?}");
    // at every kill, the primary tenant's use and reserve left no room
    let loads: Vec<&Value> = log.iter().filter(|v| v["kind"] == "primary_load").collect();
    let first_kill = log.iter().find(|v| v["kind"] == "kill").unwrap();
    let load_then = loads
        .iter()
        .rev()
        .find(|l| l["t_ns"].as_u64() <= first_kill["t_ns"].as_u64())
        .unwrap();
    assert!(
        load_then["cores"].as_u64().unwrap() + 2 + 6 > 12,
        "{load_then}"
    );
    let m = |k: &str| o.metrics[k].as_f64().unwrap();
    assert_eq!(m("killed_containers"), kills.len() as f64);
    assert!(m("wasted_cpu_s") > 0.0);
    assert_eq!(m("tasks_submitted"), 6.0);
    assert_eq!(
        m("tasks_submitted"),
        m("tasks_completed")
            + m("tasks_running_end")
            + m("tasks_queued_end")
            + m("tasks_in_transit_end"),
        "killed tasks are placed again, never lost"
    );
    assert!(
        m("utilization_cpu_mean") > 0.2,
        "the primary tenant's use counts"
    );
}

#[test]
fn reimages_reach_the_tenants_servers() {
    let o = run(&scenario(
        "reimages_per_month = 20000.0\nreimage_correlation = 0.0",
    ));
    let reimages = o.metrics["reimages"].as_u64().unwrap();
    assert!(reimages > 5, "{reimages}");
    let logged = server_log(&o)
        .iter()
        .filter(|v| v["kind"] == "reimage")
        .count() as u64;
    assert_eq!(logged, reimages);
}

#[test]
fn primary_tenants_cannot_own_more_servers_than_exist() {
    let text = scenario("reimages_per_month = 0.0").replace("servers = 1", "servers = 3");
    let err = load("spike.toml", &text, &[]).unwrap_err().to_string();
    assert!(
        err.contains("primary_tenants") && err.contains("own 3 servers"),
        "{err}"
    );
    let text = scenario("reimages_per_month = 0.0").replace("mean = 0.5", "mean = 1.5");
    let err = load("spike.toml", &text, &[]).unwrap_err().to_string();
    assert!(err.contains("primary_tenants[0].mean"), "{err}");
    let distinct: BTreeSet<&str> = ["periodic", "constant", "unpredictable"]
        .into_iter()
        .collect();
    for pattern in distinct {
        let text = scenario("").replace("\"periodic\"", &format!("\"{pattern}\""));
        assert!(load("spike.toml", &text, &[]).is_ok(), "{pattern}");
    }
}
