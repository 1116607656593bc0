//! The name node of the harvested file system (harvesting §4.2, §5.1, §5.4):
//! it keeps which servers hold each block's replicas, places new replicas
//! by the scenario's policy (`storage_placement.rs`), learns from data nodes
//! when their disk was reimaged and when they are busy, re-creates lost
//! replicas at a bounded rate, and serves clients' reads.
//!
//! **The block map is the ledger.** Data nodes get no message per replica:
//! a year over millions of blocks would be tens of millions of messages
//! that change nothing, since a reimage is the only way a replica vanishes
//! and that reaches the name node as the data node's own report
//! (`Body::Reimaged`, one link later). So the name node's map is what is on
//! the disks, up to that latency.
//!
//! **Busy data nodes** (§5.4): a server tells the name node when its busy
//! status flips (`Body::DataNodeBusy`), which it derives from its primary
//! tenant's load ([`crate::world::StorageLink::busy`]). One message per flip is what the
//! paper's heartbeat carries, without the heartbeats in between.
//!
//! **Re-replication** (§5.1: 30 blocks/hour/server): every block that lost a
//! replica but kept one is queued at one of its surviving replicas' servers,
//! the one with the shortest queue (HDFS-PT and HDFS-H skip busy ones, which
//! the name node no longer lists). Each server sends at most one block per
//! tick of `1 h / rereplicate_per_hour` (ticks on a fixed grid, only while
//! something waits), so the budget is a rate limit per *source* server; the
//! destination is chosen by the placement policy when the copy is made.
//! Like HDFS's name node, which orders under-replicated blocks by how few
//! replicas they have left, a server's queue has two levels: blocks down to
//! their last replica go first. A source that is itself reimaged hands its
//! queue to the blocks' other survivors; one that turns busy (PT, H) hands
//! over the blocks another listed survivor can send, and keeps the rest
//! until it is available again.
//!
//! **Reads** are a Poisson process of `read_rate_per_s` reads of uniformly
//! random blocks. They are evaluated lazily: before each event the name
//! node handles (and at the end of the run), the reads due since the
//! previous one are played against the state that held meanwhile, which is
//! exact because that state changes only at the name node's events. A read
//! fails if its block is lost or every replica is on a busy data node (all
//! placements alike: stock HDFS would read from the busy node anyway, at the
//! primary tenant's expense, §6.3; the count is of the reads that no replica
//! could serve without eating into a reserve, as Figure 16 compares).
//!
//! **History for HDFS-H.** The paper clusters tenants from three years of
//! AutoPilot data (§3.3). Here the name node's history is each primary
//! tenant's configured behaviour, as if observed for [`PRIOR_MONTHS`]
//! months: reimages per server per month (`reimages_per_month`), blended
//! with the reimages it has seen during the run, and peak utilisation
//! ([`history_peak`]). The 3 × 3 grid is rebuilt from it once a day.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use dcemu_topology::{Network, SimTime};
use rand::RngCore;
use serde::Serialize;

use crate::config::{
    MAX_REPLICAS, PrimaryTenantConfig, StorageConfig, StoragePlacement, UtilPattern,
};
use crate::kernel::{ActorId, Ctx, Metrics, ModelError};
use crate::net::{Body, Inbox};
use crate::net::{Msg, unexpected};
use crate::sampling::{exponential, index, to_nanos};
use crate::storage_placement::{Choice, Cluster, Grid, Nodes, Placer, TenantInfo};
use crate::world::World;

/// An empty replica slot.
const NONE: u32 = u32::MAX;
/// Months of history the configured reimage rate stands for (§3.3: three years).
pub const PRIOR_MONTHS: f64 = 36.0;
const HOUR_NS: u64 = 3_600_000_000_000;
const DAY_NS: u64 = 24 * HOUR_NS;
const MONTH_NS: f64 = 30.0 * DAY_NS as f64;

/// A primary tenant's historical peak CPU utilisation, as its configuration
/// describes it: the top of its daily swing (periodic), its mean (constant)
/// or its spikes (unpredictable), plus two standard deviations of noise, then
/// scaled like its load (§6.1).
pub fn history_peak(p: &PrimaryTenantConfig) -> f64 {
    let top = match p.pattern {
        UtilPattern::Periodic => p.mean + p.amplitude,
        UtilPattern::Constant => p.mean,
        UtilPattern::Unpredictable if p.spikes_per_day > 0.0 => p.spike_util.max(p.mean),
        UtilPattern::Unpredictable => p.mean,
    };
    let raw = (top + 2.0 * p.noise).clamp(0.0, 1.0);
    p.scaled(raw)
}

