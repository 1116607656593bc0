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

fn chromium() -> Option<std::path::PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| std::path::PathBuf::from(c))
    })
}

/// Renders report page `html` in headless Chromium (a copy written under
/// `dir`) and returns what its probe saw: `errors` (script errors, failed
/// resources, `console.error`, asserted empty here) and `svgs` (whether
/// each SVG rendered with a size and content). `None`, saying so, when
/// Chromium is not installed, unless CI or `DCEMU_REQUIRE_CHROMIUM`
/// requires it.
pub fn render_in_chromium(html: &str, dir: &Path) -> Option<serde_json::Value> {
    let Some(chrome) = chromium() else {
        let required = std::env::var_os("DCEMU_REQUIRE_CHROMIUM").is_some()
            || std::env::var_os("CI").is_some();
        assert!(
            !required,
            "chromium is required here (CI / DCEMU_REQUIRE_CHROMIUM) but not installed"
        );
        eprintln!(
            "\n*** SKIP: chromium not installed: the report was not rendered in a browser ***\n"
        );
        return None;
    };
    let probe_head = "<script>window.__errors=[];window.addEventListener('error',function(e){__errors.push(String(e.message||('failed to load '+(e.target&&(e.target.src||e.target.href)))))},true);var __ce=console.error;console.error=function(){__errors.push(Array.prototype.join.call(arguments,' '));__ce.apply(console,arguments)};</script>";
    let probe_tail = "<script>window.addEventListener('load',function(){var s=Array.prototype.map.call(document.querySelectorAll('svg'),function(v){var r=v.getBoundingClientRect();return r.width>0&&r.height>0&&v.childElementCount>0});var p=document.createElement('pre');p.id='probe';p.textContent=JSON.stringify({errors:__errors,svgs:s});document.body.appendChild(p)});</script>";
    let probed = html
        .replacen("<head>", &format!("<head>{probe_head}"), 1)
        .replacen("</body>", &format!("{probe_tail}</body>"), 1);
    let page = dir.join("probe.html");
    std::fs::write(&page, probed).unwrap();
    let o = Command::new(&chrome)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let probe = dom
        .split("<pre id=\"probe\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_else(|| panic!("the page did not load: {dom:.2000}\n{stderr}"));
    let probe: serde_json::Value = serde_json::from_str(&probe.replace("&quot;", "\"")).unwrap();
    assert_eq!(
        probe["errors"],
        serde_json::json!([]),
        "console errors: {probe}"
    );
    let console_errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && l.contains("ERROR"))
        .collect();
    assert!(console_errors.is_empty(), "{console_errors:?}");
    Some(probe)
}
