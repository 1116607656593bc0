//! YARN placements on harvested servers (harvesting §5.3, §6.1): containers
//! of batch jobs go to servers that primary tenants own.
//!
//! * [`YarnStock`] (`yarn-stock`): stock YARN, blind to primary tenants. A
//!   container goes to a server with a free slot, with probability
//!   proportional to its free slots. Its node managers do not know the
//!   primary tenants either, so the servers do not kill for them
//!   (`World::primary_kills`): the primary and the containers share the
//!   cores, and the primary's reserve is simply taken.
//! * [`YarnPt`] (`yarn-pt`): primary-tenant-aware YARN with stock Tez.
//!   Node managers report the primary's use rounded up to whole cores and
//!   its reserve (`ServerReport`); the resource manager counts both as
//!   unavailable, and places a container on a server that has reported,
//!   with probability proportional to what is left of its cores
//!   ("probabilistically balance load", Table 1). The servers kill the
//!   youngest containers when the primary grows into its reserve.
//! * [`YarnH`] (`yarn-h`): YARN-H/Tez-H. Per job, Algorithm 1 (§4.1)
//!   picks utilisation classes of the clustering service
//!   (`crate::clustering`); the job's containers then go to the servers of
//!   those classes, each with probability proportional to what the server
//!   has available *for the job's type*: its share of the class headroom
//!   below (for a short job exactly YARN-PT's availability; for a long one
//!   what the primary leaves at the class's peak), so that the headroom
//!   that made the class fit is what the job fills. When no server of the
//!   classes has such room, the container takes YARN-PT's availability in
//!   them, and when they have none either it goes wherever YARN-PT would
//!   put it (a request without a label, §5.3; YARN's relaxed locality), so
//!   that a job never waits behind its own label while the cluster has
//!   room. Jobs without classes (Algorithm 1 line 16) are placed as by
//!   YARN-PT.
//!
//! **Headroom** (§4.1), in cores of the class's servers: with `U` the
//! utilisation that matters for the job's length type — the class's
//! current primary utilisation `cur` (short), `max(avg, cur)` (medium),
//! `max(peak, cur)` (long), where `avg` and `peak` are the class's tags and
//! `cur` the mean of `primary_cores / cores` in its servers' latest reports
//! — the headroom is `cores × (1 − U) − reserve − allocated`, at least 0:
//! the cores the primaries are not expected to need, less their reserve
//! and the containers already placed there. J.req is in containers (one
//! core each), so a class fits a job when its headroom is at least J.req.
//!
//! **Weights** `W[type, pattern]` rank the patterns (§4.1): for long jobs
//! constant, periodic, unpredictable; for short jobs unpredictable,
//! periodic, constant; for medium jobs periodic, constant, unpredictable.
//! The first, second and third rank weigh `scheduler.rank_weights`
//! (default 3, 2, 1; the paper gives the ranking, not the numbers).

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::SimTime;
use serde_json::json;

use crate::clustering::{ClusteringService, prior};
use crate::config::{PrimaryTenantConfig, SchedulerConfig, UtilPattern};
use crate::google::{DagRef, JobLength};
use crate::kernel::{ActorRng, Metrics};
use crate::sampling::{index, uniform_open0};

use super::{Choice, ClusterView, Placement, Request};
use crate::scheduler::cluster_view::ServerSpec;

/// Picks an item with probability proportional to its integer weight.
fn pick_weighted(items: &[(u32, u32)], rng: &mut ActorRng) -> Option<u32> {
    let total: u64 = items.iter().map(|&(_, w)| u64::from(w)).sum();
    if total == 0 {
        return None;
    }
    let mut draw = u64::from(index(rng, total.min(u64::from(u32::MAX)) as u32));
    for &(i, w) in items {
        if draw < u64::from(w) {
            return Some(i);
        }
        draw -= u64::from(w);
    }
    items.last().map(|&(i, _)| i)
}

/// `yarn-stock`: a server with the task's slots (and memory) free, with
/// probability proportional to its free slots.
pub struct YarnStock;

impl Placement for YarnStock {
    fn name(&self) -> &str {
        "yarn-stock"
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        let mut fits: Vec<(u32, u32)> = req
            .fitting(cluster, true)
            .map(|i| (i, servers[i as usize].free))
            .collect();
        fits.sort_unstable();
        pick_weighted(&fits, rng).map(Choice::clean)
    }
}

