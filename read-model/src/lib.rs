//! The read model shared by both sides of the system.
//!
//! It owns the documents the public API serves ([`documents`]), the rules for
//! identifiers ([`identifiers`]) and dates ([`calendar`]), and the [`store`]
//! port with its embedded SQLite backend ([`sqlite`]) and its ScyllaDB
//! backend ([`scylla`]).
//!
//! It must not know where events come from or how HTTP works: the projector
//! builds documents and hands them to a store; the query API reads them back.

mod active_version_cache;
pub mod answer_tags;
pub mod api_keys;
pub mod base64url;
pub mod bulk;
mod cached_documents;
pub mod calendar;
pub mod canonical_json;
pub mod change_feed;
pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod documents;
pub mod hex;
pub mod identifiers;
pub mod notifications;
pub mod read_set;
pub mod records;
pub mod scylla;
pub mod sqlite;
pub mod store;
#[cfg(feature = "cli")]
pub mod store_arguments;
pub mod stored_bodies;
pub mod webhooks;

pub use api_keys::{ApiKeyRecord, ApiKeys};
pub use documents::DocumentKind;
pub use identifiers::Audience;
pub use read_set::{CheckMoment, CommitMark, ReadInput, ReadSet};
pub use scylla::{ScyllaSettings, ScyllaStore};
pub use sqlite::SqliteStore;
pub use store::{
    AggregateKey, BatchWritten, Body, BulkKey, BulkPage, Checkpoint, DocumentCacheStatistics, DocumentReads,
    DocumentWrite, IdentifierKind, IdentifierWrite, KeyedWrite, ModelVersion, ModelVersionInfo, ModelVersions,
    PartyReferenceWrite, PartyReferrer, ProjectionWrites, ProvenanceRow, Store, StoreError, StoredAggregate,
    WriteBatch, WriteVersion, active_or_first_version,
};
pub use webhooks::Webhooks;
