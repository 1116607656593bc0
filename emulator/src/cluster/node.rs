//! `dcemu node`: hosts one partition of a run that a coordinator drives.
//!
//! A node joins the coordinator (proving membership, see [`super::tls`]),
//! receives the scenario and which actors it hosts, connects to every other
//! node, runs its partition's windows exchanging envelopes directly with its
//! peers, sends heartbeats meanwhile, and at the end hands its actors'
//! metrics and logs to the coordinator.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dcemu_actors::model::Msg;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, timeout};

use super::control_link::{ControlLink, Finish, Heartbeat, Report, StopBeating};
use super::links::{Inbound, Link};
use super::local_link;
use super::peer_link::{PeerAcceptor, PeerSystem};
use super::signals::{Interrupts, interrupted};
use super::tls::{self, NodeKey, Role};
use super::transport::QuicTransport;
use super::wire::{self, BarrierStats, Join, PeerFrame, Setup, ToCoordinator, ToNode};
use super::{ClusterError, LOG_CHUNK};
use crate::engine::partition::Handed;
use crate::engine::{Logs, Progress};
use crate::engine::{Partition, TransportError};
use crate::run::prepare_hosted;
use crate::scenario;
use actix::prelude::*;
use dcemu_actors::kernel::ActorId;
use dcemu_actors::model::Node;

/// How a node is started.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// `host:port` of the coordinator.
    pub coordinator: String,
    pub name: String,
    /// Where its peer endpoint listens.
    pub listen: SocketAddr,
    /// Address peers dial, when not the one the coordinator sees.
    pub advertise: Option<SocketAddr>,
    pub secret: String,
    /// How long to keep trying to reach the coordinator, and then the peers.
    pub connect_timeout: Duration,
}

/// Removes the node's scratch directory however it exits.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn err(node: &str, what: impl std::fmt::Display) -> ClusterError {
    ClusterError::Node(format!("node {node}: {what}"))
}

