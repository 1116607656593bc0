//! What the multi-process tests (`cluster.rs`, `external.rs`) share.

use std::process::Child;

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
