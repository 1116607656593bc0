//! Where block replicas go: the rack-aware default of stock HDFS (harvesting
//! §5.1), its primary-tenant-aware variant HDFS-PT (§5.4), and HDFS-H's
//! Algorithm 2 (§4.2) over a 3 × 3 grid of reimage frequency × peak CPU
//! utilisation. Everything here is a pure function of what the name node
//! knows; the ledger that calls it (blocks, re-replication, reads) lives in
//! `namenode.rs`.
//!
//! Servers are data node indices `0..n` (server order); a *tenant* here is a
//! primary tenant, or the pool of servers no primary tenant owns.

use std::collections::BTreeMap;

use rand::RngCore;

use crate::config::StoragePlacement;
use crate::sampling::index;

/// A primary tenant as the name node's history knows it (Algorithm 2's
/// "primary reimaging stats" and "primary peak CPU util stats").
#[derive(Clone, Debug, PartialEq)]
pub struct TenantInfo {
    pub name: String,
    /// Its environment (§3.1): HDFS-H puts no two replicas of a block in one.
    pub env: u32,
    /// Historical reimages per server per month.
    pub reimages_per_month: f64,
    /// Historical peak CPU utilisation, 0–1.
    pub peak: f64,
}

/// The data nodes as the name node knows them; fixed for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Per server: its rack (dense, 0..racks), tenant, and disk in blocks.
    pub rack: Vec<u32>,
    pub tenant: Vec<u32>,
    pub capacity: Vec<u32>,
    /// Servers of each rack and of each tenant, in server order.
    pub racks: Vec<Vec<u32>>,
    pub members: Vec<Vec<u32>>,
    pub tenants: Vec<TenantInfo>,
    all: Vec<u32>,
}

impl Cluster {
    /// `rack_ids` are any labels (an access switch's id, a rack number);
    /// servers with equal labels share a rack. `tenant[s]` indexes `tenants`.
    pub fn new(
        rack_ids: &[u32],
        tenant: Vec<u32>,
        capacity: Vec<u32>,
        tenants: Vec<TenantInfo>,
    ) -> Cluster {
        let n = rack_ids.len();
        assert!(tenant.len() == n && capacity.len() == n);
        assert!(tenant.iter().all(|&t| (t as usize) < tenants.len()));
        let dense: BTreeMap<u32, u32> = rack_ids
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .enumerate()
            .map(|(i, id)| (id, i as u32))
            .collect();
        let rack: Vec<u32> = rack_ids.iter().map(|id| dense[id]).collect();
        let mut racks = vec![Vec::new(); dense.len()];
        let mut members = vec![Vec::new(); tenants.len()];
        for s in 0..n {
            racks[rack[s] as usize].push(s as u32);
            members[tenant[s] as usize].push(s as u32);
        }
        Cluster {
            rack,
            tenant,
            capacity,
            racks,
            members,
            tenants,
            all: (0..n as u32).collect(),
        }
    }

    pub fn servers(&self) -> usize {
        self.rack.len()
    }

    pub fn env(&self, s: u32) -> u32 {
        self.tenants[self.tenant[s as usize] as usize].env
    }
}

/// Algorithm 2's classes (lines 4–5): tenants split into three reimage
/// groups (rows: infrequent, intermediate, frequent) with the same available
/// space, then each row into three peak-utilisation groups (columns: low,
/// medium, high) with the same space, so each of the nine classes holds
/// about a ninth of the space (Figure 8: column boundaries differ by row).
/// A tenant belongs to exactly one class, the one its share of the space
/// falls in by its midpoint, so a tenant much larger than a ninth unbalances
/// the classes rather than being split (§4.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    class: Vec<u8>,
    members: [Vec<u32>; 9],
}

