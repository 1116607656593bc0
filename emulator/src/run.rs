//! One run, start to finish: scenario → network → actors → engine → results.

use std::sync::Arc;
use std::time::{Duration as WallDuration, Instant};

use dcemu_actors::model::{self, ModelSpec};
use dcemu_topology::{Network, SimTime};

use crate::engine::{EngineConfig, EngineError, Progress, run_threads};
use crate::metrics::{self, MetricMap};
use crate::results::ResultSet;
use crate::scenario::Scenario;

/// How to execute a scenario (none of it reaches the results).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Partitions (threads) to split the actors into; 0 means 1.
    pub partitions: usize,
    /// Live counters for a progress display.
    pub progress: Option<Arc<Progress>>,
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    pub results: ResultSet,
    pub digest: String,
    pub metrics: MetricMap,
    pub events: u64,
    pub windows: u64,
    pub virtual_end: SimTime,
    pub actors: usize,
    pub wall: WallDuration,
}

/// Builds the model of `scenario` and runs it to its end.
pub fn execute(scenario: &Scenario, options: &RunOptions) -> Result<Outcome, EngineError> {
    let started = Instant::now();
    let network = Network::build(&scenario.topology);
    let config = EngineConfig {
        lookahead: network.min_latency(),
        end: scenario.run.end.as_nanos(),
        seed: scenario.run.seed,
        logs: scenario.output.actor_logs,
    };
    let actors = model::build(&ModelSpec {
        server_types: &scenario.server_types,
        tenants: &scenario.tenants,
        scheduler: &scenario.scheduler,
        network,
        end: config.end,
    });
    let actor_count = actors.len();
    let output = run_threads(
        &config,
        actors,
        options.partitions.max(1),
        options.progress.clone(),
    )?;
    let metrics = metrics::summarize(&output);
    let mut files = vec![
        ("scenario.toml".to_string(), scenario.to_toml().into_bytes()),
        ("metrics.json".to_string(), metrics::to_json(&metrics)),
        ("metrics.csv".to_string(), metrics::to_csv(&metrics)),
    ];
    let (events, windows, virtual_end) = (output.events, output.windows, output.virtual_end);
    if scenario.output.actor_logs {
        files.extend(
            output
                .actors
                .into_iter()
                .map(|a| (format!("actors/{}.jsonl", a.name), a.log)),
        );
    }
    let results = ResultSet::new(files);
    Ok(Outcome {
        digest: results.digest(),
        results,
        metrics,
        events,
        windows,
        virtual_end,
        actors: actor_count,
        wall: started.elapsed(),
    })
}