/// Runs a node to the end of the run; an error when the run failed or was aborted.
pub async fn run_node(opts: NodeOptions) -> Result<(), ClusterError> {
    let name = opts.name.clone();
    let e = |what: String| err(&name, what);
    let bootstrap = tls::bootstrap_client(Duration::from_secs(10)).map_err(|x| e(x.to_string()))?;
    // the peer side lives on its own thread (see `peer_thread`)
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel::<PeerCmd>();
    let (reply_tx, mut replies) = mpsc::unbounded_channel::<PeerReply>();
    let listen = opts.listen;
    std::thread::Builder::new()
        .name("partition".into())
        .spawn(move || peer_thread(listen, cmd_rx, reply_tx))
        .map_err(|x| e(format!("cannot start the partition thread: {x}")))?;
    let port = match replies.recv().await {
        Some(PeerReply::Port(Ok(port))) => port,
        Some(PeerReply::Port(Err(why))) => return Err(e(why)),
        _ => return Err(e("the partition thread stopped".into())),
    };
    let endpoint = quinn::Endpoint::client(SocketAddr::new(opts.listen.ip(), 0))
        .map_err(|x| e(format!("cannot open a socket on {}: {x}", opts.listen.ip())))?;

    // 1. reach the coordinator (it may start after us)
    let deadline = Instant::now() + opts.connect_timeout;
    let conn = loop {
        let attempt = async {
            let addr = tokio::net::lookup_host(&opts.coordinator)
                .await
                .map_err(|x| format!("cannot resolve {}: {x}", opts.coordinator))?
                .next()
                .ok_or_else(|| format!("{} resolves to no address", opts.coordinator))?;
            let connecting = endpoint
                .connect_with(bootstrap.clone(), addr, "coordinator.dcemu")
                .map_err(|x| x.to_string())?;
            timeout(Duration::from_secs(2), connecting)
                .await
                .map_err(|_| "no answer".to_string())?
                .map_err(|x| x.to_string())
        };
        match attempt.await {
            Ok(conn) => break conn,
            Err(why) if Instant::now() >= deadline => {
                return Err(e(format!(
                    "cannot reach the coordinator at {}: {why}",
                    opts.coordinator
                )));
            }
            Err(_) => sleep(Duration::from_millis(200)).await,
        }
    };

    // 2. prove membership, check the coordinator's proof
    let key = NodeKey::generate().map_err(|x| e(x.to_string()))?;
    let (mut ctl_send, mut ctl_recv) = conn
        .open_bi()
        .await
        .map_err(|x| e(format!("coordinator: {x}")))?;
    let proof =
        tls::proof(opts.secret.as_bytes(), &conn, Role::Node).map_err(|x| e(x.to_string()))?;
    let join = ToCoordinator::Join(Box::new(Join {
        protocol: wire::PROTOCOL,
        name: name.clone(),
        proof,
        csr: key.csr.clone(),
        port,
        advertise: opts.advertise,
    }));
    let refused = |x: wire::WireError| {
        e(format!(
            "refused by the coordinator (wrong cluster secret or run already full?): {x}"
        ))
    };
    wire::write(&mut ctl_send, &join, wire::DEFAULT_MAX_FRAME)
        .await
        .map_err(refused)?;
    let setup_limit = wire::HARD_MAX_FRAME;
    let run_id = match wire::read::<ToNode, _>(&mut ctl_recv, setup_limit).await {
        Ok(Some(ToNode::Welcome { proof, run }))
            if tls::verify_proof(opts.secret.as_bytes(), &conn, Role::Coordinator, &proof) =>
        {
            if !valid_run_id(&run) {
                conn.close(2u32.into(), b"bad run id");
                return Err(e(format!(
                    "the coordinator sent a malformed run id {:?}",
                    run.chars().take(80).collect::<String>()
                )));
            }
            run
        }
        Ok(Some(ToNode::Welcome { .. })) => {
            conn.close(2u32.into(), b"bad proof");
            return Err(e(
                "the coordinator could not prove it knows the cluster secret; not joining".into(),
            ));
        }
        Ok(Some(ToNode::Abort { reason })) => return Err(e(format!("refused: {reason}"))),
        Ok(other) => {
            return Err(e(format!(
                "unexpected answer to joining: {}",
                other.map_or("end of stream".into(), |m| format!("{m:?}"))
            )));
        }
        Err(x) => return Err(refused(x)),
    };
    let coordinator = conn.remote_address();
    eprintln!("node {name}: joined run {run_id} of the coordinator at {coordinator}");

    // 3. the setup (may come only once every node has joined)
    let setup = {
        match wire::read::<ToNode, _>(&mut ctl_recv, setup_limit).await {
            Ok(Some(ToNode::Setup(setup))) => setup,
            Ok(Some(ToNode::Abort { reason })) => {
                return Err(e(format!("the coordinator aborted the run: {reason}")));
            }
            Ok(Some(other)) => return Err(e(format!("unexpected message {other:?}"))),
            Ok(None) => return Err(e("the coordinator closed the connection".into())),
            Err(x) => return Err(e(format!("coordinator: {x}"))),
        }
    };
    let Setup {
        index,
        nodes,
        ca,
        scenario: scenario_text,
        traces,
        shared_dir,
        assignment,
        max_frame,
        heartbeat_ms,
        failure_timeout_ms,
        same_host_links,
    } = *setup;
    let me = index as usize;
    let max_frame = (max_frame as usize).min(wire::HARD_MAX_FRAME);
    let failure_timeout = Duration::from_millis(failure_timeout_ms.max(100));
    if me >= nodes.len() || assignment.iter().any(|&p| p as usize >= nodes.len()) {
        return Err(e("inconsistent setup from the coordinator".into()));
    }
    let my_cert = nodes[me].cert.clone();
    let identity = key.identity(my_cert);
    let peer_server =
        tls::peer_server(&ca, &identity, failure_timeout).map_err(|x| e(x.to_string()))?;
    let peer_client =
        tls::peer_client(&ca, &identity, failure_timeout).map_err(|x| e(x.to_string()))?;

    // 4. the scenario, loaded exactly as the coordinator loaded it
    let scratch = Scratch(std::env::temp_dir().join(format!(
        "dcemu-node-{}-{}",
        std::process::id(),
        sanitize(&name)
    )));
    let scenario = load_scenario(
        &scratch.0,
        &scenario_text,
        &traces,
        shared_dir.as_deref().map(std::path::Path::new),
    )
    .map_err(e)?;
    let logs_dir = scratch.0.join("actors");
    std::fs::create_dir_all(&logs_dir)
        .map_err(|x| e(format!("cannot create {}: {x}", logs_dir.display())))?;
    // only this node's actors are built: the others' state lives on their nodes
    let mine = |id: ActorId| assignment.get(id.0 as usize) == Some(&index);
    let prepared =
        prepare_hosted(&scenario, Some(logs_dir.clone()), &mine).map_err(|x| e(x.to_string()))?;
    if prepared.names.len() != assignment.len() {
        return Err(e(format!(
            "the scenario has {} actors but the assignment covers {}",
            prepared.names.len(),
            assignment.len()
        )));
    }
    let assignment_usize: Vec<usize> = assignment.iter().map(|&p| p as usize).collect();
    let hosted_logs: Vec<(u32, PathBuf)> = match &prepared.config.logs {
        Logs::Files(_) => prepared
            .actors
            .iter()
            .map(|(id, _)| {
                let name = &prepared.names[id.0 as usize];
                (id.0, logs_dir.join(format!("{name}.jsonl")))
            })
            .collect(),
        _ => Vec::new(),
    };
    let hosted = prepared
        .actors
        .into_iter()
        .map(|(id, actor)| (id, prepared.names[id.0 as usize].clone(), actor))
        .collect();
    let mut parts =
        crate::engine::partition::split(&prepared.config, hosted, &assignment_usize, nodes.len())
            .map_err(|x| e(x.to_string()))?;
    let partition = parts.swap_remove(me);
    drop(parts);
    let hosted = assignment.iter().filter(|&&p| p == index).count();
    eprintln!(
        "node {name}: node {me} of {}, hosting {hosted} actors",
        nodes.len()
    );

    // 5. connect to every peer: dial lower indices, accept higher ones
    let _ = cmd_tx.send(PeerCmd::Mesh {
        server: Box::new(peer_server),
        client: Box::new(peer_client),
        me,
        nodes: nodes.clone(),
        run: run_id.clone(),
        within: opts.connect_timeout,
        same_host: same_host_links,
    });
    match replies.recv().await {
        Some(PeerReply::Mesh(Ok(()))) => {}
        Some(PeerReply::Mesh(Err(why))) => {
            let _ = wire::write(
                &mut ctl_send,
                &ToCoordinator::Failed {
                    reason: why.clone(),
                },
                max_frame,
            )
            .await;
            return Err(e(why));
        }
        _ => return Err(e("the partition thread stopped".into())),
    }
    wire::write(&mut ctl_send, &ToCoordinator::Ready, max_frame)
        .await
        .map_err(|x| e(format!("coordinator: {x}")))?;
    match wire::read::<ToNode, _>(&mut ctl_recv, max_frame).await {
        Ok(Some(ToNode::Start)) => {}
        Ok(Some(ToNode::Abort { reason })) => {
            return Err(e(format!("the coordinator aborted the run: {reason}")));
        }
        other => return Err(e(format!("expected the start, got {other:?}"))),
    }

    // 6. the run
    let (to_partition, inbox) = mpsc::unbounded_channel::<Inbound<Msg>>();
    let (finished_tx, mut finished) = mpsc::channel::<Finishing>(FINISHED_IN_FLIGHT);
    let barrier = Arc::new(Mutex::new(BarrierStats::default()));
    // counters indexed by partition: this node's is `me`
    let progress_for_run = Arc::new(Progress {
        vtime: (0..nodes.len()).map(|_| Default::default()).collect(),
        events: (0..nodes.len()).map(|_| Default::default()).collect(),
        done: Default::default(),
    });
    let _ = cmd_tx.send(PeerCmd::Run(Box::new(RunCmd {
        partition,
        assignment: Arc::new(assignment.clone()),
        max_frame,
        barrier: barrier.clone(),
        progress: progress_for_run.clone(),
        inbox: (to_partition.clone(), inbox),
        nodes: nodes.len(),
        me,
        close_within: failure_timeout,
        finished: finished_tx,
    })));

    // the control link and the heartbeat are actors from here on
    let of_run = format!("the coordinator at {coordinator} (run {run_id})");
    let results_to = of_run.clone();
    let (control, mut last_word) =
        ControlLink::start(ctl_send, ctl_recv, max_frame, of_run, to_partition.clone());
    let heartbeat = Heartbeat {
        every: Duration::from_millis(heartbeat_ms.clamp(10, 60_000)),
        progress: progress_for_run.clone(),
        me,
        to: control.clone(),
    }
    .start();
    let (_interrupts, mut interrupts_seen) = Interrupts::start();
    let files = matches!(prepared.config.logs, Logs::Files(_));
    let result = loop {
        tokio::select! {
            Some(item) = finished.recv() => {
                hand_over(&control, item, files.then_some(&logs_dir)).await.map_err(e)?;
            }
            r = replies.recv() => match r {
                Some(PeerReply::Done(r)) => break r,
                _ => break Err(Stopped {
                    reason: "the partition thread stopped".to_string(),
                    local: false,
                }),
            },
            _ = interrupted(&mut interrupts_seen) => {
                let _ = to_partition.send(Inbound::Stop { reason: "interrupted (Ctrl-C)".into() });
            }
        }
    };
    let _ = heartbeat.send(StopBeating).await;
    let report = |msg: ToCoordinator| control.do_send(Report(msg));
    // a stopped run's logs (what its actors logged up to the stop) still
    // go to the coordinator, as `dcemu run` keeps them with incomplete results
    let finish = || async {
        let _ = timeout(failure_timeout * 3, async {
            for (id, path) in &hosted_logs {
                if send_log(&control, *id, path).await.is_err() {
                    break;
                }
            }
        })
        .await;
        report(ToCoordinator::Done);
        let _ = timeout(Duration::from_secs(2), control.send(Finish)).await;
    };
    match result {
        Ok(()) => {}
        Err(Stopped {
            reason,
            local: true,
        }) => {
            // the root cause is here (a model error, e.g. an external
            // scheduler's program that died): tell the coordinator at once,
            // before the peers' echoes (their links to us dropped) reach it
            report(ToCoordinator::Failed {
                reason: reason.clone(),
            });
            finish().await;
            return Err(e(format!("the run failed: {reason}")));
        }
        Err(Stopped { reason, .. }) => {
            // a peer stopping is usually the echo of the coordinator's
            // abort: report the coordinator's reason when it comes soon
            let reason = match timeout(Duration::from_millis(500), &mut last_word).await {
                Ok(Ok(Err(coordinator_reason))) => {
                    report(ToCoordinator::Failed {
                        reason: coordinator_reason.clone(),
                    });
                    coordinator_reason
                }
                Ok(_) => {
                    report(ToCoordinator::Failed {
                        reason: reason.clone(),
                    });
                    reason
                }
                // else tell the coordinator, and wait (within the failure
                // bound) for its abort, or for the control link's loss when
                // the coordinator itself is gone: either names the root cause
                Err(_) => {
                    report(ToCoordinator::Failed {
                        reason: reason.clone(),
                    });
                    match timeout(failure_timeout, &mut last_word).await {
                        Ok(Ok(Err(coordinator_reason))) => coordinator_reason,
                        _ => reason,
                    }
                }
            };
            finish().await;
            return Err(e(format!("the run failed: {reason}")));
        }
    }

    // 7. hand over the rest of the results
    drop(cmd_tx);
    // what the partition handed over after the last turn of the loop
    while let Some(item) = finished.recv().await {
        hand_over(&control, item, files.then_some(&logs_dir))
            .await
            .map_err(e)?;
    }
    report(ToCoordinator::Done);
    match control.send(Finish).await {
        Ok(Ok(())) => {}
        Ok(Err(x)) => return Err(e(format!("cannot send the results to {results_to}: {x}"))),
        Err(x) => return Err(e(format!("cannot send the results to {results_to}: {x}"))),
    }
    match timeout(failure_timeout * 3, &mut last_word).await {
        Ok(Ok(Ok(()))) => {
            conn.close(0u32.into(), b"done");
            endpoint.wait_idle().await;
            eprintln!("node {name}: run complete");
            Ok(())
        }
        Ok(Ok(Err(reason))) => Err(e(reason)),
        _ => Err(e(
            "the coordinator did not confirm the end of the run".into()
        )),
    }
}

