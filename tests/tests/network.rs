//! The network and power model end to end (thesis §3.1, §4.2.3–4.2.5,
//! §6.2.5–6.2.6): exact energy, wake-up delays and costs, hop-by-hop
//! latency, and sleep against idle on the thesis' small datacenter.

use std::collections::BTreeMap;

use dcemu::run::Outcome;
use dcemu::scenario::{Override, Scenario, load};
use dcemu_tests::{kind, log, metric, run_with, t};

const S: u64 = 1_000_000_000;

fn scenario(text: &str, overrides: &[&str]) -> Scenario {
    dcemu_tests::scenario("test.toml", text, overrides)
}

fn run(s: &Scenario, partitions: usize) -> Outcome {
    run_with(s, partitions)
}

/// One type-A server with 2 slots and 16 GB; four 50 s tasks of 8 GB
/// submitted at 100, 200, 300 and 400 s; 1,000 s in all.
const ONE_SERVER: &str = r#"
[run]
name = "one-server"
end = "1000s"

[[server_types]]
name = "A"
preset = "A"
count = 1
slots = 2

[[tenants]]
name = "w"
stop = "450s"
arrivals = { process = "constant", rate_per_s = 0.01 }
service = { distribution = "constant", mean = "50s", memory_gb = 8.0 }
"#;

#[test]
fn an_idle_server_consumes_exactly_eq_4_1() {
    let o = run(&scenario(ONE_SERVER, &["power.policy=idle"]), 1);
    assert_eq!(metric(&o, "tasks_completed"), 4.0);
    // P_idle for 1000 s, plus (P_cpu + P_mem) * U for the 4 * 50 s with one of two slots busy
    let expected = 162.0 * 1000.0 + (51.5 + 18.0) * 0.5 * 200.0;
    let joules = metric(&o, "energy_j_server");
    assert!(
        (joules - expected).abs() < 1e-6,
        "{joules} J, eq. 4.1 says {expected} J"
    );
    assert_eq!(metric(&o, "wake_ups_server"), 0.0);
    assert_eq!(metric(&o, "servers_on_mean"), 1.0);
}

#[test]
fn a_wake_up_costs_peak_power_for_30_s_and_delays_the_task() {
    let o = run(&scenario(ONE_SERVER, &["power.policy=sleep"]), 1);
    assert_eq!(metric(&o, "wake_ups_server"), 4.0);
    let (sleep, peak, on) = (46.25, 162.0 + 51.5 + 18.0, 162.0 + (51.5 + 18.0) * 0.5);
    // each task: 30 s waking at peak, 50 s on; asleep the remaining 680 s
    let expected = sleep * 680.0 + peak * 4.0 * 30.0 + on * 4.0 * 50.0;
    let joules = metric(&o, "energy_j_server");
    assert!(
        (joules - expected).abs() < 1e-6,
        "{joules} J, expected {expected} J"
    );
    let dispatches = kind(&log(&o, "scheduler"), "task_dispatch")
        .iter()
        .map(|d| (d["task"].as_u64().unwrap(), t(d)))
        .collect::<BTreeMap<_, _>>();
    let server = log(&o, "server-0000");
    let starts = kind(&server, "task_start");
    assert_eq!(starts.len(), 4);
    for start in starts {
        let dispatched = dispatches[&start["task"].as_u64().unwrap()];
        assert!(
            t(start) >= dispatched + 30 * S,
            "started {} ns after dispatch",
            t(start) - dispatched
        );
    }
    assert_eq!(kind(&server, "wake_start").len(), 4);
    assert_eq!(kind(&server, "sleep").len(), 4);
    // servers_on: powered 4 * 80 s of 1000 s
    assert!((metric(&o, "servers_on_mean") - 0.32).abs() < 1e-9);
}

/// A tenant, the scheduler and one server behind one switch per tier.
const CHAIN: &str = r#"
[run]
name = "chain"
end = "200s"

[topology]
kind = "three-tier"
core = 1
aggregation = 1
access = 1
link_latency = "5us"
switch_latency = "1us"

