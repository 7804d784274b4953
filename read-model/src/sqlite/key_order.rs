//! The order in which a batch writes the rows of a table: the table's key.
//!
//! It must not write anything itself: the callers do.

/// `rows` in the order of their table's key (`key`), rows of one key in
/// the batch's order (the sort is stable, so the last write of a key still
/// wins). A batch's rows fall all over b-trees larger than the writer's
/// page cache; in key order each page is fetched once per batch and
/// written while it is still in the cache.
pub(super) fn in_key_order<'a, T, K: Ord>(rows: &'a [T], key: impl Fn(&'a T) -> K) -> Vec<&'a T> {
    let mut ordered: Vec<&T> = rows.iter().collect();
    ordered.sort_by_cached_key(|row| key(row));
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_ordered_by_key_and_stay_in_the_batchs_order_within_one() {
        let rows = [("b", 1), ("a", 1), ("b", 2), ("a", 2), ("c", 1), ("a", 3)];
        let ordered: Vec<_> = in_key_order(&rows, |row| row.0).into_iter().copied().collect();
        assert_eq!(ordered, [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1)], "stable within a key");
    }
}
