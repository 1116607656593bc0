//! Issue 41, "say what is wrong with a trace": `dcemu validate` lists the
//! known defects of each public trace format with their counts, actions
//! and first places, and `dcemu run` records them in `run.json` and as
//! `trace_defect_<kind>` metrics.

mod common;

use std::path::Path;

use common::dcemu;

/// Per format: the trace file and its rows, one defect of each kind the
/// format has (SWF's `row_refused` needs `--lenient`).
const SAMPLES: [(&str, &str, &str); 6] = [
    (
        "swf",
        "t.swf",
        "; MaxNodes: 1
1 0 0 100 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
2 1 0 -1 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
3 2 0 10 -1 -1 1024 -1 60 -1 1 1 1 -1 1 -1 -1 -1
4 3 0 0 1 -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
5 4 0 10 -1 -1 1024 2 60 -1 1 1 1 -1 1 -1 -1 -1
6 5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1
7 6 0 10 x -1 1024 1 60 -1 1 1 1 -1 1 -1 -1 -1
",
    ),
    (
        "alibaba-2018",
        "batch_task.csv",
        "M1,1,j_1,1,Terminated,100,160,50,0.5
M1,1,j_1,1,Terminated,100,160,50,0.5
M2,1,j_1,1,Terminated,110,110,50,0.5
M3,0,j_1,1,Terminated,120,130,50,0.5
M4,,j_1,1,Terminated,130,140,50,0.5
M5,1,j_1,1,Terminated,140,150,-1,0.5
M6,1,j_1,1,Terminated,150,160,50,
M7,1,j_1,1,Terminated,160,170,50,101
R1,1,j_1,1,Running,170,0,,
",
    ),
    (
        "alibaba-2018-instance",
        "batch_instance.csv",
        "i_1,M1,j_1,1,Terminated,10,70,m_1,1,1,80,,0.5,1\n",
    ),
    (
        "google-2011",
        "task_events.csv",
        "600000000,1,1,0,,0,u,0,0,,0.1,0,0
601000000,,1,0,,1,u,0,0,,,,
602000000,,1,0,,4,u,0,0,,,,
603000000,,9,0,,4,u,0,0,,,,
",
    ),
    (
        "google-2019",
        "instance_events.json",
        r#"{"time":"600000000","type":0,"collection_id":"7","instance_index":0}
{"time":"601000000","type":3,"collection_id":"7","instance_index":0}
{"time":"631000000","type":6,"collection_id":"7","instance_index":0}
{"time":"632000000","type":6,"collection_id":"9","instance_index":0}
"#,
    ),
    (
        "azure-vm",
        "vmtable.csv",
        "v1,s1,d1,0,3600,90.5,10.2,80.1,Interactive,2,4
v2,s1,d1,300,300,10,1,5,Delay-insensitive,2,8
v3,s2,d2,300,1200,10,1,5,Unknown,>24,8
",
    ),
];

/// What `dcemu validate --lenient` prints about each sample's defects.
const EXPECTED: &str = "\
swf.toml: tenant \"t\": known defects of the trace:
  row_refused: 1 (drop) at t.swf:8:10 — a row the reader refuses (its error names why), skipped under `lenient`
  swf_run_time_missing: 1 (drop) at t.swf:3:7 — run time -1 (not recorded): the job is dropped
  swf_processors_missing: 1 (drop) at t.swf:4:10 — neither allocated nor requested processors (both -1 or 0): the job is dropped
  swf_run_time_zero: 1 (clamp) at t.swf:5:7 — run time 0 (the job ran under 0.5 s): read as 0.5 s
  swf_allocated_processors_missing: 1 (keep) at t.swf:6:10 — allocated processors -1 or 0: the requested processors are used
  swf_memory_missing: 1 (keep) at t.swf:7:15 — neither used nor requested memory (both -1): the job needs no memory
  swf_ran_past_request: 1 (keep) at t.swf:2:7 — ran longer than its requested time: replayed with its recorded run time
