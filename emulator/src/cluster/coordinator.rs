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
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dcemu_actors::kernel::Metrics;
use dcemu_topology::{SimTime, format_sim_time};
use tokio::sync::mpsc;
use tokio::time::timeout;

use super::ClusterError;
use super::tls::{self, Role, RunCa};
use super::wire::{self, BarrierStats, Join, PeerInfo, Setup, ToCoordinator, ToNode};
use crate::engine::ActorOutput;
use crate::engine::partition::{PartitionOutput, combine};
use crate::results::Staging;
use crate::run::{Outcome, assemble, prepare};
use crate::scenario::{LoadedTrace, Scenario};
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

struct Joined {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    join: Join,
}

enum Event {
    Msg(usize, ToCoordinator),
    Silent(usize),
    Lost(usize, String),
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

/// Which node hosts each actor: `nodes` contiguous blocks of actor ids of
/// about equal size (ids keep neighbours together: the scheduler and
/// tenants, then the servers in order, then the switches). With a three-tier
/// network, a boundary that falls among the servers moves to the nearest pod
/// boundary if one is within a quarter of a block, else to the nearest rack
/// boundary, so that a rack's servers (and where possible a pod's) share a
/// node. The coordinator then moves each switch to the node most of its
/// neighbours are on (`engine::horizon::place_relays`).
pub fn assign(names: &[String], topology: &TopologyConfig, nodes: usize) -> Vec<u32> {
    let actors = names.len();
    let plain: Vec<usize> = (1..nodes).map(|i| (i * actors).div_ceil(nodes)).collect();
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
    let block = actors / nodes.max(1);
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
                Some(p) if p.abs_diff(b) <= block / 4 => p,
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
    if let Some(t) = scenario
        .tenants
        .iter()
        .zip(&scenario.streams)
        .find_map(|(t, s)| s.as_ref().filter(|s| s.format.is_public()).map(|_| t))
    {
        return Err(input(format!(
            "tenant {:?} streams a {} trace: multi-process runs ship csv traces to the nodes, not public-format ones yet; run it with `dcemu run` (docs/traces.md)",
            t.name,
            t.arrivals.format.name()
        )));
    }
    let external_dir = external_dir(scenario).map_err(input)?;
    let prepared = prepare(scenario, None).map_err(|e| input(e.to_string()))?;
    let names: Vec<String> = prepared.actors.iter().map(|(n, _)| n.clone()).collect();
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
    let assignment = {
        let mut a: Vec<usize> = assign(&names, &scenario.topology, opts.nodes)
            .into_iter()
            .map(|p| p as usize)
            .collect();
        crate::engine::horizon::place_relays(&reach, &mut a, opts.nodes);
        a.into_iter().map(|p| p as u32).collect::<Vec<u32>>()
    };
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

    // admission: every connection proves membership or is refused
    let (joined_tx, mut joined_rx) = mpsc::unbounded_channel::<Joined>();
    let secret: Arc<[u8]> = Arc::from(opts.secret.as_bytes());
    let acceptor = {
        let endpoint = endpoint.clone();
        let run_id = run_id.clone();
        tokio::spawn(async move {
            while let Some(incoming) = endpoint.accept().await {
                let joined_tx = joined_tx.clone();
                let secret = secret.clone();
                let run_id = run_id.clone();
                tokio::spawn(async move {
                    let addr = incoming.remote_address();
                    match admit(incoming, &secret, &run_id).await {
                        Ok(j) => {
                            let _ = joined_tx.send(j);
                        }
                        Err(why) => eprintln!("coordinator: refused {addr}: {why}"),
                    }
                });
            }
        })
    };
    let join_deadline = tokio::time::Instant::now() + opts.join_timeout;
    let mut nodes: Vec<Joined> = Vec::new();
    while nodes.len() < opts.nodes {
        let next = tokio::select! {
            j = tokio::time::timeout_at(join_deadline, joined_rx.recv()) => j,
            _ = tokio::signal::ctrl_c() => {
                abort_all(&mut nodes, "interrupted (Ctrl-C)").await;
                acceptor.abort();
                let _ = staging.mark_incomplete("interrupted (Ctrl-C) before the run started");
                return Err(fail("interrupted (Ctrl-C) while nodes were joining".into()));
            }
        };
        match next {
            Ok(Some(mut j)) => {
                if nodes.iter().any(|n| n.join.name == j.join.name) {
                    eprintln!(
                        "coordinator: refused a second node named {:?} from {}",
                        j.join.name,
                        j.conn.remote_address()
                    );
                    let _ = wire::write(
                        &mut j.send,
                        &ToNode::Abort {
                            reason: format!("a node named {:?} already joined", j.join.name),
                        },
                        opts.max_frame,
                    )
                    .await;
                    j.conn.close(2u32.into(), b"duplicate name");
                    continue;
                }
                eprintln!(
                    "coordinator: node {:?} joined from {} ({}/{})",
                    j.join.name,
                    j.conn.remote_address(),
                    nodes.len() + 1,
                    opts.nodes
                );
                nodes.push(j);
            }
            Ok(None) | Err(_) => {
                let reason = format!(
                    "only {} of {} nodes joined within {} s",
                    nodes.len(),
                    opts.nodes,
                    opts.join_timeout.as_secs()
                );
                abort_all(&mut nodes, &reason).await;
                acceptor.abort();
                let _ = staging.mark_incomplete(&reason);
                return Err(fail(reason));
            }
        }
    }
    // later joiners are refused by `admit`'s caller: drain and refuse them
    tokio::spawn(async move {
        while let Some(mut j) = joined_rx.recv().await {
            eprintln!(
                "coordinator: refused node {:?} from {}: the run is full",
                j.join.name,
                j.conn.remote_address()
            );
            let _ = wire::write(
                &mut j.send,
                &ToNode::Abort {
                    reason: "the run already has all its nodes".into(),
                },
                wire::DEFAULT_MAX_FRAME,
            )
            .await;
            j.conn.close(2u32.into(), b"run full");
        }
    });

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
    // csv traces travel to the nodes whole (public formats are refused above).
    let mut traces: Vec<(String, Vec<u8>)> = Vec::new();
    for (t, tr) in scenario.tenants.iter().zip(&scenario.traces) {
        if let Some(tr) = tr {
            let bytes = std::fs::read(&tr.path)
                .map_err(|e| input(format!("cannot read the trace {}: {e}", tr.label)))?;
            traces.push((LoadedTrace::stored_as(&t.name), bytes));
        }
    }
    for (i, n) in nodes.iter_mut().enumerate() {
        let setup = ToNode::Setup(Box::new(Setup {
            external_dir: external_dir.clone(),
            index: i as u32,
            nodes: infos.clone(),
            ca: ca.cert_der(),
            scenario: scenario_text.clone(),
            traces: traces.clone(),
            assignment: assignment.clone(),
            max_frame: opts.max_frame as u64,
            heartbeat_ms: opts.heartbeat.as_millis() as u64,
            failure_timeout_ms: opts.failure_timeout.as_millis() as u64,
        }));
        wire::write(&mut n.send, &setup, wire::HARD_MAX_FRAME)
            .await
            .map_err(|e| {
                fail(format!(
                    "node {:?}: cannot send the setup: {e}",
                    n.join.name
                ))
            })?;
    }

    // from here on, one task per node reads its control stream
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let mut sends = Vec::new();
    let mut conns = Vec::new();
    let node_names: Vec<String> = nodes.iter().map(|n| n.join.name.clone()).collect();
    for (i, n) in nodes.into_iter().enumerate() {
        sends.push(n.send);
        conns.push(n.conn.clone());
        let tx = events_tx.clone();
        let mut recv = n.recv;
        let mut max_frame = opts.max_frame;
        // connecting the mesh may take a while; heartbeats come once the run starts
        let silence = opts.failure_timeout.max(opts.join_timeout);
        let run_silence = opts.failure_timeout;
        tokio::spawn(async move {
            let mut limit = silence;
            loop {
                match timeout(limit, wire::read::<ToCoordinator>(&mut recv, max_frame)).await {
                    Err(_) => {
                        let _ = tx.send(Event::Silent(i));
                        return;
                    }
                    Ok(Ok(Some(msg))) => {
                        if matches!(msg, ToCoordinator::Heartbeat { .. }) {
                            limit = run_silence;
                        }
                        // an admitted node's results may outgrow the
                        // per-window frame limit (see the node's writer)
                        if matches!(msg, ToCoordinator::Finished(_)) {
                            max_frame = wire::HARD_MAX_FRAME;
                        }
                        if tx.send(Event::Msg(i, msg)).is_err() {
                            return;
                        }
                    }
                    Ok(Ok(None)) => {
                        let _ = tx.send(Event::Lost(i, "closed its connection".into()));
                        return;
                    }
                    Ok(Err(e)) => {
                        let _ = tx.send(Event::Lost(i, e.to_string()));
                        return;
                    }
                }
            }
        });
    }
    drop(events_tx);

    let n = node_names.len();
    let mut state = Gather {
        names: &names,
        assignment: &assignment,
        node_names: &node_names,
        logs_dir: staging.logs_dir(),
        keep_logs: scenario.output.actor_logs,
        ready: vec![false; n],
        vtime: vec![0; n],
        finished: (0..n).map(|_| None).collect(),
        done: vec![false; n],
        actors: BTreeMap::new(),
        log_file: None,
    };
    let outcome = loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = tokio::signal::ctrl_c() => {
                break Err("interrupted (Ctrl-C)".to_string());
            }
        };
        let Some(event) = event else {
            break Err("every node link closed".into());
        };
        match state.handle(event) {
            Ok(Step::Continue) => {}
            Ok(Step::AllReady) => {
                for send in &mut sends {
                    // a node that cannot be told shows up as lost
                    let _ = wire::write(send, &ToNode::Start, opts.max_frame).await;
                }
                eprintln!("coordinator: every node is connected to every other; running");
            }
            Ok(Step::AllDone) => break Ok(()),
            Err(reason) => break Err(reason),
        }
    };
    if let Err(reason) = outcome {
        let reason = format!(
            "{reason} (virtual time reached: {})",
            format_sim_time(state.vtime.iter().copied().min().unwrap_or(0))
        );
        for send in &mut sends {
            let _ = timeout(
                Duration::from_secs(1),
                wire::write(
                    send,
                    &ToNode::Abort {
                        reason: reason.clone(),
                    },
                    opts.max_frame,
                ),
            )
            .await;
            let _ = send.finish();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        for c in &conns {
            c.close(3u32.into(), b"run aborted");
        }
        acceptor.abort();
        let marked = staging
            .mark_incomplete(&reason)
            .map(|p| format!("; results marked incomplete in {}", p.display()))
            .unwrap_or_default();
        return Err(fail(format!("run aborted: {reason}{marked}")));
    }

    // every node is done: assemble exactly as a single-process run does
    drop(state.log_file.take());
    let outputs: Vec<Result<PartitionOutput, crate::engine::EngineError>> = state
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
            })
        })
        .collect();
    let end = scenario.run.end.as_nanos();
    let mut output = combine(outputs, end).map_err(|e| fail(e.to_string()))?;
    if state.actors.len() != names.len() {
        return Err(fail(format!(
            "nodes reported {} of {} actors",
            state.actors.len(),
            names.len()
        )));
    }
    let logs_dir = staging.logs_dir();
    output.actors = std::mem::take(&mut state.actors)
        .into_iter()
        .map(|(id, metrics)| ActorOutput {
            name: names[id as usize].clone(),
            log: None,
            metrics,
            // end-of-run states serve `dcemu replay --until`, a
            // single-process command; nodes do not send them
            state: serde_json::Value::Null,
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
            .zip(&state.finished)
            .map(|(name, f)| {
                (
                    name.clone(),
                    f.as_ref().map(|f| f.barrier).unwrap_or_default(),
                )
            })
            .collect(),
        assignment: described,
    };
    let run_json = run_facts(&outcome, &report, external_dir.as_deref());
    staging
        .commit(&outcome.results, &outcome.digest, &[("run.json", run_json)])
        .map_err(|e| fail(e.to_string()))?;
    for send in &mut sends {
        let _ = wire::write(send, &ToNode::Bye, opts.max_frame).await;
        let _ = send.finish();
    }
    // let the nodes read their bye and close first
    let _ = timeout(Duration::from_secs(5), async {
        for c in &conns {
            c.closed().await;
        }
    })
    .await;
    acceptor.abort();
    endpoint.close(0u32.into(), b"done");
    let _ = timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    Ok((outcome, report))
}