/// Whether `run` looks like a run id (`tls::random_run_id`): it is
/// printed in messages and compared, so it must be short plain hex.
pub fn valid_run_id(run: &str) -> bool {
    run.len() == 2 * wire::RUN_ID_BYTES && run.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A name safe for a file name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(64)
        .collect()
}

/// Writes the received scenario and csv traces where loading expects them
/// and loads them; the result must print back to the same text. An
/// external scheduler's program runs in, and public-format traces are read
/// from, `shared_dir` (the coordinator's scenario directory,
/// [`wire::Setup::shared_dir`]), not this scratch directory: the scenario
/// names them relative to its own place.
fn load_scenario(
    dir: &std::path::Path,
    text: &str,
    traces: &[(String, Vec<u8>)],
    shared_dir: Option<&std::path::Path>,
) -> Result<scenario::Scenario, String> {
    std::fs::create_dir_all(dir.join("traces"))
        .map_err(|x| format!("cannot create {}: {x}", dir.display()))?;
    for (rel, bytes) in traces {
        let file = rel
            .strip_prefix("traces/")
            .filter(|f| !f.contains('/') && !f.contains('\\') && !f.starts_with('.'))
            .ok_or_else(|| format!("the coordinator sent a trace with a bad path {rel:?}"))?;
        std::fs::write(dir.join("traces").join(file), bytes)
            .map_err(|x| format!("cannot write trace {rel}: {x}"))?;
    }
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).map_err(|x| format!("cannot write {}: {x}", path.display()))?;
    let label = path.display().to_string();
    let shared_dir = match shared_dir {
        Some(d) if !d.is_absolute() => {
            return Err(format!(
                "the coordinator named a relative scenario directory {}",
                d.display()
            ));
        }
        other => other,
    };
    let loaded = scenario::load_with(&label, text, &[], shared_dir)
        .map_err(|x| format!("the scenario from the coordinator does not load: {x}"))?;
    if loaded.scheduler.external.is_some() && shared_dir.is_none() {
        return Err(
            "the coordinator named no absolute directory for the external scheduler's program"
                .into(),
        );
    }
    if loaded.to_toml() != text {
        return Err("the scenario from the coordinator does not load back to itself".into());
    }
    Ok(loaded)
}

