//! A log's parallel jobs (issue 41): an SWF job of P processors wider than
//! a server runs as one gang over as many servers as it needs, all its
//! processors at once, started together and ended together exactly its
//! run time later, under every admission, placement and slot stage.

use dcemu::run::Outcome;
use dcemu::scenario::load;
use dcemu_tests::{
    TWO_TENANTS, assert_no_task_lost, kind, log, metric, run_text, run_with, scenario,
};

/// Four nodes of four processors; a 16-processor job at 0 for 100 s, a
/// 6-processor one at 10 s for 50 s (two parts: 4 + 2), a 3-processor
/// one at 20 s for 30 s (one server).
const LOG: &str = "\
; MaxNodes: 4
; MaxProcs: 16
1 0 0 100 16 -1 -1 16 100 -1 1 1 1 -1 1 -1 -1 -1
2 10 0 50 6 -1 -1 6 60 -1 1 1 1 -1 1 -1 -1 -1
3 20 0 30 3 -1 -1 3 30 -1 1 1 1 -1 1 -1 -1 -1
";

const SCENARIO: &str = r#"
[run]
name = "parallel"
end = "10m"

[output]
actor_logs = true

[[server_types]]
name = "node"
count = 1
cores = 1
slots = 1

[[tenants]]
name = "hpc"
[tenants.arrivals]
process = "trace"
format = "swf"
trace = "par.swf"
machines = "header"
"#;

fn run(overrides: &[&str], partitions: usize) -> (tempfile::TempDir, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("par.swf"), LOG).unwrap();
    let path = dir.path().join("par.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    let s = scenario(&path.display().to_string(), SCENARIO, overrides);
    let o = run_with(&s, partitions);
    (dir, o)
}

