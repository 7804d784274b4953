//! Bulk-export ordering: how page N is found without scanning N pages.
//!
//! Published works are spread over [`BULK_BUCKETS`] buckets by a stable hash
//! of their lccId and listed in (bucket, lccId) order. Each backend keeps a
//! row count per bucket, so a page is located by summing at most
//! [`BULK_BUCKETS`] counts and then reading inside one or two buckets. The
//! cost depends on the bucket size, never on the page number: page 10,000 is
//! as cheap as page 1. The order is stable: a work keeps its place, and only
//! works published or withdrawn in between move later rows.

/// Number of buckets. Fixed: changing it reorders the export and needs a rebuild.
pub const BULK_BUCKETS: u32 = 1024;

/// The bucket of a work: FNV-1a (64 bit) of its id, modulo [`BULK_BUCKETS`].
pub fn bulk_bucket(lcc_id: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in lcc_id.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash % u64::from(BULK_BUCKETS)) as u32
}

/// Where a page starts and how to read it, given the row count per bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagePlan {
    /// Total rows across all buckets.
    pub total: u64,
    /// Reads to make, in order: (bucket, rows to skip inside it, rows to take).
    pub reads: Vec<BucketRead>,
}

/// One read inside one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketRead {
    pub bucket: u32,
    pub skip: u64,
    pub take: u64,
}

/// Plans the reads for rows `[offset, offset + limit)`.
///
/// `counts` holds (bucket, rows) pairs in bucket order; empty buckets may be
/// left out.
pub fn plan_page(counts: &[(u32, u64)], offset: u64, limit: u64) -> PagePlan {
    let total = counts.iter().map(|(_, rows)| rows).sum();
    let mut reads = Vec::new();
    let mut to_skip = offset;
    let mut to_take = limit;
    for &(bucket, rows) in counts {
        if to_take == 0 {
            break;
        }
        if to_skip >= rows {
            to_skip -= rows;
            continue;
        }
        let take = (rows - to_skip).min(to_take);
        reads.push(BucketRead { bucket, skip: to_skip, take });
        to_take -= take;
        to_skip = 0;
    }
    PagePlan { total, reads }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_in_range() {
        assert_eq!(bulk_bucket("LCC-0000000001"), bulk_bucket("LCC-0000000001"));
        assert_eq!(bulk_bucket(""), (0xcbf2_9ce4_8422_2325_u64 % 1024) as u32);
        for index in 0..10_000 {
            assert!(bulk_bucket(&format!("LCC-{index:010}")) < BULK_BUCKETS);
        }
    }

    #[test]
    fn buckets_spread_sequential_ids_evenly() {
        let mut counts = vec![0_u32; BULK_BUCKETS as usize];
        for index in 0..102_400 {
            counts[bulk_bucket(&format!("LCC-{index:010}")) as usize] += 1;
        }
        let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
        assert!(min >= Some(50) && max <= Some(160), "uneven spread: {min:?}..{max:?}");
    }

    #[test]
    fn a_page_inside_one_bucket_is_one_read() {
        let plan = plan_page(&[(0, 10), (3, 10), (7, 10)], 12, 5);
        assert_eq!(plan.total, 30);
        assert_eq!(plan.reads, vec![BucketRead { bucket: 3, skip: 2, take: 5 }]);
    }

    #[test]
    fn a_page_across_buckets_is_split_in_order() {
        let plan = plan_page(&[(0, 10), (3, 10), (7, 10)], 8, 15);
        assert_eq!(
            plan.reads,
            vec![
                BucketRead { bucket: 0, skip: 8, take: 2 },
                BucketRead { bucket: 3, skip: 0, take: 10 },
                BucketRead { bucket: 7, skip: 0, take: 3 },
            ]
        );
    }

    #[test]
    fn a_page_past_the_end_reads_nothing() {
        let plan = plan_page(&[(0, 10)], 10, 5);
        assert!(plan.reads.is_empty());
        assert_eq!(plan.total, 10);
        assert!(plan_page(&[], 0, 100).reads.is_empty());
    }
}
