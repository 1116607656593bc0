//! The scheduler actor: receives submissions and slot releases, and decides
//! where each task runs through its pipeline stages. Today the pipeline is a
//! FIFO queue in front of one placement stage; admission control and slot
//! policies become stages of their own.
//!
//! The scheduler sees only what a real one could: the servers' slot counts and
//! the releases they report. It never reads server state directly.

mod flows;
mod placement;

pub use flows::FlowTable;
pub use placement::{ClusterView, Placement, RandomPlacement};

use std::collections::VecDeque;
use std::sync::Arc;

use dcemu_topology::{Bandwidth, Route, SimTime};
use serde::Serialize;

use crate::config::{PlacementKind, SchedulerConfig};
use crate::kernel::{ActorId, Ctx, Envelope, Metrics, ModelError};
use crate::model::{Msg, Task, World, unexpected};
use crate::net::{Body, Inbox, Nic};

pub struct Scheduler {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    placement: Box<dyn Placement>,
    cluster: ClusterView,
    /// Tasks waiting for a slot, with the time each reached the scheduler.
    queue: VecDeque<(Task, SimTime)>,
    flows: FlowTable,
    resubmit_delay: u64,
    dispatched: u64,
    killed: u64,
    queue_wait_s: Vec<f64>,
}

#[derive(Serialize)]
struct ArriveLog {
    task: u64,
    tenant: String,
}

#[derive(Serialize)]
struct QueueLog {
    task: u64,
    queue_len: usize,
}

#[derive(Serialize)]
struct DispatchLog<'a> {
    task: u64,
    server: &'a str,
    queued_ns: u64,
}

#[derive(Serialize)]
struct FlowLog {
    task: u64,
    path: Vec<String>,
    bps: u64,
}

#[derive(Serialize)]
struct FlowRefusedLog<'a> {
    task: u64,
    server: &'a str,
    bps: u64,
}

#[derive(Serialize)]
struct ReleaseLog<'a> {
    task: u64,
    server: &'a str,
}

impl Scheduler {
    pub fn new(world: Arc<World>, cfg: &SchedulerConfig, servers: &[(ActorId, u32)]) -> Self {
        let placement: Box<dyn Placement> = match cfg.placement {
            PlacementKind::Random => Box::new(RandomPlacement),
        };
        Scheduler {
            world,
            nic: Nic::default(),
            inbox: Inbox::default(),
            placement,
            cluster: ClusterView::new(servers),
            queue: VecDeque::new(),
            flows: FlowTable::default(),
            resubmit_delay: cfg.resubmit_delay.as_nanos(),
            dispatched: 0,
            killed: 0,
            queue_wait_s: Vec::new(),
        }
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let packet = match msg {
            Msg::Packet(packet) => packet,
            Msg::Requeue(task) => {
                ctx.log(
                    "task_requeue",
                    &QueueLog {
                        task: task.id,
                        queue_len: self.queue.len() + 1,
                    },
                );
                let now = ctx.now();
                self.queue.push_front((task, now));
                return self.drain(ctx);
            }
            other => return Err(unexpected("scheduler", other.name())),
        };
        let world = Arc::clone(&self.world);
        let (src, body) = self.inbox.accept(&world, ctx, packet)?;
        match body {
            Body::Submit(task) => {
                ctx.log(
                    "task_arrive",
                    &ArriveLog {
                        task: task.id,
                        tenant: self.world.name(task.tenant).to_string(),
                    },
                );
                let now = ctx.now();
                self.queue.push_back((task, now));
                if self.queue.len() == 1 {
                    self.drain(ctx)?;
                }
                if let Some((task, _)) = self.queue.back() {
                    ctx.log(
                        "task_queue",
                        &QueueLog {
                            task: task.id,
                            queue_len: self.queue.len(),
                        },
                    );
                }
                Ok(())
            }
            Body::Finished { task, slots } => {
                let server = src;
                self.cluster.release(server, slots).ok_or_else(|| {
                    ModelError::Invariant(format!(
                        "scheduler got a slot release from {}, which it never gave a task",
                        self.world.name(server)
                    ))
                })?;
                ctx.log(
                    "slot_release",
                    &ReleaseLog {
                        task,
                        server: self.world.name(server),
                    },
                );
                if let Some((route, bandwidth)) = self.flows.release(&world.network, task) {
                    ctx.log(
                        "flow_release",
                        &FlowLog {
                            task,
                            path: self.path_names(&route),
                            bps: bandwidth.bps(),
                        },
                    );
                    self.notify_switches(ctx, task, &route, bandwidth, false)?;
                }
                self.drain(ctx)
            }
            Body::Report(report) => {
                self.cluster.record_report(src, report);
                Ok(())
            }
            Body::Killed(task) => {
                self.cluster.release(src, task.cores).ok_or_else(|| {
                    ModelError::Invariant(format!(
                        "scheduler got a kill report from {}, which it never gave a task",
                        world.name(src)
                    ))
                })?;
                self.killed += 1;
                ctx.log(
                    "task_killed",
                    &ReleaseLog {
                        task: task.id,
                        server: world.name(src),
                    },
                );
                if let Some((route, bandwidth)) = self.flows.release(&world.network, task.id) {
                    ctx.log(
                        "flow_release",
                        &FlowLog {
                            task: task.id,
                            path: self.path_names(&route),
                            bps: bandwidth.bps(),
                        },
                    );
                    self.notify_switches(ctx, task.id, &route, bandwidth, false)?;
                }
                ctx.timer(self.resubmit_delay, Msg::Requeue(task))?;
                self.drain(ctx)
            }
            other => Err(unexpected("scheduler", other.name())),
        }
    }

