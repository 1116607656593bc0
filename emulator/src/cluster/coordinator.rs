//! `dcemu coordinator`: drives a run whose actors live in node processes.
//!
//! It assigns actors to nodes, admits nodes that prove membership (refusing
//! and logging any other), hands each the scenario and a certificate, starts
//! the windows once every node is connected to every other, watches
//! heartbeats, and at the end gathers every actor's metrics and log into one
//! results directory, the same files (and digest) as `dcemu run`.
//!
//! A node that fails, disconnects or stays silent longer than the failure
//! timeout aborts the run: every node is told to stop, the error names the
//! node and the virtual time reached, and the results directory is marked
//! incomplete.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::time::timeout;

use super::ClusterError;
use super::admission::{Admission, GiveUp, Membership, StopAdmission};
use super::gather::{Attach, Gather, Gathered, Interrupt};
use super::log_writer::{Flush, LogWriter};
use super::node_link::{Close, NodeLink, Tell};
use super::signals::{Interrupts, interrupted};
use super::tls::{self, RunCa};
use super::wire::{self, BarrierStats, PeerInfo, Setup, ToNode};
use crate::engine::ActorOutput;
use crate::engine::horizon::Reach;
use crate::engine::partition::{ExchangeStats, PartitionOutput, combine};
use crate::results::Staging;
use crate::run::{Outcome, assemble, prepare_hosted};
use crate::scenario::{LoadedTrace, Scenario};
use dcemu_actors::kernel::ActorId;
use dcemu_topology::{TopologyConfig, TopologyKind};

/// How the coordinator runs.
#[derive(Clone, Debug)]
pub struct CoordinatorOptions {
    pub nodes: usize,
    pub listen: SocketAddr,
    pub secret: String,
    pub failure_timeout: Duration,
    /// How long to wait for every node to join.
    pub join_timeout: Duration,
    pub heartbeat: Duration,
    pub max_frame: usize,
    /// Let nodes on one host use same-host links (`Setup::same_host_links`).
    pub same_host_links: bool,
    /// Cut the nodes' blocks by the work an earlier run of the scenario
    /// measured in this results directory ([`crate::engine::balance`]).
    pub balance_from: Option<std::path::PathBuf>,
    /// What that cut evens out.
    pub balance_by: crate::engine::balance::Weigh,
}

/// What a finished multi-process run reports besides its outcome.
#[derive(Debug)]
pub struct ClusterReport {
    /// This run's id (fresh per coordinator start; see [`wire::ToNode::Welcome`]).
    pub run_id: String,
    /// Per node: name, and its window-barrier statistics.
    pub nodes: Vec<(String, BarrierStats)>,
    /// Which actors each node hosted, as a human-readable line per node.
    pub assignment: Vec<String>,
}

/// Rack and pod of every server actor (by actor id), for a three-tier
/// network: racked hosts (the scheduler, then the servers) are spread over
/// the access switches in order, and access switches over pods in order, as
/// `dcemu_topology::Network::build` wires them.
fn server_racks(names: &[String], topology: &TopologyConfig) -> BTreeMap<usize, (u64, u64)> {
    let mut out = BTreeMap::new();
    if topology.kind != TopologyKind::ThreeTier || topology.access == 0 {
        return out;
    }
    let servers: Vec<usize> = (0..names.len())
        .filter(|&i| names[i].starts_with("server-"))
        .collect();
    let racked = servers.len() as u64 + 1;
    let access = u64::from(topology.access);
    let pods = u64::from(topology.pods.max(1));
    for (j, &id) in servers.iter().enumerate() {
        let rack = (j as u64 + 1) * access / racked;
        out.insert(id, (rack, rack * pods / access));
    }
    out
}