/// `yarn-pt`: what a server has left once its primary tenant's use and
/// reserve (from its latest report) and the containers placed on it are
/// counted; placement proportional to it.
pub struct YarnPt {
    cores: Vec<u32>,
    /// The most slots any server has: no server's weight exceeds it.
    max_slots: u32,
}

/// Candidate lists longer than this are sampled before they are scanned.
const SAMPLE_ABOVE: usize = 64;
/// Rejection-sampling draws before the exact scan.
const SAMPLE_TRIES: u32 = 48;

impl YarnPt {
    pub fn new(servers: &[ServerSpec]) -> Self {
        YarnPt {
            cores: servers.iter().map(|s| s.cores).collect(),
            max_slots: servers.iter().map(|s| s.slots).max().unwrap_or(0),
        }
    }

    /// Cores of server `i` neither its primary tenant (use and reserve)
    /// nor containers hold, within its free slots; 0 before its first
    /// report (the resource manager places only on heartbeating servers).
    pub fn available(&self, cluster: &ClusterView, i: u32) -> u32 {
        let Some(r) = cluster.report(i) else {
            return 0;
        };
        let s = &cluster.servers()[i as usize];
        let held = s.threads;
        let cores = self.cores.get(i as usize).copied().unwrap_or(r.cores);
        cores
            .saturating_sub(r.primary_cores + r.reserve_cores)
            .saturating_sub(held)
            .min(s.free_threads())
    }

    /// A server for `req.task` among `among` (all servers with a free slot
    /// if `None`), proportional to what each has available, capped by
    /// `cap(i)`.
    ///
    /// Long candidate lists (a datacenter's thousands of servers, once per
    /// container) are first sampled by rejection: a uniform candidate is
    /// taken with probability weight / `max_slots`. Only if
    /// [`SAMPLE_TRIES`] draws all miss are the candidates scanned and
    /// picked from exactly. Either way a server is chosen with probability
    /// proportional to its weight (every draw is), at O(1) expected cost
    /// while servers have room.
    fn pick(
        &self,
        req: &Request<'_>,
        cluster: &ClusterView,
        among: Option<&[u32]>,
        cap: impl Fn(u32) -> u32,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        let servers = cluster.servers();
        let candidates = among.unwrap_or(cluster.with_free());
        let weight = |i: u32| {
            if !(req.may_use(i) && servers[i as usize].fits(req.task, true)) {
                return 0;
            }
            let a = self.available(cluster, i).min(cap(i));
            if a >= req.task.cores { a } else { 0 }
        };
        if candidates.len() > SAMPLE_ABOVE && self.max_slots > 0 {
            for _ in 0..SAMPLE_TRIES {
                let i = candidates[index(rng, candidates.len() as u32) as usize];
                let w = weight(i).min(self.max_slots);
                if w > 0 && index(rng, self.max_slots) < w {
                    return Some(Choice::clean(i));
                }
            }
        }
        let mut fits: Vec<(u32, u32)> = candidates
            .iter()
            .map(|&i| (i, weight(i)))
            .filter(|&(_, w)| w > 0)
            .collect();
        fits.sort_unstable();
        pick_weighted(&fits, rng).map(Choice::clean)
    }
}

impl Placement for YarnPt {
    fn name(&self) -> &str {
        "yarn-pt"
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        self.pick(req, cluster, None, |_| u32::MAX, rng)
    }
}

/// A class as Algorithm 1 sees it when a job asks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassState {
    pub pattern: UtilPattern,
    /// Tags of the class: average and peak primary utilisation.
    pub avg: f64,
    pub peak: f64,
    /// Mean primary utilisation of its servers now.
    pub current: f64,
    /// Cores, primary reserves and containers placed, over its servers.
    pub cores: f64,
    pub reserve: f64,
    pub allocated: f64,
}

/// Headroom(type, c) of §4.1, in cores (see the module doc).
pub fn headroom(length: JobLength, c: &ClassState) -> f64 {
    let u = match length {
        JobLength::Short => c.current,
        JobLength::Medium => c.avg.max(c.current),
        JobLength::Long => c.peak.max(c.current),
    };
    (c.cores * (1.0 - u.clamp(0.0, 1.0)) - c.reserve - c.allocated).max(0.0)
}

