//! Messages on the wire: packets with a modeled size that travel hop by hop
//! along a source route, and the sending side of a host (its NIC).
//!
//! A host sends through [`Nic::send`]: the packet is serialised on the host's
//! link (FIFO with earlier packets), then crosses it; every switch on the
//! route forwards it the same way (`switch.rs`). In a flat network a packet
//! goes straight to its destination after one link latency.

use std::collections::BTreeMap;

use dcemu_topology::{Route, SimTime};
use serde::{Deserialize, Serialize};

use crate::ground_truth::SOURCES;
use crate::kernel::{ActorId, Ctx, ModelError};
use crate::task::{Task, TaskId};
use crate::world::World;

/// Every event of the model: a packet arriving, or one of an actor's timers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// A message on the wire, arriving at its next node.
    Packet(Packet),
    /// Tenant timer: time to submit the next task.
    Arrival,
    /// Server timer: the earliest running task should have finished its work
    /// (stale unless `generation` is the server's latest).
    Progress { generation: u64 },
    /// Server or switch timer: waking from sleep is done.
    WakeDone,
    /// Switch timer: the last queued transmission has left; go idle if nothing else is on.
    IdleCheck,
    /// Primary tenant timer: time to update its utilisation.
    PrimaryTick,
    /// Primary tenant timer: a reimage event.
    ReimageTick,
    /// Scheduler timer: a killed task goes back into the queue.
    Requeue(Task),
    /// Server timer: time to report to the scheduler.
    ReportTick,
    /// Server timer: a task whose memory could not all be given at start
    /// reaches its checkpoint and needs the rest (thesis §6.2.3.4).
    MemoryCheck { task: TaskId },
    /// Scheduler timer: a new application's profiling runs are done
    /// (Paragon §2.4); it can be classified and admitted.
    Profiled(Task),
    /// Scheduler timer: a migrating application's state has been copied;
    /// it resumes on the server whose slots were reserved for it (Paragon §3.4).
    Migrated { task: Task, server: ActorId },
    /// Scheduler timer: an ARQ switching time has come (Paragon §4.2).
    AdmissionTick,
    /// Server timer: the in-vivo reclassification of a task is done (Paragon §3.4).
    Reclassified { task: TaskId },
    /// Scheduler timer: the start of a time slot, when the slot stages
    /// schedule their queue (thesis §6.2.3.2).
    SlotTick,
    /// Name node timer: each data node may send its next block copy
    /// (harvesting §5.1's re-replication budget).
    Rereplicate,
    /// Name node timer at the end of the run: the last reads are due.
    ReadTick,
    /// Coordinating server timer: a distributed run's work is done
    /// (stale unless `generation` is the run's latest).
    DistFinish { run: TaskId, generation: u64 },
    /// Scheduler timer: profiles are ready; place the queued distributed runs.
    DistPlace,
    /// Scheduler timer: a decision that took virtual time (an external
    /// scheduler's `decision_latency`) is done; `body` leaves for `server`.
    Deferred { server: ActorId, body: Body },
}

impl Msg {
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Packet(p) => p.body.name(),
            Msg::Arrival => "arrival",
            Msg::Progress { .. } => "progress",
            Msg::WakeDone => "wake_done",
            Msg::IdleCheck => "idle_check",
            Msg::PrimaryTick => "primary_tick",
            Msg::ReimageTick => "reimage_tick",
            Msg::Requeue(_) => "requeue",
            Msg::MemoryCheck { .. } => "memory_check",
            Msg::ReportTick => "report_tick",
            Msg::Profiled(_) => "profiled",
            Msg::Migrated { .. } => "migrated",
            Msg::AdmissionTick => "admission_tick",
            Msg::Reclassified { .. } => "reclassified",
            Msg::SlotTick => "slot_tick",
            Msg::Rereplicate => "rereplicate",
            Msg::ReadTick => "read_tick",
            Msg::DistFinish { .. } => "dist_finish",
            Msg::DistPlace => "dist_place",
            Msg::Deferred { .. } => "deferred",
        }
    }
}

/// The message an actor got but has no use for: a wiring bug, reported with names.
pub(crate) fn unexpected(actor: &str, what: &str) -> ModelError {
    ModelError::Invariant(format!("{actor} cannot handle a `{what}` message"))
}

