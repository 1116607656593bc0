//! [`CorePlacer`]: the placement stage (and the energy or annealing stage,
//! if any) answering the slot stage and ARQ ([`SlotPlacer`]).

use std::sync::Arc;
use std::time::Instant;

use dcemu_topology::{Bandwidth, Route, SimTime};

use crate::external::MigrateOrder;
use crate::kernel::{ActorId, ActorRng};
use crate::task::{Task, TaskId};

use super::preemption::{RunningSlot, SlotAction, SlotPlacer};

use super::placement;
use super::state::{Core, Notice, appropriate_on, primary_leaves_room};
use super::{Choice, ClusterView, Request, VictimOption};

/// The placement stage answering the slot stage ([`SlotPlacer`]): it
/// scores the servers with a free slot by its own criterion, and the view it
/// reads follows the slot stage's starts. With an energy-aware placement
/// ([`Placement::energy`]) its stage chooses the server and its path among
/// the candidates, and books CPU, memory and bandwidth as the task starts
/// ([`EnergyStage::choose`], [`EnergyStage::start`]); with `annealing`
/// ([`Placement::annealing`]) its stage chooses the hosts of each run the
/// slot stage starts. The same placer answers ARQ without a slot stage.
pub(super) struct CorePlacer<'a> {
    pub(super) core: &'a mut Core,
    /// The energy stage's latest choice: task, server and path.
    pub(super) chosen: Option<(TaskId, u32, Route)>,
    /// Of the latest choice, kept for the start it leads to.
    pub(super) violation: f64,
    /// Only a server ARQ counts as appropriate for the task (its `Scope`).
    pub(super) strict: bool,
    /// The ARQ pool of the latest start's server, before the start moved it.
    pub(super) pool: usize,
    /// Virtual time the latest decision that chose a server or a victim
    /// took (`Placement::decision_latency`), for the start it leads to.
    pub(super) latency: u64,
    /// The path the latest choice named for its task's flow (an external
    /// program's network stage): task, server and path.
    pub(super) path: Option<(TaskId, u32, Route)>,
    /// The migrations the latest decisions ordered, with the task each
    /// decision was about, until the slot stage begins them
    /// ([`SlotPlacer::take_moves`]) and they are booked and held
    /// ([`Core::hold_move`]).
    pub(super) moves: Vec<(TaskId, MigrateOrder)>,
}

impl<'a> CorePlacer<'a> {
    /// The placement stage over `core`; `strict`: only servers ARQ counts
    /// as appropriate.
    pub(super) fn new(core: &'a mut Core, strict: bool) -> Self {
        CorePlacer {
            core,
            chosen: None,
            violation: 0.0,
            strict,
            pool: 0,
            latency: 0,
            path: None,
            moves: Vec::new(),
        }
    }
}

