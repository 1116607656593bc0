//! Paths from a core switch down to a server with a task's bandwidth free:
//! the cheapest (by the policy's costs), a random feasible one, full-mesh
//! pods, and phase II's internal flows from workers to their master.

use crate::sampling::index;
use crate::task::TaskId;
use dcemu_topology::{Bandwidth, Network, Route};
use rand::RngCore;
use std::collections::BTreeMap;

use super::stage::EnergyStage;
use super::state::{Downlinks, MeshAccess, ServerState, Upper, bandwidth_bps};
use super::types::{Costing, Flow};

impl EnergyStage {
    /// Whether some path from a core switch down to `s` has `bw` free on
    /// every link (as [`EnergyStage::best_path`] finds one, without
    /// costing it).
    pub(super) fn has_path(&self, s: &ServerState, bw: u64) -> bool {
        match &s.downlinks {
            Downlinks::Mesh { .. } => self.mesh_reachable(s, bw),
            Downlinks::Rack { uppers } => {
                self.links.fits(s.down, bw) && self.feasible_above(uppers, bw)
            }
        }
    }

    /// Whether some aggregation switch of `uppers`, and some core switch
    /// above it, have `bw` free on the links down.
    pub(super) fn feasible_above(&self, uppers: &[Upper], bw: u64) -> bool {
        uppers.iter().any(|up| {
            self.links.fits(up.link, bw) && up.cores.iter().any(|&(_, l)| self.links.fits(l, bw))
        })
    }

    /// Phase II for one running worker: the least-energy path from its
    /// server to its master's (§4.3.2), or later if the master waits.
    pub(super) fn connect(
        &mut self,
        net: &Network,
        worker: TaskId,
        rng: &mut impl RngCore,
    ) -> Option<Flow> {
        let r = self.running.get(&worker)?;
        let job = r.job?;
        if r.master || r.internal_bytes == 0 {
            return None;
        }
        let Some(&master) = self.masters.get(&job) else {
            self.waiting_for_master.entry(job).or_default().push(worker);
            return None;
        };
        if master == r.server {
            return None;
        }
        let (src, t_x, bytes, work_ns) = (r.server, r.t_x, r.internal_bytes, r.work_ns);
        let s = &self.servers[src as usize];
        let link = self.links.capacity(s.down).unwrap_or(u64::MAX);
        let bw = bandwidth_bps(bytes, work_ns, s).clamp(1, link);
        let from = s.spec.id.0;
        let to = self.servers[master as usize].spec.id.0;
        let direct = self.mesh_internal(s, &self.servers[master as usize], bw, t_x, rng);
        let paths: Vec<Route> = if direct.is_some() {
            Vec::new()
        } else {
            net.shortest_paths(from, to)
                .into_iter()
                .filter(|p| self.has_room(p, bw))
                .collect()
        };
        let route = if let Some(route) = direct {
            route
        } else if self.costing == Costing::ServerOnly {
            let n = paths.len() as u32;
            (n > 0).then(|| paths[index(rng, n) as usize])
        } else {
            paths
                .into_iter()
                .map(|p| (self.switches_cost(&p, t_x), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, p)| p)
        };
        let Some(route) = route else {
            self.internal_refused += 1;
            return None;
        };
        let flow = Flow {
            task: worker,
            route,
            bandwidth: Bandwidth::from_bps(bw),
        };
        if self.book(&flow).is_err() {
            self.internal_refused += 1;
            return None;
        }
        self.internal_flows += 1;
        if let Some(r) = self.running.get_mut(&worker) {
            r.flows.push(flow.clone());
        }
        Some(flow)
    }

