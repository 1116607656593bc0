//! SimGrid peers of the benches: C++ programs on SimGrid's S4U interface,
//! compiled at bench time with the system C++ compiler where SimGrid is
//! installed (Debian: `libsimgrid-dev`), and run as child processes.
//!
//! Nothing here makes the workspace depend on SimGrid: when the library or
//! the compiler is missing, [`build`] says why and the bench skips its
//! SimGrid rows. The programs print `key value...` lines; [`Output`] reads
//! them and every malformed or missing line is a clear error, never a
//! panic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A compiled SimGrid program.
pub struct Program {
    exe: PathBuf,
}

/// Why a SimGrid row is skipped: the library or the compiler is absent, or
/// the program does not compile against the installed SimGrid.
pub struct Skip(pub String);

/// Compiles `source` (a path relative to this crate) into `name`, next to
/// the bench's own executable, unless a build newer than the source is
/// already there. The compiler is `$CXX` or `c++`; the flags come from
/// `pkg-config simgrid`, or are `-lsimgrid` when pkg-config does not know
/// it.
pub fn build(name: &str, source: &str) -> Result<Program, Skip> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|deps| deps.join("simgrid-peers")))
        .ok_or_else(|| Skip("cannot find the bench's own directory".into()))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Skip(format!("cannot create {}: {e}", dir.display())))?;
    let exe = dir.join(name);
    let fresh = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(built), Some(src)) = (fresh(&exe), fresh(&source))
        && built > src
    {
        return Ok(Program { exe });
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let flags = match Command::new("pkg-config")
        .args(["--cflags", "--libs", "simgrid"])
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
        _ => vec!["-lsimgrid".to_owned()],
    };
    let out = Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-o"])
        .arg(&exe)
        .arg(&source)
        .args(&flags)
        .output()
        .map_err(|e| Skip(format!("no C++ compiler ({cxx}: {e})")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let missing = stderr.contains("simgrid/s4u.hpp") || stderr.contains("-lsimgrid");
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Skip(if missing {
            "SimGrid is not installed (Debian: apt-get install libsimgrid-dev)".into()
        } else {
            format!(
                "{} does not compile against the installed SimGrid: {}",
                source.display(),
                tail.join(" / ")
            )
        }));
    }
    Ok(Program { exe })
}

/// What a program printed: its `key value...` lines by key, in order.
pub struct Output {
    what: String,
    lines: HashMap<String, Vec<Vec<String>>>,
}

impl Program {
    /// Runs the program with `args`; a failed run is an error.
    pub fn run(&self, args: &[String]) -> Result<Output, String> {
        let what = self.exe.file_name().map_or_else(
            || "simgrid peer".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let out = Command::new(&self.exe)
            .args(args)
            .output()
            .map_err(|e| format!("{what}: cannot run {}: {e}", self.exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{what} {}: {}; stderr: {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let mut lines: HashMap<String, Vec<Vec<String>>> = HashMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut words = line.split_whitespace().map(str::to_owned);
            if let Some(key) = words.next() {
                lines.entry(key).or_default().push(words.collect());
            }
        }
        Ok(Output { what, lines })
    }
}

impl Output {
    /// Every line starting with `key`, without the key.
    pub fn all(&self, key: &str) -> &[Vec<String>] {
        self.lines.get(key).map_or(&[], Vec::as_slice)
    }

    /// The one word after `key` on its only line.
    pub fn word(&self, key: &str) -> Result<&str, String> {
        match self.all(key) {
            [line] if line.len() == 1 => Ok(&line[0]),
            [] => Err(format!("{}: printed no '{key}' line", self.what)),
            _ => Err(format!(
                "{}: expected one '{key} VALUE' line, got {:?}",
                self.what,
                self.all(key)
            )),
        }
    }

    /// The integer after `key`.
    pub fn u64(&self, key: &str) -> Result<u64, String> {
        let w = self.word(key)?;
        w.parse()
            .map_err(|_| format!("{}: '{key}' is not an integer: {w:?}", self.what))
    }

    /// The wall time after `key`, in seconds.
    pub fn seconds(&self, key: &str) -> Result<Duration, String> {
        let w = self.word(key)?;
        w.parse::<f64>()
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| format!("{}: '{key}' is not a duration in s: {w:?}", self.what))
    }

    /// Parses `words` of a `key` line as integers, with the key in errors.
    #[allow(dead_code, reason = "each bench uses its own part of this module")]
    pub fn ints<const K: usize>(&self, key: &str, words: &[String]) -> Result<[u64; K], String> {
        let mut out = [0; K];
        if words.len() != K {
            return Err(format!(
                "{}: a '{key}' line has {} values, expected {K}: {words:?}",
                self.what,
                words.len()
            ));
        }
        for (o, w) in out.iter_mut().zip(words) {
            *o = w
                .parse()
                .map_err(|_| format!("{}: '{key}' value {w:?} is not an integer", self.what))?;
        }
        Ok(out)
    }
}