alibaba-2018.toml: tenant \"t\": known defects of the trace:
  alibaba_duplicate_row: 1 (drop) at batch_task.csv:2 — the same row as one before it with the same start_time: dropped
  alibaba_no_run_time: 1 (drop) at batch_task.csv:3:27 — a Terminated row whose end_time is not after its start_time: dropped
  alibaba_no_instances: 1 (drop) at batch_task.csv:4:4 — a Terminated task of instance_num 0: dropped
  alibaba_instance_num_missing: 1 (keep) at batch_task.csv:5:4 — instance_num empty: one instance
  alibaba_cpu_missing: 1 (drop) at batch_task.csv:6:31 — no positive CPU (plan_cpu, or cpu_max and cpu_avg, empty, 0 or negative): dropped
  alibaba_memory_missing: 1 (keep) at batch_task.csv:7:34 — no memory (plan_mem, or mem_max and mem_avg, empty or negative): the task needs none
  alibaba_memory_over_100: 1 (clamp) at batch_task.csv:8:34 — normalised memory above 100 (more than the largest machine): read as 100
alibaba-2018-instance.toml: tenant \"t\": known defects of the trace:
  alibaba_peak_missing: 1 (keep) at batch_instance.csv:1:42 — cpu_max or mem_max empty or negative: the average (cpu_avg, mem_avg) is used
google-2011.toml: tenant \"t\": known defects of the trace:
  google_synthesized_event: 1 (keep) at task_events.csv:1:11 — the event's missing-info field is set (the trace synthesised a lost record): used as it is
  google_event_not_in_flight: 1 (drop) at task_events.csv:4 — an event of a task not submitted in the file, or already released: ignored
  google_cpu_request_missing: 1 (clamp) at task_events.csv:1 — a task with no or a zero CPU request: given 0.001 cores
google-2019.toml: tenant \"t\": known defects of the trace:
  google_event_not_in_flight: 1 (drop) at instance_events.json:4 — an event of a task not submitted in the file, or already released: ignored
  google_cpu_request_missing: 1 (clamp) at instance_events.json:1 — a task with no or a zero CPU request: given 0.001 cores
azure-vm.toml: tenant \"t\": known defects of the trace:
  azure_no_lifetime: 1 (drop) at vmtable.csv:2:14 — vmdeleted not after vmcreated (the VM lived under the 300 s resolution): dropped
  azure_open_size_bucket: 1 (clamp) at vmtable.csv:3:34 — vmcorecount or vmmemory is an open bucket `>N`: read as 2N
";

/// A scenario of one 64-core server and one tenant streaming `file` as `format`.
fn write_scenario(dir: &Path, format: &str, file: &str) -> String {
    let name = format!("{format}.toml");
    let text = format!(
        "[run]\nname = \"defects\"\nseed = 1\nend = \"30m\"\n\n\
         [topology]\nkind = \"flat\"\nlink_latency = \"50us\"\n\n\
         [scheduler]\nplacement = \"least-loaded\"\n\n[output]\ndir = \"results\"\n\n\
         [[server_types]]\nname = \"node\"\ncount = 1\ncores = 64\nslots = 64\nmemory_gb = 64.0\n\n\
         [[tenants]]\nname = \"t\"\n[tenants.arrivals]\nprocess = \"trace\"\n\
         format = \"{format}\"\ntrace = \"{file}\"\n"
    );
    std::fs::write(dir.join(&name), text).expect("scenario");
    name
}

fn stdout(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn validate_lists_each_known_defect_with_its_count_action_and_places() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut report = String::new();
    for (format, file, rows) in SAMPLES {
        std::fs::write(tmp.path().join(file), rows).expect("trace");
        let name = write_scenario(tmp.path(), format, file);
        let out = stdout(&dcemu(tmp.path(), &["validate", &name, "--lenient"]));
        report.extend(
            out.lines()
                .filter(|l| !l.contains("trace read through") && !l.contains(": valid"))
                .map(|l| format!("{l}\n")),
        );
    }
    assert_eq!(report, EXPECTED);

    let cut = stdout(&dcemu(
        tmp.path(),
        &[
            "validate",
            "swf.toml",
            "--lenient",
            "--set",
            "tenants.0.arrivals.kill_at_request=true",
        ],
    ));
    assert!(
        cut.contains(
            "\n  swf_cut_at_request: 1 (clamp) at t.swf:2:7 — ran longer than its requested \
             time: cut to its request (`kill_at_request`)\n"
        ),
        "{cut}"
    );
    assert!(!cut.contains("swf_ran_past_request"), "{cut}");

    // Without --lenient the bad row stops validate, naming file:line:column.
    let o = dcemu(tmp.path(), &["validate", "swf.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("t.swf:8:10: field 5 (allocated processors)"),
        "{e}"
    );
}

#[test]
fn a_clean_trace_has_no_known_defects() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        tmp.path().join("vmtable.csv"),
        "v1,s1,d1,0,3600,90.5,10.2,80.1,Interactive,2,4\n",
    )
    .expect("trace");
    let name = write_scenario(tmp.path(), "azure-vm", "vmtable.csv");
    let out = stdout(&dcemu(tmp.path(), &["validate", &name]));
    assert!(
        out.contains("azure-vm.toml: tenant \"t\": no known defects\n"),
        "{out}"
    );
}

