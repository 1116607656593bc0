//! The datacenter network: who is linked to whom, with what capacity and
//! latency, and which paths a message can take.
//!
//! Two shapes exist:
//!
//! - `flat`: every actor one link away from every other, with no switches
//!   and no bandwidth limit; for studying scheduling without a network.
//! - `three-tier` (thesis §3.1, Figure 3.1; §4.2.3): core, aggregation and
//!   access (ToR) switches, servers below the access switches. Aggregation
//!   and access switches are grouped into pods; tiers are wired as a full
//!   mesh (every upper switch to every lower one, within the pod below the
//!   core) or a fan-out (each lower switch to one upper switch). Servers
//!   attach to access switches in contiguous blocks, like any other host in a
//!   rack (the scheduler runs in the first rack), or, with `access_server =
//!   "full-mesh"`, each server links to every access switch of its pod (§4.2.3:
//!   every switch is fully connected with the nodes of the layer below); hosts
//!   outside the datacenter (tenants) attach to core switches, where traffic
//!   enters it. The host–access full mesh is a rule, not a list of links
//!   ([`MeshPod`]): 1,250 servers under 512 access switches would otherwise
//!   be 640,000 links, each stored twice.
//!
//! Node ids are actor ids: hosts first, in the order given to
//! [`Network::build`], then switches (core, aggregation, access). Messages are source-routed: the
//! sender picks a shortest path ([`Network::route`]), and each switch forwards
//! along it. A [`PathChooser`] picks among equal-cost paths; policies that
//! care about paths (GEMS) enumerate them with [`Network::shortest_paths`].

use serde::{Deserialize, Serialize};

use crate::bandwidth::Bandwidth;
use crate::power::SwitchPower;
use crate::units::{Duration, SimTime};

/// `[topology]` in a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    #[serde(default)]
    pub kind: TopologyKind,
    /// Propagation latency of every link.
    #[serde(default = "default_link_latency")]
    pub link_latency: Duration,
    /// Time a switch takes to forward a message, before it queues for the egress port.
    #[serde(default = "default_switch_latency")]
    pub switch_latency: Duration,
    /// Switches per tier (three-tier only).
    #[serde(default)]
    pub core: u32,
    #[serde(default)]
    pub aggregation: u32,
    #[serde(default)]
    pub access: u32,
    /// Groups of aggregation and access switches (three-tier only).
    #[serde(default = "one")]
    pub pods: u32,
    #[serde(default)]
    pub core_aggregation: Wiring,
    #[serde(default)]
    pub aggregation_access: Wiring,
    /// How servers (and other hosts in racks) link to access switches.
    /// Left out of the scenario as run when it is the default, so that
    /// scenarios written before it keep their digests.
    #[serde(default, skip_serializing_if = "HostWiring::is_rack")]
    pub access_server: HostWiring,
    /// Capacity of core–aggregation links.
    #[serde(default = "ten_gbps")]
    pub core_link: Bandwidth,
    /// Capacity of aggregation–access links.
    #[serde(default = "one_gbps")]
    pub aggregation_link: Bandwidth,
    /// Capacity of access–server links.
    #[serde(default = "one_gbps")]
    pub access_link: Bandwidth,
    /// Capacity of the links of hosts outside the datacenter (tenants) to core switches.
    #[serde(default = "ten_gbps")]
    pub external_link: Bandwidth,
    #[serde(default = "core_power")]
    pub core_power: SwitchPower,
    #[serde(default = "aggregation_power")]
    pub aggregation_power: SwitchPower,
    #[serde(default = "access_power")]
    pub access_power: SwitchPower,
}

fn default_link_latency() -> Duration {
    Duration::from_micros(50)
}
fn default_switch_latency() -> Duration {
    Duration::from_micros(1)
}
fn one() -> u32 {
    1
}
fn ten_gbps() -> Bandwidth {
    Bandwidth::from_gbps(10)
}
fn one_gbps() -> Bandwidth {
    Bandwidth::from_gbps(1)
}
fn core_power() -> SwitchPower {
    SwitchPower::CORE
}
fn aggregation_power() -> SwitchPower {
    SwitchPower::AGGREGATION
}
fn access_power() -> SwitchPower {
    SwitchPower::ACCESS
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            kind: TopologyKind::default(),
            link_latency: default_link_latency(),
            switch_latency: default_switch_latency(),
            core: 0,
            aggregation: 0,
            access: 0,
            pods: 1,
            core_aggregation: Wiring::default(),
            aggregation_access: Wiring::default(),
            access_server: HostWiring::default(),
            core_link: ten_gbps(),
            aggregation_link: one_gbps(),
            access_link: one_gbps(),
            external_link: ten_gbps(),
            core_power: SwitchPower::CORE,
            aggregation_power: SwitchPower::AGGREGATION,
            access_power: SwitchPower::ACCESS,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// Every actor one link away from every other; no switches.
    #[default]
    Flat,
    /// Core, aggregation and access switches (thesis Figure 3.1).
    ThreeTier,
}