/// Which node hosts each actor: `nodes` contiguous blocks of actor ids
/// holding about as many actors that are not relays (`relays`, one per
/// actor, or empty: none; the switches, which the coordinator places
/// afterwards) each (ids keep neighbours together: the scheduler and
/// tenants, then the servers in order, then the switches), or of about
/// equal measured work with `weights` (one per actor,
/// [`crate::engine::balance`], each switch's already moved onto the
/// servers it will follow). With a three-tier network, a boundary that
/// falls among the servers moves to the nearest pod boundary if one is
/// within a quarter of a block (of equal size only), else to the nearest
/// rack boundary, so that a rack's servers (and where possible a pod's)
/// share a node. The coordinator then moves each switch to the node most
/// of its neighbours are on (`engine::horizon::place_relays`).
pub fn assign(
    names: &[String],
    topology: &TopologyConfig,
    nodes: usize,
    weights: Option<&[u64]>,
    relays: &[bool],
) -> Vec<u32> {
    let actors = names.len();
    let weights = weights.filter(|w| w.len() == actors);
    let hosted: Vec<usize> = (0..actors)
        .filter(|&a| !relays.get(a).copied().unwrap_or(false))
        .collect();
    let hosted = if hosted.len() >= nodes {
        hosted
    } else {
        (0..actors).collect()
    };
    let plain: Vec<usize> = match weights {
        Some(w) => {
            let blocks = crate::engine::balance::weighted_blocks(w, nodes);
            (1..nodes)
                .map(|i| blocks.iter().take_while(|&&b| b < i).count())
                .collect()
        }
        None => (1..nodes)
            .map(|i| hosted[(i * hosted.len()).div_ceil(nodes)])
            .collect(),
    };
    let racks = server_racks(names, topology);
    let mut rack_starts = Vec::new();
    let mut pod_starts = Vec::new();
    let mut prev: Option<(u64, u64)> = None;
    for (&id, &(rack, pod)) in &racks {
        match prev {
            Some((r, p)) if r == rack && p == pod => {}
            Some((_, p)) => {
                rack_starts.push(id);
                if p != pod {
                    pod_starts.push(id);
                }
            }
            None => {}
        }
        prev = Some((rack, pod));
    }
    let nearest =
        |b: usize, starts: &[usize]| starts.iter().copied().min_by_key(|&s| s.abs_diff(b));
    let block = hosted.len() / nodes.max(1);
    let snapped: Vec<usize> = plain
        .iter()
        .map(|&b| {
            let (Some(first), Some(last)) = (racks.keys().next(), racks.keys().last()) else {
                return b;
            };
            if b <= *first || b > *last {
                return b;
            }
            match nearest(b, &pod_starts) {
                Some(p) if weights.is_none() && p.abs_diff(b) <= block / 4 => p,
                _ => nearest(b, &rack_starts).unwrap_or(b),
            }
        })
        .collect();
    let valid = snapped.windows(2).all(|w| w[0] < w[1])
        && snapped.first().is_none_or(|&b| b > 0)
        && snapped.last().is_none_or(|&b| b < actors);
    let bounds = if valid { snapped } else { plain };
    (0..actors)
        .map(|a| bounds.iter().filter(|&&b| a >= b).count() as u32)
        .collect()
}

/// Describes the block each node hosts: its first and last actor, and the
/// racks and pods of its servers.
fn describe(
    names: &[String],
    topology: &TopologyConfig,
    assignment: &[u32],
    nodes: usize,
) -> Vec<String> {
    let racks = server_racks(names, topology);
    (0..nodes)
        .map(|n| {
            let ids: Vec<usize> = (0..names.len())
                .filter(|&i| assignment[i] as usize == n)
                .collect();
            let span = |v: Vec<u64>| match (v.iter().min(), v.iter().max()) {
                (Some(a), Some(b)) if a == b => format!("{a}"),
                (Some(a), Some(b)) => format!("{a}-{b}"),
                _ => "none".into(),
            };
            let where_ = if racks.is_empty() {
                String::new()
            } else {
                let mine: Vec<(u64, u64)> =
                    ids.iter().filter_map(|i| racks.get(i).copied()).collect();
                format!(
                    " (servers of racks {}, pods {})",
                    span(mine.iter().map(|r| r.0).collect()),
                    span(mine.iter().map(|r| r.1).collect())
                )
            };
            match (ids.first(), ids.last()) {
                (Some(&a), Some(&b)) => format!(
                    "node {n}: {} actors, #{a} {} … #{b} {}{where_}",
                    ids.len(),
                    names[a],
                    names[b]
                ),
                _ => format!("node {n}: no actors"),
            }
        })
        .collect()
}