/// Where `[scheduler.external]`'s program runs on the node hosting the
/// scheduler actor: the directory it runs in for `dcemu run` (the scenario
/// file's, or the working directory for the embedded scenario), made
/// absolute here so it names the same place whatever a node's working
/// directory; `None` without the section.
fn external_dir(scenario: &Scenario) -> Result<Option<String>, String> {
    if scenario.scheduler.external.is_none() {
        return Ok(None);
    }
    let base = if scenario.base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        scenario.base.as_path()
    };
    let dir = std::fs::canonicalize(base).map_err(|e| {
        format!(
            "scheduler.external: cannot resolve the directory its program runs in ({}): {e}",
            base.display()
        )
    })?;
    dir.to_str().map(|d| Some(d.to_string())).ok_or_else(|| {
        format!(
            "scheduler.external: the directory its program runs in ({}) is not UTF-8",
            dir.display()
        )
    })
}

/// `run.json` of a multi-process run: wall-clock facts, never digested.
/// With an external scheduler it names, as `stream_base`, the directory the
/// program ran in, so `dcemu replay` finds it again as for `dcemu run`.
fn run_facts(o: &Outcome, report: &ClusterReport, external_dir: Option<&str>) -> Vec<u8> {
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
        })).collect::<Vec<_>>(),
        "assignment": report.assignment,
        "windows": o.windows,
        "causal_steps": o.causal_steps,
        "actors": o.actors,
        "command": std::env::args().collect::<Vec<_>>(),
        "digest": o.digest,
        "wall_metrics": o.wall_metrics,
    });
    if let Some(dir) = external_dir {
        facts["stream_base"] = serde_json::Value::String(dir.to_string());
    }
    let mut bytes = serde_json::to_vec_pretty(&facts).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Checks a connecting process's membership proof; sends it the
