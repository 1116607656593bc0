use super::*;
use dcemu_actors::config::{PrimaryTenantConfig, TenantConfig};

fn set(s: &str) -> Override {
    s.parse().unwrap()
}

fn errors(text: &str, overrides: &[Override]) -> Vec<ScenarioError> {
    load("bad.toml", text, overrides).unwrap_err().0
}

const MINIMAL: &str = r#"
[run]
name = "t"
end = "10m"

[[server_types]]
name = "a"
count = 2

[[tenants]]
name = "w"
arrivals = { process = "poisson", rate_per_s = 1.0 }
service = { distribution = "constant", mean = "5s" }
"#;

#[test]
fn the_embedded_quickstart_is_valid() {
    let s = load(QUICKSTART_LABEL, QUICKSTART, &[]).unwrap();
    assert_eq!(s.run.name, "quickstart");
}

#[test]
fn defaults_fill_in_optional_fields() {
    let s = load("m.toml", MINIMAL, &[]).unwrap();
    assert_eq!(s.run.seed, 1);
    assert_eq!(s.topology.link_latency, Duration::from_micros(50));
    assert_eq!(s.server_types[0].slots, 1);
    assert_eq!(s.output.dir, "results");
    assert!(s.output.actor_logs);
}

#[test]
fn a_misspelled_key_is_named_with_its_line() {
    let text = MINIMAL.replace("name = \"t\"", "name = \"t\"\nseeed = 4");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("run.seeed"));
    assert_eq!(
        e.origin,
        Origin::File {
            path: "bad.toml".into(),
            at: Some((4, 1))
        }
    );
    assert!(e.problem.contains("unknown field \"seeed\""), "{e}");
    assert!(
        e.to_string()
            .starts_with("bad.toml:4:1: field `run.seeed`: unknown field"),
        "{e}"
    );
}

