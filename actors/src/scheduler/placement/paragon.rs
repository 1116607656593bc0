//! Paragon's placement (§3) and its two ablations of §5: `paragon`
//! (heterogeneity- and interference-aware), `paragon-nh` (interference
//! only), `paragon-ni` (heterogeneity only).
//!
//! A classified application goes through the greedy D1/D2 search of §3.2
//! (or the hash-sampled statistical selection of §3.3) over the servers
//! with its cores and memory free; an application that skipped profiling
//! (a short job, §3.5) goes to a random server among those with the most
//! free slots and the least interference already caused.

use crate::config::SelectionKind;
use crate::kernel::{ActorRng, Metrics};
use crate::sampling::index;

use super::greedy::{Candidate, GreedyParams, select, statistical_select};
use super::{Choice, ClusterView, Placement, Request, VictimOption};

/// Which of Paragon's two kinds of knowledge the placement uses (§5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Awareness {
    Full,
    /// NH: interference only; configurations look all alike.
    InterferenceOnly,
    /// NI: heterogeneity only; co-runners are invisible.
    HeterogeneityOnly,
}

/// Servers among which a short job is drawn (§3.5).
pub const SHORT_JOB_POOL: usize = 8;

pub struct ParagonPlacement {
    awareness: Awareness,
    selection: SelectionKind,
    samples: u32,
    max_steps: u32,
    placed: u64,
    backtracked: u64,
    timeouts: u64,
    violations: u64,
    short_jobs: u64,
    steps: u64,
}

impl ParagonPlacement {
    pub fn new(
        awareness: Awareness,
        selection: SelectionKind,
        samples: u32,
        max_steps: u32,
    ) -> Self {
        ParagonPlacement {
            awareness,
            selection,
            samples,
            max_steps,
            placed: 0,
            backtracked: 0,
            timeouts: 0,
            violations: 0,
            short_jobs: 0,
            steps: 0,
        }
    }

    /// §3.5: no profile, so a random server among the ones with the most
    /// free slots and, among those, the least caused interference.
    fn short_job(&mut self, fits: &[u32], cluster: &ClusterView, rng: &mut ActorRng) -> Choice {
        let key = |i: u32| {
            let s = &cluster.servers()[i as usize];
            let caused: f64 = cluster.interference(i).caused().iter().sum();
            (std::cmp::Reverse(s.free), caused)
        };
        let mut ranked = fits.to_vec();
        ranked.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(a.cmp(&b))
        });
        ranked.truncate(SHORT_JOB_POOL);
        self.short_jobs += 1;
        Choice::clean(ranked[index(rng, ranked.len() as u32) as usize])
    }
}

impl Placement for ParagonPlacement {
    fn name(&self) -> &str {
        match self.awareness {
            Awareness::Full => "paragon",
            Awareness::InterferenceOnly => "paragon-nh",
            Awareness::HeterogeneityOnly => "paragon-ni",
        }
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        let eligible = |i: u32| req.may_use(i) && servers[i as usize].fits(req.task, true);
        // §3.3's selection costs the same at any size: it looks at its
        // sample only, never at the list of fitting servers (a sample with
        // no eligible server places nothing, as an empty list would).
        if let Some(profile) = req.profile
            && self.selection == SelectionKind::Statistical
            && self.awareness == Awareness::Full
        {
            self.placed += 1;
            let (server, _quality) = statistical_select(
                &profile.caused,
                self.placed,
                servers.len() as u32,
                self.samples,
                |i| cluster.interference(i).tolerated(),
                eligible,
            )?;
            return Some(Choice::clean(server));
        }
        let mut fits: Vec<u32> = req.fitting(cluster, true).collect();
        if fits.is_empty() {
            return None;
        }
        let Some(profile) = req.profile else {
            return Some(self.short_job(&fits, cluster, rng));
        };
        self.placed += 1;
        if self.awareness == Awareness::HeterogeneityOnly {
            // Blind to interference, NI still balances load: among the
            // servers of the best predicted configuration it takes the least
            // loaded (the greedy search keeps the first of equals). So it
            // fills the best configuration and takes the second-ranked one
            // once that is saturated, as §6.1 (Fig. 9) describes NI doing;
            // docs/paragon-baselines.md measures what that costs on EC2.
            fits.sort_by(|&a, &b| {
                let (sa, sb) = (&servers[a as usize], &servers[b as usize]);
                sa.load().total_cmp(&sb.load()).then(a.cmp(&b))
            });
        }
        let candidates: Vec<Candidate<'_>> = fits
            .iter()
            .map(|&i| Candidate {
                index: i,
                class: servers[i as usize].class,
                state: cluster.interference(i),
            })
            .collect();
        let params = GreedyParams {
            interference: self.awareness != Awareness::HeterogeneityOnly,
            heterogeneity: self.awareness != Awareness::InterferenceOnly,
            max_steps: self.max_steps,
        };
        let chosen = select(
            &profile.tolerated,
            &profile.caused,
            &profile.speed,
            &candidates,
            &params,
        )?;
        self.backtracked += u64::from(chosen.backtracked > 0);
        self.timeouts += u64::from(chosen.timed_out);
        self.violations += u64::from(chosen.violation > 0.0);
        self.steps += u64::from(chosen.steps);
        Some(Choice {
            server: chosen.index,
            violation: if self.awareness == Awareness::HeterogeneityOnly {
                0.0
            } else {
                chosen.violation
            },
        })
    }

    fn scores_victims(&self) -> bool {
        true
    }

