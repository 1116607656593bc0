//! The energy stage's unit tests.

use crate::config::{CpuSharing, PlacementKind, SchedulerConfig};
use crate::kernel::ActorId;
use crate::task::{Task, TaskId};
use dcemu_topology::{Bandwidth, Network};
use std::collections::BTreeMap;
use std::collections::BTreeSet;

use super::paths::CoreCache;
use super::stage::EnergyStage;
use super::state::{Links, Upper};
use super::types::{EnergyServer, Flow, Placed};

use crate::kernel::actor_rng;
use crate::task::JobRef;
use dcemu_topology::{Attach, TopologyConfig, TopologyKind};

/// Four servers (ids 0–3) on two access switches of one pod under two
/// aggregation and two core switches: servers 0, 1 on one access
/// switch, 2, 3 on the other.
fn network() -> Network {
    let cfg = TopologyConfig {
        kind: TopologyKind::ThreeTier,
        core: 2,
        aggregation: 2,
        access: 2,
        ..TopologyConfig::default()
    };
    Network::build(&cfg, &[Attach::Rack; 4]).unwrap()
}

/// Four servers linked to every one of `access` access switches of one
/// pod (§4.2.3) under two aggregation and two core switches; `upper`:
/// the bandwidth of the links above the access layer, if not the
/// default.
fn mesh_network(access: u32, upper: Option<Bandwidth>) -> Network {
    let mut cfg = TopologyConfig {
        kind: TopologyKind::ThreeTier,
        core: 2,
        aggregation: 2,
        access,
        access_server: dcemu_topology::HostWiring::FullMesh,
        ..TopologyConfig::default()
    };
    if let Some(bw) = upper {
        cfg.aggregation_link = bw;
        cfg.core_link = bw;
    }
    Network::build(&cfg, &[Attach::Rack; 4]).unwrap()
}

fn stage(placement: PlacementKind, net: &Network) -> EnergyStage {
    let cfg = SchedulerConfig {
        placement,
        ..SchedulerConfig::default()
    };
    let servers = (0..4)
        .map(|i| EnergyServer {
            id: ActorId(i),
            slots: 1000,
            cores: 8,
            core_speed: 1.0,
            memory_mb: 64_000,
            idle_w: 162.0,
            peak_w: 301.0,
        })
        .collect();
    EnergyStage::new(&cfg, net, servers, true, (30_000_000_000, 0))
}

fn task(id: TaskId, cpu: f64, job: Option<JobRef>) -> Task {
    Task {
        id,
        tenant: ActorId(9),
        submitted_at: 0,
        service_ns: 60_000_000_000,
        flow_bps: 0,
        app: None,
        priority: 0,
        memory_mb: 1_000,
        cores: 1,
        first_start: None,
        total_ns: 60_000_000_000,
        solo_ns: 0,
        evictions: 0,
        priority_evictions: 0,
        cpu_ppm: (cpu * 1e6) as u32,
        job,
        dag: None,
        requested_ns: 0,
        dist: None,
        apart: None,
    }
}

fn job(id: TaskId, master: bool) -> Option<JobRef> {
    Some(JobRef {
        id,
        master,
        external_bytes: 10_000_000,
        internal_bytes: if master { 0 } else { 5_000_000 },
    })
}

fn servers_of(placed: &[Placed]) -> Vec<u32> {
    placed.iter().map(|p| p.server.0).collect()
}

#[test]
fn behind_a_slot_stage_it_places_where_allowed_and_an_eviction_trial_books_nothing() {
    let net = network();
    let mut s = stage(PlacementKind::Gems, &net);
    let mut rng = actor_rng(4, "t");
    let mut a = task(1, 0.1, None);
    a.flow_bps = 600_000_000;
    // only server 3 is a candidate (the slot stage's): it gets the
    // task, with a path from a core switch down to it
    let (i, route) = s.choose(&a, &|i| i == 3, &mut rng).unwrap();
    assert_eq!(i, 3);
    assert_eq!(route.nodes().last(), Some(&3));
    let flows = s.start(&net, &a, i, Some(route), &mut rng).unwrap();
    assert_eq!(flows.len(), 1);
    // 600 + 600 Mb/s exceed its 1 Gb/s link: not there...
    let mut b = task(2, 0.1, None);
    b.flow_bps = 600_000_000;
    assert!(s.choose(&b, &|i| i == 3, &mut rng).is_none());
    assert!(s.choose(&b, &|_| true, &mut rng).is_some_and(|c| c.0 != 3));
    // ...unless `a` is evicted; trying that changes nothing
    let state = |s: &EnergyStage| {
        (
            s.links.free.clone(),
            s.servers[3].tasks,
            s.servers[3].cpu_used,
            s.warm.clone(),
            s.switches.iter().map(|w| w.flows).collect::<Vec<_>>(),
        )
    };
    let before = state(&s);
    assert!(s.evictable(&b, 3, 1));
    assert_eq!(state(&s), before);
    // the eviction gives its flow back, and `b` takes the best path there
    assert_eq!(s.release(1, ActorId(3)), flows);
    assert_eq!(
        s.start(&net, &b, 3, None, &mut rng).map(|f| f.len()),
        Some(1)
    );
}