/// How two adjacent tiers are linked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wiring {
    /// Every upper switch to every lower switch (within a pod below the core).
    #[default]
    FullMesh,
    /// Each lower switch to one upper switch, round-robin.
    FanOut,
}

/// How hosts in racks link to access switches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostWiring {
    /// Each host to one access switch, in contiguous blocks: a rack.
    #[default]
    Rack,
    /// Each host to every access switch of its pod (hosts spread over the
    /// pods in contiguous blocks): thesis §4.2.3, every switch fully
    /// connected with the nodes of the layer below it.
    FullMesh,
}

impl HostWiring {
    pub fn is_rack(&self) -> bool {
        *self == HostWiring::Rack
    }
}

impl TopologyConfig {
    /// Value problems as `(field, problem)` relative to `[topology]`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.link_latency == Duration::ZERO {
            out.push((
                "link_latency",
                "must be greater than 0: it is the engine's lookahead and a zero lookahead \
                 would make windows empty"
                    .to_string(),
            ));
        }
        let tiers = [
            ("core", self.core),
            ("aggregation", self.aggregation),
            ("access", self.access),
        ];
        match self.kind {
            TopologyKind::Flat => {
                if self.access_server != HostWiring::Rack {
                    out.push((
                        "access_server",
                        "access switches exist only with kind = \"three-tier\"".into(),
                    ));
                }
                for (name, n) in tiers {
                    if n != 0 {
                        out.push((
                            name,
                            "switches exist only with kind = \"three-tier\"".into(),
                        ));
                    }
                }
            }
            TopologyKind::ThreeTier => {
                for (name, n) in tiers {
                    if n == 0 {
                        out.push((
                            name,
                            "a three-tier network needs at least one switch per tier".into(),
                        ));
                    }
                }
                if self.pods == 0 {
                    out.push(("pods", "must be at least 1".into()));
                } else {
                    if self.aggregation > 0 && self.aggregation < self.pods {
                        out.push((
                            "pods",
                            format!(
                                "{} pods need at least one aggregation switch each, there are {}",
                                self.pods, self.aggregation
                            ),
                        ));
                    }
                    if self.access > 0 && self.access < self.pods {
                        out.push((
                            "pods",
                            format!(
                                "{} pods need at least one access switch each, there are {}",
                                self.pods, self.access
                            ),
                        ));
                    }
                }
                if self.core_aggregation == Wiring::FanOut && self.core > 1 {
                    out.push((
                        "core_aggregation",
                        "fan-out below more than one core switch splits the network into parts \
                         that cannot reach each other; use full-mesh"
                            .into(),
                    ));
                }
            }
        }
        for (name, p) in [
            ("core_power", self.core_power),
            ("aggregation_power", self.aggregation_power),
            ("access_power", self.access_power),
        ] {
            if !p.problems().is_empty() {
                out.push((
                    name,
                    p.problems()
                        .into_iter()
                        .map(|(f, m)| format!("{f}: {m}"))
                        .collect::<Vec<_>>()
                        .join("; "),
                ));
            }
        }
        out
    }
}

/// Switch tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Core,
    Aggregation,
    Access,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Core => "core",
            Tier::Aggregation => "aggregation",
            Tier::Access => "access",
        }
    }
}

/// One direction of a link, as seen from the node that sends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub peer: u32,
    pub bandwidth: Bandwidth,
    pub latency: SimTime,
}

/// A switch of the network.
#[derive(Clone, Debug)]
pub struct SwitchInfo {
    pub id: u32,
    pub name: String,
    pub tier: Tier,
    pub pod: Option<u32>,
    pub power: SwitchPower,
}

/// The most nodes a path can have (hosts included).
pub const MAX_PATH: usize = 12;

/// A path through the network: node ids from the sender to the receiver.
///
/// Routes cross process boundaries inside packets, so decoding one checks
/// what [`Route::new`] guarantees (2 to [`MAX_PATH`] nodes, unused entries
/// 0): bytes from a peer cannot make [`Route::nodes`] index out of bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "RouteFields")]
pub struct Route {
    nodes: [u32; MAX_PATH],
    len: u8,
}

/// A [`Route`]'s fields as decoded, before they are checked.
#[derive(Deserialize)]
struct RouteFields {
    nodes: [u32; MAX_PATH],
    len: u8,
}

