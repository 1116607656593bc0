use super::*;

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
    assert!(e.problem.contains("unknown field `seeed`"), "{e}");
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
    assert!(e.problem.contains("missing field `name`"), "{e}");
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
    assert!(e.problem.contains("unknown field `seeed`"), "{e}");
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
