//! The Paragon pipeline end to end (Paragon §2–§5, ARQ): classification
//! that beats chance, the paper's ordering of schedulers, ARQ's queues,
//! phase detection with migrations, determinism across partitionings, and
//! errors on bad scheduler settings.

use std::path::Path;

use dcemu::run::Outcome;
use dcemu::scenario::{Override, load};
use dcemu_tests::{assert_no_task_lost, kind, log, metric, run_with, scenario};

fn paragon_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/paragon")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run(name: &str, overrides: &[&str], partitions: usize) -> Outcome {
    run_with(&scenario(name, &paragon_file(name), overrides), partitions)
}

#[test]
fn classification_beats_a_random_pick_and_the_column_mean() {
    let o = run("local-low.toml", &[], 1);
    let classified = metric(&o, "apps_classified");
    assert_eq!(classified, 178.0, "every application is classified once");
    let best = metric(&o, "class_best_config_fraction");
    let chance = metric(&o, "class_best_config_chance_fraction");
    assert!(
        best > 3.0 * chance,
        "best configuration chosen for {best:.2} of applications, a random pick {chance:.2}"
    );
    assert!(metric(&o, "class_within_5pct_fraction") >= best);
    let err = metric(&o, "class_sensitivity_error_mean");
    let naive = metric(&o, "class_sensitivity_error_colmean_mean");
    assert!(
        err < 0.8 * naive,
        "sensitivity error {err:.1} points, column mean {naive:.1}"
    );
    assert!(metric(&o, "class_sensitivity_error_p90") > err);
}

#[test]
fn paragon_orders_above_its_baselines_on_the_ec2_cluster() {
    // Paragon §6.2, Fig. 13(b): Paragon keeps QoS for far more applications
    // than the heterogeneity- or interference-oblivious schedulers and the
    // least-loaded one. A third of the high-load scenario keeps the test short.
    // Since the catalog's heterogeneity follows §2.2 (flatter than before), NI
    // comes closer to Paragon than the paper's 3 % (docs/reproduction.md).
    let sets = ["tenants.0.stop=1700.5s"];
    let qos = |placement: &str| {
        let p = format!("scheduler.placement={placement}");
        let o = run("ec2-high.toml", &[sets[0], &p], 2);
        assert_no_task_lost(&o, placement);
        metric(&o, "qos_met_fraction")
    };
    let paragon = qos("paragon");
    let nh = qos("paragon-nh");
    let ni = qos("paragon-ni");
    let ll = qos("least-loaded");
    let shown = format!("paragon {paragon:.3}, NH {nh:.3}, NI {ni:.3}, LL {ll:.3}");
    assert!(paragon > 2.0 * nh.max(ll), "{shown}");
    assert!(paragon > ni + 0.05, "{shown}");
    assert!(
        paragon > ll + 0.1,
        "a wide margin over least-loaded: {shown}"
    );
}

#[test]
fn phase_detection_reclassifies_and_migrates_identically_on_any_partitioning() {
    let sets = ["scheduler.reclassify_below=0.05"];
    let one = run("local-phases.toml", &sets, 1);
    let three = run("local-phases.toml", &sets, 3);
    assert_eq!(one.digest, three.digest, "partitioning changed the results");
    assert!(metric(&one, "reclassifications") > 0.0);
    assert!(metric(&one, "migrations") > 0.0);
    assert_no_task_lost(&one, "local-phases");
    let scheduler = log(&one, "scheduler");
    let started = kind(&scheduler, "migrate_start").len();
    let done = kind(&scheduler, "migrate_done").len();
    assert_eq!(done as f64, metric(&one, "migrations"));
    assert!(done <= started);
    for line in kind(&scheduler, "migrate_start")
        .into_iter()
        .filter(|l| l["why"] == "faster")
    {
        assert!(
            line["rate_expected"].as_f64().unwrap() > line["rate_now"].as_f64().unwrap(),
            "a migration is taken only toward a faster server: {line}"
        );
    }
}

