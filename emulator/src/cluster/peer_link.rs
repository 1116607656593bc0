//! A node's links to its peers, as actix actors on the partition's thread.
//!
//! [`PeerLink`] reads one peer's frames, checks them (size, decoding, that
//! every envelope comes from the peer's actors to this node's) and hands
//! them to the partition; the first bad frame closes the link with its
//! reason. [`PeerAcceptor`] takes the peers that dial this node while the
//! mesh forms, checking each one's certificate and hello, and refuses (and
//! logs) any connection after.
//!
//! The partition's thread runs its own actix system ([`PeerSystem`]): the
//! links' actors run only while the thread sends or waits for a frame,
//! so a window costs no hand-off between threads (see ARCHITECTURE.md).

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use dcemu_actors::model::Msg;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use super::frames::{frames, same_limit};
use super::links::{CLOSE_BAD_INPUT, Inbound, Link, misrouted};
use super::local_link;
use super::tls;
use super::wire::{self, PeerFrame, WireError};

thread_local! {
    static PEER_SYSTEM: RefCell<Option<actix_rt::SystemRunner>> = const { RefCell::new(None) };
}

/// The actix system of the thread that runs a node's partition.
pub struct PeerSystem;

impl PeerSystem {
    /// Starts this thread's system on a current-thread tokio runtime (quinn
    /// drives its endpoint on it).
    pub fn install() -> std::io::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let runner = actix_rt::System::with_tokio_rt(move || rt);
        PEER_SYSTEM.with(|s| *s.borrow_mut() = Some(runner));
        Ok(())
    }

    /// Runs `f` to completion on this thread's system, and its actors
    /// meanwhile; `None` when this thread has no system.
    pub fn block_on<F: Future>(f: F) -> Option<F::Output> {
        PEER_SYSTEM.with(|s| s.borrow().as_ref().map(|runner| runner.block_on(f)))
    }

    /// Stops this thread's system.
    pub fn uninstall() {
        PEER_SYSTEM.with(|s| s.borrow_mut().take());
    }
}

/// Where a peer's frames come from: its QUIC stream or its same-host socket.
pub type PeerReader = Box<dyn tokio::io::AsyncRead + Unpin>;

/// Reads one peer's frames for the partition.
pub struct PeerLink<M> {
    me: usize,
    peer: usize,
    conn: quinn::Connection,
    recv: Option<PeerReader>,
    assignment: Arc<Vec<u32>>,
    max_frame: usize,
    to_partition: mpsc::UnboundedSender<Inbound<M>>,
}

impl<M> PeerLink<M> {
    /// `assignment[actor id]` is the node hosting each actor; `conn` is
    /// closed when `recv` brings bad input.
    pub fn new(
        me: usize,
        peer: usize,
        conn: quinn::Connection,
        recv: PeerReader,
        assignment: Arc<Vec<u32>>,
        max_frame: usize,
        to_partition: mpsc::UnboundedSender<Inbound<M>>,
    ) -> Self {
        PeerLink {
            me,
            peer,
            conn,
            recv: Some(recv),
            assignment,
            max_frame,
            to_partition,
        }
    }

    fn fail(&mut self, reason: String, bad_input: bool, ctx: &mut Context<Self>)
    where
        M: DeserializeOwned + 'static,
    {
        if bad_input {
            self.conn.close(CLOSE_BAD_INPUT.into(), reason.as_bytes());
        }
        let _ = self.to_partition.send(Inbound::Failed {
            peer: self.peer,
            reason,
        });
        ctx.stop();
    }
}

impl<M: DeserializeOwned + 'static> Actor for PeerLink<M> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(recv) = self.recv.take() {
            ctx.add_stream(frames::<PeerFrame<M>, _>(recv, self.max_frame, same_limit));
        }
    }
}