/// The data nodes as the name node sees them: server `i` is actor
/// `first_server + i` with a disk of `disk_mb[i]`, owned by primary tenant
/// `owner[i]` (an index into `primaries`). Racks are access switches in a
/// three-tier network, else runs of `rack_size` consecutive servers. Each
/// primary tenant is one tenant of the grid, in its `environment` (default:
/// its own); servers no primary tenant owns form one more tenant and
/// environment, with no reimages and no load in its history.
pub fn cluster(
    network: &Network,
    first_server: u32,
    disk_mb: &[u64],
    owner: &[Option<usize>],
    primaries: &[PrimaryTenantConfig],
    cfg: &StorageConfig,
) -> Cluster {
    let n = disk_mb.len();
    let flat = network.flat_latency().is_some();
    let racks: Vec<u32> = (0..n as u32)
        .map(|s| match network.ports(first_server + s).next() {
            Some(port) if !flat => port.peer,
            _ => s / cfg.rack_size.max(1),
        })
        .collect();
    let mut envs: BTreeMap<String, u32> = BTreeMap::new();
    let mut env_of = |name: &str| {
        let next = envs.len() as u32;
        *envs.entry(name.to_string()).or_insert(next)
    };
    let mut tenants: Vec<TenantInfo> = primaries
        .iter()
        .map(|p| TenantInfo {
            name: p.name.clone(),
            env: env_of(p.environment.as_deref().unwrap_or(&p.name)),
            reimages_per_month: p.reimages_per_month,
            peak: history_peak(p),
        })
        .collect();
    let pool = tenants.len() as u32;
    if owner.iter().any(Option::is_none) {
        tenants.push(TenantInfo {
            name: "(unowned)".into(),
            // names are never empty: this environment is the pool's alone
            env: env_of(""),
            reimages_per_month: 0.0,
            peak: 0.0,
        });
    }
    let tenant = owner.iter().map(|o| o.map_or(pool, |i| i as u32)).collect();
    let capacity = disk_mb
        .iter()
        .map(|mb| (mb / cfg.block_mb.max(1)).min(u64::from(u32::MAX - 1)) as u32)
        .collect();
    Cluster::new(&racks, tenant, capacity, tenants)
}

/// What became of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Served,
    /// Every replica is on a busy data node.
    Busy,
    /// The block has no replica left.
    Lost,
}

/// Counters of the block map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Blocks written (at least one replica placed).
    pub blocks: u64,
    /// Blocks no server could take at all.
    pub unwritten: u64,
    pub lost: u64,
    pub replicas_lost: u64,
    pub rereplicated: u64,
    /// Copies attempted that found no destination (tried again later).
    pub deferred: u64,
    /// HDFS-H replicas placed without the row and column constraint.
    pub relaxed: u64,
    /// Replicas of new blocks that found no destination.
    pub unplaced: u64,
}

/// A block record's state slot: not waiting for a copy.
const IDLE: u32 = u32::MAX;
/// ... lost: no replica left.
const LOST: u32 = u32::MAX - 1;
/// ... else the server whose queue holds it, with this bit if it waits in
/// the urgent queue (one replica left).
const URGENT: u32 = 1 << 30;
/// Queue levels: blocks down to their last replica first, as HDFS's name
/// node orders its under-replicated blocks, then the others.
const LEVEL_URGENT: usize = 0;
const LEVEL_NORMAL: usize = 1;

/// The block map and its re-replication queues.
pub struct Storage {
    policy: StoragePlacement,
    r: usize,
    cluster: Cluster,
    nodes: Nodes,
    grid: Grid,
    /// One record of `r + 1` words per block (one cache line for what a
    /// reimage touches): the replicas' servers in placement order, then
    /// `NONE`; last, its state: `IDLE`, `LOST`, or the server whose queue
    /// holds it while it waits for a copy (`| URGENT` at the urgent level).
    rec: Vec<u32>,
    on_server: Vec<Vec<u32>>,
    /// Per server, its two queues: `LEVEL_URGENT`, `LEVEL_NORMAL`.
    queues: Vec<[VecDeque<u32>; 2]>,
    /// Servers with a non-empty queue (`active_list` in the order they
    /// became active; `is_active` says which are).
    active_list: Vec<u32>,
    is_active: Vec<bool>,
    /// Reimages seen per tenant.
    seen: Vec<u64>,
    pending: u64,
    pub stats: StorageStats,
}

