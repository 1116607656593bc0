use super::*;

fn three_tier(core: u32, aggregation: u32, access: u32, pods: u32) -> TopologyConfig {
    TopologyConfig {
        kind: TopologyKind::ThreeTier,
        core,
        aggregation,
        access,
        pods,
        ..TopologyConfig::default()
    }
}

/// One host outside the datacenter, then `servers` servers in racks.
fn hosts(servers: usize) -> Vec<Attach> {
    let mut h = vec![Attach::Core];
    h.extend(std::iter::repeat_n(Attach::Rack, servers));
    h
}

/// Thesis Table 3.2, small DC: 2 core, 4 aggregation, 52 access, 125 servers;
/// one host outside (a tenant).
fn small_dc() -> Network {
    Network::build(&three_tier(2, 4, 52, 2), &hosts(125)).unwrap()
}

fn server(i: u32) -> u32 {
    1 + i
}

#[test]
fn builds_the_thesis_datacenters() {
    let net = small_dc();
    let count = |t: Tier| net.switches().iter().filter(|s| s.tier == t).count();
    assert_eq!(
        (
            count(Tier::Core),
            count(Tier::Aggregation),
            count(Tier::Access)
        ),
        (2, 4, 52)
    );
    assert_eq!(net.switches()[0].id, 126);
    assert_eq!(net.switches()[0].name, "switch-core-000");
    assert_eq!(net.switches()[6 + 41].name, "switch-access-041");
    let large = Network::build(&three_tier(2, 16, 512, 8), &hosts(1250)).unwrap();
    assert_eq!(large.switches().len(), 530);
    let gems = Network::build(&three_tier(8, 16, 512, 8), &hosts(1250)).unwrap();
    assert_eq!(gems.switches().len(), 536);
    // full mesh: every core switch links to every aggregation switch
    let core = &gems.switches()[0];
    assert_eq!(
        gems.port_count(core.id),
        16 + 1,
        "16 aggregation switches and the scheduler"
    );
    // every server has exactly one link, to an access switch
    for s in 0..1250 {
        let ports: Vec<Port> = gems.ports(1 + s).collect();
        assert_eq!(ports.len(), 1);
        assert!(gems.switches()[(ports[0].peer - 1251) as usize].tier == Tier::Access);
    }
}

#[test]
fn servers_in_different_pods_are_five_switches_apart() {
    let net = small_dc();
    let (a, b) = (server(0), server(124));
    let paths = net.shortest_paths(a, b);
    // 1 aggregation up (2 in pod), 2 cores, 2 aggregation down: 2 * 2 * 2
    assert_eq!(paths.len(), 8);
    for p in &paths {
        let tiers: Vec<Tier> = p.nodes()[1..p.nodes().len() - 1]
            .iter()
            .map(|&n| net.switches()[(n - 126) as usize].tier)
            .collect();
        assert_eq!(
            tiers,
            [
                Tier::Access,
                Tier::Aggregation,
                Tier::Core,
                Tier::Aggregation,
                Tier::Access
            ]
        );
    }
    let mut sorted = paths.clone();
    sorted.sort_by(|x, y| x.nodes().cmp(y.nodes()));
    assert_eq!(sorted, paths, "paths come in a deterministic order");
    let chosen = net.route(a, b, 42).unwrap();
    assert!(paths.contains(&chosen));
    assert_eq!(chosen, net.route(a, b, 42).unwrap(), "same key, same path");
    let spread: std::collections::BTreeSet<_> =
        (0..64).map(|k| net.route(a, b, k).unwrap()).collect();
    assert!(spread.len() > 4, "ECMP spreads keys over paths");
}

#[test]
fn nearby_servers_take_short_paths() {
    let net = small_dc();
    // servers 0 and 1 share access switch 0 (125 servers over 52 switches)
    assert_eq!(net.shortest_paths(server(0), server(1))[0].hops(), 2);
    // servers 0 and 5 are in the same pod under different access switches
    let p = &net.shortest_paths(server(0), server(5));
    assert_eq!(p.len(), 2, "two aggregation switches in the pod");
    assert_eq!(p[0].hops(), 4);
    // the tenant hangs off core 0: down through aggregation and access
    assert_eq!(net.shortest_paths(0, server(7))[0].hops(), 4);
}

