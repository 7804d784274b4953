//! The `Store` port: everything the two sides of the system ask of the
//! read-model storage, and nothing about how a backend does it.
//!
//! It is split by who may call it:
//! - [`DocumentReads`]: the query API's reads, always from the active model version;
//! - [`ProjectionWrites`]: the projector's state reads and its one atomic write per batch;
//! - [`ModelVersions`]: creating, activating and dropping model versions.
//!
//! Documents travel as ready-to-send JSON bytes ([`Body`]); this port never
//! interprets them, so a backend cannot change what clients see.

use std::sync::Arc;

use async_trait::async_trait;

use crate::api_keys::ApiKeys;
use crate::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::notifications::{NotificationQuery, NotificationWrite, NotificationsRead};
use crate::read_set::{CommitMark, ReadSet};
pub use crate::records::{
    AggregateKey, Body, BulkPage, Checkpoint, IdentifierKind, ModelVersion, ModelVersionInfo, PartyReferrer,
    StoreError, StoredAggregate, WriteVersion,
};
use crate::webhooks::Webhooks;

/// An upsert (`Some`) or deletion (`None`) of one single-key document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentWrite {
    pub kind: DocumentKind,
    pub key: String,
    pub body: Option<Body>,
    pub version: WriteVersion,
}

/// An upsert (`Some`) or deletion (`None`) of a bulk row or a sandbox fixture entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedWrite {
    /// The lccId (bulk rows) or record id (fixtures).
    pub key: String,
    pub body: Option<Body>,
    pub version: WriteVersion,
}

/// An index entry to add (`present`) or remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifierWrite {
    pub kind: IdentifierKind,
    pub code: String,
    pub lcc_id: String,
    pub present: bool,
    pub version: WriteVersion,
}

/// A party reference to add (`present`) or remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartyReferenceWrite {
    pub party_id: String,
    pub referrer: PartyReferrer,
    pub present: bool,
    pub version: WriteVersion,
}

/// Everything one projector batch changes, written in one step.
///
/// A backend either applies the whole batch atomically (SQLite), or applies
/// it in an order that makes a replay converge (ScyllaDB: documents, then
/// party references, then the projector's states, then the checkpoints, each
/// write stamped with its version; see `scylla::write_protocol`). Either way
/// a crash at any point is repaired by resuming from the stored checkpoints:
/// no event is lost and none has a second effect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub documents: Vec<DocumentWrite>,
    /// Provenance entries; rewriting an entry with the same key is a no-op change.
    pub provenance: Vec<ProvenanceRow>,
    pub identifiers: Vec<IdentifierWrite>,
    /// Bulk rows, keyed by lccId.
    pub bulk_rows: Vec<KeyedWrite>,
    /// Sandbox fixture entries, keyed by record id.
    pub fixtures: Vec<KeyedWrite>,
    /// New states of upstream aggregates.
    pub aggregates: Vec<(AggregateKey, StoredAggregate)>,
    pub party_references: Vec<PartyReferenceWrite>,
    /// Checkpoints of the events this batch covers.
    pub checkpoints: Vec<Checkpoint>,
    /// What the documents were rendered from, checked against other projectors' writes.
    pub read_set: ReadSet,
    /// Notifications of the answers the batch changes (see [`crate::notifications`]).
    pub notifications: Vec<NotificationWrite>,
    /// How long the change feed keeps changes that a later change of the
    /// same work supersedes, and withdrawals, and how long notifications are
    /// kept; the write removes what has aged past it. `None` removes nothing.
    pub change_feed_retention: Option<std::time::Duration>,
    /// Whether the batch's identifier index entries and party references
    /// may wait, to be written in key order with a later batch's (a sorted
    /// catch-up's batches but its last defer them). A backend that keeps
    /// them waiting counts them among the party referrers it reads, and
    /// writes them all, first, with the next batch that does not defer its
    /// own; a lookup by identifier finds an entry once it is written. A
    /// backend that writes them at once ignores this.
    pub defer_index_entries: bool,
}

/// The place of a bulk row in the export order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BulkKey {
    pub bucket: u32,
    pub lcc_id: String,
}

/// What a batch write reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchWritten {
    /// Where the write stands in the backend's commit order, when the backend
    /// can tell later whether anyone else has written since. A batch whose
    /// reads all came after this mark passes it as [`ReadSet::read_after`].
    pub mark: Option<CommitMark>,
    /// Documents the batch wrote from inputs another projector has changed
    /// meanwhile (only a backend that checks after writing reports any):
    /// the caller renders them again.
    pub stale: Vec<PartyReferrer>,
}

impl WriteBatch {
    /// Whether the batch changes nothing at all.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
            && self.provenance.is_empty()
            && self.identifiers.is_empty()
            && self.bulk_rows.is_empty()
            && self.fixtures.is_empty()
            && self.aggregates.is_empty()
            && self.party_references.is_empty()
            && self.checkpoints.is_empty()
            && self.notifications.is_empty()
    }
}

/// One provenance entry of a work, with the key that orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenanceRow {
    pub lcc_id: String,
    /// Milliseconds since the epoch; first sort key.
    pub recorded_at: i64,
    pub topic: String,
    pub aggregate_version: u64,
    pub body: Body,
}

/// The query API's reads. Each call reads the active model version.
#[async_trait]
pub trait DocumentReads: Send + Sync {
    /// One document by kind and key.
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError>;