impl TryFrom<RouteFields> for Route {
    type Error = String;

    fn try_from(f: RouteFields) -> Result<Self, Self::Error> {
        let len = usize::from(f.len);
        if !(2..=MAX_PATH).contains(&len) {
            return Err(format!(
                "a route has 2 to {MAX_PATH} nodes, this one claims {len}"
            ));
        }
        if f.nodes[len..].iter().any(|&n| n != 0) {
            return Err(format!(
                "a route of {len} nodes has non-zero entries after its last node"
            ));
        }
        Ok(Route {
            nodes: f.nodes,
            len: f.len,
        })
    }
}

impl Route {
    pub fn new(path: &[u32]) -> Option<Self> {
        if path.len() < 2 || path.len() > MAX_PATH {
            return None;
        }
        let mut nodes = [0; MAX_PATH];
        nodes[..path.len()].copy_from_slice(path);
        Some(Route {
            nodes,
            len: path.len() as u8,
        })
    }

    pub fn nodes(&self) -> &[u32] {
        &self.nodes[..self.len as usize]
    }

    /// Links crossed.
    pub fn hops(&self) -> usize {
        self.len as usize - 1
    }

    pub fn src(&self) -> u32 {
        self.nodes[0]
    }

    pub fn dst(&self) -> u32 {
        self.nodes[self.len as usize - 1]
    }
}

/// Picks one of several equal-cost next hops.
pub trait PathChooser {
    /// Index into `candidates` (sorted by node id) for a message identified
    /// by `key`, leaving node `at`.
    fn choose(&self, at: u32, candidates: &[u32], key: u64) -> usize;
}

/// Equal-cost multi-path by hashing the message key with the node: messages
/// spread over paths, and the same key always takes the same path.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecmp;

impl PathChooser for Ecmp {
    fn choose(&self, at: u32, candidates: &[u32], key: u64) -> usize {
        let mut x = key ^ (u64::from(at) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        (x % candidates.len() as u64) as usize
    }
}

#[derive(Clone, Debug)]
enum Shape {
    Flat { latency: SimTime },
    ThreeTier(Box<Fabric>),
}

/// A pod whose rack hosts each link to every one of its access switches
/// (`access_server = "full-mesh"`; thesis §4.2.3: every switch fully
/// connected with the nodes of the layer below it), kept as a rule: any
/// access switch of the pod reaches any host of it, over a link of
/// `link`'s capacity and latency, without a [`Port`] stored per link.
///
/// Ports stay numbered as if the links were listed: a host's ports are the
/// pod's access switches in id order; an access switch's are the pod's
/// hosts in id order, then its listed (switch) ports.
#[derive(Clone, Debug)]
struct MeshPod {
    /// The pod's access switches: contiguous ids.
    access: std::ops::Range<u32>,
    /// The pod's hosts, sorted.
    hosts: Vec<u32>,
}

/// The switched part of a three-tier network.
#[derive(Clone, Debug)]
struct Fabric {
    first_switch: u32,
    switches: Vec<SwitchInfo>,
    /// Listed ports of every node (hosts and switches), by node id, sorted
    /// by peer; the host–access full mesh ([`MeshPod`]) is not listed.
    ports: Vec<Vec<Port>>,
    /// The full-mesh pods, by pod (empty with `access_server = "rack"`).
    mesh: Vec<MeshPod>,
    /// Bandwidth and latency of every link of a full-mesh pod.
    mesh_link: (Bandwidth, SimTime),
    /// For a host of full-mesh pod `p` and a destination `k` (a switch
    /// index, or `switches + q` for any host of full-mesh pod `q`), the
    /// pod's access switches nearest to it, in id order:
    /// `near[p * (switches + pods) + k]`, filled on first need. Every
    /// message a server sends starts with this choice.
    near: Vec<std::sync::OnceLock<Vec<u32>>>,
    /// Switch each host is attached to (by host id); its first access
    /// switch when it is linked to a whole pod.
    attach: Vec<u32>,
    /// Pod whose every access switch a host is linked to
    /// (`access_server = "full-mesh"`), by host id.
    pod_of_host: Vec<Option<u32>>,
    /// Pods of the fabric.
    pods: u32,
    /// Hops from each switch to the nearest access switch of each pod,
    /// `pod_dist[s * pods + p]` by switch index.
    pod_dist: Vec<u8>,
    /// Hops between switches, `dist[a * n + b]` by switch index.
    dist: Vec<u8>,
    switch_latency: SimTime,
}

/// The network of a run, built from [`TopologyConfig`].
#[derive(Clone, Debug)]
pub struct Network {
    shape: Shape,
    hosts: u32,
}

/// Where a host plugs into the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Outside the datacenter: linked to a core switch (round-robin).
    Core,
    /// In a rack: linked to an access switch; rack hosts are spread over the
    /// access switches in contiguous blocks, in id order.
    Rack,
}

