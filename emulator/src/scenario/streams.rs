//! Tenants that stream a public-format trace (`arrivals.format`,
//! docs/traces.md): their files are found and checked when the scenario
//! loads, their units filled in from the server types, and a machine table
//! (`arrivals.machines`) turned into the server list. The trace itself is
//! read by the tenant as the run goes; before a run only an SWF log is
//! read through once, for its jobs' sizes against the machine
//! ([`check_before_run`]; `dcemu validate` reads every trace through, with
//! [`scan`]).

use std::path::Path;

use dcemu_actors::config::{DEFAULT_LOOKAHEAD, ServerTypeConfig};
use dcemu_actors::trace_formats::machines::read_machines;
use dcemu_actors::trace_formats::{
    ImportError, ImportOptions, ImportStats, StreamSpec, TraceFormat,
};

use super::data::{Origin, Scenario, ScenarioError, trace_error_of};

/// A streamed trace's problem as a scenario error pointing into the file.
pub fn import_error(e: ImportError) -> ScenarioError {
    let (path, at, problem) = match e {
        ImportError::Row {
            path,
            line,
            column,
            problem,
        } => (path, Some((line as usize, column as usize)), problem),
        ImportError::Io { path, source } => {
            (path, None, format!("cannot read the trace: {source}"))
        }
        ImportError::File { path, problem } => (path, None, problem),
        ImportError::Csv(e) => return trace_error_of(e),
    };
    ScenarioError {
        origin: Origin::File { path, at },
        field: None,
        problem,
    }
}

/// Fills `scenario.streams` for tenant `i` (its `arrivals.format` is a
/// streamed one) and, with `arrivals.machines`, replaces the server types.
pub fn load_stream(
    label: &str,
    base: &Path,
    scenario: &mut Scenario,
    i: usize,
) -> Result<(), ScenarioError> {
    let scenario_err = |field: &str, problem: String| ScenarioError {
        origin: Origin::File {
            path: label.to_string(),
            at: None,
        },
        field: Some(format!("tenants[{i}].arrivals.{field}")),
        problem,
    };
    let tenant = &scenario.tenants[i];
    let a = &tenant.arrivals;
    let Some(file) = a.trace.clone() else {
        return Ok(());
    };
    let path = base.join(&file);
    let shown = path.display().to_string();
    std::fs::File::open(&path)
        .map_err(|e| scenario_err("trace", format!("cannot read the trace {shown}: {e}")))?;
    // "Normalised to the largest machine": the largest server type.
    let largest_cores = scenario
        .server_types
        .iter()
        .map(ServerTypeConfig::cores)
        .max()
        .unwrap_or(1);
    let largest_gb = scenario
        .server_types
        .iter()
        .map(|t| t.memory_gb.unwrap_or(16.0))
        .fold(0.0, f64::max);
    let f = a.format;
    let cores_per_unit = a.cores_per_unit.unwrap_or(if f.normalised_cpu() {
        f64::from(largest_cores)
    } else {
        1.0
    });
    let gb_per_unit = a.gb_per_unit.unwrap_or(if f.normalised_memory() {
        largest_gb
    } else {
        1.0
    });
    let collections = match a.collections.clone() {
        None => None,
        Some(file) => {
            let at = base.join(&file);
            let shown = at.display().to_string();
            std::fs::File::open(&at).map_err(|e| {
                scenario_err(
                    "collections",
                    format!("cannot read the collection table {shown}: {e}"),
                )
            })?;
            Some((at, shown))
        }
    };
    let mut known_machines = match &a.machine_ids {
        None => None,
        Some(table) => {
            let at = base.join(table);
            let shown = at.display().to_string();
            let found =
                read_machines(&at, &shown, f, cores_per_unit, gb_per_unit).map_err(import_error)?;
            Some(std::sync::Arc::new(found.ids))
        }
    };
    if let Some(machines) = a.machines.clone() {
        let [template] = scenario.server_types.as_slice() else {
            return Err(scenario_err(
                "machines",
                format!(
                    "building servers from the trace needs exactly one [[server_types]] entry as \
                     the template (power, speed, disk); the scenario has {}",
                    scenario.server_types.len()
                ),
            ));
        };
        let template = template.clone();
        let (mpath, mshown) = if machines == "header" {
            (path.clone(), shown.clone())
        } else {
            let p = base.join(&machines);
            let s = p.display().to_string();
            (p, s)
        };
        let found =
            read_machines(&mpath, &mshown, f, cores_per_unit, gb_per_unit).map_err(import_error)?;
        scenario.server_types = found
            .classes
            .iter()
            .enumerate()
            .map(|(k, c)| ServerTypeConfig {
                name: format!("{}-{k}", template.name),
                count: c.count,
                slots: c.cores,
                cores: Some(c.cores),
                memory_gb: c.memory_gb.or(template.memory_gb),
                ..template.clone()
            })
            .collect();
        // The scenario as run holds the servers built; a replay reads the
        // table only for its machine ids (`machine_ids`), if it needs them.
        scenario.tenants[i].arrivals.machines = None;
        if f == TraceFormat::Alibaba2018Instance {
            known_machines = Some(std::sync::Arc::new(found.ids));
            scenario.tenants[i].arrivals.machine_ids = Some(machines);
        }
    }
    let machine_cores = scenario
        .server_types
        .iter()
        .map(|t| u64::from(t.count) * u64::from(t.cores()))
        .sum();
    let tenant = &scenario.tenants[i];
    let a = &tenant.arrivals;
    let spec = StreamSpec {
        path,
        label: shown,
        format: f,
        options: ImportOptions {
            cores_per_unit,
            gb_per_unit,
            default_priority: tenant.priority,
            lookahead: a.lookahead.unwrap_or(DEFAULT_LOOKAHEAD).as_nanos(),
            run_end: scenario.run.end.as_nanos(),
            lenient: a.lenient,
            machine_cores: Some(machine_cores),
            kill_at_request: a.kill_at_request,
            collections,
            known_machines,
        },
    };
    scenario.streams[i] = Some(spec);
    Ok(())
}