#[test]
fn arq_queues_divert_and_keep_every_task_on_any_partitioning() {
    let sets = ["scheduler.admission=arq"];
    let one = run("local-oversubscribed.toml", &sets, 1);
    let two = run("local-oversubscribed.toml", &sets, 2);
    assert_eq!(one.digest, two.digest, "partitioning changed the results");
    assert_no_task_lost(&one, "local-oversubscribed with ARQ");
    assert!(metric(&one, "arq_diverted_down") > 0.0);
    assert!(metric(&one, "arq_diverted_up") > 0.0);
    assert_eq!(metric(&one, "apps_completed"), 178.0);
    let fifo = run("local-oversubscribed.toml", &[], 1);
    assert_ne!(
        one.digest, fifo.digest,
        "ARQ and FIFO admission decide differently"
    );
}

#[test]
fn arq_raises_response_time_qos_on_the_oversubscribed_ec2_cluster() {
    // ARQ §3.2 (Paragon §4.2, eq. 2): an application's QoS budget covers its
    // waiting and classification time, (wt + P) < 0.05·CT, so the papers'
    // QoS for ARQ (ARQ Fig. 6, Paragon Fig. 13) counts the wait. Measured
    // that way, from submission to completion, ARQ does at least as well as
    // FIFO admission on the oversubscribed EC2 scenario and degrades fewer
    // applications by more than 10 %. ARQ "forces certain workloads to wait"
    // (§6.2): at seed 1 with the footprint-bounded catalog its mean queue
    // wait is 29 s against FIFO's 23 s, yet its margin on
    // `qos_met_response_fraction` is 0.010 (0.356 against 0.346) and it
    // degrades fewer by more than 10 % (0.469 against 0.495);
    // docs/reproduction.md tracks the distance to the paper's 61 % / 83 %
    // and why ARQ's 3.7 % wait budget keeps the two close.
    let fifo = run("ec2-oversubscribed.toml", &[], 2);
    let arq = run("ec2-oversubscribed.toml", &["scheduler.admission=arq"], 2);
    assert_no_task_lost(&fifo, "ec2-oversubscribed fifo");
    assert_no_task_lost(&arq, "ec2-oversubscribed arq");
    let m = |o: &Outcome, k: &str| metric(o, k);
    let shown = |k: &str| format!("{k}: fifo {:.4}, arq {:.4}", m(&fifo, k), m(&arq, k));
    assert!(
        m(&arq, "qos_met_response_fraction") >= m(&fifo, "qos_met_response_fraction"),
        "{}",
        shown("qos_met_response_fraction")
    );
    assert!(
        m(&arq, "degraded_over_10pct_response_fraction")
            < m(&fifo, "degraded_over_10pct_response_fraction"),
        "{}",
        shown("degraded_over_10pct_response_fraction")
    );
    assert!(
        m(&arq, "perf_norm_response_mean") > m(&fifo, "perf_norm_response_mean"),
        "{}",
        shown("perf_norm_response_mean")
    );
}

#[test]
fn arq_holding_for_a_suitable_server_puts_applications_on_their_configurations() {
    // Paragon §4.1: "the system waits for a server of appropriate quality to
    // be freed before it schedules that workload". With `arq_hold =
    // "until-suitable"` an application is never diverted to a lower pool,
    // and with `arq_speed = 1` its own pool is the servers whose predicted
    // speed meets QoS: on the oversubscribed local cluster (seed 1) it then
    // runs within 5 % of its best configuration for 0.99 of the
    // applications against 0.48 under §4.2's budget, and waits longer for
    // it (mean 725 s against 225 s); nothing is lost either way.
    let held = |hold: &str| {
        run(
            "local-oversubscribed.toml",
            &[
                "scheduler.admission=arq",
                "scheduler.arq_speed=1",
                &format!("scheduler.arq_hold={hold}"),
            ],
            1,
        )
    };
    let (budget, until) = (held("budget"), held("until-suitable"));
    assert_no_task_lost(&budget, "local-oversubscribed budget");
    assert_no_task_lost(&until, "local-oversubscribed until-suitable");
    let m = |o: &Outcome, k: &str| metric(o, k);
    assert!(
        m(&until, "decision_het_ok_fraction") > m(&budget, "decision_het_ok_fraction") + 0.3,
        "het ok: budget {:.3}, until-suitable {:.3}",
        m(&budget, "decision_het_ok_fraction"),
        m(&until, "decision_het_ok_fraction")
    );
    assert_eq!(m(&until, "arq_diverted_down"), 0.0, "never diverted down");
    assert!(m(&budget, "arq_diverted_down") > 0.0);
    assert!(m(&until, "queue_wait_s_mean") > m(&budget, "queue_wait_s_mean"));
}

