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

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::documents::DocumentKind;
use crate::identifiers::Audience;

/// A document as stored and served: UTF-8 JSON.
pub type Body = Vec<u8>;

/// A numbered, independently stored copy of the whole read model. Rebuilds
/// write a fresh version while readers keep reading the active one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelVersion(pub u32);

impl std::fmt::Display for ModelVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

/// A model version as listed by [`ModelVersions::model_versions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelVersionInfo {
    pub version: ModelVersion,
    pub active: bool,
}

/// How far one stream of one source has been applied: the next offset to read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Checkpoint {
    /// The source, for example `kafka` or `file:/path/to/dir`.
    pub source: String,
    /// A topic, or for the file source a file name.
    pub stream: String,
    pub partition: i32,
    pub next_offset: i64,
}

/// The projector's own state of one upstream aggregate, opaque to the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AggregateKey {
    /// The upstream topic the aggregate lives on.
    pub topic: String,
    pub id: String,
}

/// Stored state of one aggregate: the version it reflects and its encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAggregate {
    pub version: u64,
    pub state: Vec<u8>,
}

/// The international identifier indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdentifierKind {
    Iswc,
    Isrc,
}

impl IdentifierKind {
    /// The stable code stored in the index.
    pub fn code(self) -> &'static str {
        match self {
            IdentifierKind::Iswc => "iswc",
            IdentifierKind::Isrc => "isrc",
        }
    }
}

/// A document that names a party, so that a party change reaches it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartyReferrer {
    Work(String),
    License(String),
}

/// One page of the bulk export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkPage {
    /// Rows of the page, in export order.
    pub rows: Vec<Body>,
    /// Rows in the whole export for this audience.
    pub total: u64,
}

/// Everything one projector batch changes, written in one atomic step.
///
/// A backend applies the whole batch or nothing, checkpoints included, so a
/// crash at any point leaves the store at a batch boundary and a restart
/// resumes from exactly the events the documents do not reflect yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Upserts (`Some`) and deletions (`None`) of single-key documents.
    pub documents: Vec<(DocumentKind, String, Option<Body>)>,
    /// Provenance entries; rewriting an entry with the same key is a no-op change.
    pub provenance: Vec<ProvenanceRow>,
    /// Index entries to add (`true`) or remove (`false`).
    pub identifiers: Vec<(IdentifierKind, String, String, bool)>,
    /// Bulk rows to upsert (`Some`) or remove (`None`), keyed by lccId.
    pub bulk_rows: Vec<(String, Option<Body>)>,
    /// Sandbox fixture entries to upsert (`Some`) or remove (`None`), keyed by id.
    pub fixtures: Vec<(String, Option<Body>)>,
    /// New states of upstream aggregates.
    pub aggregates: Vec<(AggregateKey, StoredAggregate)>,
    /// Party references to add (`true`) or remove (`false`).
    pub party_references: Vec<(String, PartyReferrer, bool)>,
    /// Checkpoints of the events this batch covers.
    pub checkpoints: Vec<Checkpoint>,
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

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend cannot be reached or cannot serve now; retrying later may work.
    #[error("the read-model store is unavailable: {0}")]
    Unavailable(String),
    /// No model version has been activated yet.
    #[error("no model version is active")]
    NoActiveModelVersion,
    #[error("model version {0} does not exist")]
    UnknownModelVersion(ModelVersion),
    #[error("model version {0} is active and cannot be dropped")]
    ActiveModelVersion(ModelVersion),
    /// Stored data is not what this program expects (for example a newer schema).
    #[error("the read-model store holds unexpected data: {0}")]
    Corrupt(String),
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

    /// The sandbox fixture catalogue, ordered by id.
    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError>;

    /// Succeeds when the store can serve reads.
    async fn ping(&self) -> Result<(), StoreError>;
}

/// The projector's access: its own state, and the atomic batch write.
///
/// The reads see the last committed batch and may run while another batch is
/// being applied, so that a projector can prepare batch N+1 while batch N is
/// written (it overlays batch N's changes itself).
#[async_trait]
pub trait ProjectionWrites: Send + Sync {
    /// Stored states of the given aggregates; absent keys have none.
    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<HashMap<AggregateKey, StoredAggregate>, StoreError>;

    /// The documents that name any of the given parties.
    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError>;

    /// The checkpoints stored for one source.
    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError>;

    /// Applies a whole batch atomically: all of it, or none of it.
    /// The batch is shared so that the caller can keep reading it while it is written.
    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<(), StoreError>;
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
pub trait Store: DocumentReads + ProjectionWrites + ModelVersions + std::fmt::Debug {}

impl<T: DocumentReads + ProjectionWrites + ModelVersions + std::fmt::Debug> Store for T {}
