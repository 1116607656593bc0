//! `annealing`: interference-aware placement of distributed applications by
//! simulated annealing (ASPLOS'16 §5.1–§5.3).
//!
//! Units of a run (groups of VMs, `Task::dist`) queue until the run is
//! complete and its application is profiled; profiling happens once per
//! application and unit count, through the lab's modeled runs
//! (`crate::distributed::lab`), and its modeled time delays the placement.
//! Then every ready run that fits is placed at once: units start at random
//! on the free unit positions, and random swaps of two positions holding
//! different runs (or a run and a free position) are accepted when they
//! lower the energy, or with probability `exp(−Δ/T)` as the temperature
//! cools (simulated annealing; the paper's accept-if-better rule is its
//! zero-temperature limit). The energy is the sum of predicted normalised
//! runtimes (§5.3), plus, for the `qos` goal, a large penalty on every
//! predicted shortfall below a run's QoS bound (§5.2: the bound first,
//! then the total). Predictions come from the proposed model (profiled
//! curves and mapping policy) or the naive proportional one (§5.2).
//! The `worst` goal maximises the sum instead, and `random` keeps only the
//! distinct-hosts constraint, so the walk ends at a random placement that
//! keeps it (§5.3's Worst and Random baselines of Figure 11).
//! A run's units go to distinct hosts (a large penalty otherwise), as in
//! Figure 5, where each application spans four nodes.
//! Simulated annealing is small enough to write here (no crate needed).

use std::collections::BTreeMap;

use dcemu_topology::SimTime;
use rand::RngCore;
use serde::Serialize;

use super::cluster_view::ServerSpec;
use crate::config::SchedulerConfig;
use crate::distributed::AnnealingGoal;
use crate::distributed::lab::profile_app;
use crate::distributed::profile::{Algorithm, AppModel, InterferenceModel};
use crate::kernel::{ActorId, Metrics, ModelError};
use crate::sampling::{index, uniform_open0};
use crate::task::{Task, TaskId};

/// Weight of a unit of predicted QoS shortfall against the total runtime.
const QOS_PENALTY: f64 = 10.0;
/// Weight of two units of one run on one host (the constraint that a run
/// spans distinct hosts).
const SPREAD_PENALTY: f64 = 1.0;
/// Annealing temperatures, in normalised-runtime units.
const T_START: f64 = 0.5;
const T_END: f64 = 1e-4;

/// A run as the scheduler knows it.
#[derive(Clone, Debug)]
struct Run {
    app: u32,
    units: u16,
    qos: Option<f64>,
    /// Queued units (before placement).
    tasks: Vec<Task>,
    /// Server index of each placed unit, by unit.
    hosts: Vec<usize>,
    /// Units still running.
    live: usize,
}

#[derive(Clone, Debug)]
struct Host {
    id: ActorId,
    free_cores: u32,
}

#[derive(Serialize)]
struct PlaceLog {
    run: u64,
    app: u32,
    servers: Vec<String>,
    predicted_norm: f64,
}

pub struct AnnealingStage {
    goal: AnnealingGoal,
    model: InterferenceModel,
    algorithm: Algorithm,
    iterations: u32,
    noise: f64,
    scale: f64,
    hosts: Vec<Host>,
    index: BTreeMap<ActorId, usize>,
    runs: BTreeMap<TaskId, Run>,
    /// Placed unit → its run.
    placed: BTreeMap<TaskId, TaskId>,
    /// Profiles by (application, units), with when they are ready.
    models: BTreeMap<(u32, u16), (AppModel, SimTime)>,
    measured: u64,
    settings: u64,
    errors: Vec<f64>,
    profiling_s: f64,
    predicted: Vec<f64>,
    /// Events to log, taken by the scheduler.
    logs: Vec<(&'static str, serde_json::Value)>,
}

/// What a placement pass decided.
#[derive(Default)]
pub struct Pass {
    pub dispatch: Vec<(ActorId, Task)>,
    pub logs: Vec<(&'static str, serde_json::Value)>,
}

impl AnnealingStage {
    pub fn new(cfg: &SchedulerConfig, servers: &[ServerSpec]) -> Self {
        AnnealingStage {
            goal: cfg.annealing_goal,
            model: cfg.interference_model,
            algorithm: cfg.dist_profiling,
            iterations: cfg.annealing_iterations,
            noise: cfg.dist_profile_noise,
            scale: cfg.dist_profile_scale,
            hosts: servers
                .iter()
                .map(|s| Host {
                    id: s.id,
                    free_cores: s.slots,
                })
                .collect(),
            index: servers.iter().enumerate().map(|(i, s)| (s.id, i)).collect(),
            runs: BTreeMap::new(),
            placed: BTreeMap::new(),
            models: BTreeMap::new(),
            measured: 0,
            settings: 0,
            errors: Vec::new(),
            profiling_s: 0.0,
            predicted: Vec::new(),
            logs: Vec::new(),
        }
    }

