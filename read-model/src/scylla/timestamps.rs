//! Write timestamps: every write to a model version carries the version of
//! what it writes as its CQL timestamp (`USING TIMESTAMP`).
//!
//! ScyllaDB keeps, per cell, the value with the highest timestamp, whatever
//! order writes arrive in. Stamping a document with its write version, an
//! aggregate state with its aggregate version and a checkpoint with its
//! offset therefore makes every write idempotent and order-free: a retried,
//! speculative, replayed or zombie write of an older version loses, with no
//! read-before-write and no lightweight transaction.

use crate::store::WriteVersion;

/// The timestamp of a document, index entry, bulk row, fixture or party reference.
pub fn of_write_version(version: WriteVersion) -> i64 {
    saturating(version.0)
}

/// The timestamp of an aggregate state or a provenance entry: the aggregate version.
pub fn of_aggregate_version(version: u64) -> i64 {
    saturating(version)
}

/// The timestamp of a checkpoint: its next offset, so a checkpoint never moves back.
pub fn of_checkpoint(next_offset: i64) -> i64 {
    next_offset.max(0)
}

fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_get_later_timestamps() {
        let older = of_write_version(WriteVersion::of_inputs(3, 10));
        assert!(of_write_version(WriteVersion::of_inputs(3, 11)) > older);
        assert!(of_write_version(WriteVersion::of_inputs(4, 0)) > older);
        assert!(of_aggregate_version(8) > of_aggregate_version(7));
        assert!(of_checkpoint(101) > of_checkpoint(100));
    }

    #[test]
    fn timestamps_stay_in_the_cql_range() {
        assert_eq!(of_aggregate_version(u64::MAX), i64::MAX);
        assert_eq!(of_write_version(WriteVersion(u64::MAX)), i64::MAX);
        assert_eq!(of_checkpoint(-1), 0);
        assert_eq!(of_aggregate_version(1), 1);
    }
}