/// Runs `scenario` over `opts.nodes` node processes; writes into `staging`.
pub async fn run_coordinator(
    scenario: &Scenario,
    opts: &CoordinatorOptions,
    staging: Staging,
) -> Result<(Outcome, ClusterReport), ClusterError> {
    let started = Instant::now();
    let input = ClusterError::Input;
    let fail = |m: String| ClusterError::Coordinator(m);
    if opts.nodes == 0 || opts.nodes > crate::engine::MAX_PARTITIONS {
        return Err(input(format!(
            "--nodes must be between 1 and {}",
            crate::engine::MAX_PARTITIONS
        )));
    }
    let shared_dir = shared_dir(scenario).map_err(input)?;
    // the nodes build the actors; here only the scheduler, which checks its
    // configuration before any node is asked to join
    let prepared =
        prepare_hosted(scenario, None, &|id| id == ActorId(0)).map_err(|e| input(e.to_string()))?;
    let names = prepared.names.clone();
    let slot_table = prepared.slot_table.clone();
    let reach = prepared.config.reach.clone();
    drop(prepared);
    if names.len() < opts.nodes {
        return Err(input(format!(
            "{} nodes for {} actors: use at most one node per actor",
            opts.nodes,
            names.len()
        )));
    }
    let weights = match &opts.balance_from {
        Some(dir) => Some(
            crate::engine::balance::read_weights(dir, &names, opts.balance_by)
                .map_err(|e| input(format!("--balance-from {e}")))?,
        ),
        None => None,
    };
    let relays: Vec<bool> = match &*reach {
        Reach::Graph(links) if links.len() == names.len() => {
            links.iter().map(|l| l.len() > 1).collect()
        }
        _ => Vec::new(),
    };
    let cut = |weights: Option<&[u64]>| {
        let mut a: Vec<usize> = assign(&names, &scenario.topology, opts.nodes, weights, &relays)
            .into_iter()
            .map(|p| p as usize)
            .collect();
        crate::engine::horizon::place_relays(&reach, &mut a, opts.nodes);
        a
    };
    let assignment: Vec<u32> = match &weights {
        Some(w) => crate::engine::balance::cut_twice(&reach, w, |folded| cut(Some(folded))),
        None => cut(None),
    }
    .into_iter()
    .map(|p| p as u32)
    .collect();
    let described = describe(&names, &scenario.topology, &assignment, opts.nodes);

    let ca = RunCa::generate().map_err(|e| fail(e.to_string()))?;
    let run_id = tls::random_run_id().map_err(|e| fail(e.to_string()))?;
    let identity = ca.coordinator_identity().map_err(|e| fail(e.to_string()))?;
    let server = tls::coordinator_server(&identity, opts.failure_timeout)
        .map_err(|e| fail(e.to_string()))?;
    let endpoint = quinn::Endpoint::server(server, opts.listen)
        .map_err(|e| input(format!("cannot listen on {}: {e}", opts.listen)))?;
    let local = endpoint.local_addr().map_err(|e| fail(e.to_string()))?;
    eprintln!(
        "coordinator: listening on {local}, waiting for {} node(s) of run {run_id}",
        opts.nodes
    );

    // admission and membership: every connection proves membership or is
    // refused, and the run waits for its nodes (actors, see `admission`)
    let (mut interrupts_seen, _interrupts) = {
        let (addr, seen) = Interrupts::start();
        (seen, addr)
    };
    let (membership, joined) = Membership::start(opts.nodes, opts.join_timeout);
    let admission =
        Admission::new(endpoint.clone(), &opts.secret, &run_id, membership.clone()).start();
    let joined = tokio::select! {
        j = joined => j.unwrap_or_else(|_| Err("the membership actor stopped".into())),
        _ = interrupted(&mut interrupts_seen) => {
            membership.do_send(GiveUp("interrupted (Ctrl-C)".into()));
            let _ = staging.mark_incomplete("interrupted (Ctrl-C) before the run started");
            // let the nodes read why
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Err(fail("interrupted (Ctrl-C) while nodes were joining".into()));
        }
    };
    let nodes = match joined {
        Ok(nodes) => nodes,
        Err(reason) => {
            let _ = staging.mark_incomplete(&reason);
            return Err(fail(reason));
        }
    };

    // setup: certificates, addresses, scenario
    let mut infos = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let cert = ca.sign_node(&n.join.csr, i as u32).map_err(|e| {
            fail(format!(
                "node {:?}: bad certificate request: {e}",
                n.join.name
            ))
        })?;
        let addr = n
            .join
            .advertise
            .unwrap_or_else(|| SocketAddr::new(n.conn.remote_address().ip(), n.join.port));
        infos.push(PeerInfo {
            name: n.join.name.clone(),
            addr,
            cert,
        });
    }
    for line in &described {
        let idx: usize = line
            .split(':')
            .next()
            .and_then(|s| s.trim_start_matches("node ").parse().ok())
            .unwrap_or(0);
        eprintln!("coordinator: {line} on {:?}", infos[idx].name);
    }
    let scenario_text = scenario.to_toml();
    // csv traces travel to the nodes whole; public formats are streamed by
    // each node from the shared directory
    let mut traces: Vec<(String, Vec<u8>)> = Vec::new();
    for (t, tr) in scenario.tenants.iter().zip(&scenario.traces) {
        if let Some(tr) = tr {
            let bytes = std::fs::read(&tr.path)
                .map_err(|e| input(format!("cannot read the trace {}: {e}", tr.label)))?;
            traces.push((LoadedTrace::stored_as(&t.name), bytes));
        }
    }

    // from here on, one actor per node holds its control link, and one
    // gathers what they hear
    let node_names: Vec<String> = nodes.iter().map(|n| n.join.name.clone()).collect();
    let (gather, ending) = Gather::new(
        assignment.clone(),
        node_names.clone(),
        opts.max_frame,
        opts.failure_timeout,
    );
    let gather = gather.start();
    // connecting the mesh may take a while; heartbeats come once the run starts
    let silence = opts.failure_timeout.max(opts.join_timeout);
    let mut conns = Vec::new();
    let links: Vec<Addr<NodeLink>> = nodes
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            conns.push(n.conn.clone());
            NodeLink::new(
                i,
                n.conn,
                n.send,
                n.recv,
                opts.max_frame,
                silence,
                opts.failure_timeout,
                gather.clone().recipient(),
            )
            .start()
        })
        .collect();
    let logs = scenario.output.actor_logs.then(|| {
        LogWriter::start(
            staging.logs_dir(),
            names.clone(),
            gather.clone().recipient(),
        )
    });
    gather.do_send(Attach {
        links: links.clone(),
        logs: logs.clone(),
    });
    for (i, link) in links.iter().enumerate() {
        let setup = ToNode::Setup(Box::new(Setup {
            shared_dir: shared_dir.clone(),
            index: i as u32,
            nodes: infos.clone(),
            ca: ca.cert_der(),
            scenario: scenario_text.clone(),
            traces: traces.clone(),
            assignment: assignment.clone(),
            max_frame: opts.max_frame as u64,
            heartbeat_ms: opts.heartbeat.as_millis() as u64,
            failure_timeout_ms: opts.failure_timeout.as_millis() as u64,
            same_host_links: opts.same_host_links,
        }));
        let told = link
            .send(Tell {
                msg: setup,
                limit: wire::HARD_MAX_FRAME,
                within: None,
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        told.map_err(|e| {
            fail(format!(
                "node {:?}: cannot send the setup: {e}",
                node_names[i]
            ))
        })?;
    }

    let mut ending = ending;
    let ended = loop {
        tokio::select! {
            e = &mut ending => break e,
            _ = interrupted(&mut interrupts_seen) => {
                gather.do_send(Interrupt("interrupted (Ctrl-C)".into()));
            }
        }
    };
    let (outcome, mut gathered) = ended.unwrap_or_else(|_| {
        (
            Err("the run's gatherer stopped".into()),
            Gathered::default(),
        )
    });
    if let Err(reason) = outcome {
        // what the nodes handed over before stopping stays with the results
        let logs_kept = match &logs {
            Some(logs) => match logs.send(Flush).await {
                Ok(Ok(())) => String::new(),
                Ok(Err(why)) => format!("; some actors' logs are missing: {why}"),
                Err(why) => format!("; some actors' logs are missing: {why}"),
            },
            None => String::new(),
        };
        let reason = format!("{reason}{logs_kept}");
        let closing: Vec<_> = links
            .iter()
            .map(|l| {
                l.send(Close {
                    code: 3,
                    reason: b"run aborted",
                    within: Duration::from_millis(200),
                })
            })
            .collect();
        for c in closing {
            let _ = c.await;
        }
        admission.do_send(StopAdmission);
        let marked = staging
            .mark_incomplete(&reason)
            .map(|p| format!("; results marked incomplete in {}", p.display()))
            .unwrap_or_default();
        return Err(fail(format!("run aborted: {reason}{marked}")));
    }
    if let Some(logs) = &logs {
        logs.send(Flush)
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
            .map_err(fail)?;
    }

    // every node is done: assemble exactly as a single-process run does
    let outputs: Vec<Result<PartitionOutput, crate::engine::EngineError>> = gathered
        .finished
        .iter()
        .enumerate()
        .map(|(node, f)| {
            let f = f.as_ref().ok_or_else(|| {
                crate::engine::EngineError::Setup(format!("node {node} sent no summary"))
            })?;
            Ok(PartitionOutput {
                actors: Vec::new(),
                events: f.events,
                windows: f.windows,
                last_event: f.last_event,
                pending: f.pending,
                causal_steps: f.causal_steps,
                // every exchange but the last ends in a window
                windows_taken: f.barrier.exchanges.saturating_sub(1),
                exchange: ExchangeStats {
                    count: f.barrier.exchanges,
                    total: Duration::from_nanos(f.barrier.total_ns),
                    min: Duration::from_nanos(f.barrier.min_ns),
                    max: Duration::from_nanos(f.barrier.max_ns),
                },
            })
        })
        .collect();
    let end = scenario.run.end.as_nanos();
    let mut output = combine(outputs, end).map_err(|e| fail(e.to_string()))?;
    if gathered.actors.len() != names.len() {
        return Err(fail(format!(
            "nodes reported {} of {} actors",
            gathered.actors.len(),
            names.len()
        )));
    }
    let logs_dir = staging.logs_dir();
    output.actors = std::mem::take(&mut gathered.actors)
        .into_iter()
        .map(|(id, a)| ActorOutput {
            name: names[id as usize].clone(),
            log: None,
            metrics: a.metrics,
            // end-of-run states serve `dcemu replay --dump`, a
            // single-process command; nodes do not send them
            state: serde_json::Value::Null,
            events: a.events,
            busy_ns: a.busy_ns,
            held_bytes: a.held_bytes,
        })
        .collect();
    if scenario.output.actor_logs {
        for name in &names {
            let path = logs_dir.join(format!("{name}.jsonl"));
            if !path.exists() {
                std::fs::File::create(&path)
                    .map_err(|e| fail(format!("cannot create {}: {e}", path.display())))?;
            }
        }
    }
    let outcome = assemble(
        scenario,
        output,
        Some(&logs_dir),
        names.len(),
        slot_table,
        started,
    )
    .map_err(|e| fail(e.to_string()))?;
    let report = ClusterReport {
        run_id: run_id.clone(),
        nodes: node_names
            .iter()
            .zip(&gathered.finished)
            .map(|(name, f)| {
                (
                    name.clone(),
                    f.as_ref().map(|f| f.barrier).unwrap_or_default(),
                )
            })
            .collect(),
        assignment: described,
    };
    let run_json = run_facts(&outcome, &report, shared_dir.as_deref());
    staging
        .commit(
            &outcome.results,
            &outcome.digest,
            &[
                ("run.json", run_json),
                (crate::engine::balance::WORK_FILE, outcome.work_csv.clone()),
            ],
        )
        .map_err(|e| fail(e.to_string()))?;
    for link in &links {
        let _ = link
            .send(Tell {
                msg: ToNode::Bye,
                limit: opts.max_frame,
                within: Some(Duration::from_secs(5)),
            })
            .await;
    }
    // let the nodes read their bye and close first
    let closing: Vec<_> = links
        .iter()
        .map(|l| {
            l.send(Close {
                code: 0,
                reason: b"",
                within: Duration::from_secs(5),
            })
        })
        .collect();
    for c in closing {
        let _ = c.await;
    }
    drop(conns);
    admission.do_send(StopAdmission);
    endpoint.close(0u32.into(), b"done");
    let _ = timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    Ok((outcome, report))
}

/// The directory `dcemu run` would start `[scheduler.external]`'s program
/// in and read public-format traces from (the scenario file's, or the
/// working directory for the embedded scenario), made absolute so it names
/// the same place whatever a node's working directory
/// ([`Setup::shared_dir`]); `None` without either.
fn shared_dir(scenario: &Scenario) -> Result<Option<String>, String> {
    let streams = scenario
        .streams
        .iter()
        .flatten()
        .any(|s| s.format.is_public());
    if scenario.scheduler.external.is_none() && !streams {
        return Ok(None);
    }
    let base = if scenario.base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        scenario.base.as_path()
    };
    let dir = std::fs::canonicalize(base).map_err(|e| {
        format!(
            "cannot resolve the scenario's directory ({}), where the external scheduler runs and traces are read: {e}",
            base.display()
        )
    })?;
    dir.to_str()
        .map(|d| Some(d.to_string()))
        .ok_or_else(|| format!("the scenario's directory ({}) is not UTF-8", dir.display()))
}

