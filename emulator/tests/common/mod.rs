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