#[test]
fn empty_network_latency_is_the_sum_of_per_hop_terms() {
    let net = small_dc();
    let route = net.route(server(0), server(124), 1).unwrap();
    let bytes = 1_000;
    // access-server 1 Gb/s, aggregation-access 1 Gb/s, core-aggregation 10 Gb/s
    let ser = |gbps: u64| Bandwidth::from_gbps(gbps).serialization_ns(bytes);
    let expected = 6 * 50_000 + 5 * 1_000 + 2 * ser(1) + 2 * ser(1) + 2 * ser(10);
    assert_eq!(net.empty_latency(&route, bytes), expected);
    assert_eq!(net.min_latency(), 50_000);
}

#[test]
fn fan_out_links_each_access_switch_to_one_aggregation_switch() {
    let cfg = TopologyConfig {
        aggregation_access: Wiring::FanOut,
        ..three_tier(2, 4, 8, 2)
    };
    let net = Network::build(&cfg, &hosts(8)).unwrap();
    for s in net.switches().iter().filter(|s| s.tier == Tier::Access) {
        assert_eq!(
            net.port_count(s.id),
            2,
            "one aggregation uplink and one server"
        );
    }
    assert_eq!(
        net.shortest_paths(1, 8).len(),
        2,
        "one path per core switch"
    );
}

#[test]
fn invalid_shapes_are_refused() {
    let fan = TopologyConfig {
        core_aggregation: Wiring::FanOut,
        ..three_tier(2, 4, 8, 2)
    };
    assert!(fan.problems().iter().any(|(f, _)| *f == "core_aggregation"));
    assert!(
        three_tier(0, 4, 8, 2)
            .problems()
            .iter()
            .any(|(f, _)| *f == "core")
    );
    assert!(
        three_tier(2, 1, 8, 2)
            .problems()
            .iter()
            .any(|(f, _)| *f == "pods")
    );
    let flat_with_switches = TopologyConfig {
        core: 2,
        ..TopologyConfig::default()
    };
    assert!(
        flat_with_switches
            .problems()
            .iter()
            .any(|(f, _)| *f == "core")
    );
    assert!(three_tier(2, 4, 52, 2).problems().is_empty());
}

#[test]
fn reservations_fit_or_are_refused_whole_and_release_to_zero() {
    let net = small_dc();
    let route = net.route(0, server(3), 7).unwrap();
    let mut r = Reservations::default();
    r.reserve(&net, &route, Bandwidth::from_mbps(600)).unwrap();
    let nodes = route.nodes();
    assert_eq!(r.on_link(&net, nodes[0], nodes[1]), 600_000_000);
    let before = r.clone();
    // the first 1 Gb/s link on the way (aggregation → access) has 400 Mb/s left
    let err = r
        .reserve(&net, &route, Bandwidth::from_mbps(500))
        .unwrap_err();
    assert_eq!(
        (err.from, err.to, err.free_bps),
        (nodes[2], nodes[3], 400_000_000)
    );
    assert_eq!(r, before, "a refused reservation changes nothing");
    r.reserve(&net, &route, Bandwidth::from_mbps(400)).unwrap();
    r.release(&net, &route, Bandwidth::from_mbps(600));
    r.release(&net, &route, Bandwidth::from_mbps(400));
    assert!(r.is_empty());
}

#[test]
fn flat_networks_have_one_link_between_any_two_actors() {
    let net = Network::build(&TopologyConfig::default(), &[Attach::Core; 8]).unwrap();
    assert!(net.switches().is_empty());
    let route = net.route(0, 7, 0).unwrap();
    assert_eq!(route.nodes(), &[0, 7]);
    assert_eq!(net.empty_latency(&route, 10_000), 50_000);
}