/// `run.json` of a multi-process run: wall-clock facts, never digested.
/// With an external scheduler or streamed traces it names, as
/// `stream_base`, the directory they were found in, so `dcemu replay` finds
/// them again as for `dcemu run`.
fn run_facts(o: &Outcome, report: &ClusterReport, shared_dir: Option<&str>) -> Vec<u8> {
    let mut facts = serde_json::json!({
        "dcemu_version": env!("CARGO_PKG_VERSION"),
        "mode": "coordinator",
        "run_id": report.run_id,
        "wall_time_s": o.wall.as_secs_f64(),
        "events_per_s": o.events as f64 / o.wall.as_secs_f64().max(1e-9),
        "nodes": report.nodes.iter().map(|(name, b)| serde_json::json!({
            "name": name,
            "barrier_exchanges": b.exchanges,
            "barrier_mean_us": b.mean_us(),
            "barrier_min_us": b.min_ns as f64 / 1e3,
            "barrier_max_us": b.max_ns as f64 / 1e3,
            "rtt_us": b.rtt_ns as f64 / 1e3,
            "local_links": b.local_links,
        })).collect::<Vec<_>>(),
        "assignment": report.assignment,
        "windows": o.windows,
        "causal_steps": o.causal_steps,
        "actors": o.actors,
        "events_by_kind": o.events_by_kind,
        "command": std::env::args().collect::<Vec<_>>(),
        "digest": o.digest,
        "wall_metrics": o.wall_metrics,
    });
    if let Some(dir) = shared_dir {
        facts["stream_base"] = serde_json::Value::String(dir.to_string());
    }
    let mut bytes = serde_json::to_vec_pretty(&facts).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(servers: usize, switches: usize) -> Vec<String> {
        let mut n = vec!["scheduler".to_string(), "tenant-a-0".into()];
        n.extend((0..servers).map(|i| format!("server-{i:04}")));
        n.extend((0..switches).map(|i| format!("switch-x-{i}")));
        n
    }

    fn relays(names: &[String]) -> Vec<bool> {
        names.iter().map(|n| n.starts_with("switch-")).collect()
    }

    #[test]
    fn flat_networks_get_even_contiguous_blocks() {
        let names = names(10, 0);
        let a = assign(&names, &TopologyConfig::default(), 3, None, &[]);
        assert_eq!(a, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    }

    /// Two pods of two racks each.
    fn small_three_tier() -> TopologyConfig {
        TopologyConfig {
            kind: TopologyKind::ThreeTier,
            core: 1,
            aggregation: 2,
            access: 4,
            pods: 2,
            ..TopologyConfig::default()
        }
    }

    fn assert_racks_whole(a: &[u32], racks: &BTreeMap<usize, (u64, u64)>, nodes: usize) {
        for (id, rack) in racks {
            for (other, rack2) in racks {
                if rack.0 == rack2.0 {
                    assert_eq!(
                        a[*id], a[*other],
                        "rack {} split with {nodes} nodes",
                        rack.0
                    );
                }
            }
        }
    }

    #[test]
    fn three_tier_boundaries_fall_between_racks() {
        let names = names(39, 7);
        let topology = small_three_tier();
        let racks = server_racks(&names, &topology);
        for nodes in [2, 3, 4] {
            let a = assign(&names, &topology, nodes, None, &relays(&names));
            assert_eq!(a.iter().copied().max(), Some(nodes as u32 - 1));
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "contiguous");
            assert_racks_whole(&a, &racks, nodes);
        }
        // two nodes and two pods: one pod each
        let a = assign(&names, &topology, 2, None, &relays(&names));
        for (id, (_, pod)) in &racks {
            assert_eq!(a[*id] as u64, *pod);
        }
    }

    /// The switches follow their servers afterwards, so the blocks share
    /// out the other actors: with many switches (a three-tier network of
    /// few servers a rack, `thesis-large-dc`'s 536 of 1,782 actors) a cut
    /// over every actor left the last node only switches, then nothing.
    #[test]
    fn every_node_gets_servers_however_many_switches_follow() {
        let names = names(16, 30);
        let topology = small_three_tier();
        let relays = relays(&names);
        for nodes in [2, 3, 4] {
            let a = assign(&names, &topology, nodes, None, &relays);
            for n in 0..nodes as u32 {
                let hosted = (0..names.len())
                    .filter(|&i| !relays[i] && a[i] == n)
                    .count();
                assert!(hosted >= 3, "node {n} of {nodes} hosts {hosted}: {a:?}");
            }
        }
    }

    /// Measured work moves the cut: a scheduler that does as much as all
    /// the servers together leaves its node few of them, and the cut still
    /// falls between racks.
    #[test]
    fn weights_move_the_boundary_to_equal_work_between_racks() {
        let names = names(39, 7);
        let topology = small_three_tier();
        let mut weights = vec![1u64; names.len()];
        weights[0] = 30;
        let even = assign(&names, &topology, 2, None, &relays(&names));
        let weighed = assign(&names, &topology, 2, Some(&weights), &relays(&names));
        let on_first = |a: &[u32]| a.iter().filter(|&&n| n == 0).count();
        assert!(on_first(&weighed) < on_first(&even), "{weighed:?}");
        assert!(on_first(&weighed) >= 1 && weighed[0] == 0);
        assert_racks_whole(&weighed, &server_racks(&names, &topology), 2);
        // weights of another length are ignored rather than misread
        assert_eq!(
            assign(&names, &topology, 2, Some(&weights[1..]), &relays(&names)),
            even
        );
    }
}
