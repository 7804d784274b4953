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

mod api_keys;
mod change_feed;
mod connections;
mod document_cache;
mod errors;
mod reader_pool;
mod reads;
mod schema;
mod state_reads;
mod wal_writeback;
mod writes;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};

use self::api_keys::ApiKeyFile;
use self::connections::{PageAccess, open_model_writer, open_writer};
use self::document_cache::{DocumentCache, DocumentCacheCounters};
use self::errors::from_sqlite;
use self::reader_pool::ReaderPool;
use self::wal_writeback::LogWriteback;
use crate::active_version_cache::ActiveVersionCache;
use crate::api_keys::{ApiKeyRecord, ApiKeys};
use crate::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use crate::clock::Clock;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::store::{
    AggregateKey, BatchWritten, Body, BulkKey, BulkPage, Checkpoint, DocumentCacheStatistics, DocumentReads,
    IdentifierKind, ModelVersion, ModelVersionInfo, ModelVersions, PartyReferrer, ProjectionWrites, StoreError,
    StoredAggregate, WriteBatch,
};

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
    versions: Mutex<HashMap<ModelVersion, Arc<VersionFile>>>,
    active: ActiveVersionCache,
    /// The bound of each version's document cache; 0 turns caching off.
    document_cache_bytes: u64,
    document_cache_counters: Arc<DocumentCacheCounters>,
    api_keys: ApiKeyFile,
    /// The time freshness bounds are kept by.
    clock: Clock,
}

/// The connections to one model version's file.
#[derive(Debug)]
struct VersionFile {
    path: PathBuf,
    writer: Mutex<Option<Writer>>,
    /// Document reads, for the API.
    readers: ReaderPool,
    /// State, reference and checkpoint reads, for the projector, and walks
    /// over the whole export, for snapshots: connections that copy pages
    /// into a bounded cache rather than map the file. Each process opens
    /// only the pools it uses.
    state_readers: ReaderPool,
    /// Documents read through `readers`, made on the first document read.
    documents: OnceLock<DocumentCache>,
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
struct Writer {
    connection: Connection,
    id: u64,
    log_writeback: LogWriteback,
}

/// Numbers the writer connections of this process.
static NEXT_WRITER_ID: AtomicU64 = AtomicU64::new(1);

impl VersionFile {
    fn with_writer<T>(&self, write: impl FnOnce(&mut Writer) -> Result<T, StoreError>) -> Result<T, StoreError> {
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
                versions: Mutex::new(HashMap::new()),
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

    fn version_file(&self, version: ModelVersion) -> Arc<VersionFile> {
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
    fn known_version_file(&self, version: ModelVersion) -> Result<Arc<VersionFile>, StoreError> {
        let known = self.inner.catalog_readers.with(|connection| {
            connection
                .prepare_cached("SELECT 1 FROM model_versions WHERE version = ?1")
                .and_then(|mut statement| statement.exists([version.0]))
                .map_err(from_sqlite)
        })?;
        if known { Ok(self.version_file(version)) } else { Err(StoreError::UnknownModelVersion(version)) }
    }

    fn read_active_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        if let Some(version) = self.inner.active.fresh() {
            return Ok(version);
        }
        let version = self.inner.catalog_readers.with(|connection| {
            connection
                .prepare_cached("SELECT version FROM active_model_version WHERE singleton = 1")
                .and_then(|mut statement| statement.query_row([], |row| row.get::<_, u32>(0)).optional())
                .map_err(from_sqlite)
        })?;
        let version = version.map(ModelVersion);
        self.inner.active.record(version);
        if let Some(version) = version {
            self.forget_replaced_file(version);
        }
        Ok(version)
    }

    /// Drops this process's connections (and document cache) of a version
    /// whose file has been removed and created anew since they opened it,
    /// so the next read opens the new file. Checked whenever the active
    /// version is read from the catalog, so a version dropped and created
    /// again by another process is followed as fast as an activation.
    fn forget_replaced_file(&self, version: ModelVersion) {
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
    fn active_file(&self) -> Result<Arc<VersionFile>, StoreError> {
        self.active_version_and_file().map(|(_, file)| file)
    }

    /// The active version and the connections to its file.
    fn active_version_and_file(&self) -> Result<(ModelVersion, Arc<VersionFile>), StoreError> {
        let version = self.read_active_version()?.ok_or(StoreError::NoActiveModelVersion)?;
        Ok((version, self.version_file(version)))
    }

    /// Runs a read on the active version.
    fn read_active<T>(&self, read: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.active_file()?.readers.with(read)
    }

    fn with_catalog_writer<T>(
        &self,
        write: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self.inner.catalog_writer.lock().unwrap_or_else(PoisonError::into_inner);
        let result = write(&mut connection);
        self.inner.catalog_readers.note_write();
        result
    }
}

#[async_trait]
impl DocumentReads for SqliteStore {
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        let file = self.active_file()?;
        if self.inner.document_cache_bytes == 0 {
            return file.readers.with(|connection| reads::document(connection, kind, key));
        }
        file.documents
            .get_or_init(|| {
                let counters = Arc::clone(&self.inner.document_cache_counters);
                DocumentCache::new(
                    file.path.clone(),
                    self.inner.document_cache_bytes,
                    counters,
                    self.inner.clock.clone(),
                )
            })
            .document(&file.readers, kind, key)
    }

    async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
        self.read_active(|connection| reads::provenance(connection, lcc_id))
    }

