//! Where the repository's fixtures are, from this crate's own location.

use std::path::PathBuf;

/// The repository's root directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sandbox fixtures' event files.
pub fn sandbox_events() -> PathBuf {
    root().join("schemas/fixtures/sandbox")
}