/// W[type, pattern] of Algorithm 1: the weight of the pattern's rank for
/// the job's length type (§4.1's rankings), `weights` by rank.
pub fn weight(length: JobLength, pattern: UtilPattern, weights: [f64; 3]) -> f64 {
    use UtilPattern::{Constant, Periodic, Unpredictable};
    let ranking = match length {
        JobLength::Long => [Constant, Periodic, Unpredictable],
        JobLength::Short => [Unpredictable, Periodic, Constant],
        JobLength::Medium => [Periodic, Constant, Unpredictable],
    };
    let rank = ranking.iter().position(|&p| p == pattern).unwrap_or(2);
    weights[rank]
}

/// Algorithm 1: the classes (indices into `classes`) for a job of type
/// `length` needing `req` containers at once. One class that fits alone,
/// drawn with probability proportional to its weighted headroom; else, if
/// all classes together fit, classes drawn one by one (without
/// replacement) proportionally to their weighted headroom until their
/// headrooms add up to `req`; else none.
pub fn select_classes(
    req: u32,
    length: JobLength,
    classes: &[ClassState],
    weights: [f64; 3],
    rng: &mut ActorRng,
) -> Option<Vec<usize>> {
    let room: Vec<f64> = classes.iter().map(|c| headroom(length, c)).collect();
    let weighted: Vec<f64> = classes
        .iter()
        .zip(&room)
        .map(|(c, h)| h * weight(length, c.pattern, weights))
        .collect();
    let need = f64::from(req.max(1));
    let draw = |candidates: &[usize], rng: &mut ActorRng| -> Option<usize> {
        let total: f64 = candidates.iter().map(|&i| weighted[i]).sum();
        if total <= 0.0 {
            return None;
        }
        let mut pick = uniform_open0(rng) * total;
        for &i in candidates {
            if weighted[i] > 0.0 && pick <= weighted[i] {
                return Some(i);
            }
            pick -= weighted[i];
        }
        candidates
            .iter()
            .rev()
            .copied()
            .find(|&i| weighted[i] > 0.0)
    };
    let fits: Vec<usize> = (0..classes.len()).filter(|&i| room[i] >= need).collect();
    if !fits.is_empty() {
        return draw(&fits, rng).map(|i| vec![i]);
    }
    if room.iter().sum::<f64>() < need {
        return None;
    }
    let mut left: Vec<usize> = (0..classes.len()).filter(|&i| room[i] > 0.0).collect();
    let (mut chosen, mut got) = (Vec::new(), 0.0);
    while got < need {
        let i = draw(&left, rng)?;
        left.retain(|&j| j != i);
        chosen.push(i);
        got += room[i];
    }
    chosen.sort_unstable();
    Some(chosen)
}

/// The servers a job's classes gave it (`None`: no class, Algorithm 1
/// line 16), and when it last asked.
struct JobClasses {
    servers: Option<Arc<[u32]>>,
    last: SimTime,
}

/// `yarn-h`: the clustering service, Algorithm 1 per job, YARN-PT within
/// the chosen classes.
pub struct YarnH {
    pt: YarnPt,
    service: ClusteringService,
    weights: [f64; 3],
    /// Servers of each primary tenant, and its configured reserve.
    tenant_servers: Vec<Vec<u32>>,
    tenant_reserve: Vec<u32>,
    /// Primary tenant of each server, if any.
    owner: Vec<Option<usize>>,
    /// Class of each primary tenant at the clustering service's latest
    /// refresh, and which refresh that was.
    class_of: Vec<Option<usize>>,
    class_of_refresh: u64,
    jobs: BTreeMap<u64, JobClasses>,
    every: SimTime,
    now: SimTime,
    logs: Vec<(&'static str, serde_json::Value)>,
    one_class: u64,
    several_classes: u64,
    no_class: u64,
    /// Containers placed in their job's classes past its type's headroom,
    /// and outside them.
    over_headroom: u64,
    spilled: u64,
}

impl YarnH {
    /// The tenants own servers in id order, as the model assigns them.
    pub fn new(
        servers: &[ServerSpec],
        primaries: &[PrimaryTenantConfig],
        cfg: &SchedulerConfig,
    ) -> Self {
        let mut tenant_servers = Vec::with_capacity(primaries.len());
        let mut owner = vec![None; servers.len()];
        let mut next = 0usize;
        for (t, p) in primaries.iter().enumerate() {
            let end = (next + p.servers as usize).min(servers.len());
            for o in &mut owner[next..end] {
                *o = Some(t);
            }
            tenant_servers.push((next as u32..end as u32).collect());
            next = end;
        }
        YarnH {
            pt: YarnPt::new(servers),
            service: ClusteringService::new(
                primaries.iter().map(prior).collect(),
                cfg.cluster_window.as_nanos(),
                cfg.cluster_every.as_nanos(),
                cfg.cluster_classes,
            ),
            weights: cfg.rank_weights,
            tenant_servers,
            tenant_reserve: primaries.iter().map(|p| p.reserve_cores).collect(),
            owner,
            class_of: vec![None; primaries.len()],
            class_of_refresh: 0,
            jobs: BTreeMap::new(),
            every: cfg.cluster_every.as_nanos().max(1),
            now: 0,
            logs: Vec::new(),
            one_class: 0,
            several_classes: 0,
            no_class: 0,
            over_headroom: 0,
            spilled: 0,
        }
    }

