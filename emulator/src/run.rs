//! One run, start to finish: scenario → network → actors → engine → results.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration as WallDuration, Instant};

use dcemu_actors::config::SlotConfig;
use dcemu_actors::kernel::ActorId;
use dcemu_actors::model::BuildError;
use dcemu_actors::model::{self, ModelSpec};
use dcemu_actors::trace::TraceTask;
use dcemu_topology::SimTime;

use crate::engine::balance::Weigh;
use crate::engine::{EngineConfig, EngineError, EngineOutput, Logs, Progress, Reach, run_threads};
use crate::metrics::{self, MetricMap};
use crate::results::{Content, ResultSet};
use crate::scenario::{LoadedTrace, Scenario};

/// How to execute a scenario (none of it reaches the results).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Partitions (threads) to split the actors into; 0 means 1.
    pub partitions: usize,
    /// Live counters for a progress display.
    pub progress: Option<Arc<Progress>>,
    /// Write actor logs into this directory as the run goes (memory stays
    /// bounded); without it they are kept in memory.
    pub log_dir: Option<PathBuf>,
}

/// Why a run produced no results.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot read back the results to digest them: {0}")]
    Digest(std::io::Error),
    #[error("cannot build the model: {0}")]
    Build(#[from] BuildError),
    #[error("primary_scaling.target: {0}")]
    PrimaryScaling(String),
    /// A csv trace could not be read again for the WASC slot plan.
    #[error("{0}")]
    Trace(String),
    #[error("--balance-from {0}")]
    Balance(#[from] crate::engine::balance::BalanceError),
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    pub results: ResultSet,
    pub digest: String,
    pub metrics: MetricMap,
    pub events: u64,
    pub windows: u64,
    /// [`EngineOutput::causal_steps`](crate::engine::EngineOutput::causal_steps):
    /// for `run.json`, never digested (it depends on the partitioning).
    pub causal_steps: u64,
    /// [`EngineOutput::loads`](crate::engine::EngineOutput::loads), for
    /// `run.json`.
    pub loads: Vec<crate::engine::PartitionLoad>,
    /// Events handled by each kind of actor ([`actor_kind`]): where a
    /// run's work is, for `run.json`.
    pub events_by_kind: std::collections::BTreeMap<String, u64>,
    /// [`balance::WORK_FILE`](crate::engine::balance::WORK_FILE)'s text:
    /// each actor's events and their wall time, kept beside the results
    /// (not digested) for a later run's `--balance-from`.
    pub work_csv: Vec<u8>,
    pub virtual_end: SimTime,
    pub actors: usize,
    pub wall: WallDuration,
    /// Means of the wall-clock measurements actors made (e.g.
    /// `sched_decision_us_mean`): for `run.json`, never digested.
    pub wall_metrics: MetricMap,
    /// The slot configuration `scheduler.slot_config` computed (thesis
    /// Table 8.1), also written as `slot_config.md`.
    pub slot_table: Option<String>,
    /// Each actor's [`Actor::describe`](dcemu_actors::kernel::Actor::describe)
    /// at the end of the run, in actor-id order (not digested); empty but
    /// from [`execute_keeping_states`].
    pub states: Vec<(String, serde_json::Value)>,
    /// [`trace_defects`]: for `run.json`.
    pub trace_defects: TraceDefects,
}

/// Per tenant that streams a public-format trace, the known defects its
/// trace showed as far as the run read it, by kind name (none: `{}`).
pub type TraceDefects = std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>;

/// The `trace_defect_<kind>` counters of each streaming tenant's actors
/// (`tenant-<name>-<i>`), before the actors' metrics are merged.
pub fn trace_defects(scenario: &Scenario, output: &EngineOutput) -> TraceDefects {
    let mut out = TraceDefects::new();
    for (tenant, spec) in scenario.tenants.iter().zip(&scenario.streams) {
        if !spec.as_ref().is_some_and(|s| s.format.is_public()) {
            continue;
        }
        let prefix = format!("tenant-{}-", tenant.name);
        let kinds = out.entry(tenant.name.clone()).or_default();
        let actors = output.actors.iter().filter(|a| {
            a.name
                .strip_prefix(&prefix)
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        });
        for actor in actors {
            for (metric, n) in actor.metrics.counters() {
                if let Some(kind) = metric.strip_prefix("trace_defect_") {
                    *kinds.entry(kind.to_string()).or_default() += n;
                }
            }
        }
    }
    out
}

/// Builds the model of `scenario` and runs it to its end.
pub fn execute(scenario: &Scenario, options: &RunOptions) -> Result<Outcome, RunError> {
    run_prepared(scenario, options, false, None)
}

/// [`execute`], the threads' blocks of actors cut by what a run of the
/// same scenario measured (`dir`'s `work.csv`, [`crate::engine::balance`]):
/// each actor's time or held heap, as `by` says.
pub fn execute_balanced(
    scenario: &Scenario,
    options: &RunOptions,
    dir: &Path,
    by: Weigh,
) -> Result<Outcome, RunError> {
    run_prepared(scenario, options, false, Some((dir, by)))
}

/// [`execute`], with every actor's end-of-run state in [`Outcome::states`]
/// (`dcemu replay --dump`).
pub fn execute_keeping_states(
    scenario: &Scenario,
    options: &RunOptions,
) -> Result<Outcome, RunError> {
    run_prepared(scenario, options, true, None)
}

fn run_prepared(
    scenario: &Scenario,
    options: &RunOptions,
    states: bool,
    balance_from: Option<(&Path, Weigh)>,
) -> Result<Outcome, RunError> {
    let started = Instant::now();
    let mut prepared = prepare(scenario, options.log_dir.clone())?;
    prepared.config.states = states;
    if let Some((dir, by)) = balance_from {
        let weights = crate::engine::balance::read_weights(dir, &prepared.names, by)?;
        prepared.config.weights = Some(Arc::new(weights));
    }
    let actor_count = prepared.names.len();
    let Prepared {
        config,
        names,
        actors,
        slot_table,
    } = prepared;
    let actors = names
        .into_iter()
        .zip(actors)
        .map(|(name, (_, actor))| (name, actor))
        .collect();
    let output = run_threads(
        &config,
        actors,
        options.partitions.max(1),
        options.progress.clone(),
    )?;
    assemble(
        scenario,
        output,
        options.log_dir.as_deref(),
        actor_count,
        slot_table,
        started,
    )
}

/// The kind of an actor, from its name (`model::build` names them):
/// `scheduler`, `namenode`, `server`, `primary`, `tenant-<entry>` and
/// `switch-<tier>`.
pub fn actor_kind(name: &str) -> &str {
    if name.starts_with("server-") {
        return "server";
    }
    if name.starts_with("primary-") {
        return "primary";
    }
    match name.rsplit_once('-') {
        Some((kind, i)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => kind,
        _ => name,
    }
}

/// A scenario's model, built and ready for the engine.
pub struct Prepared {
    pub config: EngineConfig,
    /// Every actor's name, in id order.
    pub names: Vec<String>,
    /// The actors built in this process, in id order: every actor (see
    /// [`prepare`]) or a node's share ([`prepare_hosted`]).
    pub actors: Vec<(ActorId, model::Node)>,
    pub slot_table: Option<String>,
}

/// Builds the model of `scenario`, every actor of it; actor logs go to
/// files in `log_dir` when given, else stay in memory (when the scenario
/// keeps them at all).
pub fn prepare(scenario: &Scenario, log_dir: Option<PathBuf>) -> Result<Prepared, RunError> {
    prepare_hosted(scenario, log_dir, &model::every_actor)
}

/// [`prepare`], building only the actors `hosts` selects: a node of a
/// split run holds its own share of the servers, switches and tenants and
/// nothing of the others' (issue 43), and the coordinator builds only the
/// scheduler, whose construction checks the scheduler's configuration.
pub fn prepare_hosted(
    scenario: &Scenario,
    log_dir: Option<PathBuf>,
    hosts: &dyn Fn(ActorId) -> bool,
) -> Result<Prepared, RunError> {
    let end = scenario.run.end.as_nanos();
    // Tenants stream their traces; only the WASC slot plan needs every row
    // before the run.
    let wasc = scenario.scheduler.slot_config == SlotConfig::Wasc;
    let traces: Vec<Option<Arc<Vec<TraceTask>>>> = scenario
        .traces
        .iter()
        .zip(&scenario.streams)
        .map(|(t, s)| match (t, s) {
            (Some(t), _) if wasc => t.rows().map(|rows| Some(Arc::new(rows))),
            (None, Some(s)) if wasc => every_task(s).map(|rows| Some(Arc::new(rows))),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()
        .map_err(RunError::Trace)?;
    let (primary_tenants, _) = scenario
        .scaled_primary_tenants()
        .map_err(RunError::PrimaryScaling)?;
    let runner = scenario.scheduler.external.as_ref().map(|cfg| {
        let base = scenario.base.as_path();
        move || -> Box<dyn dcemu_actors::external::Oracle> {
            Box::new(crate::external::Program::new(cfg, base))
        }
    });
    let model = model::build(&ModelSpec {
        server_types: &scenario.server_types,
        tenants: &scenario.tenants,
        primary_tenants: &primary_tenants,
        scheduler: &scenario.scheduler,
        topology: &scenario.topology,
        power: &scenario.power,
        packet_logs: scenario.output.packet_logs,
        applications: scenario.applications.as_ref(),
        traces: &traces,
        streams: &scenario.streams,
        seed: scenario.run.seed,
        end,
        storage: scenario.storage.as_ref(),
        workload: scenario.workload.as_ref(),
        external: runner
            .as_ref()
            .map(|r| r as dcemu_actors::external::OracleFactory<'_>),
        hosts,
    })?;
    let config = EngineConfig {
        lookahead: model.lookahead,
        end,
        seed: scenario.run.seed,
        reach: Arc::new(model.links.map_or(Reach::Uniform, Reach::Graph)),
        states: false,
        weights: None,
        logs: match (log_dir, scenario.output.actor_logs) {
            (_, false) => Logs::Off,
            (None, true) => Logs::InMemory,
            (Some(dir), true) => Logs::Files(dir),
        },
    };
    Ok(Prepared {
        config,
        names: model.names,
        actors: model.actors,
        slot_table: model.slot_table,
    })
}

/// Every task of a public-format trace, for the WASC slot plan's statistics
/// (the tenant itself reads the trace as it goes).
fn every_task(spec: &dcemu_actors::trace_formats::StreamSpec) -> Result<Vec<TraceTask>, String> {
    let mut stream =
        dcemu_actors::trace_formats::TraceStream::open(spec).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    while let Some(t) = stream.next_task().map_err(|e| e.to_string())? {
        rows.push(t);
    }
    Ok(rows)
}

/// Turns the engine's output into the results files and their digest; logs
/// the engine wrote to files are expected in `log_dir`. Single- and
/// multi-process runs both end here, so they write the same results.
pub fn assemble(
    scenario: &Scenario,
    mut output: EngineOutput,
    log_dir: Option<&Path>,
    actor_count: usize,
    slot_table: Option<String>,
    started: Instant,
) -> Result<Outcome, RunError> {
    let end = scenario.run.end.as_nanos();
    let (_, primary_factor) = scenario
        .scaled_primary_tenants()
        .map_err(RunError::PrimaryScaling)?;
    let trace_defects = trace_defects(scenario, &output);
    let merged = output.take_metrics();
    let tables = metrics::tables(&merged, end);
    let wall_metrics = metrics::wall_means(&merged);
    let (mut metrics, timeseries) = metrics::summarize(
        &output,
        merged,
        end,
        scenario.power.sample_interval.as_nanos(),
    );
    if let Some(factor) = primary_factor {
        metrics.insert("primary_scaling_factor".into(), factor.into());
    }
    let mut files = vec![
        (
            "scenario.toml".to_string(),
            Content::Bytes(scenario.to_toml().into_bytes()),
        ),
        (
            "metrics.json".to_string(),
            Content::Bytes(metrics::to_json(&metrics)),
        ),
        (
            "metrics.csv".to_string(),
            Content::Bytes(metrics::to_csv(&metrics)),
        ),
        ("timeseries.csv".to_string(), Content::Bytes(timeseries)),
    ];
    files.extend(
        tables
            .into_iter()
            .map(|(name, bytes)| (name, Content::Bytes(bytes))),
    );
    if let Some(table) = &slot_table {
        files.push((
            "slot_config.md".to_string(),
            Content::Bytes(table.clone().into_bytes()),
        ));
    }
    for (tenant, trace) in scenario.tenants.iter().zip(&scenario.traces) {
        if let Some(trace) = trace {
            files.push((
                LoadedTrace::stored_as(&tenant.name),
                Content::File(trace.path.clone()),
            ));
        }
    }
    let (events, windows, virtual_end) = (output.events, output.windows, output.virtual_end);
    let causal_steps = output.causal_steps;
    let loads = std::mem::take(&mut output.loads);
    let mut events_by_kind = std::collections::BTreeMap::new();
    for a in &output.actors {
        *events_by_kind
            .entry(actor_kind(&a.name).to_string())
            .or_default() += a.events;
    }
    let work_csv = crate::engine::balance::work_csv(
        output
            .actors
            .iter()
            .map(|a| (a.name.as_str(), a.events, a.busy_ns, a.held_bytes)),
    );
    let states = output
        .actors
        .iter_mut()
        .filter(|a| !a.state.is_null())
        .map(|a| (a.name.clone(), std::mem::take(&mut a.state)))
        .collect();
    if let Some(external) = &scenario.scheduler.external {
        files.extend(
            crate::external::program_files(&external.command, &scenario.base)
                .into_iter()
                .map(|(name, path)| (name, Content::File(path))),
        );
    }
    if scenario.output.actor_logs {
        files.extend(output.actors.into_iter().map(|a| {
            let content = match (a.log, log_dir) {
                (Some(bytes), _) => Content::Bytes(bytes),
                (None, Some(dir)) => Content::File(dir.join(format!("{}.jsonl", a.name))),
                (None, None) => Content::Bytes(Vec::new()),
            };
            (format!("actors/{}.jsonl", a.name), content)
        }));
    }
    let results = ResultSet::new(files);
    Ok(Outcome {
        digest: results.digest().map_err(RunError::Digest)?,
        results,
        metrics,
        events,
        windows,
        causal_steps,
        loads,
        events_by_kind,
        work_csv,
        virtual_end,
        actors: actor_count,
        wall: started.elapsed(),
        wall_metrics,
        slot_table,
        states,
        trace_defects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{self, Override, QUICKSTART};

    /// A node's share is built and nothing else: the actors `hosts` selects,
    /// each the kind its name says, while every name is still known (the
    /// engine addresses the others by id).
    #[test]
    fn prepare_hosted_builds_exactly_the_selected_actors() {
        let scenario = scenario::load("quickstart.toml", QUICKSTART, &[] as &[Override]).unwrap();
        let every = prepare(&scenario, None).unwrap();
        let odd = prepare_hosted(&scenario, None, &|id| id.0 % 2 == 1).unwrap();
        assert_eq!(odd.names, every.names);
        let ids: Vec<u32> = odd.actors.iter().map(|(id, _)| id.0).collect();
        let expected: Vec<u32> = (0..every.names.len() as u32)
            .filter(|i| i % 2 == 1)
            .collect();
        assert_eq!(ids, expected);
        for (id, actor) in &odd.actors {
            let kind = match actor {
                model::Node::Scheduler(_) => "scheduler",
                model::Node::Tenant(_) => "tenant",
                model::Node::Primary(_) => "primary",
                model::Node::Server(_) => "server",
                model::Node::Switch(_) => "switch",
                model::Node::NameNode(_) => "namenode",
            };
            let name = &odd.names[id.0 as usize];
            assert_eq!(name.split('-').next(), Some(kind), "{name}");
        }
        let none = prepare_hosted(&scenario, None, &|_| false).unwrap();
        assert!(none.actors.is_empty());
        assert_eq!(none.config.lookahead, every.config.lookahead);
    }
}