#[test]
fn gems_shares_an_awake_server_rather_than_waking_another() {
    let net = network();
    let mut s = stage(PlacementKind::Gems, &net);
    let mut rng = actor_rng(1, "t");
    s.enqueue(task(1, 0.1, None));
    assert_eq!(servers_of(&s.schedule(&net, &mut rng)), vec![0]);
    s.enqueue(task(2, 0.1, None));
    assert_eq!(
        servers_of(&s.schedule(&net, &mut rng)),
        vec![0],
        "the wake-up (30 s at peak power) costs more than sharing"
    );
}

#[test]
fn gems_spreads_once_sharing_slows_tasks_more_than_a_wake_up_costs() {
    let net = network();
    let mut s = stage(PlacementKind::Gems, &net);
    let mut rng = actor_rng(2, "t");
    for id in 0..40 {
        s.enqueue(task(id, 0.02, None));
    }
    let placed = s.schedule(&net, &mut rng);
    assert_eq!(placed.len(), 40);
    let on: BTreeSet<u32> = servers_of(&placed).into_iter().collect();
    assert!(on.len() > 1, "40 tasks on 8 cores run 5x slower: {on:?}");
}

#[test]
fn under_free_capacity_sharing_a_task_is_estimated_as_section_4_2_5_runs_it() {
    let net = network();
    let cfg = SchedulerConfig {
        placement: PlacementKind::Gems,
        cpu_sharing: CpuSharing::FreeCapacity,
        ..SchedulerConfig::default()
    };
    let servers = stage(PlacementKind::Gems, &net)
        .servers
        .iter()
        .map(|s| s.spec.clone())
        .collect();
    let mut s = EnergyStage::new(&cfg, &net, servers, true, (30_000_000_000, 0));
    // 60 s on one core of speed 1 is Δ = 7.5 s of the 8-core server;
    // requirement 0.5: alone it gets the whole server (7.5 s) ...
    let t = task(1, 0.5, None);
    assert!((s.exec_time(&t, &s.servers[0]) - 7.5).abs() < 1e-9);
    // ... beside another 0.5 only its requirement: Δ / 0.5 = 15 s
    s.servers[0].cpu_used = 0.5;
    s.servers[0].tasks = 1;
    assert!((s.exec_time(&t, &s.servers[0]) - 15.0).abs() < 1e-9);
    // eq. 6.2 would give a core each: 60 s either way
    let cores = stage(PlacementKind::Gems, &net);
    assert!((cores.exec_time(&t, &cores.servers[0]) - 60.0).abs() < 1e-9);
}

#[test]
fn capacity_and_memory_bound_a_server() {
    let net = network();
    let mut s = stage(PlacementKind::Beps, &net);
    let mut rng = actor_rng(3, "t");
    for id in 0..3 {
        s.enqueue(task(id, 0.4, None));
    }
    let placed = s.schedule(&net, &mut rng);
    assert_eq!(
        servers_of(&placed),
        vec![0, 0, 1],
        "0.4 + 0.4 fits, a third does not"
    );
    let mut big = task(9, 0.01, None);
    big.memory_mb = 70_000;
    s.enqueue(big);
    assert!(s.schedule(&net, &mut rng).is_empty());
    assert_eq!(s.queued(), 1, "it waits for the next slot");
}