    async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError> {
        self.read_active(|connection| reads::works_by_identifier(connection, kind, code, audience))
    }

    async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError> {
        self.read_active(|connection| reads::bulk_page(connection, audience, offset, limit))
    }

    async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError> {
        // A walk over the whole export through the mapped readers would map
        // every page of it into this process; copying readers keep a
        // bounded page cache instead.
        let file = self.active_file()?;
        file.state_readers.with(|connection| reads::bulk_rows_after(connection, audience, after, limit))
    }

    async fn changes(&self, query: &ChangeQuery) -> Result<ChangesRead, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        file.readers.with(|connection| change_feed::changes(connection, version, query))
    }

    async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<(ModelVersion, ChangeItem)>, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        let item = file.readers.with(|connection| change_feed::latest_change(connection, audience, lcc_id))?;
        Ok(item.map(|item| (version, item)))
    }

    async fn change_feed_bounds(&self, audience: Audience) -> Result<ChangeFeedBounds, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        file.readers.with(|connection| change_feed::bounds(connection, version, audience))
    }

    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError> {
        self.read_active(reads::sandbox_fixtures)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.read_active(|connection| connection.query_row("SELECT 1", [], |_| Ok(())).map_err(from_sqlite))
    }

    /// Counted across versions; the bytes are those the active version's cache holds.
    fn document_cache_statistics(&self) -> Option<DocumentCacheStatistics> {
        if self.inner.document_cache_bytes == 0 {
            return None;
        }
        let active = self.active_file().ok();
        let bytes = active.and_then(|file| file.documents.get().map(DocumentCache::bytes)).unwrap_or(0);
        Some(self.inner.document_cache_counters.statistics(bytes))
    }
}

#[async_trait]
impl ProjectionWrites for SqliteStore {
    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| state_reads::aggregates(connection, keys))
    }

    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| reads::party_referrers(connection, party_ids))
    }

    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| reads::checkpoints(connection, source))
    }

    /// Batches commit in one serial order (see `writes`).
    fn orders_writes_by_version(&self) -> bool {
        false
    }

    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError> {
        let file = self.known_version_file(version)?;
        let clock = self.inner.clock.clone();
        tokio::task::spawn_blocking(move || {
            let stored = writes::with_stored_bodies(&batch)?;
            file.with_writer(|writer| writes::apply_batch(writer, &stored, clock.unix_ms()))
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("batch write task failed: {error}")))?
    }
}

#[async_trait]
impl ModelVersions for SqliteStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        self.with_catalog_writer(schema::migrate_catalog)?;
        for info in self.model_versions().await? {
            self.version_file(info.version).with_writer(|writer| schema::migrate_model(&mut writer.connection))?;
        }
        Ok(())
    }

    async fn model_versions(&self) -> Result<Vec<ModelVersionInfo>, StoreError> {
        let active = self.active_model_version().await?;
        let versions = self.inner.catalog_readers.with(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT version FROM model_versions ORDER BY version")
                .map_err(from_sqlite)?;
            let rows = statement.query_map([], |row| row.get::<_, u32>(0)).map_err(from_sqlite)?;
            rows.collect::<Result<Vec<u32>, _>>().map_err(from_sqlite)
        })?;
        Ok(versions
            .into_iter()
            .map(|version| ModelVersionInfo {
                version: ModelVersion(version),
                active: active == Some(ModelVersion(version)),
            })
            .collect())
    }

    async fn create_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.version_file(version).with_writer(|writer| schema::migrate_model(&mut writer.connection))?;
        self.with_catalog_writer(|connection| {
            connection
                .execute("INSERT OR IGNORE INTO model_versions (version) VALUES (?1)", [version.0])
                .map_err(from_sqlite)
                .map(drop)
        })
    }

    async fn activate_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.known_version_file(version)?;
        self.with_catalog_writer(|connection| {
            connection
                .execute(
                    "INSERT INTO active_model_version (singleton, version) VALUES (1, ?1) \
                     ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
                    [version.0],
                )
                .map_err(from_sqlite)
                .map(drop)
        })?;
        self.inner.active.record(Some(version));
        Ok(())
    }

    async fn drop_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.known_version_file(version)?;
        self.inner.active.forget();
        if self.active_model_version().await? == Some(version) {
            return Err(StoreError::ActiveModelVersion(version));
        }
        self.with_catalog_writer(|connection| {
            connection
                .execute("DELETE FROM model_versions WHERE version = ?1", [version.0])
                .map_err(from_sqlite)
                .map(drop)
        })?;
        self.inner.versions.lock().unwrap_or_else(PoisonError::into_inner).remove(&version);
        let path = self.model_file(version);
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            if let Err(error) = std::fs::remove_file(&file)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                return Err(StoreError::Unavailable(format!("cannot remove {}: {error}", file.display())));
            }
        }
        Ok(())
    }

    async fn active_model_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        self.read_active_version()
    }
}

/// Key reads and writes are single-row statements on a small file; they run inline.
#[async_trait]
impl ApiKeys for SqliteStore {
    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        self.inner.api_keys.insert(key)
    }

    async fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.inner.api_keys.all()
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.inner.api_keys.by_hash(key_hash)
    }

    async fn revoke_api_key(&self, key_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.inner.api_keys.revoke(key_id, at_ms)
    }
}
