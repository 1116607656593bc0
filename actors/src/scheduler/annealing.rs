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
use super::run_ledger::{Ended, RunLedger};
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
    /// Not placed before this time (a restarted attempt waits
    /// `resubmit_delay`, as a killed task does).
    ready_at: SimTime,
}

impl Run {
    /// A run not yet seen, from one of its units' descriptions.
    fn of(d: &crate::task::DistRef) -> Self {
        Run {
            app: d.app,
            units: d.units,
            qos: (d.qos_ppm > 0).then(|| f64::from(d.qos_ppm) / 1e6),
            tasks: Vec::new(),
            hosts: Vec::new(),
            ready_at: 0,
        }
    }
}

/// A unit on its server, as the scheduler booked it.
#[derive(Clone, Copy, Debug)]
struct Booked {
    host: usize,
    cores: u32,
    memory_mb: u64,
}

/// What the scheduler must do after a unit came back unfinished
/// ([`AnnealingStage::lost`]).
#[derive(Debug, Default, PartialEq)]
pub struct Lost {
    /// The server, index in the view, and slots and memory the unit held
    /// there (none if the stage did not place it).
    pub freed: Option<(u32, u32, u64)>,
    /// The run's other units to stop: (server, task, attempt).
    pub stop: Vec<(ActorId, TaskId, u32)>,
    /// The run's units go back to the queue, ready at this time.
    pub requeue_at: Option<SimTime>,
    /// How many units go back to the queue.
    pub requeued: usize,
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
    /// Independent walks per placement pass, the best kept
    /// (`annealing_restarts`).
    restarts: u32,
    noise: f64,
    scale: f64,
    /// Each server's actor, by index in the scheduler's view.
    hosts: Vec<ActorId>,
    runs: BTreeMap<TaskId, Run>,
    /// Placed units, running or on their way.
    placed: BTreeMap<TaskId, Booked>,
    /// Placed runs' attempts ([`RunLedger`]).
    ledger: RunLedger,
    /// Under a slot stage: each started unit's run, whose hosts `runs`
    /// keeps while it runs, for the next runs' interference.
    slot_units: BTreeMap<TaskId, TaskId>,
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
    /// Each unit with its server's index in the scheduler's view.
    pub dispatch: Vec<(u32, Task)>,
    pub logs: Vec<(&'static str, serde_json::Value)>,
}

impl AnnealingStage {
    pub fn new(cfg: &SchedulerConfig, servers: &[ServerSpec]) -> Self {
        AnnealingStage {
            goal: cfg.annealing_goal,
            model: cfg.interference_model,
            algorithm: cfg.dist_profiling,
            iterations: cfg.annealing_iterations,
            restarts: cfg.annealing_restarts,
            noise: cfg.dist_profile_noise,
            scale: cfg.dist_profile_scale,
            hosts: servers.iter().map(|s| s.id).collect(),
            runs: BTreeMap::new(),
            placed: BTreeMap::new(),
            slot_units: BTreeMap::new(),
            ledger: RunLedger::default(),
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

    /// Units waiting for placement (with those of an attempt being
    /// stopped that are back already).
    pub fn queued(&self) -> usize {
        let unplaced: usize = self
            .runs
            .values()
            .filter(|r| r.hosts.is_empty())
            .map(|r| r.tasks.len())
            .sum();
        unplaced + self.ledger.waiting()
    }

    /// Whether `task` is a unit this stage placed and still holds.
    pub fn owns(&self, task: TaskId) -> bool {
        self.placed.contains_key(&task)
    }

    /// Whether a complete, profiled run waits for room at `now`: single
    /// tasks then wait behind it, so that a run, which needs all its hosts
    /// at once, is not passed for ever by tasks that need one.
    pub fn blocked(&self, now: SimTime) -> bool {
        self.runs.values().any(|r| self.ready(r, now))
    }

    /// Whether `r` waits unplaced, complete, profiled, at `now`.
    fn ready(&self, r: &Run, now: SimTime) -> bool {
        r.hosts.is_empty()
            && r.ready_at <= now
            && r.tasks.len() == usize::from(r.units)
            && self
                .models
                .get(&(r.app, r.units))
                .is_some_and(|m| m.1 <= now)
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
        let ready = self.profile(&task, now, rng)?;
        let run = self.runs.entry(d.run).or_insert_with(|| Run::of(&d));
        run.tasks.push(task);
        Ok(ready.max(now))
    }

    /// Profiles the application of unit `task` if it is new (§5.1): when
    /// its model is ready. Under a slot stage too, where the run queues
    /// only then.
    pub fn profile(
        &mut self,
        task: &Task,
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
        Ok(self.models.get(&key).map_or(now, |m| m.1).max(now))
    }

    /// Under a slot stage (issue 22): the hosts of the run of `units`, in
    /// their order, among `candidates` (server indices: the servers with a
    /// free slot the slot stage allows it). The run is annealed alone, a
    /// batch of one (the slot stage starts runs one at a time, thesis
    /// §6.2.3.2), with §5.3's energy against the runs started before it;
    /// one position per candidate keeps its units on distinct hosts.
    /// `None`: fewer candidates than units, or no profile yet.
    pub fn choose_hosts(
        &mut self,
        units: &[Task],
        candidates: &[u32],
        rng: &mut impl RngCore,
    ) -> Option<Vec<u32>> {
        let d = units.first()?.dist?;
        let n = usize::from(d.units);
        if units.len() != n || candidates.len() < n {
            return None;
        }
        self.models.get(&(d.app, d.units))?;
        let run = self.runs.entry(d.run).or_insert_with(|| Run::of(&d));
        run.hosts.clear();
        let slots: Vec<usize> = candidates.iter().map(|&i| i as usize).collect();
        let positions: Vec<(usize, u16)> = (0..d.units).map(|u| (0, u)).collect();
        let view = self.view(&[d.run]);
        let occ = self.anneal(&view, &slots, &positions, rng);
        drop(view);
        let mut by_unit: Vec<Option<u32>> = vec![None; n];
        for (k, o) in occ.iter().enumerate() {
            if let Some((_, u)) = *o {
                by_unit[usize::from(u)] = Some(slots[k] as u32);
            }
        }
        units
            .iter()
            .map(|t| by_unit.get(usize::from(t.dist?.unit)).copied().flatten())
            .collect()
    }

    /// Under a slot stage: unit `task` of a run [`Self::choose_hosts`]
    /// placed starts on server `server` (index).
    pub fn unit_started(&mut self, task: &Task, server: u32) {
        let Some(d) = task.dist else {
            return;
        };
        let Some(r) = self.runs.get_mut(&d.run) else {
            return;
        };
        let n = usize::from(r.units);
        if r.hosts.len() != n {
            r.hosts = vec![server as usize; n];
        }
        if let Some(h) = r.hosts.get_mut(usize::from(d.unit)) {
            *h = server as usize;
        }
        self.slot_units.insert(task.id, d.run);
    }

    /// Under a slot stage: unit `task` left its slot (finished, lost,
    /// evicted, or withdrawn before its run started): its run no longer
    /// runs whole, and no longer weighs on the next runs' placement.
    pub fn unit_left(&mut self, task: TaskId) {
        if let Some(run) = self.slot_units.remove(&task) {
            self.runs.remove(&run);
        }
    }

    /// A unit finished on its server (its run's coordinator ended the run,
    /// work done): returns the server's index in the view and the slots and
    /// memory it held there.
    pub fn release(&mut self, task: TaskId) -> Option<(u32, u32, u64)> {
        let b = self.placed.remove(&task)?;
        if let Some((run, Ended::Over)) = self.ledger.finished(task) {
            self.runs.remove(&run);
        }
        Some((b.host as u32, b.cores, b.memory_mb))
    }

    /// A unit came back unfinished at `now`: killed by its server for the
    /// primary tenant (harvesting §5.3), evicted, or stopped by
    /// [`Lost::stop`]. The run's attempt ends as [`RunLedger::lost`] rules;
    /// once all its units are back, the run queues again from the start
    /// after `delay`, as YARN re-runs a killed application attempt.
    pub fn lost(&mut self, task: Task, now: SimTime, delay: SimTime) -> Lost {
        let mut out = Lost::default();
        let Some(b) = self.placed.remove(&task.id) else {
            return out;
        };
        out.freed = Some((b.host as u32, b.cores, b.memory_mb));
        let Some(lost) = self.ledger.lost(task) else {
            return out;
        };
        out.stop = lost.stop;
        match lost.ended {
            Ended::Running => {}
            Ended::Over => {
                self.runs.remove(&lost.run);
            }
            Ended::Restart(tasks) => {
                if let Some(r) = self.runs.get_mut(&lost.run) {
                    let ready_at = now + delay;
                    out.requeued = tasks.len();
                    out.requeue_at = Some(ready_at);
                    r.tasks = tasks;
                    r.hosts.clear();
                    r.ready_at = ready_at;
                }
            }
        }
        out
    }

    /// Places every complete, profiled run that fits, jointly, on the
    /// slots `room` leaves free on each server (by index in the
    /// scheduler's view: what no task holds and, with primary tenants, what
    /// they leave).
    pub fn place(
        &mut self,
        now: SimTime,
        room: &[u32],
        names: &dyn Fn(ActorId) -> String,
        rng: &mut impl RngCore,
    ) -> Pass {
        let mut room = room.to_vec();
        let mut pass = Pass::default();
        // the runs to place: ready, in run order, while positions last
        let mut batch: Vec<TaskId> = Vec::new();
        let mut need_by_cores: BTreeMap<u32, usize> = BTreeMap::new();
        let mut all_ready = true;
        for (&id, r) in &self.runs {
            if !r.hosts.is_empty() {
                continue;
            }
            if !self.ready(r, now) {
                all_ready = false;
                continue;
            }
            let cores = r.tasks.first().map_or(1, |t| t.cores.max(1));
            let positions: usize = room.iter().map(|&f| (f / cores) as usize).sum();
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
        for (i, &f) in room.iter().enumerate() {
            for _ in 0..f / cores {
                slots.push(i);
            }
        }
        // occupants: batch unit (run index in batch, unit) or free
        let units: Vec<(usize, u16)> = batch
            .iter()
            .enumerate()
            .flat_map(|(b, id)| (0..self.runs[id].units).map(move |u| (b, u)))
            .collect();
        let view = self.view(&batch);
        let occ = self.anneal(&view, &slots, &units, rng);
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
            let attempt = self.ledger.attempt(*id);
            let Some(r) = self.runs.get_mut(id) else {
                continue;
            };
            let hosts = std::mem::take(&mut hosts_of[b]);
            let mut ids = Vec::new();
            let coordinator = self.hosts[hosts[0]];
            let mut tasks = std::mem::take(&mut r.tasks);
            tasks.sort_by_key(|t| t.dist.map_or(0, |d| d.unit));
            for mut t in tasks {
                let unit = t.dist.map_or(0, |d| usize::from(d.unit));
                let host = hosts.get(unit).copied().unwrap_or(hosts[0]);
                if let Some(d) = t.dist.as_mut() {
                    d.coordinator = Some(coordinator);
                    d.attempt = attempt;
                }
                room[host] = room[host].saturating_sub(t.cores);
                self.placed.insert(
                    t.id,
                    Booked {
                        host,
                        cores: t.cores,
                        memory_mb: t.memory_mb,
                    },
                );
                ids.push(t.id);
                pass.dispatch.push((host as u32, t));
            }
            let units = ids
                .into_iter()
                .enumerate()
                .map(|(unit, id)| (id, self.hosts[hosts[unit]]))
                .collect();
            self.ledger.started(*id, units);
            let p = predicted.get(b).copied().unwrap_or(1.0);
            self.predicted.push(p);
            pass.logs.push((
                "dist_place",
                serde_json::to_value(PlaceLog {
                    run: *id,
                    app: r.app,
                    servers: hosts.iter().map(|&h| names(self.hosts[h])).collect(),
                    predicted_norm: p,
                })
                .unwrap_or_default(),
            ));
            r.hosts = hosts;
        }
        pass
    }

    /// Simulated annealing of `units` (batch run, unit) over the unit
    /// positions `slots` (a server index each) against `view`: a random
    /// start, then swaps accepted as the temperature cools (§5.1). The
    /// best placement that keeps every run on distinct hosts (any, if none
    /// does): for each position, the unit it holds.
    ///
    /// The walk is run `restarts` times from independent random starts and
    /// the best end kept (feasible first, then the lower energy; ties: the
    /// earlier walk). §5.1 repeats swaps for a fixed number of iterations
    /// and gives no schedule; one walk can end in a local minimum where
    /// every single swap towards the bound is uphill (Figure 10's HW1 and
    /// HM2 on some seeds), which independent starts escape.
    fn anneal(
        &self,
        view: &View<'_>,
        slots: &[usize],
        units: &[(usize, u16)],
        rng: &mut impl RngCore,
    ) -> Vec<Option<(usize, u16)>> {
        let mut best = self.walk(view, slots, units, rng);
        for _ in 1..self.restarts.max(1) {
            let other = self.walk(view, slots, units, rng);
            if (other.0, other.1) < (best.0, best.1) {
                best = other;
            }
        }
        best.2
    }

    /// One annealing walk from a random start: its best end as
    /// (infeasible, energy, placement).
    fn walk(
        &self,
        view: &View<'_>,
        slots: &[usize],
        units: &[(usize, u16)],
        rng: &mut impl RngCore,
    ) -> (bool, f64, Vec<Option<(usize, u16)>>) {
        let mut occ: Vec<Option<(usize, u16)>> = vec![None; slots.len()];
        // random initial placement: a shuffled order of positions
        let mut order: Vec<usize> = (0..slots.len()).collect();
        for i in (1..order.len()).rev() {
            let j = index(rng, i as u32 + 1) as usize;
            order.swap(i, j);
        }
        for (k, &u) in units.iter().enumerate() {
            occ[order[k]] = Some(u);
        }
        let (mut energy, feasible) = view.energy(slots, &occ);
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
                let (e, feasible) = view.energy(slots, &occ);
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
        best
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
        self.ledger.finish(out);
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
                    attempt: 0,
                    fixed_ns: 0,
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
            let room = [16; 4];
            assert!(
                s.place(0, &room, &|_| String::new(), &mut rng)
                    .dispatch
                    .is_empty()
            );
            let pass = s.place(ready, &room, &|id| format!("s{}", id.0), &mut rng);
            assert_eq!(pass.dispatch.len(), 8);
            assert_eq!(s.queued(), 0);
            let mut by_run: BTreeMap<TaskId, Vec<u32>> = BTreeMap::new();
            for (i, t) in &pass.dispatch {
                let d = t.dist.unwrap();
                by_run.entry(d.run).or_default().push(*i);
                if d.unit == 0 {
                    assert_eq!(d.coordinator, Some(ActorId(10 + *i)));
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
            // releases give back what each unit held, and end the runs
            for (i, t) in &pass.dispatch {
                assert_eq!(s.release(t.id), Some((*i, 8, 0)));
            }
            assert!(s.runs.is_empty() && s.placed.is_empty());
        }
    }

    /// Where the throughput goal ends for the four runs above, from seed
    /// `seed`, with `iterations` swaps per walk and `restarts` walks:
    /// (some run not on distinct hosts, predicted sum of normalised
    /// runtimes), the order the walks are ranked in.
    fn annealed_sum(seed: u64, iterations: u32, restarts: u32) -> (bool, f64) {
        let mut s = stage(AnnealingGoal::Throughput);
        s.iterations = iterations;
        s.restarts = restarts;
        let mut rng = actor_rng(seed, "scheduler");
        let mut ready = 0;
        for (app, run) in [("M.lmps", 0), ("C.libq", 2), ("H.KM", 4), ("C.mcf", 6)] {
            for t in units(app, run, false) {
                ready = ready.max(s.submit(t, 0, &mut rng).unwrap());
            }
        }
        let pass = s.place(ready, &[16; 4], &|_| String::new(), &mut rng);
        assert_eq!(pass.dispatch.len(), 8);
        let mut hosts: BTreeMap<TaskId, Vec<u32>> = BTreeMap::new();
        for (i, t) in &pass.dispatch {
            hosts.entry(t.dist.unwrap().run).or_default().push(*i);
        }
        let spread = hosts.values().all(|h| h[0] != h[1]);
        (!spread, s.predicted.iter().sum())
    }

    /// Restarts keep the best of independent walks: never worse than the
    /// first walk alone (the same draws), and better where a short walk
    /// stops in a local minimum.
    #[test]
    fn restarts_keep_the_best_of_independent_walks() {
        let mut better = 0;
        for seed in 0..20 {
            let one = annealed_sum(seed, 4, 1);
            let eight = annealed_sum(seed, 4, 8);
            assert!(
                (!eight.0 && one.0) || (eight.0 == one.0 && eight.1 <= one.1 + 1e-12),
                "seed {seed}: {eight:?} after {one:?}"
            );
            if (!eight.0 && one.0) || eight.1 < one.1 - 1e-9 {
                better += 1;
            }
        }
        assert!(better > 0, "eight walks never beat one");
    }

    /// One run of two units, placed: (stage, rng, the time it was placed,
    /// its dispatches).
    fn one_run() -> (
        AnnealingStage,
        crate::kernel::ActorRng,
        SimTime,
        Vec<(u32, Task)>,
    ) {
        let mut s = stage(AnnealingGoal::Throughput);
        let mut rng = actor_rng(5, "scheduler");
        let mut ready = 0;
        for t in units("M.lmps", 0, false) {
            ready = ready.max(s.submit(t, 0, &mut rng).unwrap());
        }
        let pass = s.place(ready, &[16; 4], &|_| String::new(), &mut rng);
        assert_eq!(pass.dispatch.len(), 2);
        (s, rng, ready, pass.dispatch)
    }

    /// A unit killed for its server's primary tenant ends its run's
    /// attempt: the other unit is stopped, and once it is back too the run
    /// queues again whole, `delay` later, as the next attempt.
    #[test]
    fn a_lost_unit_stops_its_run_and_requeues_it_whole() {
        let (mut s, mut rng, t0, units) = one_run();
        let (host0, unit0) = (units[0].0, units[0].1.clone());
        let (host1, unit1) = (units[1].0, units[1].1.clone());
        let (kill, delay) = (t0 + 1_000, 5_000_000_000);
        let lost = s.lost(unit1, kill, delay);
        assert_eq!(lost.freed, Some((host1, 8, 0)));
        assert_eq!(lost.stop, vec![(ActorId(10 + host0), unit0.id, 0)]);
        assert_eq!((lost.requeue_at, lost.requeued), (None, 0));
        assert!(s.owns(unit0.id) && !s.owns(1));
        assert_eq!(s.queued(), 1, "the killed unit waits for its run");
        // the stopped unit comes back: the attempt is over
        let back = s.lost(unit0, kill + 10, delay);
        assert!(back.stop.is_empty(), "a run is stopped once");
        assert_eq!(back.requeue_at, Some(kill + 10 + delay));
        assert_eq!((back.freed, back.requeued), (Some((host0, 8, 0)), 2));
        assert_eq!(s.queued(), 2);
        // it waits its delay, then is placed again as attempt 1
        let at = kill + 10 + delay;
        assert!(!s.blocked(at - 1));
        let early = s.place(at - 1, &[16; 4], &|_| String::new(), &mut rng);
        assert!(early.dispatch.is_empty());
        assert!(s.blocked(at), "a ready run holds back single tasks");
        let again = s.place(at, &[16; 4], &|_| String::new(), &mut rng);
        assert_eq!(again.dispatch.len(), 2);
        assert!(
            again
                .dispatch
                .iter()
                .all(|(_, t)| t.dist.unwrap().attempt == 1)
        );
        assert!(!s.blocked(at));
        for (_, t) in &again.dispatch {
            assert!(s.release(t.id).is_some());
        }
        assert!(s.runs.is_empty());
        let mut m = Metrics::default();
        s.finish(&mut m);
        assert_eq!(m.counter("dist_runs_restarted"), 1);
        assert_eq!(m.counter("dropped_tasks"), 0);
    }

    /// A unit killed after its coordinator ended the run (another unit
    /// finished already) is not run again: the run's work is done.
    #[test]
    fn a_unit_lost_after_its_run_ended_is_not_run_again() {
        let (mut s, _, t0, units) = one_run();
        assert!(s.release(units[0].1.id).is_some());
        let lost = s.lost(units[1].1.clone(), t0 + 1, 1);
        assert!(lost.stop.is_empty());
        assert_eq!(lost.requeue_at, None);
        assert!(s.runs.is_empty() && s.queued() == 0);
        let mut m = Metrics::default();
        s.finish(&mut m);
        assert_eq!(m.counter("dist_units_lost_after_end"), 1);
        assert_eq!(m.counter("dropped_tasks"), 1);
        assert_eq!(m.counter("dist_runs_restarted"), 0);
    }

    /// Runs take only the room the scheduler's view leaves (single tasks'
    /// slots, primary tenants): two hosts without room leave a run of two
    /// units the other two.
    #[test]
    fn runs_take_only_the_room_the_view_leaves() {
        let mut s = stage(AnnealingGoal::Throughput);
        let mut rng = actor_rng(7, "scheduler");
        let mut ready = 0;
        for t in units("N.mg", 0, false) {
            ready = ready.max(s.submit(t, 0, &mut rng).unwrap());
        }
        let none = s.place(ready, &[7, 7, 0, 0], &|_| String::new(), &mut rng);
        assert!(none.dispatch.is_empty(), "no host with room for a unit");
        assert!(s.blocked(ready));
        let pass = s.place(ready, &[0, 8, 8, 3], &|_| String::new(), &mut rng);
        let mut hosts: Vec<u32> = pass.dispatch.iter().map(|(i, _)| *i).collect();
        hosts.sort_unstable();
        assert_eq!(hosts, vec![1, 2]);
    }

    /// Under a slot stage the annealer chooses a run's hosts among the
    /// candidates it is given only, distinct, in the order of the units it
    /// is handed; it chooses nothing before the profile or with fewer
    /// candidates than units; under the QoS goal it keeps the sensitive
    /// M.lmps off the hosts of a running C.libq; a unit leaving ends that
    /// run's weight on later choices.
    #[test]
    fn under_a_slot_stage_it_chooses_hosts_among_the_candidates_only() {
        let mut s = stage(AnnealingGoal::Qos);
        let mut rng = actor_rng(7, "scheduler");
        let libq = units("C.libq", 0, false);
        assert_eq!(s.choose_hosts(&libq, &[0, 1, 2, 3], &mut rng), None);
        for t in &libq {
            s.profile(t, 0, &mut rng).unwrap();
        }
        assert_eq!(s.choose_hosts(&libq, &[2], &mut rng), None);
        let hosts = s.choose_hosts(&libq, &[1, 3], &mut rng).unwrap();
        assert!(hosts == [1, 3] || hosts == [3, 1], "{hosts:?}");
        for (t, &h) in libq.iter().zip(&[0, 1]) {
            s.unit_started(t, h);
        }
        let mut lmps = units("M.lmps", 2, true);
        lmps.reverse();
        for t in &lmps {
            s.profile(t, 0, &mut rng).unwrap();
        }
        for _ in 0..5 {
            let hosts = s.choose_hosts(&lmps, &[0, 1, 2, 3], &mut rng).unwrap();
            assert_eq!(hosts.len(), 2);
            assert_ne!(hosts[0], hosts[1], "distinct hosts");
            assert!(
                hosts.iter().all(|h| [2, 3].contains(h)),
                "{hosts:?}: away from C.libq"
            );
            let only = s.choose_hosts(&lmps, &[1, 3], &mut rng).unwrap();
            assert!(only.iter().all(|h| [1, 3].contains(h)), "{only:?}");
        }
        s.unit_left(libq[1].id);
        assert!(!s.runs.contains_key(&0), "C.libq no longer runs whole");
        assert!(s.runs.values().all(|r| r.hosts.is_empty()));
    }
}
