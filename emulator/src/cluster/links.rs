//! What a node's peer links (`peer_link.rs`) and its transport
//! (`transport.rs`) share: the established links, what reaches the
//! partition thread, the QUIC close codes, and the check that refuses a
//! misrouted envelope. A leaf, so the two import it and not each other.

use std::sync::Arc;

use dcemu_actors::kernel::Envelope;

use super::local_link::LocalLink;
use crate::engine::Report;

/// QUIC application error code when a link is closed for bad input.
pub const CLOSE_BAD_INPUT: u32 = 2;

/// QUIC application error code when a node stops early.
pub const CLOSE_ABORT: u32 = 3;

/// What reaches the partition thread.
pub enum Inbound<M> {
    Batch {
        from: usize,
        report: Arc<Report>,
        last: bool,
        envelopes: Vec<Envelope<M>>,
    },
    End {
        from: usize,
        round: u64,
    },
    /// A link failed (the reason names what the peer did wrong, if anything).
    Failed {
        peer: usize,
        reason: String,
    },
    /// A peer's stream ended: it finished its last window, or it is gone.
    Closed {
        peer: usize,
    },
    /// The node is told to stop (by the coordinator, or on Ctrl-C).
    Stop {
        reason: String,
    },
}

/// One established link to a peer node: its QUIC connection, and the
/// same-host socket that carries the batches instead when the two nodes
/// share a network namespace.
pub struct Link {
    pub peer: usize,
    pub conn: quinn::Connection,
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
    pub local: Option<LocalLink>,
}

/// Why an envelope from `peer` must be refused, if it must.
pub fn misrouted<M>(
    env: &Envelope<M>,
    me: usize,
    peer: usize,
    assignment: &[u32],
) -> Option<String> {
    let host = |id: u32| assignment.get(id as usize).map(|&p| p as usize);
    match (host(env.src.0), host(env.dst.0)) {
        (Some(src), _) if src != peer => Some(format!(
            "sent an envelope from actor #{}, which it does not host (node {src} does)",
            env.src.0
        )),
        (_, Some(dst)) if dst != me => Some(format!(
            "sent an envelope for actor #{}, which this node does not host (node {dst} does)",
            env.dst.0
        )),
        (None, _) | (_, None) => Some(format!(
            "sent an envelope between unknown actors #{} → #{}",
            env.src.0, env.dst.0
        )),
        _ => None,
    }
}