[output]
packet_logs = true

[[server_types]]
name = "A"
count = 1

[[tenants]]
name = "w"
stop = "150s"
arrivals = { process = "constant", rate_per_s = 0.01 }
service = { distribution = "constant", mean = "1s" }
"#;

/// Latency of the first submission as the scheduler logged it.
fn first_submit_latency(o: &Outcome) -> u64 {
    let lines = log(o, "scheduler");
    let delivery = kind(&lines, "net_deliver")[0];
    assert_eq!(delivery["msg"], "submit");
    assert_eq!(
        delivery["hops"], 4,
        "tenant, core, aggregation, access, scheduler"
    );
    delivery["latency_ns"].as_u64().unwrap()
}

#[test]
fn a_sleeping_switch_delays_a_message_by_its_wake_time() {
    // 512 bytes: 410 ns on each 10 Gb/s link (tenant-core, core-aggregation),
    // 4,096 ns on each 1 Gb/s link; 4 links of 5 us; 3 switches of 1 us.
    let empty = 4 * 5_000 + 3 * 1_000 + 2 * 410 + 2 * 4_096;
    let idle = run(&scenario(CHAIN, &["power.policy=idle"]), 1);
    assert_eq!(first_submit_latency(&idle), empty);
    let asleep = run(
        &scenario(CHAIN, &["power.policy=sleep", "power.switch_wake=2ms"]),
        1,
    );
    assert_eq!(
        first_submit_latency(&asleep),
        empty + 3 * 2_000_000,
        "three sleeping switches on the way"
    );
    assert!(metric(&asleep, "wake_ups_switch") >= 3.0);
    let core = log(&asleep, "switch-core-000");
    assert_eq!(
        t(kind(&core, "wake_done")[0]) - t(kind(&core, "wake_start")[0]),
        2_000_000
    );
}

/// The small datacenter of thesis Table 3.2.
fn small_dc(overrides: &[&str]) -> Scenario {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/network/thesis-small-dc.toml"),
    )
    .unwrap();
    scenario(&text, overrides)
}

#[test]
fn between_pods_a_message_crosses_five_switches_at_the_sum_of_per_hop_terms() {
    let o = run(
        &small_dc(&[
            "power.policy=idle",
            "output.packet_logs=true",
            "run.end=20m",
        ]),
        1,
    );
    // The scheduler sits in the first rack (pod 0); a dispatch to a server in
    // pod 1 goes access, aggregation, core, aggregation, access: 6 links of
    // 5 us, 5 switches of 1 us, 512 bytes at 1 Gb/s on 4 links and 10 Gb/s on 2.
    let expected = 6 * 5_000 + 5 * 1_000 + 4 * 4_096 + 2 * 410;
    let mut seen = 0;
    for server in 63..125 {
        let lines = log(&o, &format!("server-{server:04}"));
        for d in kind(&lines, "net_deliver") {
            assert_eq!(d["hops"], 6, "server-{server:04} is in pod 1");
            assert_eq!(
                d["latency_ns"].as_u64().unwrap(),
                expected,
                "light load: the network is empty"
            );
            seen += 1;
        }
    }
    assert!(seen > 50, "{seen} dispatches crossed pods");
}

#[test]
fn message_latency_grows_under_load() {
    let light = run(&scenario(CHAIN, &["power.policy=idle"]), 1);
    // 200 tenants submitting at the same instants: their packets queue at the
    // switch ports on the way to the scheduler.
    let burst = run(
        &scenario(CHAIN, &["power.policy=idle", "tenants.0.count=200"]),
        1,
    );
    let (light_max, burst_max) = (
        metric(&light, "message_latency_us_max"),
        metric(&burst, "message_latency_us_max"),
    );
    assert!(
        burst_max > light_max + 100.0 * 4.096,
        "light {light_max} us, burst {burst_max} us"
    );
    let queued: Vec<u64> = kind(&log(&burst, "scheduler"), "net_deliver")
        .iter()
        .map(|d| d["latency_ns"].as_u64().unwrap())
        .collect();
    assert!(
        queued.windows(2).take(100).all(|w| w[1] > w[0]),
        "each waits for those ahead of it"
    );
}