/// The partition's results, from its thread to the node's main task.
/// Moved, not stored: at most [`FINISHED_IN_FLIGHT`] wait at once, and
/// boxing each actor's output would cost an allocation per actor.
#[allow(clippy::large_enum_variant)]
enum Finishing {
    /// The run is over (the actors' outputs follow).
    Ended(Box<wire::Finished>),
    Actor(ActorId, crate::engine::ActorOutput),
}

/// How many finished actors' outputs may wait for the control link: the
/// partition's thread finishes the next actor only once there is room, so
/// a node holds a few actors' metrics at a time, not all of them (issue
/// 43: a node's memory).
const FINISHED_IN_FLIGHT: usize = 64;

/// Sends the end of the run (with this node's barrier statistics) or one
/// finished actor's results to the coordinator, and then the actor's log
/// file when logs are written to `logs_dir`; returns once they are
/// written, so the outputs waiting behind it stay where they are.
async fn hand_over(
    control: &Addr<ControlLink>,
    item: Finishing,
    logs_dir: Option<&PathBuf>,
) -> Result<(), String> {
    let (id, actor) = match item {
        Finishing::Ended(finished) => {
            return control
                .send(Report(ToCoordinator::Finished(finished)))
                .await
                .map_err(|x| format!("cannot report the end of the run: {x}"));
        }
        Finishing::Actor(id, actor) => (id, actor),
    };
    let report = ToCoordinator::Actor {
        id: id.0,
        metrics: actor.metrics,
        events: actor.events,
        busy_ns: actor.busy_ns,
        held_bytes: actor.held_bytes,
    };
    control
        .send(Report(report))
        .await
        .map_err(|x| format!("cannot hand over the results of actor #{}: {x}", id.0))?;
    match logs_dir {
        Some(dir) => send_log(control, id.0, &dir.join(format!("{}.jsonl", actor.name))).await,
        None => Ok(()),
    }
}

