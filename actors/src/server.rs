//! Servers: run dispatched tasks, one per slot, for their service time, then
//! report to the scheduler (slot free) and to the tenant (task done).

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::SimTime;
use serde::Serialize;

use crate::kernel::{Ctx, Envelope, Metrics, ModelError};
use crate::model::{Msg, Task, TaskId, World, unexpected};

pub struct Server {
    world: Arc<World>,
    server_type: String,
    slots: u32,
    running: BTreeMap<TaskId, (Task, SimTime)>,
    completed: u64,
    busy_ns: u128,
}

#[derive(Serialize)]
struct StartLog<'a> {
    task: u64,
    tenant: &'a str,
    server_type: &'a str,
    running: usize,
}

#[derive(Serialize)]
struct EndLog {
    task: u64,
    ran_ns: u64,
    running: usize,
}

impl Server {
    pub fn new(world: Arc<World>, server_type: String, slots: u32) -> Self {
        Server {
            world,
            server_type,
            slots,
            running: BTreeMap::new(),
            completed: 0,
            busy_ns: 0,
        }
    }

    pub fn handle(
        &mut self,
        event: Envelope<Msg>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        match event.payload {
            Msg::Dispatch(task) => {
                if self.running.len() >= self.slots as usize {
                    return Err(ModelError::Invariant(format!(
                        "{} got task {} with all {} slots busy",
                        self.world.name(ctx.me()),
                        task.id,
                        self.slots
                    )));
                }
                let id = task.id;
                ctx.timer(task.service_ns, Msg::Complete { task: id })?;
                ctx.log(
                    "task_start",
                    &StartLog {
                        task: id,
                        tenant: self.world.name(task.tenant),
                        server_type: &self.server_type,
                        running: self.running.len() + 1,
                    },
                );
                self.running.insert(id, (task, ctx.now()));
                Ok(())
            }
            Msg::Complete { task: id } => {
                let Some((task, started_at)) = self.running.remove(&id) else {
                    return Err(ModelError::Invariant(format!(
                        "{} completed task {id}, which it is not running",
                        self.world.name(ctx.me())
                    )));
                };
                let now = ctx.now();
                self.completed += 1;
                self.busy_ns += u128::from(now - started_at);
                ctx.log(
                    "task_end",
                    &EndLog {
                        task: id,
                        ran_ns: now - started_at,
                        running: self.running.len(),
                    },
                );
                self.world
                    .send(ctx, self.world.scheduler, Msg::Finished { task: id })?;
                self.world.send(
                    ctx,
                    task.tenant,
                    Msg::Done {
                        task: id,
                        submitted_at: task.submitted_at,
                        started_at,
                        finished_at: now,
                    },
                )
            }
            other => Err(unexpected(self.world.name(ctx.me()), &other)),
        }
    }

    pub fn finish(&mut self, undelivered: &[Envelope<Msg>], end: SimTime, out: &mut Metrics) {
        let in_transit = undelivered
            .iter()
            .filter(|e| matches!(e.payload, Msg::Dispatch(_)))
            .count();
        let partial: u128 = self
            .running
            .values()
            .map(|&(_, started)| u128::from(end.saturating_sub(started)))
            .sum();
        out.add("tasks_completed", self.completed);
        out.add("tasks_running_end", self.running.len() as u64);
        out.add("tasks_in_transit_end", in_transit as u64);
        out.add("slots_total", u64::from(self.slots));
        out.add_f64("slot_busy_s", (self.busy_ns + partial) as f64 / 1e9);
    }
}