#[test]
fn sleeping_saves_energy_on_the_small_datacenter_and_tasks_wait_for_wake_ups() {
    let idle = run(&small_dc(&["power.policy=idle"]), 1);
    let sleep = run(&small_dc(&["power.policy=sleep"]), 1);
    let ratio = metric(&sleep, "energy_kwh_total") / metric(&idle, "energy_kwh_total");
    println!("thesis-small-dc: sleep/idle energy = {ratio:.3}");
    assert!(ratio < 0.7, "sleep/idle energy ratio {ratio}");
    assert!(metric(&sleep, "energy_kwh_network") < metric(&idle, "energy_kwh_network"));
    assert_eq!(metric(&idle, "servers_on_mean"), 125.0);
    assert!(metric(&sleep, "servers_on_mean") < 60.0);
    assert!(metric(&sleep, "waiting_s_mean") > metric(&idle, "waiting_s_mean") + 10.0);

    let dispatches: BTreeMap<u64, u64> = kind(&log(&sleep, "scheduler"), "task_dispatch")
        .iter()
        .map(|d| (d["task"].as_u64().unwrap(), t(d)))
        .collect();
    let mut checked = 0;
    for server in 0..125 {
        let lines = log(&sleep, &format!("server-{server:04}"));
        if let Some(first) = kind(&lines, "task_start").first() {
            let dispatched = dispatches[&first["task"].as_u64().unwrap()];
            assert!(
                t(first) >= dispatched + 30 * S,
                "server-{server:04} started its first task too early"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} servers ran a task");
}

#[test]
fn switches_do_not_change_results_across_partitionings() {
    let s = small_dc(&["run.end=30m"]);
    let one = run(&s, 1);
    assert!(metric(&one, "packets_forwarded") > 1_000.0);
    for partitions in [2, 4] {
        assert_eq!(
            run(&s, partitions).digest,
            one.digest,
            "{partitions} partitions"
        );
    }
}

/// The small datacenter with every task reserving `bw` to the outside world,
/// submissions stopping at 40 min so that everything drains by the end.
fn with_flows(bw: &str, policy: &str) -> Scenario {
    small_dc(&[
        &format!("tenants.0.flow_bandwidth={bw}"),
        &format!("power.policy={policy}"),
        "tenants.0.stop=40m",
        "tenants.0.arrivals.rate_per_s=2",
    ])
}

#[test]
fn flows_reserve_bandwidth_while_tasks_run_and_release_it_all() {
    let o = run(&with_flows("100Mbps", "sleep"), 1);
    assert_eq!(metric(&o, "tasks_running_end"), 0.0, "everything drained");
    assert_eq!(metric(&o, "flows_reserved"), metric(&o, "tasks_completed"));
    assert_eq!(metric(&o, "flows_active_end"), 0.0);
    assert_eq!(metric(&o, "reserved_link_bps_end"), 0.0);
    assert_eq!(
        metric(&o, "reserved_ports_end"),
        0.0,
        "every switch port is back to zero"
    );
    let scheduler = log(&o, "scheduler");
    let first = kind(&scheduler, "flow_reserve")[0];
    let path: Vec<&str> = first["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        path[0].starts_with("switch-core-") && path[3].starts_with("server-"),
        "{path:?}"
    );
    // the access switch on the path logged the reservation toward the server
    let access = log(&o, path[2]);
    let r = kind(&access, "reserve")[0];
    assert_eq!(
        (r["next"].as_str().unwrap(), r["bps"].as_u64().unwrap()),
        (path[3], 100_000_000)
    );
    // switches carrying flows stay on: far more switch-time on than without flows
    let without = run(
        &small_dc(&[
            "power.policy=sleep",
            "tenants.0.stop=40m",
            "tenants.0.arrivals.rate_per_s=2",
        ]),
        1,
    );
    assert!(metric(&o, "switches_on_mean") > 10.0 * metric(&without, "switches_on_mean").max(0.1));
}

#[test]
fn a_flow_that_does_not_fit_keeps_its_task_waiting() {
    // 600 Mb/s each: one flow per 1 Gb/s access link, so tasks wait for links, not slots
    let o = run(&with_flows("600Mbps", "idle"), 1);
    assert!(metric(&o, "flows_refused") > 0.0);
    assert!(metric(&o, "queue_wait_s_max") > 0.0);
    assert_eq!(metric(&o, "reserved_link_bps_end"), 0.0);
    let refused = kind(&log(&o, "scheduler"), "flow_refused").len();
    assert!(refused > 0);
}

#[test]
fn impossible_flows_are_refused_when_the_scenario_loads() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/network/thesis-small-dc.toml"),
    )
    .unwrap();
    let too_big: Vec<Override> = vec!["tenants.0.flow_bandwidth=2Gbps".parse().unwrap()];
    let err = load("small.toml", &text, &too_big).unwrap_err().to_string();
    assert!(
        err.contains("tenants[0].flow_bandwidth") && err.contains("1Gbps"),
        "{err}"
    );
    let flat: Vec<Override> = vec!["tenants.0.flow_bandwidth=1Mbps".parse().unwrap()];
    let err = load("two-tenants.toml", dcemu_tests::TWO_TENANTS, &flat)
        .unwrap_err()
        .to_string();
    assert!(err.contains("three-tier"), "{err}");
}

