//! Write timestamps: every write to a model version carries the version of
//! what it writes as its CQL timestamp (`USING TIMESTAMP`).
//!
//! ScyllaDB keeps, per cell, the value with the highest timestamp, whatever
//! order writes arrive in. Stamping a document with its write version, an
//! aggregate state with its aggregate version and a checkpoint with its
//! offset therefore makes every write idempotent and order-free: a retried,
//! speculative, replayed or zombie write of an older version loses, with no
//! read-before-write and no lightweight transaction.
//!
//! Every timestamp is at most [`LATEST`], 2^50 - 1 microseconds (September
//! 2005): ScyllaDB refuses a timestamp more than three days ahead of its
//! clock by default (`restrict_future_timestamp`), so a timestamp must stay
//! in every cluster's past. Values beyond it saturate, which no registry
//! reaches: an aggregate changed 10^15 times, a Kafka offset past 10^15.

use crate::change_feed::millisecond_of_sequence;
use crate::store::WriteVersion;

/// The latest timestamp any write carries.
pub const LATEST: i64 = (1 << WriteVersion::BITS) - 1;

/// The timestamp of a document, index entry, bulk row, fixture, party
/// reference or change: its write version, which is below [`LATEST`] by
/// construction.
pub fn of_write_version(version: WriteVersion) -> i64 {
    saturating(version.0)
}

/// The timestamp of an aggregate state or a provenance entry: the aggregate version.
pub fn of_aggregate_version(version: u64) -> i64 {
    saturating(version)
}

/// The timestamp of a checkpoint: its next offset, so a checkpoint never moves back.
pub fn of_checkpoint(next_offset: i64) -> i64 {
    next_offset.clamp(0, LATEST)
}

/// The timestamp of a value that only rises with the feed's positions (its
/// horizon): the millisecond of `sequence`. Two values of one millisecond
/// tie, and a tie keeps the larger value, which is the one that rises.
pub fn of_feed_sequence(sequence: i64) -> i64 {
    millisecond_of_sequence(sequence).clamp(0, LATEST)
}

/// The timestamp of a feed day's listing (or of its removal, with the next
/// day): the day's first millisecond.
pub fn of_feed_day(first_millisecond: i64) -> i64 {
    first_millisecond.clamp(0, LATEST)
}

fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(LATEST).min(LATEST)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change_feed::sequence_of_millisecond;

    #[test]
    fn newer_versions_get_later_timestamps() {
        let older = of_write_version(WriteVersion::of_inputs(3, 10));
        assert!(of_write_version(WriteVersion::of_inputs(3, 11)) > older);
        assert!(of_write_version(WriteVersion::of_inputs(4, 0)) > older);
        assert!(of_aggregate_version(8) > of_aggregate_version(7));
        assert!(of_checkpoint(101) > of_checkpoint(100));
        let now = sequence_of_millisecond(1_790_000_000_000);
        assert!(of_feed_sequence(now + (1 << 20)) > of_feed_sequence(now));
        assert!(of_feed_day(86_400_000) > of_feed_day(0));
    }

    /// The largest inputs: saturated write versions, the largest aggregate
    /// versions and offsets, and feed sequences (a millisecond times 2^20),
    /// which as timestamps would be years in the future.
    #[test]
    fn every_timestamp_is_in_the_past_of_a_cluster_clock_after_2005() {
        let three_days_after_september_2005 = 1_126_000_000_000_000 + 3 * 86_400 * 1_000_000;
        let largest = [
            of_write_version(WriteVersion::of_inputs(u64::MAX, u64::MAX)),
            of_write_version(WriteVersion(u64::MAX)),
            of_write_version(WriteVersion::of_inputs(410_001, 1 << 27)),
            of_aggregate_version(u64::MAX),
            of_checkpoint(i64::MAX),
            of_feed_sequence(i64::MAX),
            of_feed_sequence(sequence_of_millisecond(32_503_680_000_000)),
            of_feed_day(i64::MAX),
        ];
        for timestamp in largest {
            assert!((0..three_days_after_september_2005).contains(&timestamp), "{timestamp}");
        }
        assert_eq!(of_checkpoint(-1), 0);
        assert_eq!(of_aggregate_version(1), 1);
    }
}