/// Sends an actor's log in chunks, each written before the next is read,
/// so a large log never sits whole in memory.
async fn send_log(ctl: &Addr<ControlLink>, id: u32, path: &std::path::Path) -> Result<(), String> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(x) if x.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(x) => return Err(format!("cannot read {}: {x}", path.display())),
    };
    loop {
        let mut buf = vec![0u8; LOG_CHUNK];
        let mut filled = 0;
        while filled < buf.len() {
            let n = file
                .read(&mut buf[filled..])
                .map_err(|x| format!("cannot read {}: {x}", path.display()))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            return Ok(());
        }
        buf.truncate(filled);
        ctl.send(Report(ToCoordinator::Log { id, bytes: buf }))
            .await
            .map_err(|x| format!("cannot hand over the log of actor #{id}: {x}"))?;
    }
}

/// Connects to every other node: dials those with a lower index (they
/// check this node's certificate), accepts those with a higher one
/// (checking theirs); anything else that connects is refused and logged.
/// With `same_host`, each pair that shares a network namespace also gets a
/// same-host link ([`local_link`]).
async fn connect_mesh(
    endpoint: &quinn::Endpoint,
    client: &quinn::ClientConfig,
    me: usize,
    nodes: &[wire::PeerInfo],
    run: &str,
    deadline: Instant,
    same_host: bool,
) -> Result<Vec<Link>, String> {
    let mut links = Vec::new();
    let expected_in = nodes.len() - me - 1;
    let accept = PeerAcceptor::start(
        endpoint.clone(),
        me,
        nodes.to_vec(),
        run,
        expected_in,
        same_host,
    );
    for (peer, info) in nodes.iter().enumerate().take(me) {
        let link = loop {
            let attempt = async {
                let connecting = endpoint
                    .connect_with(client.clone(), info.addr, &tls::node_dns_name(peer as u32))
                    .map_err(|x| x.to_string())?;
                let conn = timeout(Duration::from_secs(2), connecting)
                    .await
                    .map_err(|_| "no answer".to_string())?
                    .map_err(|x| x.to_string())?;
                let (mut send, mut recv) = conn.open_bi().await.map_err(|x| x.to_string())?;
                wire::write(
                    &mut send,
                    &PeerFrame::<Msg>::Hello {
                        from: me as u32,
                        run: run.to_string(),
                    },
                    wire::DEFAULT_MAX_FRAME,
                )
                .await
                .map_err(|x| x.to_string())?;
                // the peer answers once it has checked who we are
                match timeout(
                    Duration::from_secs(5),
                    wire::read::<PeerFrame<Msg>, _>(&mut recv, 1024),
                )
                .await
                {
                    Ok(Ok(Some(PeerFrame::Hello { from, run: theirs })))
                        if from as usize == peer && theirs == run => {}
                    Ok(Ok(Some(PeerFrame::Hello { run: theirs, .. }))) if theirs != run => {
                        conn.close(2u32.into(), b"another run");
                        return Err(format!(
                            "it belongs to run {}, not to run {run}",
                            theirs.chars().take(80).collect::<String>()
                        ));
                    }
                    Ok(Ok(other)) => return Err(format!("unexpected answer {other:?}")),
                    Ok(Err(x)) => return Err(x.to_string()),
                    Err(_) => return Err("no answer to hello".into()),
                }
                let local = take_local_offer(&mut send, &mut recv, same_host).await?;
                Ok::<_, String>(Link {
                    peer,
                    conn,
                    send,
                    recv,
                    local,
                })
            };
            match attempt.await {
                Ok(link) => break link,
                Err(why) if Instant::now() >= deadline => {
                    return Err(format!(
                        "cannot connect to node {peer} ({}) at {}: {why}",
                        info.name, info.addr
                    ));
                }
                Err(_) => sleep(Duration::from_millis(200)).await,
            }
        };
        links.push(link);
    }
    let accepted = match timeout(deadline.saturating_duration_since(Instant::now()), accept).await {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(x)) => return Err(format!("accepting peers: {x}")),
        Err(_) => return Err("not every peer connected in time".into()),
    };
    links.extend(accepted);
    links.sort_by_key(|l| l.peer);
    Ok(links)
}

