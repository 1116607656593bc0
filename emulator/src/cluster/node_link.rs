//! The coordinator's end of one node's control link: it reads the node's
//! messages (one frame at a time, in order) and forwards them to the run's
//! [`Gather`](super::gather::Gather), watches the node's heartbeats (a node
//! silent longer than the failure timeout is reported), and writes what the
//! coordinator tells the node, in the order it is told.

use std::time::Duration;

use actix::prelude::*;

use super::frames::frames;
use super::wire::{self, ToCoordinator, ToNode, WireError};

/// What a node link reports to the run.
pub enum Event {
    Msg(usize, ToCoordinator),
    Silent(usize),
    Lost(usize, String),
}

impl Message for Event {
    type Result = ();
}

/// One node's control link, on the coordinator.
pub struct NodeLink {
    index: usize,
    conn: quinn::Connection,
    send: Option<quinn::SendStream>,
    recv: Option<quinn::RecvStream>,
    max_frame: usize,
    /// Silence allowed before the first heartbeat (connecting the mesh may
    /// take a while), then between heartbeats.
    silence: (Duration, Duration),
    heard_beat: bool,
    watchdog: Option<SpawnHandle>,
    events: Recipient<Event>,
    /// Set once the node said what it had to, so its closing is no loss.
    reported_end: bool,
}

impl NodeLink {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        conn: quinn::Connection,
        send: quinn::SendStream,
        recv: quinn::RecvStream,
        max_frame: usize,
        silence_before_start: Duration,
        silence_running: Duration,
        events: Recipient<Event>,
    ) -> Self {
        NodeLink {
            index,
            conn,
            send: Some(send),
            recv: Some(recv),
            max_frame,
            silence: (silence_before_start, silence_running),
            heard_beat: false,
            watchdog: None,
            events,
            reported_end: false,
        }
    }

    fn rearm(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.watchdog.take() {
            ctx.cancel_future(h);
        }
        let limit = if self.heard_beat {
            self.silence.1
        } else {
            self.silence.0
        };
        self.watchdog = Some(ctx.run_later(limit, |act, ctx| {
            act.report(Event::Silent(act.index), ctx);
        }));
    }

    /// Reports the link's end once; it reads nothing after.
    fn report(&mut self, event: Event, ctx: &mut Context<Self>) {
        if self.reported_end {
            return;
        }
        self.reported_end = true;
        if let Some(h) = self.watchdog.take() {
            ctx.cancel_future(h);
        }
        self.events.do_send(event);
    }
}

/// The frame limit after `msg`: a node's results may outgrow the
/// per-window limit (see the node's control link).
fn limit_after(msg: &ToCoordinator, max: usize) -> usize {
    if matches!(msg, ToCoordinator::Finished(_)) {
        wire::HARD_MAX_FRAME
    } else {
        max
    }
}

impl Actor for NodeLink {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(recv) = self.recv.take() {
            ctx.add_stream(frames(recv, self.max_frame, limit_after));
        }
        self.rearm(ctx);
    }
}

impl StreamHandler<Result<ToCoordinator, WireError>> for NodeLink {
    fn handle(&mut self, item: Result<ToCoordinator, WireError>, ctx: &mut Context<Self>) {
        if self.reported_end {
            return;
        }
        match item {
            Ok(msg) => {
                if matches!(msg, ToCoordinator::Heartbeat { .. }) {
                    self.heard_beat = true;
                }
                self.rearm(ctx);
                self.events.do_send(Event::Msg(self.index, msg));
            }
            Err(e) => self.report(Event::Lost(self.index, e.to_string()), ctx),
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        self.report(Event::Lost(self.index, "closed its connection".into()), ctx);
    }
}

/// Write `msg` to the node, after whatever was told before; `limit` is the
/// frame limit (the setup may be larger than a window's frames).
pub struct Tell {
    pub msg: ToNode,
    pub limit: usize,
    /// Give up after this long (a node that does not read must not hold
    /// the coordinator).
    pub within: Option<Duration>,
}

impl Message for Tell {
    type Result = Result<(), String>;
}

impl Handler<Tell> for NodeLink {
    type Result = AtomicResponse<Self, Result<(), String>>;

    fn handle(&mut self, tell: Tell, _: &mut Context<Self>) -> Self::Result {
        let send = self.send.take();
        AtomicResponse::new(Box::pin(
            async move {
                let Some(mut send) = send else {
                    return (None, Err("the link to this node is closed".to_string()));
                };
                let write = wire::write(&mut send, &tell.msg, tell.limit);
                let result = match tell.within {
                    Some(limit) => tokio::time::timeout(limit, write)
                        .await
                        .unwrap_or_else(|_| Err(WireError::Stream("timed out".into()))),
                    None => write.await,
                };
                (Some(send), result.map_err(|e| e.to_string()))
            }
            .into_actor(self)
            .map(|(send, result), act, _| {
                act.send = send;
                result
            }),
        ))
    }
}

/// Finish the sending half and close the connection with `code` and
/// `reason` (0 and an empty reason: wait until the node closes it first,
/// for at most `within`).
pub struct Close {
    pub code: u32,
    pub reason: &'static [u8],
    pub within: Duration,
}

impl Message for Close {
    type Result = ();
}

impl Handler<Close> for NodeLink {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, close: Close, ctx: &mut Context<Self>) -> Self::Result {
        self.reported_end = true;
        if let Some(h) = self.watchdog.take() {
            ctx.cancel_future(h);
        }
        if let Some(send) = &mut self.send {
            let _ = send.finish();
        }
        let conn = self.conn.clone();
        AtomicResponse::new(Box::pin(
            async move {
                if close.code == 0 {
                    let _ = tokio::time::timeout(close.within, conn.closed()).await;
                } else {
                    tokio::time::sleep(close.within).await;
                    conn.close(close.code.into(), close.reason);
                }
            }
            .into_actor(self),
        ))
    }
}
