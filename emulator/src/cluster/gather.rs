//! What the coordinator hears from the nodes while a run goes on: their
//! readiness, heartbeats, summaries, actors' metrics and logs. It starts the
//! run once every node is connected to every other, and ends it when all
//! are done, handing its findings to the driver.
//!
//! At the first failure it tells every node to stop, naming the cause and
//! the virtual time reached, and keeps taking the logs the nodes still hand
//! over (what their actors logged up to the stop, as `dcemu run` keeps them
//! with incomplete results) until each node is done, gone or silent, for at
//! most a grace period; a Ctrl-C does not wait for them.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use dcemu_actors::kernel::Metrics;
use dcemu_topology::{SimTime, format_sim_time};
use tokio::sync::oneshot;

use super::log_writer::{Append, LogFailed, LogWriter};
use super::node_link::{Event, NodeLink, Tell};
use super::wire::{self, ToCoordinator, ToNode};

/// What the run's nodes reported, for the results.
#[derive(Default)]
pub struct Gathered {
    /// Furthest virtual time each node reported.
    pub vtime: Vec<SimTime>,
    pub finished: Vec<Option<wire::Finished>>,
    /// What each actor's node reported of it.
    pub actors: BTreeMap<u32, GatheredActor>,
}

/// One actor as its node reported it ([`ToCoordinator::Actor`]).
pub struct GatheredActor {
    pub metrics: Metrics,
    pub events: u64,
    pub busy_ns: u64,
    pub held_bytes: u64,
}

/// How the run ended: `Ok` once every node is done, or the first failure.
pub type Ending = (Result<(), String>, Gathered);

pub struct Gather {
    assignment: Vec<u32>,
    node_names: Vec<String>,
    links: Vec<Addr<NodeLink>>,
    max_frame: usize,
    logs: Option<Addr<LogWriter>>,
    ready: Vec<bool>,
    done: Vec<bool>,
    gathered: Gathered,
    end: Option<oneshot::Sender<Ending>>,
    /// Why the run stops, once it does; nodes are then only waited for.
    aborting: Option<String>,
    /// Nodes heard from for the last time (done, gone or silent).
    ended: Vec<bool>,
    /// How long a stopping run waits for the nodes' logs at most.
    grace: Duration,
}

impl Gather {
    /// `logs` writes the actors' logs when the scenario keeps them (none
    /// may come otherwise); the receiver gets the run's ending.
    /// A stopping run waits at most `grace` for the nodes' logs.
    pub fn new(
        assignment: Vec<u32>,
        node_names: Vec<String>,
        max_frame: usize,
        grace: Duration,
    ) -> (Self, oneshot::Receiver<Ending>) {
        let n = node_names.len();
        let (end, ending) = oneshot::channel();
        let gather = Gather {
            assignment,
            node_names,
            links: Vec::new(),
            max_frame,
            logs: None,
            ready: vec![false; n],
            done: vec![false; n],
            gathered: Gathered {
                vtime: vec![0; n],
                finished: (0..n).map(|_| None).collect(),
                actors: BTreeMap::new(),
            },
            end: Some(end),
            aborting: None,
            ended: vec![false; n],
            grace,
        };
        (gather, ending)
    }

    fn node(&self, i: usize) -> String {
        format!("node {:?} (#{i})", self.node_names[i])
    }

    /// Stops the run for `reason`: every node is told, with the virtual
    /// time reached; the run ends once no node has more to hand over.
    fn abort(&mut self, reason: String, ctx: &mut Context<Self>) {
        if self.aborting.is_some() {
            return;
        }
        // a node sitting rounds out (or hosting no actor) keeps an older
        // time; the latest any node reported is how far the run got
        let reached = self.gathered.vtime.iter().copied().max().unwrap_or(0);
        let reason = format!(
            "{reason} (virtual time reached: {})",
            format_sim_time(reached)
        );
        for link in &self.links {
            link.do_send(Tell {
                msg: ToNode::Abort {
                    reason: reason.clone(),
                },
                limit: self.max_frame,
                within: Some(Duration::from_secs(1)),
            });
        }
        self.aborting = Some(reason);
        ctx.run_later(self.grace, |act, ctx| {
            if let Some(reason) = act.aborting.clone() {
                act.finish(Err(reason), ctx);
            }
        });
        self.end_if_all_ended(ctx);
    }

    fn end_if_all_ended(&mut self, ctx: &mut Context<Self>) {
        if let Some(reason) = &self.aborting
            && self.ended.iter().all(|&e| e)
        {
            let reason = reason.clone();
            self.finish(Err(reason), ctx);
        }
    }

    /// While aborting: only logs, and each node's last word, still count.
    fn while_aborting(&mut self, event: Event, ctx: &mut Context<Self>) {
        match event {
            Event::Msg(i, ToCoordinator::Log { id, bytes }) => {
                if self.check_host(i, id).is_ok()
                    && let Some(logs) = &self.logs
                {
                    logs.do_send(Append { id, bytes });
                }
            }
            Event::Msg(i, ToCoordinator::Done) | Event::Lost(i, _) | Event::Silent(i) => {
                self.ended[i] = true;
            }
            Event::Msg(..) => {}
        }
        self.end_if_all_ended(ctx);
    }