#[test]
fn a_run_records_the_defects_per_tenant_and_as_metrics() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (format, file, rows) = SAMPLES[1];
    std::fs::write(tmp.path().join(file), rows).expect("trace");
    let name = write_scenario(tmp.path(), format, file);
    stdout(&dcemu(
        tmp.path(),
        &["run", &name, "--quiet", "--out", "out"],
    ));
    let json = |f: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(tmp.path().join("out").join(f)).expect(f))
            .expect("json")
    };
    let kinds = [
        "alibaba_duplicate_row",
        "alibaba_no_run_time",
        "alibaba_no_instances",
        "alibaba_instance_num_missing",
        "alibaba_cpu_missing",
        "alibaba_memory_missing",
        "alibaba_memory_over_100",
    ];
    let run = json("run.json");
    let metrics = json("metrics.json");
    let recorded = run["trace_defects"]["t"].as_object().expect("per tenant");
    assert_eq!(recorded.len(), kinds.len(), "{recorded:?}");
    for kind in kinds {
        assert_eq!(recorded[kind], 1, "{kind}");
        assert_eq!(metrics[format!("trace_defect_{kind}")], 1, "{kind}");
    }
    assert_eq!(metrics["trace_tasks_dropped"], 4);
}

/// Alibaba instances whose `machine_id` is not in `machine_meta`: counted
/// with `machine_ids` (validate) and with `machines` (a run), and a replay
/// of that run, whose scenario records the table as `machine_ids`, counts
/// the same rows.
#[test]
fn instances_on_machines_the_table_never_names_are_counted_and_replayed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        tmp.path().join("batch_instance.csv"),
        "i_1,M1,j_1,1,Terminated,10,70,m_1,1,1,80,90,0.5,1\n\
         i_2,M1,j_1,1,Terminated,11,70,m_9,1,1,80,90,0.5,1\n",
    )
    .expect("trace");
    std::fs::write(
        tmp.path().join("machine_meta.csv"),
        "m_1,0,1,dGVzdA,64,100,USING\n",
    )
    .expect("machines");
    let name = write_scenario(tmp.path(), "alibaba-2018-instance", "batch_instance.csv");
    let out = stdout(&dcemu(
        tmp.path(),
        &[
            "validate",
            &name,
            "--set",
            "tenants.0.arrivals.machine_ids=machine_meta.csv",
        ],
    ));
    assert!(
        out.contains("  alibaba_unknown_machine: 1 (keep) at batch_instance.csv:2:"),
        "{out}"
    );
    let both = dcemu(
        tmp.path(),
        &[
            "validate",
            &name,
            "--set",
            "tenants.0.arrivals.machine_ids=machine_meta.csv",
            "--set",
            "tenants.0.arrivals.machines=machine_meta.csv",
        ],
    );
    assert_eq!(both.status.code(), Some(2));
    let o = dcemu(
        tmp.path(),
        &[
            "run",
            &name,
            "--set",
            "tenants.0.arrivals.machines=machine_meta.csv",
            "--out",
            "r",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let metrics = std::fs::read_to_string(tmp.path().join("r/metrics.json")).expect("metrics");
    assert!(
        metrics.contains("\"trace_defect_alibaba_unknown_machine\": 1"),
        "{metrics}"
    );
    let recorded = std::fs::read_to_string(tmp.path().join("r/scenario.toml")).expect("scenario");
    assert!(
        recorded.contains("machine_ids = \"machine_meta.csv\""),
        "{recorded}"
    );
    let replay = dcemu(tmp.path(), &["replay", "r"]);
    assert!(
        replay.status.success(),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
}