/// The dialer's side of a same-host link: reads the acceptor's offer and,
/// if this node can reach the socket, says so over QUIC and presents the
/// key there; `None` keeps the link on QUIC.
async fn take_local_offer(
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    same_host: bool,
) -> Result<Option<local_link::LocalLink>, String> {
    let offer = match timeout(
        Duration::from_secs(5),
        wire::read::<PeerFrame<Msg>, _>(recv, 1024),
    )
    .await
    {
        Ok(Ok(Some(PeerFrame::Local { offer }))) => offer,
        Ok(Ok(other)) => return Err(format!("expected a same-host offer, got {other:?}")),
        Ok(Err(x)) => return Err(x.to_string()),
        Err(_) => return Err("no same-host offer after hello".into()),
    };
    let Some(offer) = offer else { return Ok(None) };
    let stream = if same_host {
        local_link::connect(&offer).ok()
    } else {
        None
    };
    let answer = PeerFrame::<Msg>::LocalAnswer {
        connected: stream.is_some(),
    };
    wire::write(send, &answer, 1024)
        .await
        .map_err(|x| x.to_string())?;
    match stream {
        Some(stream) => local_link::handshake(stream, &offer)
            .await
            .map(Some)
            .map_err(|x| format!("same-host link: {x}")),
        None => Ok(None),
    }
}

/// An engine error as the coordinator should read it: a failed link names
/// the peer node, whose loss is usually the root cause.
fn naming_the_peer(error: &crate::engine::EngineError, names: &[String]) -> String {
    match error {
        crate::engine::EngineError::Transport {
            source: TransportError::Link { peer, reason },
            ..
        } => match names.get(*peer) {
            Some(name) => format!("lost its link to node \"{name}\" (#{peer}): {reason}"),
            None => error.to_string(),
        },
        _ => error.to_string(),
    }
}

/// Commands to the partition's thread.
enum PeerCmd {
    /// Connect to every peer.
    Mesh {
        server: Box<quinn::ServerConfig>,
        client: Box<quinn::ClientConfig>,
        me: usize,
        nodes: Vec<wire::PeerInfo>,
        /// The run id every peer's hello must carry.
        run: String,
        within: Duration,
        /// Offer and take same-host links.
        same_host: bool,
    },
    /// Run the partition over the mesh.
    Run(Box<RunCmd>),
}

