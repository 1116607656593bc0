//! Switches: forward every packet hop by hop along its route.
//!
//! Each egress port is a FIFO: a packet leaves after the switch's forwarding
//! latency and once the packets ahead of it on that port have been
//! serialised, taking `bytes / bandwidth` itself; it reaches the next node
//! after the link's propagation latency. Congestion therefore shows up as
//! queueing delay.
//!
//! Packets addressed to the switch itself are reservation notices from the
//! scheduler: bandwidth reserved (or released) on one egress port for a flow.
//!
//! Power (thesis §4.2.4.2, Tables 3.2 and 4.1): a switch is on while a port
//! is transmitting or carries a reservation, otherwise idle, or asleep under
//! `power.policy = "sleep"`.
//! A packet reaching a sleeping switch wakes it and waits for the wake-up
//! (`power.switch_wake`, 0 s by default as in §4.2.5), during which the
//! switch draws its on power (activation cost `P_switch·ρ`).

use std::collections::BTreeMap;
use std::sync::Arc;

use dcemu_topology::{PowerPolicy, SimTime, SwitchInfo, SwitchPower, Tier};
use serde::Serialize;

use crate::accounting::count_in_transit;
use crate::device::{DevState, Device, Powered};
use crate::kernel::{ActorId, Ctx, Metrics, ModelError};
use crate::net::{Body, Packet};
use crate::net::{Msg, unexpected};
use crate::world::World;

pub struct Switch {
    world: Arc<World>,
    tier: Tier,
    power: SwitchPower,
    /// When each egress port (in `Network::ports` order) finishes its queue.
    busy_until: Vec<SimTime>,
    /// The latest of `busy_until` (each port's only grows): when every
    /// port has drained.
    drained_at: SimTime,
    /// Bandwidth reserved for flows on the egress ports that carry any, in
    /// bits/s, by port index (a full-mesh access switch has a port per
    /// server, thesis §4.2.3, and few carry a flow).
    reserved: BTreeMap<usize, u64>,
    /// Releases that arrived before their reservations, by port: notices on
    /// different ECMP paths may reorder through a waking switch, and the
    /// late reservation is netted against what was released early.
    released_early: BTreeMap<usize, u64>,
    early_releases: u64,
    /// Power state, and the packets that arrived while asleep or waking.
    power_state: Powered<Packet>,
    idle_check: Option<SimTime>,
    forwarded: u64,
}

#[derive(Serialize)]
struct ForwardLog<'a> {
    from: &'a str,
    to: &'a str,
    next: &'a str,
    msg: &'static str,
    queued_ns: u64,
}

#[derive(Serialize)]
struct ReserveLog<'a> {
    task: u64,
    next: &'a str,
    bps: u64,
    reserved_bps: u64,
}

impl Switch {
    pub fn new(world: Arc<World>, info: &SwitchInfo) -> Self {
        let ports = world.network.port_count(info.id);
        let device = match world.power.policy {
            PowerPolicy::Idle => Device::new(DevState::Idle, info.power.idle_w),
            PowerPolicy::Sleep => Device::new(DevState::Sleep, info.power.sleep_w),
        }
        .keeping_active();
        Switch {
            world,
            tier: info.tier,
            power: info.power,
            busy_until: vec![0; ports],
            drained_at: 0,
            reserved: BTreeMap::new(),
            released_early: BTreeMap::new(),
            early_releases: 0,
            power_state: Powered::new(device),
            idle_check: None,
            forwarded: 0,
        }
    }

    pub fn handle(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        match msg {
            Msg::Packet(p) => {
                let wake = self.world.power.switch_wake.as_nanos();
                match self.power_state.admit(ctx, p, self.power.on_w, wake)? {
                    Some(p) => self.process(p, ctx),
                    None => Ok(()),
                }
            }
            Msg::WakeDone => {
                for p in self.power_state.woke(ctx, self.power.idle_w) {
                    self.process(p, ctx)?;
                }
                self.schedule_idle_check(ctx, ctx.now())
            }
            Msg::IdleCheck => self.idle_check(ctx),
            other => Err(unexpected(self.world.name(ctx.me()), other.name())),
        }
    }