impl Storage {
    pub fn new(policy: StoragePlacement, replicas: u32, cluster: Cluster) -> Storage {
        assert!((1..=MAX_REPLICAS).contains(&replicas));
        let n = cluster.servers();
        assert!(
            n < URGENT as usize,
            "server indices leave the URGENT bit free"
        );
        let nodes = Nodes::new(&cluster, policy.avoids_busy());
        let t = cluster.tenants.len();
        Storage {
            policy,
            r: replicas as usize,
            grid: Grid::build(&vec![0; t], &vec![0.0; t], &vec![0.0; t]),
            nodes,
            rec: Vec::new(),
            on_server: vec![Vec::new(); n],
            queues: vec![Default::default(); n],
            active_list: Vec::new(),
            is_active: vec![false; n],
            seen: vec![0; t],
            pending: 0,
            cluster,
            stats: StorageStats::default(),
        }
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Rebuilds HDFS-H's grid from the history after `months` of the run
    /// (Algorithm 2 lines 4–5); whether any tenant changed class.
    pub fn rebuild_grid(&mut self, months: f64) -> bool {
        let cl = &self.cluster;
        let free: Vec<u64> = cl
            .members
            .iter()
            .map(|m| {
                m.iter()
                    .map(|&s| {
                        u64::from(
                            cl.capacity[s as usize].saturating_sub(self.nodes.used[s as usize]),
                        )
                    })
                    .sum()
            })
            .collect();
        let reimages: Vec<f64> = cl
            .tenants
            .iter()
            .enumerate()
            .map(|(t, info)| {
                let n = cl.members[t].len().max(1) as f64;
                (info.reimages_per_month * n * PRIOR_MONTHS + self.seen[t] as f64)
                    / (n * (PRIOR_MONTHS + months))
            })
            .collect();
        let peak: Vec<f64> = cl.tenants.iter().map(|t| t.peak).collect();
        let grid = Grid::build(&free, &reimages, &peak);
        let changed = grid != self.grid;
        self.grid = grid;
        changed
    }

    fn stride(&self) -> usize {
        self.r + 1
    }

    pub fn blocks(&self) -> u32 {
        (self.rec.len() / self.stride()) as u32
    }

    /// The servers holding `b`, in placement order.
    pub fn replicas(&self, b: u32) -> &[u32] {
        let base = b as usize * self.stride();
        let all = &self.rec[base..base + self.r];
        let k = all.iter().position(|&s| s == NONE).unwrap_or(self.r);
        &all[..k]
    }

    fn state(&self, b: u32) -> u32 {
        self.rec[b as usize * self.stride() + self.r]
    }

    fn set_state(&mut self, b: u32, state: u32) {
        let i = b as usize * self.stride() + self.r;
        self.rec[i] = state;
    }

    pub fn is_lost(&self, b: u32) -> bool {
        self.state(b) == LOST
    }

    /// The server and level whose queue holds `b`, if it waits for a copy.
    fn queued(&self, b: u32) -> Option<(u32, usize)> {
        match self.state(b) {
            IDLE | LOST => None,
            s if s & URGENT != 0 => Some((s & !URGENT, LEVEL_URGENT)),
            s => Some((s, LEVEL_NORMAL)),
        }
    }

    /// The server whose queue holds `b`, if it waits for a copy.
    #[cfg(test)]
    fn queued_at(&self, b: u32) -> Option<u32> {
        self.queued(b).map(|(s, _)| s)
    }

    fn queue_len(&self, s: u32) -> usize {
        self.queues[s as usize].iter().map(VecDeque::len).sum()
    }

    /// Blocks waiting for a copy.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Whether some server has copies to send.
    pub fn has_work(&self) -> bool {
        !self.active_list.is_empty()
    }

    pub fn replicas_stored(&self) -> u64 {
        self.nodes.used.iter().map(|&u| u64::from(u)).sum()
    }

    /// Records a data node's busy status. Under PT and H a busy node is no
    /// longer listed as a source (§5.4): the blocks waiting in its queue
    /// move to another surviving replica's queue, if one is listed.
    pub fn set_busy(&mut self, s: u32, busy: bool) {
        self.nodes.set_busy(&self.cluster, s, busy);
        if !busy || self.nodes.listed(s) || self.queue_len(s) == 0 {
            return;
        }
        for level in [LEVEL_URGENT, LEVEL_NORMAL] {
            for b in std::mem::take(&mut self.queues[s as usize][level]) {
                if self.queued(b) != Some((s, level)) {
                    continue;
                }
                if self
                    .replicas(b)
                    .iter()
                    .any(|&h| h != s && self.nodes.listed(h))
                {
                    self.set_state(b, IDLE);
                    self.pending -= 1;
                    self.enqueue(b);
                } else {
                    self.queues[s as usize][level].push_back(b);
                }
            }
        }
    }

    pub fn is_busy(&self, s: u32) -> bool {
        self.nodes.busy[s as usize]
    }

    fn holders(&self, b: u32) -> ([u32; MAX_REPLICAS as usize], usize) {
        let live = self.replicas(b);
        let mut buf = [NONE; MAX_REPLICAS as usize];
        buf[..live.len()].copy_from_slice(live);
        (buf, live.len())
    }

    fn place(
        &self,
        holders: &[u32],
        creator: Option<u32>,
        rng: &mut impl RngCore,
    ) -> Option<Choice> {
        let placer = Placer {
            policy: self.policy,
            cluster: &self.cluster,
            nodes: &self.nodes,
            grid: &self.grid,
        };
        placer.next(holders, creator, rng)
    }

    fn add(&mut self, b: u32, s: u32) {
        let k = self.replicas(b).len();
        let i = b as usize * self.stride() + k;
        self.rec[i] = s;
        self.on_server[s as usize].push(b);
        let used = self.nodes.used[s as usize] + 1;
        self.nodes.set_used(&self.cluster, s, used);
    }

    fn remove(&mut self, b: u32, s: u32) {
        let base = b as usize * self.stride();
        let k = self.replicas(b).len();
        if let Some(j) = self.rec[base..base + k].iter().position(|&x| x == s) {
            self.rec.copy_within(base + j + 1..base + k, base + j);
            self.rec[base + k - 1] = NONE;
        }
    }

    /// Places a new block written by server `creator`: as many replicas as
    /// the policy finds room for (any missing are queued for copies).
    /// `None` if not even one replica found a server.
    pub fn create(&mut self, creator: u32, rng: &mut impl RngCore) -> Option<u32> {
        let b = self.blocks();
        self.rec.extend(std::iter::repeat_n(NONE, self.r));
        self.rec.push(IDLE);
        for i in 0..self.r {
            let (buf, k) = self.holders(b);
            match self.place(&buf[..k], Some(creator), rng) {
                Some(c) => {
                    self.stats.relaxed += u64::from(c.relaxed);
                    self.add(b, c.server);
                }
                None => {
                    self.stats.unplaced += (self.r - i) as u64;
                    break;
                }
            }
        }
        let k = self.replicas(b).len();
        if k == 0 {
            self.rec.truncate(b as usize * self.stride());
            self.stats.unwritten += 1;
            return None;
        }
        self.stats.blocks += 1;
        if k < self.r {
            self.enqueue(b);
        }
        Some(b)
    }

    /// Queues `b` for a copy at the surviving replica with the shortest
    /// queue, preferring those the name node lists (not busy under PT / H);
    /// at the urgent level if it is down to one replica.
    fn enqueue(&mut self, b: u32) {
        let live = self.replicas(b);
        let src = live
            .iter()
            .copied()
            .min_by_key(|&h| (!self.nodes.listed(h), self.queue_len(h)))
            .expect("a block with a replica");
        let level = if live.len() == 1 {
            LEVEL_URGENT
        } else {
            LEVEL_NORMAL
        };
        if self.queued(b).is_none() {
            self.pending += 1;
        }
        let flag = if level == LEVEL_URGENT { URGENT } else { 0 };
        self.set_state(b, src | flag);
        self.queues[src as usize][level].push_back(b);
        if !self.is_active[src as usize] {
            self.is_active[src as usize] = true;
            self.active_list.push(src);
        }
    }

    /// Server `s` was reimaged: every replica on it is gone. Blocks that
    /// kept a replica wait for copies; blocks that kept none are lost.
    /// Returns (replicas destroyed, blocks lost).
    pub fn reimage(&mut self, s: u32) -> (u64, u64) {
        let blocks = std::mem::take(&mut self.on_server[s as usize]);
        self.nodes.set_used(&self.cluster, s, 0);
        self.seen[self.cluster.tenant[s as usize] as usize] += 1;
        let mut lost = 0;
        for &b in &blocks {
            self.remove(b, s);
            let queued = self.queued(b);
            let live = self.replicas(b).len();
            if live == 0 {
                if queued.is_some() {
                    self.pending -= 1;
                }
                if !self.is_lost(b) {
                    self.set_state(b, LOST);
                    lost += 1;
                }
            } else if match queued {
                None => true,
                // its source went, or it is now down to its last replica
                Some((src, level)) => src == s || (live == 1 && level == LEVEL_NORMAL),
            } {
                self.enqueue(b);
            }
        }
        // every block queued here had a replica here, so was handled above
        for level in [LEVEL_URGENT, LEVEL_NORMAL] {
            for b in std::mem::take(&mut self.queues[s as usize][level]) {
                if self.queued(b) == Some((s, level)) {
                    self.set_state(b, IDLE);
                    self.pending -= 1;
                    if !self.replicas(b).is_empty() {
                        self.enqueue(b);
                    }
                }
            }
        }
        let destroyed = blocks.len() as u64;
        self.stats.replicas_lost += destroyed;
        self.stats.lost += lost;
        (destroyed, lost)
    }

    /// One re-replication tick: every listed server with a queue sends its
    /// next block (urgent ones first) to a destination the policy chooses.
    /// Returns the copies made, as (source, destination).
    pub fn rereplicate(&mut self, rng: &mut impl RngCore) -> Vec<(u32, u32)> {
        let sources = std::mem::take(&mut self.active_list);
        let mut copies = Vec::new();
        for &s in &sources {
            if !self.nodes.listed(s) {
                continue;
            }
            while let Some((b, level)) = self.pop(s) {
                if self.queued(b) != Some((s, level)) {
                    continue;
                }
                self.set_state(b, IDLE);
                self.pending -= 1;
                let (buf, k) = self.holders(b);
                match self.place(&buf[..k], None, rng) {
                    Some(c) => {
                        self.stats.relaxed += u64::from(c.relaxed);
                        self.add(b, c.server);
                        self.stats.rereplicated += 1;
                        copies.push((s, c.server));
                    }
                    None => self.stats.deferred += 1,
                }
                if self.replicas(b).len() < self.r {
                    self.enqueue(b);
                }
                break;
            }
        }
        // servers that became active during the tick were appended to the
        // (emptied) list; keep the earlier ones first, in their order
        let newer = std::mem::take(&mut self.active_list);
        for &s in sources.iter().chain(&newer) {
            self.is_active[s as usize] = false;
        }
        for s in sources.into_iter().chain(newer) {
            let i = s as usize;
            if self.queue_len(s) > 0 && !self.is_active[i] {
                self.is_active[i] = true;
                self.active_list.push(s);
            }
        }
        copies
    }

    /// The next entry of server `s`'s queues, urgent first.
    fn pop(&mut self, s: u32) -> Option<(u32, usize)> {
        let q = &mut self.queues[s as usize];
        q[LEVEL_URGENT]
            .pop_front()
            .map(|b| (b, LEVEL_URGENT))
            .or_else(|| q[LEVEL_NORMAL].pop_front().map(|b| (b, LEVEL_NORMAL)))
    }

    /// A client reads block `b`.
    pub fn read(&self, b: u32) -> Access {
        if self.is_lost(b) {
            return Access::Lost;
        }
        if self
            .replicas(b)
            .iter()
            .any(|&s| !self.nodes.busy[s as usize])
        {
            Access::Served
        } else {
            Access::Busy
        }
    }
}

/// The name node actor.
pub struct NameNode {
    world: Arc<World>,
    inbox: Inbox,
    cfg: StorageConfig,
    first_server: u32,
    storage: Storage,
    end: SimTime,
    tick_ns: SimTime,
    armed: bool,
    grid_day: u64,
    next_read: SimTime,
    reads: u64,
    failed_busy: u64,
    failed_lost: u64,
    busy_reports: u64,
}

#[derive(Serialize)]
struct InitLog {
    placement: &'static str,
    blocks: u64,
    replicas: u64,
    unplaced: u64,
    relaxed: u64,
    under_replicated: u64,
}

#[derive(Serialize)]
struct ReimagedLog<'a> {
    server: &'a str,
    replicas_lost: u64,
    blocks_lost: u64,
    under_replicated: u64,
}

