//! Every scenario of the catalog, cut to its first half hour (or a quarter
//! hour past its latest tenant's start), gives over a
//! coordinator and two node processes the digest `dcemu run` gives in one
//! process (issue 23: same digests across processes on every catalog
//! scenario; the large ones at their full length are in
//! `docs/performance.md`), public-format traces included: every node
//! streams them from the coordinator's scenario directory.
//!
//! Its own test binary, so its runs never share the cores with the timed
//! cluster tests (`cluster.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Procs, SECRET};

const BIN: &str = env!("CARGO_BIN_EXE_dcemu");
const CUT_NS: u64 = 30 * 60 * 1_000_000_000;
/// Scenarios over this many servers run at [`SHRUNK_TO`] (as in `tests/invariants.rs`).
const SHRUNK_ABOVE: u32 = 20_000;
const SHRUNK_TO: u32 = 1_000;

fn scenario_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("reproduce") && !path.ends_with("sweeps") {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"),
        &mut out,
    );
    out.sort();
    out
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap()
}

fn wait(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn digest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("digest"))
        .unwrap_or_else(|e| panic!("no digest in {}: {e}", dir.display()))
}

/// Runs `scenario` (with `set`) on a coordinator and two nodes; the
/// coordinator's exit status, its stderr, and the results directory.
fn over_two_nodes(tmp: &Path, scenario: &Path, set: &[String]) -> (i32, String, PathBuf) {
    let out = tmp.join("multi");
    let err = tmp.join("coordinator.err");
    let port = free_udp_port();
    let mut procs = Procs::default();
    procs.0.push(
        Command::new(BIN)
            .arg("coordinator")
            .arg("--scenario")
            .arg(scenario)
            .args(set)
            .args(["--nodes", "2", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-q", "--force", "--secret", SECRET, "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    // a coordinator that refuses the scenario exits before listening
    std::thread::sleep(Duration::from_millis(100));
    if let Ok(Some(status)) = procs.0[0].try_wait() {
        return (
            status.code().unwrap_or(-1),
            std::fs::read_to_string(&err).unwrap_or_default(),
            out,
        );
    }
    for name in ["n0", "n1"] {
        procs.0.push(
            Command::new(BIN)
                .args(["node", "--name", name, "--listen", "127.0.0.1:0"])
                .arg("--coordinator")
                .arg(format!("127.0.0.1:{port}"))
                .env("DCEMU_SECRET", SECRET)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    let status = wait(&mut procs.0[0], Duration::from_secs(300));
    for i in 1..3 {
        let node = wait(&mut procs.0[i], Duration::from_secs(10));
        assert!(
            node.is_some_and(|s| s.success()),
            "{}: node {i} failed: {node:?}",
            scenario.display()
        );
    }
    (
        status.and_then(|s| s.code()).unwrap_or(-1),
        std::fs::read_to_string(&err).unwrap_or_default(),
        out,
    )
}

#[test]
fn every_catalog_scenario_gives_the_one_process_digest_over_two_nodes() {
    let mut checked = 0;
    for path in scenario_files() {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = dcemu::scenario::load(&label, &text, &[]).unwrap_or_else(|e| panic!("{e}"));
        // a tenant that starts late (a burst) is kept, with a quarter hour of its own
        let latest_start = scenario
            .tenants
            .iter()
            .map(|t| t.start.as_nanos())
            .max()
            .unwrap_or(0);
        let cut = CUT_NS.max(latest_start + CUT_NS / 2);
        let mut set: Vec<String> = if scenario.run.end.as_nanos() > cut {
            vec!["--set".into(), format!("run.end={cut}ns")]
        } else {
            Vec::new()
        };
        // a real datacenter's size is for the bench: shrunk as its smallest size
        let servers: u32 = scenario.server_types.iter().map(|t| t.count).sum();
        if servers > SHRUNK_ABOVE {
            for s in dcemu::bench::scale::shrink(&label, &text, SHRUNK_TO)
                .unwrap_or_else(|e| panic!("{label}: {e}"))
            {
                set.extend(["--set".into(), s]);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let one = tmp.path().join("one");
        let ran = Command::new(BIN)
            .arg("run")
            .arg(&path)
            .args(&set)
            .args(["-q", "--force", "--out"])
            .arg(&one)
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        let (status, said, multi) = over_two_nodes(tmp.path(), &path, &set);
        assert_eq!(status, 0, "{label}: the coordinator failed:\n{said}");
        assert_eq!(digest(&multi), digest(&one), "{label}: digests differ");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} scenarios checked");
}
