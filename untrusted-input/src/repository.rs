//! Where the repository's fixtures are, from this crate's own location.

use std::path::{Path, PathBuf};

/// The repository's root directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sandbox fixtures' event files.
pub fn sandbox_events() -> PathBuf {
    root().join("schemas/fixtures/sandbox")
}

/// The Avro files of `directory`, in name order.
pub fn avro_files_in(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .expect("an event directory")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "avro"))
        .collect();
    files.sort();
    files
}
