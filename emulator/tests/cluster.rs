//! Multi-process runs: coordinator + node processes give the same digest as
//! `dcemu run`; rogue processes are refused; a dead node aborts the run
//! within the failure bound; and the same over network namespaces.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::{Procs, SECRET};

const BIN: &str = env!("CARGO_BIN_EXE_dcemu");

/// A child whose stderr lines are collected by a thread.
struct Watched {
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watched {
    fn spawn(cmd: &mut Command, procs: &mut Procs) -> Watched {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dcemu");
        let stderr = child.stderr.take().expect("stderr piped");
        procs.0.push(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `needle`; returns it.
    fn wait_for(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// The address a coordinator says it listens on.
    fn listening_addr(&mut self) -> String {
        let line = self.wait_for("listening on", Duration::from_secs(30));
        line.split("listening on ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string()
    }

    /// Starts `names` as nodes of the coordinator at `addr` on loopback.
    fn loopback_nodes(addr: &str, names: &[&str], procs: &mut Procs) -> Vec<Watched> {
        names
            .iter()
            .map(|name| {
                Watched::spawn(
                    Command::new(BIN)
                        .args(["node", "--coordinator", addr, "--name", name])
                        .args(["--listen", "127.0.0.1:0", "--secret", SECRET]),
                    procs,
                )
            })
            .collect()
    }

    fn rest(&mut self) -> String {
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        self.seen.join("\n")
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn single_digest(dir: &Path, scenario: &[&str]) -> String {
    let out = dir.join("single");
    let status = Command::new(BIN)
        .arg("run")
        .args(scenario)
        .args(["-q", "--out"])
        .arg(&out)
        .status()
        .expect("run dcemu");
    assert!(status.success());
    std::fs::read_to_string(out.join("digest")).unwrap()
}

/// `prefix` wraps every command (e.g. `ip netns exec NS`); `hosts[i]` is
/// the address node i listens on (the coordinator uses `coord_host`).
struct Layout<'a> {
    coord_prefix: Vec<String>,
    coord_host: &'a str,
    node_prefix: Vec<Vec<String>>,
    node_hosts: Vec<String>,
    /// More coordinator flags.
    coord_args: Vec<&'static str>,
}

fn command(prefix: &[String]) -> Command {
    match prefix.split_first() {
        None => Command::new(BIN),
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(BIN);
            c
        }
    }
}

fn loopback(nodes: usize) -> Layout<'static> {
    Layout {
        coord_prefix: Vec::new(),
        coord_host: "127.0.0.1",
        node_prefix: vec![Vec::new(); nodes],
        node_hosts: vec!["127.0.0.1".into(); nodes],
        coord_args: Vec::new(),
    }
}

/// Per node of the last run on `layout` in `dir`: (same-host links, window
/// exchanges), from its `run.json`.
fn links_of(dir: &Path, layout: &Layout) -> Vec<(u64, u64)> {
    let out = dir.join(format!("multi-{}", layout.node_hosts.len()));
    let text = std::fs::read_to_string(out.join("run.json")).unwrap();
    let facts: serde_json::Value = serde_json::from_str(&text).unwrap();
    facts["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["local_links"].as_u64().unwrap(),
                n["barrier_exchanges"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Runs the scenario on a coordinator and nodes; returns the digest.
fn cluster_digest(dir: &Path, scenario: &[&str], layout: &Layout) -> String {
    let mut procs = Procs::default();
    let out = dir.join(format!("multi-{}", layout.node_hosts.len()));
    let mut coord = Watched::spawn(
        command(&layout.coord_prefix)
            .args(["coordinator", "--scenario"])
            .args(scenario)
            .arg("--nodes")
            .arg(layout.node_hosts.len().to_string())
            .arg("--listen")
            .arg(format!("{}:0", layout.coord_host))
            .args(["-q", "--secret", SECRET, "--force", "--out"])
            .arg(&out)
            .args(&layout.coord_args),
        &mut procs,
    );
    let addr = coord.listening_addr();
    let mut nodes = Vec::new();
    for (i, host) in layout.node_hosts.iter().enumerate() {
        nodes.push(Watched::spawn(
            command(&layout.node_prefix[i])
                .args(["node", "--coordinator", &addr, "--name"])
                .arg(format!("n{i}"))
                .arg("--listen")
                .arg(format!("{host}:0"))
                .env("DCEMU_SECRET", SECRET),
            &mut procs,
        ));
    }
    let status = wait_exit(&mut procs.0[0], Duration::from_secs(120));
    let log = coord.rest();
    assert!(
        status.is_some_and(|s| s.success()),
        "coordinator failed: {status:?}\n{log}"
    );
    assert!(
        !log.contains("panicked"),
        "the coordinator panicked:\n{log}"
    );
    for (i, node) in nodes.iter_mut().enumerate() {
        let status = wait_exit(&mut procs.0[i + 1], Duration::from_secs(10));
        let said = node.rest();
        assert!(
            status.is_some_and(|s| s.success()),
            "node {i} failed: {status:?}\n{said}"
        );
        assert!(!said.contains("panicked"), "node {i} panicked:\n{said}");
    }
    assert!(!out.join("INCOMPLETE").exists());
    std::fs::read_to_string(out.join("digest")).unwrap()
}

fn quickstart() -> Vec<&'static str> {
    // the embedded quickstart, shortened so debug-ish test builds stay quick
    vec![
        concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/quickstart.toml"),
        "--set",
        "run.end=10min",
    ]
}

fn thousand_servers() -> Vec<&'static str> {
    vec![
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/paragon/ec2-low.toml"
        ),
        "--set",
        "run.end=20s",
    ]
}

#[test]
fn two_and_four_nodes_on_loopback_match_a_single_process_run() {
    for (label, scenario) in [
        ("quickstart", quickstart()),
        ("ec2-low", thousand_servers()),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let single = single_digest(tmp.path(), &scenario);
        for nodes in [2, 4] {
            let layout = loopback(nodes);
            let multi = cluster_digest(tmp.path(), &scenario, &layout);
            assert_eq!(single, multi, "{label} on {nodes} nodes");
            let links = links_of(tmp.path(), &layout);
            let in_windows = links.iter().filter(|(_, x)| *x > 1).count() as u64;
            assert!(in_windows >= 2, "{label}: {links:?}");
            for (local, exchanges) in links {
                let expected = if exchanges > 1 { in_windows - 1 } else { 0 };
                assert_eq!(local, expected, "{label} on {nodes} nodes: same-host links");
            }
        }
        let mut quic = loopback(2);
        quic.coord_args = vec!["--same-host-links", "off"];
        let multi = cluster_digest(tmp.path(), &scenario, &quic);
        assert_eq!(single, multi, "{label} over QUIC only");
        assert!(links_of(tmp.path(), &quic).iter().all(|(l, _)| *l == 0));
        let held = held_bytes(&tmp.path().join("multi-2"));
        assert!(
            !held.is_empty() && held.iter().all(|&b| b > 0),
            "{label}: every node reports the heap its actors held: {held:?}"
        );
        let from: &'static str = Box::leak(
            tmp.path()
                .join("single")
                .display()
                .to_string()
                .into_boxed_str(),
        );
        let mut by_memory = loopback(2);
        by_memory.coord_args = vec!["--balance-from", from, "--balance-by", "memory"];
        let multi = cluster_digest(tmp.path(), &scenario, &by_memory);
        assert_eq!(single, multi, "{label} on 2 nodes cut by memory");
    }
}

/// A node hands its actors' results over one by one as they are finished,
/// and they may outgrow the frame limit meant for the run's batches (the
/// scheduler's here are about 90 KB): the node says the run is over first,
/// so the coordinator takes them. Told after them, it refused the first.
#[test]
fn results_larger_than_the_batch_frame_limit_reach_the_coordinator() {
    let scenario = quickstart();
    let tmp = tempfile::tempdir().unwrap();
    let single = single_digest(tmp.path(), &scenario);
    let mut small_frames = loopback(2);
    small_frames.coord_args = vec!["--max-frame", "32768"];
    let multi = cluster_digest(tmp.path(), &scenario, &small_frames);
    assert_eq!(single, multi);
}

/// `work.csv`'s `held_bytes` column of the results directory `dir`.
fn held_bytes(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("work.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("actor,events,busy_ns,held_bytes"));
    lines
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect()
}

fn thesis_large_dc(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec![
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/network/thesis-large-dc.toml"
        ),
        "--set",
        "run.end=5min",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn four_nodes_take_two_pods_each_and_change_nothing() {
    // 8 pods over 4 nodes: the count cut shares out the servers and the
    // switches follow them (it once left the last node only switches, then
    // nothing)
    let scenario = thesis_large_dc(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let single = single_digest(tmp.path(), &scenario);
    let layout = loopback(4);
    assert_eq!(cluster_digest(tmp.path(), &scenario, &layout), single);
    let links = links_of(tmp.path(), &layout);
    assert!(
        links.iter().all(|&(l, x)| l == 3 && x > 1),
        "every node hosts actors and links to the three others: {links:?}"
    );
}

#[test]
fn nodes_without_actors_stay_out_of_the_windows_and_change_nothing() {
    // one server: the scheduler, the tenant and the server are the only
    // actors that are not switches, too few for 4 nodes, so one node
    // takes everything and three hold nothing
    let scenario = thesis_large_dc(&[
        "--set",
        "server_types.0.count=1",
        "--set",
        "server_types.1.count=0",
        "--set",
        "server_types.2.count=0",
        "--set",
        "server_types.3.count=0",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let single = single_digest(tmp.path(), &scenario);
    let layout = loopback(4);
    assert_eq!(cluster_digest(tmp.path(), &scenario, &layout), single);
    let links = links_of(tmp.path(), &layout);
    let idle: Vec<_> = links.iter().filter(|(_, x)| *x == 1).collect();
    assert_eq!(idle.len(), 3, "three nodes without actors: {links:?}");
    assert!(
        links.iter().all(|&(l, _)| l == 0),
        "no node has a peer with actors to link to: {links:?}"
    );
}

#[test]
fn a_process_without_the_secret_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = quickstart();
    let single = single_digest(tmp.path(), &scenario);
    let mut procs = Procs::default();
    let out = tmp.path().join("multi");
    let mut coord = Watched::spawn(
        Command::new(BIN)
            .args(["coordinator", "--scenario"])
            .args(&scenario)
            .args(["--nodes", "2", "--listen", "127.0.0.1:0", "-q"])
            .args(["--secret", SECRET, "--out"])
            .arg(&out),
        &mut procs,
    );
    let addr = coord.listening_addr();
    let rogue = Command::new(BIN)
        .args(["node", "--coordinator", &addr, "--name", "rogue"])
        .args(["--listen", "127.0.0.1:0", "--connect-timeout", "5s"])
        .args(["--secret", "not-the-secret-at-all"])
        .output()
        .unwrap();
    assert_eq!(rogue.status.code(), Some(1));
    let rogue_err = String::from_utf8_lossy(&rogue.stderr);
    assert!(rogue_err.contains("refused"), "{rogue_err}");
    coord.wait_for(
        "could not prove it knows the cluster secret",
        Duration::from_secs(10),
    );
    let mut nodes = Vec::new();
    for i in 0..2 {
        nodes.push(Watched::spawn(
            Command::new(BIN)
                .args(["node", "--coordinator", &addr, "--name"])
                .arg(format!("n{i}"))
                .args(["--listen", "127.0.0.1:0", "--secret", SECRET]),
            &mut procs,
        ));
    }
    let status = wait_exit(&mut procs.0[0], Duration::from_secs(120));
    assert!(status.is_some_and(|s| s.success()), "{}", coord.rest());
    drop(nodes);
    assert_eq!(std::fs::read_to_string(out.join("digest")).unwrap(), single);
}

#[test]
fn killing_a_node_aborts_the_run_within_the_bound_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut procs = Procs::default();
    let out = tmp.path().join("multi");
    let mut coord = Watched::spawn(
        Command::new(BIN)
            .args([
                "coordinator",
                "--nodes",
                "2",
                "--listen",
                "127.0.0.1:0",
                "-q",
            ])
            .args(["--failure-timeout", "2s", "--secret", SECRET, "--out"])
            .arg(&out),
        &mut procs,
    );
    let addr = coord.listening_addr();
    let mut nodes = Watched::loopback_nodes(&addr, &["survivor", "victim"], &mut procs);
    coord.wait_for("running", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    let killed_at = Instant::now();
    procs.0[2].kill().unwrap();
    let status = wait_exit(&mut procs.0[0], Duration::from_secs(10));
    let took = killed_at.elapsed();
    let log = coord.rest();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{log}");
    assert!(took < Duration::from_secs(5), "took {took:?}\n{log}");
    assert!(log.contains("\"victim\""), "{log}");
    assert!(log.contains("virtual time reached"), "{log}");
    assert!(out.join("INCOMPLETE").exists());
    assert!(!out.join("digest").exists());
    let survivor = wait_exit(&mut procs.0[1], Duration::from_secs(10));
    assert!(
        survivor.is_some_and(|s| !s.success()),
        "the surviving node must exit non-zero: {survivor:?}\n{}",
        nodes[0].rest()
    );
}

/// Network namespaces joined by a bridge in their own namespace; removed on drop.
struct Namespaces {
    names: Vec<String>,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `hosts` namespaces with addresses 10.213.<k>.(i+1)/24 on one bridge.
fn make_namespaces(hosts: usize) -> Result<(Namespaces, Vec<String>, Vec<String>), String> {
    let tag = std::process::id() % 100_000;
    let k = std::process::id() % 200 + 20;
    let bridge_ns = format!("dcemu-br-{tag}");
    let mut ns = Namespaces {
        names: vec![bridge_ns.clone()],
    };
    ip(&["netns", "add", &bridge_ns])?;
    ip(&["-n", &bridge_ns, "link", "add", "br0", "type", "bridge"])?;
    ip(&["-n", &bridge_ns, "link", "set", "br0", "up"])?;
    let mut names = Vec::new();
    let mut addrs = Vec::new();
    for i in 0..hosts {
        let host = format!("dcemu-h{i}-{tag}");
        ns.names.push(host.clone());
        ip(&["netns", "add", &host])?;
        let (a, b) = (format!("v{i}h{tag}"), format!("v{i}b{tag}"));
        ip(&[
            "link", "add", &a, "netns", &host, "type", "veth", "peer", "name", &b, "netns",
            &bridge_ns,
        ])?;
        ip(&["-n", &bridge_ns, "link", "set", &b, "master", "br0", "up"])?;
        let addr = format!("10.213.{k}.{}", i + 1);
        ip(&["-n", &host, "addr", "add", &format!("{addr}/24"), "dev", &a])?;
        ip(&["-n", &host, "link", "set", &a, "up"])?;
        ip(&["-n", &host, "link", "set", "lo", "up"])?;
        names.push(host);
        addrs.push(addr);
    }
    Ok((ns, names, addrs))
}

#[test]
fn coordinator_and_nodes_in_separate_network_namespaces_match_a_single_process_run() {
    let (guard, hosts, addrs) = match make_namespaces(5) {
        Ok(x) => x,
        Err(why) => {
            eprintln!(
                "SKIP coordinator_and_nodes_in_separate_network_namespaces: network namespaces unavailable ({why}); needs root and iproute2"
            );
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let scenario = quickstart();
    let single = single_digest(tmp.path(), &scenario);
    let prefix = |h: &String| vec!["ip".to_string(), "netns".into(), "exec".into(), h.clone()];
    for nodes in [2usize, 4] {
        let layout = Layout {
            coord_prefix: prefix(&hosts[0]),
            coord_host: &addrs[0],
            node_prefix: hosts[1..=nodes].iter().map(prefix).collect(),
            node_hosts: addrs[1..=nodes].to_vec(),
            coord_args: Vec::new(),
        };
        let dir: PathBuf = tmp.path().join(format!("ns{nodes}"));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            cluster_digest(&dir, &scenario, &layout),
            single,
            "{nodes} nodes"
        );
        let links = links_of(&dir, &layout);
        assert!(
            links.iter().all(|(l, _)| *l == 0),
            "separate hosts got same-host links: {links:?}"
        );
    }
    drop(guard);
}

#[test]
fn ctrl_c_on_the_coordinator_stops_every_node() {
    let tmp = tempfile::tempdir().unwrap();
    let mut procs = Procs::default();
    let out = tmp.path().join("multi");
    let mut coord = Watched::spawn(
        Command::new(BIN)
            .args([
                "coordinator",
                "--nodes",
                "2",
                "--listen",
                "127.0.0.1:0",
                "-q",
            ])
            .args(["--secret", SECRET, "--out"])
            .arg(&out),
        &mut procs,
    );
    let addr = coord.listening_addr();
    let mut nodes = Watched::loopback_nodes(&addr, &["a", "b"], &mut procs);
    coord.wait_for("running", Duration::from_secs(30));
    let pid = procs.0[0].id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = wait_exit(&mut procs.0[0], Duration::from_secs(5));
    let log = coord.rest();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{log}");
    assert!(log.contains("interrupted (Ctrl-C)"), "{log}");
    assert!(out.join("INCOMPLETE").exists());
    for (i, node) in nodes.iter_mut().enumerate() {
        let status = wait_exit(&mut procs.0[i + 1], Duration::from_secs(5));
        let text = node.rest();
        assert_eq!(status.and_then(|s| s.code()), Some(1), "node {i}: {text}");
        assert!(text.contains("interrupted (Ctrl-C)"), "node {i}: {text}");
    }
}

/// A loopback UDP port free at the time of asking (the coordinator must
/// restart on a fixed address).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The run id a coordinator announces with its address.
fn run_id(listening_line: &str) -> String {
    listening_line
        .split("of run ")
        .nth(1)
        .map(|s| s.trim().to_string())
        .filter(|s| s.len() == 32)
        .unwrap_or_else(|| panic!("no run id in {listening_line:?}"))
}

#[test]
fn a_restarted_coordinator_is_a_new_run_the_old_nodes_never_join() {
    let tmp = tempfile::tempdir().unwrap();
    let short = quickstart();
    let single = single_digest(tmp.path(), &short);
    let addr = format!("127.0.0.1:{}", free_udp_port());
    let mut procs = Procs::default();
    let coordinator = |scenario: &[&str], out: &Path| {
        let mut c = Command::new(BIN);
        c.args(["coordinator", "--scenario"])
            .args(scenario)
            .args(["--nodes", "2", "--listen", &addr, "-q"])
            .args(["--failure-timeout", "2s", "--secret", SECRET, "--out"])
            .arg(out);
        c
    };
    // run 1: 6 h of the 1,000-server scenario, far from done when killed
    // (2 h could finish within the half second below since the engine needs
    // fewer windows)
    let long = [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/paragon/ec2-low.toml"
        ),
        "--set",
        "run.end=6h",
    ];
    let mut first = Watched::spawn(
        &mut coordinator(&long, &tmp.path().join("first")),
        &mut procs,
    );
    let first_run = run_id(&first.wait_for("listening on", Duration::from_secs(30)));
    let mut old = Watched::loopback_nodes(&addr, &["old-a", "old-b"], &mut procs);
    first.wait_for("running", Duration::from_secs(30));
    for node in &mut old {
        node.wait_for(&format!("joined run {first_run}"), Duration::from_secs(5));
    }
    std::thread::sleep(Duration::from_millis(500));
    procs.0[0].kill().unwrap(); // SIGKILL: no goodbye, no abort
    procs.0[0].wait().unwrap();
    let killed_at = Instant::now();

    // run 2: same address, same secret, while the old nodes still live
    let second_out = tmp.path().join("second");
    let mut second = Watched::spawn(&mut coordinator(&short, &second_out), &mut procs);
    let second_run = run_id(&second.wait_for("listening on", Duration::from_secs(30)));
    assert_ne!(first_run, second_run, "a restart must be a new run");

    // the old nodes give up within the failure bound, naming what they lost
    for (i, node) in old.iter_mut().enumerate() {
        let status = wait_exit(&mut procs.0[1 + i], Duration::from_secs(10));
        let took = killed_at.elapsed();
        let text = node.rest();
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(1),
            "old node {i}: {text}"
        );
        assert!(
            took < Duration::from_secs(6),
            "old node {i} took {took:?}: {text}"
        );
        assert!(
            text.contains(&format!("coordinator at {addr} (run {first_run})")),
            "old node {i} must name the lost coordinator and run: {text}"
        );
        assert!(
            !text.contains(&second_run),
            "old node {i} saw the new run: {text}"
        );
        // for docs/performance.md (`--nocapture` shows it)
        eprintln!(
            "old node {i} exited {:.2} s after the coordinator was killed (failure timeout 2 s)",
            took.as_secs_f64()
        );
    }
    // the new coordinator admitted nobody and heard from nobody meanwhile
    let so_far = second.rest();
    assert!(!so_far.contains("joined"), "{so_far}");
    assert!(!so_far.contains("refused"), "{so_far}");
    assert!(!so_far.contains("old-"), "{so_far}");

    // two fresh nodes complete the new run with the single-process digest
    let mut fresh = Watched::loopback_nodes(&addr, &["new-a", "new-b"], &mut procs);
    let status = wait_exit(&mut procs.0[3], Duration::from_secs(120));
    let log = second.rest();
    assert!(status.is_some_and(|s| s.success()), "{log}");
    assert!(!log.contains("old-"), "{log}");
    assert_eq!(log.matches("joined from").count(), 2, "{log}");
    for (i, node) in fresh.iter_mut().enumerate() {
        let status = wait_exit(&mut procs.0[4 + i], Duration::from_secs(10));
        let text = node.rest();
        assert!(status.is_some_and(|s| s.success()), "new node {i}: {text}");
        assert!(text.contains(&format!("joined run {second_run}")), "{text}");
    }
    assert!(!second_out.join("INCOMPLETE").exists());
    assert_eq!(
        std::fs::read_to_string(second_out.join("digest")).unwrap(),
        single
    );
    // nothing is left running
    for (i, child) in procs.0.iter_mut().enumerate() {
        assert!(
            matches!(child.try_wait(), Ok(Some(_))),
            "process {i} is still running"
        );
    }
}

/// Issue 41: EASY backfilling (its reservations read the whole machine at
/// every pass) over a coordinator and two nodes is the single-process run.
#[test]
fn easy_backfilling_over_two_nodes_matches_a_single_process_run() {
    let scenario = vec![
        concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/datacenter.toml"),
        "--set",
        "scheduler.admission=easy-backfill",
        "--set",
        "run.end=30min",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let single = single_digest(tmp.path(), &scenario);
    assert_eq!(cluster_digest(tmp.path(), &scenario, &loopback(2)), single);
}
