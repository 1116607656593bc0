//! The placement stage: given a task and the scheduler's view of the cluster,
//! pick a server. Adding a policy is one file implementing [`Placement`] and
//! one variant of `PlacementKind`.

use crate::kernel::{ActorId, ActorRng};
use crate::model::Task;
use crate::net::ServerReport;
use crate::sampling::index;

/// The scheduler's belief about free slots.
///
/// It is conservative by construction: a slot is taken when the scheduler
/// dispatches to it and returned only when the server reports the task done,
/// so the scheduler never over-commits a server however late messages arrive.
#[derive(Debug, Clone)]
pub struct ClusterView {
    servers: Vec<ServerSlots>,
    /// Indices of servers with at least one free slot, in no meaningful but
    /// deterministic order.
    with_free: Vec<u32>,
    /// Position of each server in `with_free`, if present.
    position: Vec<Option<u32>>,
    by_actor: std::collections::BTreeMap<ActorId, u32>,
    /// The latest report of each server, if it sent one.
    reports: Vec<Option<ServerReport>>,
}

#[derive(Debug, Clone, Copy)]
pub struct ServerSlots {
    pub id: ActorId,
    pub slots: u32,
    pub free: u32,
}

impl ClusterView {
    pub fn new(servers: &[(ActorId, u32)]) -> Self {
        let mut view = ClusterView {
            servers: servers
                .iter()
                .map(|&(id, slots)| ServerSlots {
                    id,
                    slots,
                    free: slots,
                })
                .collect(),
            with_free: Vec::new(),
            position: vec![None; servers.len()],
            reports: vec![None; servers.len()],
            by_actor: servers
                .iter()
                .enumerate()
                .map(|(i, &(id, _))| (id, i as u32))
                .collect(),
        };
        for i in 0..view.servers.len() {
            if view.servers[i].free > 0 {
                view.mark_free(i as u32);
            }
        }
        view
    }

    pub fn servers(&self) -> &[ServerSlots] {
        &self.servers
    }

    /// The latest report of server `i` (policies that weigh load read it).
    pub fn report(&self, i: u32) -> Option<&ServerReport> {
        self.reports.get(i as usize).and_then(Option::as_ref)
    }

    /// Keeps `report` as the latest from the server with actor id `id`.
    pub(crate) fn record_report(&mut self, id: ActorId, report: ServerReport) {
        if let Some(&i) = self.by_actor.get(&id) {
            self.reports[i as usize] = Some(report);
        }
    }

    /// Servers that have a free slot.
    pub fn with_free(&self) -> &[u32] {
        &self.with_free
    }

    /// Takes a slot on server `i` and returns its actor id.
    pub(crate) fn take(&mut self, i: u32) -> ActorId {
        let s = &mut self.servers[i as usize];
        s.free -= 1;
        let id = s.id;
        if s.free == 0 {
            self.unmark_free(i);
        }
        id
    }

    /// Returns a slot of the server with actor id `id`; `None` if it is not a
    /// server of this view or has no slot out.
    pub(crate) fn release(&mut self, id: ActorId) -> Option<()> {
        let i = *self.by_actor.get(&id)?;
        let s = &mut self.servers[i as usize];
        if s.free >= s.slots {
            return None;
        }
        s.free += 1;
        if s.free == 1 {
            self.mark_free(i);
        }
        Some(())
    }

    fn mark_free(&mut self, i: u32) {
        self.position[i as usize] = Some(self.with_free.len() as u32);
        self.with_free.push(i);
    }

    fn unmark_free(&mut self, i: u32) {
        if let Some(pos) = self.position[i as usize].take() {
            self.with_free.swap_remove(pos as usize);
            if let Some(&moved) = self.with_free.get(pos as usize) {
                self.position[moved as usize] = Some(pos);
            }
        }
    }
}

/// A placement policy.
pub trait Placement: Send {
    /// Index (into `cluster.servers()`) of the server that should run `task`,
    /// or `None` to leave it queued.
    fn place(&mut self, task: &Task, cluster: &ClusterView, rng: &mut ActorRng) -> Option<u32>;
}

/// `random`: uniformly among servers with a free slot.
pub struct RandomPlacement;

impl Placement for RandomPlacement {
    fn place(&mut self, _task: &Task, cluster: &ClusterView, rng: &mut ActorRng) -> Option<u32> {
        let free = cluster.with_free();
        if free.is_empty() {
            return None;
        }
        Some(free[index(rng, free.len() as u32) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    fn task() -> Task {
        Task {
            id: 0,
            tenant: ActorId(1),
            submitted_at: 0,
            service_ns: 1,
            flow_bps: 0,
            app: None,
            priority: 0,
            memory_mb: 0,
        }
    }

    #[test]
    fn slots_are_conserved_through_take_and_release() {
        let mut view = ClusterView::new(&[(ActorId(5), 2), (ActorId(6), 1)]);
        let mut rng = actor_rng(1, "scheduler");
        let mut placed = Vec::new();
        while let Some(i) = RandomPlacement.place(&task(), &view, &mut rng) {
            placed.push(view.take(i));
        }
        assert_eq!(placed.len(), 3, "exactly the three slots are handed out");
        assert!(view.with_free().is_empty());
        assert_eq!(view.release(ActorId(6)), Some(()));
        assert_eq!(view.release(ActorId(6)), None, "no slot of server 6 is out");
        assert_eq!(view.release(ActorId(9)), None, "not a server");
        assert_eq!(view.with_free(), &[1]);
        let total_free: u32 = view.servers().iter().map(|s| s.free).sum();
        assert_eq!(total_free, 1);
    }

    #[test]
    fn random_placement_spreads_over_free_servers() {
        let servers: Vec<(ActorId, u32)> = (0..4).map(|i| (ActorId(i), 1000)).collect();
        let mut view = ClusterView::new(&servers);
        let mut rng = actor_rng(1, "scheduler");
        let mut counts = [0u32; 4];
        for _ in 0..2000 {
            let i = RandomPlacement.place(&task(), &view, &mut rng).unwrap();
            counts[i as usize] += 1;
            view.take(i);
        }
        assert!(
            counts.iter().all(|&c| (400..600).contains(&c)),
            "{counts:?}"
        );
    }
}
