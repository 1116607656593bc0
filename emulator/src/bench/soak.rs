//! `dcemu bench --suite soak`: a long multi-process run under CPU
//! contention must still give the single-process digest (issue 12, soak).
//!
//! One invocation, all children of this executable on loopback:
//!
//! 1. the scenario in one process (`dcemu run`): the reference digest;
//! 2. K CPU hogs (`sh` busy loops), so the nodes compete for the cores;
//! 3. a coordinator and N nodes (`dcemu coordinator` / `dcemu node`);
//! 4. digests compared; wall times, windows, the barrier statistics the
//!    coordinator reports, peak resident sets, the hogs' CPU time, the
//!    commit and the machine go into a table.
//!
//! Every child is killed when the soak ends, however it ends (the guard's
//! `Drop`); a hog also exits by itself once this process is gone, so not
//! even a `kill -9` of the bench leaves one spinning. A digest mismatch, a
//! failed child or a run over `--soak-limit` is a failure: the table says
//! so and the bench exits non-zero.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::runner::{BenchError, Measured, Runner, mb};

/// What the soak runs (from `dcemu bench`'s `--soak-*` flags).
#[derive(Clone, Debug)]
pub struct SoakPlan {
    /// Scenario file, relative to the scenarios directory.
    pub scenario: String,
    /// `--set KEY=VALUE` overrides for both runs.
    pub sets: Vec<String>,
    pub nodes: u32,
    pub hogs: u32,
    /// The multi-process run is killed (and the soak fails) after this long.
    pub limit: Duration,
}

/// The secret of the soak's cluster: loopback only, generated per soak.
fn soak_secret() -> Result<String, BenchError> {
    crate::cluster::tls::random_secret()
        .map_err(|e| BenchError::Failed(format!("cannot make a cluster secret: {e}")))
}

/// Child processes killed and reaped on drop.
#[derive(Default)]
struct Children(Vec<(String, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A busy loop that checks every ~0.1 s that `parent` still exists.
fn hog(parent: u32) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(
            "p=$1; while kill -0 \"$p\" 2>/dev/null; do i=0; \
             while [ $i -lt 100000 ]; do i=$((i+1)); done; done",
        )
        .arg("dcemu-soak-hog")
        .arg(parent.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// `/proc/PID/status`'s VmHWM (peak resident set), kB.
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// User + system CPU seconds of `pid` so far (`/proc/PID/stat`, in clock
/// ticks of 1/100 s, Linux's USER_HZ on every mainstream architecture).
fn cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // fields after the command name, which is in parentheses
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The commit the binary is measured at (`git rev-parse`), marked dirty
/// when tracked files differ from it.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{rev}-dirty") } else { rev }
        }
        None => "unknown (not a git checkout)".into(),
    }
}

/// What the multi-process run measured.
#[derive(Debug, Default)]
struct Multi {
    wall_s: f64,
    windows: u64,
    digest: String,
    /// Per node: name, exchanges, mean / min / max barrier µs.
    barrier: Vec<(String, u64, f64, f64, f64)>,
    coordinator_rss_kb: Option<u64>,
    node_rss_kb: Option<u64>,
}

