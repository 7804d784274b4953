//! The ScyllaDB backend: the read model on a cluster, for when one machine
//! is not enough.
//!
//! Layout (`schemas/cql/`): a catalog keyspace names the model versions and
//! the active one; each version is a keyspace of its own, so a rebuild
//! writes a fresh keyspace while readers read the active one, and dropping a
//! version is dropping its keyspace. Every statement is prepared once per
//! keyspace and routed to a replica and shard that own its partition.
//!
//! What differs from the embedded backend, and why it is still correct:
//! there is no transaction across partitions, so a batch is written in
//! phases whose order a replay repairs, every write stamped with its version
//! (`write_protocol`, driven here through `version_cluster`); bulk bucket
//! counts are absolute values recounted after the rows change, off the
//! batch path, not counters, which a replay would double.
//!
//! It must not interpret documents, and it never writes a model version
//! without an explicit timestamp (see `schemas/cql/model.cql`).
//!
//! This module connects; `catalog` holds the keyspaces and the versions,
//! `feed_retention` the feed's placement and sweep, and `document_reads`,
//! `projection_writes` and `api_keys` implement the ports.

mod api_keys;
mod bulk_pages;
mod catalog;
mod catalog_clock;
mod change_feed;
mod document_cache;
mod document_reads;
mod errors;
mod execution;
mod feed_retention;
#[cfg(feature = "conformance")]
pub mod model;
mod notification_feed;
mod prepared_versions;
mod projection_writes;
mod reads;
mod row_mapping;
pub mod schema;
mod session;
mod settings;
mod statements;
mod timestamps;
mod version_cluster;
mod webhooks;
pub mod write_protocol;

use std::sync::Arc;

use scylla::client::execution_profile::ExecutionProfileHandle;
use scylla::client::session::Session;
use tokio::sync::OnceCell;

use self::document_cache::DocumentCache;
use self::execution::Prepared;
use self::prepared_versions::PreparedVersions;
use self::settings::validate_keyspace;
pub use self::settings::{ScyllaSettings, parse_consistency};
pub use self::statements::every_statement_text;
use self::statements::{CatalogStatement, ModelStatement};
use self::write_protocol::BucketRecounts;
use crate::active_version_cache::ActiveVersionCache;
use crate::cached_documents::DocumentCacheCounters;
use crate::clock::Clock;
use crate::store::{ModelVersion, StoreError, WriteBatch};

/// The ScyllaDB store. Cheap to clone; clones share the session.
#[derive(Debug, Clone)]
pub struct ScyllaStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    session: Session,
    read_profile: ExecutionProfileHandle,
    settings: ScyllaSettings,
    /// Prepared once the catalog tables exist (after the first `migrate`).
    catalog: OnceCell<Prepared<CatalogStatement>>,
    versions: PreparedVersions<Prepared<ModelStatement>>,
    active: ActiveVersionCache,
    /// The calendar time changes are stamped with and kept by.
    clock: Clock,
    /// The millisecond of this process's newest batch of changes, so that
    /// its batches never share one.
    newest_feed_millisecond: std::sync::Mutex<i64>,
    /// When retention last swept, and the sequence it swept through.
    feed_sweep: tokio::sync::Mutex<Option<(i64, i64)>>,
    /// The bulk buckets this process marked and has yet to count.
    recounts: BucketRecounts,
    /// The active version's documents held in memory, once one is read.
    documents: std::sync::Mutex<Option<Arc<DocumentCache>>>,
    document_cache_counters: Arc<DocumentCacheCounters>,
}

impl ScyllaStore {
    /// Connects to the cluster. The schema need not exist yet: `migrate` creates it.
    pub async fn connect(settings: ScyllaSettings) -> Result<ScyllaStore, StoreError> {
        ScyllaStore::connect_with_clock(settings, Clock::system()).await
    }

    /// [`ScyllaStore::connect`], reading `clock` for the change feed's
    /// placement, settling and retention (a manual one in tests).
    pub async fn connect_with_clock(settings: ScyllaSettings, clock: Clock) -> Result<ScyllaStore, StoreError> {
        validate_keyspace(&settings.keyspace).map_err(StoreError::Corrupt)?;
        let (session, read_profile) = session::connect(&settings).await?;
        Ok(ScyllaStore {
            inner: Arc::new(Inner {
                session,
                read_profile,
                settings,
                catalog: OnceCell::new(),
                versions: PreparedVersions::default(),
                active: ActiveVersionCache::default(),
                clock,
                newest_feed_millisecond: std::sync::Mutex::new(0),
                feed_sweep: tokio::sync::Mutex::new(None),
                recounts: BucketRecounts::default(),
                documents: std::sync::Mutex::new(None),
                document_cache_counters: Arc::default(),
            }),
        })
    }

    /// The document cache of model version `version`, made when the
    /// version is read for the first time (one version's at a time); `None`
    /// when the cache is off.
    fn document_cache(&self, version: ModelVersion) -> Option<Arc<DocumentCache>> {
        let capacity = self.inner.settings.document_cache_bytes;
        if capacity == 0 {
            return None;
        }
        let mut current = self.inner.documents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match current.as_ref() {
            Some(cache) if cache.version() == version => Some(Arc::clone(cache)),
            _ => {
                let cache = Arc::new(DocumentCache::new(
                    version,
                    capacity,
                    self.inner.settings.change_feed_settle,
                    self.inner.clock.clone(),
                    Arc::clone(&self.inner.document_cache_counters),
                ));
                *current = Some(Arc::clone(&cache));
                Some(cache)
            }
        }
    }

    /// Drops from the cache of `version`, if there is one, the documents `batch` wrote.
    fn forget_written(&self, version: ModelVersion, batch: &WriteBatch) {
        if batch.documents.is_empty() {
            return;
        }
        let current = self.inner.documents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cache) = current.as_ref().filter(|cache| cache.version() == version) {
            cache.forget_written(batch.documents.iter().map(|write| write.key.as_str()));
        }
    }
}