impl Grid {
    /// From each tenant's available space (any unit), reimage frequency and
    /// peak utilisation.
    pub fn build(free: &[u64], reimages: &[f64], peak: &[f64]) -> Grid {
        let n = free.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let key = |a: &u32, b: &u32, first: &[f64], second: &[f64]| {
            let (a, b) = (*a as usize, *b as usize);
            first[a]
                .total_cmp(&first[b])
                .then(second[a].total_cmp(&second[b]))
                .then(a.cmp(&b))
        };
        order.sort_by(|a, b| key(a, b, reimages, peak));
        let rows = split3(&order, free);
        let mut class = vec![0u8; n];
        for row in 0..3u8 {
            let mut in_row: Vec<u32> = order
                .iter()
                .zip(&rows)
                .filter(|(_, r)| **r == row)
                .map(|(t, _)| *t)
                .collect();
            in_row.sort_by(|a, b| key(a, b, peak, reimages));
            for (t, col) in in_row.iter().zip(split3(&in_row, free)) {
                class[*t as usize] = row * 3 + col;
            }
        }
        let mut members: [Vec<u32>; 9] = Default::default();
        for (t, c) in class.iter().enumerate() {
            members[*c as usize].push(t as u32);
        }
        Grid { class, members }
    }

    /// Class of a tenant: `row * 3 + column`.
    pub fn class_of(&self, tenant: u32) -> usize {
        self.class[tenant as usize] as usize
    }

    /// Tenants of a class, in tenant order.
    pub fn members(&self, class: usize) -> &[u32] {
        &self.members[class]
    }
}

/// Cuts `order` into three consecutive groups of about equal total weight:
/// each item goes to the third its weight's midpoint falls in (by rank when
/// every weight is 0).
fn split3(order: &[u32], weight: &[u64]) -> Vec<u8> {
    let total: u128 = order.iter().map(|&t| u128::from(weight[t as usize])).sum();
    let n = order.len() as u128;
    let mut cum = 0u128;
    order
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let w = u128::from(weight[t as usize]);
            let g = if total == 0 {
                3 * (2 * i as u128 + 1) / (2 * n)
            } else {
                3 * (2 * cum + w) / (2 * total)
            };
            cum += w;
            g.min(2) as u8
        })
        .collect()
}

/// What changes about data nodes during a run: disk use, busy status, and
/// per tenant how many servers could take a new replica now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nodes {
    /// Replicas on each server.
    pub used: Vec<u32>,
    /// Busy as last reported by the data node (§5.4).
    pub busy: Vec<bool>,
    /// Per tenant: servers with room that are not left out as busy.
    avail: Vec<u32>,
    avoid_busy: bool,
}

impl Nodes {
    pub fn new(cluster: &Cluster, avoid_busy: bool) -> Nodes {
        let n = cluster.servers();
        let mut avail = vec![0; cluster.tenants.len()];
        for s in 0..n {
            if cluster.capacity[s] > 0 {
                avail[cluster.tenant[s] as usize] += 1;
            }
        }
        Nodes {
            used: vec![0; n],
            busy: vec![false; n],
            avail,
            avoid_busy,
        }
    }

    /// Whether server `s` may receive a new replica: room on its disk, and
    /// not busy where busy nodes are left out (HDFS-PT, HDFS-H).
    pub fn eligible(&self, cluster: &Cluster, s: u32) -> bool {
        let s = s as usize;
        self.used[s] < cluster.capacity[s] && !(self.avoid_busy && self.busy[s])
    }

    /// Whether `s` may serve as the source of a copy.
    pub fn listed(&self, s: u32) -> bool {
        !(self.avoid_busy && self.busy[s as usize])
    }

    pub fn avail(&self, tenant: u32) -> u32 {
        self.avail[tenant as usize]
    }

    pub fn set_used(&mut self, cluster: &Cluster, s: u32, used: u32) {
        self.change(cluster, s, |n| n.used[s as usize] = used);
    }

    pub fn set_busy(&mut self, cluster: &Cluster, s: u32, busy: bool) {
        self.change(cluster, s, |n| n.busy[s as usize] = busy);
    }