    /// A packet for this switch is a reservation notice; any other is forwarded.
    fn process(&mut self, p: Packet, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        if p.route.dst() != ctx.me().0 {
            return self.forward(p, ctx);
        }
        let Body::Reservation {
            task,
            peer,
            bps,
            reserve,
        } = p.body
        else {
            return Err(unexpected(self.world.name(ctx.me()), p.body.name()));
        };
        let me = ctx.me();
        let bad = |what: String| ModelError::Invariant(format!("{}: {what}", self.world.name(me)));
        let (port, _) = self
            .world
            .network
            .port_to(me.0, peer)
            .ok_or_else(|| bad(format!("no port toward {}", self.world.name(ActorId(peer)))))?;
        let slot = self.reserved.get(&port).copied().unwrap_or(0);
        let slot = if reserve {
            let early = self.released_early.remove(&port).unwrap_or(0);
            let netted = early.min(bps);
            if early > netted {
                self.released_early.insert(port, early - netted);
            }
            slot.saturating_add(bps - netted)
        } else {
            match slot.checked_sub(bps) {
                Some(left) => left,
                None => {
                    self.early_releases += 1;
                    *self.released_early.entry(port).or_insert(0) += bps - slot;
                    0
                }
            }
        };
        if slot > 0 {
            self.reserved.insert(port, slot);
        } else {
            self.reserved.remove(&port);
        }
        ctx.log(
            if reserve { "reserve" } else { "release" },
            &ReserveLog {
                task,
                next: self.world.name(ActorId(peer)),
                bps,
                reserved_bps: slot,
            },
        );
        if !self.reserved.is_empty() {
            if self.power_state.device.state() != DevState::On {
                self.power_state
                    .device
                    .set(ctx.now(), DevState::On, self.power.on_w);
            }
            Ok(())
        } else {
            self.schedule_idle_check(ctx, ctx.now())
        }
    }

    fn forward(&mut self, mut p: Packet, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        let me = ctx.me();
        let now = ctx.now();
        let misrouted = || {
            ModelError::Invariant(format!(
                "{} got a packet whose route does not continue through it",
                self.world.name(me)
            ))
        };
        if p.route.nodes().get(p.hop as usize) != Some(&me.0) {
            return Err(misrouted());
        }
        let next = p.next_node().ok_or_else(misrouted)?;
        let (port_index, port) = self
            .world
            .network
            .port_to(me.0, next)
            .ok_or_else(misrouted)?;
        let ready = now + self.world.network.switch_latency();
        let start = ready.max(self.busy_until[port_index]);
        let depart = start + port.bandwidth.serialization_ns(u64::from(p.bytes));
        self.busy_until[port_index] = depart;
        self.drained_at = self.drained_at.max(depart);
        self.forwarded += 1;
        if self.world.packet_logs {
            ctx.log(
                "forward",
                &ForwardLog {
                    from: self.world.name(p.src()),
                    to: self.world.name(p.dst()),
                    next: self.world.name(ActorId(next)),
                    msg: p.body.name(),
                    queued_ns: start - ready,
                },
            );
        }
        if self.power_state.device.state() != DevState::On {
            self.power_state
                .device
                .set(now, DevState::On, self.power.on_w);
        }
        p.hop += 1;
        ctx.send(ActorId(next), depart - now + port.latency, Msg::Packet(p))?;
        self.schedule_idle_check(ctx, depart)
    }

    fn schedule_idle_check(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        at: SimTime,
    ) -> Result<(), ModelError> {
        if self.idle_check.is_none() {
            self.idle_check = Some(at);
            ctx.timer(at - ctx.now(), Msg::IdleCheck)?;
        }
        Ok(())
    }

    /// Goes idle (or to sleep) once every port has drained.
    fn idle_check(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        self.idle_check = None;
        let now = ctx.now();
        let latest = self.drained_at;
        if latest > now {
            return self.schedule_idle_check(ctx, latest);
        }
        if !matches!(
            self.power_state.device.state(),
            DevState::On | DevState::Idle
        ) || !self.reserved.is_empty()
        {
            return Ok(());
        }
        if self.world.power.policy == PowerPolicy::Sleep {
            self.power_state.sleep(ctx, self.power.sleep_w);
        } else if self.power_state.device.state() == DevState::On {
            self.power_state
                .device
                .set(now, DevState::Idle, self.power.idle_w);
        }
        Ok(())
    }

    pub fn finish(&mut self, end: SimTime, out: &mut Metrics) {
        out.add("packets_forwarded", self.forwarded);
        out.add("reserved_ports_end", self.reserved.len() as u64);
        if self.early_releases > 0 {
            out.add("reservations_released_early", self.early_releases);
        }
        count_in_transit(self.power_state.held().iter().map(|p| &p.body), out);
        let by_tier = match self.tier {
            Tier::Core => "energy_j_switch_core",
            Tier::Aggregation => "energy_j_switch_aggregation",
            Tier::Access => "energy_j_switch_access",
        };
        out.add_f64(by_tier, self.power_state.device.joules(end));
        out.add_f64("power_w_end_network", self.power_state.device.watts());
        self.power_state.device.report(
            end,
            out,
            "energy_j_network",
            "wake_ups_switch",
            "switches_on",
        );
        self.power_state
            .device
            .report_active(end, out, "switch_active_s");
    }
}