    /// Events to log since the last call.
    pub fn take_logs(&mut self) -> Vec<(&'static str, serde_json::Value)> {
        std::mem::take(&mut self.logs)
    }

    /// Units waiting for placement.
    pub fn queued(&self) -> usize {
        self.runs
            .values()
            .filter(|r| r.hosts.is_empty())
            .map(|r| r.tasks.len())
            .sum()
    }

    /// A unit arrives; its application is profiled if it is new. Returns
    /// when a placement pass should run.
    pub fn submit(
        &mut self,
        task: Task,
        now: SimTime,
        rng: &mut impl RngCore,
    ) -> Result<SimTime, ModelError> {
        let Some(d) = task.dist else {
            return Err(ModelError::Invariant(format!(
                "annealing places distributed applications only; task {} is not one",
                task.id
            )));
        };
        let key = (d.app, d.units);
        if !self.models.contains_key(&key) {
            let p = profile_app(
                d.app as usize,
                usize::from(d.units),
                self.algorithm,
                self.noise,
                self.scale,
                rng,
            )
            .ok_or_else(|| ModelError::Invariant(format!("unknown application {}", d.app)))?;
            self.measured += p.measured as u64;
            self.settings += p.settings as u64;
            self.errors.push(p.error);
            self.profiling_s += p.time_ns as f64 / 1e9;
            self.logs.push((
                "dist_profile",
                serde_json::json!({
                    "app": d.app,
                    "units": d.units,
                    "algorithm": self.algorithm.name(),
                    "measured": p.measured,
                    "settings": p.settings,
                    "policy": p.model.policy.name(),
                    "bubble": p.model.bubble,
                    "time_ns": p.time_ns,
                }),
            ));
            self.models.insert(key, (p.model, now + p.time_ns));
        }
        let ready = self.models.get(&key).map_or(now, |m| m.1);
        let run = self.runs.entry(d.run).or_insert_with(|| Run {
            app: d.app,
            units: d.units,
            qos: (d.qos_ppm > 0).then(|| f64::from(d.qos_ppm) / 1e6),
            tasks: Vec::new(),
            hosts: Vec::new(),
            live: 0,
        });
        run.tasks.push(task);
        Ok(ready.max(now))
    }

    /// A unit left its server.
    pub fn release(&mut self, task: TaskId, server: ActorId, cores: u32) {
        if let Some(&i) = self.index.get(&server) {
            self.hosts[i].free_cores += cores;
        }
        if let Some(run) = self.placed.remove(&task)
            && let Some(r) = self.runs.get_mut(&run)
        {
            r.live = r.live.saturating_sub(1);
            if r.live == 0 {
                self.runs.remove(&run);
            }
        }
    }