#[test]
fn negative_and_unparsable_durations_are_refused_with_the_field() {
    for (bad, word) in [
        ("-5m", "negative"),
        ("ten minutes", "expected a number"),
        ("5", "unit"),
    ] {
        let text = MINIMAL.replace("end = \"10m\"", &format!("end = \"{bad}\""));
        let e = &errors(&text, &[])[0];
        assert_eq!(e.field.as_deref(), Some("run.end"), "{e}");
        assert!(e.problem.contains(word), "{bad}: {e}");
        assert!(
            matches!(
                e.origin,
                Origin::File {
                    at: Some((4, _)),
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn a_missing_required_field_is_named() {
    let text = MINIMAL.replace("name = \"t\"\n", "");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("run.name"), "{e}");
    assert!(e.problem.contains("missing field \"name\""), "{e}");
    let text = MINIMAL.replace("[[server_types]]\nname = \"a\"\ncount = 2\n", "");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("server_types"), "{e}");
}

#[test]
fn wrong_types_and_enum_values_are_refused() {
    let text = MINIMAL.replace("count = 2", "count = \"two\"");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("server_types[0].count"), "{e}");
    let text = MINIMAL.replace("\"poisson\"", "\"poison\"");
    let e = &errors(&text, &[])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("tenants[0].arrivals.process"),
        "{e}"
    );
    assert!(e.problem.contains("poisson"), "lists the valid values: {e}");
}

#[test]
fn value_problems_are_all_reported_with_lines() {
    let text = MINIMAL
        .replace("rate_per_s = 1.0", "rate_per_s = 0.0")
        .replace("count = 2", "count = 2\nslots = 0");
    let errs = errors(&text, &[]);
    let fields: Vec<_> = errs.iter().map(|e| e.field.clone().unwrap()).collect();
    assert_eq!(
        fields,
        ["server_types[0].slots", "tenants[0].arrivals.rate_per_s"]
    );
    assert!(
        matches!(
            errs[0].origin,
            Origin::File {
                at: Some((9, 9)),
                ..
            }
        ),
        "{}",
        errs[0]
    );
    assert!(
        matches!(
            errs[1].origin,
            Origin::File {
                at: Some((13, _)),
                ..
            }
        ),
        "{}",
        errs[1]
    );
}

#[test]
fn invalid_toml_gets_a_line() {
    let e = &errors("[run\nname = 1", &[])[0];
    assert!(e.problem.starts_with("not valid TOML"), "{e}");
    assert!(
        matches!(
            e.origin,
            Origin::File {
                at: Some((1, _)),
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn overrides_set_scalars_by_dotted_path() {
    let s = load(
        "m.toml",
        MINIMAL,
        &[
            set("run.end=2h"),
            set("run.seed=9"),
            set("scheduler.placement=random"),
            set("tenants.0.arrivals.rate_per_s=2.5"),
            set("run.name=123"),
            set("output.actor_logs=false"),
        ],
    )
    .unwrap();
    assert_eq!(s.run.end, Duration::from_secs(7200));
    assert_eq!(s.run.seed, 9);
    assert_eq!(s.tenants[0].arrivals.rate_per_s, Some(2.5));
    assert_eq!(
        s.run.name, "123",
        "a bare number becomes a string where a string is expected"
    );
    assert!(!s.output.actor_logs);
}

#[test]
fn override_problems_name_the_flag() {
    let e = &errors(MINIMAL, &[set("run.seeed=5")])[0];
    assert_eq!(e.origin, Origin::Override("run.seeed=5".into()));
    assert!(e.problem.contains("unknown field \"seeed\""), "{e}");
    let e = &errors(MINIMAL, &[set("run.end=abc")])[0];
    assert_eq!(e.origin, Origin::Override("run.end=abc".into()));
    assert!(
        e.to_string()
            .starts_with("--set run.end=abc: field `run.end`"),
        "{e}"
    );
    let e = &errors(MINIMAL, &[set("tenants.0.arrivals.rate_per_s=-1")])[0];
    assert_eq!(
        e.origin,
        Origin::Override("tenants.0.arrivals.rate_per_s=-1".into())
    );
    for (flag, word) in [
        ("tenants.3.count=1", "no entry 3"),
        ("tenants.count=1", "by index"),
        ("run=5", "scalar"),
        ("run.end.x=5", "single value"),
    ] {
        let e = &errors(MINIMAL, &[set(flag)])[0];
        assert!(e.problem.contains(word), "{flag}: {e}");
        assert_eq!(e.origin, Origin::Override(flag.into()));
    }
}

#[test]
fn a_rate_scale_or_cpu_sharing_that_cannot_be_used_is_named() {
    let e = &errors(MINIMAL, &[set("tenants.0.arrivals.rate_scale=0")])[0];
    assert!(
        e.to_string().contains("arrivals.rate_scale") && e.problem.contains("positive factor"),
        "{e}"
    );
    let e = &errors(MINIMAL, &[set("scheduler.cpu_sharing=fair")])[0];
    assert!(
        e.problem.contains("cores") && e.problem.contains("free-capacity"),
        "{e}"
    );
    let ok = load(
        "ok.toml",
        MINIMAL,
        &[
            set("tenants.0.arrivals.rate_scale=2.5"),
            set("scheduler.cpu_sharing=free-capacity"),
        ],
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn malformed_override_flags_are_refused() {
    assert!(
        "run.end"
            .parse::<Override>()
            .unwrap_err()
            .contains("KEY=VALUE")
    );
    assert!("run..end=1".parse::<Override>().is_err());
    assert!(
        "run.end=[1,2]"
            .parse::<Override>()
            .unwrap_err()
            .contains("single value")
    );
}

#[test]
fn the_scenario_as_run_loads_back_identically() {
    let s = load(QUICKSTART_LABEL, QUICKSTART, &[set("run.seed=42")]).unwrap();
    let text = s.to_toml();
    assert!(text.starts_with("# Scenario as run by dcemu"));
    assert_eq!(load("as-run.toml", &text, &[]).unwrap(), s);
}

#[test]
fn names_that_would_escape_the_results_directory_are_refused() {
    let e = &errors(MINIMAL, &[set("run.name=../x")])[0];
    assert_eq!(e.field.as_deref(), Some("run.name"));
}

const GOOGLE: &str = r#"
[run]
name = "g"
end = "10m"

[[server_types]]
name = "a"
count = 2

[[tenants]]
name = "w"
arrivals = { process = "poisson", rate_per_s = 1.0 }
google_memory_gb = 64.0
"#;

fn fields(errs: &[ScenarioError]) -> Vec<String> {
    errs.iter()
        .map(|e| e.field.clone().unwrap_or_default())
        .collect()
}

#[test]
fn google_class_mix_is_tasks_or_arrivals_and_needs_the_table_5_2_generator() {
    let s = load("g.toml", GOOGLE, &[]).unwrap();
    assert_eq!(s.tenants[0].google_class_mix, None);
    let s = load(
        "g.toml",
        GOOGLE,
        &[set("tenants.0.google_class_mix=arrivals")],
    )
    .unwrap();
    assert_eq!(
        s.tenants[0].google_class_mix,
        Some(dcemu_actors::google::ClassMix::Arrivals)
    );
    let e = &errors(GOOGLE, &[set("tenants.0.google_class_mix=submits")])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("tenants[0].google_class_mix"),
        "{e}"
    );
    let text = MINIMAL.replace("service = {", "google_class_mix = \"tasks\"\nservice = {");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("tenants[0].google_class_mix"));
    assert!(e.problem.contains("only with `google_memory_gb`"), "{e}");
}

/// A Table 5.2 generator factor `field`: absent by default, taken as
/// given, refused when not a positive finite number and without
/// `google_memory_gb`, the field named each time.
fn check_positive_google_factor(field: &str, value: impl Fn(&TenantConfig) -> Option<f64>) {
    let s = load("g.toml", GOOGLE, &[]).unwrap();
    assert_eq!(value(&s.tenants[0]), None);
    let s = load("g.toml", GOOGLE, &[set(&format!("tenants.0.{field}=1.3"))]).unwrap();
    assert_eq!(value(&s.tenants[0]), Some(1.3));
    let named = format!("tenants[0].{field}");
    for bad in ["0", "-1", "nan", "inf"] {
        let errs = errors(GOOGLE, &[set(&format!("tenants.0.{field}={bad}"))]);
        assert_eq!(fields(&errs), vec![named.as_str()], "{bad}: {errs:?}");
    }
    let text = MINIMAL.replace("service = {", &format!("{field} = 1.3\nservice = {{"));
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some(named.as_str()));
    assert!(e.problem.contains("only with `google_memory_gb`"), "{e}");
}

#[test]
fn google_demand_scale_is_a_positive_factor_for_the_table_5_2_generator() {
    check_positive_google_factor("google_demand_scale", |t| t.google_demand_scale);
}

#[test]
fn google_class0_demand_scale_is_a_positive_factor_for_the_table_5_2_generator() {
    check_positive_google_factor("google_class0_demand_scale", |t| {
        t.google_class0_demand_scale
    });
}

#[test]
fn google_demand_cv_is_at_least_one_for_the_table_5_2_generator() {
    check_google_cv("google_demand_cv", |t| t.google_demand_cv);
}

#[test]
fn google_class0_demand_cv_is_at_least_one_for_the_table_5_2_generator() {
    check_google_cv("google_class0_demand_cv", |t| t.google_class0_demand_cv);
}

/// A coefficient of variation of the Table 5.2 generator: unset by
/// default, read when set, refused below 1 or not finite with the field
/// named, and refused without `google_memory_gb`.
fn check_google_cv(field: &str, get: impl Fn(&TenantConfig) -> Option<f64>) {
    let s = load("g.toml", GOOGLE, &[]).unwrap();
    assert_eq!(get(&s.tenants[0]), None);
    let s = load("g.toml", GOOGLE, &[set(&format!("tenants.0.{field}=2.5"))]).unwrap();
    assert_eq!(get(&s.tenants[0]), Some(2.5));
    for bad in ["0.5", "0", "-1", "nan", "inf"] {
        let errs = errors(GOOGLE, &[set(&format!("tenants.0.{field}={bad}"))]);
        assert_eq!(
            fields(&errs),
            vec![format!("tenants[0].{field}")],
            "{bad}: {errs:?}"
        );
        assert!(errs[0].problem.contains("at least 1"), "{bad}: {errs:?}");
    }
    let text = MINIMAL.replace("service = {", &format!("{field} = 2.0\nservice = {{"));
    let e = &errors(&text, &[])[0];
    assert_eq!(
        e.field.as_deref(),
        Some(format!("tenants[0].{field}").as_str())
    );
    assert!(e.problem.contains("only with `google_memory_gb`"), "{e}");
}

#[test]
fn google_reference_cores_defaults_to_8_and_needs_the_table_5_2_generator() {
    let s = load("g.toml", GOOGLE, &[]).unwrap();
    assert_eq!(s.tenants[0].google_reference_cores, None);
    let s = load(
        "g.toml",
        GOOGLE,
        &[set("tenants.0.google_reference_cores=4")],
    )
    .unwrap();
    assert_eq!(s.tenants[0].google_reference_cores, Some(4));
    let e = &errors(GOOGLE, &[set("tenants.0.google_reference_cores=0")])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("tenants[0].google_reference_cores")
    );
    assert!(e.problem.contains("at least 1"), "{e}");
    let text = MINIMAL.replace("service = {", "google_reference_cores = 8\nservice = {");
    let e = &errors(&text, &[])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("tenants[0].google_reference_cores")
    );
    assert!(e.problem.contains("only with `google_memory_gb`"), "{e}");
    assert!(
        matches!(
            e.origin,
            Origin::File {
                at: Some((13, _)),
                ..
            }
        ),
        "{e}"
    );
}

const SYNTHETIC: &str = r#"
[run]
name = "s"
end = "10m"

[[server_types]]
name = "a"
count = 2

[[tenants]]
name = "w"
arrivals = { process = "poisson", rate_per_s = 1.0 }
synthetic = { memory_gb = 64.0 }
"#;

#[test]
fn the_synthetic_generator_defaults_to_table_9_4() {
    let s = load("s.toml", SYNTHETIC, &[]).unwrap();
    let g = s.tenants[0].synthetic.as_ref().unwrap();
    assert_eq!(g.reference_cores, 8);
    assert_eq!((g.cpu_usage, g.memory_usage), (0.01, 0.01));
    assert_eq!(
        (g.production_cpu_usage, g.production_memory_usage),
        (0.02, 0.02)
    );
    assert_eq!(g.execution, Duration::from_secs(3400));
    assert_eq!(g.production_execution, Duration::from_secs(27200));
    assert_eq!(g.production_priority, 9);
    let text = s.to_toml();
    assert_eq!(load("as-run.toml", &text, &[]).unwrap(), s);
}

#[test]
fn bad_synthetic_fields_are_named() {
    let text = SYNTHETIC.replace(
        "{ memory_gb = 64.0 }",
        "{ memory_gb = 0.0, reference_cores = 0, cpu_usage = -0.1, memory_usage = -1.0, execution = \"0s\", production_cpu_usage = 0.0, production_execution = \"0s\", production_priority = 12 }",
    );
    let errs = errors(&text, &[]);
    assert_eq!(
        fields(&errs),
        [
            "tenants[0].synthetic.memory_gb",
            "tenants[0].synthetic.reference_cores",
            "tenants[0].synthetic.cpu_usage",
            "tenants[0].synthetic.production_cpu_usage",
            "tenants[0].synthetic.memory_usage",
            "tenants[0].synthetic.execution",
            "tenants[0].synthetic.production_execution",
            "tenants[0].synthetic.production_priority",
        ]
    );
    assert!(
        errs.iter().all(|e| matches!(
            e.origin,
            Origin::File {
                at: Some((13, _)),
                ..
            }
        )),
        "{errs:?}"
    );
    let text = SYNTHETIC.replace("{ memory_gb = 64.0 }", "{ cpu_usage = 0.01 }");
    let e = &errors(&text, &[])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("tenants[0].synthetic.memory_gb"),
        "{e}"
    );
    assert!(e.problem.contains("missing field \"memory_gb\""), "{e}");
    let text = SYNTHETIC.replace("memory_gb = 64.0 }", "memory_gb = 64.0, cpu = 0.1 }");
    let e = &errors(&text, &[])[0];
    assert!(e.problem.contains("unknown field \"cpu\""), "{e}");
}

#[test]
fn generators_exclude_each_other_and_plain_settings() {
    for (extra, field) in [
        ("priority = 3", "tenants[0].synthetic"),
        (
            "service = { distribution = \"constant\", mean = \"5s\" }",
            "tenants[0].synthetic",
        ),
        ("applications = \"random\"", "tenants[0].synthetic"),
        ("google_memory_gb = 64.0", "tenants[0].google_memory_gb"),
        (
            "google_reference_cores = 8",
            "tenants[0].google_reference_cores",
        ),
    ] {
        let text = format!("{SYNTHETIC}{extra}\n");
        let errs = errors(&text, &[]);
        assert!(
            fields(&errs).contains(&field.to_string()),
            "{extra}: {errs:?}"
        );
    }
    let text = GOOGLE.replace(
        "process = \"poisson\", rate_per_s = 1.0",
        "process = \"trace\", trace = \"t.csv\"",
    );
    let errs = errors(&text, &[]);
    assert!(
        errs.iter()
            .any(|e| e.field.as_deref() == Some("tenants[0].arrivals.trace")
                && e.problem
                    .contains("remove `service`, `applications`, `google_memory_gb`")),
        "{errs:?}"
    );
}

const MAPREDUCE: &str = r#"
[run]
name = "mr"
end = "10m"

[[server_types]]
name = "a"
count = 4
slots = 64
cores = 8

[[tenants]]
name = "w"
arrivals = { process = "poisson", rate_per_s = 0.5 }
mapreduce = { memory_gb = 64.0 }
"#;

#[test]
fn the_mapreduce_generator_has_defaults_and_round_trips() {
    let s = load("mr.toml", MAPREDUCE, &[]).unwrap();
    let g = s.tenants[0].mapreduce.as_ref().unwrap();
    assert_eq!((g.memory_gb, g.reference_cores), (64.0, 8));
    assert_eq!(g.tasks_per_job, 10.0);
    let s = load(
        "mr.toml",
        MAPREDUCE,
        &[set("tenants.0.mapreduce.tasks_per_job=2.5")],
    )
    .unwrap();
    assert_eq!(s.tenants[0].mapreduce.as_ref().unwrap().tasks_per_job, 2.5);
    assert_eq!(load("as-run.toml", &s.to_toml(), &[]).unwrap(), s);
}

#[test]
fn bad_mapreduce_fields_are_named() {
    let text = MAPREDUCE.replace(
        "{ memory_gb = 64.0 }",
        "{ memory_gb = -1.0, reference_cores = 0, tasks_per_job = 0.5 }",
    );
    let errs = errors(&text, &[]);
    assert_eq!(
        fields(&errs),
        [
            "tenants[0].mapreduce.memory_gb",
            "tenants[0].mapreduce.reference_cores",
            "tenants[0].mapreduce.tasks_per_job",
        ]
    );
    assert!(
        errs.iter().all(|e| matches!(
            e.origin,
            Origin::File {
                at: Some((15, _)),
                ..
            }
        )),
        "{errs:?}"
    );
    assert!(
        errs[2].problem.contains("between 1 and 10000"),
        "{}",
        errs[2]
    );
    for flag in [
        "tenants.0.mapreduce.tasks_per_job=20000",
        "tenants.0.mapreduce.tasks_per_job=nan",
    ] {
        let e = &errors(MAPREDUCE, &[set(flag)])[0];
        assert_eq!(
            e.field.as_deref(),
            Some("tenants[0].mapreduce.tasks_per_job"),
            "{e}"
        );
    }
    let text = MAPREDUCE.replace("{ memory_gb = 64.0 }", "{ tasks_per_job = 3.0 }");
    let e = &errors(&text, &[])[0];
    assert_eq!(e.field.as_deref(), Some("tenants[0].mapreduce.memory_gb"));
    assert!(e.problem.contains("missing field \"memory_gb\""), "{e}");
    let text = MAPREDUCE.replace("memory_gb = 64.0 }", "memory_gb = 64.0, tasks = 3 }");
    let e = &errors(&text, &[])[0];
    assert!(e.problem.contains("unknown field \"tasks\""), "{e}");
}

#[test]
fn mapreduce_excludes_other_work_flows_and_traces() {
    for (extra, field) in [
        ("priority = 3", "tenants[0].mapreduce"),
        (
            "service = { distribution = \"constant\", mean = \"5s\" }",
            "tenants[0].mapreduce",
        ),
        ("applications = \"random\"", "tenants[0].mapreduce"),
        ("google_memory_gb = 64.0", "tenants[0].mapreduce"),
        ("synthetic = { memory_gb = 64.0 }", "tenants[0].mapreduce"),
        ("flow_bandwidth = \"10Mbps\"", "tenants[0].flow_bandwidth"),
    ] {
        let text = format!("{MAPREDUCE}{extra}\n");
        let errs = errors(&text, &[]);
        assert!(
            fields(&errs).contains(&field.to_string()),
            "{extra}: {errs:?}"
        );
    }
    let e = errors(
        MAPREDUCE,
        &[
            set("tenants.0.mapreduce.memory_gb=64"),
            set("tenants.0.priority=2"),
        ],
    );
    assert!(
        e.iter().any(|e| e
            .problem
            .contains("draw their class, work and memory from Table 5.2")),
        "{e:?}"
    );
    let text = MAPREDUCE.replace(
        "process = \"poisson\", rate_per_s = 0.5",
        "process = \"trace\", trace = \"t.csv\"",
    );
    let errs = errors(&text, &[]);
    assert!(
        errs.iter()
            .any(|e| e.field.as_deref() == Some("tenants[0].arrivals.trace")
                && e.problem.contains("`mapreduce`")),
        "{errs:?}"
    );
}

#[test]
fn a_mapreduce_tenant_submits_whole_jobs_master_first() {
    let s = load("mr.toml", MAPREDUCE, &[set("run.end=30m")]).unwrap();
    let out = crate::run::execute(&s, &crate::run::RunOptions::default()).unwrap();
    let log = out
        .results
        .read("actors/tenant-w-0.jsonl")
        .unwrap()
        .unwrap();
    let submits: Vec<serde_json::Value> = std::str::from_utf8(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "task_submit")
        .collect();
    assert!(!submits.is_empty());
    // (job id, arrival instant, tasks)
    let mut jobs: Vec<(u64, u64, u64)> = Vec::new();
    let mut usage = 0.0;
    for (i, v) in submits.iter().enumerate() {
        let task = v["task"].as_u64().unwrap();
        assert_eq!(task, i as u64, "tasks are numbered in submission order");
        let job = v["job"].as_u64().expect("every task names its job");
        let t = v["t_ns"].as_u64().unwrap();
        let cpu_ppm = v["cpu_ppm"].as_u64().expect("every task has a requirement");
        assert!((100..=1_000_000).contains(&cpu_ppm), "{v}");
        usage += cpu_ppm as f64 / 1e6;
        match jobs.last_mut() {
            Some((id, at, n)) if *id == job => {
                assert_eq!(*at, t, "a job's tasks arrive together: {v}");
                *n += 1;
            }
            _ => {
                assert_eq!(job, task, "the master comes first and names the job: {v}");
                assert!(jobs.iter().all(|j| j.0 != job), "job {job} split");
                jobs.push((job, t, 1));
            }
        }
    }
    assert_eq!(out.metrics["jobs_submitted"], jobs.len() as u64);
    assert_eq!(out.metrics["tasks_submitted"], submits.len() as u64);
    assert!(jobs.len() > 500, "{}", jobs.len());
    let per_job = submits.len() as f64 / jobs.len() as f64;
    assert!(
        (per_job / 10.0 - 1.0).abs() < 0.2,
        "{per_job} tasks per job"
    );
    // Table 5.2's usages weighted by class share: 0.0152
    let usage = usage / submits.len() as f64;
    assert!(
        (usage / 0.01516 - 1.0).abs() < 0.1,
        "mean requirement {usage}"
    );
}

/// Two primary tenants (3 servers at 0.2, 1 at 0.6) and a third that
/// scales itself.
const PRIMARIES: &str = r#"
[run]
name = "t"
end = "10m"

[[server_types]]
name = "a"
count = 6

[[primary_tenants]]
name = "low"
servers = 3
pattern = "constant"
mean = 0.2

[[primary_tenants]]
name = "high"
servers = 1
pattern = "constant"
mean = 0.6

[[primary_tenants]]
name = "own"
servers = 2
pattern = "constant"
mean = 0.5
scaling = "root"
scale = 3.0
"#;

fn nominal(tenants: &[PrimaryTenantConfig]) -> f64 {
    let servers: f64 = tenants.iter().map(|t| f64::from(t.servers)).sum();
    tenants
        .iter()
        .map(|t| f64::from(t.servers) * t.scaled(t.nominal_mean()))
        .sum::<f64>()
        / servers
}

#[test]
fn primary_scaling_fills_only_tenants_without_their_own() {
    let s = load("p.toml", PRIMARIES, &[set("primary_scaling.factor=2")]).unwrap();
    let (tenants, factor) = s.scaled_primary_tenants().unwrap();
    assert_eq!(factor, Some(2.0));
    assert!((tenants[0].scaled(0.2) - 0.4).abs() < 1e-12);
    assert!((tenants[1].scaled(0.6) - 1.0).abs() < 1e-12, "saturates");
    assert_eq!(
        tenants[2].scaling,
        Some(dcemu_actors::config::UtilScaling::Root)
    );
    assert_eq!(tenants[2].scale, Some(3.0));
    // the scenario keeps what was written, so a replay solves it again
    assert_eq!(s.primary_tenants[0].scale, None);
    let (unscaled, none) = load("p.toml", PRIMARIES, &[])
        .unwrap()
        .scaled_primary_tenants()
        .unwrap();
    assert_eq!(none, None);
    assert!((unscaled[0].scaled(0.2) - 0.2).abs() < 1e-12);
}

#[test]
fn a_target_utilisation_is_reached_by_either_scaling() {
    for method in ["linear", "root"] {
        let s = load(
            "p.toml",
            PRIMARIES,
            &[
                set(&format!("primary_scaling.method={method}")),
                set("primary_scaling.target=0.55"),
            ],
        )
        .unwrap();
        let (tenants, factor) = s.scaled_primary_tenants().unwrap();
        let factor = factor.unwrap();
        assert!(factor > 1.0, "{method}: scaling up, got {factor}");
        assert!((nominal(&tenants) - 0.55).abs() < 1e-9, "{method}");
    }
}

#[test]
fn bad_primary_scaling_is_refused_with_its_field() {
    let cases: [(&[&str], &str, &str); 4] = [
        (
            &["primary_scaling.factor=0"],
            "primary_scaling.factor",
            "positive",
        ),
        (
            &["primary_scaling.target=1.2"],
            "primary_scaling.target",
            "between 0 and 1",
        ),
        (
            &["primary_scaling.target=0.5", "primary_scaling.factor=2"],
            "primary_scaling.target",
            "not both",
        ),
        // the self-scaled tenant alone keeps the nominal mean above 0.26
        (
            &["primary_scaling.target=0.01"],
            "primary_scaling.target",
            "can only reach",
        ),
    ];
    for (sets, field, problem) in cases {
        let overrides: Vec<Override> = sets.iter().map(|s| set(s)).collect();
        let e = errors(PRIMARIES, &overrides);
        assert!(
            e.iter()
                .any(|e| e.field.as_deref() == Some(field) && e.problem.contains(problem)),
            "{sets:?}: {e:?}"
        );
    }
    let e = errors(MINIMAL, &[set("primary_scaling.factor=2")]);
    assert_eq!(e[0].field.as_deref(), Some("primary_scaling"));
    assert!(e[0].problem.contains("no [[primary_tenants]]"), "{e:?}");
}

#[test]
fn the_refusal_table_is_the_one_docs_scheduler_md_shows() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scheduler.md"))
            .unwrap();
    let section = docs
        .split("## What is refused, and why")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| combination"))
        .collect();
    assert_eq!(rows.len(), super::refusals::REFUSALS.len(), "{rows:#?}");
    for r in super::refusals::REFUSALS {
        assert!(
            rows.iter()
                .any(|row| row.starts_with(&format!("| {} |", r.combination))),
            "docs/scheduler.md has no row for {}",
            r.combination
        );
    }
}