#[test]
fn rrs_goes_round_the_servers() {
    let net = network();
    let mut s = stage(PlacementKind::Rrs, &net);
    let mut rng = actor_rng(4, "t");
    for id in 0..5 {
        s.enqueue(task(id, 0.1, None));
    }
    assert_eq!(servers_of(&s.schedule(&net, &mut rng)), vec![0, 1, 2, 3, 0]);
}

#[test]
fn workers_reach_their_master_and_every_flow_is_released() {
    let net = network();
    let mut s = stage(PlacementKind::Rrs, &net);
    let mut rng = actor_rng(5, "t");
    s.enqueue(task(10, 0.1, job(10, true)));
    s.enqueue(task(11, 0.1, job(10, false)));
    s.enqueue(task(12, 0.1, job(10, false)));
    let placed = s.schedule(&net, &mut rng);
    assert_eq!(servers_of(&placed), vec![0, 1, 2]);
    let flows: Vec<&Flow> = placed.iter().flat_map(|p| &p.flows).collect();
    assert_eq!(flows.len(), 5, "three external, two internal");
    let internal: Vec<&&Flow> = flows
        .iter()
        .filter(|f| f.route.dst() == 0 && f.route.src() != f.route.dst())
        .filter(|f| !net.is_switch(f.route.src()))
        .collect();
    assert_eq!(internal.len(), 2, "both workers to the master's server");
    let full = (s.links.free.clone(), s.links.mesh_free.clone());
    assert!(s.switches.iter().any(|sw| sw.flows > 0));
    for (id, server) in [(11, 1), (10, 0), (12, 2)] {
        s.release(id, ActorId(server));
    }
    assert!(s.switches.iter().all(|sw| sw.flows == 0));
    let fresh = Links::new(&net);
    let fresh = (fresh.free, fresh.mesh_free);
    assert_eq!(
        (s.links.free.clone(), s.links.mesh_free.clone()),
        fresh,
        "every link is free again"
    );
    assert_ne!(full, fresh);
}

#[test]
fn a_worker_placed_before_its_master_connects_when_the_master_lands() {
    let net = network();
    let mut s = stage(PlacementKind::Gems, &net);
    let mut rng = actor_rng(6, "t");
    s.enqueue(task(21, 0.1, job(20, false)));
    assert_eq!(s.schedule(&net, &mut rng)[0].flows.len(), 1);
    s.enqueue(task(20, 0.1, job(20, true)));
    let placed = s.schedule(&net, &mut rng);
    if placed[0].server == ActorId(0) {
        assert_eq!(placed[0].flows.len(), 1, "same server: no internal flow");
    } else {
        assert_eq!(placed[0].flows.len(), 2, "its own and the worker's");
    }
}

#[test]
fn gems_keeps_servers_linked_to_every_access_switch_on_one_of_them() {
    // §4.2.3: servers fully connected with the access layer. Tasks too
    // big to share a server land on different servers, yet their
    // flows all cross one access switch (already on, it is cheapest);
    // GEMS(noNetwork) draws paths at random and lights up both.
    let net = mesh_network(4, None);
    let accesses = |placement| {
        let mut s = stage(placement, &net);
        let mut rng = actor_rng(8, "t");
        for id in 0..4 {
            s.enqueue(task(id, 0.6, job(id, true)));
        }
        let placed = s.schedule(&net, &mut rng);
        assert_eq!(placed.len(), 4, "one per server");
        placed
            .iter()
            .flat_map(|p| &p.flows)
            .map(|f| f.route.nodes()[2])
            .collect::<BTreeSet<u32>>()
    };
    assert_eq!(accesses(PlacementKind::Gems).len(), 1);
    assert!(accesses(PlacementKind::GemsNonetwork).len() > 1);
}

