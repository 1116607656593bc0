//! `best-fit`: bin packing, the consolidating baseline.
//!
//! Of the servers with the task's cores and memory free, the one left with
//! the fewest free slots once the task is on it; ties go to the lowest
//! index. Packing keeps work on as few servers as possible, so the others
//! fall idle and, under `power.policy = "sleep"`, asleep: the server side of
//! the thesis's BRFS (§3.3.2) without its network path. It is also the
//! worked example of docs/scheduler.md's "Adding a policy".

use crate::kernel::ActorRng;

use super::{Choice, ClusterView, Placement, Request};

pub struct BestFit;

impl Placement for BestFit {
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        _: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        req.fitting(cluster, true)
            .min_by_key(|&i| (servers[i as usize].free - req.task.cores, i))
            .map(Choice::clean)
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
}