/// Why a network could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error("the network is split: switch {0} cannot reach switch {1}")]
    Disconnected(String, String),
    #[error("too many nodes: {0}")]
    TooLarge(String),
}

impl Network {
    /// Builds the network for hosts with ids `0..hosts.len()`, attached as
    /// given; switches take the ids that follow.
    pub fn build(config: &TopologyConfig, attach: &[Attach]) -> Result<Self, NetworkError> {
        let hosts =
            u32::try_from(attach.len()).map_err(|_| NetworkError::TooLarge("hosts".into()))?;
        let shape = match config.kind {
            TopologyKind::Flat => Shape::Flat {
                latency: config.link_latency.as_nanos(),
            },
            TopologyKind::ThreeTier => Shape::ThreeTier(Box::new(Fabric::build(config, attach)?)),
        };
        Ok(Network { shape, hosts })
    }

    /// Hosts (non-switch actors) of the network.
    pub fn hosts(&self) -> u32 {
        self.hosts
    }

    /// Switches in id order (none in a flat network).
    pub fn switches(&self) -> &[SwitchInfo] {
        match &self.shape {
            Shape::Flat { .. } => &[],
            Shape::ThreeTier(f) => &f.switches,
        }
    }

    pub fn is_switch(&self, node: u32) -> bool {
        node >= self.hosts && (node - self.hosts) < self.switches().len() as u32
    }

    /// The smallest latency of any message between two distinct nodes: the
    /// lookahead `L` of the window protocol.
    pub fn min_latency(&self) -> SimTime {
        match &self.shape {
            Shape::Flat { latency } => *latency,
            Shape::ThreeTier(f) => {
                let mesh = f
                    .mesh
                    .iter()
                    .any(|m| !m.hosts.is_empty() && !m.access.is_empty())
                    .then_some(f.mesh_link.1);
                f.ports
                    .iter()
                    .flatten()
                    .map(|p| p.latency)
                    .chain(mesh)
                    .min()
                    .unwrap_or(1)
            }
        }
    }

    /// Forwarding latency of a switch.
    pub fn switch_latency(&self) -> SimTime {
        match &self.shape {
            Shape::Flat { .. } => 0,
            Shape::ThreeTier(f) => f.switch_latency,
        }
    }

