//! The scheduler's stages end to end (docs/scheduler.md): a policy added as
//! one file behaves as its doc says through the whole model.

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{QUICKSTART, load};

/// The quickstart's 32 servers with sleeping idle servers, for 30 minutes,
/// its batch tenant at a third of its load (about 30 of 128 slots busy).
fn quickstart(placement: &str, partitions: usize) -> Outcome {
    let overrides = [
        "run.end=30m".parse().unwrap(),
        "tenants.0.arrivals.rate_per_s=0.5".parse().unwrap(),
        "power.policy=sleep".parse().unwrap(),
        format!("scheduler.placement={placement}").parse().unwrap(),
    ];
    let scenario = load("quickstart", QUICKSTART, &overrides).unwrap_or_else(|e| panic!("{e}"));
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

#[test]
fn best_fit_packs_work_so_that_more_servers_sleep_than_under_random() {
    let packed = quickstart("best-fit", 1);
    let spread = quickstart("random", 1);
    for o in [&packed, &spread] {
        assert_eq!(
            metric(o, "tasks_submitted"),
            metric(o, "tasks_completed")
                + metric(o, "tasks_running_end")
                + metric(o, "tasks_queued_end")
                + metric(o, "tasks_waiting_wake_end")
                + metric(o, "tasks_in_transit_end"),
            "no task lost"
        );
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
    assert_eq!(packed.digest, quickstart("best-fit", 3).digest);
}