    /// Places queued tasks in arrival order until the head finds no server.
    fn drain(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        while let Some((task, _)) = self.queue.front() {
            let Some(slot) = self.placement.place(task, &self.cluster, ctx.rng()) else {
                break;
            };
            let server = self.cluster.servers()[slot as usize].id;
            let flow = match task.flow_bps {
                0 => None,
                bps => {
                    let bandwidth = Bandwidth::from_bps(bps);
                    match self
                        .flows
                        .reserve(&world.network, task.id, server, bandwidth)
                    {
                        Some(route) => Some((route, bandwidth)),
                        None => {
                            ctx.log(
                                "flow_refused",
                                &FlowRefusedLog {
                                    task: task.id,
                                    server: world.name(server),
                                    bps,
                                },
                            );
                            break;
                        }
                    }
                }
            };
            let Some((task, arrived)) = self.queue.pop_front() else {
                break;
            };
            self.cluster.take(slot, task.cores);
            if let Some((route, bandwidth)) = flow {
                ctx.log(
                    "flow_reserve",
                    &FlowLog {
                        task: task.id,
                        path: self.path_names(&route),
                        bps: bandwidth.bps(),
                    },
                );
                self.notify_switches(ctx, task.id, &route, bandwidth, true)?;
            }
            let queued = ctx.now() - arrived;
            self.queue_wait_s.push(queued as f64 / 1e9);
            self.dispatched += 1;
            ctx.log(
                "task_dispatch",
                &DispatchLog {
                    task: task.id,
                    server: self.world.name(server),
                    queued_ns: queued,
                },
            );
            self.nic
                .send(&self.world, ctx, server, Body::Dispatch(task))?;
        }
        Ok(())
    }

    fn path_names(&self, route: &Route) -> Vec<String> {
        route
            .nodes()
            .iter()
            .map(|&n| self.world.name(ActorId(n)).to_string())
            .collect()
    }

    /// Tells every switch on `route` to reserve (or release) `bandwidth` on
    /// its port toward the next node.
    fn notify_switches(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        task: u64,
        route: &Route,
        bandwidth: Bandwidth,
        reserve: bool,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        for pair in route.nodes().windows(2) {
            if world.network.is_switch(pair[0]) {
                let body = Body::Reservation {
                    task,
                    peer: pair[1],
                    bps: bandwidth.bps(),
                    reserve,
                };
                self.nic.send(&world, ctx, ActorId(pair[0]), body)?;
            }
        }
        Ok(())
    }

    pub fn finish(&mut self, undelivered: &[Envelope<Msg>], out: &mut Metrics) {
        self.inbox.finish(out);
        self.flows.finish(out);
        let requeueing = undelivered
            .iter()
            .filter(|e| matches!(e.payload, Msg::Requeue(_)))
            .count() as u64;
        out.add("tasks_queued_end", self.queue.len() as u64 + requeueing);
        out.add("tasks_requeued", self.killed);
        out.add("tasks_dispatched", self.dispatched);
        out.declare_samples("queue_wait_s");
        for &w in &self.queue_wait_s {
            out.sample("queue_wait_s", w);
        }
    }
}