    fn change(&mut self, cluster: &Cluster, s: u32, f: impl FnOnce(&mut Nodes)) {
        let before = self.eligible(cluster, s);
        f(self);
        let after = self.eligible(cluster, s);
        let t = cluster.tenant[s as usize] as usize;
        match (before, after) {
            (true, false) => self.avail[t] -= 1,
            (false, true) => self.avail[t] += 1,
            _ => {}
        }
    }
}

/// A destination for a new replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub server: u32,
    /// HDFS-H could not keep rows and columns apart within the round and
    /// kept only the environment constraint.
    pub relaxed: bool,
}

/// Chooses replica destinations by one placement policy.
pub struct Placer<'a> {
    pub policy: StoragePlacement,
    pub cluster: &'a Cluster,
    pub nodes: &'a Nodes,
    pub grid: &'a Grid,
}

/// Uniform draws tried before scanning for the acceptable items.
const TRIES: usize = 24;

/// A uniformly random item of `items` that passes `ok`: rejection sampling,
/// then (if that keeps failing) a uniform pick among all acceptable items;
/// either stage is uniform over them.
fn pick(rng: &mut impl RngCore, items: &[u32], ok: impl Fn(u32) -> bool) -> Option<u32> {
    if items.is_empty() {
        return None;
    }
    let len = items.len() as u32;
    for _ in 0..TRIES.min(items.len() * 2) {
        let x = items[index(rng, len) as usize];
        if ok(x) {
            return Some(x);
        }
    }
    let n = items.iter().filter(|&&x| ok(x)).count();
    if n == 0 {
        return None;
    }
    let k = index(rng, n as u32) as usize;
    items.iter().copied().filter(|&x| ok(x)).nth(k)
}

/// Tries the classes whose flag in `classes` is `want`, in a uniformly
/// random order (drawn lazily, one draw per class tried), until `f` finds
/// a server in one.
fn try_classes<R: RngCore>(
    rng: &mut R,
    want: bool,
    classes: [bool; 9],
    mut f: impl FnMut(usize, &mut R) -> Option<u32>,
) -> Option<u32> {
    let mut left = [0usize; 9];
    let mut n = 0;
    for (c, &free) in classes.iter().enumerate() {
        if free == want {
            left[n] = c;
            n += 1;
        }
    }
    while n > 0 {
        let i = index(rng, n as u32) as usize;
        let c = left[i];
        n -= 1;
        left[i] = left[n];
        if let Some(s) = f(c, rng) {
            return Some(s);
        }
    }
    None
}