    /// Primary utilisation of server `i` in its latest report.
    fn utilisation(cluster: &ClusterView, i: u32) -> Option<f64> {
        cluster
            .report(i)
            .map(|r| f64::from(r.primary_cores) / f64::from(r.cores.max(1)))
    }

    /// Every class as Algorithm 1 sees it now.
    fn class_states(&self, cluster: &ClusterView) -> Vec<ClassState> {
        let servers = cluster.servers();
        self.service
            .classes()
            .iter()
            .map(|c| {
                let mut st = ClassState {
                    pattern: c.pattern,
                    avg: c.avg,
                    peak: c.peak,
                    current: 0.0,
                    cores: 0.0,
                    reserve: 0.0,
                    allocated: 0.0,
                };
                let mut n: f64 = 0.0;
                for &t in &c.tenants {
                    for &i in &self.tenant_servers[t] {
                        let s = &servers[i as usize];
                        let report = cluster.report(i);
                        st.current += Self::utilisation(cluster, i).unwrap_or(c.avg);
                        st.cores += f64::from(self.pt.cores[i as usize]);
                        st.reserve +=
                            f64::from(report.map_or(self.tenant_reserve[t], |r| r.reserve_cores));
                        st.allocated += f64::from(s.threads);
                        n += 1.0;
                    }
                }
                st.current /= n.max(1.0);
                st
            })
            .collect()
    }

    /// What server `i` has available for a job of type `length`: its
    /// cores less the utilisation of the type (its class's average or peak
    /// when above its current use) and the reserve, less the containers on
    /// it (see the module doc); no cap for a server without a tenant.
    fn type_available(&self, cluster: &ClusterView, i: u32, length: JobLength) -> u32 {
        let Some(t) = self.owner.get(i as usize).copied().flatten() else {
            return u32::MAX;
        };
        let Some(r) = cluster.report(i) else {
            return 0;
        };
        let Some(class) = self
            .class_of
            .get(t)
            .copied()
            .flatten()
            .and_then(|c| self.service.classes().get(c))
        else {
            return u32::MAX;
        };
        let cores = f64::from(self.pt.cores[i as usize]);
        let current = f64::from(r.primary_cores) / cores.max(1.0);
        let u = match length {
            JobLength::Short => current,
            JobLength::Medium => class.avg.max(current),
            JobLength::Long => class.peak.max(current),
        };
        let s = &cluster.servers()[i as usize];
        let room =
            cores * (1.0 - u.clamp(0.0, 1.0)) - f64::from(r.reserve_cores) - f64::from(s.threads);
        libm::floor(room.max(0.0) + 1e-9) as u32
    }