/// Every `dist_run_end` of the servers' logs: (run, runtime s).
fn ends(o: &Outcome) -> Vec<(u64, f64)> {
    let mut out: Vec<(u64, f64)> = (0..4)
        .flat_map(|i| {
            let lines = log(o, &format!("server-{i:04}"));
            kind(&lines, "dist_run_end")
                .into_iter()
                .map(|l| (l["run"].as_u64().unwrap(), l["runtime_s"].as_f64().unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort_by_key(|e| e.0);
    out
}

#[test]
fn a_parallel_job_takes_all_its_processors_at_once_for_its_run_time() {
    let configs: [&[&str]; 6] = [
        &[],
        &["scheduler.placement=least-loaded"],
        &["scheduler.placement=best-fit"],
        &["scheduler.placement=paragon"],
        &["scheduler.admission=arq"],
        &["scheduler.slots=priority"],
    ];
    for set in configs {
        let (_dir, o) = run(set, 1);
        assert_no_task_lost(&o, &format!("{set:?}"));
        // 4 + 2 parts and one plain task
        assert_eq!(metric(&o, "tasks_completed"), 7.0, "{set:?}");
        assert_eq!(metric(&o, "parallel_jobs_completed"), 2.0, "{set:?}");
        assert_eq!(ends(&o), vec![(0, 100.0), (4, 50.0)], "{set:?}");
        // the log's processor-time: 16 × 100 + 6 × 50 + 3 × 30 core·s,
        // and the parts' start and end messages (microseconds)
        let busy = metric(&o, "cpu_busy_core_s");
        assert!((1990.0..1990.1).contains(&busy), "{set:?}: {busy} core·s");
        // no [workload]: none of the distributed applications' metrics
        assert!(!o.metrics.contains_key("dist_apps_completed"), "{set:?}");
        // graded per job: the 6-processor job waits for the 16-processor
        // one (10 s to 100 s), and so, under FCFS, does the 3-processor one
        assert_eq!(metric(&o, "hpc_jobs_completed"), 3.0, "{set:?}");
        let jobs = jobs(&o);
        assert_eq!(jobs.len(), 3, "{set:?}");
        let (procs, wait, ran, bsld) = jobs[&4];
        assert_eq!(procs, 6, "{set:?}");
        // (a slot stage starts tasks at its time slots: up to 2 s later)
        assert!((90.0..92.1).contains(&wait), "{set:?}: {jobs:?}");
        assert!((ran - 50.0).abs() < 0.01, "{set:?}: {jobs:?}");
        assert!(
            (bsld - (wait + ran) / ran).abs() < 1e-6,
            "{set:?}: {jobs:?}"
        );
        assert!(jobs[&0].1 < 1.1 && jobs[&0].3 < 1.02, "{set:?}: {jobs:?}");
        let (_dir3, o3) = run(set, 3);
        assert_eq!(o.digest, o3.digest, "{set:?}: partitioning changed the run");
    }
}

/// `jobs.csv`: per job (its first task), its processors, wait, run time
/// and bounded slowdown.
fn jobs(o: &Outcome) -> std::collections::BTreeMap<u64, (u32, f64, f64, f64)> {
    let text = o.results.read("jobs.csv").unwrap().expect("jobs.csv");
    String::from_utf8(text)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let x = |i: usize| f[i].parse::<f64>().unwrap();
            (
                f[0].parse().unwrap(),
                (f[1].parse().unwrap(), x(3), x(4), x(6)),
            )
        })
        .collect()
}

#[test]
fn annealing_refuses_a_log_of_parallel_jobs() {
    let err = load(
        "par.toml",
        SCENARIO,
        &["scheduler.placement=annealing".parse().unwrap()],
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(err.contains("tenants[0].arrivals.format"), "{err}");
}

/// A bursty log on the same machine: a 12-processor job runs 100 s; a
/// 16-processor one then waits for the whole machine (the head); a
/// 4-processor job that asks for 60 s fits the free node and ends before
/// the head's reservation (backfilled under EASY, queued behind the head
/// under FCFS); a 2-processor job of 200 s would hold a node the head
/// needs at 100 s, so it waits under both.
const BURST: &str = "\
; MaxNodes: 4
; MaxProcs: 16
1 0 0 100 12 -1 -1 12 100 -1 1 1 1 -1 1 -1 -1 -1
2 1 0 50 16 -1 -1 16 50 -1 1 1 1 -1 1 -1 -1 -1
3 2 0 50 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1
4 3 0 200 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
";

fn run_log(log: &str, overrides: &[&str], partitions: usize) -> (tempfile::TempDir, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("par.swf"), log).unwrap();
    let path = dir.path().join("par.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    let s = scenario(&path.display().to_string(), SCENARIO, overrides);
    let o = run_with(&s, partitions);
    (dir, o)
}

/// When each task was dispatched, by the scheduler's log (s).
fn dispatched(o: &Outcome) -> std::collections::BTreeMap<u64, f64> {
    kind(&log(o, "scheduler"), "task_dispatch")
        .into_iter()
        .map(|l| {
            (
                l["task"].as_u64().unwrap(),
                l["t_ns"].as_f64().unwrap() / 1e9,
            )
        })
        .collect()
}

/// `reservations.csv`: each head's first reservation (task, s).
fn reservations(o: &Outcome) -> Vec<(u64, f64)> {
    let text = o
        .results
        .read("reservations.csv")
        .unwrap()
        .unwrap_or_default();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let (t, s) = l.split_once(',').unwrap();
            (t.parse().unwrap(), s.parse().unwrap())
        })
        .collect()
}

#[test]
fn easy_backfills_what_does_not_delay_the_head_and_waits_less_than_fcfs() {
    let (_a, fcfs) = run_log(BURST, &[], 1);
    let (_b, easy) = run_log(BURST, &["scheduler.admission=easy-backfill"], 1);
    for o in [&fcfs, &easy] {
        assert_no_task_lost(o, "burst");
        assert_eq!(metric(o, "parallel_jobs_completed"), 2.0);
    }
    let (f, e) = (dispatched(&fcfs), dispatched(&easy));
    // task ids: job 1 is 0-2, job 2 is 3-6, job 3 is 7, job 4 is 8
    assert!(
        (f[&3] - 100.0).abs() < 0.01 && (e[&3] - 100.0).abs() < 0.01,
        "{f:?} {e:?}"
    );
    assert!(f[&7] >= 150.0, "FCFS: job 3 waits for job 2: {f:?}");
    assert!(e[&7] < 3.0, "EASY: job 3 backfilled at once: {e:?}");
    assert!(e[&8] >= 150.0, "EASY: job 4 would delay the head: {e:?}");
    assert_eq!(metric(&easy, "easy_backfilled"), 1.0);
    // the head's reservation: 100 s, when job 1 should end
    assert_eq!(reservations(&easy)[0].0, 3);
    assert!((reservations(&easy)[0].1 - 100.0).abs() < 0.01);
    let (fw, ew) = (
        metric(&fcfs, "hpc_job_wait_s_mean"),
        metric(&easy, "hpc_job_wait_s_mean"),
    );
    assert!(
        metric(&easy, "hpc_job_bounded_slowdown_mean")
            < metric(&fcfs, "hpc_job_bounded_slowdown_mean")
    );
    assert!(ew < fw, "EASY {ew} s, FCFS {fw} s");
    let (_c, easy3) = run_log(BURST, &["scheduler.admission=easy-backfill"], 3);
    assert_eq!(easy.digest, easy3.digest, "partitioning changed EASY");
}

/// A random log of `n` jobs on the 4 × 4 machine (a fixed LCG): 1 to 16
/// processors, run times of 1 to 300 s, each at most its requested time.
fn random_log(seed: u64, n: usize) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut log = String::from("; MaxNodes: 4\n; MaxProcs: 16\n");
    let mut at = 0;
    for i in 1..=n {
        at += next(40);
        let procs = 1 + next(16);
        let run = 1 + next(300);
        let req = run + 1 + next(200);
        log.push_str(&format!(
            "{i} {at} 0 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n"
        ));
    }
    log
}

