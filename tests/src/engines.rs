//! The engine scripts (`scripts/cassandra.sh`, `scripts/kafka.sh`) as the
//! tests call them (a script that fails fails the test with what it said),
//! and the processes the tests start, killed when a test ends or fails.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::workspace_root;

/// Runs `scripts/<script>` (an engine's start, kill or restart) with
/// `arguments`; returns what it prints, or fails the test with what it said.
pub(crate) fn engine_script(script: &str, arguments: &[&str]) -> String {
    let output = Command::new(workspace_root().join("scripts").join(script))
        .args(arguments)
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|error| panic!("scripts/{script} runs: {error}"));
    assert!(
        output.status.success(),
        "scripts/{script} {arguments:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Stops every node `scripts/<script>` started under `directory`, as a
/// `Drop` does: what fails here cannot fail the test any more.
pub(crate) fn stop_engine(script: &str, directory: &Path) {
    let _ = Command::new(workspace_root().join("scripts").join(script))
        .args(["stop", directory.to_str().unwrap_or_default()])
        .status();
}

/// A child process killed when dropped, so a failing test leaves none behind.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
