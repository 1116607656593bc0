//! Primary tenants: the services that own servers, whose CPU use comes and
//! goes and whose disks get reimaged (harvesting §3.2–3.3). Batch work only
//! harvests what they leave, and must give it back when they spike (§5.3).
//!
//! Every `update_interval` the tenant draws the utilisation of its "average
//! server" (§3.2) from its pattern, scales it (§6.1), and tells each of its
//! servers how many cores it now uses, rounded up to whole cores as the node
//! manager does (§5.3). Reimage events arrive as a Poisson process; a share
//! of them hits every server of the tenant at once (§3.3's correlated
//! reimages), the rest one server.

use std::sync::Arc;

use dcemu_topology::SimTime;
use serde::Serialize;

use crate::config::{PrimaryTenantConfig, UtilPattern};
use crate::kernel::{ActorId, Ctx, Metrics, ModelError};
use crate::net::{Body, Inbox, Nic};
use crate::net::{Msg, unexpected};
use crate::sampling::{exponential, index, normal, to_nanos, uniform_open0};
use crate::world::World;

const DAY_NS: f64 = 86_400e9;
const MONTH_NS: f64 = 30.0 * DAY_NS;

pub struct PrimaryTenant {
    world: Arc<World>,
    nic: Nic,
    inbox: Inbox,
    cfg: PrimaryTenantConfig,
    /// Its servers with their core counts.
    servers: Vec<(ActorId, u32)>,
    /// Cores last announced to each server.
    announced: Vec<Option<u32>>,
    /// Unpredictable pattern: the random walk's level.
    level: f64,
    spike_until: SimTime,
    next_spike: SimTime,
    /// Load spikes started (unpredictable pattern, §3.2).
    spikes: u64,
    /// Cores its servers use now (the sum of `announced`), since when, and
    /// the integral before that in core·ns: `primary_utilization_mean`.
    used_cores: u64,
    used_since: SimTime,
    used_core_ns: u128,
    /// Reimages sent to each server (index as `servers`): the per-server
    /// and per-tenant rates of §3.3 (Figures 4 and 5).
    reimages_sent: Vec<u64>,
}

#[derive(Serialize)]
struct LoadLog {
    utilization: f64,
}

#[derive(Serialize)]
struct ReimageLog {
    servers: usize,
}

impl PrimaryTenant {
    pub fn new(world: Arc<World>, cfg: &PrimaryTenantConfig, servers: Vec<(ActorId, u32)>) -> Self {
        PrimaryTenant {
            world,
            nic: Nic::default(),
            inbox: Inbox::default(),
            announced: vec![None; servers.len()],
            reimages_sent: vec![0; servers.len()],
            servers,
            level: cfg.mean,
            spike_until: 0,
            next_spike: 0,
            spikes: 0,
            used_cores: 0,
            used_since: 0,
            used_core_ns: 0,
            cfg: cfg.clone(),
        }
    }