impl<M: DeserializeOwned + 'static> StreamHandler<Result<PeerFrame<M>, WireError>> for PeerLink<M> {
    fn handle(&mut self, item: Result<PeerFrame<M>, WireError>, ctx: &mut Context<Self>) {
        let frame = match item {
            Ok(frame) => frame,
            Err(e @ (WireError::TooLarge { .. } | WireError::Decode(_))) => {
                return self.fail(e.to_string(), true, ctx);
            }
            Err(e) => return self.fail(e.to_string(), false, ctx),
        };
        let batch = match frame {
            PeerFrame::Batch {
                report,
                last,
                envelopes,
            } => {
                if let Some(problem) = envelopes
                    .iter()
                    .find_map(|e| misrouted(e, self.me, self.peer, &self.assignment))
                {
                    return self.fail(problem, true, ctx);
                }
                Inbound::Batch {
                    from: self.peer,
                    report,
                    last,
                    envelopes,
                }
            }
            PeerFrame::End { round } => Inbound::End {
                from: self.peer,
                round,
            },
            PeerFrame::Hello { .. } | PeerFrame::Local { .. } | PeerFrame::LocalAnswer { .. } => {
                return self.fail(
                    "sent a handshake frame in the middle of the run".into(),
                    true,
                    ctx,
                );
            }
        };
        if self.to_partition.send(batch).is_err() {
            ctx.stop();
        }
    }

    /// A peer's stream ends after its last window (whose batch came first),
    /// or because the peer is gone: a killed process closes its same-host
    /// socket cleanly. The rounds tell the two apart.
    fn finished(&mut self, ctx: &mut Context<Self>) {
        let _ = self.to_partition.send(Inbound::Closed { peer: self.peer });
        ctx.stop();
    }
}

/// Takes the peers with a higher index than this node's as they dial it.
pub struct PeerAcceptor {
    endpoint: quinn::Endpoint,
    me: usize,
    nodes: Arc<Vec<wire::PeerInfo>>,
    run: Arc<str>,
    expected: usize,
    /// Offer each dialing peer a same-host link.
    same_host: bool,
    links: Vec<Link>,
    /// Taken when the mesh is complete: later connections are refused.
    complete: Option<oneshot::Sender<Vec<Link>>>,
}

impl PeerAcceptor {
    /// Accepts `expected` peers of run `run` on `endpoint`; the receiver
    /// gets their links once all came.
    pub fn start(
        endpoint: quinn::Endpoint,
        me: usize,
        nodes: Vec<wire::PeerInfo>,
        run: &str,
        expected: usize,
        same_host: bool,
    ) -> oneshot::Receiver<Vec<Link>> {
        let (complete, links) = oneshot::channel();
        Actor::start(PeerAcceptor {
            endpoint,
            me,
            nodes: Arc::new(nodes),
            run: Arc::from(run),
            expected,
            same_host,
            links: Vec::new(),
            complete: Some(complete),
        });
        links
    }

    fn hand_over_if_complete(&mut self) {
        if self.links.len() >= self.expected
            && let Some(complete) = self.complete.take()
        {
            self.links.sort_by_key(|l| l.peer);
            let _ = complete.send(std::mem::take(&mut self.links));
        }
    }
}

impl Actor for PeerAcceptor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.hand_over_if_complete();
        ctx.add_stream(futures_util::stream::unfold(
            self.endpoint.clone(),
            |e| async move {
                let incoming = e.accept().await?;
                Some((incoming, e))
            },
        ));
    }
}

impl StreamHandler<quinn::Incoming> for PeerAcceptor {
    fn handle(&mut self, incoming: quinn::Incoming, ctx: &mut Context<Self>) {
        let me = self.me;
        if self.complete.is_none() {
            eprintln!(
                "node {me}: refused a connection from {} (the mesh is complete)",
                incoming.remote_address()
            );
            incoming.refuse();
            return;
        }
        let from_addr = incoming.remote_address();
        let (nodes, run, same_host) = (self.nodes.clone(), self.run.clone(), self.same_host);
        ctx.spawn(
            async move { check_peer(incoming, me, &nodes, &run, same_host).await }
                .into_actor(self)
                .map(move |checked, act, _| {
                    match checked {
                        Ok(link) if act.complete.is_none() => {
                            link.conn.close(2u32.into(), b"mesh complete");
                        }
                        Ok(link) if act.links.iter().all(|l| l.peer != link.peer) => {
                            act.links.push(link)
                        }
                        Ok(link) => {
                            link.conn.close(2u32.into(), b"duplicate");
                            eprintln!(
                                "node {me}: refused a second connection from node {}",
                                link.peer
                            );
                        }
                        Err(why) => {
                            eprintln!(
                                "node {me}: refused a peer connection from {from_addr}: {why}"
                            )
                        }
                    }
                    act.hand_over_if_complete();
                }),
        );
    }
}