/// Runs the soak; returns the Markdown section, or the section and the
/// failure (the section still records it).
pub fn soak(runner: &Runner, plan: &SoakPlan) -> Result<String, (String, BenchError)> {
    let command = command_line(plan);
    let head = format!(
        "Commit `{}`. Command (from the repository root): `{command}`\n\n",
        commit()
    );
    let mut table = String::from(
        "| scenario | nodes | hogs | single s | multi s | multi / single | windows | barrier mean µs per node | barrier min / max µs | peak RSS MB (single / coordinator / largest node) | hogs' CPU (cores) | same digest | verdict |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|---|\n",
    );
    let label = if plan.sets.is_empty() {
        format!("`{}`", plan.scenario)
    } else {
        format!("`{}` `{}`", plan.scenario, plan.sets.join(" "))
    };
    let single = match runner.run(&plan.scenario, &plan.sets, 1) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(
                table,
                "| {label} | {} | {} | failed |  |  |  |  |  |  |  |  | **failed**: {} |",
                plan.nodes,
                plan.hogs,
                cell(&e.to_string())
            );
            return Err((format!("{head}{table}"), e));
        }
    };
    let started = Instant::now();
    let result = multi(runner, plan);
    let (multi, hog_cpu, failure) = match result {
        Ok((m, cpu)) => {
            let failure = (m.digest != single.digest).then(|| {
                BenchError::Failed(format!(
                    "{}: coordinator + {} nodes gave digest {}, one process {}",
                    plan.scenario, plan.nodes, m.digest, single.digest
                ))
            });
            (m, cpu, failure)
        }
        Err((cpu, e)) => (
            Multi {
                wall_s: started.elapsed().as_secs_f64(),
                ..Multi::default()
            },
            cpu,
            Some(e),
        ),
    };
    let _ = writeln!(
        table,
        "{}",
        row(&label, plan, &single, &multi, hog_cpu, &failure)
    );
    let body = format!("{head}{table}");
    match failure {
        None => Ok(body),
        Some(e) => Err((body, e)),
    }
}

/// Escapes a message for a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn row(
    label: &str,
    plan: &SoakPlan,
    single: &Measured,
    m: &Multi,
    hog_cpu: f64,
    failure: &Option<BenchError>,
) -> String {
    let means: Vec<String> = m
        .barrier
        .iter()
        .map(|(_, _, mean, _, _)| format!("{mean:.1}"))
        .collect();
    let mins = m.barrier.iter().map(|b| b.3).fold(f64::INFINITY, f64::min);
    let maxs = m.barrier.iter().map(|b| b.4).fold(0.0, f64::max);
    let minmax = if m.barrier.is_empty() {
        String::new()
    } else {
        format!("{mins:.1} / {maxs:.0}")
    };
    let same = if m.digest.is_empty() {
        "—".to_string()
    } else if m.digest == single.digest {
        "yes".into()
    } else {
        "**no**".into()
    };
    let verdict = match failure {
        None => "passed".to_string(),
        Some(e) => format!("**failed**: {}", cell(&e.to_string())),
    };
    format!(
        "| {label} | {} | {} | {:.2} | {:.1} | {:.0} | {} | {} | {minmax} | {} / {} / {} | {:.2} | {same} | {verdict} |",
        plan.nodes,
        plan.hogs,
        single.wall_s,
        m.wall_s,
        m.wall_s / single.wall_s.max(1e-9),
        if m.windows == 0 {
            String::new()
        } else {
            m.windows.to_string()
        },
        means.join(", "),
        mb(single.peak_rss_kb),
        mb(m.coordinator_rss_kb),
        mb(m.node_rss_kb),
        hog_cpu / m.wall_s.max(1e-9),
    )
}

/// The command that reproduces the soak.
fn command_line(plan: &SoakPlan) -> String {
    let mut c = format!(
        "cargo run --release -p dcemu-emulator --bin dcemu -- bench --suite soak --soak-scenario {} --soak-nodes {} --soak-hogs {}",
        plan.scenario, plan.nodes, plan.hogs
    );
    for s in &plan.sets {
        let _ = write!(c, " --soak-set {s}");
    }
    c
}

/// Starts the hogs, the coordinator and the nodes; waits for the
/// coordinator; returns what it measured and the hogs' CPU seconds.
fn multi(runner: &Runner, plan: &SoakPlan) -> Result<(Multi, f64), (f64, BenchError)> {
    let failed = |m: String| BenchError::Failed(m);
    let mut hogs = Children::default();
    let me = std::process::id();
    for i in 0..plan.hogs {
        match hog(me).spawn() {
            Ok(c) => hogs.0.push((format!("hog {i}"), c)),
            Err(e) => return Err((0.0, failed(format!("cannot start a CPU hog (sh): {e}")))),
        }
    }
    let hog_cpu =
        |hogs: &Children| -> f64 { hogs.0.iter().filter_map(|(_, c)| cpu_s(c.id())).sum() };
    let result = run_cluster(runner, plan);
    let cpu = hog_cpu(&hogs);
    drop(hogs);
    match result {
        Ok(m) => Ok((m, cpu)),
        Err(e) => Err((cpu, e)),
    }
}

