//! Scenario files: load, override, validate.
//!
//! A scenario is TOML with the sections `[run]`, `[topology]`,
//! `[[server_types]]`, `[[tenants]]`, `[scheduler]` and `[output]`; every
//! field is documented in `scenarios/README.md`. Loading happens in three
//! steps, each with errors that say where the problem is:
//!
//! 1. parse the TOML and apply `--set KEY=VALUE` overrides to the table;
//! 2. deserialize into [`Scenario`] (unknown fields and wrong types refused);
//! 3. check values ([`Scenario::problems`]): positive rates, non-zero
//!    latency, unique names, and so on.
//!
//! A problem in a field that came from the file names the file, line and
//! column; one in a field set on the command line names the `--set` flag.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;

use dcemu_actors::config::ArrivalProcess;
use dcemu_actors::config::{SchedulerConfig, ServerTypeConfig};
use dcemu_actors::ground_truth::{CatalogSpec, ServerClass, class_problems};
use dcemu_actors::model::host_attachments;
use dcemu_actors::scheduler::placement::custom;
use dcemu_actors::trace::{AppRef, CsvTraceReader, TraceTask};
use dcemu_actors::trace_formats::{ImportError, ImportOptions, StreamSpec, TraceFormat};
use dcemu_topology::{Duration, Network, TopologyKind};

use data::trace_error;
pub use data::{
    LoadedTrace, Origin, OutputConfig, RunConfig, Scenario, ScenarioError, ScenarioErrors,
};

/// The default scenario, compiled into the binary so `dcemu run` works from anywhere.
pub const QUICKSTART: &str = include_str!("../../scenarios/quickstart.toml");
/// How the embedded default is named in messages.
pub const QUICKSTART_LABEL: &str = "<embedded scenarios/quickstart.toml>";

/// Policies a crate registered (docs/scheduler.md, "Adding a policy"),
/// for each stage that takes them (admission, placement, slots): a name
/// must be registered in this process and its parameters pass its own
/// check; a name neither built in nor registered is refused with the
/// nearest of them. Paths relative to `[scheduler]`.
fn policy_problems(s: &SchedulerConfig) -> Vec<(String, String)> {
    use dcemu_actors::config::{AdmissionKind, PlacementKind, SlotPolicy};
    use dcemu_actors::scheduler::registered::Stage;
    use dcemu_actors::scheduler::{admission, preemption};
    let names = |all: &[&str]| -> Vec<String> { all.iter().map(|n| n.to_string()).collect() };
    let placements: Vec<String> = PlacementKind::BUILT_IN.iter().map(|k| k.name()).collect();
    let stages = [
        (
            Stage::Admission,
            s.admission.custom(),
            admission::custom::problems(s),
            names(&AdmissionKind::BUILT_IN.map(AdmissionKind::name)),
            admission::custom::names(),
        ),
        (
            Stage::Placement,
            s.placement.custom(),
            custom::problems(s),
            placements,
            custom::names(),
        ),
        (
            Stage::Slots,
            s.slots.custom(),
            preemption::custom::problems(s),
            names(&SlotPolicy::BUILT_IN.map(SlotPolicy::name)),
            preemption::custom::names(),
        ),
    ];
    let mut out = Vec::new();
    for (stage, custom, mut problems, builtin, registered) in stages {
        if let Some(name) = custom {
            let nearest = crate::suggest::did_you_mean(
                name.as_str(),
                builtin.iter().chain(&registered).map(String::as_str),
            );
            let policies = if registered.is_empty() {
                "no policy is registered".to_string()
            } else {
                format!("registered: {}", registered.join(", "))
            };
            for (field, why) in &mut problems {
                if field == stage.field() {
                    *why = format!(
                        "unknown value {:?}{nearest}; expected one of: {} ({policies})",
                        name.as_str(),
                        builtin.join(", ")
                    );
                }
            }
        }
        out.extend(problems);
    }
    out
}

/// The largest seed: seeds round-trip through TOML, whose integers are i64.
pub const MAX_SEED: u64 = i64::MAX as u64;
/// Most rows of `timeseries.csv`.
pub const MAX_SAMPLES: u64 = 1_000_000;
/// Guard against scenarios that would exhaust memory before the run starts.
pub const MAX_ACTORS: u64 = 50_000_000;

