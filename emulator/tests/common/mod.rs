//! What the emulator's process-spawning tests share (each test binary uses
//! part of it, hence the allowance).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output};

/// The cluster secret every test coordinator and node is given.
pub const SECRET: &str = "test-secret-0123456789";

/// Kills and reaps every process it holds, whatever happens to the test.
#[derive(Default)]
pub struct Procs(pub Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs the `dcemu` binary in `cwd` with `args`.
pub fn dcemu(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the dcemu binary runs")
}

/// Whether `python3` runs here; the external scheduler tests skip, saying
/// so, when it does not.
pub fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: python3 is not installed; the external scheduler tests need it");
    }
    ok
}

/// Runs scenario `path` in `cwd` into `out` and checks it failed as a
/// misbehaving external program must: exit 1, an error naming `program`
/// and saying each of `words`, no panic, results marked `INCOMPLETE` and
/// no digest. `case` labels the assertions.
pub fn assert_run_fails(
    cwd: &Path,
    path: &str,
    out: &str,
    case: &str,
    program: &str,
    words: &[&str],
) {
    let o = dcemu(cwd, &["run", path, "--quiet", "--out", out]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{case}: {err}");
    let named = format!("external scheduler `{program}`");
    assert!(err.contains(&named), "{case}: names the program: {err}");
    for w in words {
        assert!(err.contains(w), "{case}: says {w:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{case}: {err}");
    let dir = cwd.join(out);
    assert!(
        dir.join("INCOMPLETE").is_file(),
        "{case}: marked incomplete"
    );
    assert!(!dir.join("digest").exists(), "{case}: no digest");
}

/// Checks that `dcemu replay DIR` (in `cwd`) reproduces the run's digest.
pub fn assert_replays_identical(cwd: &Path, dir: &str) {
    let r = dcemu(cwd, &["replay", dir]);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(
        r.status.success() && out.contains("identical"),
        "{out}{}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Runs scenario `path` in `dir` into `dir/out` (with `more` flags), which
/// must succeed, and returns its digest.
pub fn run_ok(dir: &Path, path: &str, out: &str, more: &[&str]) -> String {
    let mut args = vec!["run", path, "--quiet", "--out", out];
    args.extend_from_slice(more);
    let o = dcemu(dir, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(dir.join(out).join("digest")).unwrap()
}

/// A results directory's `metrics.json`.
pub fn metrics(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json")).unwrap()).unwrap()
}

/// A JSON Lines file (an actor log, a program's record), one value a line.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Links the Python client into `dir` as `py` (scenarios there run
/// `py/examples/...`).
pub fn with_client(dir: &Path) {
    let client = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    std::os::unix::fs::symlink(client, dir.join("py")).unwrap();
}

/// Scenario `path` in `dir`, which gave `digest`, gives it again, and on
/// three partitions (`what` labels the assertions).
pub fn assert_same_twice_and_on_three_partitions(dir: &Path, path: &str, digest: &str, what: &str) {
    assert_eq!(
        run_ok(dir, path, "again", &[]),
        digest,
        "{what}: same digest twice"
    );
    assert_eq!(
        run_ok(dir, path, "three", &["--partitions", "3"]),
        digest,
        "{what}: same digest on three partitions"
    );
}

/// Every server's actor log in results directory `out`, by server index.
pub fn server_logs(out: &Path) -> std::collections::BTreeMap<u64, Vec<serde_json::Value>> {
    let mut by_server = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(out.join("actors")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(index) = name.strip_prefix("server-").and_then(|n| n.parse().ok()) {
            by_server.insert(index, json_lines(&path));
        }
    }
    by_server
}
