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

use super::DistRef;
use super::truth::DistApp;
use crate::kernel::{ActorId, Metrics};
use crate::net::Body;
use crate::net::Msg;
use crate::task::TaskId;

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
    /// The attempt of the run these members belong to.
    attempt: u32,
    /// A log's parallel job: it lasts exactly this long ([`DistRef::fixed_ns`]).
    fixed_ns: u64,
}

/// The distributed side of one server.
#[derive(Debug, Default)]
pub struct DistHost {
    units: BTreeMap<TaskId, Unit>,
    coords: BTreeMap<TaskId, Coord>,
    finished: BTreeSet<TaskId>,
    /// Per run, the latest attempt this server ended without its work done
    /// (a unit of it killed or stopped here): what that attempt's units
    /// still report is stale.
    aborted: BTreeMap<TaskId, u32>,
    rows: Vec<(u64, String)>,
    completed: u64,
    norm: Vec<f64>,
    qos_targets: u64,
    qos_met: u64,
    /// Parallel jobs of a log done.
    jobs_completed: u64,
}

/// Every unit of a run that is over ends: here, or on its server.
fn ends(c: &Coord, me: ActorId) -> impl Iterator<Item = Out> + '_ {
    c.members.values().map(move |&(server, task, _)| {
        if server == me {
            Out::Complete(task)
        } else {
            Out::Send(server, Body::DistDone { task })
        }
    })
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
        catalog: &[DistApp],
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
        self.repressure(catalog, me, now)
    }

    /// A unit ended here: its co-runners' pressure may have dropped.
    pub fn ended(
        &mut self,
        catalog: &[DistApp],
        me: ActorId,
        task: TaskId,
        now: SimTime,
    ) -> Vec<Out> {
        if self.units.remove(&task).is_none() {
            return Vec::new();
        }
        self.repressure(catalog, me, now)
    }

    /// A unit left without its run's work done (killed for the primary
    /// tenant, or stopped because another unit of its run was): if this
    /// server coordinates that attempt of the run, the attempt is over here
    /// and never ends as done; its co-runners' pressure may have dropped.
    pub fn stopped(
        &mut self,
        catalog: &[DistApp],
        me: ActorId,
        task: TaskId,
        now: SimTime,
    ) -> Vec<Out> {
        let Some(unit) = self.units.get(&task) else {
            return Vec::new();
        };
        let (run, attempt) = (unit.dist.run, unit.dist.attempt);
        if self.coords.get(&run).is_some_and(|c| c.attempt == attempt) {
            self.coords.remove(&run);
        }
        let latest = self.aborted.entry(run).or_insert(attempt);
        *latest = (*latest).max(attempt);
        self.ended(catalog, me, task, now)
    }

    /// Recomputes every unit's pressure and reports those that changed to
    /// their coordinators (directly when this server is one).
    fn repressure(&mut self, catalog: &[DistApp], me: ActorId, now: SimTime) -> Vec<Out> {
        let bubbles: Vec<(TaskId, f64)> = self
            .units
            .values()
            .map(|u| {
                let b = catalog.get(u.dist.app as usize).map_or(0.0, |a| a.bubble);
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
                _ => out.extend(self.pressure(catalog, me, dist, task, milli, now)),
            }
        }
        out
    }

    /// Coordinator: unit `dist.unit` (task `task` on `server`) now suffers
    /// `milli`; the run starts once every unit has reported.
    pub fn pressure(
        &mut self,
        catalog: &[DistApp],
        server: ActorId,
        dist: DistRef,
        task: TaskId,
        milli: u32,
        now: SimTime,
    ) -> Vec<Out> {
        let stale = self
            .aborted
            .get(&dist.run)
            .is_some_and(|&a| dist.attempt <= a)
            || self
                .coords
                .get(&dist.run)
                .is_some_and(|c| c.attempt > dist.attempt);
        if self.finished.contains(&dist.run) || stale {
            return Vec::new();
        }
        if self
            .coords
            .get(&dist.run)
            .is_some_and(|c| c.attempt < dist.attempt)
        {
            self.coords.remove(&dist.run);
        }
        if dist.fixed_ns > 0 {
            return self.fixed_pressure(server, dist, task, milli, now);
        }
        let Some(app) = catalog.get(dist.app as usize) else {
            return Vec::new();
        };
        let solo_ns = app.solo_s * 1e9;
        let c = self.coords.entry(dist.run).or_insert_with(|| Coord {
            units: dist.units,
            app: dist.app,
            qos_ppm: dist.qos_ppm,
            slowdown: 1.0,
            attempt: dist.attempt,
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

    /// Coordinator of a log's parallel job: it starts once every unit has
    /// reported and ends exactly `fixed_ns` later, whatever its units'
    /// co-runners do (the log recorded its run time, not its rate).
    fn fixed_pressure(
        &mut self,
        server: ActorId,
        dist: DistRef,
        task: TaskId,
        milli: u32,
        now: SimTime,
    ) -> Vec<Out> {
        let c = self.coords.entry(dist.run).or_insert_with(|| Coord {
            units: dist.units,
            app: dist.app,
            slowdown: 1.0,
            attempt: dist.attempt,
            fixed_ns: dist.fixed_ns,
            ..Coord::default()
        });
        c.members.insert(dist.unit, (server, task, milli));
        if c.started.is_some() || c.members.len() < usize::from(c.units) {
            return Vec::new();
        }
        c.started = Some(now);
        c.generation += 1;
        vec![
            Out::Log(
                "dist_run_start",
                serde_json::json!({ "run": dist.run, "app": null, "units": dist.units }),
            ),
            Out::Timer(
                c.fixed_ns.max(1),
                Msg::DistFinish {
                    run: dist.run,
                    generation: c.generation,
                },
            ),
        ]
    }

    /// Coordinator timer: the run's work is done (unless stale); every unit
    /// ends on its server.
    pub fn finish_timer(
        &mut self,
        catalog: &[DistApp],
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
        if c.fixed_ns > 0 {
            return self.fixed_end(me, run, c, now);
        }
        let app = catalog.get(c.app as usize);
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
        out.extend(ends(&c, me));
        out
    }

    /// A log's parallel job is done: its units end.
    fn fixed_end(&mut self, me: ActorId, run: TaskId, c: Coord, now: SimTime) -> Vec<Out> {
        let runtime_s = (now - c.started.unwrap_or(now)) as f64 / 1e9;
        self.jobs_completed += 1;
        let mut out = vec![Out::Log(
            "dist_run_end",
            serde_json::json!({ "run": run, "app": null, "runtime_s": runtime_s }),
        )];
        out.extend(ends(&c, me));
        out
    }

    /// The metrics: the distributed applications' (`apps`: the scenario has
    /// a `[workload]`) and the parallel jobs' (only where there were some).
    pub fn finish(&mut self, apps: bool, out: &mut Metrics) {
        if self.jobs_completed > 0 {
            out.add("parallel_jobs_completed", self.jobs_completed);
        }
        if !apps {
            return;
        }
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

#[cfg(test)]
mod tests {
    use super::super::truth::{catalog, find};
    use super::super::{DistRef, DistWorld, WorkloadConfig};
    use super::*;

    fn world() -> DistWorld {
        DistWorld {
            catalog: catalog(),
            workload: WorkloadConfig {
                mix: "HW1".into(),
                qos_target: 0,
                qos_perf: 0.8,
                units_per_app: 2,
                unit_cores: 8,
                copies: 1,
                rounds: 1,
            },
        }
    }

    fn unit(app: &str, run: TaskId, unit: u16, coordinator: ActorId) -> DistRef {
        DistRef {
            app: find(app).unwrap() as u32,
            run,
            unit,
            units: 2,
            qos_ppm: 0,
            coordinator: Some(coordinator),
            attempt: 0,
            fixed_ns: 0,
        }
    }

    fn timers(out: &[Out]) -> Vec<(SimTime, u64)> {
        out.iter()
            .filter_map(|o| match o {
                Out::Timer(d, Msg::DistFinish { generation, .. }) => Some((*d, *generation)),
                _ => None,
            })
            .collect()
    }

    /// A log's parallel job (no catalog at all): it starts when its last
    /// unit reports and ends exactly its run time later, whatever joins
    /// its servers meanwhile; its units end on theirs.
    #[test]
    fn a_fixed_run_lasts_its_run_time_whatever_shares_its_servers() {
        let (a, b) = (ActorId(3), ActorId(4));
        let job = |u: u16| DistRef {
            app: u32::MAX,
            fixed_ns: 90_000_000_000,
            ..unit("M.lmps", 10, u, a)
        };
        let mut host_a = DistHost::default();
        assert!(timers(&host_a.started(&[], a, 10, job(0), 1_000)).is_empty());
        let out = host_a.pressure(&[], b, job(1), 11, 0, 2_000);
        assert_eq!(timers(&out), vec![(90_000_000_000, 1)], "{out:?}");
        // a co-runner's pressure changes nothing
        let late = host_a.pressure(&[], b, job(1), 11, 900, 5_000_000_000);
        assert!(timers(&late).is_empty(), "{late:?}");
        let end = host_a.finish_timer(&[], a, 10, 1, 90_000_002_000);
        assert!(end.contains(&Out::Complete(10)), "{end:?}");
        assert!(
            end.contains(&Out::Send(b, Body::DistDone { task: 11 })),
            "{end:?}"
        );
        let mut m = Metrics::default();
        host_a.finish(false, &mut m);
        assert_eq!(m.counter("parallel_jobs_completed"), 1);
        assert!(m.counters().all(|(k, _)| !k.starts_with("dist_")));
    }

    /// M.lmps (high propagation) on two servers; a C.libq unit joins one of
    /// them halfway: the coordinator integrates the first half at full
    /// speed and the rest at the truth's slowdown for one interfering unit.
    #[test]
    fn coordinator_integrates_progress_across_a_pressure_change() {
        let w = world();
        let (a, b) = (ActorId(1), ActorId(2));
        let mut host_a = DistHost::default();
        let mut host_b = DistHost::default();
        // unit 0 on a (the coordinator), unit 1 on b
        let out = host_a.started(&w.catalog, a, 10, unit("M.lmps", 10, 0, a), 0);
        assert!(timers(&out).is_empty(), "not all units yet");
        let out = host_b.started(&w.catalog, b, 11, unit("M.lmps", 10, 1, a), 0);
        let [
            Out::Send(
                to,
                Body::DistPressure {
                    dist,
                    task,
                    pressure_milli,
                },
            ),
        ] = out.as_slice()
        else {
            panic!("{out:?}");
        };
        assert_eq!((*to, *task, *pressure_milli), (a, 11, 0));
        let out = host_a.pressure(&w.catalog, b, *dist, 11, 0, 0);
        let solo = 600_000_000_000u64;
        assert_eq!(timers(&out), vec![(solo, 1)]);
        // at 300 s a C.libq unit (another run) lands on b
        let out = host_b.started(&w.catalog, b, 20, unit("C.libq", 20, 0, b), 300_000_000_000);
        let report = out
            .iter()
            .find_map(|o| match o {
                Out::Send(
                    to,
                    Body::DistPressure {
                        dist,
                        task,
                        pressure_milli,
                    },
                ) if *to == a => Some((*dist, *task, *pressure_milli)),
                _ => None,
            })
            .expect("lmps unit reports the libq pressure");
        assert_eq!(report.2, 6600);
        let out = host_a.pressure(&w.catalog, b, report.0, report.1, report.2, 300_000_000_000);
        let lmps = &w.catalog[find("M.lmps").unwrap()];
        let slowdown = lmps.runtime(&[0.0, 6.6]);
        assert!(
            slowdown > 1.3,
            "high propagation: one node of two {slowdown}"
        );
        let [(left, 2)] = timers(&out)[..] else {
            panic!("{out:?}")
        };
        let expect = 0.5 * 600e9 * slowdown;
        assert!((left as f64 - expect).abs() < 2.0, "{left} vs {expect}");
        // the stale first timer does nothing; the second ends both units
        assert!(host_a.finish_timer(&w.catalog, a, 10, 1, solo).is_empty());
        let end = 300_000_000_000 + left;
        let out = host_a.finish_timer(&w.catalog, a, 10, 2, end);
        assert!(out.contains(&Out::Complete(10)));
        assert!(out.contains(&Out::Send(b, Body::DistDone { task: 11 })));
        let mut m = Metrics::default();
        host_a.finish(true, &mut m);
        assert_eq!(m.counter("dist_apps_completed"), 1);
        let norm = m.sum("dist_sum_norm_runtime");
        assert!((norm - (0.5 + 0.5 * slowdown)).abs() < 1e-6, "{norm}");
    }

    #[test]
    fn units_of_one_run_do_not_press_on_each_other() {
        let w = world();
        let a = ActorId(1);
        let mut host = DistHost::default();
        host.started(&w.catalog, a, 10, unit("N.mg", 10, 0, a), 0);
        let out = host.started(&w.catalog, a, 11, unit("N.mg", 10, 1, a), 0);
        // both at pressure 0: the run starts at full speed
        assert_eq!(timers(&out), vec![(600_000_000_000, 1)]);
    }

    /// A unit stopped on its coordinator ends that attempt there: what the
    /// old attempt's other units still report is ignored, and the next
    /// attempt (same run, same tasks) starts afresh and ends once.
    #[test]
    fn a_stopped_attempt_is_dropped_and_the_next_one_starts_afresh() {
        let w = world();
        let (a, b) = (ActorId(1), ActorId(2));
        let mut host_a = DistHost::default();
        host_a.started(&w.catalog, a, 10, unit("N.mg", 10, 0, a), 0);
        let out = host_a.pressure(&w.catalog, b, unit("N.mg", 10, 1, a), 11, 0, 0);
        assert_eq!(timers(&out), vec![(600_000_000_000, 1)]);
        // unit 1 was killed on b; the scheduler stops unit 0 here
        host_a.stopped(&w.catalog, a, 10, 5_000_000_000);
        assert!(!host_a.runs(10));
        assert!(
            host_a
                .finish_timer(&w.catalog, a, 10, 1, 600_000_000_000)
                .is_empty()
        );
        // a late report of the old attempt changes nothing
        let stale = host_a.pressure(&w.catalog, b, unit("N.mg", 10, 1, a), 11, 0, 6_000_000_000);
        assert!(stale.is_empty(), "{stale:?}");
        // attempt 1: both units again
        let again = |u: u16| DistRef {
            attempt: 1,
            ..unit("N.mg", 10, u, a)
        };
        let t = 10_000_000_000;
        host_a.started(&w.catalog, a, 10, again(0), t);
        let out = host_a.pressure(&w.catalog, b, again(1), 11, 0, t);
        let [(left, generation)] = timers(&out)[..] else {
            panic!("{out:?}")
        };
        assert_eq!(left, 600_000_000_000, "the new attempt starts from nothing");
        let end = host_a.finish_timer(&w.catalog, a, 10, generation, t + left);
        assert!(end.contains(&Out::Complete(10)));
        let mut m = Metrics::default();
        host_a.finish(true, &mut m);
        assert_eq!(m.counter("dist_apps_completed"), 1);
    }
}