impl Scenario {
    /// Value problems as `(dotted field path, problem)`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |field: String, problem: String| out.push((field, problem));
        if let Some(p) = file_name_problem(&self.run.name) {
            push("run.name".into(), p);
        }
        if self.run.seed > MAX_SEED {
            push("run.seed".into(), format!("must be at most {MAX_SEED}"));
        }
        if self.run.end == Duration::ZERO {
            push("run.end".into(), "must be greater than 0".into());
        }
        let topology_problems = self.topology.problems();
        let topology_ok = topology_problems.is_empty();
        for (field, p) in topology_problems {
            push(format!("topology.{field}"), p);
        }
        for (field, p) in self.power.problems() {
            push(format!("power.{field}"), p);
        }
        let samples = self.run.end.as_nanos() / self.power.sample_interval.as_nanos().max(1);
        if samples > MAX_SAMPLES {
            push(
                "power.sample_interval".into(),
                format!(
                    "{} over a run of {} gives {samples} rows of timeseries.csv, more than {MAX_SAMPLES}",
                    self.power.sample_interval, self.run.end
                ),
            );
        }
        if self.server_types.is_empty() {
            push(
                "server_types".into(),
                "a scenario needs at least one [[server_types]] entry".into(),
            );
        }
        let servers: u64 = self.server_types.iter().map(|s| u64::from(s.count)).sum();
        if !self.server_types.is_empty() && servers == 0 {
            push(
                "server_types".into(),
                "the datacenter has no servers: every count is 0".into(),
            );
        }
        let tenants: u64 = self.tenants.iter().map(|t| u64::from(t.count)).sum();
        if servers + tenants + 1 > MAX_ACTORS {
            push(
                "server_types".into(),
                format!(
                    "{} actors exceed the limit of {MAX_ACTORS}",
                    servers + tenants + 1
                ),
            );
        }
        for (field, p) in self.scheduler.problems() {
            push(format!("scheduler.{field}"), p);
        }
        for (field, p) in policy_problems(&self.scheduler) {
            push(format!("scheduler.{field}"), p);
        }
        for (field, p) in distributed::problems(self) {
            push(field, p);
        }
        for (field, p) in refusals::problems(self) {
            push(field, p);
        }
        for (i, s) in self.server_types.iter().enumerate() {
            for (field, p) in s.problems() {
                push(format!("server_types[{i}].{field}"), p);
            }
            if self.server_types[..i].iter().any(|o| o.name == s.name) {
                push(
                    format!("server_types[{i}].name"),
                    format!("{:?} is used by an earlier server type", s.name),
                );
            }
        }
        for (i, t) in self.tenants.iter().enumerate() {
            for (field, p) in t.problems(self.run.end) {
                push(format!("tenants[{i}].{field}"), p);
            }
            if let Some(bw) = t.flow_bandwidth {
                let t3 = &self.topology;
                let narrowest = t3.core_link.min(t3.aggregation_link).min(t3.access_link);
                if t3.kind != TopologyKind::Flat && bw > narrowest {
                    push(
                        format!("tenants[{i}].flow_bandwidth"),
                        format!(
                            "{bw} exceeds the {narrowest} links every flow crosses: no task could ever start"
                        ),
                    );
                }
            }
            if self.tenants[..i].iter().any(|o| o.name == t.name) {
                push(
                    format!("tenants[{i}].name"),
                    format!("{:?} is used by an earlier tenant", t.name),
                );
            }
        }
        let mut owned = 0u64;
        for (i, p) in self.primary_tenants.iter().enumerate() {
            for (field, problem) in p.problems() {
                push(format!("primary_tenants[{i}].{field}"), problem);
            }
            if self.primary_tenants[..i].iter().any(|o| o.name == p.name) {
                push(
                    format!("primary_tenants[{i}].name"),
                    format!("{:?} is used by an earlier primary tenant", p.name),
                );
            }
            owned += u64::from(p.servers);
        }
        if owned > servers {
            push(
                "primary_tenants".into(),
                format!("primary tenants own {owned} servers, the datacenter has {servers}"),
            );
        }
        if let Some(scaling) = &self.primary_scaling {
            let problems = scaling.problems();
            let fine = problems.is_empty();
            for (field, p) in problems {
                push(format!("primary_scaling.{field}"), p);
            }
            if fine && self.primary_tenants.is_empty() {
                push(
                    "primary_scaling".into(),
                    "there are no [[primary_tenants]] to scale".into(),
                );
            } else if fine && let Err(p) = self.scaled_primary_tenants() {
                push("primary_scaling.target".into(), p);
            }
        }
        if let Some(storage) = &self.storage {
            let problems = storage.problems();
            let fine = problems.is_empty();
            for (field, p) in problems {
                push(format!("storage.{field}"), p);
            }
            // the first replica of every block must fit somewhere
            let disk_mb: f64 = self
                .server_types
                .iter()
                .map(|s| f64::from(s.count) * s.disk_gb.unwrap_or(1000.0) * 1024.0)
                .sum();
            let need_mb = storage.blocks as f64 * storage.block_mb as f64;
            if fine && need_mb > disk_mb {
                push(
                    "storage.blocks".into(),
                    format!(
                        "{} blocks of {} MB need {:.0} GB, the servers' disks hold {:.0} GB",
                        storage.blocks,
                        storage.block_mb,
                        need_mb / 1024.0,
                        disk_mb / 1024.0
                    ),
                );
            }
        }
        if let Some(catalog) = &self.applications {
            for (field, p) in catalog.problems() {
                push(format!("applications.{field}"), p);
            }
            let classes: Vec<ServerClass> = self
                .server_types
                .iter()
                .map(ServerTypeConfig::class)
                .collect();
            if !classes.is_empty() {
                for (field, p) in class_problems(&classes) {
                    let field = field.replacen("classes", "server_types", 1);
                    push(field, p);
                }
            }
        } else if let Some(i) = self.tenants.iter().position(|t| t.applications.is_some()) {
            push(
                format!("tenants[{i}].applications"),
                "the scenario has no [applications] catalog to draw applications from".into(),
            );
        }
        if self.output.dir.trim().is_empty() {
            push("output.dir".into(), "must not be empty".into());
        }
        if topology_ok && servers + tenants < MAX_ACTORS {
            let attach = host_attachments(&self.server_types, &self.tenants, &self.primary_tenants);
            if let Err(e) = Network::build(&self.topology, &attach) {
                push("topology".into(), e.to_string());
            }
        }
        out
    }

    /// The scenario as TOML, with a header naming the dcemu version; loading
    /// it again gives the same scenario.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self)
            .unwrap_or_else(|e| format!("# this scenario could not be written as TOML: {e}\n"));
        format!(
            "# Scenario as run by dcemu {} (defaults and overrides filled in).\n\
             # Run it again with: dcemu run <this file>\n\n{body}",
            env!("CARGO_PKG_VERSION")
        )
    }
}

