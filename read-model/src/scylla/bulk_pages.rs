//! Bulk export arithmetic particular to ScyllaDB: reading inside a bucket
//! without OFFSET, and deciding which bucket counts a batch must recount.
//!
//! The page planner (`crate::bulk`) turns a page into reads of (bucket,
//! skip, take). CQL has no OFFSET, so a read that skips rows first fetches
//! only the lccIds up to the first wanted row, then the bodies from there:
//! the skipped rows cost an id each, never a body, and a bucket holds
//! about 1/1024 of the catalogue whatever the page number.

use crate::bulk::BucketRead;

/// How to read one bucket's share of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketQuery {
    /// The first `limit` bodies of the bucket.
    Head { limit: i32 },
    /// Find the id at index `skip` (reading `skip + 1` ids), then `limit` bodies from it.
    AfterSkipping { ids_to_read: i32, skip: usize, limit: i32 },
}

/// The query for one planned read. Limits saturate at `i32::MAX`, CQL's type for LIMIT.
pub fn bucket_query(read: BucketRead) -> BucketQuery {
    let limit = i32::try_from(read.take).unwrap_or(i32::MAX);
    if read.skip == 0 {
        BucketQuery::Head { limit }
    } else {
        let ids_to_read = i32::try_from(read.skip.saturating_add(1)).unwrap_or(i32::MAX);
        BucketQuery::AfterSkipping { ids_to_read, skip: usize::try_from(read.skip).unwrap_or(usize::MAX), limit }
    }
}

/// Whether a bulk row write may change its bucket's row count, given the
/// write time of the row as stored before the write (`None`: no such row).
///
/// A deletion may remove a row; an upsert adds one when none was stored. An
/// upsert that finds a row stamped with its own timestamp is this very write
/// replayed after a crash, which may have stopped before the recount, so it
/// counts again. Any other upsert replaces a row in place.
pub fn may_change_count(upsert: bool, stored_write_time: Option<i64>, timestamp: i64) -> bool {
    !upsert || stored_write_time.is_none_or(|stored| stored == timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_from_the_start_of_a_bucket_is_one_query() {
        assert_eq!(bucket_query(BucketRead { bucket: 4, skip: 0, take: 100 }), BucketQuery::Head { limit: 100 });
    }

    #[test]
    fn a_read_that_skips_reads_ids_up_to_the_first_wanted_row() {
        let query = bucket_query(BucketRead { bucket: 4, skip: 250, take: 100 });
        assert_eq!(query, BucketQuery::AfterSkipping { ids_to_read: 251, skip: 250, limit: 100 });
    }

    #[test]
    fn huge_reads_saturate_instead_of_wrapping() {
        let query = bucket_query(BucketRead { bucket: 0, skip: u64::MAX, take: u64::MAX });
        assert_eq!(query, BucketQuery::AfterSkipping { ids_to_read: i32::MAX, skip: usize::MAX, limit: i32::MAX });
    }

    #[test]
    fn only_writes_that_can_add_or_remove_a_row_trigger_a_recount() {
        assert!(may_change_count(true, None, 7), "a new row");
        assert!(may_change_count(true, Some(7), 7), "this write, replayed");
        assert!(!may_change_count(true, Some(5), 7), "an update in place");
        assert!(!may_change_count(true, Some(9), 7), "a stale write, which the newer row wins over");
        assert!(may_change_count(false, Some(5), 7), "a deletion");
        assert!(may_change_count(false, None, 7), "a deletion of a row that may have been counted");
    }
}
