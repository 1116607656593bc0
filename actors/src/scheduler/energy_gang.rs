//! Distributed runs under an energy-aware placement that queues by itself
//! (`admission = "fifo"`, `slots = "none"`: the thesis's chapters 3–4 as
//! written; issue 22).
//!
//! A run progresses only while all its units run (ASPLOS'16 §3.2), so it
//! starts whole, one unit per host (Figure 5), or not at all. At each time
//! slot the waiting runs, in arrival order, go before the stage's own
//! batch, so that single tasks do not take the room a run could start in:
//! phase I's choice (thesis §4.3.1) places each unit in turn on a server
//! the run has no unit on yet, by the policy's energy criterion, then every
//! unit is booked with its path; if one unit finds no server, or its path
//! no longer has its bandwidth once the units before it are booked, every
//! booking of the run is undone and it waits for the next time slot.

use dcemu_topology::Network;

use super::energy::{EnergyStage, Flow};
use super::gang::Gangs;
use crate::kernel::{ActorId, ActorRng};
use crate::task::Task;

/// A run started whole: each unit and its server (index), unit 0 first,
/// and the flows booked for them.
pub struct StartedRun {
    pub units: Vec<(Task, u32)>,
    pub flows: Vec<Flow>,
}

/// Starts what it can of the waiting runs `runs` (their unit 0s; the other
/// units in `gangs`), leaving the others queued in order. `id_of`: the
/// server of an index.
pub fn place_runs(
    energy: &mut EnergyStage,
    net: &Network,
    runs: &mut Vec<Task>,
    gangs: &Gangs,
    id_of: &dyn Fn(u32) -> ActorId,
    rng: &mut ActorRng,
) -> Vec<StartedRun> {
    let mut out = Vec::new();
    for first in std::mem::take(runs) {
        let rest = gangs.rest(first.id).unwrap_or(&[]);
        let units: Vec<Task> = std::iter::once(first.clone())
            .chain(rest.iter().cloned())
            .collect();
        match start_run(energy, net, &units, id_of, rng) {
            Some((servers, flows)) => out.push(StartedRun {
                units: units.into_iter().zip(servers).collect(),
                flows,
            }),
            None => runs.push(first),
        }
    }
    out
}

/// Every unit's server and booking, or nothing booked.
fn start_run(
    energy: &mut EnergyStage,
    net: &Network,
    units: &[Task],
    id_of: &dyn Fn(u32) -> ActorId,
    rng: &mut ActorRng,
) -> Option<(Vec<u32>, Vec<Flow>)> {
    let mut servers: Vec<u32> = Vec::with_capacity(units.len());
    let mut routes = Vec::with_capacity(units.len());
    for unit in units {
        let (i, route) = energy.choose(unit, &|i| !servers.contains(&i), rng)?;
        servers.push(i);
        routes.push(route);
    }
    let mut flows = Vec::new();
    for (k, (unit, route)) in units.iter().zip(routes).enumerate() {
        match energy.start(net, unit, servers[k], Some(route), rng) {
            Some(f) => flows.extend(f),
            None => {
                for (u, &i) in units[..k].iter().zip(&servers) {
                    energy.release(u.id, id_of(i));
                }
                return None;
            }
        }
    }
    Some((servers, flows))
}
