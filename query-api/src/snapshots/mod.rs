//! Snapshots: the whole catalogue of one audience in files, cut at a known
//! position of the change feed, so that a client copies the catalogue in a
//! few downloads and then follows the feed from the snapshot's cursor.
//!
//! `cutting` writes one (NDJSON with gzip and Parquet, files of bounded
//! size, a manifest with each file's SHA-256); `library` is the directory
//! the API serves them from; `schedule` decides when to cut and what to
//! keep. Snapshots are files beside the store, not store writes: the API
//! still writes nothing to the store but operator keys.

pub mod cutting;
mod errors;
pub mod hashing_writer;
pub mod library;
pub mod manifest;
pub mod parquet_file;
pub mod schedule;

pub use cutting::{DEFAULT_ROWS_PER_FILE, cut_snapshot};
pub use errors::SnapshotError;
pub use library::SnapshotLibrary;
pub use manifest::{Manifest, ManifestFile};
pub use schedule::{SnapshotSchedule, run_snapshot_schedule};