#[test]
fn a_refused_combination_names_its_field_and_the_tables_reason() {
    let e = errors(MINIMAL, &[set("scheduler.placement=gems")]);
    let row = &super::refusals::REFUSALS[0];
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.placement")
                && e.problem.contains(row.reason)),
        "{e:?}"
    );
    let e = errors(MINIMAL, &[set("scheduler.sticky_slots=4")]);
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.sticky_slots")
                && e.problem.contains("only HYBRID")),
        "{e:?}"
    );
    let e = errors(MINIMAL, &[set("scheduler.sticky_phase=waited")]);
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.sticky_phase")
                && e.problem.contains("only HYBRID")),
        "{e:?}"
    );
    let e = errors(MINIMAL, &[set("scheduler.arq_hold=forever")]);
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.arq_hold")
                && e.problem
                    .contains("expected one of: budget, until-suitable")),
        "{e:?}"
    );
    let e = errors(MINIMAL, &[set("scheduler.sticky_phase=later")]);
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.sticky_phase")
                && e.problem.contains("expected one of: first-arrival, waited")),
        "{e:?}"
    );
}

/// `stages = ["preemption"]` alone: the scenario's built-in placement
/// places beside the program; `placement = "external"` then has no program
/// to place, and an energy-aware placement would never ask it.
#[test]
fn a_program_deciding_only_preemption_keeps_the_builtin_placement() {
    let text =
        format!("{MINIMAL}\n[scheduler.external]\ncommand = [\"x\"]\nstages = [\"preemption\"]\n");
    let priority = set("scheduler.slots=priority");
    let s = load(
        "ok.toml",
        &text,
        &[priority.clone(), set("scheduler.placement=least-loaded")],
    )
    .unwrap();
    assert_eq!(
        s.scheduler.placement,
        dcemu_actors::config::PlacementKind::LeastLoaded
    );
    assert_eq!(load("ok.toml", &s.to_toml(), &[]).unwrap(), s);
    let s = load("ok.toml", &text, std::slice::from_ref(&priority)).unwrap();
    assert_eq!(
        s.scheduler.placement,
        dcemu_actors::config::PlacementKind::Random,
        "the section selects no placement it does not decide"
    );
    let e = errors(
        &text,
        &[priority.clone(), set("scheduler.placement=external")],
    );
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.placement")
                && e.problem.contains("does not name the placement stage")),
        "{e:?}"
    );
    let e = errors(&text, &[priority, set("scheduler.placement=gems")]);
    let row = super::refusals::REFUSALS
        .iter()
        .find(|r| r.combination.contains("beside an energy-aware"))
        .unwrap();
    assert!(
        e.iter()
            .any(|e| e.field.as_deref() == Some("scheduler.external.stages")
                && e.problem.contains(row.reason)),
        "{e:?}"
    );
}

