//! Multi-process runs: a coordinator and node processes over QUIC.
mod admission;
mod control_link;
mod frames;
mod gather;
mod links;
pub mod local_link;
mod log_writer;
pub mod node;
mod node_link;
mod peer_link;
mod signals;
pub mod tls;
pub mod transport;
pub mod wire;

/// Bytes of an actor's log per frame when nodes hand logs to the coordinator.
pub const LOG_CHUNK: usize = 1 << 20;

/// Why a multi-process run failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Bad input (flags, scenario, secret): exit code 2.
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Node(String),
    #[error("{0}")]
    Coordinator(String),
}
pub mod coordinator;

/// The process's actix system (its process-level actors run on the main
/// thread), over a tokio runtime whose one worker drives quinn's endpoint:
/// what [`coordinator::run_coordinator`] and [`node::run_node`] run on
/// (`dcemu coordinator` / `dcemu node`, or a binary of a user's own that
/// registers its policies first).
pub fn runtime() -> std::io::Result<actix_rt::SystemRunner> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    Ok(actix_rt::System::with_tokio_rt(move || rt))
}
