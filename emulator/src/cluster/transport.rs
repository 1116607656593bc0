//! [`QuicTransport`]: the engine's [`Transport`] between node processes.
//!
//! Every pair of nodes shares one QUIC connection with one bidirectional
//! stream. Per window, each node sends every peer one batch (split into
//! frames under the size limit, the last marked) that carries its
//! contribution to the next window time, exactly as the in-memory transport
//! does; so the window barrier is a single all-to-all round between nodes,
//! and the coordinator is not on the per-window path.
//!
//! Encoding and writing run in the exchange itself, reading and decoding
//! in one [`PeerLink`] actor per peer; both on the partition's thread,
//! whose actix system ([`PeerSystem`]) runs while the exchange waits. Bytes from a peer are checked before they reach
//! the engine: an oversized or undecodable frame, or an envelope whose
//! sender the peer does not host or whose receiver this node does not host,
//! closes that link with the reason, and the run stops with an error.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use dcemu_actors::kernel::Envelope;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::local_link::LocalLink;
use super::peer_link::{PeerLink, PeerReader, PeerSystem};
use super::wire::{self, BarrierStats, PeerFrame};
use crate::engine::{Horizon, Transport, TransportError};
use actix::Actor;

/// Envelopes per frame before a batch is split (frames over the size limit
/// are split further).
const ENVELOPES_PER_FRAME: usize = 4096;

/// Bytes a same-host link reads at once: a window's frames (length and
/// body) then cost one system call instead of two each.
const READ_BUFFER: usize = 256 << 10;

/// QUIC application error code when a link is closed for bad input.
pub const CLOSE_BAD_INPUT: u32 = 2;
/// QUIC application error code when a node stops early.
pub const CLOSE_ABORT: u32 = 3;

/// What reaches the partition thread.
pub enum Inbound<M> {
    Batch {
        from: usize,
        window: u64,
        horizon: Horizon,
        last: bool,
        envelopes: Vec<Envelope<M>>,
    },
    /// A link failed (the reason names what the peer did wrong, if anything).
    Failed { peer: usize, reason: String },
    /// A peer's stream ended: it finished its last window, or it is gone.
    Closed { peer: usize },
    /// The node is told to stop (by the coordinator, or on Ctrl-C).
    Stop { reason: String },
}

