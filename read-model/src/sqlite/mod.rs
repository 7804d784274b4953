//! The embedded backend: SQLite files in one directory.
//!
//! Layout: `catalog.sqlite` names the model versions and the active one
//! (`schemas/sqlite/catalog.sql`); each version is `model-v<N>.sqlite`
//! (`schemas/sqlite/model.sql`). One process writes a version at a time
//! through one connection; readers, in any process, use pooled read-only
//! connections and see only committed batches.
//!
//! Reads run inline: they are point or short range reads that take
//! microseconds. The batch write runs on Tokio's blocking pool, since a large
//! batch takes long enough to stall an async worker.
//!
//! This module opens the directory; `version_files` holds each version's
//! connections, `catalog` the versions and the active one, and
//! `document_reads`, `projection_writes` and `api_keys` implement the ports.

mod api_keys;
mod catalog;
mod change_feed;
mod connections;
mod document_cache;
mod document_reads;
mod errors;
mod index_entries;
mod key_order;
mod notifications;
mod projection_writes;
mod provenance_groups;
mod reader_pool;
mod reads;
mod schema;
mod state_reads;
mod version_files;
mod wal_writeback;
mod webhooks;
mod work_rows;
mod writes;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

pub use self::provenance_groups::{ProvenanceKey, provenance_entries};

use self::api_keys::ApiKeyFile;
use self::connections::{PageAccess, open_writer};
use self::reader_pool::ReaderPool;
use self::version_files::VersionFile;
use crate::active_version_cache::ActiveVersionCache;
use crate::cached_documents::DocumentCacheCounters;
use crate::clock::Clock;
use crate::store::{ModelVersion, StoreError};

/// The SQLite store. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    directory: PathBuf,
    catalog_writer: Mutex<Connection>,
    catalog_readers: ReaderPool,
    /// A few entries at most, found on every read: a sorted map finds one
    /// in a comparison or two where a hash map would hash the key first.
    versions: Mutex<BTreeMap<ModelVersion, Arc<VersionFile>>>,
    active: ActiveVersionCache,
    /// The bound of each version's document cache; 0 turns caching off.
    document_cache_bytes: u64,
    document_cache_counters: Arc<DocumentCacheCounters>,
    api_keys: ApiKeyFile,
    /// The time freshness bounds are kept by.
    clock: Clock,
}

/// The default bound of a model version's document cache.
pub const DEFAULT_DOCUMENT_CACHE_BYTES: u64 = 256 * 1024 * 1024;

impl SqliteStore {
    /// Opens (creating when missing) the store in `directory`, with a
    /// document cache of [`DEFAULT_DOCUMENT_CACHE_BYTES`].
    pub fn open(directory: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with_document_cache(directory, DEFAULT_DOCUMENT_CACHE_BYTES)
    }

    /// Opens the store in `directory`, holding up to `document_cache_bytes`
    /// of the active version's documents in memory (0: none).
    pub fn open_with_document_cache(
        directory: impl AsRef<Path>,
        document_cache_bytes: u64,
    ) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with_clock(directory, document_cache_bytes, Clock::system())
    }

    /// [`SqliteStore::open_with_document_cache`], with the freshness bounds
    /// (a reader's snapshot, the cache's vouching, the active version) kept
    /// by `clock`: tests drive a manual one.
    pub fn open_with_clock(
        directory: impl AsRef<Path>,
        document_cache_bytes: u64,
        clock: Clock,
    ) -> Result<SqliteStore, StoreError> {
        let directory = directory.as_ref().to_path_buf();
        std::fs::create_dir_all(&directory)
            .map_err(|error| StoreError::Unavailable(format!("cannot create {}: {error}", directory.display())))?;
        let catalog_path = directory.join("catalog.sqlite");
        let mut catalog_writer = open_writer(&catalog_path)?;
        schema::migrate_catalog(&mut catalog_writer)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                catalog_readers: ReaderPool::new(catalog_path, PageAccess::MemoryMapped, clock.clone()),
                catalog_writer: Mutex::new(catalog_writer),
                versions: Mutex::new(BTreeMap::new()),
                active: ActiveVersionCache::with_clock(clock.clone()),
                document_cache_bytes,
                document_cache_counters: Arc::default(),
                api_keys: ApiKeyFile::new(directory.join("api-keys.sqlite")),
                directory,
                clock,
            }),
        })
    }

    /// The directory holding the store's files.
    pub fn directory(&self) -> &Path {
        &self.inner.directory
    }

    /// The file of a model version.
    pub fn model_file(&self, version: ModelVersion) -> PathBuf {
        self.inner.directory.join(format!("model-v{}.sqlite", version.0))
    }
}