#[test]
fn an_external_section_selects_the_external_placement_and_is_checked() {
    let with = |extra: &str| format!("{MINIMAL}\n[scheduler.external]\n{extra}\n");
    let s = load("ok.toml", &with("command = [\"python3\", \"s.py\"]"), &[]).unwrap();
    assert_eq!(
        s.scheduler.placement,
        dcemu_actors::config::PlacementKind::External
    );
    let again = load("ok.toml", &s.to_toml(), &[]).unwrap();
    assert_eq!(again, s, "the scenario as run loads again");
    let e = errors(&with("command = []"), &[]);
    assert_eq!(e[0].field.as_deref(), Some("scheduler.external.command"));
    let e = errors(
        &with("command = [\"x\"]"),
        &[set("scheduler.placement=least-loaded")],
    );
    assert_eq!(e[0].field.as_deref(), Some("scheduler.placement"));
    assert!(e[0].problem.contains("remove one"), "{e:?}");
    let e = errors(MINIMAL, &[set("scheduler.placement=external")]);
    assert!(e[0].problem.contains("[scheduler.external]"), "{e:?}");
    // a decision latency under a slot stage runs: its dispatches and
    // preemptions leave in decision order (no longer refused)
    let s = load(
        "ok.toml",
        &with("command = [\"x\"]\ndecision_latency = \"1ms\""),
        &[set("scheduler.slots=priority")],
    )
    .unwrap();
    assert!(s.scheduler.slots.slotted());
}

