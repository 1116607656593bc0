//! The run-time side of distributed applications on servers (ASPLOS'16 §3):
//! each server knows the units running on it and the pressure their
//! co-runners put on them; the coordinator of a run (one server) turns the
//! per-unit pressures into the run's progress through the ground truth.
//!
//! A unit holds its slots for the whole run; its pressure is the highest
//! bubble score (Table 4) among the units of *other* runs on the same
//! server (the paper co-locates at most two applications per host, §3.1;
//! the maximum keeps that meaning when a host has more). Plain tasks and
//! catalog applications put no pressure on units. Whenever a unit's
//! pressure changes (a co-runner starts or ends), its server reports it to
//! the coordinator, which integrates the progress made at the old rate and
//! re-arms the run's end at the new one; everything is in virtual time and
//! in message order, so the result is deterministic.

use std::collections::{BTreeMap, BTreeSet};

use dcemu_topology::SimTime;

use super::{DistRef, DistWorld};
use crate::kernel::{ActorId, Metrics};
use crate::model::{Msg, TaskId};
use crate::net::Body;

/// What the server must do for its distributed units.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    /// Send this to another server.
    Send(ActorId, Body),
    /// Arm this timer after `delay` ns.
    Timer(SimTime, Msg),
    /// The unit's run is over: complete the unit here.
    Complete(TaskId),
    /// Log this event.
    Log(&'static str, serde_json::Value),
}

/// One of this server's units.
#[derive(Clone, Debug)]
struct Unit {
    dist: DistRef,
    pressure_milli: u32,
}

/// A run this server coordinates.
#[derive(Clone, Debug, Default)]
struct Coord {
    /// Per unit: its server, its task and its pressure (milli-bubble).
    members: BTreeMap<u16, (ActorId, TaskId, u32)>,
    units: u16,
    app: u32,
    qos_ppm: u32,
    started: Option<SimTime>,
    /// Share of the work done by `last`.
    done: f64,
    last: SimTime,
    /// Current normalised runtime (1 = no interference).
    slowdown: f64,
    generation: u64,
}

/// The distributed side of one server.
#[derive(Debug, Default)]
pub struct DistHost {
    units: BTreeMap<TaskId, Unit>,
    coords: BTreeMap<TaskId, Coord>,
    finished: BTreeSet<TaskId>,
    rows: Vec<(u64, String)>,
    completed: u64,
    norm: Vec<f64>,
    qos_targets: u64,
    qos_met: u64,
}

/// Milli-bubble pressure as a real.
fn real(milli: u32) -> f64 {
    f64::from(milli) / 1000.0
}

impl DistHost {
    pub fn runs(&self, task: TaskId) -> bool {
        self.units.contains_key(&task)
    }

    /// A unit started here: every unit's pressure may have changed.
    pub fn started(
        &mut self,
        world: &DistWorld,
        me: ActorId,
        task: TaskId,
        dist: DistRef,
        now: SimTime,
    ) -> Vec<Out> {
        self.units.insert(
            task,
            Unit {
                dist,
                pressure_milli: u32::MAX, // forces its first report
            },
        );
        self.repressure(world, me, now)
    }

    /// A unit ended here: its co-runners' pressure may have dropped.
    pub fn ended(
        &mut self,
        world: &DistWorld,
        me: ActorId,
        task: TaskId,
        now: SimTime,
    ) -> Vec<Out> {
        if self.units.remove(&task).is_none() {
            return Vec::new();
        }
        self.repressure(world, me, now)
    }

    /// Recomputes every unit's pressure and reports those that changed to
    /// their coordinators (directly when this server is one).
    fn repressure(&mut self, world: &DistWorld, me: ActorId, now: SimTime) -> Vec<Out> {
        let bubbles: Vec<(TaskId, f64)> = self
            .units
            .values()
            .map(|u| {
                let b = world
                    .catalog
                    .get(u.dist.app as usize)
                    .map_or(0.0, |a| a.bubble);
                (u.dist.run, b)
            })
            .collect();
        let mut out = Vec::new();
        let mut reports = Vec::new();
        for (&task, unit) in self.units.iter_mut() {
            let p = bubbles
                .iter()
                .filter(|(run, _)| *run != unit.dist.run)
                .map(|&(_, b)| b)
                .fold(0.0, f64::max);
            let milli = libm::round(p * 1000.0) as u32;
            if milli != unit.pressure_milli {
                unit.pressure_milli = milli;
                reports.push((task, unit.dist, milli));
            }
        }
        for (task, dist, milli) in reports {
            match dist.coordinator {
                Some(c) if c != me => out.push(Out::Send(
                    c,
                    Body::DistPressure {
                        dist,
                        task,
                        pressure_milli: milli,
                    },
                )),
                _ => out.extend(self.pressure(world, me, dist, task, milli, now)),
            }
        }
        out
    }