    /// Ports of a node, sorted by peer (none in a flat network), those of a
    /// full-mesh pod's links included: their index in this order is the
    /// one [`Network::port_to`] gives.
    pub fn ports(&self, node: u32) -> impl Iterator<Item = Port> + '_ {
        type Parts<'a> = (
            std::ops::Range<u32>,
            &'a [u32],
            &'a [Port],
            (Bandwidth, SimTime),
        );
        let (switches, hosts, listed, (bandwidth, latency)): Parts<'_> = match &self.shape {
            Shape::Flat { latency } => (0..0, &[], &[], (Bandwidth::from_bps(0), *latency)),
            Shape::ThreeTier(f) => {
                let listed = f.listed(node);
                match f.mesh_of(node, self.hosts) {
                    Some((pod, true)) => (pod.access.clone(), &[], listed, f.mesh_link),
                    Some((pod, false)) => (0..0, &pod.hosts, listed, f.mesh_link),
                    None => (0..0, &[], listed, f.mesh_link),
                }
            }
        };
        switches
            .chain(hosts.iter().copied())
            .map(move |peer| Port {
                peer,
                bandwidth,
                latency,
            })
            .chain(listed.iter().copied())
    }

    /// How many ports a node has (see [`Network::ports`]).
    pub fn port_count(&self, node: u32) -> usize {
        match &self.shape {
            Shape::Flat { .. } => 0,
            Shape::ThreeTier(f) => f.mesh_ports(node, self.hosts) + f.listed(node).len(),
        }
    }

    /// How many of a node's first ports are links of a full-mesh pod
    /// (thesis §4.2.3), given by rule rather than listed; the rest follow.
    pub fn mesh_ports(&self, node: u32) -> usize {
        match &self.shape {
            Shape::Flat { .. } => 0,
            Shape::ThreeTier(f) => f.mesh_ports(node, self.hosts),
        }
    }

    /// The port of `node` that leads to `peer`, with its index.
    pub fn port_to(&self, node: u32, peer: u32) -> Option<(usize, Port)> {
        let Shape::ThreeTier(f) = &self.shape else {
            return None;
        };
        let listed = f.listed(node);
        let found = |skip: usize| {
            listed
                .binary_search_by_key(&peer, |p| p.peer)
                .ok()
                .map(|i| (skip + i, listed[i]))
        };
        let mesh = |i: usize| {
            let (bandwidth, latency) = f.mesh_link;
            Some((
                i,
                Port {
                    peer,
                    bandwidth,
                    latency,
                },
            ))
        };
        match f.mesh_of(node, self.hosts) {
            Some((pod, true)) if pod.access.contains(&peer) => {
                mesh((peer - pod.access.start) as usize)
            }
            Some((pod, true)) => found(pod.access.len()),
            Some((pod, false)) if peer < self.hosts => match pod.hosts.binary_search(&peer) {
                Ok(i) => mesh(i),
                Err(_) => found(pod.hosts.len()),
            },
            Some((pod, false)) => found(pod.hosts.len()),
            None => found(0),
        }
    }

    /// For every node, each neighbour it can send to and the least latency
    /// of that hop (the link's, plus the forwarding latency when the sender
    /// is a switch), or `None` in a flat network, where every node reaches
    /// every other in one link. Lets the engine see how many hops separate
    /// two groups of actors.
    pub fn least_hop_latencies(&self) -> Option<Vec<Vec<(u32, SimTime)>>> {
        let Shape::ThreeTier(f) = &self.shape else {
            return None;
        };
        Some(
            (0..f.ports.len() as u32)
                .map(|node| {
                    let forward = if self.is_switch(node) {
                        f.switch_latency
                    } else {
                        0
                    };
                    self.ports(node)
                        .map(|p| (p.peer, p.latency.saturating_add(forward)))
                        .collect()
                })
                .collect(),
        )
    }

    /// Latency of the single link between two nodes in a flat network.
    pub fn flat_latency(&self) -> Option<SimTime> {
        match &self.shape {
            Shape::Flat { latency } => Some(*latency),
            Shape::ThreeTier(_) => None,
        }
    }

    /// Nodes one step closer to `dst` from `at`, sorted by id.
    pub fn next_hops(&self, at: u32, dst: u32) -> Vec<u32> {
        self.next_hops_of(at, dst).into_owned()
    }

    /// [`Network::next_hops`], borrowed where it is kept (a full-mesh
    /// host's nearest access switches).
    fn next_hops_of(&self, at: u32, dst: u32) -> std::borrow::Cow<'_, [u32]> {
        match &self.shape {
            Shape::Flat { .. } => {
                if at == dst {
                    Vec::new().into()
                } else {
                    vec![dst].into()
                }
            }
            Shape::ThreeTier(f) => f.next_hops(at, dst, self.hosts),
        }
    }

    /// A shortest path from `src` to `dst`, choosing among equal-cost next
    /// hops with `chooser` (the same `key` always gives the same path).
    pub fn route_with(
        &self,
        src: u32,
        dst: u32,
        chooser: &dyn PathChooser,
        key: u64,
    ) -> Option<Route> {
        let mut path = vec![src];
        let mut at = src;
        while at != dst {
            let next = self.next_hops_of(at, dst);
            if next.is_empty() {
                return None;
            }
            at = next[chooser.choose(at, &next, key)];
            path.push(at);
        }
        Route::new(&path)
    }

    /// [`Network::route_with`] with [`Ecmp`].
    pub fn route(&self, src: u32, dst: u32, key: u64) -> Option<Route> {
        self.route_with(src, dst, &Ecmp, key)
    }

    /// Every shortest path from `src` to `dst`, in lexicographic order of node ids.
    pub fn shortest_paths(&self, src: u32, dst: u32) -> Vec<Route> {
        let mut out = Vec::new();
        let mut path = vec![src];
        self.extend_paths(&mut path, dst, &mut out);
        out
    }

    fn extend_paths(&self, path: &mut Vec<u32>, dst: u32, out: &mut Vec<Route>) {
        let at = *path.last().unwrap_or(&dst);
        if at == dst {
            out.extend(Route::new(path));
            return;
        }
        for &next in self.next_hops_of(at, dst).iter() {
            path.push(next);
            self.extend_paths(path, dst, out);
            path.pop();
        }
    }

    /// Latency of `bytes` along `route` on an empty network: serialisation
    /// and propagation on every link plus forwarding in every switch.
    pub fn empty_latency(&self, route: &Route, bytes: u64) -> SimTime {
        if let Some(l) = self.flat_latency() {
            return l;
        }
        let nodes = route.nodes();
        let mut total = 0;
        for w in nodes.windows(2) {
            if let Some((_, port)) = self.port_to(w[0], w[1]) {
                total += port.bandwidth.serialization_ns(bytes) + port.latency;
            }
            if self.is_switch(w[0]) {
                total += self.switch_latency();
            }
        }
        total
    }
}