struct OutBatch<M> {
    window: u64,
    horizon: Horizon,
    envelopes: Vec<Envelope<M>>,
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

/// Where this node's batches to one peer go.
enum PeerWriter {
    Quic(quinn::SendStream),
    Local(tokio::net::unix::OwnedWriteHalf),
}

impl PeerWriter {
    fn stream(&mut self) -> &mut (dyn AsyncWrite + Unpin) {
        match self {
            PeerWriter::Quic(s) => s,
            PeerWriter::Local(s) => s,
        }
    }
}

/// One node's end of the mesh.
///
/// The partition thread's actix system runs only while the thread waits in
/// [`Transport::exchange`]: sending, receiving and decoding then all happen
/// on that one thread, so a window costs no hand-offs between threads,
/// only the network round itself.
pub struct QuicTransport<M> {
    window: u64,
    sends: Vec<Option<PeerWriter>>,
    conns: Vec<quinn::Connection>,
    /// Smallest round trip measured on the same-host links, if any.
    local_rtt: Option<std::time::Duration>,
    /// Whether any peer is reached over QUIC (its RTT then counts too).
    quic_links: bool,
    inbox: mpsc::UnboundedReceiver<Inbound<M>>,
    early: Vec<Inbound<M>>,
    /// Peers whose stream ended: none of them may be needed again.
    closed: Vec<bool>,
    max_frame: usize,
    barrier: Arc<Mutex<BarrierStats>>,
}

impl<M> QuicTransport<M>
where
    M: Serialize + DeserializeOwned + Send + 'static,
{
    /// Starts a [`PeerLink`] actor per link; call it within the
    /// [`PeerSystem`] of the thread the links were made on. A node that
    /// hosts no actor takes no part in the windows (nothing can reach it,
    /// and it sends nothing): its peers neither wait for it nor send to it,
    /// and its own window loop ends at once.
    /// `assignment[actor id]` is the node hosting each actor; `inbox`
    /// receives what the links decode, and whatever else holds its sender
    /// (the control link) can stop the partition through it.
    pub fn start(
        me: usize,
        nodes: usize,
        links: Vec<Link>,
        assignment: Arc<Vec<u32>>,
        max_frame: usize,
        inbox: (
            mpsc::UnboundedSender<Inbound<M>>,
            mpsc::UnboundedReceiver<Inbound<M>>,
        ),
        barrier: Arc<Mutex<BarrierStats>>,
    ) -> Self {
        let (to_partition, inbox) = inbox;
        let mut sends: Vec<Option<PeerWriter>> = (0..nodes).map(|_| None).collect();
        let mut conns = Vec::new();
        let (mut local_rtt, mut quic_links, mut local_links) = (None, false, 0);
        let hosts_actors = |node: usize| assignment.iter().any(|&p| p as usize == node);
        let in_windows = hosts_actors(me);
        for link in links {
            if !in_windows || !hosts_actors(link.peer) {
                continue;
            }
            conns.push(link.conn.clone());
            let reader: PeerReader = match link.local {
                Some(local) => {
                    local_links += 1;
                    local_rtt = [local_rtt, Some(local.rtt)].into_iter().flatten().min();
                    let (read, write) = local.stream.into_split();
                    sends[link.peer] = Some(PeerWriter::Local(write));
                    Box::new(tokio::io::BufReader::with_capacity(READ_BUFFER, read))
                }
                None => {
                    quic_links = true;
                    sends[link.peer] = Some(PeerWriter::Quic(link.send));
                    Box::new(link.recv)
                }
            };
            PeerLink::new(
                me,
                link.peer,
                link.conn,
                reader,
                assignment.clone(),
                max_frame,
                to_partition.clone(),
            )
            .start();
        }
        if let Ok(mut stats) = barrier.lock() {
            stats.local_links = local_links;
        }
        QuicTransport {
            window: 0,
            sends,
            conns,
            local_rtt,
            quic_links,
            inbox,
            early: Vec::new(),
            closed: vec![false; nodes],
            max_frame,
            barrier,
        }
    }

    /// Finishes the streams and waits (boundedly) until the peers have read
    /// everything, so a node leaving first never strands its last batch.
    /// A same-host socket keeps what was written after its writer is gone,
    /// so it is only shut down.
    pub fn close(&mut self, limit: std::time::Duration) {
        let quic_rtt = if self.quic_links {
            self.conns.iter().map(quinn::Connection::rtt).min()
        } else {
            None
        };
        let rtt = [quic_rtt, self.local_rtt].into_iter().flatten().min();
        if let (Some(rtt), Ok(mut stats)) = (rtt, self.barrier.lock()) {
            stats.rtt_ns = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX);
        }
        let mut sends: Vec<PeerWriter> = self.sends.iter_mut().filter_map(Option::take).collect();
        PeerSystem::block_on(async {
            let _ = tokio::time::timeout(limit, async {
                for s in &mut sends {
                    match s {
                        PeerWriter::Quic(s) => {
                            let _ = s.finish();
                        }
                        PeerWriter::Local(s) => {
                            let _ = s.shutdown().await;
                        }
                    }
                }
                for s in &mut sends {
                    if let PeerWriter::Quic(s) = s {
                        let _ = s.stopped().await;
                    }
                }
            })
            .await;
        });
    }
}

async fn write_batch<M: Serialize>(
    send: &mut (dyn AsyncWrite + Unpin),
    batch: OutBatch<M>,
    max_frame: usize,
) -> Result<(), wire::WireError> {
    let mut frames = Vec::new();
    let mut rest = batch.envelopes;
    loop {
        let tail = rest.split_off(rest.len().min(ENVELOPES_PER_FRAME));
        let chunk = std::mem::replace(&mut rest, tail);
        encode_chunks(chunk, batch.window, &batch.horizon, max_frame, &mut frames)?;
        if rest.is_empty() {
            break;
        }
    }
    // mark the last frame; re-encoding only it is cheap
    if let Some((envelopes, _)) = frames.pop() {
        let frame = PeerFrame::Batch {
            window: batch.window,
            horizon: batch.horizon,
            last: true,
            envelopes,
        };
        let bytes = wire::encode(&frame, max_frame)?;
        let PeerFrame::Batch { envelopes, .. } = frame else {
            unreachable!("built above as a batch")
        };
        frames.push((envelopes, bytes));
    }
    for (_, bytes) in frames {
        send.write_all(&bytes)
            .await
            .map_err(|e| wire::WireError::Stream(e.to_string()))?;
    }
    Ok(())
}

