//! A trace's jobs run as their systems ran them (issue 41): Alibaba 2018's
//! DAGs (a task starts only after every instance of the tasks its
//! `task_name` names has ended) and Google 2011's different-machine
//! restriction (a job's restricted tasks never share a server), with
//! job-level response times.

use std::collections::BTreeMap;

use dcemu::run::Outcome;
use dcemu_tests::{assert_no_task_lost, kind, log, metric, run_with, scenario, t};

const ALIBABA: &str = r#"
[run]
name = "dag"
end = "2h"

[output]
actor_logs = true

[scheduler]
placement = "least-loaded"

[[server_types]]
name = "m"
count = 1
cores = 4
slots = 4
memory_gb = 100.0

[[tenants]]
name = "batch"
[tenants.arrivals]
process = "trace"
format = "alibaba-2018"
trace = "batch_task.csv"
cores_per_unit = 1.0
gb_per_unit = 100.0
"#;

/// Job j_2 holds three of the four cores from 0 to 300 s, so j_1's root
/// M1 (two cores) starts only at 300 s, long after the trace's 110 s when
/// its child R2 began; J4 waits for R2 and for M3, and j_3's task has no
/// DAG.
const BATCH_TASK: &str = "\
M1,1,j_2,1,Terminated,0,300,300,1
M1,1,j_1,1,Terminated,10,110,200,1
R2_1,2,j_1,1,Terminated,110,170,100,1
M3,1,j_1,1,Terminated,115,135,100,1
task_abc,1,j_3,1,Terminated,120,130,100,1
J4_2_3,1,j_1,1,Terminated,170,200,100,1
";

fn run_in(
    files: &[(&str, &str)],
    text: &str,
    overrides: &[&str],
    partitions: usize,
) -> (tempfile::TempDir, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let s = scenario(&path.display().to_string(), text, overrides);
    let o = run_with(&s, partitions);
    (dir, o)
}

/// Each task's trace job and DAG task, from the tenant's `task_submit`s.
fn identities(o: &Outcome, tenant: &str) -> BTreeMap<u64, (u64, Option<u64>)> {
    kind(&log(o, tenant), "task_submit")
        .into_iter()
        .map(|l| {
            (
                l["task"].as_u64().unwrap(),
                (l["trace_job"].as_u64().unwrap(), l["dag_task"].as_u64()),
            )
        })
        .collect()
}

/// Each task's (server, start, end) from the servers' logs, ns.
fn spans(o: &Outcome, servers: usize) -> BTreeMap<u64, (usize, u64, u64)> {
    let mut out = BTreeMap::new();
    for i in 0..servers {
        let lines = log(o, &format!("server-{i:04}"));
        for l in kind(&lines, "task_start") {
            out.insert(l["task"].as_u64().unwrap(), (i, t(l), u64::MAX));
        }
        for l in kind(&lines, "task_end") {
            if let Some(s) = out.get_mut(&l["task"].as_u64().unwrap()) {
                s.2 = t(l);
            }
        }
    }
    out
}

#[test]
fn no_dag_task_starts_before_every_instance_of_its_parents_ends() {
    let parents: BTreeMap<u64, Vec<u64>> = [(2, vec![1]), (4, vec![2, 3])].into();
    let mut digests = Vec::new();
    for partitions in [1, 3] {
        let (_d, o) = run_in(&[("batch_task.csv", BATCH_TASK)], ALIBABA, &[], partitions);
        assert_no_task_lost(&o, "alibaba dag");
        let who = identities(&o, "tenant-batch-0");
        let when = spans(&o, 1);
        assert_eq!(who.len(), 7, "every instance submitted");
        for (task, (job, dag)) in &who {
            let Some(after) = dag.and_then(|d| parents.get(&d)) else {
                continue;
            };
            let start = when[task].1;
            for (other, (j, d)) in &who {
                if j == job && d.is_some_and(|d| after.contains(&d)) {
                    assert!(
                        when[other].2 <= start,
                        "task {task} (dag {dag:?}) started at {start} before parent {other} ended at {}",
                        when[other].2
                    );
                }
            }
        }
        assert_eq!(
            metric(&o, "dag_tasks_held"),
            3.0,
            "R2's two instances, then J4"
        );
        assert_eq!(metric(&o, "dag_parents_missing"), 0.0);
        assert_eq!(metric(&o, "trace_jobs_completed"), 3.0);
        assert_eq!(metric(&o, "trace_jobs_open_end"), 0.0, "all ended");
        assert!(
            metric(&o, "trace_job_response_s_max") >= 400.0,
            "j_1 ran from 10 s until at least 400 s (M1 300-400 s, then R2, J4)"
        );
        digests.push(o.digest.clone());
    }
    assert_eq!(digests[0], digests[1], "1 and 3 partitions");
}