/// EASY's promise, over random logs whose jobs end by their requests: no
/// head starts later than the first reservation it was given (backfilled
/// jobs never delay it), and every job ends. Identical on 1 and 3
/// partitions.
#[test]
fn easy_never_delays_a_reservation_over_random_logs() {
    for seed in 1..=12 {
        let log = random_log(seed, 30);
        let set = ["scheduler.admission=easy-backfill", "run.end=4h"];
        let (_d, o) = run_log(&log, &set, 1);
        assert_no_task_lost(&o, &format!("seed {seed}"));
        assert_eq!(metric(&o, "tasks_queued_end"), 0.0, "seed {seed}");
        let starts = dispatched(&o);
        let res = reservations(&o);
        assert!(!res.is_empty(), "seed {seed}: some head waited");
        for (task, reserved) in res {
            let start = starts[&task];
            assert!(
                start <= reserved + 0.01,
                "seed {seed}: task {task} reserved at {reserved} s started at {start} s\n{log}"
            );
        }
        if seed <= 3 {
            let (_e, o3) = run_log(&log, &set, 3);
            assert_eq!(
                o.digest, o3.digest,
                "seed {seed}: partitioning changed EASY"
            );
        }
    }
}

/// `arrivals.kill_at_request`: a job that ran past its requested time is
/// killed at it, as the log's machine would have killed it; without it the
/// job runs its recorded time.
#[test]
fn a_job_past_its_request_is_killed_at_it_only_when_the_scenario_says_so() {
    let log = "\
; MaxNodes: 4
; MaxProcs: 16
1 0 0 100 16 -1 -1 16 60 -1 1 1 1 -1 1 -1 -1 -1
2 1 0 10 16 -1 -1 16 10 -1 1 1 1 -1 1 -1 -1 -1
";
    let (_a, ran) = run_log(log, &[], 1);
    let (_b, killed) = run_log(log, &["tenants.0.arrivals.kill_at_request=true"], 1);
    // the second job (tasks 4-7) starts when the first ends
    assert!((dispatched(&ran)[&4] - 100.0).abs() < 0.01);
    assert!((dispatched(&killed)[&4] - 60.0).abs() < 0.01);
    assert!((jobs(&killed)[&0].2 - 60.0).abs() < 0.01);
    assert_eq!(metric(&killed, "trace_tasks_killed_at_request"), 1.0);
    assert!(!ran.metrics.contains_key("trace_tasks_killed_at_request"));
    let err = load(
        "par.toml",
        &SCENARIO.replace("format = \"swf\"", "format = \"azure-vm\""),
        &["tenants.0.arrivals.kill_at_request=true".parse().unwrap()],
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(err.contains("arrivals.kill_at_request"), "{err}");
}

/// `utilisation.csv`: (bin start s, busy processors, bin length s).
fn utilisation(o: &Outcome, horizon_s: f64) -> Vec<(f64, f64, f64)> {
    let text = o
        .results
        .read("utilisation.csv")
        .unwrap()
        .expect("utilisation.csv");
    let rows: Vec<(f64, f64)> = String::from_utf8(text)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|c| c.parse().unwrap()).collect();
            (f[0], f[1])
        })
        .collect();
    rows.iter()
        .enumerate()
        .map(|(i, &(t, busy))| {
            let next = rows.get(i + 1).map_or(horizon_s, |r| r.0);
            (t, busy, next - t)
        })
        .collect()
}