    /// The servers of the classes Algorithm 1 picks for the job of `dag`
    /// (asked once per job).
    fn job_servers(
        &mut self,
        dag: &DagRef,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Arc<[u32]>> {
        let now = self.now;
        if !self.jobs.contains_key(&dag.job) {
            let states = self.class_states(cluster);
            let chosen = select_classes(dag.req, dag.length, &states, self.weights, rng);
            let servers = chosen.as_ref().map(|cs| {
                let mut v: Vec<u32> = cs
                    .iter()
                    .flat_map(|&c| self.service.classes()[c].tenants.iter())
                    .flat_map(|&t| self.tenant_servers[t].iter().copied())
                    .collect();
                v.sort_unstable();
                Arc::<[u32]>::from(v)
            });
            match chosen.as_ref().map(Vec::len) {
                None => self.no_class += 1,
                Some(1) => self.one_class += 1,
                Some(_) => self.several_classes += 1,
            }
            let classes: Vec<serde_json::Value> = chosen
                .iter()
                .flatten()
                .map(|&c| {
                    json!({
                        "class": c,
                        "pattern": states[c].pattern,
                        "headroom": headroom(dag.length, &states[c]),
                    })
                })
                .collect();
            self.logs.push((
                "class_select",
                json!({
                    "job": dag.job,
                    "length": dag.length,
                    "req": dag.req,
                    "classes": classes,
                    "servers": servers.as_ref().map_or(0, |v| v.len()),
                }),
            ));
            self.jobs.insert(dag.job, JobClasses { servers, last: now });
        }
        let entry = self.jobs.get_mut(&dag.job)?;
        entry.last = now;
        entry.servers.clone()
    }

    /// Brings `class_of` up to the clustering service's latest refresh.
    fn index_classes(&mut self) {
        if self.class_of_refresh == self.service.refreshes() {
            return;
        }
        self.class_of.fill(None);
        for (c, class) in self.service.classes().iter().enumerate() {
            for &t in &class.tenants {
                if let Some(slot) = self.class_of.get_mut(t) {
                    *slot = Some(c);
                }
            }
        }
        self.class_of_refresh = self.service.refreshes();
    }

    fn refreshed(&mut self) {
        let classes: Vec<serde_json::Value> = self
            .service
            .classes()
            .iter()
            .map(|c| {
                json!({
                    "pattern": c.pattern,
                    "avg": c.avg,
                    "peak": c.peak,
                    "tenants": c.tenants.len(),
                })
            })
            .collect();
        self.logs.push((
            "cluster_refresh",
            json!({ "observed": self.service.observed(), "classes": classes }),
        ));
        // selections of jobs idle for two refresh periods are forgotten
        let horizon = self.now.saturating_sub(2 * self.every);
        self.jobs.retain(|_, j| j.last >= horizon);
    }
}

impl Placement for YarnH {
    fn name(&self) -> &str {
        "yarn-h"
    }

    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        self.service.ensure(rng);
        self.index_classes();
        if let Some(dag) = req.task.dag {
            if let Some(servers) = self.job_servers(&dag, cluster, rng) {
                let length = dag.length;
                let typed = |i: u32| self.type_available(cluster, i, length);
                if let Some(c) = self.pt.pick(req, cluster, Some(&servers), typed, rng) {
                    return Some(c);
                }
                if let Some(c) = self
                    .pt
                    .pick(req, cluster, Some(&servers), |_| u32::MAX, rng)
                {
                    self.over_headroom += 1;
                    return Some(c);
                }
                let spill = self.pt.pick(req, cluster, None, |_| u32::MAX, rng);
                self.spilled += u64::from(spill.is_some());
                return spill;
            }
        }
        self.pt.pick(req, cluster, None, |_| u32::MAX, rng)
    }

    fn observe(&mut self, _server: u32, cluster: &ClusterView, now: SimTime, rng: &mut ActorRng) {
        self.now = now;
        let util = |t: usize| {
            let us: Vec<f64> = self.tenant_servers[t]
                .iter()
                .filter_map(|&i| Self::utilisation(cluster, i))
                .collect();
            (!us.is_empty()).then(|| us.iter().sum::<f64>() / us.len() as f64)
        };
        if self.service.advance(now, util, rng) {
            self.index_classes();
            self.refreshed();
        }
    }

    fn take_logs(&mut self) -> Vec<(&'static str, serde_json::Value)> {
        std::mem::take(&mut self.logs)
    }