impl Placer<'_> {
    /// The next replica's server for a block whose replicas are on
    /// `holders` (in the order they were placed); `creator` is the server
    /// writing a new block (its first replica goes there, §4.2 line 7 and
    /// §5.1). `None` if no server can take it.
    pub fn next(
        &self,
        holders: &[u32],
        creator: Option<u32>,
        rng: &mut impl RngCore,
    ) -> Option<Choice> {
        match self.policy {
            StoragePlacement::HdfsStock | StoragePlacement::HdfsPt => {
                self.rack_aware(holders, creator, rng).map(|server| Choice {
                    server,
                    relaxed: false,
                })
            }
            StoragePlacement::HdfsH => self.history(holders, creator, rng),
        }
    }

    fn ok(&self, s: u32, holders: &[u32]) -> bool {
        self.nodes.eligible(self.cluster, s) && !holders.contains(&s)
    }

    /// §5.1: the writer's server, another server of its rack, a server of
    /// another rack, then anywhere. For a block that lost replicas the same
    /// shape is restored: a lone replica gets a rack-mate, replicas all in
    /// one rack get a remote one, replicas on two racks get any server.
    fn rack_aware(
        &self,
        holders: &[u32],
        creator: Option<u32>,
        rng: &mut impl RngCore,
    ) -> Option<u32> {
        let cl = self.cluster;
        let ok = |s: u32| self.ok(s, holders);
        let Some(&first) = holders.first() else {
            let c = creator?;
            if ok(c) {
                return Some(c);
            }
            let rack = &cl.racks[cl.rack[c as usize] as usize];
            return pick(rng, rack, ok).or_else(|| pick(rng, &cl.all, ok));
        };
        let home = cl.rack[first as usize];
        let one_rack = holders.iter().all(|&h| cl.rack[h as usize] == home);
        let remote = |rng: &mut _| pick(rng, &cl.all, |s| ok(s) && cl.rack[s as usize] != home);
        if one_rack && holders.len() == 1 {
            pick(rng, &cl.racks[home as usize], ok)
                .or_else(|| remote(rng))
                .or_else(|| pick(rng, &cl.all, ok))
        } else if one_rack {
            remote(rng).or_else(|| pick(rng, &cl.all, ok))
        } else {
            pick(rng, &cl.all, ok)
        }
    }

    /// Algorithm 2: the creator's server first; then classes drawn at random
    /// with no row and no column used twice within a round of three (lines
    /// 8–11, 15–16), a random tenant of the class whose environment holds no
    /// replica yet (lines 12–13), a random server of it (line 14). When no
    /// class of the round has such a tenant, the row and column constraint
    /// is dropped for this replica (the environment constraint never is).
    fn history<R: RngCore>(
        &self,
        holders: &[u32],
        creator: Option<u32>,
        rng: &mut R,
    ) -> Option<Choice> {
        let cl = self.cluster;
        if holders.is_empty() {
            let c = creator?;
            if self.ok(c, holders) {
                return Some(Choice {
                    server: c,
                    relaxed: false,
                });
            }
            let class = self.grid.class_of(cl.tenant[c as usize]);
            if let Some(server) = self.server_in_class(class, holders, rng) {
                return Some(Choice {
                    server,
                    relaxed: false,
                });
            }
        }
        let round = &holders[holders.len() / 3 * 3..];
        let mut rows = [false; 3];
        let mut cols = [false; 3];
        for &h in round {
            let c = self.grid.class_of(cl.tenant[h as usize]);
            rows[c / 3] = true;
            cols[c % 3] = true;
        }
        let free: [bool; 9] = std::array::from_fn(|c| !(rows[c / 3] || cols[c % 3]));
        let mut from = |c: usize, rng: &mut R| self.server_in_class(c, holders, rng);
        if let Some(server) = try_classes(rng, true, free, &mut from) {
            return Some(Choice {
                server,
                relaxed: false,
            });
        }
        try_classes(rng, false, free, &mut from).map(|server| Choice {
            server,
            relaxed: true,
        })
    }

    /// A random server of a random tenant of `class` whose environment
    /// holds none of the block's replicas.
    fn server_in_class(
        &self,
        class: usize,
        holders: &[u32],
        rng: &mut impl RngCore,
    ) -> Option<u32> {
        let cl = self.cluster;
        let env_free = |t: u32| {
            let env = cl.tenants[t as usize].env;
            holders.iter().all(|&h| cl.env(h) != env)
        };
        let tenant = pick(rng, self.grid.members(class), |t| {
            self.nodes.avail(t) > 0 && env_free(t)
        })?;
        pick(rng, &cl.members[tenant as usize], |s| self.ok(s, holders))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;

    /// `tenants` tenants of `size` servers each, racks of `rack` servers,
    /// tenant `t` with reimage rate `t % 9 / 3` and peak `t % 3` (so the
    /// grid puts tenant t in class `t % 9` when all have equal space), each
    /// in its own environment except that tenants `t` and `t + 18` share one.
    fn cluster(tenants: u32, size: u32, rack: u32, capacity: u32) -> Cluster {
        let n = tenants * size;
        let infos = (0..tenants)
            .map(|t| TenantInfo {
                name: format!("t{t}"),
                env: t % 18,
                reimages_per_month: f64::from(t % 9 / 3),
                peak: f64::from(t % 3) / 4.0,
            })
            .collect();
        Cluster::new(
            &(0..n).map(|s| s / rack).collect::<Vec<_>>(),
            (0..n).map(|s| s / size).collect(),
            vec![capacity; n as usize],
            infos,
        )
    }

    fn grid_of(cl: &Cluster, nodes: &Nodes) -> Grid {
        let free: Vec<u64> = cl
            .members
            .iter()
            .map(|m| {
                m.iter()
                    .map(|&s| u64::from(cl.capacity[s as usize] - nodes.used[s as usize]))
                    .sum()
            })
            .collect();
        let r: Vec<f64> = cl.tenants.iter().map(|t| t.reimages_per_month).collect();
        let p: Vec<f64> = cl.tenants.iter().map(|t| t.peak).collect();
        Grid::build(&free, &r, &p)
    }

    #[test]
    fn the_grid_splits_space_in_nine_equal_classes() {
        let cl = cluster(36, 5, 10, 100);
        let nodes = Nodes::new(&cl, true);
        let grid = grid_of(&cl, &nodes);
        for t in 0..36 {
            assert_eq!(grid.class_of(t), (t % 9) as usize, "tenant {t}");
        }
        for c in 0..9 {
            assert_eq!(grid.members(c).len(), 4);
        }
        // one tenant with most of the space unbalances, but is never split
        let g = Grid::build(&[10, 10, 100, 10], &[0.0, 1.0, 2.0, 3.0], &[0.0; 4]);
        assert_eq!(
            (0..4).map(|t| g.class_of(t) / 3).collect::<Vec<_>>(),
            [0, 0, 1, 2]
        );
    }

    #[test]
    fn algorithm_2_never_repeats_a_row_column_or_environment_within_a_round() {
        let cl = cluster(36, 5, 10, 1_000);
        let mut nodes = Nodes::new(&cl, true);
        // a few busy servers and a full one must not change the rules
        nodes.set_busy(&cl, 3, true);
        nodes.set_busy(&cl, 77, true);
        nodes.set_used(&cl, 12, 1_000);
        let grid = grid_of(&cl, &nodes);
        let mut rng = actor_rng(1, "alg2");
        for r in [3usize, 4, 6] {
            for b in 0..2_000u32 {
                let creator = (b * 7) % 180;
                let p = Placer {
                    policy: StoragePlacement::HdfsH,
                    cluster: &cl,
                    nodes: &nodes,
                    grid: &grid,
                };
                let mut holders = Vec::new();
                for _ in 0..r {
                    let c = p.next(&holders, Some(creator), &mut rng).expect("room");
                    assert!(!c.relaxed, "36 tenants in 18 environments always fit");
                    holders.push(c.server);
                }
                if nodes.eligible(&cl, creator) {
                    assert_eq!(holders[0], creator, "first replica on the writer");
                }
                for s in &holders {
                    assert!(nodes.eligible(&cl, *s), "busy or full server {s}");
                }
                let envs: std::collections::BTreeSet<u32> =
                    holders.iter().map(|&s| cl.env(s)).collect();
                assert_eq!(envs.len(), r, "two replicas in one environment");
                for round in holders.chunks(3) {
                    let classes: Vec<usize> = round
                        .iter()
                        .map(|&s| grid.class_of(cl.tenant[s as usize]))
                        .collect();
                    for i in 0..classes.len() {
                        for j in 0..i {
                            assert_ne!(classes[i] / 3, classes[j] / 3, "row twice: {classes:?}");
                            assert_ne!(classes[i] % 3, classes[j] % 3, "column twice: {classes:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn algorithm_2_relaxes_rows_and_columns_but_never_environments() {
        // three tenants of one column (one per row): columns cannot differ
        let infos: Vec<TenantInfo> = (0..3)
            .map(|t| TenantInfo {
                name: format!("t{t}"),
                env: t,
                reimages_per_month: 0.0,
                peak: 0.0,
            })
            .collect();
        let cl = Cluster::new(&[0; 6], vec![0, 0, 1, 1, 2, 2], vec![10; 6], infos);
        let nodes = Nodes::new(&cl, true);
        let grid = Grid::build(&[0, 0, 0], &[0.0; 3], &[0.0; 3]);
        let p = Placer {
            policy: StoragePlacement::HdfsH,
            cluster: &cl,
            nodes: &nodes,
            grid: &grid,
        };
        let mut rng = actor_rng(2, "relax");
        let mut holders = vec![p.next(&[], Some(0), &mut rng).unwrap().server];
        for _ in 0..2 {
            let c = p.next(&holders, None, &mut rng).unwrap();
            holders.push(c.server);
        }
        let envs: std::collections::BTreeSet<u32> = holders.iter().map(|&s| cl.env(s)).collect();
        assert_eq!(envs.len(), 3);
        assert_eq!(
            p.next(&holders, None, &mut rng),
            None,
            "a 4th would share an environment"
        );
    }

    #[test]
    fn stock_puts_two_replicas_in_the_writers_rack_and_one_in_another() {
        let cl = cluster(10, 20, 10, 1_000);
        let nodes = Nodes::new(&cl, false);
        let grid = grid_of(&cl, &nodes);
        let p = Placer {
            policy: StoragePlacement::HdfsStock,
            cluster: &cl,
            nodes: &nodes,
            grid: &grid,
        };
        let mut rng = actor_rng(3, "stock");
        for b in 0..2_000u32 {
            let creator = b % 200;
            let mut holders = Vec::new();
            for _ in 0..3 {
                holders.push(p.next(&holders, Some(creator), &mut rng).unwrap().server);
            }
            let racks: Vec<u32> = holders.iter().map(|&s| cl.rack[s as usize]).collect();
            assert_eq!(holders[0], creator);
            assert_eq!(racks[1], racks[0], "second replica in the writer's rack");
            assert_ne!(racks[2], racks[0], "third replica in a remote rack");
            assert_eq!(
                holders
                    .iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                3
            );
            // a lone surviving replica gets a rack-mate first, then a remote one
            let lone = [holders[2]];
            let mate = p.next(&lone, None, &mut rng).unwrap().server;
            assert_eq!(cl.rack[mate as usize], racks[2]);
            let third = p.next(&[holders[2], mate], None, &mut rng).unwrap().server;
            assert_ne!(cl.rack[third as usize], racks[2]);
        }
    }

    #[test]
    fn pt_never_chooses_a_busy_or_full_server_and_stock_ignores_busy() {
        let cl = cluster(2, 10, 10, 5);
        let mut pt = Nodes::new(&cl, true);
        let mut stock = Nodes::new(&cl, false);
        for s in 0..20 {
            if s % 2 == 0 {
                pt.set_busy(&cl, s, true);
                stock.set_busy(&cl, s, true);
            }
        }
        pt.set_used(&cl, 1, 5);
        assert_eq!(pt.avail(0), 4, "servers 3, 5, 7, 9");
        assert_eq!(stock.avail(0), 10);
        let grid = grid_of(&cl, &pt);
        let mut rng = actor_rng(4, "pt");
        for _ in 0..500 {
            let p = Placer {
                policy: StoragePlacement::HdfsPt,
                cluster: &cl,
                nodes: &pt,
                grid: &grid,
            };
            let s = p.next(&[], Some(0), &mut rng).unwrap().server;
            assert!(s % 2 == 1 && s != 1, "{s}");
        }
        let p = Placer {
            policy: StoragePlacement::HdfsStock,
            cluster: &cl,
            nodes: &stock,
            grid: &grid,
        };
        assert_eq!(p.next(&[], Some(0), &mut rng).unwrap().server, 0);
    }
}