impl Fabric {
    fn build(c: &TopologyConfig, attach_to: &[Attach]) -> Result<Self, NetworkError> {
        let hosts = attach_to.len() as u32;
        let counts = [
            (Tier::Core, c.core),
            (Tier::Aggregation, c.aggregation),
            (Tier::Access, c.access),
        ];
        let total_switches: u32 = counts.iter().map(|(_, n)| n).sum();
        let nodes = hosts
            .checked_add(total_switches)
            .ok_or_else(|| NetworkError::TooLarge("switches".into()))? as usize;
        let first_core = hosts;
        let first_agg = first_core + c.core;
        let first_acc = first_agg + c.aggregation;
        let pod_of =
            |i: u32, n: u32| (u64::from(i) * u64::from(c.pods) / u64::from(n.max(1))) as u32;
        let mut switches = Vec::with_capacity(total_switches as usize);
        for (tier, n) in counts {
            let width = n.saturating_sub(1).to_string().len().max(3);
            let power = match tier {
                Tier::Core => c.core_power,
                Tier::Aggregation => c.aggregation_power,
                Tier::Access => c.access_power,
            };
            for i in 0..n {
                switches.push(SwitchInfo {
                    id: hosts + switches.len() as u32,
                    name: format!("switch-{}-{i:0width$}", tier.name()),
                    tier,
                    pod: (tier != Tier::Core).then(|| pod_of(i, n)),
                    power,
                });
            }
        }
        let latency = c.link_latency.as_nanos();
        let mut ports: Vec<Vec<Port>> = vec![Vec::new(); nodes];
        let mut link = |a: u32, b: u32, bandwidth: Bandwidth| {
            ports[a as usize].push(Port {
                peer: b,
                bandwidth,
                latency,
            });
            ports[b as usize].push(Port {
                peer: a,
                bandwidth,
                latency,
            });
        };
        // core – aggregation
        for a in 0..c.aggregation {
            match c.core_aggregation {
                Wiring::FullMesh => {
                    (0..c.core).for_each(|k| link(first_core + k, first_agg + a, c.core_link))
                }
                Wiring::FanOut => link(first_core + a % c.core, first_agg + a, c.core_link),
            }
        }
        // aggregation – access, within pods
        let aggs_in_pod = |pod: u32| -> Vec<u32> {
            (0..c.aggregation)
                .filter(|&a| pod_of(a, c.aggregation) == pod)
                .collect()
        };
        let mut seen_in_pod = vec![0u32; c.pods as usize];
        for s in 0..c.access {
            let pod = pod_of(s, c.access);
            let aggs = aggs_in_pod(pod);
            match c.aggregation_access {
                Wiring::FullMesh => aggs
                    .iter()
                    .for_each(|&a| link(first_agg + a, first_acc + s, c.aggregation_link)),
                Wiring::FanOut => {
                    let k = seen_in_pod[pod as usize] as usize % aggs.len().max(1);
                    if let Some(&a) = aggs.get(k) {
                        link(first_agg + a, first_acc + s, c.aggregation_link);
                    }
                }
            }
            seen_in_pod[pod as usize] += 1;
        }
        // hosts
        let mut attach = Vec::with_capacity(hosts as usize);
        let mut pod_of_host = vec![None; hosts as usize];
        // full-mesh pods: their access switches (contiguous, as pod_of
        // grows with the index) and, below, their hosts
        let mut mesh: Vec<MeshPod> = Vec::new();
        if c.access_server == HostWiring::FullMesh {
            mesh = (0..c.pods.max(1))
                .map(|pod| {
                    let of_pod: Vec<u32> = (0..c.access)
                        .filter(|&s| pod_of(s, c.access) == pod)
                        .collect();
                    let access = match (of_pod.first(), of_pod.last()) {
                        (Some(a), Some(b)) => first_acc + a..first_acc + b + 1,
                        _ => first_acc..first_acc,
                    };
                    MeshPod {
                        access,
                        hosts: Vec::new(),
                    }
                })
                .collect();
        }
        let racked = attach_to.iter().filter(|&&a| a == Attach::Rack).count() as u64;
        let (mut core_hosts, mut rack_hosts) = (0u32, 0u64);
        for (h, kind) in attach_to.iter().enumerate() {
            let (sw, bandwidth) = match kind {
                Attach::Core => {
                    core_hosts += 1;
                    (first_core + (core_hosts - 1) % c.core, c.external_link)
                }
                Attach::Rack if c.access_server == HostWiring::FullMesh => {
                    let pod = (rack_hosts * u64::from(c.pods) / racked.max(1)) as u32;
                    rack_hosts += 1;
                    // linked to every access switch of its pod, by rule
                    let first = match mesh.get_mut(pod as usize) {
                        Some(m) => {
                            m.hosts.push(h as u32);
                            m.access.clone().next()
                        }
                        None => None,
                    };
                    pod_of_host[h] = Some(pod);
                    attach.push(first.unwrap_or(first_acc));
                    continue;
                }
                Attach::Rack => {
                    let acc = (rack_hosts * u64::from(c.access) / racked.max(1)) as u32;
                    rack_hosts += 1;
                    (first_acc + acc, c.access_link)
                }
            };
            link(h as u32, sw, bandwidth);
            attach.push(sw);
        }
        for p in &mut ports {
            p.sort_by_key(|port| port.peer);
        }
        let n = total_switches as usize;
        let mut dist = vec![u8::MAX; n * n];
        for from in 0..n {
            let row = &mut dist[from * n..(from + 1) * n];
            row[from] = 0;
            let mut frontier = vec![from as u32];
            let mut d = 0u8;
            while !frontier.is_empty() {
                d = d
                    .checked_add(1)
                    .ok_or_else(|| NetworkError::TooLarge("network diameter".into()))?;
                let mut next = Vec::new();
                for s in frontier {
                    let own = &ports[(hosts + s) as usize];
                    // sorted by peer: hosts first, then switches
                    for p in &own[own.partition_point(|p| p.peer < hosts)..] {
                        {
                            let j = (p.peer - hosts) as usize;
                            if row[j] == u8::MAX {
                                row[j] = d;
                                next.push(j as u32);
                            }
                        }
                    }
                }
                frontier = next;
            }
            if let Some(j) = row.iter().position(|&x| x == u8::MAX) {
                return Err(NetworkError::Disconnected(
                    switches[from].name.clone(),
                    switches[j].name.clone(),
                ));
            }
        }
        let pods = c.pods.max(1);
        let mut pod_dist = vec![u8::MAX; n * pods as usize];
        for from in 0..n {
            for s in 0..c.access {
                let p = pod_of(s, c.access) as usize;
                let d = dist[from * n + (first_acc - hosts + s) as usize];
                let slot = &mut pod_dist[from * pods as usize + p];
                *slot = (*slot).min(d);
            }
        }
        let near = (0..mesh.len() * (n + pods as usize))
            .map(|_| std::sync::OnceLock::new())
            .collect();
        Ok(Fabric {
            first_switch: hosts,
            switches,
            ports,
            mesh,
            mesh_link: (c.access_link, latency),
            near,
            attach,
            pod_of_host,
            pods,
            pod_dist,
            dist,
            switch_latency: c.switch_latency.as_nanos(),
        })
    }