struct RunCmd {
    partition: Partition<Node>,
    assignment: Arc<Vec<u32>>,
    max_frame: usize,
    barrier: Arc<Mutex<BarrierStats>>,
    progress: Arc<Progress>,
    inbox: (
        mpsc::UnboundedSender<Inbound<Msg>>,
        mpsc::UnboundedReceiver<Inbound<Msg>>,
    ),
    nodes: usize,
    me: usize,
    close_within: Duration,
    /// Where each actor's output goes as soon as it is finished.
    finished: mpsc::Sender<Finishing>,
}

enum PeerReply {
    Port(Result<u16, String>),
    Mesh(Result<(), String>),
    /// The partition's run is over; its summary and outputs went through
    /// `finished` already.
    Done(Result<(), Stopped>),
}

/// Why the partition stopped before the end of the run.
struct Stopped {
    reason: String,
    /// Whether the cause is in this partition (a model error, a log that
    /// cannot be written, a panic) rather than a link or a stop order: the
    /// node then reports it at once, since its peers will soon report the
    /// loss of their links to it.
    local: bool,
}

/// The partition's thread. It owns a current-thread runtime with the peer
/// endpoint, so the window exchanges run on the thread that computes the
/// windows (see [`QuicTransport`]); the control link stays on the main
/// runtime.
fn peer_thread(
    listen: SocketAddr,
    mut cmds: mpsc::UnboundedReceiver<PeerCmd>,
    replies: mpsc::UnboundedSender<PeerReply>,
) {
    if let Err(x) = PeerSystem::install() {
        let _ = replies.send(PeerReply::Port(Err(format!("no runtime: {x}"))));
        return;
    }
    let endpoint = match PeerSystem::block_on(async { quinn::Endpoint::client(listen) }) {
        Some(Ok(ep)) => ep,
        other => {
            let why = other.map_or("no runtime".to_string(), |r| {
                r.err().map(|x| x.to_string()).unwrap_or_default()
            });
            let _ = replies.send(PeerReply::Port(Err(format!(
                "cannot listen on {listen}: {why}"
            ))));
            return;
        }
    };
    let port = endpoint
        .local_addr()
        .map(|a| a.port())
        .map_err(|x| x.to_string());
    let _ = replies.send(PeerReply::Port(port));
    let mut links = Vec::new();
    let mut names: Vec<String> = Vec::new();
    // waiting for a command drives the system, so the links stay serviced
    while let Some(Some(cmd)) = PeerSystem::block_on(cmds.recv()) {
        match cmd {
            PeerCmd::Mesh {
                server,
                client,
                me,
                nodes,
                run,
                within,
                same_host,
            } => {
                endpoint.set_server_config(Some(*server));
                let result = PeerSystem::block_on(connect_mesh(
                    &endpoint,
                    &client,
                    me,
                    &nodes,
                    &run,
                    Instant::now() + within,
                    same_host,
                ))
                .unwrap_or_else(|| Err("no runtime".into()));
                names = nodes.iter().map(|n| n.name.clone()).collect();
                let reply = match result {
                    Ok(l) => {
                        links = l;
                        Ok(())
                    }
                    Err(why) => Err(why),
                };
                let _ = replies.send(PeerReply::Mesh(reply));
            }
            PeerCmd::Run(run) => {
                let RunCmd {
                    partition,
                    assignment,
                    max_frame,
                    barrier,
                    progress,
                    inbox,
                    nodes,
                    me,
                    close_within,
                    finished,
                } = *run;
                let links = std::mem::take(&mut links);
                let stats = barrier.clone();
                let transport = PeerSystem::block_on(async move {
                    QuicTransport::start(me, nodes, links, assignment, max_frame, inbox, stats)
                });
                let Some(mut transport) = transport else {
                    let _ = replies.send(PeerReply::Done(Err(Stopped {
                        reason: "no runtime".into(),
                        local: true,
                    })));
                    continue;
                };
                // the main task writes each output before it takes the next
                // one: waiting for room here keeps a few outputs alive at once
                let sink = move |handed: Handed<'_>| {
                    let item = match handed {
                        Handed::Ended(summary) => {
                            Finishing::Ended(Box::new(summary_for_coordinator(summary, &barrier)))
                        }
                        Handed::Actor(id, out) => Finishing::Actor(id, out),
                    };
                    let _ = PeerSystem::block_on(finished.send(item));
                };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    partition.run_streaming(&mut transport, &progress, sink)
                }));
                let reply = match result {
                    Ok(Ok(_streamed)) => {
                        transport.close(close_within);
                        Ok(())
                    }
                    Ok(Err(engine_error)) => Err(Stopped {
                        local: !matches!(
                            engine_error,
                            crate::engine::EngineError::Transport { .. }
                        ),
                        reason: naming_the_peer(&engine_error, &names),
                    }),
                    Err(_) => Err(Stopped {
                        reason: "its partition panicked".to_string(),
                        local: true,
                    }),
                };
                let _ = replies.send(PeerReply::Done(reply));
            }
        }
    }
    endpoint.close(0u32.into(), b"done");
    let _ = PeerSystem::block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    });
    PeerSystem::uninstall();
}