    pub fn start(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if self.cfg.pattern == UtilPattern::Unpredictable && self.cfg.spikes_per_day > 0.0 {
            self.next_spike = to_nanos(exponential(ctx.rng(), DAY_NS / self.cfg.spikes_per_day));
        } else {
            self.next_spike = SimTime::MAX;
        }
        ctx.timer(0, Msg::PrimaryTick)?;
        self.arm_reimage(ctx)
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::PrimaryTick => self.tick(ctx),
            Msg::ReimageTick => self.reimage(ctx),
            Msg::Packet(p) => {
                let (_, body) = self.inbox.accept(&self.world, ctx, p)?;
                Err(unexpected(self.world.name(ctx.me()), body.name()))
            }
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    /// Utilisation of the average server now, before scaling, in [0, 1].
    fn raw_utilization(&mut self, ctx: &mut Ctx<'_, Msg>) -> f64 {
        let now = ctx.now();
        let noise = self.cfg.noise * normal(ctx.rng());
        let u = match self.cfg.pattern {
            UtilPattern::Constant => self.cfg.mean + noise,
            UtilPattern::Periodic => {
                let phase = (now as f64 / self.cfg.period.as_nanos() as f64).fract();
                self.cfg.mean
                    + self.cfg.amplitude * libm::sin(2.0 * std::f64::consts::PI * phase)
                    + noise
            }
            UtilPattern::Unpredictable => {
                if now >= self.next_spike {
                    self.spikes += 1;
                    let length = exponential(ctx.rng(), self.cfg.spike_duration.as_nanos() as f64);
                    self.spike_until = now.saturating_add(to_nanos(length));
                    let gap = exponential(ctx.rng(), DAY_NS / self.cfg.spikes_per_day);
                    self.next_spike = now.saturating_add(to_nanos(gap));
                }
                // mean-reverting random walk
                self.level =
                    (self.level + 0.2 * (self.cfg.mean - self.level) + noise).clamp(0.0, 1.0);
                if now < self.spike_until {
                    self.cfg.spike_util
                } else {
                    self.level
                }
            }
        };
        u.clamp(0.0, 1.0)
    }

    fn tick(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let raw = self.raw_utilization(ctx);
        let u = self.cfg.scaled(raw);
        ctx.log("primary_load", &LoadLog { utilization: u });
        let world = Arc::clone(&self.world);
        self.integrate_use(ctx.now());
        for i in 0..self.servers.len() {
            let (server, cores) = self.servers[i];
            let used = libm::ceil(u * f64::from(cores)).min(f64::from(cores)) as u32;
            if self.announced[i] != Some(used) {
                let before = u64::from(self.announced[i].unwrap_or(0));
                self.used_cores = self.used_cores - before + u64::from(used);
                self.announced[i] = Some(used);
                let body = Body::PrimaryLoad {
                    cores: used,
                    reserve: self.cfg.reserve_cores,
                };
                self.nic.send(&world, ctx, server, body)?;
            }
        }
        ctx.timer(self.cfg.update_interval.as_nanos(), Msg::PrimaryTick)
    }

    /// Arms the next reimage event; the event rate keeps every server at
    /// `reimages_per_month` on average whatever the share of correlated events.
    fn arm_reimage(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let n = self.servers.len() as f64;
        let p = self.cfg.reimage_correlation;
        let events_per_month = n * self.cfg.reimages_per_month / (p * n + 1.0 - p);
        if events_per_month <= 0.0 || n == 0.0 {
            return Ok(());
        }
        let gap = exponential(ctx.rng(), MONTH_NS / events_per_month);
        ctx.timer(to_nanos(gap).max(1), Msg::ReimageTick)
    }

    fn reimage(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let hit: Vec<ActorId> = if uniform_open0(ctx.rng()) <= self.cfg.reimage_correlation {
            for sent in &mut self.reimages_sent {
                *sent += 1;
            }
            self.servers.iter().map(|&(s, _)| s).collect()
        } else {
            let i = index(ctx.rng(), self.servers.len() as u32) as usize;
            self.reimages_sent[i] += 1;
            vec![self.servers[i].0]
        };
        ctx.log("reimage", &ReimageLog { servers: hit.len() });
        let world = Arc::clone(&self.world);
        for server in hit {
            self.nic.send(&world, ctx, server, Body::Reimage)?;
        }
        self.arm_reimage(ctx)
    }

    fn integrate_use(&mut self, now: SimTime) {
        let span = now.saturating_sub(self.used_since);
        self.used_core_ns += u128::from(self.used_cores) * u128::from(span);
        self.used_since = self.used_since.max(now);
    }

    pub fn finish(&mut self, end: SimTime, out: &mut Metrics) {
        self.inbox.finish(out);
        self.integrate_use(end);
        out.add_f64("primary_core_s", self.used_core_ns as f64 / 1e9);
        let cores: u64 = self.servers.iter().map(|&(_, c)| u64::from(c)).sum();
        out.add("primary_cores_total", cores);
        out.add("primary_spikes", self.spikes);
        self.input_statistics(end, out);
    }

    /// The input statistics of §3.2-3.3 the scenario is calibrated to,
    /// counted per tenant and merged over tenants: which pattern class it
    /// is and how many servers it owns (Figures 2 and 3), and whether its
    /// servers' and its own average reimage rate over the run was at most
    /// one a month (Figures 4 and 5: at least 90 % of servers and 80 % of
    /// tenants). The reimage rates count the events the tenant sent, so a
    /// run shorter than a month measures them on what it saw.
    fn input_statistics(&self, end: SimTime, out: &mut Metrics) {
        let n = self.servers.len() as u64;
        out.add("primary_tenants", 1);
        out.add("primary_servers", n);
        let (tenants, servers) = match self.cfg.pattern {
            UtilPattern::Periodic => ("primary_tenants_periodic", "primary_servers_periodic"),
            UtilPattern::Constant => ("primary_tenants_constant", "primary_servers_constant"),
            UtilPattern::Unpredictable => (
                "primary_tenants_unpredictable",
                "primary_servers_unpredictable",
            ),
        };
        out.add(tenants, 1);
        out.add(servers, n);
        let months = end as f64 / MONTH_NS;
        if months <= 0.0 || n == 0 {
            return;
        }
        let at_most_monthly = self
            .reimages_sent
            .iter()
            .filter(|&&k| k as f64 <= months)
            .count() as u64;
        out.add("reimage_servers_monthly_or_less", at_most_monthly);
        let per_server = self.reimages_sent.iter().sum::<u64>() as f64 / n as f64;
        out.add(
            "reimage_tenants_monthly_or_less",
            u64::from(per_server <= months),
        );
    }
}
