//! The catalog's clock: the timestamp every write to the catalog keyspace
//! carries (model versions, the active version, the schema revision,
//! production keys).
//!
//! Catalog writes come from operators' commands and projectors on different
//! hosts. Stamped by each coordinator's clock, a write from a host whose
//! clock is behind loses to an older one from a host ahead of it: a version
//! dropped there comes back, an activation or a key's revocation is lost.
//! Each catalog write therefore reads the newest stamp, takes the later of
//! its own clock and that stamp plus one, and records it before writing, so
//! that stamps grow in the order the writes are made. Two writes at the same
//! moment can take the same stamp (there are no lightweight transactions);
//! then ScyllaDB keeps the larger value, and operators do not race catalog
//! changes.

use scylla::client::session::Session;

use super::execution::{Prepared, execute, select};
use super::statements::{CLOCK_ROW, CatalogStatement};
use crate::store::StoreError;

/// The stamp of the next catalog write at `now_micros`, after the newest one.
pub(super) fn next_stamp(now_micros: i64, newest: Option<i64>) -> i64 {
    newest.map_or(now_micros, |newest| now_micros.max(newest.saturating_add(1)))
}

/// Takes the next stamp and records it as the newest.
pub(super) async fn advance(
    session: &Session,
    catalog: &Prepared<CatalogStatement>,
    now_micros: i64,
) -> Result<i64, StoreError> {
    let rows: Vec<(i64,)> = select(session, catalog.get(CatalogStatement::SelectCatalogClock)?, (CLOCK_ROW,)).await?;
    let stamp = next_stamp(now_micros, rows.first().map(|(stamp,)| *stamp));
    execute(session, catalog.get(CatalogStatement::AdvanceCatalogClock)?, (CLOCK_ROW, stamp, stamp)).await?;
    Ok(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host ten minutes ahead creates a version; a host with the right
    /// clock drops it a minute later. Stamped by their clocks, the drop
    /// would be older than the creation and the version would stay. Stamped by
    /// the catalog's clock, each write is later than the one before.
    #[test]
    fn a_write_from_a_host_whose_clock_is_behind_is_stamped_after_the_newest() {
        let true_time = 1_790_000_000_000_000;
        let ahead = true_time + 600_000_000;
        let created = next_stamp(ahead, None);
        let dropped = next_stamp(true_time + 60_000_000, Some(created));
        assert!(dropped > created);
        let recreated = next_stamp(true_time + 120_000_000, Some(dropped));
        assert!(recreated > dropped);
        let much_later = true_time + 3_600_000_000;
        assert_eq!(
            next_stamp(much_later, Some(recreated)),
            much_later,
            "a clock ahead of every stamp is used as it is"
        );
    }
}