    /// Places every complete, profiled run that fits, jointly.
    pub fn place(
        &mut self,
        now: SimTime,
        names: &dyn Fn(ActorId) -> String,
        rng: &mut impl RngCore,
    ) -> Pass {
        let mut pass = Pass::default();
        // the runs to place: ready, in run order, while positions last
        let mut batch: Vec<TaskId> = Vec::new();
        let mut need_by_cores: BTreeMap<u32, usize> = BTreeMap::new();
        let mut all_ready = true;
        for (&id, r) in &self.runs {
            if !r.hosts.is_empty() {
                continue;
            }
            let ready = r.tasks.len() == usize::from(r.units)
                && self
                    .models
                    .get(&(r.app, r.units))
                    .is_some_and(|m| m.1 <= now);
            if !ready {
                all_ready = false;
                continue;
            }
            let cores = r.tasks.first().map_or(1, |t| t.cores.max(1));
            let positions: usize = self
                .hosts
                .iter()
                .map(|h| (h.free_cores / cores) as usize)
                .sum();
            let need = need_by_cores.entry(cores).or_insert(0);
            if *need + usize::from(r.units) <= positions {
                *need += usize::from(r.units);
                batch.push(id);
            }
        }
        if batch.is_empty() || (!all_ready && self.runs.values().all(|r| r.hosts.is_empty())) {
            // wait for the whole first mix rather than split it
            return pass;
        }
        // unit positions: one per `cores` free on each host (units of one
        // batch share a core count: the workload's unit_cores)
        let cores = self.runs[&batch[0]].tasks[0].cores.max(1);
        let mut slots: Vec<usize> = Vec::new();
        for (i, h) in self.hosts.iter().enumerate() {
            for _ in 0..h.free_cores / cores {
                slots.push(i);
            }
        }
        // occupants: batch unit (run index in batch, unit) or free
        let mut occ: Vec<Option<(usize, u16)>> = vec![None; slots.len()];
        let units: Vec<(usize, u16)> = batch
            .iter()
            .enumerate()
            .flat_map(|(b, id)| (0..self.runs[id].units).map(move |u| (b, u)))
            .collect();
        // random initial placement: a shuffled order of positions
        let mut order: Vec<usize> = (0..slots.len()).collect();
        for i in (1..order.len()).rev() {
            let j = index(rng, i as u32 + 1) as usize;
            order.swap(i, j);
        }
        for (k, &u) in units.iter().enumerate() {
            occ[order[k]] = Some(u);
        }
        let view = self.view(&batch);
        let (mut energy, feasible) = view.energy(&slots, &occ);
        // the best placement that keeps every run on distinct hosts (any,
        // if none does)
        let mut best = (!feasible, energy, occ.clone());
        let n = self.iterations.max(1);
        if slots.len() >= 2 {
            for step in 0..n {
                let temp = T_START * libm::pow(T_END / T_START, f64::from(step) / f64::from(n));
                let a = index(rng, slots.len() as u32) as usize;
                let b = index(rng, slots.len() as u32) as usize;
                let run_of = |o: &Option<(usize, u16)>| o.map(|x| x.0);
                if run_of(&occ[a]) == run_of(&occ[b]) {
                    continue;
                }
                occ.swap(a, b);
                let (e, feasible) = view.energy(&slots, &occ);
                let accept = e <= energy || uniform_open0(rng) < libm::exp(-(e - energy) / temp);
                if accept {
                    energy = e;
                    if (!feasible, e) < (best.0, best.1) {
                        best = (!feasible, e, occ.clone());
                    }
                } else {
                    occ.swap(a, b);
                }
            }
        }
        let occ = best.2;
        let predicted = view.predictions(&slots, &occ);
        drop(view);
        // dispatch
        let mut hosts_of: Vec<Vec<usize>> = batch
            .iter()
            .map(|id| vec![0; usize::from(self.runs[id].units)])
            .collect();
        for (k, o) in occ.iter().enumerate() {
            if let Some((b, u)) = *o {
                hosts_of[b][usize::from(u)] = slots[k];
            }
        }
        for (b, id) in batch.iter().enumerate() {
            let Some(r) = self.runs.get_mut(id) else {
                continue;
            };
            let hosts = std::mem::take(&mut hosts_of[b]);
            let coordinator = self.hosts[hosts[0]].id;
            let mut tasks = std::mem::take(&mut r.tasks);
            tasks.sort_by_key(|t| t.dist.map_or(0, |d| d.unit));
            for mut t in tasks {
                let unit = t.dist.map_or(0, |d| usize::from(d.unit));
                let host = hosts.get(unit).copied().unwrap_or(hosts[0]);
                if let Some(d) = t.dist.as_mut() {
                    d.coordinator = Some(coordinator);
                }
                self.hosts[host].free_cores -= t.cores;
                self.placed.insert(t.id, *id);
                r.live += 1;
                pass.dispatch.push((self.hosts[host].id, t));
            }
            let p = predicted.get(b).copied().unwrap_or(1.0);
            self.predicted.push(p);
            pass.logs.push((
                "dist_place",
                serde_json::to_value(PlaceLog {
                    run: *id,
                    app: r.app,
                    servers: hosts.iter().map(|&h| names(self.hosts[h].id)).collect(),
                    predicted_norm: p,
                })
                .unwrap_or_default(),
            ));
            r.hosts = hosts;
        }
        pass
    }