    /// Listed ports of a node.
    fn listed(&self, node: u32) -> &[Port] {
        self.ports.get(node as usize).map_or(&[], Vec::as_slice)
    }

    /// The full-mesh pod of a node, and whether the node is a host of it
    /// (else one of its access switches).
    fn mesh_of(&self, node: u32, hosts: u32) -> Option<(&MeshPod, bool)> {
        if self.mesh.is_empty() {
            return None;
        }
        if node < hosts {
            let pod = (*self.pod_of_host.get(node as usize)?)?;
            return Some((self.mesh.get(pod as usize)?, true));
        }
        let sw = self.switches.get((node - self.first_switch) as usize)?;
        match (sw.tier, sw.pod) {
            (Tier::Access, Some(pod)) => Some((self.mesh.get(pod as usize)?, false)),
            _ => None,
        }
    }

    /// How many ports of a node are full-mesh links (they come first).
    fn mesh_ports(&self, node: u32, hosts: u32) -> usize {
        match self.mesh_of(node, hosts) {
            Some((pod, true)) => pod.access.len(),
            Some((pod, false)) => pod.hosts.len(),
            None => 0,
        }
    }

    fn next_hops(&self, at: u32, dst: u32, hosts: u32) -> std::borrow::Cow<'_, [u32]> {
        if at == dst || dst >= hosts + self.switches.len() as u32 {
            return Vec::new().into();
        }
        if at < hosts {
            let Some(pod) = self.pod_of_host[at as usize] else {
                return vec![self.attach[at as usize]].into();
            };
            // linked to every access switch of its pod: those nearest to
            // dst, which depend only on where dst is delivered from
            let n = self.switches.len();
            let target = match self.pod_of_host.get(dst as usize) {
                Some(Some(q)) => n + *q as usize,
                Some(None) => (self.attach[dst as usize] - self.first_switch) as usize,
                None => (dst - self.first_switch) as usize,
            };
            let Some(cell) = self
                .near
                .get(pod as usize * (n + self.pods as usize) + target)
            else {
                return Vec::new().into();
            };
            return cell
                .get_or_init(|| {
                    let access = self
                        .mesh
                        .get(pod as usize)
                        .map_or(0..0, |m| m.access.clone());
                    let best = access
                        .clone()
                        .map(|a| self.dist_to(a, dst, hosts))
                        .min()
                        .unwrap_or(u8::MAX);
                    access
                        .filter(|&a| self.dist_to(a, dst, hosts) == best)
                        .collect()
                })
                .as_slice()
                .into();
        }
        if self.dist_to(at, dst, hosts) == 0 {
            return vec![dst].into();
        }
        let here = self.dist_to(at, dst, hosts);
        let ports = &self.ports[at as usize];
        // sorted by peer: hosts first, then switches (full-mesh hosts are
        // not listed, and are never a step on the way to another node)
        ports[ports.partition_point(|p| p.peer < hosts)..]
            .iter()
            .filter(|p| self.dist_to(p.peer, dst, hosts).saturating_add(1) == here)
            .map(|p| p.peer)
            .collect::<Vec<u32>>()
            .into()
    }

    /// Hops from switch `at` to the switch (or, for a host linked to a
    /// whole pod, the nearest switch) that delivers to `dst`.
    fn dist_to(&self, at: u32, dst: u32, hosts: u32) -> u8 {
        let n = self.switches.len();
        let a = (at - self.first_switch) as usize;
        if dst < hosts {
            if let Some(pod) = self.pod_of_host[dst as usize] {
                return self.pod_dist[a * self.pods as usize + pod as usize];
            }
            let t = (self.attach[dst as usize] - self.first_switch) as usize;
            return self.dist[a * n + t];
        }
        self.dist[a * n + (dst - self.first_switch) as usize]
    }
}

