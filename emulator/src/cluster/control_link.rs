//! A node's end of its control link to the coordinator, once the run has
//! started: [`ControlLink`] writes the node's reports in the order they are
//! made and waits for the coordinator's last word (bye, or abort), which
//! stops the partition if it is not a bye; [`Heartbeat`] reports the
//! partition's progress at a fixed wall-clock interval, which is how the
//! coordinator tells a live node from a dead one.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::prelude::*;
use dcemu_actors::model::Msg;
use tokio::sync::{mpsc, oneshot};

use super::frames::{frames, same_limit};
use super::links::Inbound;
use super::wire::{self, ToCoordinator, ToNode, WireError};
use crate::engine::Progress;

/// How the coordinator ended the run for this node: bye, or why not.
pub type LastWord = Result<(), String>;

pub struct ControlLink {
    send: Option<quinn::SendStream>,
    recv: Option<quinn::RecvStream>,
    max_frame: usize,
    /// Names the coordinator and the run, for messages.
    of_run: String,
    stop: mpsc::UnboundedSender<Inbound<Msg>>,
    last_word: Option<oneshot::Sender<LastWord>>,
    /// The first report that could not be written.
    failed: Option<String>,
}

impl ControlLink {
    /// Takes over the control stream; `stop` stops the partition, and the
    /// receiver gets the coordinator's last word.
    pub fn start(
        send: quinn::SendStream,
        recv: quinn::RecvStream,
        max_frame: usize,
        of_run: String,
        stop: mpsc::UnboundedSender<Inbound<Msg>>,
    ) -> (Addr<ControlLink>, oneshot::Receiver<LastWord>) {
        let (last_word, heard) = oneshot::channel();
        let addr = Actor::start(ControlLink {
            send: Some(send),
            recv: Some(recv),
            max_frame,
            of_run,
            stop,
            last_word: Some(last_word),
            failed: None,
        });
        (addr, heard)
    }

    /// The control link is this run's only tie to its coordinator: once it
    /// is gone the node stops, and it never dials a coordinator again (a
    /// restarted one on the same address is another run).
    fn heard(&mut self, word: LastWord) {
        let Some(last_word) = self.last_word.take() else {
            return;
        };
        if let Err(reason) = &word {
            let _ = self.stop.send(Inbound::Stop {
                reason: reason.clone(),
            });
        }
        let _ = last_word.send(word);
    }
}

impl Actor for ControlLink {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(recv) = self.recv.take() {
            ctx.add_stream(frames::<ToNode, _>(recv, self.max_frame, same_limit));
        }
    }
}

impl StreamHandler<Result<ToNode, WireError>> for ControlLink {
    fn handle(&mut self, item: Result<ToNode, WireError>, _: &mut Context<Self>) {
        let of_run = &self.of_run;
        let word = match item {
            Ok(ToNode::Bye) => Ok(()),
            Ok(ToNode::Abort { reason }) => Err(format!("{of_run} aborted the run: {reason}")),
            Ok(other) => Err(format!("unexpected message from {of_run}: {other:?}")),
            Err(x) => Err(format!("lost {of_run}: {x}")),
        };
        self.heard(word);
    }

    /// The writing half lives on after the coordinator's last word.
    fn finished(&mut self, _: &mut Context<Self>) {
        let word = Err(format!("{} closed the connection", self.of_run));
        self.heard(word);
    }
}

/// Write this report to the coordinator, after those made before.
pub struct Report(pub ToCoordinator);

impl Message for Report {
    type Result = ();
}

impl Handler<Report> for ControlLink {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, Report(msg): Report, _: &mut Context<Self>) -> Self::Result {
        // one actor's results of a long run (the scheduler's samples of a
        // month) can outgrow the frame limit meant for the run's batches
        let limit = match msg {
            ToCoordinator::Actor { .. } | ToCoordinator::Log { .. } => wire::HARD_MAX_FRAME,
            _ => self.max_frame,
        };
        let send = if self.failed.is_some() {
            None
        } else {
            self.send.take()
        };
        AtomicResponse::new(Box::pin(
            async move {
                let Some(mut send) = send else {
                    return (None, Ok(()));
                };
                let written = wire::write(&mut send, &msg, limit).await;
                (Some(send), written)
            }
            .into_actor(self)
            .map(|(send, written), act, _| {
                if send.is_some() {
                    act.send = send;
                }
                if let Err(x) = written {
                    act.failed.get_or_insert(x.to_string());
                }
            }),
        ))
    }
}

/// Finish the stream once every report before is written; the first
/// report that could not be, if any.
pub struct Finish;

impl Message for Finish {
    type Result = Result<(), String>;
}

impl Handler<Finish> for ControlLink {
    type Result = Result<(), String>;

    fn handle(&mut self, _: Finish, _: &mut Context<Self>) -> Result<(), String> {
        if let Some(send) = &mut self.send {
            let _ = send.finish();
        }
        self.failed.clone().map_or(Ok(()), Err)
    }
}

/// Reports the partition's virtual time and events every `every`.
pub struct Heartbeat {
    pub every: Duration,
    pub progress: Arc<Progress>,
    /// This node's partition index in `progress`.
    pub me: usize,
    pub to: Addr<ControlLink>,
}

impl Actor for Heartbeat {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.every, |act, _| {
            act.to.do_send(Report(ToCoordinator::Heartbeat {
                vtime: act.progress.vtime[act.me].load(Ordering::Relaxed),
                events: act.progress.events[act.me].load(Ordering::Relaxed),
            }));
        });
    }
}

/// Stop beating (the node is leaving).
pub struct StopBeating;

impl Message for StopBeating {
    type Result = ();
}

impl Handler<StopBeating> for Heartbeat {
    type Result = ();

    fn handle(&mut self, _: StopBeating, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