    /// The least-energy path from a core switch down to server `s` with
    /// `bw` free on every link, and its switches' cost (eq. 4.4): one
    /// search over the server's link topology ([`Downlinks`]). The access
    /// switches above the server are ranked by the cost of the cheapest path
    /// from a core switch down to each, cheapest (then lowest id) first,
    /// and the first whose link down to the server has `bw` free is taken.
    ///
    /// Under a rack that is its one access switch. Under a full mesh
    /// (thesis §4.2.3) it is every access switch of its pod, whose ranking
    /// does not depend on the server: it is made once per task, bandwidth
    /// and `T_x` (once per task and bandwidth when switches wake instantly:
    /// their cost is then `T_x` times a sum of `P_idle / (N + 1)`), over the
    /// access switches carrying flows and one of each group of idle ones
    /// (the others, alike and with a higher id, would rank right after it).
    /// The best core switch above an aggregation switch is cached per task
    /// when switches wake instantly (it then does not depend on the server).
    pub(super) fn best_path(
        &self,
        s: &ServerState,
        bw: u64,
        t_x: f64,
        cache: &mut CoreCache,
    ) -> Option<(f64, Route)> {
        let me = s.spec.id.0;
        let own;
        let (ranking, per_unit) = match &s.downlinks {
            Downlinks::Rack { uppers } => {
                // one link down: without room on it there is no path
                if !self.links.fits(s.down, bw) {
                    return None;
                }
                let above = [(s.access, uppers.as_slice())];
                own = self.rank(&above, bw, t_x, &mut cache.cores);
                (&own, None)
            }
            Downlinks::Mesh { pod } => {
                let instant = self.switch_wake_s == 0.0;
                let unit = if instant { 1.0 } else { t_x };
                let key = (*pod, bw, unit.to_bits());
                if !cache.ranked.contains_key(&key) {
                    let above: Vec<(u32, &[Upper])> = self
                        .mesh_candidates(*pod)
                        .map(|acc| (acc.id, acc.uppers.as_slice()))
                        .collect();
                    let ranking = self.rank(&above, bw, unit, &mut cache.cores);
                    cache.ranked.insert(key, ranking);
                }
                (cache.ranked.get(&key)?, instant.then_some(t_x))
            }
        };
        let reaches = |access: u32| {
            self.down_link(s, access)
                .is_some_and(|l| self.links.fits(l, bw))
        };
        let (cost, access, agg, core) = ranking.first_reaching(reaches)?;
        let cost = per_unit.map_or(cost, |t_x| cost * t_x);
        Route::new(&[core, agg, access, me]).map(|r| (cost, r))
    }

    /// The link from access switch `access` down to server `s`: its one
    /// link in a rack; under a full mesh (thesis §4.2.3) every access switch
    /// of its pod has one, by rule (`access` must be of its pod).
    pub(super) fn down_link(&self, s: &ServerState, access: u32) -> Option<usize> {
        match s.downlinks {
            Downlinks::Rack { .. } => (access == s.access).then_some(s.down),
            Downlinks::Mesh { .. } => Some(self.links.mesh_id(access, s.spec.id.0)),
        }
    }

    /// Each of `accesses` (an access switch with the aggregation switches
    /// above it) with the cheapest path from a core switch down to it that
    /// has `bw` free: `(cost, access, aggregation, core)`. The path above
    /// an aggregation switch does not depend on the access switch below it:
    /// each aggregation switch is costed with its best core switch once.
    pub(super) fn rank(
        &self,
        accesses: &[(u32, &[Upper])],
        bw: u64,
        t_x: f64,
        cores: &mut BTreeMap<(u32, u64), Option<u32>>,
    ) -> Ranking {
        // one access switch (a rack) shares nothing: no memo, no list
        let one = accesses.len() == 1;
        let mut above_agg: BTreeMap<u32, Option<(f64, u32)>> = BTreeMap::new();
        let mut ranked = Vec::new();
        for &(access, uppers) in accesses {
            let mut best: Option<(f64, u32, u32)> = None;
            for up in uppers {
                if !self.links.fits(up.link, bw) {
                    continue;
                }
                let above = if one {
                    self.above(up, bw, t_x, cores)
                } else {
                    *above_agg
                        .entry(up.agg)
                        .or_insert_with(|| self.above(up, bw, t_x, cores))
                };
                let Some((cost, core)) = above else { continue };
                if best.is_none_or(|b| cost < b.0) {
                    best = Some((cost, up.agg, core));
                }
            }
            if let Some((cost, agg, core)) = best {
                let r = (cost + self.switch_cost(access, t_x), access, agg, core);
                if one {
                    return Ranking {
                        first: Some(r),
                        all: std::cell::OnceCell::new(),
                        unsorted: Vec::new(),
                    };
                }
                ranked.push(r);
            }
        }
        Ranking::new(ranked)
    }