    fn finish(&mut self, result: Result<(), String>, ctx: &mut Context<Self>) {
        if let Some(end) = self.end.take() {
            let gathered = std::mem::take(&mut self.gathered);
            let _ = end.send((result, gathered));
        }
        ctx.stop();
    }

    fn on_message(&mut self, i: usize, msg: ToCoordinator) -> Result<Step, String> {
        match msg {
            ToCoordinator::Ready => {
                self.ready[i] = true;
                Ok(if self.ready.iter().all(|&r| r) {
                    Step::AllReady
                } else {
                    Step::Continue
                })
            }
            ToCoordinator::Heartbeat { vtime, .. } => {
                self.gathered.vtime[i] = self.gathered.vtime[i].max(vtime);
                Ok(Step::Continue)
            }
            ToCoordinator::Finished(f) => {
                self.gathered.finished[i] = Some(*f);
                Ok(Step::Continue)
            }
            ToCoordinator::Actor {
                id,
                metrics,
                events,
                busy_ns,
                held_bytes,
            } => {
                self.check_host(i, id)?;
                let output = GatheredActor {
                    metrics,
                    events,
                    busy_ns,
                    held_bytes,
                };
                if self.gathered.actors.insert(id, output).is_some() {
                    return Err(format!("{} reported actor #{id} twice", self.node(i)));
                }
                Ok(Step::Continue)
            }
            ToCoordinator::Log { id, bytes } => {
                self.check_host(i, id)?;
                let Some(logs) = &self.logs else {
                    return Err(format!(
                        "{} sent logs the scenario does not keep",
                        self.node(i)
                    ));
                };
                logs.do_send(Append { id, bytes });
                Ok(Step::Continue)
            }
            ToCoordinator::Done => {
                self.ended[i] = true;
                if self.gathered.finished[i].is_none() {
                    return Err(format!("{} said done before finishing", self.node(i)));
                }
                self.done[i] = true;
                Ok(if self.done.iter().all(|&d| d) {
                    Step::AllDone
                } else {
                    Step::Continue
                })
            }
            ToCoordinator::Failed { reason } => Err(format!("{} failed: {reason}", self.node(i))),
            ToCoordinator::Join(_) => Err(format!("{} asked to join twice", self.node(i))),
        }
    }

    fn check_host(&self, node: usize, id: u32) -> Result<(), String> {
        match self.assignment.get(id as usize) {
            Some(&n) if n as usize == node => Ok(()),
            _ => Err(format!(
                "node {:?} (#{node}) sent results for actor #{id}, which it does not host",
                self.node_names[node]
            )),
        }
    }
}

enum Step {
    Continue,
    AllReady,
    AllDone,
}

impl Actor for Gather {
    type Context = Context<Self>;
}

/// The links to the nodes (in node order) and the log writer, once they
/// exist (they report to this actor, so they start after it).
pub struct Attach {
    pub links: Vec<Addr<NodeLink>>,
    pub logs: Option<Addr<LogWriter>>,
}

impl Message for Attach {
    type Result = ();
}

impl Handler<Attach> for Gather {
    type Result = ();

    fn handle(&mut self, attach: Attach, _: &mut Context<Self>) {
        self.links = attach.links;
        self.logs = attach.logs;
    }
}

impl Handler<Event> for Gather {
    type Result = ();

    fn handle(&mut self, event: Event, ctx: &mut Context<Self>) {
        if self.end.is_none() {
            return;
        }
        if self.aborting.is_some() {
            return self.while_aborting(event, ctx);
        }
        if let Event::Lost(i, _) | Event::Silent(i) = event {
            self.ended[i] = true;
        }
        let step = match event {
            Event::Silent(i) => Err(format!("{} stopped answering", self.node(i))),
            Event::Lost(i, _) if self.done[i] => Ok(Step::Continue),
            Event::Lost(i, why) => Err(format!("{} is gone: {why}", self.node(i))),
            Event::Msg(i, msg) => self.on_message(i, msg),
        };
        match step {
            Ok(Step::Continue) => {}
            Ok(Step::AllReady) => {
                // a node that cannot be told shows up as lost
                for link in &self.links {
                    link.do_send(Tell {
                        msg: ToNode::Start,
                        limit: self.max_frame,
                        within: Some(Duration::from_secs(5)),
                    });
                }
                eprintln!("coordinator: every node is connected to every other; running");
            }
            Ok(Step::AllDone) => self.finish(Ok(()), ctx),
            Err(reason) => self.abort(reason, ctx),
        }
    }
}

impl Handler<LogFailed> for Gather {
    type Result = ();

    fn handle(&mut self, LogFailed(why): LogFailed, ctx: &mut Context<Self>) {
        match self.aborting.take() {
            Some(reason) => self.finish(Err(format!("{reason}; then {why}")), ctx),
            None => self.abort(why, ctx),
        }
    }
}

/// Stop the run now for `0` (Ctrl-C): the nodes are told, and the run
/// ends without waiting for their logs (whoever interrupts wants it over).
pub struct Interrupt(pub String);

impl Message for Interrupt {
    type Result = ();
}

impl Handler<Interrupt> for Gather {
    type Result = ();

    fn handle(&mut self, Interrupt(reason): Interrupt, ctx: &mut Context<Self>) {
        self.abort(reason, ctx);
        if let Some(reason) = self.aborting.clone() {
            self.finish(Err(reason), ctx);
        }
    }
}