const GOOGLE: &str = r#"
[run]
name = "apart"
end = "30m"

[output]
actor_logs = true

[[server_types]]
name = "borg"
count = 2
cores = 4
slots = 4
memory_gb = 16.0

[[tenants]]
name = "borg"
[tenants.arrivals]
process = "trace"
format = "google-2011"
trace = "task_events.csv"
cores_per_unit = 4.0
gb_per_unit = 16.0
"#;

/// Job 100's four one-core tasks carry the restriction (`flag`), submitted
/// together at 600 s and running 60 s each.
fn task_events(flag: u8) -> String {
    let mut out = String::new();
    for (t, event) in [(600_000_000u64, 0), (601_000_000, 1), (661_000_000, 4)] {
        for i in 0..4 {
            out.push_str(&format!(
                "{t},,100,{i},7,{event},dXNlcg==,1,9,0.25,0.1,0,{flag}\n"
            ));
        }
    }
    out
}

/// The largest number of job 100's tasks running on one server at once.
fn most_together(o: &Outcome) -> usize {
    let when = spans(o, 2);
    let mut most = 0;
    for &(server, start, _) in when.values() {
        let n = when
            .values()
            .filter(|&&(s, a, b)| s == server && a <= start && start < b)
            .count();
        most = most.max(n);
    }
    most
}

#[test]
fn restricted_tasks_of_a_job_never_share_a_server_under_any_stage() {
    let restricted = task_events(1);
    for config in [
        &[][..],
        &["scheduler.placement=least-loaded"][..],
        &["scheduler.placement=best-fit"][..],
        &["scheduler.slots=priority"][..],
        &["scheduler.slots=priority", "scheduler.placement=best-fit"][..],
        &["scheduler.admission=arq"][..],
    ] {
        let (_d, o) = run_in(&[("task_events.csv", &restricted)], GOOGLE, config, 1);
        assert_no_task_lost(&o, &format!("{config:?}"));
        assert_eq!(metric(&o, "tasks_completed"), 4.0, "{config:?}");
        assert_eq!(
            most_together(&o),
            1,
            "{config:?}: two restricted tasks on one server"
        );
        assert_eq!(metric(&o, "trace_jobs_completed"), 1.0, "{config:?}");
        assert!(
            metric(&o, "trace_job_response_s_max") >= 120.0,
            "{config:?}: two servers run the four tasks in two rounds"
        );
    }
    let (_d, o) = run_in(
        &[("task_events.csv", &task_events(0))],
        GOOGLE,
        &["scheduler.placement=best-fit"],
        1,
    );
    assert!(
        most_together(&o) > 1,
        "without the restriction best-fit packs them"
    );
}

/// Google 2019: job 100's `max_per_machine` of 1 in `collection_events`
/// (`arrivals.collections`) keeps its four tasks on distinct servers.
#[test]
fn a_2019_job_of_max_per_machine_one_never_shares_a_server() {
    let scenario = GOOGLE
        .replace("format = \"google-2011\"", "format = \"google-2019\"")
        .replace(
            "trace = \"task_events.csv\"",
            "trace = \"instance_events.json\"\ncollections = \"collection_events.json\"",
        );
    let mut instances = String::new();
    for (t, event) in [(600_000_000u64, 0), (601_000_000, 3), (661_000_000, 6)] {
        for i in 0..4 {
            instances.push_str(&format!(
                "{{\"time\":\"{t}\",\"type\":{event},\"collection_id\":\"100\",\"instance_index\":{i},\"priority\":200,\"resource_request\":{{\"cpus\":0.25,\"memory\":0.1}}}}\n"
            ));
        }
    }
    for (max, together) in [(1, 1), (0, 4)] {
        let table = format!(
            "{{\"time\":\"590000000\",\"type\":0,\"collection_id\":\"100\",\"max_per_machine\":{max}}}\n"
        );
        let (_d, o) = run_in(
            &[
                ("instance_events.json", &instances),
                ("collection_events.json", &table),
            ],
            &scenario,
            &["scheduler.placement=best-fit"],
            1,
        );
        assert_no_task_lost(&o, "google 2019");
        assert_eq!(metric(&o, "tasks_completed"), 4.0);
        assert_eq!(most_together(&o), together, "max_per_machine {max}");
    }
}