fn run_cluster(runner: &Runner, plan: &SoakPlan) -> Result<Multi, BenchError> {
    let failed = |m: String| BenchError::Failed(m);
    let path = runner.scenarios.join(&plan.scenario);
    let dir = runner.work.join("soak");
    std::fs::create_dir_all(&dir)
        .map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    let out = dir.join("multi");
    let secret = soak_secret()?;
    let log = |name: &str| -> Result<std::fs::File, BenchError> {
        let p = dir.join(name);
        std::fs::File::create(&p).map_err(|e| failed(format!("cannot create {}: {e}", p.display())))
    };
    let mut procs = Children::default();
    let mut coord = Command::new(&runner.exe);
    coord
        .arg("coordinator")
        .arg("--scenario")
        .arg(&path)
        .arg("--nodes")
        .arg(plan.nodes.to_string())
        .args(["--listen", "127.0.0.1:0", "--force", "--out"])
        .arg(&out)
        .env("DCEMU_SECRET", &secret);
    for s in &plan.sets {
        coord.arg("--set").arg(s);
    }
    eprintln!(
        "  {} {} on a coordinator + {} nodes, {} CPU hog(s) (logs in {}) ...",
        plan.scenario,
        plan.sets.join(" "),
        plan.nodes,
        plan.hogs,
        dir.display()
    );
    let started = Instant::now();
    let mut child = coord
        .stdin(Stdio::null())
        .stdout(log("coordinator.out")?)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start {}: {e}", runner.exe.display())))?;
    let stderr = child.stderr.take();
    procs.0.push(("coordinator".into(), child));
    // copy the coordinator's stderr to its log; hand over its address
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<String>();
    let mut coord_log = log("coordinator.log")?;
    let copier = std::thread::spawn(move || {
        use std::io::Write;
        let Some(stderr) = stderr else { return };
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(coord_log, "{line}");
            if let Some(addr) = line
                .split("listening on ")
                .nth(1)
                .and_then(|s| s.split(',').next())
            {
                let _ = addr_tx.send(addr.to_string());
            }
        }
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(120))
        .map_err(|_| {
            failed(format!(
                "the coordinator did not start listening (see {})",
                dir.join("coordinator.log").display()
            ))
        })?;
    for i in 0..plan.nodes {
        let name = format!("soak-{i}");
        let child = Command::new(&runner.exe)
            .args(["node", "--coordinator", &addr, "--name", &name])
            .args(["--listen", "127.0.0.1:0"])
            .env("DCEMU_SECRET", &secret)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log(&format!("{name}.log"))?)
            .spawn()
            .map_err(|e| failed(format!("cannot start node {name}: {e}")))?;
        procs.0.push((name, child));
    }
    // watch: every child's peak RSS each second, the coordinator's exit
    let mut peaks: Vec<Option<u64>> = vec![None; procs.0.len()];
    let mut last_sample = Instant::now() - Duration::from_secs(1);
    let mut last_report = Instant::now();
    let status = loop {
        if last_sample.elapsed() >= Duration::from_secs(1) {
            for (i, (_, c)) in procs.0.iter().enumerate() {
                if let Some(kb) = peak_rss_kb(c.id()) {
                    peaks[i] = Some(peaks[i].map_or(kb, |p| p.max(kb)));
                }
            }
            last_sample = Instant::now();
        }
        if last_report.elapsed() >= Duration::from_secs(300) {
            eprintln!(
                "  ... {:.0} min into the multi-process run",
                started.elapsed().as_secs_f64() / 60.0
            );
            last_report = Instant::now();
        }
        match procs.0[0].1.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(failed(format!("cannot wait for the coordinator: {e}"))),
        }
        if started.elapsed() > plan.limit {
            return Err(failed(format!(
                "the multi-process run took longer than --soak-limit {} s; killed (logs in {})",
                plan.limit.as_secs(),
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let wall_s = started.elapsed().as_secs_f64();
    let _ = copier.join();
    if !status.success() {
        return Err(failed(format!(
            "the coordinator exited with {status}: {}",
            last_line(&dir.join("coordinator.log"))
        )));
    }
    // the nodes leave right after the coordinator's goodbye
    for i in 1..procs.0.len() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            match procs.0[i].1.try_wait() {
                Ok(Some(s)) => break Some(s),
                _ if Instant::now() > deadline => break None,
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let name = procs.0[i].0.clone();
        if !status.is_some_and(|s| s.success()) {
            return Err(failed(format!(
                "node {name} exited with {status:?}: {}",
                last_line(&dir.join(format!("{name}.log")))
            )));
        }
    }
    let facts: Value = std::fs::read_to_string(out.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| failed(format!("{}: no readable run.json", out.display())))?;
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let barrier = facts
        .get("nodes")
        .and_then(Value::as_array)
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| {
                    (
                        n.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        n.get("barrier_exchanges")
                            .and_then(Value::as_u64)
                            .unwrap_or(0),
                        num(n, "barrier_mean_us"),
                        num(n, "barrier_min_us"),
                        num(n, "barrier_max_us"),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let m = Multi {
        wall_s,
        windows: facts.get("windows").and_then(Value::as_u64).unwrap_or(0),
        digest: facts
            .get("digest")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        barrier,
        coordinator_rss_kb: peaks[0],
        node_rss_kb: peaks[1..].iter().flatten().copied().max(),
    };
    eprintln!("  multi-process run: {wall_s:.1} s");
    std::fs::remove_dir_all(&out).ok();
    Ok(m)
}

/// The last line of a log, for an error message.
fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_string))
        .map_or_else(
            || format!("(see {})", path.display()),
            |l| format!("{l} (see {})", path.display()),
        )
}

/// Where the soak keeps its logs when `--work` is not given (kept after
/// the bench, unlike the other suites' scratch, so a failure can be read).
pub fn default_work() -> PathBuf {
    std::env::temp_dir().join(format!("dcemu-soak-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hog_burns_cpu_and_stops_with_its_parent() {
        // the hog's parent is a `sleep` we kill: the hog must notice
        let mut parent = Command::new("sleep").arg("30").spawn().unwrap();
        let mut h = hog(parent.id()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let burnt = cpu_s(h.id()).unwrap();
        assert!(burnt > 0.2, "a hog used only {burnt} s of CPU in 0.7 s");
        parent.kill().unwrap();
        parent.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if h.try_wait().unwrap().is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "the hog outlived its parent");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn the_row_reports_a_mismatch_as_a_failure() {
        let plan = SoakPlan {
            scenario: "x.toml".into(),
            sets: vec!["run.end=1h".into()],
            nodes: 2,
            hogs: 1,
            limit: Duration::from_secs(60),
        };
        let single = Measured {
            wall_s: 1.0,
            peak_rss_kb: Some(2048),
            events: 10,
            digest: "aa".into(),
            tasks: 4,
            in_flight: 1,
        };
        let multi = Multi {
            wall_s: 10.0,
            windows: 5,
            digest: "bb".into(),
            barrier: vec![("n0".into(), 5, 2.0, 1.0, 9.0)],
            coordinator_rss_kb: Some(1024),
            node_rss_kb: Some(3072),
        };
        let failure = Some(BenchError::Failed("digests differ".into()));
        let r = row("`x.toml`", &plan, &single, &multi, 5.0, &failure);
        assert!(r.contains("| **no** |"), "{r}");
        assert!(r.contains("**failed**: digests differ"), "{r}");
        assert!(r.contains("| 2 / 1 / 3 |"), "{r}");
        assert!(r.contains("| 0.50 |"), "{r}");
        assert!(command_line(&plan).ends_with("--soak-hogs 1 --soak-set run.end=1h"));
    }
}
