//! Determinism is the product (MODEL.md §2): same scenario and seed give the
//! same digest however the run is partitioned; another seed gives another.

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{Override, QUICKSTART, QUICKSTART_LABEL, Scenario, load};
use dcemu_tests::run_with;

fn quickstart(overrides: &[&str]) -> Scenario {
    let overrides: Vec<Override> = overrides.iter().map(|s| s.parse().unwrap()).collect();
    load(QUICKSTART_LABEL, QUICKSTART, &overrides).unwrap()
}

fn run(s: &Scenario, partitions: usize) -> Outcome {
    run_with(s, partitions)
}

#[test]
fn same_scenario_and_seed_give_the_same_digest() {
    let s = quickstart(&[]);
    let a = run(&s, 1);
    let b = run(&s, 1);
    assert!(
        a.events > 100_000,
        "the quickstart is not trivial: {} events",
        a.events
    );
    assert_eq!(a.digest, b.digest);
    assert_eq!(
        a.results, b.results,
        "every file is identical, not only the digest"
    );
}

#[test]
fn another_seed_gives_another_digest_and_other_logs() {
    let a = run(&quickstart(&[]), 1);
    let b = run(&quickstart(&["run.seed=2"]), 1);
    assert_ne!(a.digest, b.digest);
    let log = "actors/tenant-google-0.jsonl";
    assert_ne!(
        a.results.read(log).unwrap(),
        b.results.read(log).unwrap(),
        "the difference is in the model, not only the seed line"
    );
}

#[test]
fn partitioning_never_changes_the_digest() {
    let s = quickstart(&["run.end=30m"]);
    let one = run(&s, 1);
    for partitions in [2, 4, 7] {
        let other = run(&s, partitions);
        assert_eq!(one.digest, other.digest, "{partitions} partitions");
        assert_eq!(one.events, other.events);
    }
}

#[test]
fn the_digest_covers_the_logs() {
    let a = run(&quickstart(&["run.end=10m"]), 1);
    let b = run(&quickstart(&["run.end=10m", "output.actor_logs=false"]), 1);
    assert_eq!(a.metrics, b.metrics, "logging does not change the model");
    assert_ne!(a.digest, b.digest);
    assert!(b.results.paths().all(|p| !p.starts_with("actors/")));
}

#[test]
fn logs_written_during_the_run_digest_like_logs_kept_in_memory() {
    let s = quickstart(&[]);
    let in_memory = run(&s, 2);
    let tmp = tempfile::tempdir().unwrap();
    let on_disk = execute(
        &s,
        &RunOptions {
            partitions: 2,
            log_dir: Some(tmp.path().to_path_buf()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let biggest = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum::<u64>();
    assert!(
        biggest > dcemu::engine::LOG_BUDGET_BYTES as u64,
        "the logs exceed the budget, so they were written in several pieces"
    );
    let logged = in_memory
        .results
        .paths()
        .filter(|p| p.starts_with("actors/"))
        .count();
    assert!(logged > 36, "servers, switches, tenants and the rest log");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        logged,
        "one file per actor that logs"
    );
    assert_eq!(in_memory.digest, on_disk.digest);
}