/// coordinator's proof when it passes. Anything else gets nothing.
async fn admit(incoming: quinn::Incoming, secret: &[u8], run_id: &str) -> Result<Joined, String> {
    let conn = incoming
        .await
        .map_err(|e| format!("handshake failed: {e}"))?;
    let refuse = |conn: &quinn::Connection, why: String| {
        conn.close(2u32.into(), b"not a member of this run");
        why
    };
    let (mut send, mut recv) = timeout(Duration::from_secs(10), conn.accept_bi())
        .await
        .map_err(|_| refuse(&conn, "said nothing".into()))?
        .map_err(|e| format!("connection lost: {e}"))?;
    let join = match wire::read::<ToCoordinator>(&mut recv, 64 << 10).await {
        Ok(Some(ToCoordinator::Join(join))) => *join,
        Ok(_) => return Err(refuse(&conn, "did not ask to join".into())),
        Err(e) => return Err(refuse(&conn, format!("bad join request: {e}"))),
    };
    if join.protocol != wire::PROTOCOL {
        return Err(refuse(
            &conn,
            format!(
                "protocol {} (this coordinator speaks {})",
                join.protocol,
                wire::PROTOCOL
            ),
        ));
    }
    if !tls::verify_proof(secret, &conn, Role::Node, &join.proof) {
        return Err(refuse(
            &conn,
            format!(
                "node {:?} could not prove it knows the cluster secret",
                join.name.chars().take(64).collect::<String>()
            ),
        ));
    }
    if join.name.is_empty() || join.name.len() > 64 || join.name.chars().any(char::is_control) {
        return Err(refuse(
            &conn,
            "a node name must be 1-64 printable characters".into(),
        ));
    }
    let proof = tls::proof(secret, &conn, Role::Coordinator).map_err(|e| e.to_string())?;
    let welcome = ToNode::Welcome {
        proof,
        run: run_id.to_string(),
    };
    wire::write(&mut send, &welcome, 1 << 10)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Joined {
        conn,
        send,
        recv,
        join,
    })
}