fn file_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || name.starts_with('.')
    {
        return Some(format!(
            "{name:?} names a directory: use ASCII letters, digits, '-', '_' and '.', not starting with '.'"
        ));
    }
    None
}

/// `--set KEY=VALUE`: a dotted path to a scalar field and its new value.
///
/// The value is read as TOML when it is one (`5`, `true`, `1.5`, `"x"`) and
/// as a bare string otherwise (`2h`, `random`), so quoting is rarely needed.
/// Array elements are addressed by index: `tenants.0.arrivals.rate_per_s=2`.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub key: String,
    pub raw: String,
    value: toml::Value,
}

impl FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (key, raw) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s}: expected KEY=VALUE, e.g. run.end=2h"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(format!(
                "--set {s}: {key:?} is not a dotted field path like scheduler.placement"
            ));
        }
        let value = match format!("v = {raw}").parse::<toml::Table>() {
            Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
            Err(_) => toml::Value::String(raw.trim().to_string()),
        };
        if matches!(value, toml::Value::Array(_) | toml::Value::Table(_)) {
            return Err(format!(
                "--set {s}: takes a single value, not an array or table"
            ));
        }
        Ok(Override {
            key: key.to_string(),
            raw: raw.to_string(),
            value,
        })
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.raw)
    }
}

impl Override {
    /// The key in the form errors use: `tenants[0].rate` for `tenants.0.rate`.
    fn field(&self) -> String {
        dotted_to_field(&self.key)
    }
}