/// Issue 41's acceptance: the busy processor-seconds of a replayed log
/// (summed from `utilisation.csv`, and `hpc_busy_proc_s`) are its
/// finished jobs' processors × run time (`jobs.csv`), under FCFS and
/// EASY, on the SWF sample and random logs of parallel jobs; a job
/// still running at the end counts up to it; non-SWF runs have none of it.
#[test]
fn busy_processor_seconds_are_the_finished_jobs_processors_times_run_time() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/traces/swf.toml");
    let text = std::fs::read_to_string(sample).unwrap();
    let mut runs = Vec::new();
    for admission in ["fifo", "easy-backfill"] {
        let set = format!("scheduler.admission={admission}");
        let s = scenario(sample, &text, &[&set]);
        runs.push((format!("sample {admission}"), None, run_with(&s, 1), 7200.0));
        for seed in [1, 2, 3] {
            let (dir, o) = run_log(&random_log(seed, 30), &[&set, "run.end=4h"], 1);
            runs.push((format!("seed {seed} {admission}"), Some(dir), o, 14_400.0));
        }
    }
    for (label, _dir, o, horizon) in &runs {
        assert_eq!(metric(o, "hpc_jobs_running_end"), 0.0, "{label}");
        let jobs = jobs(o);
        let text = String::from_utf8(o.results.read("jobs.csv").unwrap().unwrap()).unwrap();
        let want: f64 = text
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<f64> = l.split(',').map(|c| c.parse().unwrap()).collect();
                f[1] * f[4]
            })
            .sum();
        assert!(!jobs.is_empty() && want > 0.0, "{label}");
        let bins = utilisation(o, *horizon);
        let got: f64 = bins.iter().map(|&(_, busy, len)| busy * len).sum();
        assert!(
            (got - want).abs() <= 1e-6 * want,
            "{label}: {got} vs {want}"
        );
        let busy = metric(o, "hpc_busy_proc_s");
        assert!(
            (busy - want).abs() <= 1e-6 * want,
            "{label}: {busy} vs {want}"
        );
        // the machine's processors and the log's span bound it
        let procs = metric(o, "cores_total");
        assert!(bins.iter().all(|b| b.1 <= procs + 1e-9), "{label}");
        let u = metric(o, "hpc_utilisation");
        assert!((busy / (procs * metric(o, "hpc_span_s")) - u).abs() < 1e-12);
        assert!(u > 0.0 && u <= 1.0, "{label}: {u}");
        assert!(
            o.metrics["hpc_jobs_by_size"]["1"]["jobs"].is_u64(),
            "{label}"
        );
    }
    // cut while the 3000 s job of the sample runs: it counts up to the end
    let s = scenario(sample, &text, &["run.end=30m"]);
    let cut = run_with(&s, 2);
    assert_eq!(metric(&cut, "hpc_span_s"), 1800.0);
    let busy = metric(&cut, "hpc_busy_proc_s");
    let cpu = metric(&cut, "cpu_busy_core_s");
    assert!((busy - cpu).abs() < 0.01, "{busy} vs {cpu} core·s");
    let plain = run_text("plain.toml", TWO_TENANTS, &["run.end=5m"]);
    assert!(plain.results.read("utilisation.csv").unwrap().is_none());
    assert!(!plain.metrics.contains_key("hpc_utilisation"));
    assert!(!plain.metrics.contains_key("hpc_jobs_by_size"));
}