    /// What one pass evaluates placements against: per host, the (run,
    /// bubble) of units already placed; per batch run, its model, bubble
    /// and QoS bound; the placed runs with their hosts.
    fn view(&self, batch: &[TaskId]) -> View<'_> {
        let mut fixed: Vec<Vec<(TaskId, f64)>> = vec![Vec::new(); self.hosts.len()];
        let mut placed = Vec::new();
        for (id, r) in &self.runs {
            if r.hosts.is_empty() {
                continue;
            }
            if let Some((m, _)) = self.models.get(&(r.app, r.units)) {
                for &h in &r.hosts {
                    fixed[h].push((*id, m.bubble));
                }
                placed.push((*id, m, r.hosts.clone()));
            }
        }
        let runs = batch
            .iter()
            .filter_map(|id| {
                let r = self.runs.get(id)?;
                let (m, _) = self.models.get(&(r.app, r.units))?;
                Some((*id, m, r.qos))
            })
            .collect();
        View {
            fixed,
            runs,
            placed,
            model: self.model,
            goal: self.goal,
        }
    }
}

/// A placement pass's fixed facts (see [`AnnealingStage::view`]).
struct View<'a> {
    fixed: Vec<Vec<(TaskId, f64)>>,
    runs: Vec<(TaskId, &'a AppModel, Option<f64>)>,
    placed: Vec<(TaskId, &'a AppModel, Vec<usize>)>,
    model: InterferenceModel,
    goal: AnnealingGoal,
}

impl View<'_> {
    /// Predicted normalised runtime of each batch run (in batch order),
    /// then of each placed run, under the placement `occ` of `slots`.
    fn predictions(&self, slots: &[usize], occ: &[Option<(usize, u16)>]) -> Vec<f64> {
        let mut on = self.fixed.clone();
        let mut hosts_of: Vec<Vec<usize>> = vec![Vec::new(); self.runs.len()];
        for (k, o) in occ.iter().enumerate() {
            if let Some((b, _)) = *o
                && let Some((id, m, _)) = self.runs.get(b)
            {
                on[slots[k]].push((*id, m.bubble));
                hosts_of[b].push(slots[k]);
            }
        }
        let pressure = |host: usize, run: TaskId| {
            on[host]
                .iter()
                .filter(|(r, _)| *r != run)
                .map(|&(_, b)| b)
                .fold(0.0, f64::max)
        };
        let mut out = Vec::with_capacity(self.runs.len() + self.placed.len());
        for (b, (id, m, _)) in self.runs.iter().enumerate() {
            let p: Vec<f64> = hosts_of[b].iter().map(|&h| pressure(h, *id)).collect();
            out.push(m.predict(&p, self.model));
        }
        for (id, m, hosts) in &self.placed {
            let p: Vec<f64> = hosts.iter().map(|&h| pressure(h, *id)).collect();
            out.push(m.predict(&p, self.model));
        }
        out
    }

    /// The energy of a placement, and whether every run is on distinct hosts.
    fn energy(&self, slots: &[usize], occ: &[Option<(usize, u16)>]) -> (f64, bool) {
        let pred = self.predictions(slots, occ);
        let mut e: f64 = match self.goal {
            AnnealingGoal::Throughput | AnnealingGoal::Qos => pred.iter().sum(),
            // §5.3's baselines: the highest sum, or only the spread
            // constraint (every placement that keeps it is as good, so
            // the walk ends at a random one)
            AnnealingGoal::Worst => -pred.iter().sum::<f64>(),
            AnnealingGoal::Random => 0.0,
        };
        // a run spans distinct hosts (Figure 5: one unit of an application
        // per node), as its solo run and its profiles did
        let mut seen: Vec<(usize, usize)> = occ
            .iter()
            .zip(slots)
            .filter_map(|(o, &h)| o.map(|(b, _)| (b, h)))
            .collect();
        seen.sort_unstable();
        let shared = seen.windows(2).filter(|w| w[0] == w[1]).count();
        e += SPREAD_PENALTY * shared as f64;
        if self.goal == AnnealingGoal::Qos {
            for (b, (_, _, qos)) in self.runs.iter().enumerate() {
                if let (Some(q), Some(&p)) = (qos, pred.get(b)) {
                    e += QOS_PENALTY * (p - 1.0 / q).max(0.0);
                }
            }
        }
        (e, shared == 0)
    }
}

impl AnnealingStage {
    pub fn finish(&self, out: &mut Metrics) {
        out.add("dist_settings_measured", self.measured);
        out.add("dist_settings_total", self.settings);
        out.add_f64("dist_profiling_time_s", self.profiling_s);
        out.declare_samples("dist_prediction_error");
        for &e in &self.errors {
            out.sample("dist_prediction_error", e);
        }
        out.declare_samples("dist_predicted_norm_runtime");
        for &p in &self.predicted {
            out.sample("dist_predicted_norm_runtime", p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::DistRef;
    use crate::distributed::truth::find;
    use crate::kernel::actor_rng;

    fn stage(goal: AnnealingGoal) -> AnnealingStage {
        let servers: Vec<ServerSpec> = (0..4)
            .map(|i| ServerSpec {
                id: ActorId(10 + i),
                slots: 16,
                cores: 16,
                class: 0,
                memory_mb: 0,
                core_speed: 1.0,
                idle_w: 0.0,
                peak_w: 0.0,
            })
            .collect();
        let cfg = SchedulerConfig {
            annealing_goal: goal,
            ..SchedulerConfig::default()
        };
        AnnealingStage::new(&cfg, &servers)
    }

    fn units(app: &str, run: TaskId, qos: bool) -> Vec<Task> {
        (0..2u16)
            .map(|u| Task {
                cores: 8,
                dist: Some(DistRef {
                    app: find(app).unwrap() as u32,
                    run,
                    unit: u,
                    units: 2,
                    qos_ppm: if qos { 800_000 } else { 0 },
                    coordinator: None,
                }),
                ..Task::new(run + u64::from(u), ActorId(1), 0, 600_000_000_000)
            })
            .collect()
    }

    /// Four runs of two units fill four hosts of two positions; every run
    /// spans two hosts, the coordinator is unit 0's host, and the QoS goal
    /// keeps the sensitive M.lmps away from C.libq.
    #[test]
    fn places_runs_on_distinct_hosts_and_protects_the_qos_target() {
        for goal in [
            AnnealingGoal::Throughput,
            AnnealingGoal::Qos,
            AnnealingGoal::Worst,
            AnnealingGoal::Random,
        ] {
            let mut s = stage(goal);
            let mut rng = actor_rng(3, "scheduler");
            let mut ready = 0;
            for (app, run, qos) in [
                ("M.lmps", 0, true),
                ("C.libq", 2, false),
                ("H.KM", 4, false),
                ("C.mcf", 6, false),
            ] {
                for t in units(app, run, qos) {
                    ready = ready.max(s.submit(t, 0, &mut rng).unwrap());
                }
            }
            assert!(ready > 0, "profiling takes modeled time");
            assert!(s.place(0, &|_| String::new(), &mut rng).dispatch.is_empty());
            let pass = s.place(ready, &|id| format!("s{}", id.0), &mut rng);
            assert_eq!(pass.dispatch.len(), 8);
            assert_eq!(s.queued(), 0);
            let mut by_run: BTreeMap<TaskId, Vec<ActorId>> = BTreeMap::new();
            for (server, t) in &pass.dispatch {
                let d = t.dist.unwrap();
                by_run.entry(d.run).or_default().push(*server);
                if d.unit == 0 {
                    assert_eq!(d.coordinator, Some(*server));
                }
            }
            for hosts in by_run.values() {
                assert_ne!(hosts[0], hosts[1], "{goal:?}: a run spans distinct hosts");
            }
            if goal == AnnealingGoal::Qos {
                let libq = &by_run[&2];
                assert!(
                    by_run[&0].iter().all(|h| !libq.contains(h)),
                    "M.lmps shares no host with C.libq"
                );
            }
            // releases free the hosts again
            for (server, t) in &pass.dispatch {
                s.release(t.id, *server, t.cores);
            }
            assert!(s.hosts.iter().all(|h| h.free_cores == 16));
            assert!(s.runs.is_empty());
        }
    }
}