fn dotted_to_field(key: &str) -> String {
    let mut out = String::new();
    for seg in key.split('.') {
        if seg.parse::<usize>().is_ok() && !out.is_empty() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// Loads and validates a scenario from its text; `label` names it in errors.
pub fn load(label: &str, text: &str, overrides: &[Override]) -> Result<Scenario, ScenarioErrors> {
    load_with(label, text, overrides, None)
}

/// `field` as the user wrote it: `primary_tenants[j]` of the expanded
/// tenants is the table `origin[j]` (`copies`).
fn copied_from(field: &str, origin: &[usize]) -> String {
    let Some(rest) = field.strip_prefix("primary_tenants[") else {
        return field.to_string();
    };
    let Some((index, tail)) = rest.split_once(']') else {
        return field.to_string();
    };
    match index.parse::<usize>().ok().and_then(|j| origin.get(j)) {
        Some(i) => format!("primary_tenants[{i}]{tail}"),
        None => field.to_string(),
    }
}

/// [`load`], with streamed traces (`arrivals.format`) found relative to
/// `stream_base` instead of the scenario file's directory: `dcemu replay`
/// re-runs a results directory whose streamed traces stayed where the
/// original scenario found them (`run.json`'s `stream_base`).
pub fn load_with(
    label: &str,
    text: &str,
    overrides: &[Override],
    stream_base: Option<&Path>,
) -> Result<Scenario, ScenarioErrors> {
    let file_err = |at: Option<(usize, usize)>, field: Option<String>, problem: String| {
        ScenarioErrors(vec![ScenarioError {
            origin: Origin::File {
                path: label.to_string(),
                at,
            },
            field,
            problem,
        }])
    };
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map(|s| line_col(text, s.start));
        file_err(at, None, format!("not valid TOML: {}", e.message().trim()))
    })?;
    let mut values: Vec<toml::Value> = overrides.iter().map(|o| o.value.clone()).collect();
    for (o, v) in overrides.iter().zip(&values) {
        apply(&mut table, o, v.clone()).map_err(|problem| override_err(o, problem))?;
    }
    // Each override's problem as first read (a number, a boolean), kept
    // when the field takes no string either: `-3` for a count is a
    // negative number, not a string.
    let mut first_problem: Vec<Option<String>> = vec![None; overrides.len()];
    let mut scenario = loop {
        match serde_path_to_error::deserialize::<_, Scenario>(toml::Value::Table(table.clone())) {
            Ok(s) => break s,
            Err(err) => {
                let field = error_field(err.path().to_string(), err.inner().message());
                let problem = messages::humanize(err.inner().message());
                let Some(i) = overrides.iter().rposition(|o| covers(&o.field(), &field)) else {
                    return Err(file_error_from_text(label, text, field, problem));
                };
                // A bare word that TOML read as a number or boolean may be meant as a string.
                if !matches!(values[i], toml::Value::String(_)) {
                    first_problem[i] = Some(problem);
                    values[i] = toml::Value::String(overrides[i].raw.trim().to_string());
                    apply(&mut table, &overrides[i], values[i].clone())
                        .map_err(|p| override_err(&overrides[i], p))?;
                    continue;
                }
                let problem = match err.inner().message().starts_with("invalid type: string") {
                    true => first_problem[i].take().unwrap_or(problem),
                    false => problem,
                };
                let mut e = override_err(&overrides[i], problem);
                e.0[0].field = Some(field);
                return Err(e);
            }
        }
    };
    scenario.scheduler.select_external();
    let (tenants, origin) = dcemu_actors::config::expand_copies(&scenario.primary_tenants);
    scenario.primary_tenants = tenants;
    let problems: Vec<(String, String)> = scenario
        .problems()
        .into_iter()
        .map(|(field, problem)| (copied_from(&field, &origin), problem))
        .collect();
    if problems.is_empty() {
        let scenario = load_traces(label, scenario, stream_base)?;
        // a program is looked for beside the scenario file; a scenario
        // held in memory (a library caller's) meets its program at its
        // first exchange instead
        let on_disk = stream_base.is_some() || Path::new(label).is_file();
        return match scenario
            .scheduler
            .external
            .as_ref()
            .filter(|_| on_disk)
            .map(|e| crate::external::check_command(&e.command, &scenario.base))
        {
            Some(Err(problem)) => Err(file_error_from_text(
                label,
                text,
                "scheduler.external.command".into(),
                problem,
            )),
            _ => Ok(scenario),
        };
    }
    let doc = toml_edit::Document::parse(text.to_string()).ok();
    Err(ScenarioErrors(
        problems
            .into_iter()
            .map(|(field, problem)| {
                let origin = match overrides.iter().rev().find(|o| covers(&o.field(), &field)) {
                    Some(o) => Origin::Override(o.to_string()),
                    None => Origin::File {
                        path: label.to_string(),
                        at: doc
                            .as_ref()
                            .and_then(|d| locate(d, &field))
                            .map(|span| line_col(text, span.start)),
                    },
                };
                ScenarioError {
                    origin,
                    field: Some(field),
                    problem,
                }
            })
            .collect(),
    ))
}