    /// A classified task evicts where its interference constraints hold:
    /// the greedy search of §3.2 over the servers holding a victim, each
    /// with the interference state it will have once its victim left (the
    /// victim's scores taken out, as when it finishes), configurations
    /// looking alike, so the first server whose D1/D2 constraints hold
    /// wins (the preemption stage's own choice first), else the least
    /// violating. Heterogeneity is left out here: ranking those servers by
    /// the evictor's speed sends evictors to the fastest servers, whose
    /// victims are the applications Paragon put there for their own speed
    /// (with it, on docs/scheduler.md's test cluster of Table V and a
    /// Google-like tenant under HYBRID, Paragon's applications fell below
    /// `random`'s on seed 3: 0.127 against 0.142 of ideal). So `paragon-ni`,
    /// blind to interference, keeps the stage's choice, as does an
    /// unprofiled task (§3.5).
    fn choose_victim(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        options: &[VictimOption],
    ) -> Option<usize> {
        let profile = req.profile?;
        if self.awareness == Awareness::HeterogeneityOnly {
            return None;
        }
        let servers = cluster.servers();
        let states: Vec<_> = options
            .iter()
            .map(|o| {
                let mut state = cluster.interference(o.server).clone();
                state.remove(o.victim);
                state
            })
            .collect();
        let candidates: Vec<Candidate<'_>> = options
            .iter()
            .zip(&states)
            .enumerate()
            .map(|(k, (o, state))| Candidate {
                index: k as u32,
                class: servers[o.server as usize].class,
                state,
            })
            .collect();
        let params = GreedyParams {
            interference: true,
            heterogeneity: false,
            max_steps: self.max_steps,
        };
        let chosen = select(
            &profile.tolerated,
            &profile.caused,
            &profile.speed,
            &candidates,
            &params,
        )?;
        Some(chosen.index as usize)
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("placements_classified", self.placed);
        out.add("placements_backtracked", self.backtracked);
        out.add("placements_timed_out", self.timeouts);
        out.add("placements_violating", self.violations);
        out.add("placements_short_job", self.short_jobs);
        out.add("placement_search_steps", self.steps);
    }
}

/// Expected progress rate, relative to alone on its best configuration, of
/// an application with predicted relative `speed` on a server where the
/// placement found `violation` points of unmet tolerance: the scheduler's
/// own estimate (each point past tolerance costs 1 % of time), used to
/// judge whether a migration pays off (§3.4).
pub fn expected_rate(speed: f64, violation: f64) -> f64 {
    speed / (1.0 + violation.max(0.0) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ground_truth::SOURCES;
    use crate::kernel::ActorId;
    use crate::profiling::Profile;
    use crate::scheduler::cluster_view::ServerSpec;
    use crate::task::Task;

    /// Two servers of one configuration: on server 0 the victim `1` runs
    /// beside `2`, which causes much interference; on server 1 the victim
    /// `3` runs alone.
    fn cluster() -> ClusterView {
        let specs: Vec<ServerSpec> = (0..2)
            .map(|i| ServerSpec {
                id: ActorId(i),
                slots: 2,
                cores: 2,
                class: 0,
                memory_mb: 16_000,
                core_speed: 1.0,
                idle_w: 0.0,
                peak_w: 0.0,
            })
            .collect();
        let mut view = ClusterView::new(&specs, false);
        let (tolerant, quiet, loud) = ([100.0; SOURCES], [10.0; SOURCES], [90.0; SOURCES]);
        view.interference_mut(0).add(1, &tolerant, &quiet);
        view.interference_mut(0).add(2, &tolerant, &loud);
        view.interference_mut(1).add(3, &tolerant, &quiet);
        view
    }

    fn options() -> [VictimOption; 2] {
        [
            VictimOption {
                server: 0,
                victim: 1,
                victim_memory_mb: 0,
            },
            VictimOption {
                server: 1,
                victim: 3,
                victim_memory_mb: 0,
            },
        ]
    }

    fn choose(awareness: Awareness, profile: Option<&Profile>) -> Option<usize> {
        let task = Task::new(9, ActorId(5), 0, 1_000);
        let req = Request {
            task: &task,
            profile,
            allowed: None,
            exclude: None,
        };
        let mut p = ParagonPlacement::new(awareness, SelectionKind::Greedy, 0, 1_000);
        assert!(p.scores_victims());
        p.choose_victim(&req, &cluster(), &options())
    }

    /// docs/scheduler.md "Slot stages and placement": Paragon chooses, among
    /// the servers holding victims the eviction rule ranks equal, the first
    /// whose D1/D2 constraints hold once its victim left; the rule's own
    /// pick (first) when its server does; none without a profile or under
    /// NI (heterogeneity only).
    #[test]
    fn paragon_evicts_where_its_constraints_hold_once_the_victim_left() {
        let sensitive = Profile {
            speed: vec![1.0],
            tolerated: [20.0; SOURCES],
            caused: [10.0; SOURCES],
        };
        // server 0 keeps the loud co-runner: D1 fails there, not on server 1
        assert_eq!(choose(Awareness::Full, Some(&sensitive)), Some(1));
        assert_eq!(
            choose(Awareness::InterferenceOnly, Some(&sensitive)),
            Some(1)
        );
        // a tolerant evictor is fine on both: the rule's pick stays
        let tolerant = Profile {
            tolerated: [100.0; SOURCES],
            ..sensitive.clone()
        };
        assert_eq!(choose(Awareness::Full, Some(&tolerant)), Some(0));
        assert_eq!(choose(Awareness::HeterogeneityOnly, Some(&sensitive)), None);
        assert_eq!(choose(Awareness::Full, None), None);
    }
}