/// What a packet carries between hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body {
    /// Tenant → scheduler.
    Submit(Task),
    /// Scheduler → server: run this task in a free slot.
    Dispatch(Task),
    /// Server → scheduler: the slots that ran `task` are free again;
    /// `slots` is its threads, from which every ledger counts the slots it
    /// held there (`crate::slot_share`).
    Finished { task: TaskId, slots: u32 },
    /// Server → tenant: your task ran from `started_at` to `finished_at`.
    Done {
        task: TaskId,
        priority: u8,
        submitted_at: SimTime,
        started_at: SimTime,
        finished_at: SimTime,
    },
    /// Server → scheduler, every `scheduler.report_interval`: its state.
    Report(ServerReport),
    /// Primary tenant → its server: it now uses `cores` cores and wants
    /// `reserve` more kept free to spike into (harvesting §5.3).
    PrimaryLoad { cores: u32, reserve: u32 },
    /// Primary tenant → its server: the disk is reimaged (reformatted).
    Reimage,
    /// Server → scheduler: this task was killed to make room for the
    /// primary tenant; it needs another slot.
    Killed(Task),
    /// Scheduler → server: evict `victim` (if it still runs), and `also`
    /// (a task of more slots than one victim frees, issue 39), for a
    /// higher priority task and run `task` in the slots they free (thesis
    /// §6.2.3.3).
    Preempt {
        victim: TaskId,
        task: Task,
        also: Vec<TaskId>,
    },
    /// Server → scheduler: this task was evicted, for a higher priority
    /// task or for memory (thesis §6.2.3.3–4); it needs another slot.
    Evicted { task: Task, cause: EvictionCause },
    /// Scheduler → switch: reserve (or release) `bps` on the port toward `peer`
    /// for the flow of `task`.
    Reservation {
        task: TaskId,
        peer: u32,
        bps: u64,
        reserve: bool,
    },
    /// Server → scheduler, with each report: how fast each running
    /// application progresses (Paragon §3.4 monitors this).
    Rates(Vec<AppRate>),
    /// Scheduler → server: measure this task's interference profile in vivo,
    /// by injecting microbenchmarks next to it (Paragon §3.4).
    Reclassify { task: TaskId },
    /// Server → scheduler: the in-vivo profile, scores in hundredths of a
    /// point (0..=10000), per source of interference.
    Reclassified {
        task: TaskId,
        tolerated: [u16; SOURCES],
        caused: [u16; SOURCES],
    },
    /// Scheduler → server: stop this task and hand it back with its progress,
    /// to move it to another server (Paragon §3.4).
    Migrate { task: TaskId },
    /// Server → scheduler: the migrating task, `service_ns` now the work left.
    Migrating(Task),
    /// Server → name node: its disk was reimaged; every replica on it is
    /// gone (harvesting §3.3).
    Reimaged,
    /// Server → name node: its busy status flipped; a busy data node denies
    /// accesses and is not listed for replicas (harvesting §5.4).
    DataNodeBusy { busy: bool },
    /// Server → the coordinating server of a distributed run: unit
    /// `dist.unit` (task `task`) now suffers this pressure, in thousandths
    /// of a bubble score (ASPLOS'16 §3).
    DistPressure {
        dist: crate::distributed::DistRef,
        task: TaskId,
        pressure_milli: u32,
    },
    /// Coordinating server → a unit's server: the run is over; end `task`.
    DistDone { task: TaskId },
    /// Scheduler → a unit's server: attempt `attempt` of the unit's run is
    /// over (another of its units was killed); stop `task` and hand it back
    /// (`Killed`) to run again with its run.
    DistStop { task: TaskId, attempt: u32 },
    /// Scheduler → server, when an external program decides the servers'
    /// power (protocol v3): go to sleep if nothing runs or waits there
    /// (`sleep`), or wake up (thesis §4.2.4: the wake-up takes
    /// `power.server_wake` at peak power).
    Power { sleep: bool },
    /// Server → scheduler, under such a program: it is awake (a wake-up is
    /// over, or an order to sleep found it busy), having received `orders`
    /// power orders, so the scheduler's view of its power state follows
    /// it (unless an order is still on its way).
    Awake { orders: u64 },
}

