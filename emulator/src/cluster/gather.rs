//! What the coordinator hears from the nodes while a run goes on: their
//! readiness, heartbeats, summaries, actors' metrics and logs. It starts the
//! run once every node is connected to every other, and ends it when all
//! are done or at the first failure, handing its findings to the driver.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use dcemu_actors::kernel::Metrics;
use dcemu_topology::SimTime;
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
    pub actors: BTreeMap<u32, Metrics>,
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
}

impl Gather {
    /// `logs` writes the actors' logs when the scenario keeps them (none
    /// may come otherwise); the receiver gets the run's ending.
    pub fn new(
        assignment: Vec<u32>,
        node_names: Vec<String>,
        max_frame: usize,
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
        };
        (gather, ending)
    }

    fn node(&self, i: usize) -> String {
        format!("node {:?} (#{i})", self.node_names[i])
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
            ToCoordinator::Actor { id, metrics } => {
                self.check_host(i, id)?;
                if self.gathered.actors.insert(id, metrics).is_some() {
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
            Err(reason) => self.finish(Err(reason), ctx),
        }
    }
}

impl Handler<LogFailed> for Gather {
    type Result = ();

    fn handle(&mut self, LogFailed(why): LogFailed, ctx: &mut Context<Self>) {
        self.finish(Err(why), ctx);
    }
}

/// End the run now with `0` (e.g. Ctrl-C).
pub struct Interrupt(pub String);

impl Message for Interrupt {
    type Result = ();
}

impl Handler<Interrupt> for Gather {
    type Result = ();

    fn handle(&mut self, Interrupt(reason): Interrupt, ctx: &mut Context<Self>) {
        self.finish(Err(reason), ctx);
    }
}