async fn abort_all(nodes: &mut [Joined], reason: &str) {
    for n in nodes {
        let _ = wire::write(
            &mut n.send,
            &ToNode::Abort {
                reason: reason.to_string(),
            },
            wire::DEFAULT_MAX_FRAME,
        )
        .await;
        n.conn.close(3u32.into(), b"run aborted");
    }
}

enum Step {
    Continue,
    AllReady,
    AllDone,
}

/// What the coordinator has heard from the nodes while the run goes on.
struct Gather<'a> {
    names: &'a [String],
    assignment: &'a [u32],
    node_names: &'a [String],
    logs_dir: PathBuf,
    keep_logs: bool,
    ready: Vec<bool>,
    vtime: Vec<SimTime>,
    finished: Vec<Option<wire::Finished>>,
    done: Vec<bool>,
    actors: BTreeMap<u32, Metrics>,
    /// The log file being appended to, by actor id.
    log_file: Option<(u32, std::fs::File)>,
}

impl Gather<'_> {
    fn handle(&mut self, event: Event) -> Result<Step, String> {
        let node = |i: usize| format!("node {:?} (#{i})", self.node_names[i]);
        match event {
            Event::Silent(i) => Err(format!("{} stopped answering", node(i))),
            Event::Lost(i, _) if self.done[i] => Ok(Step::Continue),
            Event::Lost(i, why) => Err(format!("{} is gone: {why}", node(i))),
            Event::Msg(i, msg) => match msg {
                ToCoordinator::Ready => {
                    self.ready[i] = true;
                    Ok(if self.ready.iter().all(|&r| r) {
                        Step::AllReady
                    } else {
                        Step::Continue
                    })
                }
                ToCoordinator::Heartbeat { vtime, .. } => {
                    self.vtime[i] = self.vtime[i].max(vtime);
                    Ok(Step::Continue)
                }
                ToCoordinator::Finished(f) => {
                    self.finished[i] = Some(*f);
                    Ok(Step::Continue)
                }
                ToCoordinator::Actor { id, metrics } => {
                    self.check_host(i, id)?;
                    if self.actors.insert(id, metrics).is_some() {
                        return Err(format!("{} reported actor #{id} twice", node(i)));
                    }
                    Ok(Step::Continue)
                }
                ToCoordinator::Log { id, bytes } => {
                    self.check_host(i, id)?;
                    if !self.keep_logs {
                        return Err(format!("{} sent logs the scenario does not keep", node(i)));
                    }
                    self.append_log(id, &bytes)?;
                    Ok(Step::Continue)
                }
                ToCoordinator::Done => {
                    if self.finished[i].is_none() {
                        return Err(format!("{} said done before finishing", node(i)));
                    }
                    self.done[i] = true;
                    Ok(if self.done.iter().all(|&d| d) {
                        Step::AllDone
                    } else {
                        Step::Continue
                    })
                }
                ToCoordinator::Failed { reason } => Err(format!("{} failed: {reason}", node(i))),
                ToCoordinator::Join(_) => Err(format!("{} asked to join twice", node(i))),
            },
        }
    }

    fn check_host(&self, node: usize, id: u32) -> Result<(), String> {
        match self.assignment.get(id as usize) {
            Some(&n) if n as usize == node => Ok(()),
            _ => Err(format!(
                "node {:?} (#{node}) sent results for actor #{id}, which it does not host",
                self.node_names[node]
            )),
        }
    }

    fn append_log(&mut self, id: u32, bytes: &[u8]) -> Result<(), String> {
        if self.log_file.as_ref().is_none_or(|(cur, _)| *cur != id) {
            let path = self
                .logs_dir
                .join(format!("{}.jsonl", self.names[id as usize]));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            self.log_file = Some((id, file));
        }
        if let Some((_, file)) = &mut self.log_file {
            file.write_all(bytes)
                .map_err(|e| format!("cannot write the log of actor #{id}: {e}"))?;
        }
        Ok(())
    }
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

    #[test]
    fn flat_networks_get_even_contiguous_blocks() {
        let names = names(10, 0);
        let a = assign(&names, &TopologyConfig::default(), 3);
        assert_eq!(a, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    }

    #[test]
    fn three_tier_boundaries_fall_between_racks() {
        let names = names(39, 7);
        let topology = TopologyConfig {
            kind: TopologyKind::ThreeTier,
            core: 1,
            aggregation: 2,
            access: 4,
            pods: 2,
            ..TopologyConfig::default()
        };
        let racks = server_racks(&names, &topology);
        for nodes in [2, 3, 4] {
            let a = assign(&names, &topology, nodes);
            assert_eq!(a.iter().copied().max(), Some(nodes as u32 - 1));
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "contiguous");
            for (id, rack) in &racks {
                for (other, rack2) in &racks {
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
        // two nodes and two pods: one pod each
        let a = assign(&names, &topology, 2);
        for (id, (_, pod)) in &racks {
            assert_eq!(a[*id] as u64, *pod);
        }
    }
}