/// One running application's progress as a server measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppRate {
    pub task: TaskId,
    /// Progress rate relative to running alone on its best configuration,
    /// in millionths (the IPS Paragon monitors, normalised).
    pub rate_ppm: u32,
    /// Work left, in ns at rate 1.
    pub left_ns: u64,
}

impl Body {
    pub fn name(&self) -> &'static str {
        match self {
            Body::Submit(_) => "submit",
            Body::Dispatch(_) => "dispatch",
            Body::Finished { .. } => "finished",
            Body::Done { .. } => "done",
            Body::Report(_) => "report",
            Body::PrimaryLoad { .. } => "primary_load",
            Body::Reimage => "reimage",
            Body::Killed(_) => "killed",
            Body::Preempt { .. } => "preempt",
            Body::Evicted { .. } => "evicted",
            Body::Reservation { reserve: true, .. } => "reserve",
            Body::Reservation { reserve: false, .. } => "release",
            Body::Rates(_) => "rates",
            Body::Reclassify { .. } => "reclassify",
            Body::Reclassified { .. } => "reclassified",
            Body::Migrate { .. } => "migrate",
            Body::Migrating(_) => "migrating",
            Body::Reimaged => "reimaged",
            Body::DataNodeBusy { .. } => "datanode_busy",
            Body::DistPressure { .. } => "dist_pressure",
            Body::DistDone { .. } => "dist_done",
            Body::DistStop { .. } => "dist_stop",
            Body::Power { sleep: true } => "power_sleep",
            Body::Power { sleep: false } => "power_wake",
            Body::Awake { .. } => "awake",
        }
    }

    /// Modeled size on the wire, in bytes (headers included). Submissions
    /// and dispatches carry a task description; acknowledgements are small.
    pub fn size_bytes(&self) -> u32 {
        match self {
            Body::Submit(_)
            | Body::Dispatch(_)
            | Body::Killed(_)
            | Body::Migrating(_)
            | Body::Evicted { .. } => 512,
            Body::Preempt { .. } => 576,
            Body::Rates(rates) => 64u32.saturating_add(16u32.saturating_mul(rates.len() as u32)),
            Body::Reclassify { .. } | Body::Migrate { .. } => 64,
            Body::Reclassified { .. } => 128,
            Body::PrimaryLoad { .. } | Body::Reimage | Body::Report(_) => 64,
            Body::Reimaged | Body::DataNodeBusy { .. } => 64,
            Body::DistPressure { .. } | Body::DistDone { .. } | Body::DistStop { .. } => 64,
            Body::Power { .. } | Body::Awake { .. } => 64,
            Body::Finished { .. } | Body::Reservation { .. } => 64,
            Body::Done { .. } => 128,
        }
    }
}

/// Why a server evicted a task (thesis §6.2.3.3–4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EvictionCause {
    /// For a higher priority task (the scheduler's `Preempt`).
    Priority,
    /// Its server ran out of memory (`scheduler.memory_eviction`).
    Memory,
}

/// What a server tells the scheduler about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerReport {
    pub free_slots: u32,
    pub running: u32,
    /// Cores in use by tasks and the primary tenant, of `cores`.
    pub busy_cores: u32,
    pub cores: u32,
    /// Cores the primary tenant uses and wants kept in reserve.
    pub primary_cores: u32,
    pub reserve_cores: u32,
    pub memory_used_mb: u64,
    pub memory_mb: u64,
}

/// A message in flight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packet {
    pub route: Route,
    /// Index in `route` of the node this packet is delivered to next.
    pub hop: u8,
    pub bytes: u32,
    pub sent_at: SimTime,
    pub body: Body,
}

impl Packet {
    pub fn src(&self) -> ActorId {
        ActorId(self.route.src())
    }

    pub fn dst(&self) -> ActorId {
        ActorId(self.route.dst())
    }

    /// The node after the one the packet is at, if any.
    pub fn next_node(&self) -> Option<u32> {
        self.route.nodes().get(self.hop as usize + 1).copied()
    }
}

/// A host's network interface: its one link into the network.
#[derive(Clone, Debug, Default)]
pub struct Nic {
    busy_until: SimTime,
    sent: u64,
}