#[test]
fn the_statistical_selection_and_short_jobs_place_every_application() {
    let o = run(
        "local-medium.toml",
        &["scheduler.selection=statistical", "scheduler.short_job=10m"],
        1,
    );
    assert_no_task_lost(&o, "statistical");
    assert_eq!(metric(&o, "apps_completed"), 178.0);
    let short = metric(&o, "apps_short_jobs");
    assert!(short > 0.0, "applications under 10 min skip profiling");
    assert!(metric(&o, "placements_short_job") >= short);
    assert_eq!(
        metric(&o, "apps_profiled") + short,
        178.0,
        "each application is either profiled or placed as a short job"
    );
}

#[test]
fn bad_scheduler_settings_name_the_field() {
    let text = paragon_file("local-low.toml");
    let err = |sets: &[&str]| {
        let overrides: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        load("local-low.toml", &text, &overrides)
            .err()
            .unwrap_or_else(|| panic!("{sets:?} was accepted"))
            .to_string()
    };
    let e = err(&["scheduler.cf_rank=0"]);
    assert!(
        e.contains("scheduler.cf_rank") && e.contains("between 1 and 20"),
        "{e}"
    );
    let e = err(&["scheduler.profile_share=1.5"]);
    assert!(
        e.contains("scheduler.profile_share") && e.contains("between 0 and 1"),
        "{e}"
    );
    let e = err(&["applications.clock_elasticity.multiprogrammed=-0.1"]);
    assert!(
        e.contains("clock_elasticity.multiprogrammed") && e.contains("between 0 and 3"),
        "{e}"
    );
    let e = err(&["scheduler.reclassify_below=1.5"]);
    assert!(e.contains("scheduler.reclassify_below"), "{e}");
    let e = err(&["scheduler.placement=paragon-xl"]);
    assert!(
        e.contains("scheduler.placement") && e.contains("paragon-ni"),
        "{e}"
    );
    let e = err(&["scheduler.admission=lifo"]);
    assert!(
        e.contains("scheduler.admission") && e.contains("arq"),
        "{e}"
    );
    // Without [applications] Paragon now runs, every task unprofiled
    // (tests/tests/scheduler.rs, docs/scheduler.md).
}

#[test]
fn paragon_keeps_qos_for_more_applications_than_its_ablations_and_least_loaded() {
    // Paragon §6.1 (Fig. 8): on the local cluster Paragon keeps QoS for
    // more applications than NH and LL on every seed, and on medium load is
    // not below NI on the mean. With the calibrated catalog (issue 37:
    // memory up to the footprint, profiling noise fitted) the best
    // configurations spread over Table V, so NI, taking the least-loaded
    // server of the best predicted configuration at a third of the
    // cluster's load, mostly runs alone and ties Paragon (seeds 1-3,
    // medium: P 163 / 152 / 142 of 178 applications against NI 160 / 151 /
    // 146, NH 0.18-0.29, LL 0.39-0.41). §6.1's strict order is an open
    // verdict of `dcemu reproduce paragon` with its measured cause; this
    // guards that Paragon does not fall below its own ablation (1e-9: equal
    // counts summed as fractions in another order).
    for name in ["local-low.toml", "local-medium.toml"] {
        let (mut sum_p, mut sum_ni) = (0.0, 0.0);
        for seed in 1..=3 {
            let seed = format!("run.seed={seed}");
            let q = |placement: &str| {
                let o = run(
                    name,
                    &[&seed, &format!("scheduler.placement={placement}")],
                    1,
                );
                metric(&o, "qos_met_fraction")
            };
            let (p, ni, nh, ll) = (
                q("paragon"),
                q("paragon-ni"),
                q("paragon-nh"),
                q("least-loaded"),
            );
            assert!(p > nh + 0.3, "{name} {seed}: paragon {p:.3}, NH {nh:.3}");
            assert!(p > ll + 0.2, "{name} {seed}: paragon {p:.3}, LL {ll:.3}");
            sum_p += p;
            sum_ni += ni;
        }
        if name == "local-medium.toml" {
            assert!(
                sum_p + 1e-9 >= sum_ni,
                "{name}: paragon {:.3}, NI {:.3} on the mean of seeds 1-3",
                sum_p / 3.0,
                sum_ni / 3.0
            );
        }
    }
}