/// Bandwidth reserved on links for flows (thesis §4.2.2: traffic of a task to
/// the outside world and to its master), per direction of each link.
///
/// A reservation is all or nothing: it fits on every link of its route or is
/// refused without changing anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reservations {
    /// Reserved bits/s per (node, port index).
    reserved: std::collections::BTreeMap<(u32, usize), u64>,
}

/// A reservation that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("link {from}→{to} has {free_bps} b/s free, the flow needs {needed_bps} b/s")]
pub struct Refused {
    pub from: u32,
    pub to: u32,
    pub free_bps: u64,
    pub needed_bps: u64,
}

impl Reservations {
    /// Reserves `bandwidth` on every link of `route`, or nothing.
    pub fn reserve(
        &mut self,
        net: &Network,
        route: &Route,
        bandwidth: Bandwidth,
    ) -> Result<(), Refused> {
        let links = Self::links(net, route);
        for &(from, to, port, capacity) in &links {
            let used = self.reserved.get(&(from, port)).copied().unwrap_or(0);
            let free = capacity.bps().saturating_sub(used);
            if free < bandwidth.bps() {
                return Err(Refused {
                    from,
                    to,
                    free_bps: free,
                    needed_bps: bandwidth.bps(),
                });
            }
        }
        for (from, _, port, _) in links {
            *self.reserved.entry((from, port)).or_insert(0) += bandwidth.bps();
        }
        Ok(())
    }

    /// Releases a reservation made with [`Reservations::reserve`].
    pub fn release(&mut self, net: &Network, route: &Route, bandwidth: Bandwidth) {
        for (from, _, port, _) in Self::links(net, route) {
            if let Some(r) = self.reserved.get_mut(&(from, port)) {
                *r = r.saturating_sub(bandwidth.bps());
                if *r == 0 {
                    self.reserved.remove(&(from, port));
                }
            }
        }
    }

    /// Reserved bits/s on the port of `node` toward `peer`.
    pub fn on_link(&self, net: &Network, node: u32, peer: u32) -> u64 {
        net.port_to(node, peer)
            .and_then(|(i, _)| self.reserved.get(&(node, i)).copied())
            .unwrap_or(0)
    }

    /// Whether no bandwidth is reserved anywhere.
    pub fn is_empty(&self) -> bool {
        self.reserved.is_empty()
    }

    fn links(net: &Network, route: &Route) -> Vec<(u32, u32, usize, Bandwidth)> {
        route
            .nodes()
            .windows(2)
            .filter_map(|w| {
                net.port_to(w[0], w[1])
                    .map(|(i, p)| (w[0], w[1], i, p.bandwidth))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