#[test]
fn between_pods_latency_grows_when_a_burst_queues_at_the_ports() {
    // 300 tenants submit at the same instant; each dispatch is followed by
    // three reservation notices on the scheduler's 1 Gb/s link, so dispatches
    // queue behind each other on their way across the pods.
    let o = run(
        &small_dc(&[
            "power.policy=idle",
            "output.packet_logs=true",
            "tenants.0.count=300",
            "tenants.0.arrivals.process=constant",
            "tenants.0.arrivals.rate_per_s=0.001",
            "tenants.0.flow_bandwidth=1Mbps",
            "run.end=20m",
        ]),
        1,
    );
    let empty = 6 * 5_000 + 5 * 1_000 + 4 * 4_096 + 2 * 410;
    let latencies: Vec<u64> = (63..125)
        .flat_map(|server| {
            let lines = log(&o, &format!("server-{server:04}"));
            kind(&lines, "net_deliver")
                .iter()
                .map(|d| d["latency_ns"].as_u64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        latencies.len() > 100,
        "{} cross-pod dispatches",
        latencies.len()
    );
    assert!(
        latencies.iter().all(|&l| l >= empty),
        "never faster than the empty network"
    );
    let worst = latencies.iter().copied().max().unwrap_or(0);
    assert!(
        worst > empty + 100_000,
        "worst {worst} ns against {empty} ns empty"
    );
}

#[test]
fn idle_switches_are_powered_but_not_active() {
    // thesis §4.4.1, Table 4.2: under noSleep an idle switch draws idle
    // power, yet the table counts only switches in on mode (15 of 536)
    let idle = run(&with_flows("100Mbps", "idle"), 1);
    let switches = metric(&idle, "switches_on_max");
    assert!(switches > 0.0);
    assert_eq!(metric(&idle, "switches_on_mean"), switches, "never asleep");
    let active = metric(&idle, "switches_active_mean");
    assert!(active > 0.0, "flows keep switches on");
    assert!(active < 0.5 * switches, "{active} of {switches}");
    // asleep when not working: on mode and powered nearly coincide
    let sleep = run(&with_flows("100Mbps", "sleep"), 1);
    let (on, active) = (
        metric(&sleep, "switches_on_mean"),
        metric(&sleep, "switches_active_mean"),
    );
    assert!(
        active <= on * (1.0 + 1e-9) && active > 0.9 * on,
        "{active} of {on}"
    );
}