/// Issue 22: tasks without a catalog entry (the quickstart's Google-like
/// tasks and MapReduce jobs) are workloads Paragon has never seen: a
/// Google-like task, and the first task of each MapReduce job, is profiled
/// and classified (§2.4), the job's other tasks wait for its
/// classification; short ones of an unclassified kind go unprofiled
/// (§3.5); `non_catalog = "plain"` is the model without their hidden
/// profiles.
#[test]
fn tasks_without_a_catalog_entry_are_profiled_like_unknown_workloads() {
    let quickstart = |sets: &[&str]| {
        let mut all = vec!["run.end=1h"];
        all.extend_from_slice(sets);
        run_with(
            &scenario(
                dcemu::scenario::QUICKSTART_LABEL,
                dcemu::scenario::QUICKSTART,
                &all,
            ),
            1,
        )
    };
    let o = quickstart(&[]);
    assert_no_task_lost(&o, "workloads");
    let profiled = metric(&o, "kinds_profiled");
    assert!(profiled > 0.0, "the first task of each kind is profiled");
    let classified_kinds = metric(&o, "kinds_classified");
    assert!(
        classified_kinds > 0.0 && classified_kinds <= profiled,
        "classified once profiled (the last runs may end with the run)"
    );
    assert!(
        metric(&o, "kind_tasks_waited") > 0.0,
        "a MapReduce job's tasks share its kind"
    );
    assert_eq!(metric(&o, "kind_tasks_short"), 0.0, "short_job is 0");
    let lines = log(&o, "scheduler");
    let classified = kind(&lines, "classify_kind");
    assert_eq!(classified.len() as f64, classified_kinds);
    let waited: f64 = classified
        .iter()
        .map(|l| l["waiting"].as_f64().unwrap())
        .sum();
    assert!(
        waited > 0.0 && waited <= metric(&o, "kind_tasks_waited"),
        "a MapReduce job's tasks arrive together and wait for its first"
    );
    assert!(
        classified
            .iter()
            .any(|l| l["workload"].as_str().unwrap().contains("/job/"))
            && classified
                .iter()
                .any(|l| l["workload"].as_str().unwrap().contains("/task/")),
        "a MapReduce job is a kind, a Google-like task one of its own"
    );
    // the kinds lie on the catalog's structure: classification finds
    // their best configuration far more often than a random pick would
    // (three configurations)
    let best = metric(&o, "kind_class_best_config_hits") / classified_kinds;
    assert!(best > 0.6, "best configuration for {best:.2} of the kinds");
    // catalog applications are graded and counted as before, apart
    assert_eq!(
        metric(&o, "apps_classified"),
        kind(&lines, "classify").len() as f64
    );

    let short = quickstart(&["scheduler.short_job=5m"]);
    assert_no_task_lost(&short, "short");
    assert!(
        metric(&short, "kind_tasks_short") > 0.0,
        "tasks under 5 min of an unclassified kind skip profiling (§3.5)"
    );
    assert!(metric(&short, "placements_short_job") >= metric(&short, "kind_tasks_short"));

    let plain = quickstart(&["applications.non_catalog=plain"]);
    assert_no_task_lost(&plain, "plain");
    assert!(
        !plain.metrics.contains_key("kinds_profiled"),
        "plain tasks are not profiled"
    );
    assert!(kind(&log(&plain, "scheduler"), "classify_kind").is_empty());
    assert!(
        metric(&plain, "placements_short_job") > metric(&o, "placements_short_job"),
        "plain tasks go Paragon's unprofiled way (§3.5)"
    );
}

