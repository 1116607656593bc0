//! `best-fit`: bin packing, the consolidating baseline.
//!
//! Of the servers with the task's cores and memory free, the one left with
//! the fewest free slots once the task is on it; ties go to the lowest
//! index. Packing keeps work on as few servers as possible, so the others
//! fall idle and, under `power.policy = "sleep"`, asleep: the server side of
//! the thesis's BRFS (§3.3.2) without its network path. It is also the
//! worked example of docs/scheduler.md's "Adding a policy".

use crate::kernel::ActorRng;

use super::{Choice, ClusterView, Placement, Request, VictimOption};

pub struct BestFit;

impl Placement for BestFit {
    fn name(&self) -> &str {
        "best-fit"
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        _: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        req.fitting(cluster, true)
            .min_by_key(|&i| {
                let s = &servers[i as usize];
                (s.free - s.slots_for(req.task.cores), i)
            })
            .map(Choice::clean)
    }

    fn scores_victims(&self) -> bool {
        true
    }

    /// Every server holding a victim is as full before the swap as after
    /// it, so the free slots it packs by tie; it packs by the other thing
    /// it checks, memory: the server left with the least memory free once
    /// the victim's is freed and the task's taken, among those where it
    /// fits; the preemption stage's own choice among equals.
    fn choose_victim(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        options: &[VictimOption],
    ) -> Option<usize> {
        let servers = cluster.servers();
        options
            .iter()
            .enumerate()
            .filter_map(|(k, o)| {
                let free = servers[o.server as usize].memory_free_mb + o.victim_memory_mb;
                free.checked_sub(req.task.memory_mb).map(|left| (left, k))
            })
            .min()
            .map(|(_, k)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{ActorId, actor_rng};
    use crate::scheduler::cluster_view::ServerSpec;
    use crate::task::Task;

    fn cluster(slots: &[u32]) -> ClusterView {
        let specs: Vec<ServerSpec> = slots
            .iter()
            .enumerate()
            .map(|(i, &slots)| ServerSpec {
                id: ActorId(i as u32),
                slots,
                cores: slots,
                class: 0,
                memory_mb: 16_000,
                core_speed: 1.0,
                idle_w: 0.0,
                peak_w: 0.0,
            })
            .collect();
        ClusterView::new(&specs, false)
    }

    fn place(task: &Task, view: &ClusterView) -> Option<u32> {
        let req = Request {
            task,
            profile: None,
            allowed: None,
            exclude: None,
        };
        BestFit
            .place(&req, view, &mut actor_rng(1, "test"))
            .map(|c| c.server)
    }

    fn task(id: u64, cores: u32) -> Task {
        Task {
            cores,
            ..Task::new(id, ActorId(9), 0, 1)
        }
    }

    #[test]
    fn the_tightest_server_that_fits_wins_and_ties_go_to_the_lowest_index() {
        let view = cluster(&[8, 2, 4, 2]);
        assert_eq!(place(&task(0, 1), &view), Some(1));
        assert_eq!(place(&task(1, 3), &view), Some(2));
        assert_eq!(place(&task(2, 9), &view), None);
    }

    #[test]
    fn a_server_fills_before_the_next_one_is_opened() {
        let mut view = cluster(&[4, 4, 4]);
        let mut used = Vec::new();
        for id in 0..8 {
            let task = task(id, 1);
            let i = place(&task, &view).expect("room");
            view.take(i, task.cores, task.memory_mb);
            used.push(i);
        }
        assert_eq!(used, [0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn among_victims_the_tightest_memory_that_fits_wins() {
        let mut view = cluster(&[2, 2, 2]);
        for (i, mb) in [(0, 8_000), (1, 14_000), (2, 15_500)] {
            view.take(i, 2, mb);
        }
        let t = Task {
            memory_mb: 2_000,
            ..task(9, 1)
        };
        let req = Request {
            task: &t,
            profile: None,
            allowed: None,
            exclude: None,
        };
        let option = |server, victim_memory_mb| VictimOption {
            server,
            victim: 5,
            victim_memory_mb,
        };
        // free after the swap: 8,000 + 1,000 - 2,000 on 0; 2,000 + 1,000 -
        // 2,000 on 1; 500 + 1,000 < 2,000 on 2 (does not fit)
        let options = [option(0, 1_000), option(1, 1_000), option(2, 1_000)];
        assert_eq!(BestFit.choose_victim(&req, &view, &options), Some(1));
        let options = [option(2, 1_000)];
        assert_eq!(BestFit.choose_victim(&req, &view, &options), None);
    }
}