    /// The provenance entries of a work, oldest first.
    async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError>;

    /// The lccIds indexed under an international identifier, for one audience, sorted.
    async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError>;

    /// Rows `[offset, offset + limit)` of the bulk export of one audience.
    async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError>;

    /// Up to `limit` bulk rows of one audience after `after`, in export
    /// order ((bucket, lccId)): a walk over the whole export that rows
    /// published or withdrawn meanwhile do not shift.
    async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError>;

    /// A page of the change feed (see [`crate::change_feed`]).
    async fn changes(&self, query: &ChangeQuery) -> Result<ChangesRead, StoreError>;

    /// The newest retained change of one work, with the model version it was read from.
    async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<(ModelVersion, ChangeItem)>, StoreError>;

    /// A page of the notification feed (see [`crate::notifications`]).
    async fn notifications(&self, query: &NotificationQuery) -> Result<NotificationsRead, StoreError>;

    /// The extent of one audience's change feed.
    async fn change_feed_bounds(&self, audience: Audience) -> Result<ChangeFeedBounds, StoreError>;

    /// The sandbox fixture catalogue, ordered by id.
    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError>;

    /// Succeeds when the store can serve reads.
    async fn ping(&self) -> Result<(), StoreError>;

    /// The counters of the store's in-memory document cache, when it has one.
    fn document_cache_statistics(&self) -> Option<DocumentCacheStatistics> {
        None
    }
}

/// Counters of a store's in-memory document cache, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentCacheStatistics {
    /// Document reads answered from memory.
    pub hits: u64,
    /// Document reads that went to the store.
    pub misses: u64,
    /// Times the whole cache was dropped, having fallen behind the batches.
    pub resets: u64,
    /// Bytes held now, keys and bodies.
    pub bytes: u64,
    /// Whether the cache holds documents as stored (compressed), having
    /// once been full, rather than as served.
    pub holds_stored: bool,
}

/// The projector's access: its own state, and the atomic batch write.
///
/// The reads see the last committed batch and may run while another batch is
/// being applied, so that a projector can prepare batch N+1 while batch N is
/// written (it overlays batch N's changes itself).
#[async_trait]
pub trait ProjectionWrites: Send + Sync {
    /// Stored states of the given aggregates, one per key in the order of
    /// `keys`, `None` where there is none. In key order rather than in a map,
    /// so that a caller walking its keys neither clones nor hashes them.
    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError>;

    /// The documents that name any of the given parties.
    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError>;

    /// The checkpoints stored for one source.
    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError>;

    /// Fails with [`StoreError::Misconfigured`] when the store is configured
    /// so that a projector writing to it could miss its own writes.
    async fn check_writer_settings(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Whether the backend orders the writes of one key by their
    /// [`WriteVersion`]s (ScyllaDB) rather than applying batches in one
    /// serial order (SQLite). Writing to a serial backend, the projector
    /// leaves out the reads that would only supply write versions.
    fn orders_writes_by_version(&self) -> bool;

    /// Finishes what the backend keeps off the batch path (ScyllaDB: the
    /// bulk buckets' row counts, so [`BulkPage::total`] and page boundaries
    /// follow the rows); the projector calls it when idle and at the end of
    /// a run. A backend that does everything in the batch does nothing.
    async fn settle(&self, _version: ModelVersion) -> Result<(), StoreError> {
        Ok(())
    }

    /// Applies a whole batch atomically: all of it, or none of it, and checks
    /// its read set (see [`crate::read_set`]): either before writing, failing
    /// with [`StoreError::WriteConflict`], or after, reporting the stale
    /// documents. The batch is shared so that the caller can keep reading it
    /// while it is written.
    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError>;
}

/// Model versions: the unit of rebuild and atomic switch-over.
#[async_trait]
pub trait ModelVersions: Send + Sync {
    /// Creates or upgrades the schema of the store and of every model version. Idempotent.
    async fn migrate(&self) -> Result<(), StoreError>;

    /// Every model version, oldest first.
    async fn model_versions(&self) -> Result<Vec<ModelVersionInfo>, StoreError>;

    /// Creates an empty model version. Idempotent.
    async fn create_model_version(&self, version: ModelVersion) -> Result<(), StoreError>;

    /// Makes readers read this version from now on.
    async fn activate_model_version(&self, version: ModelVersion) -> Result<(), StoreError>;

    /// Removes a version that is not active.
    async fn drop_model_version(&self, version: ModelVersion) -> Result<(), StoreError>;

    /// The version readers read, if any was activated.
    async fn active_model_version(&self) -> Result<Option<ModelVersion>, StoreError>;
}

/// The version to work on when none was asked for: the active one, or on a
/// new store a version 1, created and activated.
pub async fn active_or_first_version(store: &dyn ModelVersions) -> Result<ModelVersion, StoreError> {
    if let Some(active) = store.active_model_version().await? {
        return Ok(active);
    }
    store.create_model_version(ModelVersion(1)).await?;
    store.activate_model_version(ModelVersion(1)).await?;
    Ok(ModelVersion(1))
}

/// A complete backend.
pub trait Store: DocumentReads + ProjectionWrites + ModelVersions + ApiKeys + Webhooks + std::fmt::Debug {}

impl<T: DocumentReads + ProjectionWrites + ModelVersions + ApiKeys + Webhooks + std::fmt::Debug> Store for T {}