/// Issue 22: Paragon reuses what it has seen (§2). A DAG template's stage
/// is one kind of task: its first task is profiled and classified once,
/// and the stage's tasks in later jobs of the template take that
/// classification at once, without a profiling run of their own.
#[test]
fn later_tasks_of_a_classified_kind_take_its_classification_without_profiling() {
    let mut text = dcemu::scenario::QUICKSTART.to_string();
    text.push_str(
        r#"
[[tenants]]
name = "tez"
arrivals = { process = "poisson", rate_per_s = 0.02 }

[tenants.dag_jobs]
templates = 2
stages_min = 2
stages_max = 3
tasks_min = 2
tasks_max = 6
task_time_min = "20s"
task_time_max = "60s"
history = "ideal"
"#,
    );
    let o = run_with(&scenario("dag-kinds.toml", &text, &["run.end=1h"]), 1);
    assert_no_task_lost(&o, "dag kinds");
    let known = metric(&o, "kind_tasks_known");
    assert!(known > 0.0, "later jobs' stage tasks reuse its class");
    let lines = log(&o, "scheduler");
    let stage = |l: &&&serde_json::Value| {
        l["workload"]
            .as_str()
            .is_some_and(|w| w.contains("/stage/"))
    };
    let profiled: Vec<&str> = kind(&lines, "profile_start")
        .iter()
        .filter(stage)
        .map(|l| l["workload"].as_str().unwrap())
        .collect();
    let mut distinct = profiled.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(!profiled.is_empty(), "stage kinds are profiled");
    assert_eq!(profiled.len(), distinct.len(), "each stage kind once");
    // at most 2 templates × 3 stages: the rest of the stage tasks were
    // known or waited for their stage's first
    assert!(distinct.len() <= 6, "{distinct:?}");
    let classified = kind(&lines, "classify_kind");
    assert!(classified.iter().filter(stage).count() <= distinct.len());
    assert!(
        known + metric(&o, "kind_tasks_waited") > 10.0 * distinct.len() as f64,
        "most stage tasks are not profiled: {known} known"
    );
}

/// Profiling and classification take Fig. 12's share of each
/// application's ideal time (`scheduler.profile_share`, issue 37's
/// decision of §3 against §5 and Fig. 12): the gap between a task's
/// `profile_start` and its `classify` is the share times its ideal time,
/// so it scales with the share and stays within the share of §5's 1-6
/// minute applications.
#[test]
fn profiling_takes_a_share_of_each_applications_ideal_time() {
    let gaps = |share: &str| {
        let o = run(
            "local-low.toml",
            &[&format!("scheduler.profile_share={share}")],
            1,
        );
        let lines = log(&o, "scheduler");
        let starts = kind(&lines, "profile_start");
        let done = kind(&lines, "classify");
        assert_eq!(starts.len(), 178);
        starts
            .iter()
            .map(|s| {
                let c = done
                    .iter()
                    .find(|c| c["task"] == s["task"])
                    .expect("every profiled task is classified");
                dcemu_tests::t(c) - dcemu_tests::t(s)
            })
            .collect::<Vec<u64>>()
    };
    let (fig12, tenth) = (gaps("0.0129"), gaps("0.1"));
    for (a, b) in fig12.iter().zip(&tenth) {
        let (lo, hi) = (0.0129 * 60e9, 0.0129 * 360e9);
        assert!((lo - 1.0..=hi + 1.0).contains(&(*a as f64)), "{a} ns");
        let ratio = *b as f64 / *a as f64;
        assert!((ratio - 0.1 / 0.0129).abs() < 1e-6, "{b} / {a}");
    }
    assert!(gaps("0").iter().all(|&g| g == 0));
}
