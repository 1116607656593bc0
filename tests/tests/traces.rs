//! Public trace formats (issue 24 part 2, docs/traces.md): every sample in
//! `scenarios/traces/` replays as its scenario, twice to the same digest;
//! its tasks and priorities are the ones the format's rules give; bad rows
//! stop a run with `file:line:column` and `--lenient` skips and counts them;
//! `.gz` input reads as the plain file does.

use std::path::{Path, PathBuf};

use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{Scenario, load, streams};
use dcemu_actors::trace_formats::{TraceStream, machines::read_machines};
use dcemu_tests::{assert_no_task_lost, metric, run_with, scenario};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load_file(path: &Path) -> Scenario {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    load(&path.display().to_string(), &text, &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn sample(name: &str) -> Scenario {
    load_file(&root().join("scenarios/traces").join(format!("{name}.toml")))
}

fn run(s: &Scenario) -> Outcome {
    execute(s, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn counter(o: &Outcome, key: &str) -> u64 {
    o.metrics[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no metric {key}"))
}

/// Every task of the scenario's first tenant's stream, as the tenant gets them.
fn tasks(s: &Scenario) -> Vec<dcemu_actors::trace::TraceTask> {
    let spec = s.streams[0].as_ref().expect("a streamed trace");
    let mut stream = TraceStream::open(spec).expect("opens");
    let mut out = Vec::new();
    while let Some(t) = stream.next_task().expect("good sample") {
        out.push(t);
    }
    out
}

/// (format, tasks submitted, dropped, unfinished, servers, priorities in arrival order)
type Sample = (&'static str, u64, u64, u64, u32, &'static [u8]);

const SAMPLES: [Sample; 5] = [
    ("google-2011", 7, 1, 2, 5, &[10, 9, 9, 0, 2, 2, 11]),
    ("google-2019", 5, 1, 1, 4, &[10, 10, 0, 11, 2]),
    (
        "alibaba-2018",
        16,
        3,
        0,
        4,
        &[3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
    ),
    ("swf", 9, 1, 0, 8, &[5, 5, 5, 5, 5, 5, 5, 5, 5]),
    ("azure-vm", 5, 1, 0, 4, &[9, 2, 5, 9, 2]),
];

#[test]
fn every_sample_replays_twice_to_the_same_digest() {
    for (name, submitted, dropped, unfinished, servers, priorities) in SAMPLES {
        let s = sample(name);
        let built: u32 = s.server_types.iter().map(|t| t.count).sum();
        assert_eq!(built, servers, "{name}: servers");
        let got: Vec<u8> = tasks(&s).iter().map(|t| t.priority).collect();
        assert_eq!(got, priorities, "{name}: priorities in arrival order");
        let a = run(&s);
        assert_no_task_lost(&a, name);
        assert_eq!(counter(&a, "tasks_submitted"), submitted, "{name}");
        assert_eq!(counter(&a, "trace_tasks_dropped"), dropped, "{name}");
        assert_eq!(counter(&a, "trace_tasks_unfinished"), unfinished, "{name}");
        assert_eq!(counter(&a, "trace_rows_skipped"), 0, "{name}");
        let b = run(&sample(name));
        assert_eq!(a.digest, b.digest, "{name}: same scenario, same digest");
    }
}

#[test]
fn google_2011_durations_follow_the_event_rule() {
    let s = sample("google-2011");
    let end = s.run.end.as_nanos();
    let got: Vec<(u64, u64, f64)> = tasks(&s)
        .iter()
        .map(|t| (t.arrival / 1_000_000, t.duration / 1_000_000, t.cpu))
        .collect();
    assert_eq!(
        got,
        vec![
            // before the trace, runs through it: until the end of the run
            (0, end / 1_000_000, 1.0),
            (600_000, 60_000, 2.0),  // SCHEDULE 601.23 s → FINISH 661.23 s
            (600_000, 120_000, 2.0), // → FAIL 721.23 s: it ran that long
            (612_000, 100_000, 0.5), // evicted, rescheduled 641 s → 741 s
            (800_000, 100_000, 1.0), //
            (800_000, 100_000, 2.0), // UPDATE_RUNNING raised its CPU
            (1_000_000, end / 1_000_000 - 1_000_000, 8.0), // FINISH after the trace
        ]
    );
}

#[test]
fn machine_tables_build_the_servers() {
    let s = sample("google-2011");
    let types: Vec<(String, u32, Option<u32>, Option<f64>)> = s
        .server_types
        .iter()
        .map(|t| (t.name.clone(), t.count, t.cores, t.memory_gb))
        .collect();
    assert_eq!(
        types,
        vec![
            ("borg-0".into(), 3, Some(8), Some(0.2493 * 64.0)),
            ("borg-1".into(), 1, Some(8), Some(0.4995 * 64.0)),
            ("borg-2".into(), 1, Some(16), Some(64.0)),
        ]
    );
    // The scenario as run keeps the servers built, not the table.
    let toml = s.to_toml();
    assert!(toml.contains("name = \"borg-2\""), "{toml}");
    assert!(!toml.contains("machines ="), "{toml}");

    let dir = root().join("scenarios/traces");
    let m = read_machines(
        &dir.join("alibaba-2018/machine_meta.csv"),
        "machine_meta.csv",
        dcemu_actors::trace_formats::TraceFormat::Alibaba2018,
        1.0,
        512.0,
    )
    .expect("good");
    let classes: Vec<(u32, Option<f64>, u32)> = m
        .classes
        .iter()
        .map(|c| (c.cores, c.memory_gb, c.count))
        .collect();
    assert_eq!(classes, vec![(64, Some(256.0), 1), (96, Some(512.0), 3)]);
}

/// A copy of a sample's scenario and trace in a temp dir, the trace changed.
fn with_trace(
    name: &str,
    file: &str,
    edit: impl Fn(&str) -> String,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = root().join("scenarios/traces");
    let text = std::fs::read_to_string(src.join(format!("{name}.toml"))).expect("scenario");
    let scenario = dir.path().join(format!("{name}.toml"));
    std::fs::write(&scenario, text).expect("write");
    let from = src.join(name);
    std::fs::create_dir(dir.path().join(name)).expect("mkdir");
    for entry in std::fs::read_dir(&from).expect("samples") {
        let path = entry.expect("entry").path();
        let body = std::fs::read_to_string(&path).expect("read");
        let body = if path.file_name().is_some_and(|f| f == file) {
            edit(&body)
        } else {
            body
        };
        std::fs::write(
            dir.path().join(name).join(path.file_name().expect("name")),
            body,
        )
        .expect("write");
    }
    (dir, scenario)
}

#[test]
fn a_bad_row_names_file_line_and_column_and_lenient_skips_it() {
    // Line 13 gets an event type the format does not have.
    let (_dir, path) = with_trace("google-2011", "task_events.csv", |body| {
        body.replacen(
            "700000000,,6252034500,0,,0,",
            "700000000,,6252034500,0,,9,",
            1,
        )
    });
    let s = load_file(&path);
    let e = match execute(&s, &RunOptions::default()) {
        Ok(_) => panic!("the run must stop at the bad row"),
        Err(e) => e.to_string(),
    };
    let trace = path
        .parent()
        .expect("dir")
        .join("google-2011/task_events.csv");
    assert!(
        e.contains(&format!(
            "{}:13:26: field 6 (event type): must be an event type from 0 to 8, got 9",
            trace.display()
        )),
        "{e}"
    );
    // dcemu validate reads it through and says the same.
    let v = streams::scan(&s).expect_err("bad row").to_string();
    assert!(
        v.starts_with(&format!("{}:13:26: field 6", trace.display())),
        "{v}"
    );

    let mut lenient = load_file(&path);
    assert_eq!(streams::set_lenient(&mut lenient), 1);
    let o = run(&lenient);
    assert_eq!(counter(&o, "trace_rows_skipped"), 1);
    // The KILL of the skipped task is then about a task never submitted:
    // ignored; every other task is as in the sample.
    assert_eq!(counter(&o, "tasks_submitted"), 7);
    assert_eq!(counter(&o, "trace_tasks_dropped"), 0);
    assert!(lenient.to_toml().contains("lenient = true"));
    let counts = streams::scan(&lenient).expect("lenient");
    assert_eq!(counts[0].1.rows_skipped, 1);
    assert_eq!(counts[0].1.events_ignored, 1);
}

#[test]
fn unsorted_and_malformed_rows_of_each_format_are_errors() {
    type Case = (&'static str, &'static str, fn(&str) -> String, &'static str);
    let cases: [Case; 4] = [
        (
            "alibaba-2018",
            "batch_task.csv",
            |b| {
                b.replacen(
                    "M1,8,j_1002,12,Terminated,170,",
                    "M1,8,j_1002,12,Terminated,110,",
                    1,
                )
            },
            ":2:27: field 6 (start_time): 110 s is earlier than 120 s on line 1",
        ),
        (
            "swf",
            "sample.swf",
            |b| {
                b.replacen(
                    "    2     30      0     45     1",
                    "    2     30      0     45   one",
                    1,
                )
            },
            ":24:30: field 5 (allocated processors)",
        ),
        (
            "azure-vm",
            "vmtable.csv",
            |b| b.replacen(",Unknown,2,4", ",Batch,2,4", 1),
            ":3:",
        ),
        (
            "google-2019",
            "instance_events.json",
            |b| b.replacen("\"priority\":116", "\"priority\":999", 1),
            ":14:",
        ),
    ];
    for (name, file, edit, expect) in cases {
        let (_dir, path) = with_trace(name, file, edit);
        let s = load_file(&path);
        let e = streams::scan(&s).expect_err(name).to_string();
        if name == "swf" {
            let before = streams::check_before_run(&s).expect_err("swf is read before a run");
            assert_eq!(before.to_string(), e);
        }
        assert!(e.contains(&format!("{file}{expect}")), "{name}: {e}");
    }
}

/// Issue 41: an SWF job of more processors than the scenario's whole
/// machine stops the scenario before it runs, naming its line and field;
/// with `lenient` it is skipped and counted, and the rest runs.
#[test]
fn an_swf_job_larger_than_the_machine_is_refused_before_the_run() {
    let (_dir, path) = with_trace("swf", "sample.swf", |b| {
        b.replacen(
            "    2     30      0     45     1",
            "    2     30      0     45   512",
            1,
        )
    });
    let label = path.display().to_string();
    let text = std::fs::read_to_string(&path).expect("scenario");
    let s = load_file(&path);
    let e = streams::check_before_run(&s)
        .expect_err("too large")
        .to_string();
    assert!(
        e.contains(
            "sample.swf:24:30: field 5 (allocated processors): the job needs 512 processors"
        ),
        "{e}"
    );
    assert!(e.contains("more than the whole machine's"), "{e}");
    let s = scenario(&label, &text, &["tenants.0.arrivals.lenient=true"]);
    let counts = streams::scan(&s).expect("lenient scan");
    assert_eq!(counts[0].1.rows_skipped, 1, "{counts:?}");
    let o = run_with(&s, 1);
    assert_no_task_lost(&o, "lenient swf");
    assert_eq!(metric(&o, "trace_rows_skipped"), 1.0);
}

#[test]
fn gz_input_reads_as_the_plain_file() {
    use std::io::Write;
    let (dir, path) = with_trace("swf", "sample.swf", str::to_string);
    let plain = dir.path().join("swf/sample.swf");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&std::fs::read(&plain).expect("read"))
        .expect("compress");
    std::fs::write(
        dir.path().join("swf/sample.swf.gz"),
        gz.finish().expect("gz"),
    )
    .expect("write");
    let text = std::fs::read_to_string(&path)
        .expect("scenario")
        .replace("swf/sample.swf\"", "swf/sample.swf.gz\"");
    let gz_path = dir.path().join("swf-gz.toml");
    std::fs::write(&gz_path, text).expect("write");
    let a = run(&load_file(&path));
    let b = run(&load_file(&gz_path));
    assert_eq!(a.metrics, b.metrics);
}

#[test]
fn streamed_traces_refuse_what_they_cannot_do_and_feed_wasc() {
    let text =
        std::fs::read_to_string(root().join("scenarios/traces/azure-vm.toml")).expect("read");
    let label = root()
        .join("scenarios/traces/azure-vm.toml")
        .display()
        .to_string();
    // WASC reads every task before the run (the tenant still streams).
    let s = load(
        &label,
        &text,
        &["scheduler.slot_config=wasc".parse().expect("override")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run(&s);
    assert_no_task_lost(&o, "azure-vm + wasc");
    assert_eq!(counter(&o, "tasks_submitted"), 5);
    let e = load(
        &label,
        &text,
        &["tenants.0.arrivals.machines=x.csv"
            .parse()
            .expect("override")],
    )
    .expect_err("no machine table")
    .to_string();
    assert!(e.contains("has no machine table"), "{e}");
    let e = load(
        &label,
        &text,
        &["tenants.0.arrivals.lookahead=1h".parse().expect("override")],
    )
    .expect_err("lookahead")
    .to_string();
    assert!(e.contains("only for the Google and Alibaba formats"), "{e}");
}

/// Writes a synthetic Google 2011 `task_events` file of about `bytes` bytes
/// in time order: 50 tasks/s of trace time, each SUBMIT, SCHEDULE 1 s later
/// and FINISH 1-600 s after that; every 1000th task never finishes (it
/// exercises the lookahead). Returns the number of tasks.
fn write_big_google_2011(path: &Path, bytes: u64) -> u64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::io::Write;
    let file = std::fs::File::create(path).expect("create");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut written = 0u64;
    // (time µs, event type, task, finish time or 0), earliest first
    let mut pending: BinaryHeap<Reverse<(u64, u8, u64, u64)>> = BinaryHeap::new();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut task = 0u64;
    let mut line = String::new();
    let mut emit = |line: &str, written: &mut u64| {
        out.write_all(line.as_bytes()).expect("write");
        *written += line.len() as u64;
    };
    while written < bytes {
        let t = 600_000_000 + task * 20_000; // µs: 50 tasks a second
        while let Some(Reverse((at, kind, id, finish))) = pending.peek().copied() {
            if at > t {
                break;
            }
            pending.pop();
            line.clear();
            line.push_str(&format!(
                "{at},,{},{},{},{kind},dXNlcg==,1,{},,,,\n",
                id / 8,
                id % 8,
                id % 4096,
                id % 12
            ));
            emit(&line, &mut written);
            if finish > 0 {
                pending.push(Reverse((finish, 4, id, 0)));
            }
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let (job, prio) = (task / 8, task % 12);
        let cpu = 0.015625 * (1 + state % 8) as f64;
        line.clear();
        line.push_str(&format!(
            "{t},,{job},{},,0,dXNlcg==,1,{prio},{cpu},0.0159,0.0001,0\n",
            task % 8
        ));
        emit(&line, &mut written);
        let start = t + 1_000_000;
        let finish = if task % 1000 == 999 {
            0
        } else {
            start + 1_000_000 * (1 + (state >> 8) % 600)
        };
        pending.push(Reverse((start, 1, task, finish)));
        task += 1;
    }
    out.flush().expect("flush");
    task
}

/// The bounded-memory figure of docs/performance.md: writes a 1 GB
/// Google 2011 trace and a scenario replaying it into `DCEMU_BIG_TRACE_DIR`
/// (default: a temp dir, removed after), then reads it through. Measure
/// the peak RSS with `/usr/bin/time -v dcemu validate <dir>/big.toml`.
/// Run: `DCEMU_BIG_TRACE_DIR=/tmp/big cargo test -p dcemu-tests --test
/// traces -- --ignored big_trace`.
#[test]
#[ignore = "writes a 1 GB file: a benchmark, run by hand (docs/performance.md)"]
fn big_trace_streams_in_bounded_memory() {
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = std::env::var_os("DCEMU_BIG_TRACE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("dir");
    let trace = dir.join("task_events.csv");
    let bytes: u64 = std::env::var("DCEMU_BIG_TRACE_BYTES")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(1 << 30);
    let tasks = write_big_google_2011(&trace, bytes);
    let scenario = dir.join("big.toml");
    std::fs::write(
        &scenario,
        "[run]\nname = \"big-trace\"\nend = \"2h\"\n[topology]\nkind = \"flat\"\nlink_latency = \"50us\"\n\
         [scheduler]\nplacement = \"least-loaded\"\n[output]\ndir = \"results\"\nactor_logs = false\n\
         [[server_types]]\nname = \"borg\"\ncount = 200\ncores = 16\nslots = 16\nmemory_gb = 64.0\n\
         [[tenants]]\nname = \"borg\"\n[tenants.arrivals]\nprocess = \"trace\"\nformat = \"google-2011\"\ntrace = \"task_events.csv\"\n",
    )
    .expect("scenario");
    let s = load_file(&scenario);
    let counts = streams::scan(&s).expect("good trace");
    let st = counts[0].1;
    assert_eq!(st.tasks + st.tasks_dropped, tasks);
    eprintln!(
        "{}: {} bytes, {} lines, {tasks} tasks ({} unfinished)",
        trace.display(),
        std::fs::metadata(&trace).map_or(0, |m| m.len()),
        st.lines,
        st.tasks_unfinished
    );
}