/// Checks a dialing peer: its certificate must be the one the coordinator
/// gave the node it claims to be, its hello must name this run. Then offers
/// it a same-host link (with `same_host`, if a socket can be opened).
async fn check_peer(
    incoming: quinn::Incoming,
    me: usize,
    nodes: &[wire::PeerInfo],
    run: &str,
    same_host: bool,
) -> Result<Link, String> {
    let conn = incoming.await.map_err(|x| x.to_string())?;
    let cert = tls::peer_cert(&conn).ok_or("no client certificate")?;
    let (mut send, mut recv) = timeout(Duration::from_secs(5), conn.accept_bi())
        .await
        .map_err(|_| "no hello".to_string())?
        .map_err(|x| x.to_string())?;
    let hello = wire::read::<PeerFrame<Msg>, _>(&mut recv, 1024)
        .await
        .map_err(|x| x.to_string())?;
    let Some(PeerFrame::Hello { from, run: theirs }) = hello else {
        conn.close(2u32.into(), b"expected hello");
        return Err("did not say hello".to_string());
    };
    if theirs != run {
        conn.close(2u32.into(), b"another run");
        return Err(format!(
            "it belongs to run {}, not to run {run}",
            theirs.chars().take(80).collect::<String>()
        ));
    }
    let from = from as usize;
    if from <= me || from >= nodes.len() || nodes[from].cert != cert {
        conn.close(2u32.into(), b"not that node");
        return Err(format!("claimed to be node {from} without its certificate"));
    }
    wire::write(
        &mut send,
        &PeerFrame::<Msg>::Hello {
            from: me as u32,
            run: run.to_string(),
        },
        wire::DEFAULT_MAX_FRAME,
    )
    .await
    .map_err(|x| x.to_string())?;
    let local = offer_local(&mut send, &mut recv, run, me, from, same_host).await?;
    Ok(Link {
        peer: from,
        conn,
        send,
        recv,
        local,
    })
}

/// The acceptor's side of a same-host link: offers a socket (or none) over
/// QUIC; if the dialer reached it, takes the connection that presents the
/// key.
async fn offer_local(
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    run: &str,
    me: usize,
    peer: usize,
    same_host: bool,
) -> Result<Option<local_link::LocalLink>, String> {
    let (offer, offered) = match same_host.then(|| local_link::offer(run, me, peer)) {
        Some(Ok((offer, offered))) => (Some(offer), Some(offered)),
        Some(Err(why)) => {
            eprintln!("node {me}: no same-host link to node {peer}: {why}");
            (None, None)
        }
        None => (None, None),
    };
    wire::write(
        send,
        &PeerFrame::<Msg>::Local { offer },
        wire::DEFAULT_MAX_FRAME,
    )
    .await
    .map_err(|x| x.to_string())?;
    let Some(offered) = offered else {
        return Ok(None);
    };
    let answer = timeout(
        Duration::from_secs(5),
        wire::read::<PeerFrame<Msg>, _>(recv, 1024),
    )
    .await
    .map_err(|_| "no answer to the same-host offer".to_string())?
    .map_err(|x| x.to_string())?;
    match answer {
        Some(PeerFrame::LocalAnswer { connected: false }) => Ok(None),
        Some(PeerFrame::LocalAnswer { connected: true }) => offered
            .accept(std::time::Instant::now() + Duration::from_secs(5))
            .await
            .map(Some)
            .map_err(|x| format!("same-host link: {x}")),
        other => Err(format!(
            "expected an answer to the same-host offer, got {other:?}"
        )),
    }
}
