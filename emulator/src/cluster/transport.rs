//! [`QuicTransport`]: the engine's [`Transport`] between node processes.
//!
//! Every pair of nodes shares one QUIC connection with one bidirectional
//! stream (or, on one host, a same-host socket). A round's frame to a peer
//! (see `engine::rounds`) is split into wire frames under the size limit,
//! the last marked, and reassembled here; the coordinator is not on the
//! per-window path.
//!
//! Encoding and writing run in [`Transport::send`], reading and decoding in
//! one [`PeerLink`] actor per peer; both on the partition's thread, whose
//! actix system ([`PeerSystem`]) runs while the partition sends or waits.
//! Bytes from a peer are checked before they reach the engine: an oversized
//! or undecodable frame, or an envelope whose sender the peer does not host
//! or whose receiver this node does not host, closes that link with the
//! reason, and the run stops with an error.

use std::sync::{Arc, Mutex};

use dcemu_actors::kernel::Envelope;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::links::{CLOSE_ABORT, Inbound, Link};
use super::peer_link::{PeerLink, PeerReader, PeerSystem};
use super::wire::{self, BarrierStats, PeerFrame};
use crate::engine::{Frame, Received, Report, Transport, TransportError};
use actix::Actor;

/// Envelopes per frame before a batch is split (frames over the size limit
/// are split further).
const ENVELOPES_PER_FRAME: usize = 4096;

/// Bytes a same-host link reads at once: a window's frames (length and
/// body) then cost one system call instead of two each.
const READ_BUFFER: usize = 256 << 10;

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
/// The partition thread's actix system runs only while the thread sends or
/// waits for a frame: sending, receiving and decoding then all happen on
/// that one thread, so a window costs no hand-offs between threads, only
/// the network round itself.
pub struct QuicTransport<M> {
    sends: Vec<Option<PeerWriter>>,
    conns: Vec<quinn::Connection>,
    /// Smallest round trip measured on the same-host links, if any.
    local_rtt: Option<std::time::Duration>,
    /// Whether any peer is reached over QUIC (its RTT then counts too).
    quic_links: bool,
    inbox: mpsc::UnboundedReceiver<Inbound<M>>,
    /// Envelopes of each peer's frame being reassembled.
    partial: Vec<Vec<Envelope<M>>>,
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
            sends,
            conns,
            local_rtt,
            quic_links,
            inbox,
            partial: (0..nodes).map(|_| Vec::new()).collect(),
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

/// Writes one round's frame to a peer, split into wire frames under
/// `max_frame`.
async fn write_frame<M: Serialize>(
    send: &mut (dyn AsyncWrite + Unpin),
    frame: Frame<M>,
    max_frame: usize,
) -> Result<(), wire::WireError> {
    let (report, mut rest) = match frame {
        Frame::Batch { report, envelopes } => (report, envelopes),
        Frame::End { round } => {
            let bytes = wire::encode(&PeerFrame::<M>::End { round }, max_frame)?;
            return write_all(send, &bytes).await;
        }
    };
    let mut frames = Vec::new();
    loop {
        let tail = rest.split_off(rest.len().min(ENVELOPES_PER_FRAME));
        let chunk = std::mem::replace(&mut rest, tail);
        encode_chunks(chunk, &report, max_frame, &mut frames)?;
        if rest.is_empty() {
            break;
        }
    }
    // mark the last frame; re-encoding only it is cheap
    if let Some((envelopes, _)) = frames.pop() {
        let frame = PeerFrame::Batch {
            report,
            last: true,
            envelopes,
        };
        let bytes = wire::encode(&frame, max_frame)?;
        frames.push((Vec::new(), bytes));
    }
    for (_, bytes) in frames {
        write_all(send, &bytes).await?;
    }
    Ok(())
}

async fn write_all(
    send: &mut (dyn AsyncWrite + Unpin),
    bytes: &[u8],
) -> Result<(), wire::WireError> {
    send.write_all(bytes)
        .await
        .map_err(|e| wire::WireError::Stream(e.to_string()))
}

/// Encodes `chunk` as one or more non-final frames under `max_frame`.
fn encode_chunks<M: Serialize>(
    chunk: Vec<Envelope<M>>,
    report: &Arc<Report>,
    max_frame: usize,
    out: &mut Vec<(Vec<Envelope<M>>, Vec<u8>)>,
) -> Result<(), wire::WireError> {
    let frame = PeerFrame::Batch {
        report: report.clone(),
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
            encode_chunks(envelopes, report, max_frame, out)?;
            encode_chunks(second, report, max_frame, out)
        }
        Err(e) => Err(e),
    }
}

impl<M: Serialize + Send> QuicTransport<M> {
    async fn send_async(&mut self, frames: Vec<(usize, Frame<M>)>) -> Result<(), TransportError> {
        let mut quic = false;
        for (peer, frame) in frames {
            let Some(send) = self.sends.get_mut(peer).and_then(Option::as_mut) else {
                return Err(TransportError::PeerGone { peer });
            };
            quic |= matches!(send, PeerWriter::Quic(_));
            write_frame(send.stream(), frame, self.max_frame)
                .await
                .map_err(|e| TransportError::Link {
                    peer,
                    reason: format!("cannot send: {e}"),
                })?;
        }
        if quic {
            // let the connection's driver put the data on the wire now,
            // not at this thread's next wait
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// What a decoded item means to the engine, once a peer's frame is whole.
    fn received(&mut self, item: Inbound<M>) -> Result<Option<Received<M>>, TransportError> {
        match item {
            Inbound::Batch {
                from,
                report,
                last,
                envelopes,
            } => {
                let partial = self
                    .partial
                    .get_mut(from)
                    .ok_or(TransportError::PeerGone { peer: from })?;
                partial.extend(envelopes);
                Ok(last.then(|| Received::Frame {
                    from,
                    frame: Frame::Batch {
                        report,
                        envelopes: std::mem::take(partial),
                    },
                }))
            }
            Inbound::End { from, round } => Ok(Some(Received::Frame {
                from,
                frame: Frame::End { round },
            })),
            Inbound::Closed { peer } => Ok(Some(Received::Closed { peer })),
            Inbound::Failed { peer, reason } => Err(TransportError::Link { peer, reason }),
            Inbound::Stop { reason } => Err(TransportError::Stopped { reason }),
        }
    }
}

impl<M: Serialize + Send> Transport<M> for QuicTransport<M> {
    fn send(&mut self, frames: Vec<(usize, Frame<M>)>) -> Result<(), TransportError> {
        if frames.is_empty() {
            return Ok(());
        }
        PeerSystem::block_on(self.send_async(frames)).ok_or_else(no_system)?
    }

    fn recv(&mut self) -> Result<Received<M>, TransportError> {
        loop {
            let item = match self.inbox.try_recv() {
                Ok(item) => item,
                Err(mpsc::error::TryRecvError::Empty) => PeerSystem::block_on(self.inbox.recv())
                    .ok_or_else(no_system)?
                    .ok_or(TransportError::PeerGone { peer: usize::MAX })?,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    return Err(TransportError::PeerGone { peer: usize::MAX });
                }
            };
            if let Some(received) = self.received(item)? {
                return Ok(received);
            }
        }
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

fn no_system() -> TransportError {
    TransportError::Stopped {
        reason: "the partition's thread has no peer system".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::links::misrouted;
    use crate::cluster::tls::{self, NodeKey, RunCa};
    use crate::engine::Horizon;
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
            report: Arc::new(Report {
                round: 0,
                horizon: Horizon::idle(2),
                standing: Horizon::idle(2),
                sends_to: vec![0],
                wake: None,
            }),
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