#[test]
fn full_mesh_links_every_server_to_every_access_switch_of_its_pod() {
    let cfg = TopologyConfig {
        access_server: HostWiring::FullMesh,
        ..three_tier(2, 4, 8, 2)
    };
    let net = Network::build(&cfg, &hosts(6)).unwrap();
    let first_switch = 7;
    let pod_of = |peer: u32| net.switches()[(peer - first_switch) as usize].pod;
    for s in 0..6 {
        let ports: Vec<Port> = net.ports(server(s)).collect();
        assert_eq!(ports.len(), 4, "four access switches per pod");
        let pod = if s < 3 { 0 } else { 1 };
        assert!(ports.iter().all(|p| pod_of(p.peer) == Some(pod)));
    }
    // two servers of one pod: through any of its four access switches
    let paths = net.shortest_paths(server(0), server(2));
    assert_eq!(paths.len(), 4);
    assert!(paths.iter().all(|p| p.hops() == 2));
    // across pods: access, aggregation, core, aggregation, access
    let across = net.shortest_paths(server(0), server(5));
    assert!(across.iter().all(|p| p.hops() == 6));
    // 4 access x 2 aggregation up, 2 cores, 2 aggregation x 4 access down
    assert_eq!(across.len(), 4 * 2 * 2 * 2 * 4);
    // from the tenant at core 0 down to a server: 2 aggregation x 4 access
    assert_eq!(net.shortest_paths(0, server(4)).len(), 8);
    let r = net.route(server(1), 0, 3).unwrap();
    assert_eq!(r.dst(), 0);
    assert_eq!(r.hops(), 4);
    let flat = TopologyConfig {
        access_server: HostWiring::FullMesh,
        ..TopologyConfig::default()
    };
    assert!(flat.problems().iter().any(|(f, _)| *f == "access_server"));
}

#[test]
fn full_mesh_ports_are_numbered_as_if_every_link_were_listed() {
    // thesis §4.2.3's host–access full mesh is a rule, not a list: every
    // node's ports still come sorted by peer, each at the index port_to
    // gives, both ends of every link agree, and tenants stay on the cores
    let cfg = TopologyConfig {
        access_server: HostWiring::FullMesh,
        ..three_tier(2, 4, 8, 2)
    };
    let net = Network::build(&cfg, &hosts(6)).unwrap();
    let nodes = 7 + net.switches().len() as u32;
    let mut links = 0;
    for node in 0..nodes {
        let ports: Vec<Port> = net.ports(node).collect();
        assert_eq!(ports.len(), net.port_count(node));
        assert!(ports.windows(2).all(|w| w[0].peer < w[1].peer), "{node}");
        for (i, p) in ports.iter().enumerate() {
            assert_eq!(net.port_to(node, p.peer), Some((i, *p)));
            assert!(net.port_to(p.peer, node).is_some(), "{node}→{}", p.peer);
            assert_eq!(p.latency, 50_000);
        }
        assert_eq!(net.port_to(node, node), None);
        links += ports.len();
    }
    // 6 servers x 4 access switches, 8 x 2 access–aggregation, 4 x 2
    // aggregation–core, the tenant's one: each counted from both ends
    assert_eq!(links, 2 * (6 * 4 + 8 * 2 + 4 * 2 + 1));
    assert_eq!(net.mesh_ports(server(0)), 4);
    let access = net
        .switches()
        .iter()
        .find(|s| s.tier == Tier::Access)
        .unwrap();
    assert_eq!(net.mesh_ports(access.id), 3, "three servers per pod");
    assert_eq!(net.port_count(access.id), 3 + 2);
    assert_eq!(
        net.port_to(access.id, server(4)),
        None,
        "another pod's server"
    );
    let hops = net.least_hop_latencies().unwrap();
    assert_eq!(hops[server(0) as usize].len(), 4);
    assert_eq!(net.min_latency(), 50_000);
}