/// Reads every streamed trace of `scenario` through (`dcemu validate`):
/// each tenant's name and counts, or the first error.
pub fn scan(scenario: &Scenario) -> Result<Vec<(String, ImportStats)>, ScenarioError> {
    let mut out = Vec::new();
    for (tenant, spec) in scenario.tenants.iter().zip(&scenario.streams) {
        if let Some(spec) = spec.as_ref().filter(|s| s.format.is_public()) {
            let stats = dcemu_actors::trace_formats::scan(spec).map_err(import_error)?;
            out.push((tenant.name.clone(), stats));
        }
    }
    Ok(out)
}

/// Reads every SWF log of `scenario` through before a run starts
/// (`dcemu run` and `validate`, after `--lenient`), so that a job no
/// machine of the scenario could run, or any bad row, stops it naming its
/// line, as a CSV trace's would, rather than when the run reaches it.
/// Memory stays that of one stream.
pub fn check_before_run(scenario: &Scenario) -> Result<(), ScenarioError> {
    for spec in scenario.streams.iter().flatten() {
        if spec.format == TraceFormat::Swf {
            dcemu_actors::trace_formats::scan(spec).map_err(import_error)?;
        }
    }
    Ok(())
}

/// `--lenient`: every streamed trace skips and counts its bad rows. The
/// scenario as run records it (`arrivals.lenient`), so a replay does too.
/// Returns how many tenants it applies to.
pub fn set_lenient(scenario: &mut Scenario) -> usize {
    let mut n = 0;
    for (tenant, spec) in scenario.tenants.iter_mut().zip(&mut scenario.streams) {
        if let Some(spec) = spec.as_mut().filter(|s| s.format.is_public()) {
            tenant.arrivals.lenient = true;
            spec.options.lenient = true;
            n += 1;
        }
    }
    n
}

/// Where the streamed traces of a scenario loaded from `label` are found
/// (and its external scheduler runs), as an absolute path, for `run.json`'s
/// `stream_base` (so `dcemu replay` finds them again); `None` without
/// streamed traces or external scheduler. Not digested: it names a place on
/// this machine.
pub fn stream_base(label: &str, scenario: &Scenario) -> Option<std::path::PathBuf> {
    if !scenario
        .streams
        .iter()
        .flatten()
        .any(|s| s.format.is_public())
        && scenario.scheduler.external.is_none()
    {
        return None;
    }
    let dir = match scenario.base.as_os_str().is_empty() {
        true => Path::new(label).parent().unwrap_or(Path::new("")),
        false => scenario.base.as_path(),
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).ok()
}

/// The `stream_base` a results directory's `run.json` records, when `path`
/// is that directory's `scenario.toml`: running the recorded scenario
/// (`dcemu run DIR/scenario.toml`, `dcemu replay DIR`) finds its streamed
/// traces and its external program where the original run did, not
/// beside the copy.
pub fn recorded_base(path: &Path) -> Option<std::path::PathBuf> {
    if path.file_name()? != "scenario.toml" {
        return None;
    }
    let facts = std::fs::read(path.parent()?.join("run.json")).ok()?;
    let facts: serde_json::Value = serde_json::from_slice(&facts).ok()?;
    facts
        .get("stream_base")?
        .as_str()
        .map(std::path::PathBuf::from)
}
