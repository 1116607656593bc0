//! Applications with a hidden ground truth (docs/ground-truth.md) running on
//! servers: heterogeneity and interference as the model makes them.

use dcemu::run::Outcome;
use dcemu::scenario::load;
use dcemu_tests::{metric, run_text};

fn run(text: &str) -> Outcome {
    run_text("apps.toml", text, &[])
}

/// `apps` applications submitted 1 s apart onto one 8-core server type with
/// `slots` slots (and as many cores), on `servers` servers.
fn cluster(apps: u32, servers: u32, slots: u32) -> String {
    spaced(apps, servers, slots, 1.0)
}

/// The same with submissions `gap_s` apart.
fn spaced(apps: u32, servers: u32, slots: u32, gap_s: f64) -> String {
    let rate = 1.0 / gap_s;
    let stop = f64::from(apps) * gap_s + gap_s / 2.0;
    format!(
        r#"
[run]
name = "apps"
end = "10000h"

[applications]
apps = {apps}

[[tenants]]
name = "t"
applications = "sequential"
stop = "{stop}s"
arrivals = {{ process = "constant", rate_per_s = {rate} }}

[[server_types]]
name = "big"
count = {servers}
slots = {slots}
cores = {slots}
core_ghz = 2.5
memory_gb = 64.0
llc_mb = 16.0
"#
    )
}

#[test]
fn an_application_alone_on_its_best_configuration_runs_at_ideal_speed() {
    // one configuration, so it is every application's best; two hours apart,
    // each runs alone with all the cores it has threads for
    let o = run(&spaced(12, 1, 8, 7200.0));
    assert_eq!(metric(&o, "apps_completed"), 12.0);
    assert_eq!(metric(&o, "perf_norm_mean"), 1.0);
    assert_eq!(metric(&o, "qos_met_fraction"), 1.0);
}

#[test]
fn crowding_applications_onto_one_server_slows_them_through_interference() {
    // the same 24 applications, each alone, or 1 s apart on three servers
    // with twice as many slots as cores
    let alone = run(&spaced(24, 3, 8, 7200.0));
    let crowded =
        run(&cluster(24, 3, 16).replace("slots = 16\ncores = 16", "slots = 16\ncores = 8"));
    assert_eq!(metric(&crowded, "apps_completed"), 24.0);
    assert!(
        metric(&crowded, "perf_norm_mean") < metric(&alone, "perf_norm_mean") - 0.05,
        "crowded {} vs alone {}",
        metric(&crowded, "perf_norm_mean"),
        metric(&alone, "perf_norm_mean")
    );
    assert!(metric(&crowded, "qos_met_fraction") < 1.0);
    assert!(metric(&crowded, "perf_norm_p50") >= dcemu_actors::ground_truth::FLOOR);
}

#[test]
fn random_placement_on_paragons_local_cluster_misses_qos_for_most_applications() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/paragon/local-oversubscribed.toml"),
    )
    .unwrap();
    let o = run(&text);
    assert_eq!(metric(&o, "apps_submitted"), 178.0);
    assert_eq!(metric(&o, "apps_completed"), 178.0);
    let qos = metric(&o, "qos_met_fraction");
    assert!(qos < 0.5, "qos_met_fraction {qos}");
    assert!(metric(&o, "perf_norm_mean") < 0.9);
}

#[test]
fn tenants_need_a_catalog_and_either_services_or_applications() {
    let no_catalog = cluster(3, 1, 1).replace("[applications]\napps = 3\n", "");
    let err = load("apps.toml", &no_catalog, &[]).unwrap_err().to_string();
    assert!(
        err.contains("tenants[0].applications") && err.contains("[applications]"),
        "{err}"
    );
    let both = cluster(3, 1, 1).replace(
        "applications = \"sequential\"",
        "applications = \"sequential\"\nservice = { distribution = \"constant\", mean = \"1s\" }",
    );
    let err = load("apps.toml", &both, &[]).unwrap_err().to_string();
    assert!(err.contains("remove `service`"), "{err}");
    let neither = cluster(3, 1, 1).replace("applications = \"sequential\"\n", "");
    let err = load("apps.toml", &neither, &[]).unwrap_err().to_string();
    assert!(err.contains("tenants[0].service"), "{err}");
}

#[test]
fn every_finished_application_is_a_row_of_applications_csv() {
    let o = run(&cluster(24, 3, 8));
    let csv = String::from_utf8(o.results.read("applications.csv").unwrap().unwrap()).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("task,app,family,server,server_type,ran_ns,perf_norm,speed")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as f64, metric(&o, "apps_completed"));
    let ids: Vec<u64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted by task id");
    let mean = rows
        .iter()
        .map(|r| r[6].parse::<f64>().unwrap())
        .sum::<f64>()
        / rows.len() as f64;
    assert!((mean - metric(&o, "perf_norm_mean")).abs() < 1e-9);
    let graded: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r[6].parse().unwrap(), r[7].parse().unwrap()))
        .collect();
    assert!(graded.iter().all(|&(_, speed)| speed > 0.0 && speed <= 1.0));
    let het_ok = graded.iter().filter(|&&(_, s)| s >= 0.95).count();
    let intf_ok = graded.iter().filter(|&&(p, s)| p >= 0.95 * s).count();
    assert_eq!(het_ok as f64, metric(&o, "apps_het_ok"));
    assert_eq!(intf_ok as f64, metric(&o, "apps_intf_ok"));
}
