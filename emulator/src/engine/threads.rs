//! [`run_threads`]: a run on partitions that are threads of this process,
//! over in-memory channels; the engine's types and the partitions' loop
//! come from `mod.rs` and `partition.rs`, which do not import this.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use dcemu_actors::kernel::{Actor, ActorId};

use super::partition;
use super::transport::in_memory_mesh;
use super::{
    EngineConfig, EngineError, EngineOutput, MAX_PARTITIONS, Progress, weighted_reach_assignment,
};

/// Runs `actors` (in id order, with their names) split into `partitions`
/// threads of this process, connected by in-memory channels.
pub fn run_threads<A: Actor>(
    config: &EngineConfig,
    actors: Vec<(String, A)>,
    partitions: usize,
    progress: Option<Arc<Progress>>,
) -> Result<EngineOutput, EngineError>
where
    A::Msg: Send,
{
    run_threads_with(config, actors, partitions, progress, false)
}

/// [`run_threads`], with partitions sitting rounds out when `sit_out`.
pub(crate) fn run_threads_with<A: Actor>(
    config: &EngineConfig,
    actors: Vec<(String, A)>,
    partitions: usize,
    progress: Option<Arc<Progress>>,
    sit_out: bool,
) -> Result<EngineOutput, EngineError>
where
    A::Msg: Send,
{
    if partitions == 0 || partitions > MAX_PARTITIONS {
        return Err(EngineError::Setup(format!(
            "partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}"
        )));
    }
    let assignment = weighted_reach_assignment(
        &config.reach,
        actors.len(),
        partitions,
        config.weights.as_deref().map(Vec::as_slice),
    );
    let progress = progress.unwrap_or_else(|| Progress::new(partitions));
    if progress.vtime.len() != partitions {
        return Err(EngineError::Setup(
            "progress counters sized for another partition count".into(),
        ));
    }
    let hosted = actors
        .into_iter()
        .enumerate()
        .map(|(i, (name, actor))| (ActorId(i as u32), name, actor))
        .collect();
    let mut parts = partition::split(config, hosted, &assignment, partitions)?;
    let transports = in_memory_mesh::<A::Msg>(partitions)
        .into_iter()
        .map(|t| t.sitting_out(sit_out));

    let results: Vec<Result<partition::PartitionOutput, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .drain(..)
            .zip(transports)
            .enumerate()
            .map(|(i, (part, transport))| {
                let progress = progress.clone();
                std::thread::Builder::new()
                    .name(format!("partition-{i}"))
                    .spawn_scoped(s, move || part.run(transport, &progress))
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| match h {
                Err(e) => Err(EngineError::Setup(format!(
                    "cannot start the thread of partition {i}: {e}"
                ))),
                Ok(h) => h.join().unwrap_or_else(|panic| {
                    Err(EngineError::Panicked {
                        partition: i,
                        message: panic_message(&panic),
                    })
                }),
            })
            .collect()
    });
    progress.done.store(true, Ordering::Relaxed);
    partition::combine(results, config.end)
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