    /// The cost of an aggregation switch with the best core switch above
    /// it for `bw`, and that core switch. With instant wake-ups the best
    /// core switch does not depend on `T_x`: it is kept per task.
    pub(super) fn above(
        &self,
        up: &Upper,
        bw: u64,
        t_x: f64,
        cores: &mut BTreeMap<(u32, u64), Option<u32>>,
    ) -> Option<(f64, u32)> {
        let core = if self.switch_wake_s == 0.0 {
            *cores
                .entry((up.agg, bw))
                .or_insert_with(|| self.best_core(up, bw, t_x))
        } else {
            self.best_core(up, bw, t_x)
        };
        core.map(|core| {
            (
                self.switch_cost(up.agg, t_x) + self.switch_cost(core, t_x),
                core,
            )
        })
    }

    /// The access switches of full-mesh pod `pod` worth evaluating, in id
    /// order: those carrying flows, and of each group of the others its
    /// first, which stands for all (they have its cost, its paths above and
    /// its free links, and come after it in id order).
    pub(super) fn mesh_candidates(&self, pod: u32) -> impl Iterator<Item = &MeshAccess> + '_ {
        let mut firsts: Vec<u32> = self
            .mesh_cold
            .iter()
            .filter_map(|g| g.first().copied())
            .collect();
        firsts.sort_unstable();
        // both sorted, and disjoint: merge them
        let mut firsts = firsts.into_iter().peekable();
        let mut warm = self.mesh_warm.iter().copied().peekable();
        std::iter::from_fn(move || match (warm.peek(), firsts.peek()) {
            (Some(w), Some(f)) if w < f => warm.next(),
            (_, Some(_)) => firsts.next(),
            (Some(_), None) => warm.next(),
            (None, None) => None,
        })
        .filter_map(|k| self.mesh.get(k as usize))
        .filter(move |acc| acc.pod == pod)
    }

    /// Whether a server linked to a whole pod has a feasible path from a
    /// core switch down to it.
    pub(super) fn mesh_reachable(&self, s: &ServerState, bw: u64) -> bool {
        let me = s.spec.id.0;
        let Some(pod) = s.mesh_pod() else {
            return false;
        };
        if self.widest_above(pod).is_some_and(|widest| bw > widest) {
            return false;
        }
        let found = self.mesh_candidates(pod).any(|acc| {
            self.links.fits(self.links.mesh_id(acc.id, me), bw)
                && self.feasible_above(&acc.uppers, bw)
        });
        if !found && self.widest_above(pod).is_none() {
            self.learn_widest_above(pod);
        }
        found
    }

    /// The most bandwidth any path from a core switch down to an access
    /// switch of `pod` has free: no flow wider than it reaches a server of
    /// the pod, whatever its own links. Near saturation the core and
    /// aggregation links fill first, and this one bound answers what a
    /// walk over every access switch's paths would (512 × 16 × 8 links on
    /// §4.2.3's network) for every server the search tries. Computed after
    /// such a walk fails and kept until a booking changes a link, so a
    /// search that succeeds never pays for it.
    pub(super) fn widest_above(&self, pod: u32) -> Option<u64> {
        self.widest_cache
            .borrow()
            .get(&pod)
            .filter(|&&(v, _)| v == self.links.version)
            .map(|&(_, widest)| widest)
    }

    pub(super) fn learn_widest_above(&self, pod: u32) {
        let mut above_agg: BTreeMap<u32, u64> = BTreeMap::new();
        let mut widest = 0;
        for up in self
            .mesh
            .iter()
            .filter(|acc| acc.pod == pod)
            .flat_map(|acc| &acc.uppers)
        {
            let above = *above_agg.entry(up.agg).or_insert_with(|| {
                up.cores
                    .iter()
                    .map(|&(_, l)| self.links.free(l).unwrap_or(0))
                    .max()
                    .unwrap_or(0)
            });
            widest = widest.max(self.links.free(up.link).unwrap_or(0).min(above));
        }
        self.widest_cache
            .borrow_mut()
            .insert(pod, (self.links.version, widest));
    }

    pub(super) fn best_core(&self, up: &Upper, bw: u64, t_x: f64) -> Option<u32> {
        up.cores
            .iter()
            .filter(|&&(_, link)| self.links.fits(link, bw))
            .map(|&(core, _)| (self.switch_cost(core, t_x), core))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, core)| core)
    }

    /// A uniformly random feasible path from a core switch to `s`.
    pub(super) fn random_path(
        &self,
        s: &ServerState,
        bw: u64,
        rng: &mut impl RngCore,
    ) -> Option<Route> {
        if s.mesh_pod().is_some() {
            return self.random_mesh_path(s, bw, rng);
        }
        let options = self.path_options(s, bw);
        let n = options.len() as u32;
        if n == 0 {
            return None;
        }
        let (agg, core) = options[index(rng, n) as usize];
        Route::new(&[core, agg, s.access, s.spec.id.0])
    }

    /// GEMS(noNetwork)'s random path to a server linked to a whole pod: an
    /// access switch drawn uniformly among those with a feasible path down
    /// to it, then an aggregation switch and a core switch uniformly among
    /// the feasible ones above it (uniform over paths while links are free:
    /// every access switch has as many paths above it).
    pub(super) fn random_mesh_path(
        &self,
        s: &ServerState,
        bw: u64,
        rng: &mut impl RngCore,
    ) -> Option<Route> {
        let me = s.spec.id.0;
        let feasible = |up: &&Upper| {
            self.links.fits(up.link, bw) && up.cores.iter().any(|&(_, l)| self.links.fits(l, bw))
        };
        let ok = |acc: &MeshAccess| {
            self.links
                .of(acc.id, me)
                .is_some_and(|l| self.links.fits(l, bw))
                && acc.uppers.iter().any(|up| feasible(&up))
        };
        let pod: Vec<&MeshAccess> = self
            .mesh
            .iter()
            .filter(|acc| Some(acc.pod) == s.mesh_pod())
            .collect();
        let acc = draw_feasible(&pod, |acc| ok(acc), rng)?;
        let ups: Vec<&Upper> = acc.uppers.iter().filter(feasible).collect();
        let up = ups[index(rng, ups.len() as u32) as usize];
        let cores: Vec<u32> = up
            .cores
            .iter()
            .filter(|&&(_, l)| self.links.fits(l, bw))
            .map(|&(c, _)| c)
            .collect();
        let core = cores[index(rng, cores.len() as u32) as usize];
        Route::new(&[core, up.agg, acc.id, me])
    }

    /// Phase II between two servers linked to every access switch of one
    /// pod: through the access switch of least cost with `bw` free on both
    /// links (the first such in id order among equals, as a scan of
    /// `shortest_paths` would take: idle access switches of a group are
    /// alike, so the first of each stands for all), or a uniformly random
    /// feasible one for GEMS(noNetwork). `None` when the servers are not
    /// of one such pod.
    pub(super) fn mesh_internal(
        &self,
        from: &ServerState,
        to: &ServerState,
        bw: u64,
        t_x: f64,
        rng: &mut impl RngCore,
    ) -> Option<Option<Route>> {
        let pod = from.mesh_pod()?;
        if to.mesh_pod() != Some(pod) {
            return None;
        }
        let (a, b) = (from.spec.id.0, to.spec.id.0);
        let feasible = |acc: &MeshAccess| {
            self.links
                .of(a, acc.id)
                .is_some_and(|l| self.links.fits(l, bw))
                && self
                    .links
                    .of(acc.id, b)
                    .is_some_and(|l| self.links.fits(l, bw))
        };
        let chosen = if self.costing == Costing::ServerOnly {
            let pod: Vec<&MeshAccess> = self.mesh.iter().filter(|acc| acc.pod == pod).collect();
            draw_feasible(&pod, |acc| feasible(acc), rng)
        } else {
            let mut best: Option<(f64, &MeshAccess)> = None;
            for acc in self.mesh_candidates(pod) {
                let cost = self.switch_cost(acc.id, t_x);
                if best.is_none_or(|(c, _)| cost < c) && feasible(acc) {
                    best = Some((cost, acc));
                }
            }
            best.map(|(_, acc)| acc)
        };
        Some(chosen.and_then(|acc| Route::new(&[a, acc.id, b])))
    }

    /// The (aggregation, core) switch pairs above `s` in a rack with `bw`
    /// free on every link down to it.
    pub(super) fn path_options(&self, s: &ServerState, bw: u64) -> Vec<(u32, u32)> {
        let Downlinks::Rack { uppers } = &s.downlinks else {
            return Vec::new();
        };
        if !self.links.fits(s.down, bw) {
            return Vec::new();
        }
        uppers
            .iter()
            .filter(|up| self.links.fits(up.link, bw))
            .flat_map(|up| {
                up.cores
                    .iter()
                    .filter(|&&(_, link)| self.links.fits(link, bw))
                    .map(move |&(core, _)| (up.agg, core))
            })
            .collect()
    }

    /// Servers to evaluate among those `allow` admits, in index order: the
    /// warm ones, and of each cold group (interchangeable servers) its
    /// first admitted member, which stands for the group.
    pub(super) fn candidates_among<'a>(
        &'a self,
        allow: &'a dyn Fn(u32) -> bool,
    ) -> impl Iterator<Item = u32> + 'a {
        let mut firsts: Vec<u32> = self
            .cold
            .values()
            .filter_map(|set| set.iter().copied().find(|&i| allow(i)))
            .collect();
        firsts.sort_unstable();
        // both sorted, and disjoint (a group's members are cold): merge them
        let mut firsts = firsts.into_iter().peekable();
        let mut warm = self.warm.iter().copied().filter(|&i| allow(i)).peekable();
        std::iter::from_fn(move || match (warm.peek(), firsts.peek()) {
            (Some(w), Some(f)) if w < f => warm.next(),
            (_, Some(_)) => firsts.next(),
            (Some(_), None) => warm.next(),
            (None, None) => None,
        })
    }
}