impl SlotPlacer for CorePlacer<'_> {
    fn choose(
        &mut self,
        task: &Task,
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<u32> {
        if self.core.placement.energy_ref().is_some() {
            let Core {
                placement,
                cluster,
                profiles,
                strict_speed,
                ..
            } = &mut *self.core;
            let (cluster, profiles, speed) = (&*cluster, &*profiles, *strict_speed);
            let strict = self.strict;
            let allow = |i: u32| {
                candidates(i)
                    && primary_leaves_room(cluster, i)
                    && cluster.apart_allows(task, i)
                    && (!strict || appropriate_on(cluster, profiles, speed, task, i))
            };
            let req = Request {
                task,
                profile: profiles.get(&task.id),
                allowed: Some(&allow),
                exclude: None,
            };
            let server = placement.place(&req, cluster, rng)?.server;
            self.chosen = placement.energy().and_then(|e| e.take_choice());
            self.violation = 0.0;
            return Some(server);
        }
        let core = &mut *self.core;
        core.show_running();
        core.offer_paths(task);
        // A task with a flow may only take a slot on a server some path to
        // which has its bandwidth free, as outside the slot stages (the
        // flow is reserved when it starts, `started`).
        let (flows, cluster, world) = (&core.flows, &core.cluster, &core.world);
        let bandwidth = Bandwidth::from_bps(task.flow_bps);
        let with_path = |i: u32| {
            candidates(i)
                && cluster.apart_allows(task, i)
                && (task.flow_bps == 0
                    || flows.fits(
                        &world.network,
                        cluster.servers()[i as usize].id,
                        bandwidth,
                        None,
                    ))
        };
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: Some(&with_path),
            exclude: None,
        };
        let strict = self.strict;
        let started = Instant::now();
        let choice = core
            .placement
            .place(&req, &core.cluster, rng)
            .filter(|c| with_path(c.server) && (!strict || core.appropriate(&req, c)));
        core.decision_us.push(started.elapsed().as_secs_f64() * 1e6);
        let latency = core.placement.decision_latency();
        let held = core.hold_orders(task.id, latency);
        let path = core.placement.take_path();
        if let Some(moves) = &held {
            self.moves.extend(moves.iter().map(|&m| (task.id, m)));
        }
        let choice = choice?;
        self.latency = if held.is_some() { 0 } else { latency };
        self.violation = choice.violation;
        self.path = path.map(|route| (task.id, choice.server, route));
        Some(choice.server)
    }

    fn started(
        &mut self,
        task: &Task,
        server: u32,
        victims: &[TaskId],
        now: SimTime,
        rng: &mut ActorRng,
    ) {
        let core = &mut *self.core;
        let latency = std::mem::take(&mut self.latency);
        if latency > 0 {
            core.slot_latency.insert(task.id, latency);
        }
        self.pool = core.pool.get(server);
        let id = core.cluster.servers()[server as usize].id;
        for &v in victims {
            if let Some(p) = core.placed.remove(&v) {
                core.vacate(v, p.server, p.cores, p.memory_mb);
            }
            // the victim's flows go with its slot
            core.release_flow_later(v);
            if let Some(energy) = core.placement.energy() {
                for f in energy.release(v, id) {
                    core.notices.push(Notice::Flow(f, false));
                }
            }
        }
        let violation = if !victims.is_empty() {
            0.0
        } else {
            self.violation
        };
        core.occupy(task, Choice { server, violation }, now);
        if core.placement.energy_ref().is_none() {
            let path = match self.path.take() {
                Some((t, i, route)) if t == task.id && i == server && victims.is_empty() => {
                    Some(route)
                }
                _ => None,
            };
            core.reserve_flow_later(task, server, path);
            return;
        }
        let route = match self.chosen.take() {
            Some((t, i, route)) if t == task.id && i == server => Some(route),
            _ => None,
        };
        let world = Arc::clone(&core.world);
        let Some(energy) = core.placement.energy() else {
            return;
        };
        match energy.start(&world.network, task, server, route, rng) {
            Some(flows) => {
                for f in flows {
                    core.notices.push(Notice::Flow(f, true));
                }
            }
            // only servers with room were offered: cannot happen, but
            // would be logged as a refused flow
            None => core.notices.push(Notice::Refused {
                task: task.id,
                server: id,
                bps: task.flow_bps,
            }),
        }
    }

    /// Books as [`SlotPlacer::started`] does, and undoes it if the unit's
    /// flow found no path with its bandwidth (the run's units booked
    /// before it may have taken a shared link's).
    fn start_unit(&mut self, task: &Task, server: u32, now: SimTime, rng: &mut ActorRng) -> bool {
        let before = self.core.notices.len();
        self.started(task, server, &[], now, rng);
        let refused = self.core.notices[before..]
            .iter()
            .any(|n| matches!(n, Notice::Refused { task: t, .. } if *t == task.id));
        if refused {
            self.withdraw(task, server);
        } else if let Some(a) = self.core.placement.annealing() {
            a.unit_started(task, server);
        }
        !refused
    }

    /// Annealing chooses the hosts of the whole run among the servers
    /// `candidates` holds that also leave the units room beside the
    /// primary tenants and have a path for their flows, as single
    /// choices do.
    fn choose_gang(
        &mut self,
        units: &[Task],
        candidates: &dyn Fn(u32) -> bool,
        rng: &mut ActorRng,
    ) -> Option<Vec<u32>> {
        self.core.placement.annealing_ref()?;
        let core = &*self.core;
        let strict = self.strict;
        let (flows, cluster, world) = (&core.flows, &core.cluster, &core.world);
        let fits = |i: u32| {
            candidates(i)
                && units.iter().all(|t| {
                    cluster.servers()[i as usize].fits(t, false)
                        && (!strict || core.appropriate_on(t, i))
                        && (t.flow_bps == 0
                            || flows.fits(
                                &world.network,
                                cluster.servers()[i as usize].id,
                                Bandwidth::from_bps(t.flow_bps),
                                None,
                            ))
                })
        };
        let hosts: Vec<u32> = (0..cluster.servers().len() as u32)
            .filter(|&i| fits(i))
            .collect();
        self.core
            .placement
            .annealing()?
            .choose_hosts(units, &hosts, rng)
    }

    fn places_gangs(&self) -> bool {
        self.core.placement.annealing_ref().is_some()
    }

    fn could_hold(&self, threads: u32, hosts: usize) -> bool {
        self.core.cluster.could_hold(threads, hosts)
    }

    /// Frees what `task` was booked on `server` (view, flows, the energy
    /// stage's ledger) and drops its notices: the switches never hear of
    /// it.
    fn withdraw(&mut self, task: &Task, server: u32) {
        if let Some(a) = self.core.placement.annealing() {
            a.unit_left(task.id);
        }
        let core = &mut *self.core;
        if core.placed.remove(&task.id).is_some() {
            core.vacate(task.id, server, task.cores, task.memory_mb);
        }
        core.flows.release(&core.world.network, task.id);
        let id = core.cluster.servers()[server as usize].id;
        if let Some(energy) = core.placement.energy() {
            energy.release(task.id, id);
        }
        core.notices.retain(|n| match n {
            Notice::Flow(f, _) => f.task != task.id,
            Notice::Refused { task: t, .. } => *t != task.id,
        });
    }

    fn gates_victims(&self, task: &Task) -> bool {
        task.flow_bps > 0 || self.core.placement.energy_ref().is_some()
    }

    /// The placement stage scores the servers holding admissible victims
    /// when it has a criterion for them (`paragon*`, `least-loaded`,
    /// `best-fit`); the energy-aware placements keep the preemption
    /// stage's choice (they gate victims by the room they need instead).
    fn scores_victims(&self, _: &Task) -> bool {
        self.core.placement.energy_ref().is_none() && self.core.placement.scores_victims()
    }

    fn choose_victim(
        &mut self,
        task: &Task,
        options: &[(u32, TaskId)],
        _: &mut ActorRng,
    ) -> Option<usize> {
        let core = &mut *self.core;
        let options: Vec<VictimOption> = options
            .iter()
            .map(|&(server, victim)| VictimOption {
                server,
                victim,
                victim_memory_mb: core.placed.get(&victim).map_or(0, |p| p.memory_mb),
            })
            .collect();
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: None,
            exclude: None,
        };
        core.placement.choose_victim(&req, &core.cluster, &options)
    }

    fn picks_victims(&self, _: &Task) -> bool {
        self.core.placement.energy_ref().is_none() && self.core.placement.picks_victims()
    }

    /// The placement's pick among every running task, with the cores and
    /// memory the scheduler counts for each.
    fn pick_victim(
        &mut self,
        task: &Task,
        running: &[RunningSlot],
        rng: &mut ActorRng,
    ) -> Option<TaskId> {
        let core = &mut *self.core;
        core.show_running();
        let views: Vec<placement::RunningTask> = running
            .iter()
            .map(|r| {
                let placed = core.placed.get(&r.task);
                placement::RunningTask {
                    server: r.server,
                    task: r.task,
                    priority: r.priority,
                    started: r.started,
                    cores: placed.map_or(1, |p| p.cores),
                    memory_mb: placed.map_or(0, |p| p.memory_mb),
                    admissible: r.admissible,
                }
            })
            .collect();
        let req = Request {
            task,
            profile: core.profiles.get(&task.id),
            allowed: None,
            exclude: None,
        };
        let k = core.placement.pick_victim(&req, &core.cluster, &views, rng);
        let latency = core.placement.decision_latency();
        let held = core.hold_orders(task.id, latency);
        if let Some(moves) = &held {
            self.moves.extend(moves.iter().map(|&m| (task.id, m)));
        }
        let victim = views.get(k?)?.task;
        self.latency = if held.is_some() { 0 } else { latency };
        Some(victim)
    }

    fn take_moves(&mut self) -> Vec<(TaskId, u32)> {
        self.moves.iter().map(|(_, m)| (m.task, m.server)).collect()
    }

    /// Books a move the stage began in the scheduler's view at once and
    /// holds its order until the pass sends its decision
    /// ([`Core::hold_move`]); a declined one (or one the view cannot book)
    /// is counted and leaves nothing behind.
    fn move_begun(&mut self, task: TaskId, to: u32, begun: bool) -> bool {
        let Some(k) = self
            .moves
            .iter()
            .position(|(_, m)| m.task == task && m.server == to)
        else {
            return false;
        };
        let (decision, _) = self.moves.remove(k);
        let booked = begun && self.core.hold_move(decision, task, to);
        if !booked {
            self.core.migrations_declined += 1;
        }
        booked
    }

    /// With a flow, a victim's eviction must leave the evictor's bandwidth
    /// free on some path to the server (the victim's own flow counting as
    /// freed); under an energy-aware placement, its CPU, memory and path.
    fn victim_fits(&mut self, task: &Task, server: u32, victim: TaskId) -> bool {
        if let Some(energy) = self.core.placement.energy() {
            return energy.evictable(task, server, victim);
        }
        let core = &*self.core;
        let id = core.cluster.servers()[server as usize].id;
        task.flow_bps == 0
            || core.flows.fits(
                &core.world.network,
                id,
                Bandwidth::from_bps(task.flow_bps),
                Some(victim),
            )
    }
}