/// The end of the run as the coordinator is told it: the partition's
/// summary and this node's barrier statistics.
fn summary_for_coordinator(
    summary: &crate::engine::partition::PartitionOutput,
    barrier: &Mutex<BarrierStats>,
) -> wire::Finished {
    let mut stats = barrier.lock().map(|s| *s).unwrap_or_default();
    let exchange = summary.exchange;
    stats.exchanges = exchange.count;
    stats.total_ns = nanos(exchange.total);
    stats.min_ns = nanos(exchange.min);
    stats.max_ns = nanos(exchange.max);
    wire::Finished {
        events: summary.events,
        windows: summary.windows,
        last_event: summary.last_event,
        pending: summary.pending,
        causal_steps: summary.causal_steps,
        barrier: stats,
    }
}

/// A wall-clock duration in nanoseconds for the wire's statistics.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::tls::RunCa;

    /// Node 0 of run `ours` accepts peers; node 1 (certificate of the same
    /// CA) dials it and says hello as a member of run `theirs`. Returns how
    /// node 0 closed that link, if it did, and whether it took the link.
    async fn hello_with_run(ours: &str, theirs: &str) -> (Option<String>, bool) {
        let ca = RunCa::generate().unwrap();
        let (k0, k1) = (NodeKey::generate().unwrap(), NodeKey::generate().unwrap());
        let c0 = ca.sign_node(&k0.csr, 0).unwrap();
        let c1 = ca.sign_node(&k1.csr, 1).unwrap();
        let (id0, id1) = (k0.identity(c0.clone()), k1.identity(c1.clone()));
        let limit = Duration::from_secs(5);
        let server = quinn::Endpoint::server(
            tls::peer_server(&ca.cert_der(), &id0, limit).unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap();
        let addr = server.local_addr().unwrap();
        let nodes = vec![
            wire::PeerInfo {
                name: "n0".into(),
                addr,
                cert: c0,
            },
            wire::PeerInfo {
                name: "n1".into(),
                addr,
                cert: c1,
            },
        ];
        let accepting = PeerAcceptor::start(server, 0, nodes, ours, 1, false);
        let client = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let conn = client
            .connect_with(
                tls::peer_client(&ca.cert_der(), &id1, limit).unwrap(),
                addr,
                &tls::node_dns_name(0),
            )
            .unwrap()
            .await
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        let hello = PeerFrame::<Msg>::Hello {
            from: 1,
            run: theirs.to_string(),
        };
        wire::write(&mut send, &hello, 1024).await.unwrap();
        let answer = timeout(limit, wire::read::<PeerFrame<Msg>, _>(&mut recv, 1024)).await;
        let closed = match answer {
            Ok(Ok(Some(PeerFrame::Hello { .. }))) => None,
            _ => match timeout(limit, conn.closed()).await {
                Ok(quinn::ConnectionError::ApplicationClosed(c)) => {
                    Some(String::from_utf8_lossy(&c.reason).to_string())
                }
                other => Some(format!("{other:?}")),
            },
        };
        let took = timeout(Duration::from_millis(300), accepting)
            .await
            .is_ok_and(|links| links.is_ok_and(|l| l.len() == 1));
        (closed, took)
    }

    #[actix_rt::test]
    async fn a_peer_of_another_run_is_refused_even_with_a_valid_certificate() {
        let a = "0123456789abcdef0123456789abcdef";
        let b = "fedcba9876543210fedcba9876543210";
        assert_eq!(hello_with_run(a, a).await, (None, true));
        let (closed, took) = hello_with_run(a, b).await;
        assert_eq!(closed.as_deref(), Some("another run"));
        assert!(!took, "the node took a link from another run");
    }

    #[test]
    fn run_ids_are_plain_hex_of_the_right_length() {
        assert!(valid_run_id(&tls::random_run_id().unwrap()));
        assert!(!valid_run_id("0123"));
        assert!(!valid_run_id(&"z".repeat(32)));
        assert!(!valid_run_id(&format!("{}\n", "a".repeat(31))));
    }
}