#[test]
fn copies_expand_in_place_and_their_problems_name_the_table_written() {
    let text = PRIMARIES.replace("count = 6", "count = 8").replace(
        "name = \"high\"\nservers = 1\n",
        "name = \"high\"\nservers = 1\ncopies = 3\n",
    );
    let s = load("p.toml", &text, &[]).unwrap();
    let names: Vec<&str> = s.primary_tenants.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["low", "high-1", "high-2", "high-3", "own"]);
    assert!(s.primary_tenants.iter().all(|p| p.copies == 1));
    assert_eq!(s.primary_tenants[3].mean, 0.6);

    // the copies' problems are the table's, at its line, after the expansion of an earlier one
    let bad = text.replace(
        "name = \"own\"\nservers = 2\n",
        "name = \"own\"\nservers = 2\ncopies = 0\n",
    );
    let e = &errors(&bad, &[])[0];
    assert_eq!(e.field.as_deref(), Some("primary_tenants[2].copies"), "{e}");
    assert!(e.problem.contains("between 1 and 100000"), "{e}");
    assert!(matches!(e.origin, Origin::File { at: Some(_), .. }), "{e}");
    let bad = text.replace(
        "name = \"high\"\nservers = 1\n",
        "name = \"high\"\nservers = 0\n",
    );
    let e = &errors(&bad, &[])[0];
    assert_eq!(
        e.field.as_deref(),
        Some("primary_tenants[1].servers"),
        "{e}"
    );

    // copies own their servers: too many for the datacenter is refused
    let e = &errors(&text, &[set("primary_tenants.1.copies=1000")])[0];
    assert!(e.problem.contains("primary tenants own"), "{e}");
}