#[test]
fn the_widest_path_bound_rejects_only_what_a_walk_over_every_path_would() {
    // Flows of ~270-800 Mb/s fill the 1 Gb/s links above the access
    // switches; the cached bound must answer as a walk over every
    // access switch's paths does, before and after flows leave.
    let net = mesh_network(4, Some(Bandwidth::from_bps(1_000_000_000)));
    let mut s = stage(PlacementKind::GemsNonetwork, &net);
    let mut rng = actor_rng(10, "t");
    let mut running: Vec<(TaskId, ActorId)> = Vec::new();
    let mut refused = 0;
    for round in 0..10u64 {
        for k in 0..4 {
            let id = round * 10 + k;
            let mut j = job(id, true);
            if let Some(j) = j.as_mut() {
                j.external_bytes = 2_000_000_000 + 1_000_000_000 * k;
            }
            s.enqueue(task(id, 0.05, j));
        }
        for p in s.schedule(&net, &mut rng) {
            running.push((p.task.id, p.server));
        }
        if round % 4 == 3 {
            for (id, server) in running.drain(..running.len() / 2) {
                s.release(id, server);
            }
        }
        for st in &s.servers {
            let me = st.spec.id.0;
            for bw in [1, 200_000_000, 500_000_000, 900_000_000] {
                let walk = s.mesh.iter().any(|acc| {
                    s.links.of(acc.id, me).is_some_and(|l| s.links.fits(l, bw))
                        && s.feasible_above(&acc.uppers, bw)
                });
                refused += usize::from(!walk);
                for _ in 0..2 {
                    assert_eq!(
                        s.has_path(st, bw),
                        walk,
                        "round {round}, server {me}, {bw} b/s"
                    );
                }
            }
        }
    }
    assert!(refused > 0, "the links above filled at some point");
}

#[test]
fn idle_mesh_access_switches_stand_for_their_group_as_a_full_scan_would() {
    // §4.2.3: every server linked to every access switch of its pod.
    // The path search ranks the access switches carrying flows and one
    // idle one; ranking all of them must pick the same, while flows
    // come and go.
    let net = mesh_network(6, None);
    let mut s = stage(PlacementKind::Gems, &net);
    let mut rng = actor_rng(9, "t");
    let mut running: Vec<(TaskId, ActorId)> = Vec::new();
    let mut warm_seen = 0;
    for round in 0..8u64 {
        for k in 0..3 {
            let id = round * 10 + k;
            // ~270 Mb/s each: a few fill an aggregation–access link
            let mut j = job(round * 10, k == 0);
            if let Some(j) = j.as_mut() {
                j.external_bytes = 250_000_000;
            }
            s.enqueue(task(id, 0.3, j));
        }
        for p in s.schedule(&net, &mut rng) {
            running.push((p.task.id, p.server));
        }
        if round % 3 == 2 {
            for (id, server) in running.drain(..running.len() / 2) {
                s.release(id, server);
            }
        }
        let pod_size = s.mesh.len();
        warm_seen = warm_seen.max(s.mesh_warm.len());
        assert!(s.mesh_candidates(0).count() <= s.mesh_warm.len() + 1);
        for st in &s.servers {
            for bw in [1, 300_000_000, 700_000_000, 1_000_000_000] {
                let me = st.spec.id.0;
                let all: Vec<(u32, &[Upper])> =
                    s.mesh.iter().map(|a| (a.id, a.uppers.as_slice())).collect();
                assert_eq!(all.len(), pod_size);
                let full = s.rank(&all, bw, 1.0, &mut BTreeMap::new());
                let expect = full
                    .first_reaching(|a| s.links.of(a, me).is_some_and(|l| s.links.fits(l, bw)))
                    .map(|r| [r.3, r.2, r.1, me]);
                let got = s.best_path(st, bw, 7.0, &mut CoreCache::default());
                assert_eq!(
                    got.map(|(_, r)| r.nodes().to_vec()),
                    expect.map(|n| n.to_vec()),
                    "round {round}, server {me}, {bw} b/s"
                );
            }
        }
    }
    assert!(warm_seen > 1, "flows lit up several access switches");
}

#[test]
fn pruned_candidates_choose_what_a_full_scan_would() {
    // Cold servers of one kind under cold switches are interchangeable:
    // the lowest-numbered stands for all, as a full scan's first
    // minimum would.
    let net = network();
    let mut s = stage(PlacementKind::Gems, &net);
    assert_eq!(
        s.candidates_among(&|_| true).collect::<Vec<_>>(),
        vec![0],
        "one kind, one pod: one stands for all"
    );
    let mut rng = actor_rng(7, "t");
    s.enqueue(task(1, 0.1, job(1, true)));
    s.schedule(&net, &mut rng);
    assert_eq!(
        s.candidates_among(&|_| true).collect::<Vec<_>>(),
        vec![0, 1, 2],
        "server 0 in use, 1 under a switch in use, 2 for the cold rest"
    );
    s.release(1, ActorId(0));
    assert_eq!(s.candidates_among(&|_| true).collect::<Vec<_>>(), vec![0]);
}
