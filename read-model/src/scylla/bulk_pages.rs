//! Bulk export arithmetic particular to ScyllaDB: reading inside a bucket
//! without OFFSET.
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
}
