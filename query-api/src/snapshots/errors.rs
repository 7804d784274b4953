//! Why a snapshot could not be cut or published: the one error of the
//! snapshot modules.

use std::path::{Path, PathBuf};

use read_model::{ModelVersion, StoreError};

use super::parquet_file::ParquetFileError;

/// Why a snapshot could not be cut.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("failed to write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Parquet(#[from] ParquetFileError),
    #[error("model version {was} was replaced by {now} while the snapshot was cut; it is cut again next time")]
    ModelVersionChanged { was: ModelVersion, now: ModelVersion },
    #[error("failed to sign the manifest: {0}")]
    Signing(#[from] crate::signing::SigningError),
    #[error("the file writer task failed: {0}")]
    Task(String),
}

/// The error of a failed file operation on `path`.
pub fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io { path: path.to_owned(), source }
}