#[derive(Serialize)]
struct BusyLog<'a> {
    server: &'a str,
    busy: bool,
}

#[derive(Serialize)]
struct CopyLog {
    copies: usize,
    under_replicated: u64,
}

#[derive(Serialize)]
struct ClassesLog {
    /// Tenant names per class, row-major (row: reimage group, column: peak group).
    classes: Vec<Vec<String>>,
}

impl NameNode {
    pub fn new(
        world: Arc<World>,
        cfg: &StorageConfig,
        cluster: Cluster,
        first_server: u32,
        end: SimTime,
    ) -> Self {
        NameNode {
            world,
            inbox: Inbox::default(),
            storage: Storage::new(cfg.placement, cfg.replicas, cluster),
            cfg: cfg.clone(),
            first_server,
            end,
            tick_ns: HOUR_NS.div_ceil(u64::from(cfg.rereplicate_per_hour.max(1))),
            armed: false,
            grid_day: 0,
            next_read: SimTime::MAX,
            reads: 0,
            failed_busy: 0,
            failed_lost: 0,
            busy_reports: 0,
        }
    }

    /// Builds the grid from history and writes the initial blocks, each by a
    /// uniformly random server.
    pub fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        self.rebuild_grid(ctx);
        let n = self.storage.cluster().servers() as u32;
        if n > 0 {
            // the grid follows the space as it fills (every 5 % of the blocks)
            let every = (self.cfg.blocks / 20).max(1);
            for i in 0..self.cfg.blocks {
                if i > 0 && i % every == 0 {
                    self.rebuild_grid(ctx);
                }
                let creator = index(ctx.rng(), n);
                self.storage.create(creator, ctx.rng());
            }
        }
        let st = &self.storage.stats;
        ctx.log(
            "storage_init",
            &InitLog {
                placement: self.cfg.placement.name(),
                blocks: st.blocks,
                replicas: self.storage.replicas_stored(),
                unplaced: st.unplaced,
                relaxed: st.relaxed,
                under_replicated: self.storage.pending(),
            },
        );
        if self.cfg.read_rate_per_s > 0.0 && self.storage.blocks() > 0 && self.end > 1 {
            self.next_read = self.read_gap(ctx);
            ctx.timer(self.end - 1, Msg::ReadTick)?;
        }
        self.arm(ctx)
    }

    fn read_gap(&mut self, ctx: &mut Ctx<'_, Msg>) -> SimTime {
        to_nanos(exponential(ctx.rng(), 1e9 / self.cfg.read_rate_per_s))
    }

    /// Plays the reads due before now against the current state.
    fn reads_until(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let blocks = self.storage.blocks();
        while self.next_read < now {
            let b = index(ctx.rng(), blocks);
            self.reads += 1;
            match self.storage.read(b) {
                Access::Served => {}
                Access::Busy => self.failed_busy += 1,
                Access::Lost => self.failed_lost += 1,
            }
            let gap = self.read_gap(ctx);
            self.next_read = self.next_read.saturating_add(gap);
        }
    }

    fn rebuild_grid(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.cfg.placement != StoragePlacement::HdfsH {
            return;
        }
        self.grid_day = ctx.now() / DAY_NS;
        if self.storage.rebuild_grid(ctx.now() as f64 / MONTH_NS) {
            let cl = self.storage.cluster();
            let grid = self.storage.grid();
            let classes = (0..9)
                .map(|c| {
                    grid.members(c)
                        .iter()
                        .map(|&t| cl.tenants[t as usize].name.clone())
                        .collect()
                })
                .collect();
            ctx.log("storage_classes", &ClassesLog { classes });
        }
    }

    fn arm(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self.armed || !self.storage.has_work() {
            return Ok(());
        }
        let now = ctx.now();
        let next = (now / self.tick_ns + 1).saturating_mul(self.tick_ns);
        self.armed = true;
        ctx.timer(next - now, Msg::Rereplicate)
    }

    fn server(&self, id: ActorId, ctx: &Ctx<'_, Msg>) -> Result<u32, ModelError> {
        let n = self.storage.cluster().servers() as u32;
        match id.0.checked_sub(self.first_server) {
            Some(s) if s < n => Ok(s),
            _ => Err(ModelError::Invariant(format!(
                "{} got a data node report from {}, which is not a server",
                self.world.name(ctx.me()),
                self.world.name(id)
            ))),
        }
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        self.reads_until(ctx);
        match msg {
            Msg::Packet(p) => {
                let (src, body) = self.inbox.accept(&self.world, ctx, p)?;
                match body {
                    Body::Reimaged => {
                        let s = self.server(src, ctx)?;
                        let (replicas_lost, blocks_lost) = self.storage.reimage(s);
                        let world = Arc::clone(&self.world);
                        ctx.log(
                            "datanode_reimaged",
                            &ReimagedLog {
                                server: world.name(src),
                                replicas_lost,
                                blocks_lost,
                                under_replicated: self.storage.pending(),
                            },
                        );
                        self.arm(ctx)
                    }
                    Body::DataNodeBusy { busy } => {
                        let s = self.server(src, ctx)?;
                        self.busy_reports += 1;
                        self.storage.set_busy(s, busy);
                        let world = Arc::clone(&self.world);
                        ctx.log(
                            "datanode_busy",
                            &BusyLog {
                                server: world.name(src),
                                busy,
                            },
                        );
                        Ok(())
                    }
                    other => Err(unexpected(self.world.name(ctx.me()), other.name())),
                }
            }
            Msg::Rereplicate => {
                self.armed = false;
                if ctx.now() / DAY_NS > self.grid_day {
                    self.rebuild_grid(ctx);
                }
                let copies = self.storage.rereplicate(ctx.rng());
                ctx.log(
                    "rereplicate",
                    &CopyLog {
                        copies: copies.len(),
                        under_replicated: self.storage.pending(),
                    },
                );
                self.arm(ctx)
            }
            Msg::ReadTick => Ok(()),
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    pub fn finish(&mut self, out: &mut Metrics) {
        self.inbox.finish(out);
        let st = &self.storage.stats;
        out.add("blocks_total", st.blocks);
        out.add("blocks_unwritten", st.unwritten);
        out.add("blocks_lost", st.lost);
        out.add("replicas_lost_reimage", st.replicas_lost);
        out.add("replicas_rereplicated", st.rereplicated);
        out.add("rereplications_deferred", st.deferred);
        out.add("replicas_relaxed", st.relaxed);
        out.add("replicas_unplaced", st.unplaced);
        out.add("replicas_end", self.storage.replicas_stored());
        out.add("blocks_under_replicated_end", self.storage.pending());
        out.add("block_reads", self.reads);
        out.add("failed_accesses", self.failed_busy + self.failed_lost);
        out.add("failed_accesses_busy", self.failed_busy);
        out.add("failed_accesses_lost", self.failed_lost);
        out.add("datanode_busy_reports", self.busy_reports);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::actor_rng;
    use crate::world::StorageLink;

    /// `n` servers in racks of `rack`, tenant `s / size`, each its own
    /// environment, disks of `cap` blocks.
    fn storage(
        policy: StoragePlacement,
        r: u32,
        n: u32,
        size: u32,
        rack: u32,
        cap: u32,
    ) -> Storage {
        let tenants = n.div_ceil(size);
        let infos = (0..tenants)
            .map(|t| TenantInfo {
                name: format!("t{t}"),
                env: t,
                reimages_per_month: f64::from(t % 3),
                peak: f64::from(t / 3 % 3) / 3.0,
            })
            .collect();
        let cl = Cluster::new(
            &(0..n).map(|s| s / rack).collect::<Vec<_>>(),
            (0..n).map(|s| s / size).collect(),
            vec![cap; n as usize],
            infos,
        );
        let mut st = Storage::new(policy, r, cl);
        st.rebuild_grid(0.0);
        st
    }

    /// Every replica in the map is on its server's list and counted in its
    /// use, and the queues agree with the pending count.
    fn check(st: &Storage) {
        let mut count = vec![0u32; st.cluster.servers()];
        let mut pending = 0;
        for b in 0..st.blocks() {
            for &s in st.replicas(b) {
                count[s as usize] += 1;
                assert!(st.on_server[s as usize].contains(&b));
            }
            if let Some(q) = st.queued_at(b) {
                pending += 1;
                assert!(st.replicas(b).contains(&q), "queued at a holder");
                assert!(st.queues[q as usize].iter().any(|l| l.contains(&b)));
                assert!(st.replicas(b).len() < st.r);
            } else if !st.is_lost(b) {
                assert_eq!(st.replicas(b).len(), st.r, "block {b} waits for nothing");
            }
        }
        assert_eq!(count, st.nodes.used);
        assert_eq!(pending, st.pending());
    }

    #[test]
    fn lost_blocks_are_counted_exactly() {
        // 3 servers, 3 replicas: every block is on all of them
        let mut st = storage(StoragePlacement::HdfsStock, 3, 3, 1, 3, 100);
        let mut rng = actor_rng(1, "lost");
        for i in 0..50 {
            st.create(i % 3, &mut rng).unwrap();
        }
        check(&st);
        assert_eq!(st.reimage(0), (50, 0));
        assert_eq!(st.reimage(1), (50, 0));
        assert_eq!(st.pending(), 50);
        check(&st);
        // one tick: only server 2 holds anything, it sends one block
        let copies = st.rereplicate(&mut rng);
        assert_eq!(copies.len(), 1);
        assert_eq!(copies[0].0, 2);
        check(&st);
        // server 2 goes: 49 blocks had it as their last replica
        assert_eq!(st.reimage(2), (50, 49));
        assert_eq!(st.stats.lost, 49);
        assert_eq!(st.pending(), 1, "the copied block still has a replica");
        check(&st);
        let survivor = (0..50).find(|&b| !st.is_lost(b)).unwrap();
        assert_eq!(st.read(survivor), Access::Served);
        assert_eq!(st.read((survivor + 1) % 50), Access::Lost);
        let holder = st.replicas(survivor)[0];
        st.set_busy(holder, true);
        assert_eq!(st.read(survivor), Access::Busy);
        // reimaging a server again loses nothing twice
        st.reimage(2);
        st.reimage(holder);
        assert_eq!(st.stats.lost, 50);
        assert_eq!(st.pending(), 0);
        assert!(!st.has_work() || st.rereplicate(&mut rng).is_empty());
        check(&st);
    }

    #[test]
    fn blocks_down_to_their_last_replica_are_copied_first() {
        let mut st = storage(StoragePlacement::HdfsStock, 3, 4, 4, 4, 1_000);
        let mut rng = actor_rng(5, "urgent");
        for i in 0..400 {
            st.create(i % 4, &mut rng).unwrap();
        }
        st.reimage(3);
        st.reimage(2);
        check(&st);
        let last = |st: &Storage| (0..400).filter(|&b| st.replicas(b).len() == 1).count();
        let urgent_at = |st: &Storage, s: u32| (0..400).filter(|&b| st.replicas(b) == [s]).count();
        let (u0, u1) = (urgent_at(&st, 0), urgent_at(&st, 1));
        assert!(u0 > 10 && u1 > 10, "{u0} {u1}");
        for tick in 0..(u0.max(u1)) {
            let before = last(&st);
            let expect = usize::from(urgent_at(&st, 0) > 0) + usize::from(urgent_at(&st, 1) > 0);
            // servers 2 and 3 become sources too, of blocks with two replicas
            assert!(st.rereplicate(&mut rng).len() >= expect);
            assert_eq!(
                last(&st),
                before - expect,
                "tick {tick}: urgent blocks first"
            );
            check(&st);
        }
        assert_eq!(last(&st), 0);
    }

    #[test]
    fn rereplication_sends_at_most_one_block_per_source_per_tick() {
        for policy in [
            StoragePlacement::HdfsStock,
            StoragePlacement::HdfsPt,
            StoragePlacement::HdfsH,
        ] {
            let mut st = storage(policy, 3, 120, 10, 20, 10_000);
            let mut rng = actor_rng(2, "rate");
            for i in 0..6_000 {
                st.create(i % 120, &mut rng).unwrap();
            }
            check(&st);
            // a whole tenant and a rack-mate of another go at once
            let mut lost_replicas = 0;
            for s in (0..10).chain([15]) {
                lost_replicas += st.reimage(s).0;
            }
            st.set_busy(50, true);
            check(&st);
            let mut made = 0;
            let mut ticks = 0;
            use std::collections::BTreeSet;
            while st.has_work() {
                let copies = st.rereplicate(&mut rng);
                let sources: BTreeSet<u32> = copies.iter().map(|c| c.0).collect();
                assert_eq!(
                    sources.len(),
                    copies.len(),
                    "{policy:?}: a source sent twice"
                );
                if policy.avoids_busy() && st.is_busy(50) {
                    assert!(!sources.contains(&50), "busy source");
                    assert!(copies.iter().all(|c| c.1 != 50), "busy destination");
                }
                for &(_, d) in &copies {
                    assert!(!(0..10).contains(&d) || st.nodes.used[d as usize] > 0);
                }
                made += copies.len() as u64;
                ticks += 1;
                if ticks == 2_000 {
                    // let the busy source go
                    st.set_busy(50, false);
                }
                assert!(ticks < 10_000, "{policy:?}: re-replication never ends");
            }
            check(&st);
            assert_eq!(made, st.stats.rereplicated);
            assert_eq!(
                st.replicas_stored(),
                3 * (st.blocks() as u64 - st.stats.lost),
                "{policy:?}: every surviving block is whole again"
            );
            assert!(made <= lost_replicas);
        }
    }

    #[test]
    fn busy_rule_follows_the_reserve_or_the_share() {
        let link = StorageLink {
            namenode: ActorId(0),
            busy_above: None,
        };
        assert!(
            !link.busy(8, 4, 12),
            "8 of 12 with 4 in reserve: still free"
        );
        assert!(link.busy(9, 4, 12));
        let share = StorageLink {
            busy_above: Some(0.5),
            ..link
        };
        assert!(!share.busy(6, 4, 12));
        assert!(share.busy(7, 0, 12));
    }
}
