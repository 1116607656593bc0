//! Servers: run dispatched tasks, one per slot, sharing their cores by
//! processor sharing (thesis eq. 6.2, see `sharing.rs`), then report to the
//! scheduler (slot free) and to the tenant (task done).
//!
//! Power (thesis §6.2.5–6.2.6): with `power.policy = "idle"` (IDL) a server
//! without tasks stays idle; with `"sleep"` (SLP) it sleeps as soon as it has
//! nothing running or waiting, and a task dispatched to it waits for the
//! wake-up (`power.server_wake`, 30 s by default) during which the server
//! draws peak power (eq. 4.2). On, it draws eq. 4.1 with the CPU utilisation
//! the share of busy cores and the memory utilisation the share of busy slots
//! (tasks carry no memory demand of their own yet).

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::{PowerPolicy, ServerPower, SimTime};
use serde::Serialize;

use crate::config::ServerTypeConfig;
use crate::device::{DevState, Device, Powered};
use crate::kernel::{Ctx, Metrics, ModelError};
use crate::model::{Msg, Task, TaskId, World, unexpected};
use crate::net::{Body, Inbox, Nic};
use crate::sharing::CpuShare;

pub struct Server {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    server_type: String,
    slots: u32,
    power: ServerPower,
    running: BTreeMap<TaskId, (Task, SimTime)>,
    cpu: CpuShare,
    /// Generation of the one live `Progress` timer, and when it fires.
    timer: (u64, Option<SimTime>),
    /// Power state, and the tasks dispatched while asleep or waking.
    power_state: Powered<Task>,
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
    pub fn new(world: Arc<World>, cfg: &ServerTypeConfig) -> Self {
        let power = cfg.power();
        let device = match world.power.policy {
            PowerPolicy::Idle => Device::new(DevState::Idle, power.idle_w),
            PowerPolicy::Sleep => Device::new(DevState::Sleep, power.sleep_w),
        };
        Server {
            world,
            nic: Nic::default(),
            inbox: Inbox::default(),
            server_type: cfg.name.clone(),
            slots: cfg.slots,
            power,
            running: BTreeMap::new(),
            cpu: CpuShare::new(cfg.cores(), cfg.core_speed),
            timer: (0, None),
            power_state: Powered::new(device),
            completed: 0,
            busy_ns: 0,
        }
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::Packet(p) => match self.inbox.accept(&self.world, ctx, p)?.1 {
                Body::Dispatch(task) => self.dispatched(task, ctx),
                other => Err(unexpected(self.world.name(ctx.me()), other.name())),
            },
            Msg::Progress { generation } if generation == self.timer.0 => {
                self.timer.1 = None;
                for task in self.cpu.finished(ctx.now()) {
                    self.complete(task, ctx)?;
                }
                self.reschedule(ctx)
            }
            Msg::Progress { .. } => Ok(()),
            Msg::WakeDone => self.woke(ctx),
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    fn dispatched(&mut self, task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self.running.len() + self.power_state.held().len() >= self.slots as usize {
            return Err(ModelError::Invariant(format!(
                "{} got task {} with all {} slots taken",
                self.world.name(ctx.me()),
                task.id,
                self.slots
            )));
        }
        let wake = self.world.power.server_wake.as_nanos();
        match self.power_state.admit(ctx, task, self.power.peak(), wake)? {
            Some(task) => self.start(task, ctx),
            None => Ok(()),
        }
    }

    fn woke(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        for task in self.power_state.woke(ctx, self.power.idle_w) {
            self.start(task, ctx)?;
        }
        Ok(())
    }

    fn start(&mut self, task: Task, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let id = task.id;
        self.cpu.add(ctx.now(), id, task.service_ns);
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
        self.update_power(ctx);
        self.reschedule(ctx)
    }

    /// Keeps one `Progress` timer at the earliest completion; a timer made
    /// stale by a change of rates is ignored by its old generation.
    fn reschedule(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let next = self.cpu.next_finish();
        if next != self.timer.1 {
            self.timer = (self.timer.0 + 1, next);
            if let Some(at) = next {
                ctx.timer(
                    at.saturating_sub(ctx.now()),
                    Msg::Progress {
                        generation: self.timer.0,
                    },
                )?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, id: TaskId, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
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
        self.update_power(ctx);
        let world = Arc::clone(&self.world);
        self.nic
            .send(&world, ctx, world.scheduler, Body::Finished { task: id })?;
        self.nic.send(
            &world,
            ctx,
            task.tenant,
            Body::Done {
                task: id,
                submitted_at: task.submitted_at,
                started_at,
                finished_at: now,
            },
        )
    }

    /// On with eq. 4.1 while tasks run; otherwise idle, or asleep under SLP.
    fn update_power(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        if !self.running.is_empty() {
            let u = self.running.len() as f64 / f64::from(self.slots);
            self.power_state
                .device
                .set(now, DevState::On, self.power.on(u, u));
        } else if !self.power_state.held().is_empty() {
            // still waking: nothing to change
        } else if self.world.power.policy == PowerPolicy::Sleep {
            self.power_state.sleep(ctx, self.power.sleep_w);
        } else {
            self.power_state
                .device
                .set(now, DevState::Idle, self.power.idle_w);
        }
    }

    pub fn finish(&mut self, end: SimTime, out: &mut Metrics) {
        self.inbox.finish(out);
        let partial: u128 = self
            .running
            .values()
            .map(|&(_, started)| u128::from(end.saturating_sub(started)))
            .sum();
        out.add("tasks_completed", self.completed);
        out.add("tasks_running_end", self.running.len() as u64);
        out.add(
            "tasks_waiting_wake_end",
            self.power_state.held().len() as u64,
        );
        out.add("slots_total", u64::from(self.slots));
        out.add_f64("slot_busy_s", (self.busy_ns + partial) as f64 / 1e9);
        self.power_state.device.report(
            end,
            out,
            "energy_j_server",
            "wake_ups_server",
            "servers_on",
        );
    }
}