/// The best core switch above each aggregation switch for one task, per
/// bandwidth (a few distinct values: one per server capacity).
/// With servers linked to whole pods, also each pod's access switches
/// ranked by the cost of their best path, per bandwidth and `T_x` (bits).
#[derive(Default)]
pub(super) struct CoreCache {
    pub(super) cores: BTreeMap<(u32, u64), Option<u32>>,
    pub(super) ranked: BTreeMap<(u32, u64, u64), Ranking>,
}

/// Access switches by the cost of their cheapest path: the cheapest (then
/// lowest id), and all of them, sorted so on first need.
pub(super) struct Ranking {
    pub(super) first: Option<Ranked>,
    pub(super) all: std::cell::OnceCell<Vec<Ranked>>,
    pub(super) unsorted: Vec<Ranked>,
}

impl Ranking {
    pub(super) fn new(all: Vec<Ranked>) -> Self {
        let first = all
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .copied();
        Ranking {
            first,
            all: std::cell::OnceCell::new(),
            unsorted: all,
        }
    }

    /// The first access switch in the ranking that `reaches` accepts: the
    /// cheapest nearly always (the rest are sorted only when it is not).
    pub(super) fn first_reaching(&self, reaches: impl Fn(u32) -> bool) -> Option<Ranked> {
        if let Some(r) = self.first.filter(|r| reaches(r.1)) {
            return Some(r);
        }
        self.all
            .get_or_init(|| {
                let mut all = self.unsorted.clone();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                all
            })
            .iter()
            .find(|r| reaches(r.1))
            .copied()
    }
}

/// An access switch with the cost of the cheapest path down to it: `(cost,
/// access, aggregation, core)`.
pub(super) type Ranked = (f64, u32, u32, u32);

/// A uniformly random element of `items` among those `ok` accepts: a few
/// draws from all of them (accepted ones are uniform among the accepted),
/// then, if none was accepted, a draw among the accepted ones.
pub(super) fn draw_feasible<'a, T>(
    items: &[&'a T],
    ok: impl Fn(&T) -> bool,
    rng: &mut impl RngCore,
) -> Option<&'a T> {
    let n = items.len() as u32;
    if n == 0 {
        return None;
    }
    for _ in 0..8 {
        let item = items[index(rng, n) as usize];
        if ok(item) {
            return Some(item);
        }
    }
    let accepted: Vec<&T> = items.iter().copied().filter(|&t| ok(t)).collect();
    let m = accepted.len() as u32;
    (m > 0).then(|| accepted[index(rng, m) as usize])
}