/// The servers (indices) a slot stage's start takes: its task's, or each
/// unit's of a run, in unit order.
pub(super) fn action_servers(action: &SlotAction, cluster: &ClusterView) -> Vec<u32> {
    let at = |id: ActorId| cluster.index_of(id).unwrap_or(0);
    match action {
        SlotAction::Dispatch { server, .. } | SlotAction::Preempt { server, .. } => {
            vec![at(*server)]
        }
        SlotAction::Gang { units } => units.iter().map(|(_, s)| at(*s)).collect(),
    }
}

/// A distributed run behind ARQ with an energy-aware placement (no slot
/// stage): each unit in turn on a server `admits` holds with its slots
/// free and none of the run's units (ASPLOS'16 Figure 5), chosen by the
/// energy stage and booked with its path, so that the next unit sees it;
/// if one finds none, every booking is undone and the run waits whole.
/// Returns the servers and the ARQ pool of unit 0's.
pub(super) fn start_run_placed(
    placer: &mut CorePlacer<'_>,
    units: &[Task],
    admits: &dyn Fn(u32) -> bool,
    now: SimTime,
    rng: &mut ActorRng,
) -> Option<(Vec<u32>, usize)> {
    let mut servers: Vec<u32> = Vec::with_capacity(units.len());
    let mut pool = 0;
    for unit in units {
        let cluster = &placer.core.cluster;
        let room: Vec<bool> = (0..cluster.servers().len() as u32)
            .map(|i| {
                admits(i)
                    && !servers.contains(&i)
                    && cluster.servers()[i as usize].fits(unit, false)
            })
            .collect();
        let server = placer
            .choose(unit, &|i| room[i as usize], rng)
            .filter(|&i| placer.start_unit(unit, i, now, rng));
        let Some(server) = server else {
            for (u, &i) in units.iter().zip(&servers) {
                placer.withdraw(u, i);
            }
            return None;
        };
        if servers.is_empty() {
            pool = placer.pool;
        }
        servers.push(server);
    }
    Some((servers, pool))
}