/// Encodes `chunk` as one or more non-final frames under `max_frame`.
fn encode_chunks<M: Serialize>(
    chunk: Vec<Envelope<M>>,
    window: u64,
    horizon: &Horizon,
    max_frame: usize,
    out: &mut Vec<(Vec<Envelope<M>>, Vec<u8>)>,
) -> Result<(), wire::WireError> {
    let frame = PeerFrame::Batch {
        window,
        horizon: horizon.clone(),
        last: false,
        envelopes: chunk,
    };
    let result = wire::encode(&frame, max_frame);
    let PeerFrame::Batch { mut envelopes, .. } = frame else {
        unreachable!("built above as a batch")
    };
    match result {
        Ok(bytes) => {
            out.push((envelopes, bytes));
            Ok(())
        }
        Err(wire::WireError::TooLarge { .. }) if envelopes.len() > 1 => {
            let second = envelopes.split_off(envelopes.len() / 2);
            encode_chunks(envelopes, window, horizon, max_frame, out)?;
            encode_chunks(second, window, horizon, max_frame, out)
        }
        Err(e) => Err(e),
    }
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

/// A peer whose stream ended while this node still needs its batches.
fn gone(peer: usize, window: u64) -> TransportError {
    TransportError::Link {
        peer,
        reason: format!("it closed its link before window {window}"),
    }
}

impl<M: Serialize + Send> QuicTransport<M> {
    async fn exchange_async(
        &mut self,
        outgoing: &mut [Vec<Envelope<M>>],
        local: &Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Horizon, TransportError> {
        let window = self.window;
        self.window += 1;
        let mut peers = 0;
        for (peer, send) in self.sends.iter_mut().enumerate() {
            let Some(send) = send else { continue };
            peers += 1;
            let batch = OutBatch {
                window,
                horizon: local.clone(),
                envelopes: std::mem::take(&mut outgoing[peer]),
            };
            write_batch(send.stream(), batch, self.max_frame)
                .await
                .map_err(|e| TransportError::Link {
                    peer,
                    reason: format!("cannot send: {e}"),
                })?;
        }
        let mut agreed = local.clone();
        let mut complete = 0;
        let mut done = vec![false; self.sends.len()];
        if let Some(peer) = self.closed.iter().position(|&c| c) {
            return Err(gone(peer, window));
        }
        let mut pending = std::mem::take(&mut self.early).into_iter();
        while complete < peers {
            let item = match pending.next() {
                Some(item) => item,
                None => self
                    .inbox
                    .recv()
                    .await
                    .ok_or(TransportError::PeerGone { peer: usize::MAX })?,
            };
            match item {
                Inbound::Batch {
                    from,
                    window: w,
                    horizon,
                    last,
                    envelopes,
                } => {
                    if w == window {
                        incoming.extend(envelopes);
                        if last {
                            agreed
                                .merge(&horizon)
                                .map_err(|reason| TransportError::Link { peer: from, reason })?;
                            complete += 1;
                            if let Some(d) = done.get_mut(from) {
                                *d = true;
                            }
                        }
                    } else if w == window + 1 {
                        self.early.push(Inbound::Batch {
                            from,
                            window: w,
                            horizon,
                            last,
                            envelopes,
                        });
                    } else {
                        return Err(TransportError::OutOfStep {
                            peer: from,
                            got: w,
                            expected: window,
                        });
                    }
                }
                Inbound::Failed { peer, reason } => {
                    return Err(TransportError::Link { peer, reason });
                }
                Inbound::Closed { peer } => {
                    if !done.get(peer).copied().unwrap_or(false) {
                        return Err(gone(peer, window));
                    }
                    if let Some(c) = self.closed.get_mut(peer) {
                        *c = true;
                    }
                }
                Inbound::Stop { reason } => return Err(TransportError::Stopped { reason }),
            }
        }
        Ok(agreed)
    }
}

impl<M: Serialize + Send> Transport<M> for QuicTransport<M> {
    fn exchange(
        &mut self,
        outgoing: &mut [Vec<Envelope<M>>],
        local: &Horizon,
        incoming: &mut Vec<Envelope<M>>,
    ) -> Result<Horizon, TransportError> {
        let started = Instant::now();
        let next = PeerSystem::block_on(self.exchange_async(outgoing, local, incoming))
            .ok_or_else(|| TransportError::Stopped {
                reason: "the partition's thread has no peer system".into(),
            })??;
        if let Ok(mut stats) = self.barrier.lock() {
            stats.record(started.elapsed().as_nanos() as u64);
        }
        Ok(next)
    }

    fn abort(&mut self) {
        // a same-host socket's peer sees its end at once
        for send in &mut self.sends {
            if matches!(send, Some(PeerWriter::Local(_))) {
                *send = None;
            }
        }
        for conn in &self.conns {
            conn.close(CLOSE_ABORT.into(), b"node stopped early");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::tls::{self, NodeKey, RunCa};
    use dcemu_actors::kernel::ActorId;
    use std::time::Duration;

    /// Node 0's peer endpoint and a connection to it from node 1 (both
    /// with certificates of one run CA); what node 0's reader of that link
    /// reports after node 1 sends `bytes`.
    async fn reader_reaction(bytes: Vec<u8>) -> String {
        let ca = RunCa::generate().unwrap();
        let (k0, k1) = (NodeKey::generate().unwrap(), NodeKey::generate().unwrap());
        let id0 = k0.identity(ca.sign_node(&k0.csr, 0).unwrap());
        let id1 = k1.identity(ca.sign_node(&k1.csr, 1).unwrap());
        let limit = Duration::from_secs(5);
        let server = quinn::Endpoint::server(
            tls::peer_server(&ca.cert_der(), &id0, limit).unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap();
        let client = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let server_addr = server.local_addr().unwrap();
        let accepting = {
            let server = server.clone();
            tokio::spawn(async move { server.accept().await.unwrap().await.unwrap() })
        };
        let conn = client
            .connect_with(
                tls::peer_client(&ca.cert_der(), &id1, limit).unwrap(),
                server_addr,
                &tls::node_dns_name(0),
            )
            .unwrap()
            .await
            .unwrap();
        let (mut send, _recv) = conn.open_bi().await.unwrap();
        send.write_all(&bytes).await.unwrap();
        let accepted = accepting.await.unwrap();
        let (_send, recv) = accepted.accept_bi().await.unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel::<Inbound<()>>();
        PeerLink::new(
            0,
            1,
            accepted.clone(),
            Box::new(recv),
            Arc::new(vec![0, 1]),
            1024,
            tx,
        )
        .start();
        let reason = match tokio::time::timeout(limit, rx.recv()).await {
            Ok(Some(Inbound::Failed { peer: 1, reason })) => reason,
            Ok(Some(Inbound::Batch { .. })) => "accepted a batch".into(),
            _ => "no reaction".into(),
        };
        // the offending link is closed by the receiver
        let closed = tokio::time::timeout(limit, conn.closed()).await;
        assert!(closed.is_ok(), "the link stayed open after: {reason}");
        reason
    }

    fn batch(src: u32, dst: u32) -> Vec<u8> {
        let frame = PeerFrame::Batch {
            window: 0,
            horizon: Horizon::idle(2),
            last: true,
            envelopes: vec![env(src, dst)],
        };
        wire::encode(&frame, 1024).unwrap()
    }

    #[actix_rt::test]
    async fn bad_bytes_from_a_peer_close_its_link_with_the_reason() {
        let garbage = vec![0, 0, 0, 3, 0xff, 0xff, 0xff];
        assert!(reader_reaction(garbage).await.contains("undecodable"));
        let oversized = (1u32 << 20).to_be_bytes().to_vec();
        assert!(reader_reaction(oversized).await.contains("over the limit"));
        let foreign = batch(0, 0); // from actor 0, which node 1 does not host
        assert!(reader_reaction(foreign).await.contains("does not host"));
    }

    #[tokio::test]
    async fn a_process_without_a_run_certificate_cannot_reach_a_node() {
        let ca = RunCa::generate().unwrap();
        let k0 = NodeKey::generate().unwrap();
        let id0 = k0.identity(ca.sign_node(&k0.csr, 0).unwrap());
        let limit = Duration::from_secs(5);
        let server = quinn::Endpoint::server(
            tls::peer_server(&ca.cert_der(), &id0, limit).unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap();
        // a rogue: trusts anything, presents no certificate
        let rogue = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let attempt = rogue
            .connect_with(
                tls::bootstrap_client(limit).unwrap(),
                server.local_addr().unwrap(),
                &tls::node_dns_name(0),
            )
            .unwrap();
        let accepted = server.accept().await.unwrap().await;
        assert!(
            accepted.is_err(),
            "the node accepted a client without a certificate"
        );
        let _ = attempt.await;
    }

    fn env(src: u32, dst: u32) -> Envelope<()> {
        Envelope {
            deliver_at: 1,
            src: ActorId(src),
            dst: ActorId(dst),
            src_seq: 0,
            payload: (),
            causal_hops: 0,
        }
    }

    #[test]
    fn envelopes_must_come_from_the_peers_actors_to_ours() {
        let assignment = [0, 0, 1, 1];
        assert_eq!(misrouted(&env(2, 0), 0, 1, &assignment), None);
        assert!(
            misrouted(&env(0, 1), 0, 1, &assignment)
                .unwrap()
                .contains("does not host")
        );
        assert!(
            misrouted(&env(3, 2), 0, 1, &assignment)
                .unwrap()
                .contains("this node does not host")
        );
        assert!(misrouted(&env(9, 0), 0, 1, &assignment).is_some());
    }
}