impl Nic {
    /// Sends `body` to `dst` along a shortest path chosen by ECMP, packet
    /// by packet: two packets to the same host may take different paths,
    /// and one held by a sleeping switch may be overtaken.
    pub fn send(
        &mut self,
        world: &World,
        ctx: &mut Ctx<'_, Msg>,
        dst: ActorId,
        body: Body,
    ) -> Result<(), ModelError> {
        let key = (u64::from(ctx.me().0) << 40) ^ self.sent;
        self.send_keyed(world, ctx, dst, body, key)
    }

    /// Sends `body` to `dst` on the path ECMP gives this pair of hosts, as
    /// switches hash one connection onto one path: every packet this host
    /// sends to `dst` this way takes the same path, so they arrive in the
    /// order they were sent, sleeping switches or not.
    pub fn send_in_order(
        &mut self,
        world: &World,
        ctx: &mut Ctx<'_, Msg>,
        dst: ActorId,
        body: Body,
    ) -> Result<(), ModelError> {
        let key = (u64::from(ctx.me().0) << 40) ^ (u64::from(dst.0) << 1) ^ 1;
        self.send_keyed(world, ctx, dst, body, key)
    }

    fn send_keyed(
        &mut self,
        world: &World,
        ctx: &mut Ctx<'_, Msg>,
        dst: ActorId,
        body: Body,
        key: u64,
    ) -> Result<(), ModelError> {
        let me = ctx.me();
        let now = ctx.now();
        self.sent += 1;
        let bytes = body.size_bytes();
        let net = &world.network;
        let no_route = || {
            ModelError::Invariant(format!(
                "no route from {} to {}",
                world.name(me),
                world.name(dst)
            ))
        };
        let route = net.route(me.0, dst.0, key).ok_or_else(no_route)?;
        let next = route.nodes()[1];
        let latency = match net.flat_latency() {
            Some(l) => l,
            None => {
                let (_, port) = net.port_to(me.0, next).ok_or_else(no_route)?;
                let depart =
                    now.max(self.busy_until) + port.bandwidth.serialization_ns(u64::from(bytes));
                self.busy_until = depart;
                depart - now + port.latency
            }
        };
        let packet = Packet {
            route,
            hop: 1,
            bytes,
            sent_at: now,
            body,
        };
        ctx.send(ActorId(next), latency, Msg::Packet(packet))
    }
}

/// What hosts record about the packets they receive: how many took each
/// latency (a month of reports repeats a handful of latencies millions of
/// times).
#[derive(Clone, Debug, Default)]
pub struct Inbox {
    latencies_ns: BTreeMap<u64, u64>,
}

#[derive(Serialize)]
struct DeliverLog<'a> {
    from: &'a str,
    msg: &'static str,
    bytes: u32,
    hops: usize,
    latency_ns: u64,
}

impl Inbox {
    /// Accepts a packet addressed to this host: records its latency (and
    /// logs it with `output.packet_logs`), and returns what it carries.
    pub fn accept(
        &mut self,
        world: &World,
        ctx: &mut Ctx<'_, Msg>,
        p: Packet,
    ) -> Result<(ActorId, Body), ModelError> {
        if p.route.dst() != ctx.me().0 || p.hop as usize != p.route.hops() {
            return Err(ModelError::Invariant(format!(
                "{} got a packet for {} at hop {} of {}",
                world.name(ctx.me()),
                world.name(p.dst()),
                p.hop,
                p.route.hops()
            )));
        }
        let latency = ctx.now() - p.sent_at;
        *self.latencies_ns.entry(latency).or_insert(0) += 1;
        if world.packet_logs {
            ctx.log(
                "net_deliver",
                &DeliverLog {
                    from: world.name(p.src()),
                    msg: p.body.name(),
                    bytes: p.bytes,
                    hops: p.route.hops(),
                    latency_ns: latency,
                },
            );
        }
        Ok((p.src(), p.body))
    }

    pub fn finish(&self, out: &mut crate::kernel::Metrics) {
        out.tally("message_latency_us", 0.0, 0);
        for (&ns, &count) in &self.latencies_ns {
            out.tally("message_latency_us", ns as f64 / 1e3, count);
        }
    }
}
