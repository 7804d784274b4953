//! The values the store port carries that other modules build on: model
//! versions, checkpoints, the projector's aggregate keys and states, the
//! documents that name a party, write versions, and the one error type of
//! the port. They hold no behaviour of a backend; [`crate::store`] uses them
//! and re-exports them.

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

/// A model version as listed by [`crate::store::ModelVersions::model_versions`].
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

impl PartyReferrer {
    /// The stored kind code and the referrer's id.
    pub fn columns(&self) -> (&'static str, &str) {
        match self {
            PartyReferrer::Work(id) => ("work", id),
            PartyReferrer::License(id) => ("license", id),
        }
    }

    /// The referrer stored as `columns` returned it.
    pub fn from_columns(kind: &str, id: String) -> Result<PartyReferrer, StoreError> {
        match kind {
            "work" => Ok(PartyReferrer::Work(id)),
            "license" => Ok(PartyReferrer::License(id)),
            other => Err(StoreError::Corrupt(format!("unknown referrer kind {other:?}"))),
        }
    }
}

/// One page of the bulk export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkPage {
    /// Rows of the page, in export order.
    pub rows: Vec<Body>,
    /// Rows in the whole export for this audience.
    pub total: u64,
}

/// The order of the writes of one document: it grows with every change of
/// the inputs the document is rendered from.
///
/// Backends whose writes can overtake each other (ScyllaDB: retries,
/// speculative execution, two projectors during a rebalance) use it as the
/// write timestamp, so that a stale rendering never replaces a newer one.
/// A backend that applies batches in one serial order (SQLite) needs it not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteVersion(pub u64);

impl WriteVersion {
    /// Bits of a write version: 2^50 microseconds is September 2005, so a
    /// write version used as a CQL timestamp is always in a cluster's past.
    /// ScyllaDB refuses timestamps more than three days ahead of its clock
    /// (`restrict_future_timestamp`, on by default); 2^63, the range CQL
    /// allows, would be refused from an own sum of about 410,000.
    pub const BITS: u32 = 50;
    /// Bits for the versions of the parties a document names.
    const REFERENCED_BITS: u32 = 28;
    /// Largest sum of own versions that fits beside the referenced sum.
    const MAX_OWN: u64 = (1 << (WriteVersion::BITS - WriteVersion::REFERENCED_BITS)) - 1;
    const MAX_REFERENCED: u64 = (1 << WriteVersion::REFERENCED_BITS) - 1;

    /// The version of a document rendered from aggregates it owns (a work's
    /// works, rights, disputes and certificate aggregates; a license) and the
    /// parties those name, given the sum of each group's aggregate versions.
    ///
    /// Own versions only grow. The set of named parties changes only with an
    /// own aggregate, so while the own sum stands still the referenced sum
    /// only grows too. Ordering by (own, referenced) therefore grows with
    /// every change, even when a new owner drops a party with a high version.
    /// Sums beyond 2^22 (own: a work's aggregates changed four million
    /// times) or 2^28 (referenced) saturate; no work of the registry comes near.
    pub fn of_inputs(own_versions: u64, referenced_versions: u64) -> WriteVersion {
        WriteVersion(
            (own_versions.min(WriteVersion::MAX_OWN) << WriteVersion::REFERENCED_BITS)
                | referenced_versions.min(WriteVersion::MAX_REFERENCED),
        )
    }
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
    /// Another projector changed what the batch was rendered from; nothing was written.
    #[error("another projector changed what the batch read ({0}); nothing was written")]
    WriteConflict(String),
    /// Stored data is not what this program expects (for example a newer schema).
    #[error("the read-model store holds unexpected data: {0}")]
    Corrupt(String),
    /// The store is configured so that this use of it would be wrong; waiting does not help.
    #[error("the read-model store cannot be used as configured: {0}")]
    Misconfigured(String),
    /// The store refused a request as invalid (a value it does not accept,
    /// a statement it cannot run); sending it again cannot help.
    #[error("the read-model store refused the request: {0}")]
    Refused(String),
}

#[cfg(test)]
mod tests {
    use super::WriteVersion;

    #[test]
    fn write_versions_order_own_changes_before_party_changes() {
        let before = WriteVersion::of_inputs(7, 900);
        assert!(WriteVersion::of_inputs(7, 901) > before, "a party rename raises the version");
        assert!(WriteVersion::of_inputs(8, 1) > before, "an own change wins even when it drops a busy party");
        assert_eq!(WriteVersion::of_inputs(1, 2), WriteVersion((1 << 28) | 2));
    }

    #[test]
    fn write_versions_saturate_below_two_to_the_fifty() {
        let largest = WriteVersion::of_inputs(u64::MAX, u64::MAX);
        assert_eq!(largest.0, (1 << WriteVersion::BITS) - 1);
        assert_eq!(WriteVersion::of_inputs(u64::MAX, 0), WriteVersion(((1 << 22) - 1) << 28));
        assert!(WriteVersion::of_inputs(410_000, 0) < WriteVersion::of_inputs(410_001, 0), "ordered past 410,000");
    }
}