    fn finish(&self, out: &mut Metrics) {
        out.add("harvest_jobs_one_class", self.one_class);
        out.add("harvest_jobs_several_classes", self.several_classes);
        out.add("harvest_jobs_no_class", self.no_class);
        out.add("harvest_tasks_over_headroom", self.over_headroom);
        out.add("harvest_tasks_spilled", self.spilled);
        out.add("harvest_cluster_refreshes", self.service.refreshes());
        out.add("harvest_classes", self.service.classes().len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    fn class(pattern: UtilPattern, avg: f64, peak: f64, current: f64) -> ClassState {
        ClassState {
            pattern,
            avg,
            peak,
            current,
            cores: 100.0,
            reserve: 10.0,
            allocated: 5.0,
        }
    }

    fn pt_view(available: impl Fn(u32) -> u32, n: u32) -> (YarnPt, ClusterView) {
        use crate::kernel::ActorId;
        use crate::net::ServerReport;
        let specs: Vec<ServerSpec> = (0..n)
            .map(|i| ServerSpec {
                core_speed: 1.0,
                idle_w: 100.0,
                peak_w: 200.0,
                id: ActorId(i),
                slots: 8,
                cores: 8,
                class: 0,
                memory_mb: 1 << 20,
            })
            .collect();
        let mut view = ClusterView::new(&specs, false);
        for i in 0..n {
            let report = ServerReport {
                free_slots: 8,
                running: 0,
                busy_cores: 0,
                cores: 8,
                primary_cores: 8 - available(i),
                reserve_cores: 0,
                memory_used_mb: 0,
                memory_mb: 1 << 20,
            };
            view.record_report(ActorId(i), report);
        }
        (YarnPt::new(&specs), view)
    }

    fn one_core_task() -> crate::task::Task {
        crate::task::Task::new(0, crate::kernel::ActorId(10_000), 0, 1)
    }

    fn plain(task: &crate::task::Task) -> Request<'_> {
        Request {
            task,
            profile: None,
            allowed: None,
            exclude: None,
        }
    }

    #[test]
    fn sampled_picks_stay_proportional_to_what_servers_have_available() {
        // 100 servers with 1 core available, 100 with 6: a pick lands in
        // the first group with probability 100 / 700
        let (pt, view) = pt_view(|i| if i < 100 { 1 } else { 6 }, 200);
        let task = one_core_task();
        let req = plain(&task);
        let mut rng = actor_rng(7, "scheduler");
        let picks = 14_000;
        let low = (0..picks)
            .filter(|_| {
                let c = pt.pick(&req, &view, None, |_| u32::MAX, &mut rng).unwrap();
                c.server < 100
            })
            .count();
        let share = low as f64 / f64::from(picks);
        assert!((share - 1.0 / 7.0).abs() < 0.015, "share {share}");
    }

    #[test]
    fn sampling_falls_back_to_the_exact_scan_when_room_is_rare() {
        // one server of 500 has room: rejection draws nearly always miss,
        // the scan still finds it; with none, nothing is picked
        let (pt, view) = pt_view(|i| u32::from(i == 321), 500);
        let task = one_core_task();
        let req = plain(&task);
        let mut rng = actor_rng(7, "scheduler");
        for _ in 0..50 {
            let c = pt.pick(&req, &view, None, |_| u32::MAX, &mut rng);
            assert_eq!(c.map(|c| c.server), Some(321));
        }
        assert!(pt.pick(&req, &view, None, |_| 0, &mut rng).is_none());
        let (pt, view) = pt_view(|_| 0, 500);
        assert!(pt.pick(&req, &view, None, |_| u32::MAX, &mut rng).is_none());
    }

    #[test]
    fn headroom_follows_the_three_definitions() {
        // current above the average, below the peak
        let c = class(UtilPattern::Periodic, 0.3, 0.6, 0.4);
        assert!((headroom(JobLength::Short, &c) - (60.0 - 15.0)).abs() < 1e-9);
        assert!((headroom(JobLength::Medium, &c) - (60.0 - 15.0)).abs() < 1e-9);
        assert!((headroom(JobLength::Long, &c) - (40.0 - 15.0)).abs() < 1e-9);
        // current below the average: medium looks at the average
        let c = class(UtilPattern::Periodic, 0.3, 0.6, 0.2);
        assert!((headroom(JobLength::Short, &c) - 65.0).abs() < 1e-9);
        assert!((headroom(JobLength::Medium, &c) - 55.0).abs() < 1e-9);
        assert!((headroom(JobLength::Long, &c) - 25.0).abs() < 1e-9);
        // current above the peak (a spike now): all three see it
        let c = class(UtilPattern::Unpredictable, 0.3, 0.6, 0.8);
        for l in JobLength::ALL {
            assert!((headroom(l, &c) - 5.0).abs() < 1e-9, "{l:?}");
        }
        // never below zero
        let c = class(UtilPattern::Constant, 0.95, 0.95, 0.95);
        assert_eq!(headroom(JobLength::Short, &c), 0.0);
    }

    #[test]
    fn ranking_weights_order_the_patterns_by_job_length() {
        use UtilPattern::{Constant, Periodic, Unpredictable};
        let w = [3.0, 2.0, 1.0];
        let order = |l: JobLength| {
            let mut ps = [Periodic, Constant, Unpredictable];
            ps.sort_by(|a, b| weight(l, *b, w).total_cmp(&weight(l, *a, w)));
            ps
        };
        assert_eq!(order(JobLength::Long), [Constant, Periodic, Unpredictable]);
        assert_eq!(order(JobLength::Short), [Unpredictable, Periodic, Constant]);
        assert_eq!(
            order(JobLength::Medium),
            [Periodic, Constant, Unpredictable]
        );
        assert_eq!(weight(JobLength::Long, Constant, [5.0, 1.0, 0.5]), 5.0);
        assert_eq!(weight(JobLength::Short, Constant, [5.0, 1.0, 0.5]), 0.5);
    }

    #[test]
    fn one_class_that_fits_is_drawn_by_weighted_headroom() {
        use UtilPattern::{Constant, Periodic, Unpredictable};
        // headrooms for a long job: 25 (periodic), 45 (constant), 0
        let classes = [
            class(Periodic, 0.3, 0.6, 0.2),
            class(Constant, 0.3, 0.4, 0.2),
            class(Unpredictable, 0.3, 0.95, 0.2),
        ];
        let mut rng = actor_rng(1, "scheduler");
        let mut counts = [0u32; 3];
        for _ in 0..6000 {
            let c =
                select_classes(20, JobLength::Long, &classes, [3.0, 2.0, 1.0], &mut rng).unwrap();
            assert_eq!(c.len(), 1);
            counts[c[0]] += 1;
        }
        assert_eq!(counts[2], 0, "no headroom, never picked");
        // weighted: periodic 25 × 2 = 50, constant 45 × 3 = 135
        let share = f64::from(counts[1]) / 6000.0;
        assert!((share - 135.0 / 185.0).abs() < 0.03, "{counts:?}");
        // only the constant class fits 30
        for _ in 0..100 {
            assert_eq!(
                select_classes(30, JobLength::Long, &classes, [3.0, 2.0, 1.0], &mut rng),
                Some(vec![1])
            );
        }
    }

    #[test]
    fn a_job_too_big_for_one_class_gets_several_or_none() {
        use UtilPattern::{Constant, Periodic, Unpredictable};
        let classes = [
            class(Periodic, 0.3, 0.6, 0.2),
            class(Constant, 0.3, 0.4, 0.2),
            class(Unpredictable, 0.3, 0.95, 0.2),
        ];
        let mut rng = actor_rng(2, "scheduler");
        // long: 25 + 45 = 70 in all; 60 needs both
        for _ in 0..50 {
            assert_eq!(
                select_classes(60, JobLength::Long, &classes, [3.0, 2.0, 1.0], &mut rng),
                Some(vec![0, 1])
            );
        }
        assert_eq!(
            select_classes(71, JobLength::Long, &classes, [3.0, 2.0, 1.0], &mut rng),
            None
        );
        // short: 65 each; 100 takes two of the three, each as needed
        let mut seen = [0u32; 3];
        for _ in 0..300 {
            let c =
                select_classes(100, JobLength::Short, &classes, [3.0, 2.0, 1.0], &mut rng).unwrap();
            assert_eq!(c.len(), 2);
            for i in c {
                seen[i] += 1;
            }
        }
        assert!(
            seen[2] > seen[1],
            "unpredictable ranks first for short jobs: {seen:?}"
        );
    }

    #[test]
    fn weighted_picks_follow_integer_weights() {
        let mut rng = actor_rng(3, "scheduler");
        let mut counts = [0u32; 3];
        for _ in 0..8000 {
            counts[pick_weighted(&[(0, 1), (1, 0), (2, 3)], &mut rng).unwrap() as usize] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(
            (f64::from(counts[2]) / 8000.0 - 0.75).abs() < 0.02,
            "{counts:?}"
        );
        assert_eq!(pick_weighted(&[(0, 0)], &mut rng), None);
    }
}