    /// Coordinator: unit `dist.unit` (task `task` on `server`) now suffers
    /// `milli`; the run starts once every unit has reported.
    pub fn pressure(
        &mut self,
        world: &DistWorld,
        server: ActorId,
        dist: DistRef,
        task: TaskId,
        milli: u32,
        now: SimTime,
    ) -> Vec<Out> {
        if self.finished.contains(&dist.run) {
            return Vec::new();
        }
        let Some(app) = world.catalog.get(dist.app as usize) else {
            return Vec::new();
        };
        let solo_ns = app.solo_s * 1e9;
        let c = self.coords.entry(dist.run).or_insert_with(|| Coord {
            units: dist.units,
            app: dist.app,
            qos_ppm: dist.qos_ppm,
            slowdown: 1.0,
            ..Coord::default()
        });
        if c.started.is_some() {
            c.done += (now - c.last) as f64 / (solo_ns * c.slowdown);
            c.last = now;
        }
        c.members.insert(dist.unit, (server, task, milli));
        let mut out = Vec::new();
        if c.started.is_none() && c.members.len() == usize::from(c.units) {
            c.started = Some(now);
            c.last = now;
            out.push(Out::Log(
                "dist_run_start",
                serde_json::json!({ "run": dist.run, "app": dist.app, "units": dist.units }),
            ));
        }
        if c.started.is_none() {
            return out;
        }
        let pressures: Vec<f64> = c.members.values().map(|m| real(m.2)).collect();
        c.slowdown = app.runtime(&pressures);
        c.generation += 1;
        let left = ((1.0 - c.done).max(0.0) * solo_ns * c.slowdown).ceil() as SimTime;
        out.push(Out::Log(
            "dist_rate",
            serde_json::json!({ "run": dist.run, "pressures": pressures, "slowdown": c.slowdown, "done": c.done }),
        ));
        out.push(Out::Timer(
            left.max(1),
            Msg::DistFinish {
                run: dist.run,
                generation: c.generation,
            },
        ));
        out
    }

    /// Coordinator timer: the run's work is done (unless stale); every unit
    /// ends on its server.
    pub fn finish_timer(
        &mut self,
        world: &DistWorld,
        me: ActorId,
        run: TaskId,
        generation: u64,
        now: SimTime,
    ) -> Vec<Out> {
        if self
            .coords
            .get(&run)
            .is_none_or(|c| c.generation != generation)
        {
            return Vec::new();
        }
        let Some(c) = self.coords.remove(&run) else {
            return Vec::new();
        };
        self.finished.insert(run);
        let app = world.catalog.get(c.app as usize);
        let solo_s = app.map_or(1.0, |a| a.solo_s);
        let runtime_s = (now - c.started.unwrap_or(now)) as f64 / 1e9;
        let norm = runtime_s / solo_s;
        let servers: BTreeSet<ActorId> = c.members.values().map(|m| m.0).collect();
        self.completed += 1;
        self.norm.push(norm);
        let qos = (c.qos_ppm > 0).then(|| f64::from(c.qos_ppm) / 1e6);
        let met = qos.map(|q| 1.0 / norm >= q - 1e-9);
        if let Some(m) = met {
            self.qos_targets += 1;
            self.qos_met += u64::from(m);
        }
        self.rows.push((
            run,
            format!(
                "{run},{},{},{},{},{},{solo_s},{runtime_s},{norm},{}",
                c.app,
                app.map_or("?", |a| a.name),
                c.units,
                servers.len(),
                qos.map_or(String::new(), |q| q.to_string()),
                met.map_or(String::new(), |m| m.to_string()),
            ),
        ));
        let mut out = vec![Out::Log(
            "dist_run_end",
            serde_json::json!({
                "run": run,
                "app": c.app,
                "runtime_s": runtime_s,
                "norm_runtime": norm,
                "qos_met": met,
            }),
        )];
        out.extend(c.members.values().map(|&(server, task, _)| {
            if server == me {
                Out::Complete(task)
            } else {
                Out::Send(server, Body::DistDone { task })
            }
        }));
        out
    }

    pub fn finish(&mut self, out: &mut Metrics) {
        out.add("dist_apps_completed", self.completed);
        out.add("dist_qos_targets", self.qos_targets);
        out.add("dist_qos_targets_met", self.qos_met);
        out.add_f64("dist_sum_norm_runtime", self.norm.iter().sum());
        for &n in &self.norm {
            out.sample("dist_norm_runtime", n);
        }
        for (run, line) in self.rows.drain(..) {
            out.row("distributed", run, line);
        }
    }
}
