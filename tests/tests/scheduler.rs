//! The scheduler's stages end to end (docs/scheduler.md): a policy added as
//! one file behaves as its doc says through the whole model.

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::load;
use dcemu_tests::{TWO_TENANTS, kind, log};

/// The two-tenant cluster's 32 servers with sleeping idle servers, for 30 minutes,
/// its batch tenant at a third of its load (about 30 of 128 slots busy).
fn two_tenants(placement: &str, partitions: usize) -> Outcome {
    let overrides = [
        "run.end=30m".parse().unwrap(),
        "tenants.0.arrivals.rate_per_s=0.5".parse().unwrap(),
        "power.policy=sleep".parse().unwrap(),
        format!("scheduler.placement={placement}").parse().unwrap(),
    ];
    let scenario =
        load("two-tenants.toml", TWO_TENANTS, &overrides).unwrap_or_else(|e| panic!("{e}"));
    execute(
        &scenario,
        &RunOptions {
            partitions,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn metric(o: &Outcome, key: &str) -> f64 {
    o.metrics[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {key}"))
}

/// Every submitted task is completed, running, queued, waiting for a
/// wake-up, in transit or dropped at the end.
fn assert_no_task_lost(o: &Outcome, label: &str) {
    let m = |k: &str| metric(o, k);
    assert_eq!(
        m("tasks_submitted"),
        m("tasks_completed")
            + m("tasks_running_end")
            + m("tasks_queued_end")
            + m("tasks_waiting_wake_end")
            + m("tasks_in_transit_end")
            + m("dropped_tasks"),
        "{label}: no task lost"
    );
}

#[test]
fn best_fit_packs_work_so_that_more_servers_sleep_than_under_random() {
    let packed = two_tenants("best-fit", 1);
    let spread = two_tenants("random", 1);
    for o in [&packed, &spread] {
        assert_no_task_lost(o, "two-tenants");
    }
    let (on_packed, on_spread) = (
        metric(&packed, "servers_on_mean"),
        metric(&spread, "servers_on_mean"),
    );
    assert!(
        on_packed < 0.8 * on_spread,
        "best-fit keeps {on_packed:.1} servers on, random {on_spread:.1}"
    );
    assert!(metric(&packed, "energy_kwh_total") < metric(&spread, "energy_kwh_total"));
    assert_eq!(packed.digest, two_tenants("best-fit", 3).digest);
}

/// Paragon's local cluster (40 servers, its catalog applications) shared
/// with a Google-like tenant of twelve priority classes (thesis Table 5.2)
/// that fills the slots, so that the slot stages evict.
fn one_datacenter(overrides: &[String]) -> dcemu::scenario::Scenario {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = std::fs::read_to_string(root.join("scenarios/paragon/local-low.toml")).unwrap();
    text.push_str(
        r#"
[[tenants]]
name = "google"
google_memory_gb = 4.0
stop = "1785s"
arrivals = { process = "poisson", rate_per_s = 1.5 }
"#,
    );
    let overrides: Vec<_> = overrides.iter().map(|o| o.parse().unwrap()).collect();
    load("one-datacenter.toml", &text, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

fn run(scenario: &dcemu::scenario::Scenario, partitions: usize) -> Outcome {
    execute(
        scenario,
        &RunOptions {
            partitions,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_placement_chooses_the_free_slots_of_every_slot_stage() {
    for (slots, admission) in [
        ("priority", "fifo"),
        ("wasp", "fifo"),
        ("hybrid", "fifo"),
        ("priority", "arq"),
        ("hybrid", "arq"),
    ] {
        for placement in [
            "random",
            "least-loaded",
            "best-fit",
            "paragon",
            "paragon-nh",
            "paragon-ni",
            "yarn-stock",
            "yarn-pt",
            "yarn-h",
        ] {
            let label =
                format!("slots = {slots}, admission = {admission}, placement = {placement}");
            let scenario = one_datacenter(&[
                "run.end=20m".into(),
                format!("scheduler.slots={slots}"),
                "scheduler.sticky_slots=0".into(),
                format!("scheduler.admission={admission}"),
                format!("scheduler.placement={placement}"),
            ]);
            let one = run(&scenario, 1);
            let m = |k: &str| metric(&one, k);
            assert_no_task_lost(&one, &label);
            assert!(m("preemptions") > 0.0, "{label}: the slot stage evicts");
            assert!(m("energy_kwh_total") > 0.0, "{label}");
            assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
        }
    }
}

#[test]
fn under_hybrid_paragon_still_places_applications_better_than_random() {
    // Pooled over seeds 1-3: an hour finishes about 25 applications per
    // seed. Graded on the platform decision Paragon makes (the share on a
    // configuration within 5 % of the application's best), not on
    // perf_norm: under a slot stage every application runs on one core
    // (issue 39), which holds perf_norm at 0.14-0.23 for both placements,
    // and with the calibrated catalog (issue 37) random placement met it
    // as often as Paragon (0.182 against 0.169 pooled), while Paragon's
    // het ok stayed ahead (0.17 against 0.11).
    let (mut sums, mut apps) = ([0.0; 2], [0.0; 2]);
    for seed in 1..=3 {
        let with = |placement: &str| {
            let scenario = one_datacenter(&[
                format!("run.seed={seed}"),
                "run.end=1h".into(),
                "scheduler.slots=hybrid".into(),
                "scheduler.sticky_slots=40".into(),
                format!("scheduler.placement={placement}"),
            ]);
            run(&scenario, 1)
        };
        let (paragon, random) = (with("paragon"), with("random"));
        assert!(metric(&paragon, "preemptions") > 0.0);
        assert!(metric(&paragon, "sticky_starts") > 0.0);
        for (k, o) in [&paragon, &random].into_iter().enumerate() {
            let n = metric(o, "apps_completed");
            sums[k] += metric(o, "decision_het_ok_fraction") * n;
            apps[k] += n;
        }
    }
    let (p, r) = (sums[0] / apps[0], sums[1] / apps[1]);
    assert!(
        p > r,
        "paragon {p:.3} against random {r:.3} (share within 5 % of the best configuration, seeds 1-3)"
    );
}

#[test]
fn paragon_and_arq_run_without_a_catalog_placing_every_task_unprofiled() {
    for admission in ["fifo", "arq"] {
        let overrides = [
            "run.end=20m".parse().unwrap(),
            "scheduler.placement=paragon".parse().unwrap(),
            format!("scheduler.admission={admission}").parse().unwrap(),
        ];
        let scenario =
            load("two-tenants.toml", TWO_TENANTS, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let out = run(&scenario, 1);
        let m = |k: &str| metric(&out, k);
        assert_eq!(m("placements_classified"), 0.0, "{admission}: no profiles");
        assert!(m("placements_short_job") > 0.0, "{admission}");
        assert_no_task_lost(&out, admission);
        assert_eq!(out.digest, run(&scenario, 3).digest, "{admission}");
    }
}

#[test]
fn arq_holds_the_queue_of_hybrid_and_diverts_while_paragon_places() {
    // Paragon + ARQ + HYBRID, the combination issue 22 opens with: ARQ's
    // classes and switching times order and scope the starts (with the more
    // critical tasks first, ARQ §4), HYBRID's sticky slots and priority
    // evictions decide whether each may start, Paragon where.
    let scenario = one_datacenter(&[
        "run.end=40m".into(),
        "scheduler.slots=hybrid".into(),
        "scheduler.sticky_slots=40".into(),
        "scheduler.admission=arq".into(),
        "scheduler.arq_order=priority".into(),
        "scheduler.placement=paragon".into(),
    ]);
    let one = run(&scenario, 1);
    let m = |k: &str| metric(&one, k);
    assert!(
        m("arq_diverted_down") + m("arq_diverted_up") > 0.0,
        "ARQ diverts"
    );
    assert!(
        m("placements_classified") > 0.0,
        "Paragon places profiled applications"
    );
    assert!(
        m("sticky_starts") > 0.0 && m("preemptions") > 0.0,
        "HYBRID acts"
    );
    assert_no_task_lost(&one, "paragon + arq + hybrid");
    assert_eq!(one.digest, run(&scenario, 3).digest);
}

/// A small datacenter with everything at once: a three-tier network whose
/// idle switches and servers sleep, primary tenants with spikes and
/// reimages, harvested storage, Paragon's applications, Google-like priority
/// classes and MapReduce jobs, under Paragon placement with HYBRID.
const DATACENTER: &str = r#"
[run]
name = "datacenter"
seed = 1
end = "2h"

[topology]
kind = "three-tier"
core = 2
aggregation = 4
access = 8
pods = 2
link_latency = "5us"
switch_latency = "1us"
core_link = "10Gbps"
aggregation_link = "10Gbps"
access_link = "1Gbps"

[power]
policy = "sleep"
server_wake = "30s"
switch_wake = "1s"
sample_interval = "1m"

[scheduler]
placement = "paragon"
slots = "hybrid"
sticky_slots = 24
report_interval = "10s"
resubmit_delay = "1s"

[applications]
apps = 120
mix = { single-threaded = 29, multithreaded = 22, multiprogrammed = 350, io-bound = 25 }
rank = 4
noise = 0.05
ideal_min = "1m"
ideal_max = "6m"

[storage]
placement = "hdfs-h"
replicas = 3
blocks = 20000
block_mb = 256
rereplicate_per_hour = 60
read_rate_per_s = 0.5
rack_size = 8

[[tenants]]
name = "paragon"
applications = "random"
arrivals = { process = "constant", rate_per_s = 0.05 }

[[tenants]]
name = "google"
google_memory_gb = 4.0
arrivals = { process = "poisson", rate_per_s = 0.6 }

[[tenants]]
name = "mapreduce"
mapreduce = { memory_gb = 4.0, tasks_per_job = 4.0 }
arrivals = { process = "poisson", rate_per_s = 0.05 }

[[primary_tenants]]
name = "web"
servers = 8
pattern = "periodic"
mean = 0.3
amplitude = 0.2
period = "2h"
reserve_cores = 4
reimages_per_month = 30.0
reimage_correlation = 0.5

[[primary_tenants]]
name = "search"
servers = 8
pattern = "unpredictable"
mean = 0.3
spikes_per_day = 48
spike_util = 0.9
spike_duration = "5m"
reserve_cores = 4
reimages_per_month = 30.0
reimage_correlation = 0.5

[[server_types]]
name = "xeon-x5670"
count = 16
cores = 12
slots = 12
core_ghz = 2.93
llc_mb = 12.0
memory_gb = 48.0
disk_gb = 2000.0

[[server_types]]
name = "xeon-e5345"
count = 16
cores = 4
slots = 4
core_ghz = 2.33
llc_mb = 8.0
memory_gb = 32.0
disk_gb = 2000.0

[[server_types]]
name = "xeon-e5335"
count = 16
cores = 4
slots = 4
core_ghz = 2.0
llc_mb = 8.0
memory_gb = 16.0
disk_gb = 2000.0
"#;

#[test]
fn a_preemption_never_overtakes_its_victim_through_a_sleeping_switch() {
    // A Preempt sent on another ECMP path than its victim's Dispatch, past a
    // switch waking up, would arrive first, and the server would run one
    // task more than its slots (a model error, at 9-13 minutes here).
    for placement in ["random", "paragon"] {
        let overrides = [
            "run.end=20m".parse().unwrap(),
            format!("scheduler.placement={placement}").parse().unwrap(),
        ];
        let scenario =
            load("datacenter.toml", DATACENTER, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scenario, 1);
        assert_no_task_lost(&one, placement);
        assert!(metric(&one, "preemptions") > 0.0, "{placement}");
        assert!(metric(&one, "wake_ups_switch") > 0.0, "{placement}");
        assert_eq!(one.digest, run(&scenario, 3).digest, "{placement}");
    }
}

/// The counters the default scenario's summary shows, one per mechanism
/// (issue 22: each must be at work).
const MECHANISMS: &[&str] = &[
    "wake_ups_server",
    "wake_ups_switch",
    "energy_kwh_network",
    "primary_spikes",
    "killed_containers",
    "reimages",
    "replicas_rereplicated",
    "arq_diverted_up",
    "apps_classified",
    "reclassifications",
    "migrations",
    "sticky_starts",
    "preemptions",
];

fn assert_every_mechanism_at_work(o: &Outcome, label: &str) {
    for key in MECHANISMS {
        assert!(metric(o, key) > 0.0, "{label}: {key} is 0");
    }
    assert!(
        metric(o, "tasks_completed") > 0.9 * metric(o, "tasks_submitted"),
        "{label}: the datacenter keeps up with its load"
    );
    assert_no_task_lost(o, label);
}

#[test]
fn the_embedded_default_shows_every_mechanism_at_once_on_any_partitioning() {
    let scenario = load(
        dcemu::scenario::QUICKSTART_LABEL,
        dcemu::scenario::QUICKSTART,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let one = run(&scenario, 1);
    assert_every_mechanism_at_work(&one, "quickstart");
    assert_eq!(one.digest, run(&scenario, 3).digest);
}

#[test]
fn the_mission_datacenter_shows_every_mechanism_at_once_on_any_partitioning() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("scenarios/datacenter.toml")).unwrap();
    let scenario = load("datacenter.toml", &text, &[]).unwrap_or_else(|e| panic!("{e}"));
    let six = run(&scenario, 1);
    assert_every_mechanism_at_work(&six, "datacenter");
    // its distributed tenant: runs start whole under HYBRID, and a unit
    // evicted or killed for a primary restarts its run (the summary's
    // `distributed` line)
    for key in [
        "dist_apps_completed",
        "dist_runs_restarted",
        "dist_units_stopped",
    ] {
        assert!(metric(&six, key) > 0.0, "datacenter: {key} is 0");
    }
    // the first hour is enough to cross every kind of message between
    // partitions; six hours on three threads would cost CI a minute
    let hour = load("datacenter.toml", &text, &["run.end=1h".parse().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run(&hour, 1).digest, run(&hour, 3).digest);
}

#[test]
fn blind_placements_see_the_room_primary_tenants_leave() {
    // Random placement knows nothing of primary tenants; the view bounds
    // each server by what its primary's use and reserve leave (reports),
    // so tasks are not sent to servers that kill them at once. Without
    // reports the scheduler cannot see the primaries and they do.
    let random_fifo = |reports: &str| {
        let overrides = [
            "run.end=1h".parse().unwrap(),
            "scheduler.placement=random".parse().unwrap(),
            "scheduler.admission=fifo".parse().unwrap(),
            format!("scheduler.report_interval={reports}")
                .parse()
                .unwrap(),
        ];
        let scenario = load(
            dcemu::scenario::QUICKSTART_LABEL,
            dcemu::scenario::QUICKSTART,
            &overrides,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        run(&scenario, 1)
    };
    let (with_reports, blind) = (random_fifo("10s"), random_fifo("0s"));
    for (o, label) in [(&with_reports, "reports"), (&blind, "blind")] {
        assert_no_task_lost(o, label);
    }
    let (seen, unseen) = (
        metric(&with_reports, "killed_containers"),
        metric(&blind, "killed_containers"),
    );
    assert!(
        seen * 5.0 < unseen,
        "killed with the primaries' room seen: {seen}, blind: {unseen}"
    );
}

/// Every placement the scheduler has (docs/scheduler.md's stage table).
const PLACEMENTS: &[&str] = &[
    "random",
    "least-loaded",
    "best-fit",
    "paragon",
    "paragon-nh",
    "paragon-ni",
    "gems",
    "gems-nosleep",
    "gems-nonetwork",
    "beps",
    "brfs-dot",
    "brfs-norm",
    "rrs",
    "yarn-stock",
    "yarn-pt",
    "yarn-h",
    "annealing",
];

#[test]
fn every_admission_preemption_placement_power_and_storage_policy_runs_or_is_refused_by_the_table() {
    // no row of docs/scheduler.md's refusal table meets these combinations
    // any more (issue 22: `annealing` runs under every slot stage): all run
    let mut ran = 0;
    let mut k = 0usize;
    for admission in ["fifo", "arq"] {
        for slots in ["none", "priority", "wasp", "hybrid"] {
            for &placement in PLACEMENTS {
                // Power and storage policies rotate through the product so
                // that each meets every other stage's policies.
                let power = ["sleep", "idle"][k % 2];
                let storage = ["hdfs-h", "hdfs-pt", "hdfs-stock"][k % 3];
                k += 1;
                let label = format!(
                    "admission = {admission}, slots = {slots}, placement = {placement}, power = {power}, storage = {storage}"
                );
                let overrides: Vec<_> = [
                    "run.end=5m".to_string(),
                    format!("scheduler.admission={admission}"),
                    format!("scheduler.slots={slots}"),
                    format!(
                        "scheduler.sticky_slots={}",
                        if slots == "hybrid" { 32 } else { 0 }
                    ),
                    format!("scheduler.placement={placement}"),
                    format!("power.policy={power}"),
                    format!("storage.placement={storage}"),
                ]
                .iter()
                .map(|o| o.parse().unwrap())
                .collect();
                let loaded = load(
                    dcemu::scenario::QUICKSTART_LABEL,
                    dcemu::scenario::QUICKSTART,
                    &overrides,
                );
                let scenario = loaded.unwrap_or_else(|e| {
                    panic!("{label}: refused, but the table has no row for it: {e}")
                });
                let one = run(&scenario, 1);
                assert_no_task_lost(&one, &label);
                assert!(metric(&one, "tasks_completed") > 0.0, "{label}");
                assert!(metric(&one, "energy_kwh_total") > 0.0, "{label}");
                if slots == "hybrid" {
                    assert!(metric(&one, "sticky_starts") > 0.0, "{label}");
                }
                assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 2 * 4 * PLACEMENTS.len());
}

/// The default datacenter with a tenant of distributed applications
/// besides its others (issue 22): a Table 5 mix of four applications of
/// two units of 4 slots, submitted three times.
fn with_distributed_tenant(overrides: &[String]) -> Result<dcemu::scenario::Scenario, String> {
    let mut text = dcemu::scenario::QUICKSTART.to_string();
    text.push_str(
        r#"
[workload]
mix = "HW1"
units_per_app = 2
unit_cores = 4
rounds = 3

[[tenants]]
name = "mix"
distributed = true
arrivals = { process = "constant", rate_per_s = 0.01 }
"#,
    );
    let overrides: Vec<_> = overrides.iter().map(|o| o.parse().unwrap()).collect();
    load("quickstart-distributed.toml", &text, &overrides).map_err(|e| e.to_string())
}

/// Every admission × preemption × placement × power policy with a
/// distributed tenant among every other tenant kind on the default
/// datacenter (3-tier, primary tenants, storage, catalog applications,
/// priority tasks, MapReduce jobs): runs keep the invariants and agree on
/// 1 and 3 partitions. No row of docs/scheduler.md's table meets them any
/// more: `annealing` places the runs under every slot stage too, and
/// completes some there.
#[test]
fn distributed_tenants_run_with_every_stage_or_are_refused_by_the_table() {
    let (mut ran, mut runs_done, mut annealed_under_slots) = (0, 0.0, 0.0);
    let mut k = 0usize;
    for admission in ["fifo", "arq"] {
        for slots in ["none", "priority", "wasp", "hybrid"] {
            for &placement in PLACEMENTS {
                let power = ["sleep", "idle"][k % 2];
                k += 1;
                let label = format!(
                    "distributed tenant, admission = {admission}, slots = {slots}, placement = {placement}, power = {power}"
                );
                let scenario = with_distributed_tenant(&[
                    "run.end=20m".to_string(),
                    format!("scheduler.admission={admission}"),
                    format!("scheduler.slots={slots}"),
                    format!(
                        "scheduler.sticky_slots={}",
                        if slots == "hybrid" { 32 } else { 0 }
                    ),
                    format!("scheduler.placement={placement}"),
                    format!("power.policy={power}"),
                ])
                .unwrap_or_else(|e| {
                    panic!("{label}: refused, but the table has no row for it: {e}")
                });
                let one = run(&scenario, 1);
                assert_no_task_lost(&one, &label);
                assert!(metric(&one, "energy_kwh_total") > 0.0, "{label}");
                let done = metric(&one, "dist_apps_completed");
                runs_done += done;
                if placement == "annealing" && slots != "none" {
                    assert!(
                        metric(&one, "dist_settings_measured") > 0.0,
                        "{label}: profiled"
                    );
                    annealed_under_slots += done;
                }
                assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 2 * 4 * PLACEMENTS.len());
    assert!(runs_done > 0.0, "distributed runs end in some combinations");
    if PLACEMENTS.contains(&"annealing") {
        assert!(
            annealed_under_slots > 0.0,
            "annealed runs end under slot stages"
        );
    }
}

/// Each run of the distributed tenant `mix` of `o`, as it started: (run,
/// time) → the servers its units were dispatched to. The tenant's tasks
/// are its units, runs of `units` consecutive ids.
fn run_starts(o: &Outcome, units: usize) -> std::collections::BTreeMap<(u64, u64), Vec<String>> {
    let sched = log(o, "scheduler");
    let mut ids: Vec<u64> = kind(&sched, "task_arrive")
        .into_iter()
        .filter(|a| {
            a["tenant"]
                .as_str()
                .is_some_and(|t| t.starts_with("tenant-mix-"))
        })
        .map(|a| a["task"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    let mut starts: std::collections::BTreeMap<(u64, u64), Vec<String>> = Default::default();
    for d in kind(&sched, "task_dispatch") {
        let task = d["task"].as_u64().unwrap();
        if let Ok(k) = ids.binary_search(&task) {
            let run = ids[k / units * units];
            starts
                .entry((run, d["t_ns"].as_u64().unwrap()))
                .or_default()
                .push(d["server"].as_str().unwrap().to_string());
        }
    }
    starts
}

/// GEMS with a distributed tenant on the default datacenter, in each of
/// the energy stage's settings: queueing by itself (`fifo`, no slots),
/// behind ARQ, and behind a slot stage (docs/scheduler.md, "Distributed
/// runs under the energy-aware placements"): every run starts whole, its
/// units on distinct hosts; nothing is lost; 1 and 3 partitions agree.
#[test]
fn energy_aware_placements_start_distributed_runs_whole_on_distinct_hosts() {
    for (admission, slots) in [("fifo", "none"), ("arq", "none"), ("arq", "hybrid")] {
        let label = format!("gems, admission = {admission}, slots = {slots}");
        let scenario = with_distributed_tenant(&[
            "run.end=1h".to_string(),
            "scheduler.placement=gems".to_string(),
            format!("scheduler.admission={admission}"),
            format!("scheduler.slots={slots}"),
            format!(
                "scheduler.sticky_slots={}",
                if slots == "hybrid" { 32 } else { 0 }
            ),
        ])
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        let one = run(&scenario, 1);
        assert_no_task_lost(&one, &label);
        assert!(
            metric(&one, "dist_apps_completed") > 0.0,
            "{label}: runs end"
        );
        let starts = run_starts(&one, 2);
        let runs: std::collections::BTreeSet<u64> = starts.keys().map(|k| k.0).collect();
        assert!(
            runs.len() >= 6,
            "{label}: most of the 12 runs started: {starts:?}"
        );
        for (key, servers) in &starts {
            assert_eq!(servers.len(), 2, "{label}: run {key:?} starts whole");
            assert_ne!(
                servers[0], servers[1],
                "{label}: run {key:?} on distinct hosts"
            );
        }
        assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
    }
}

/// `annealing` under each slot stage, with and without ARQ, with a
/// distributed tenant on the default datacenter (docs/scheduler.md,
/// "`annealing` under a slot stage"): no unit starts before its
/// application's profile is ready, every run starts whole on distinct
/// hosts, runs end, nothing is lost, and 1 and 3 partitions agree.
#[test]
fn annealing_under_every_slot_stage_starts_profiled_runs_whole_on_distinct_hosts() {
    for (admission, slots) in [("fifo", "priority"), ("fifo", "wasp"), ("arq", "hybrid")] {
        let label = format!("annealing, admission = {admission}, slots = {slots}");
        let scenario = with_distributed_tenant(&[
            "run.end=1h".to_string(),
            "scheduler.placement=annealing".to_string(),
            format!("scheduler.admission={admission}"),
            format!("scheduler.slots={slots}"),
            format!(
                "scheduler.sticky_slots={}",
                if slots == "hybrid" { 32 } else { 0 }
            ),
        ])
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        let one = run(&scenario, 1);
        assert_no_task_lost(&one, &label);
        assert!(
            metric(&one, "dist_apps_completed") > 0.0,
            "{label}: runs end"
        );
        let sched = log(&one, "scheduler");
        let profiled = kind(&sched, "dist_profile");
        assert!(!profiled.is_empty(), "{label}: applications profiled");
        let ready = profiled
            .iter()
            .map(|p| p["t_ns"].as_u64().unwrap() + p["time_ns"].as_u64().unwrap())
            .min()
            .unwrap();
        let starts = run_starts(&one, 2);
        let runs: std::collections::BTreeSet<u64> = starts.keys().map(|k| k.0).collect();
        assert!(
            runs.len() >= 6,
            "{label}: most of the 12 runs started: {starts:?}"
        );
        for (key, servers) in &starts {
            assert!(
                key.1 >= ready,
                "{label}: run {key:?} starts once profiled ({ready})"
            );
            assert_eq!(servers.len(), 2, "{label}: run {key:?} starts whole");
            assert_ne!(
                servers[0], servers[1],
                "{label}: run {key:?} on distinct hosts"
            );
        }
        assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
    }
}

/// Reservations the scheduler logged, less its releases: the flows it
/// still holds, which must be what its ledger says at the end.
fn assert_flows_balance(o: &Outcome, label: &str) {
    let scheduler = log(o, "scheduler");
    let reserved = kind(&scheduler, "flow_reserve").len() as f64;
    let released = kind(&scheduler, "flow_release").len() as f64;
    assert!(reserved > 0.0, "{label}: flows reserved");
    assert!(released > 0.0, "{label}: flows released");
    assert_eq!(
        reserved - released,
        metric(o, "flows_active_end"),
        "{label}: every reservation released once, the rest held at the end"
    );
}

#[test]
fn a_slot_stage_reserves_each_starts_flow_and_frees_it_when_the_task_leaves() {
    // The Google-like tenant's every task reserves 150 Mb/s from the core to
    // its server: a 1 Gb/s access link carries six, a 12-slot server fills
    // its link before its slots. HYBRID (sticky slots, then WASP) starts a
    // task only on a server with a path that has its bandwidth (an evictor:
    // once its victim's flow is freed), reserves it, and frees it when the
    // task finishes or is evicted.
    for (placement, admission) in [("random", "fifo"), ("paragon", "fifo"), ("paragon", "arq")] {
        let label = format!("{placement} + {admission} + hybrid with flows");
        let overrides = [
            "run.end=30m".parse().unwrap(),
            "tenants.1.flow_bandwidth=150Mbps".parse().unwrap(),
            format!("scheduler.placement={placement}").parse().unwrap(),
            format!("scheduler.admission={admission}").parse().unwrap(),
        ];
        let scenario =
            load("datacenter.toml", DATACENTER, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scenario, 1);
        let m = |k: &str| metric(&one, k);
        assert_no_task_lost(&one, &label);
        assert_flows_balance(&one, &label);
        assert_eq!(m("flows_refused"), 0.0, "{label}: only servers with a path");
        assert!(m("preemptions") > 0.0, "{label}: HYBRID evicts");
        assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
    }
}

/// The small datacenter under an energy-aware placement behind `slots` and
/// `admission`.
fn energy_datacenter(placement: &str, slots: &str, admission: &str, end: &str) -> Outcome {
    let overrides = [
        format!("run.end={end}").parse().unwrap(),
        format!("scheduler.placement={placement}").parse().unwrap(),
        format!("scheduler.slots={slots}").parse().unwrap(),
        format!("scheduler.admission={admission}").parse().unwrap(),
        format!(
            "scheduler.sticky_slots={}",
            if slots == "hybrid" { 24 } else { 0 }
        )
        .parse()
        .unwrap(),
    ];
    let scenario =
        load("datacenter.toml", DATACENTER, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let one = run(&scenario, 1);
    let label = format!("{placement} + {admission} + slots = {slots}");
    assert_no_task_lost(&one, &label);
    assert_flows_balance(&one, &label);
    assert_eq!(one.digest, run(&scenario, 3).digest, "{label}");
    one
}

#[test]
fn energy_aware_placement_chooses_server_and_path_behind_slot_stages_and_arq() {
    // Issue 22: ARQ orders and scopes, the slot stage decides whether a task
    // starts and whom it evicts, the energy-aware placement where (server
    // and path, thesis §4.3) among the servers they allow; flows are
    // reserved as tasks start and released as they finish or are evicted.
    for (placement, slots, admission) in [
        ("gems", "hybrid", "fifo"),
        ("gems", "priority", "fifo"),
        ("gems", "wasp", "fifo"),
        ("gems", "none", "arq"),
        ("gems", "hybrid", "arq"),
        ("beps", "hybrid", "fifo"),
        ("gems-nonetwork", "priority", "arq"),
        ("rrs", "wasp", "fifo"),
    ] {
        let label = format!("{placement} + {admission} + slots = {slots}");
        let o = energy_datacenter(placement, slots, admission, "20m");
        let m = |k: &str| o.metrics.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        eprintln!(
            "{label}: placements {} preemptions {} sticky {} flows {} (internal {}) diverted {} energy {:.3} kWh completed {}",
            m("energy_placements"),
            m("preemptions"),
            m("sticky_starts"),
            m("flows_reserved"),
            m("flows_internal"),
            m("arq_diverted_down") + m("arq_diverted_up"),
            m("energy_kwh_total"),
            m("tasks_completed"),
        );
        assert!(
            m("energy_placements") > 0.0,
            "{label}: the energy stage places"
        );
        assert!(
            m("flows_internal") > 0.0,
            "{label}: phase II connects workers"
        );
        assert_eq!(m("flows_refused"), 0.0, "{label}: only servers with a path");
        if slots != "none" {
            assert!(m("preemptions") > 0.0, "{label}: the slot stage evicts");
        }
        if slots == "hybrid" {
            assert!(m("sticky_starts") > 0.0, "{label}: sticky slots");
        }
        if admission == "arq" {
            assert!(
                m("arq_diverted_down") + m("arq_diverted_up") > 0.0,
                "{label}: ARQ diverts"
            );
        }
    }
}

#[test]
fn energy_placements_in_their_own_queue_see_the_primaries_and_survive_reordered_flow_notices() {
    // GEMS with its own queue on the 3-tier datacenter with primary tenants
    // and switches that take a second to wake. Blind to the primaries (no
    // reports) it places on servers that kill at once, and the flow
    // releases of the killed tasks race their reservations through waking
    // switches on other ECMP paths: the switches net them. With reports it
    // sees the room the primaries leave and kills little.
    let with = |reports: &str| {
        let overrides = [
            "run.end=20m".parse().unwrap(),
            "scheduler.placement=gems".parse().unwrap(),
            "scheduler.slots=none".parse().unwrap(),
            "scheduler.sticky_slots=0".parse().unwrap(),
            format!("scheduler.report_interval={reports}")
                .parse()
                .unwrap(),
        ];
        let scenario =
            load("datacenter.toml", DATACENTER, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scenario, 1);
        assert_no_task_lost(&one, reports);
        assert_eq!(one.digest, run(&scenario, 3).digest, "{reports}");
        one
    };
    let (blind, seeing) = (with("0s"), with("10s"));
    assert!(
        metric(&blind, "reservations_released_early") > 0.0,
        "releases overtook their reservations"
    );
    assert!(
        metric(&seeing, "killed_containers") * 20.0 < metric(&blind, "killed_containers"),
        "seeing the primaries' room: {} killed, blind: {}",
        metric(&seeing, "killed_containers"),
        metric(&blind, "killed_containers")
    );
}
