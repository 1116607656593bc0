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

    /// Takes `k` slots on server `i` and returns its actor id.
    pub(crate) fn take(&mut self, i: u32, k: u32) -> ActorId {
        let s = &mut self.servers[i as usize];
        s.free = s.free.saturating_sub(k);
        let id = s.id;
        if s.free == 0 {
            self.unmark_free(i);
        }
        id
    }

    /// Returns `k` slots of the server with actor id `id`; `None` if it is
    /// not a server of this view or has fewer than `k` slots out.
    pub(crate) fn release(&mut self, id: ActorId, k: u32) -> Option<()> {
        let i = *self.by_actor.get(&id)?;
        let s = &mut self.servers[i as usize];
        if s.free + k > s.slots {
            return None;
        }
        let was_full = s.free == 0;
        s.free += k;
        if was_full && k > 0 {
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

/// `random`: uniformly among servers with as many free slots as the task
/// has threads.
pub struct RandomPlacement;

impl Placement for RandomPlacement {
    fn place(&mut self, task: &Task, cluster: &ClusterView, rng: &mut ActorRng) -> Option<u32> {
        let free = cluster.with_free();
        if task.cores <= 1 {
            return (!free.is_empty()).then(|| free[index(rng, free.len() as u32) as usize]);
        }
        let fits: Vec<u32> = free
            .iter()
            .copied()
            .filter(|&i| cluster.servers()[i as usize].free >= task.cores)
            .collect();
        (!fits.is_empty()).then(|| fits[index(rng, fits.len() as u32) as usize])
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
            cores: 1,
        }
    }

    #[test]
    fn slots_are_conserved_through_take_and_release() {
        let mut view = ClusterView::new(&[(ActorId(5), 2), (ActorId(6), 1)]);
        let mut rng = actor_rng(1, "scheduler");
        let mut placed = Vec::new();
        while let Some(i) = RandomPlacement.place(&task(), &view, &mut rng) {
            placed.push(view.take(i, 1));
        }
        assert_eq!(placed.len(), 3, "exactly the three slots are handed out");
        assert!(view.with_free().is_empty());
        assert_eq!(view.release(ActorId(6), 1), Some(()));
        assert_eq!(
            view.release(ActorId(6), 1),
            None,
            "no slot of server 6 is out"
        );
        assert_eq!(view.release(ActorId(9), 1), None, "not a server");
        assert_eq!(view.with_free(), &[1]);
        let total_free: u32 = view.servers().iter().map(|s| s.free).sum();
        assert_eq!(total_free, 1);
    }

    #[test]
    fn a_task_with_threads_goes_only_where_its_slots_fit() {
        let mut view = ClusterView::new(&[(ActorId(1), 2), (ActorId(2), 4), (ActorId(3), 8)]);
        let mut rng = actor_rng(1, "scheduler");
        let wide = Task { cores: 3, ..task() };
        for _ in 0..50 {
            let i = RandomPlacement.place(&wide, &view, &mut rng).unwrap();
            assert!(view.servers()[i as usize].free >= 3);
        }
        view.take(2, 8);
        view.take(1, 2);
        assert_eq!(
            RandomPlacement.place(&wide, &view, &mut rng),
            None,
            "2 free slots left, none on one server"
        );
        assert_eq!(view.release(ActorId(3), 4), Some(()));
        assert_eq!(RandomPlacement.place(&wide, &view, &mut rng), Some(2));
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
            view.take(i, 1);
        }
        assert!(
            counts.iter().all(|&c| (400..600).contains(&c)),
            "{counts:?}"
        );
    }
}