/// Reads the traces of tenants that replay one, relative to the scenario
/// file (or the working directory for the embedded scenario).
fn load_traces(
    label: &str,
    mut scenario: Scenario,
    stream_base: Option<&Path>,
) -> Result<Scenario, ScenarioErrors> {
    let base = Path::new(label)
        .parent()
        .filter(|_| Path::new(label).is_file())
        .unwrap_or(Path::new(""));
    let mut errors = Vec::new();
    scenario.traces = vec![None; scenario.tenants.len()];
    scenario.streams = vec![None; scenario.tenants.len()];
    scenario.base = stream_base.unwrap_or(base).to_path_buf();
    for i in 0..scenario.tenants.len() {
        let a = &scenario.tenants[i].arrivals;
        if a.process == ArrivalProcess::Trace && a.format.is_public() {
            let base = stream_base.unwrap_or(base);
            if let Err(e) = streams::load_stream(label, base, &mut scenario, i) {
                errors.push(e);
            }
        }
    }
    for (i, tenant) in scenario.tenants.iter_mut().enumerate() {
        let Some(file) = tenant.arrivals.trace.clone() else {
            continue;
        };
        if tenant.arrivals.process != ArrivalProcess::Trace || tenant.arrivals.format.is_public() {
            continue;
        }
        let path = base.join(&file);
        let shown = path.display().to_string();
        let field = format!("tenants[{i}].arrivals.trace");
        let cannot_read = |e: &dyn fmt::Display| ScenarioError {
            origin: Origin::File {
                path: label.to_string(),
                at: None,
            },
            field: Some(field.clone()),
            problem: format!("cannot read the trace {shown}: {e}"),
        };
        // Checked row by row, never held whole: every row parses (the first
        // bad one is the error), then every application exists.
        let result = dcemu_actors::trace_formats::lines::open_input(&path, &shown)
            .map_err(|e| match e {
                ImportError::Io { source, .. } => cannot_read(&source),
                other => cannot_read(&other),
            })
            .and_then(|input| {
                let mut reader =
                    CsvTraceReader::new(&shown, input).map_err(|e| trace_error(&shown, e))?;
                let mut app_problem = None;
                while let Some(row) = reader.next_task().map_err(|e| trace_error(&shown, e))? {
                    if app_problem.is_none() {
                        app_problem = check_app(&shown, &row, scenario.applications.as_ref()).err();
                    }
                }
                match app_problem {
                    Some(e) => Err(e),
                    None => Ok(LoadedTrace {
                        path: path.clone(),
                        label: shown.clone(),
                    }),
                }
            });
        match result {
            Ok(loaded) => {
                tenant.arrivals.trace = Some(LoadedTrace::stored_as(&tenant.name));
                scenario.streams[i] = Some(StreamSpec {
                    path: loaded.path.clone(),
                    label: loaded.label.clone(),
                    format: TraceFormat::Csv,
                    options: ImportOptions {
                        cores_per_unit: 1.0,
                        gb_per_unit: 1.0,
                        default_priority: tenant.priority,
                        lookahead: 0,
                        run_end: scenario.run.end.as_nanos(),
                        lenient: false,
                        machine_cores: None,
                        kill_at_request: false,
                        collections: None,
                        known_machines: None,
                    },
                });
                scenario.traces[i] = Some(loaded);
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(scenario)
    } else {
        Err(ScenarioErrors(errors))
    }
}

/// Applications named by id must exist in the catalog; any application needs one.
fn check_app(
    path: &str,
    row: &TraceTask,
    catalog: Option<&CatalogSpec>,
) -> Result<(), ScenarioError> {
    let apps = catalog.map_or(0, |c| c.apps);
    let problem = match (&row.app, catalog) {
        (AppRef::None, _) => return Ok(()),
        (_, None) => {
            "names an application, but the scenario has no [applications] catalog".to_string()
        }
        (AppRef::Profile(id), Some(_)) if *id >= apps => {
            format!("app:{id} is not in the catalog of {apps} applications")
        }
        _ => return Ok(()),
    };
    Err(ScenarioError {
        origin: Origin::File {
            path: path.to_string(),
            at: Some((row.line as usize, 1)),
        },
        field: Some("app".into()),
        problem,
    })
}

fn override_err(o: &Override, problem: String) -> ScenarioErrors {
    ScenarioErrors(vec![ScenarioError {
        origin: Origin::Override(o.to_string()),
        field: None,
        problem,
    }])
}

/// Whether an override of `key` set (part of) `field`.
fn covers(key: &str, field: &str) -> bool {
    field == key || field.starts_with(&format!("{key}.")) || field.starts_with(&format!("{key}["))
}

/// serde reports a missing field at the path of the table that lacks it;
/// name the field itself.
pub(crate) fn error_field(path: String, message: &str) -> String {
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match missing {
        Some(name) if path == "." || path.is_empty() => name.to_string(),
        Some(name) => format!("{path}.{name}"),
        None if path == "." => String::new(),
        None => path,
    }
}

/// Re-reads the text with spans to say where a deserialization error is.
fn file_error_from_text(label: &str, text: &str, field: String, problem: String) -> ScenarioErrors {
    let spanned = toml::Deserializer::parse(text)
        .ok()
        .and_then(|de| serde_path_to_error::deserialize::<_, Scenario>(de).err())
        .and_then(|e| e.inner().span());
    let at = spanned
        .or_else(|| {
            toml_edit::Document::parse(text.to_string())
                .ok()
                .and_then(|d| locate(&d, &field))
        })
        .map(|s| line_col(text, s.start));
    ScenarioErrors(vec![ScenarioError {
        origin: Origin::File {
            path: label.to_string(),
            at,
        },
        field: (!field.is_empty()).then_some(field),
        problem,
    }])
}

/// Sets `o.key` to `value` in the table, creating missing tables on the way.
fn apply(table: &mut toml::Table, o: &Override, value: toml::Value) -> Result<(), String> {
    let segments: Vec<&str> = o.key.split('.').collect();
    let (last, parents) = segments.split_last().ok_or("empty key")?;
    let mut current = table;
    let mut walked = String::new();
    for seg in parents {
        walked = if walked.is_empty() {
            seg.to_string()
        } else {
            format!("{walked}.{seg}")
        };
        let entry = current
            .entry(seg.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = match entry {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => {
                let next = o.key[walked.len() + 1..].split('.').next().unwrap_or("");
                let Ok(i) = next.parse::<usize>() else {
                    return Err(format!(
                        "`{walked}` is a list: address an entry by index, e.g. {walked}.0.…"
                    ));
                };
                let len = items.len();
                return match items.get_mut(i) {
                    Some(toml::Value::Table(t)) => {
                        let rest = &o.key[walked.len() + 1 + next.len()..];
                        let rest = rest.strip_prefix('.').ok_or_else(|| {
                            format!("`{walked}.{i}` is a table; --set takes scalar fields")
                        })?;
                        let inner = Override {
                            key: rest.to_string(),
                            raw: o.raw.clone(),
                            value: value.clone(),
                        };
                        apply(t, &inner, value)
                    }
                    Some(_) => Err(format!("`{walked}.{i}` is not a table")),
                    None => Err(format!(
                        "`{walked}` has {len} entries, there is no entry {i}"
                    )),
                };
            }
            _ => return Err(format!("`{walked}` is a single value, it has no fields")),
        };
    }
    match current.get(*last) {
        Some(toml::Value::Table(_)) | Some(toml::Value::Array(_)) => Err(format!(
            "`{}` is a table or list; --set takes scalar fields",
            o.key
        )),
        _ => {
            current.insert(last.to_string(), value);
            Ok(())
        }
    }
}

/// Byte span of the dotted `field` (`tenants[0].arrivals.rate_per_s`) in the
/// document, or of its nearest ancestor that appears there.
pub(crate) fn locate(doc: &toml_edit::Document<String>, field: &str) -> Option<Range<usize>> {
    let mut item: &toml_edit::Item = doc.as_item();
    let mut best = None;
    for seg in field.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        let Some(next) = item.get(name) else { break };
        item = next;
        best = item.span().or(best);
        if let Some(i) = index {
            let Some(next) = item.get(i) else { break };
            item = next;
            best = item.span().or(best);
        }
    }
    best
}

pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

mod data;
mod distributed;
mod messages;
pub mod refusals;
pub mod streams;
#[cfg(test)]
mod tests;
