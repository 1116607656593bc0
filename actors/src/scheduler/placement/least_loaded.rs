//! `least-loaded`: Paragon §5's LL baseline.

use crate::kernel::ActorRng;

use super::{Choice, ClusterView, Placement, Request, VictimOption};

/// `least-loaded` (Paragon §5's LL baseline): among the servers with the
/// task's cores and memory free, the one with the lowest CPU utilisation
/// (busy cores over cores, as Paragon's Fig. 2b measures load) in its latest
/// report; ties go to the lowest index. Blind to configurations and
/// interference.
///
/// Like a real least-loaded scheduler it trusts monitored load, so between
/// two reports it keeps sending work to the server that looked idlest,
/// which is how such schedulers pile work onto a few servers. Without
/// reports (`report_interval = "0s"`) it uses its own count of the slots it
/// handed out instead.
pub struct LeastLoaded;

impl LeastLoaded {
    fn load(cluster: &ClusterView, i: u32) -> f64 {
        match cluster.report(i) {
            Some(r) => f64::from(r.busy_cores) / f64::from(r.cores.max(1)),
            None => cluster.servers()[i as usize].load(),
        }
    }
}

impl Placement for LeastLoaded {
    fn name(&self) -> &str {
        "least-loaded"
    }

    fn reads_reports(&self) -> bool {
        true
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        _: &mut ActorRng,
    ) -> Option<Choice> {
        req.fitting(cluster, true)
            .map(|i| (Self::load(cluster, i), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, i)| Choice::clean(i))
    }

    fn scores_victims(&self) -> bool {
        true
    }

    /// The least loaded server holding a victim (its load as for a free
    /// slot; the eviction then frees one task's worth on any of them),
    /// the preemption stage's own choice among equals.
    fn choose_victim(
        &mut self,
        _: &Request<'_>,
        cluster: &ClusterView,
        options: &[VictimOption],
    ) -> Option<usize> {
        options
            .iter()
            .enumerate()
            .min_by(|a, b| {
                Self::load(cluster, a.1.server)
                    .total_cmp(&Self::load(cluster, b.1.server))
                    .then(a.0.cmp(&b.0))
            })
            .map(|(k, _)| k)
    }
}

#[cfg(test)]
mod least_loaded_tests {
    use super::*;
    use crate::kernel::ActorId;
    use crate::kernel::actor_rng;
    use crate::scheduler::cluster_view::ServerSpec;
    use crate::task::Task;

    #[test]
    fn least_loaded_takes_the_emptiest_server_with_room_for_cores_and_memory() {
        let specs: Vec<ServerSpec> = [(4, 8_000), (8, 1_000), (2, 16_000)]
            .iter()
            .enumerate()
            .map(|(i, &(slots, memory_mb))| ServerSpec {
                core_speed: 1.0,
                idle_w: 100.0,
                peak_w: 200.0,
                id: ActorId(i as u32),
                slots,
                cores: slots,
                class: 0,
                memory_mb,
            })
            .collect();
        let mut view = ClusterView::new(&specs, false);
        view.take(0, 1, 1_000);
        view.take(2, 1, 1_000);
        let task = Task {
            memory_mb: 2_000,
            ..Task::new(1, ActorId(9), 0, 1)
        };
        let req = Request {
            task: &task,
            profile: None,
            allowed: None,
            exclude: None,
        };
        let mut rng = actor_rng(1, "scheduler");
        // without reports: server 1 is empty but has too little memory;
        // server 0 is 1/4 loaded, server 2 half.
        assert_eq!(
            LeastLoaded.place(&req, &view, &mut rng),
            Some(Choice::clean(0))
        );
        let req = Request {
            exclude: Some(0),
            ..req
        };
        assert_eq!(
            LeastLoaded.place(&req, &view, &mut rng),
            Some(Choice::clean(2))
        );
        // among servers holding victims: the least loaded (server 0, a
        // quarter busy, before server 2, half), the first among equals
        let option = |server| VictimOption {
            server,
            victim: 7,
            victim_memory_mb: 0,
        };
        let options = [option(2), option(0)];
        assert_eq!(LeastLoaded.choose_victim(&req, &view, &options), Some(1));
        let options = [option(2), option(2)];
        assert_eq!(LeastLoaded.choose_victim(&req, &view, &options), Some(0));
    }
}
