//! A scenario as loaded (`Scenario` and the sections `scenario.rs` itself
//! defines) and the errors loading it gives: a leaf, so that `scenario.rs`
//! (loading, overrides, validation) and its children (`streams.rs`,
//! `refusals.rs`, `distributed.rs`) import it and not each other.

use std::fmt;

use dcemu_actors::config::{
    PrimaryScalingConfig, PrimaryTenantConfig, SchedulerConfig, ServerTypeConfig, StorageConfig,
    TenantConfig,
};
use dcemu_actors::ground_truth::CatalogSpec;
use dcemu_actors::trace::{CsvTraceReader, TraceError, TraceTask};
use dcemu_actors::trace_formats::StreamSpec;
use dcemu_topology::{Duration, PowerConfig, TopologyConfig};
use serde::{Deserialize, Serialize};

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub run: RunConfig,
    #[serde(default)]
    pub topology: TopologyConfig,
    #[serde(default)]
    pub power: PowerConfig,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub output: OutputConfig,
    /// The applications' ground truth (`docs/ground-truth.md`); needed by
    /// tenants that submit applications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applications: Option<CatalogSpec>,
    pub server_types: Vec<ServerTypeConfig>,
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// Services that own groups of servers (harvesting §3, §5.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary_tenants: Vec<PrimaryTenantConfig>,
    /// One utilisation scaling for the primary tenants that set none
    /// (harvesting §6.1); see [`Scenario::scaled_primary_tenants`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_scaling: Option<PrimaryScalingConfig>,
    /// Harvested block storage and its name node (harvesting §4.2, §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageConfig>,
    /// Distributed applications a `distributed` tenant submits (ASPLOS'16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<dcemu_actors::distributed::WorkloadConfig>,
    /// Per `[[tenants]]` entry, the csv trace it replays, checked when the
    /// scenario was loaded (its `arrivals.trace` then names where the
    /// results directory keeps a copy: `traces/<tenant>.csv`).
    #[serde(skip)]
    pub traces: Vec<Option<LoadedTrace>>,
    /// Per `[[tenants]]` entry, the trace the tenant streams as the run goes:
    /// its csv trace, or a public-format one (`arrivals.format`; never
    /// copied into the results).
    #[serde(skip)]
    pub streams: Vec<Option<StreamSpec>>,
    /// The directory the scenario's relative paths start from: its file's
    /// (the working directory for the embedded scenario), or the
    /// `stream_base` a replay was given. `[scheduler.external]`'s program
    /// runs there.
    #[serde(skip)]
    pub base: std::path::PathBuf,
}

impl Scenario {
    /// The primary tenants as the model runs them: `[primary_scaling]`
    /// filled into every tenant that sets no `scaling` / `scale` of its own,
    /// with the factor it used (`None` without the section). The scenario
    /// itself keeps what the user wrote, so a replay solves the same target.
    pub fn scaled_primary_tenants(
        &self,
    ) -> Result<(Vec<PrimaryTenantConfig>, Option<f64>), String> {
        let mut tenants = self.primary_tenants.clone();
        match &self.primary_scaling {
            None => Ok((tenants, None)),
            Some(scaling) => {
                let factor = scaling.apply(&mut tenants)?;
                Ok((tenants, Some(factor)))
            }
        }
    }
}

/// A csv trace file, checked row by row when the scenario loaded and read
/// again as the run goes (the tenant streams it; the results directory gets
/// a copy), never held whole.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedTrace {
    /// Where the file is (resolved against the scenario file).
    pub path: std::path::PathBuf,
    /// How errors name it.
    pub label: String,
}

impl LoadedTrace {
    /// Every row: what `scheduler.slot_config = "wasc"` needs for its
    /// statistics before the run (the only reader that holds them all).
    pub fn rows(&self) -> Result<Vec<TraceTask>, String> {
        let input = dcemu_actors::trace_formats::lines::open_input(&self.path, &self.label)
            .map_err(|e| e.to_string())?;
        let mut reader = CsvTraceReader::new(&self.label, input).map_err(|e| e.to_string())?;
        let mut rows = Vec::new();
        while let Some(t) = reader.next_task().map_err(|e| e.to_string())? {
            rows.push(t);
        }
        Ok(rows)
    }
}

impl LoadedTrace {
    /// Where the results directory keeps the trace of the tenant `name`.
    pub fn stored_as(name: &str) -> String {
        format!("traces/{name}.csv")
    }
}

/// `[run]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Names the results directory (`<output.dir>/<name>-s<seed>`).
    pub name: String,
    /// Seed of every actor's random stream.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Virtual time at which the run stops; events at or after it are not handled.
    pub end: Duration,
}

fn default_seed() -> u64 {
    1
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Parent directory of results directories, relative to the working directory.
    #[serde(default = "default_output_dir")]
    pub dir: String,
    /// Write one JSON Lines log per actor.
    #[serde(default = "default_true")]
    pub actor_logs: bool,
    /// Also log every packet: deliveries at hosts, forwards at switches.
    #[serde(default)]
    pub packet_logs: bool,
}

fn default_output_dir() -> String {
    "results".into()
}

fn default_true() -> bool {
    true
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            dir: default_output_dir(),
            actor_logs: true,
            packet_logs: false,
        }
    }
}

/// Where a problem came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File {
        path: String,
        /// 1-based line and column, when the field appears in the file.
        at: Option<(usize, usize)>,
    },
    Override(String),
}

/// One problem with a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub origin: Origin,
    /// Dotted path such as `tenants[0].arrivals.rate_per_s`, when known.
    pub field: Option<String>,
    pub problem: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::File {
                path,
                at: Some((l, c)),
            } => write!(f, "{path}:{l}:{c}: ")?,
            Origin::File { path, at: None } => write!(f, "{path}: ")?,
            Origin::Override(s) => write!(f, "--set {s}: ")?,
        }
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.problem)
    }
}

/// Every problem found in a scenario (at least one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioErrors(pub Vec<ScenarioError>);

impl fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// A csv trace's problem as a scenario error, naming the file it carries.
pub(super) fn trace_error_of(e: TraceError) -> ScenarioError {
    let path = match &e {
        TraceError::Io { path, .. }
        | TraceError::Row { path, .. }
        | TraceError::Header { path, .. }
        | TraceError::Empty { path } => path.clone(),
    };
    trace_error(&path, e)
}

/// A trace's problem as a scenario error pointing into the trace file.
pub(super) fn trace_error(path: &str, e: TraceError) -> ScenarioError {
    let (at, field, problem) = match e {
        TraceError::Row {
            line,
            column,
            problem,
            ..
        } => (Some((line as usize, 1)), column, problem),
        TraceError::Header { line, problem, .. } => (Some((line as usize, 1)), None, problem),
        other => (None, None, other.to_string()),
    };
    ScenarioError {
        origin: Origin::File {
            path: path.to_string(),
            at,
        },
        field,
        problem,
    }
}
