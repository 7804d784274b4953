//! One model version's file as this process holds it: its writer connection
//! (with the thread that writes its log back), its two reader pools and its
//! document cache; and how the store finds the file of a version, follows
//! the active one, and notices a file created anew under the same name.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rusqlite::Connection;

use super::SqliteStore;
use super::connections::{PageAccess, open_model_writer};
use super::document_cache::DocumentCache;
use super::errors::from_sqlite;
use super::reader_pool::ReaderPool;
use super::wal_writeback::{self, LogWriteback};
use crate::store::{ModelVersion, StoreError};

/// The connections to one model version's file.
#[derive(Debug)]
pub(super) struct VersionFile {
    pub(super) path: PathBuf,
    writer: Mutex<Option<Writer>>,
    /// Document reads, for the API.
    pub(super) readers: ReaderPool,
    /// State, reference and checkpoint reads, for the projector, and walks
    /// over the whole export, for snapshots: connections that copy pages
    /// into a bounded cache rather than map the file. Each process opens
    /// only the pools it uses.
    pub(super) state_readers: ReaderPool,
    /// Documents read through `readers`, made on the first document read.
    pub(super) documents: OnceLock<DocumentCache>,
    /// The file these connections opened, told apart from one created
    /// anew under the same name (a version dropped and created again by
    /// another process): see [`SqliteStore::forget_replaced_file`].
    identity: OnceLock<FileIdentity>,
}

/// A file's device and inode. A file removed while this process still has
/// it open keeps its inode, so a file created anew under its name has
/// another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileIdentity { device: metadata.dev(), inode: metadata.ino() })
    }
}

/// The writer connection, numbered so that a [`crate::CommitMark`] names
/// the connection it was taken on (another connection's data version means
/// nothing), with the thread that writes its log back into the database.
#[derive(Debug)]
pub(super) struct Writer {
    pub(super) connection: Connection,
    pub(super) id: u64,
    log_writeback: LogWriteback,
}

/// Numbers the writer connections of this process.
static NEXT_WRITER_ID: AtomicU64 = AtomicU64::new(1);

impl VersionFile {
    pub(super) fn with_writer<T>(
        &self,
        write: impl FnOnce(&mut Writer) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut slot = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            let connection = open_model_writer(&self.path)?;
            let log_writeback = LogWriteback::start(&self.path, wal_writeback::RESTART_AFTER_FRAMES)?;
            *slot = Some(Writer { connection, id: NEXT_WRITER_ID.fetch_add(1, Ordering::Relaxed), log_writeback });
        }
        let writer = slot.as_mut().ok_or_else(|| StoreError::Unavailable("writer connection lost".into()))?;
        writer.log_writeback.wait_while_restarting();
        let result = write(writer);
        writer.log_writeback.wake();
        if matches!(result, Err(StoreError::Unavailable(_))) {
            // Reopen on next use: the failure may have left the connection unusable.
            *slot = None;
        }
        self.readers.note_write();
        self.state_readers.note_write();
        result
    }
}

impl SqliteStore {
    pub(super) fn version_file(&self, version: ModelVersion) -> Arc<VersionFile> {
        let mut versions = self.inner.versions.lock().unwrap_or_else(PoisonError::into_inner);
        versions
            .entry(version)
            .or_insert_with(|| {
                let path = self.model_file(version);
                let identity = OnceLock::new();
                if let Some(found) = FileIdentity::of(&path) {
                    let _ = identity.set(found);
                }
                Arc::new(VersionFile {
                    readers: ReaderPool::new(path.clone(), PageAccess::MemoryMapped, self.inner.clock.clone()),
                    state_readers: ReaderPool::new(path.clone(), PageAccess::Copied, self.inner.clock.clone()),
                    documents: OnceLock::new(),
                    identity,
                    path,
                    writer: Mutex::new(None),
                })
            })
            .clone()
    }

    /// A version that the catalog knows, for writing.
    pub(super) fn known_version_file(&self, version: ModelVersion) -> Result<Arc<VersionFile>, StoreError> {
        let known = self.inner.catalog_readers.with(|connection| {
            connection
                .prepare_cached("SELECT 1 FROM model_versions WHERE version = ?1")
                .and_then(|mut statement| statement.exists([version.0]))
                .map_err(from_sqlite)
        })?;
        if known { Ok(self.version_file(version)) } else { Err(StoreError::UnknownModelVersion(version)) }
    }

    /// Drops this process's connections (and document cache) of a version
    /// whose file has been removed and created anew since they opened it,
    /// so the next read opens the new file. Checked whenever the active
    /// version is read from the catalog, so a version dropped and created
    /// again by another process is followed as fast as an activation.
    pub(super) fn forget_replaced_file(&self, version: ModelVersion) {
        let mut versions = self.inner.versions.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(file) = versions.get(&version) else { return };
        let Some(current) = FileIdentity::of(&file.path) else { return };
        match file.identity.get() {
            Some(opened) if *opened != current => {
                versions.remove(&version);
            }
            Some(_) => {}
            None => {
                let _ = file.identity.set(current);
            }
        }
    }

    /// The connections to the active version's file.
    pub(super) fn active_file(&self) -> Result<Arc<VersionFile>, StoreError> {
        self.active_version_and_file().map(|(_, file)| file)
    }

    /// The active version and the connections to its file.
    pub(super) fn active_version_and_file(&self) -> Result<(ModelVersion, Arc<VersionFile>), StoreError> {
        let version = self.read_active_version()?.ok_or(StoreError::NoActiveModelVersion)?;
        Ok((version, self.version_file(version)))
    }

    /// Runs a read on the active version.
    pub(super) fn read_active<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.active_file()?.readers.with(read)
    }
}
