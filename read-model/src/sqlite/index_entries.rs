//! A batch's identifier index entries and party references: written in key
//! order with the batch, or, for a batch that defers them
//! ([`WriteBatch::defer_index_entries`]), appended to the deferred tables
//! and written in key order later, all at once.
//!
//! Why: both tables are keyed by something a work does not sort by (an
//! ISWC, a party), so the entries of a batch fall on pages all over them,
//! and each batch rewrites every page it touches in the write-ahead log.
//! A sorted catch-up writes works in the order of their ids, in thousands
//! of batches at a national registry's size; deferred, its entries cost one
//! append each, and the pages of the two tables are written once per
//! [`WRITTEN_FROM_ROWS`] entries instead of once per batch.
//!
//! The deferred entries are committed with their batch, so a crash loses
//! none, and they are applied in the order committed, so the last change of
//! an entry wins. Reads of party references count them
//! (`reads::party_referrers`); identifier lookups find an entry once it is
//! written.
//!
//! It must not decide which batches defer: the projector does.

use rusqlite::{Connection, params};

use super::errors::from_sqlite;
use super::key_order::in_key_order;
use crate::identifiers::Audience;
use crate::store::{PartyReferenceWrite, StoreError, WriteBatch};

/// Deferred entries of one table are written once this many wait: few
/// enough for SQLite to sort them within the projector's memory bound, and
/// enough that each page of a table is written once per a few dozen
/// batches (a registry of 3,000,000 works names about 9,300,000 parties).
const WRITTEN_FROM_ROWS: i64 = 250_000;

/// Writes `batch`'s entries, or defers them; a batch that does not defer
/// its own writes every deferred entry first.
pub(super) fn write(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    write_deferring_up_to(connection, batch, WRITTEN_FROM_ROWS)
}

/// [`write`], deferred entries written once `written_from_rows` wait in a table.
fn write_deferring_up_to(
    connection: &Connection,
    batch: &WriteBatch,
    written_from_rows: i64,
) -> Result<(), StoreError> {
    if batch.defer_index_entries {
        defer(connection, batch)?;
        return write_waiting(connection, written_from_rows);
    }
    write_waiting(connection, 1)?;
    write_identifiers(connection, batch)?;
    write_party_references(connection, batch)
}

/// Writes, in key order, the deferred entries of each table where at least `at_least` wait.
fn write_waiting(connection: &Connection, at_least: i64) -> Result<(), StoreError> {
    for table in [DeferredTable::PartyReferences, DeferredTable::Identifiers] {
        if table.waiting(connection)? >= at_least {
            table.write(connection)?;
        }
    }
    Ok(())
}

fn write_identifiers(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let identifiers = in_key_order(&batch.identifiers, |write| {
        (write.kind.code(), &write.code, Audience::of(&write.lcc_id).code(), &write.lcc_id)
    });
    for write in identifiers {
        let audience = Audience::of(&write.lcc_id).code();
        write_identifier(connection, [write.kind.code(), &write.code, audience, &write.lcc_id], write.present)?;
    }
    Ok(())
}

fn write_identifier(
    connection: &Connection,
    [kind, code, audience, lcc_id]: [&str; 4],
    present: bool,
) -> Result<(), StoreError> {
    let sql = if present {
        "INSERT OR IGNORE INTO identifier_index (kind, code, audience, lcc_id) VALUES (?1, ?2, ?3, ?4)"
    } else {
        "DELETE FROM identifier_index WHERE kind = ?1 AND code = ?2 AND audience = ?3 AND lcc_id = ?4"
    };
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.execute(params![kind, code, audience, lcc_id]))
        .map(drop)
        .map_err(from_sqlite)
}

fn write_party_references(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let references = in_key_order(&batch.party_references, |write| (&write.party_id, write.referrer.columns()));
    for PartyReferenceWrite { party_id, referrer, present, .. } in references {
        let (kind, id) = referrer.columns();
        write_party_reference(connection, [party_id, kind, id], *present)?;
    }
    Ok(())
}

fn write_party_reference(
    connection: &Connection,
    [party_id, kind, id]: [&str; 3],
    present: bool,
) -> Result<(), StoreError> {
    let sql = if present {
        "INSERT OR IGNORE INTO party_references (party_id, referrer_kind, referrer_id) VALUES (?1, ?2, ?3)"
    } else {
        "DELETE FROM party_references WHERE party_id = ?1 AND referrer_kind = ?2 AND referrer_id = ?3"
    };
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.execute(params![party_id, kind, id]))
        .map(drop)
        .map_err(from_sqlite)
}

/// Appends `batch`'s entries to the deferred tables, in the batch's order.
fn defer(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let mut identifiers = connection
        .prepare_cached(
            "INSERT INTO deferred_identifiers (kind, code, audience, lcc_id, present) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(from_sqlite)?;
    for write in &batch.identifiers {
        let audience = Audience::of(&write.lcc_id).code();
        identifiers
            .execute(params![write.kind.code(), write.code, audience, write.lcc_id, write.present])
            .map_err(from_sqlite)?;
    }
    let mut references = connection
        .prepare_cached(
            "INSERT INTO deferred_party_references (party_id, referrer_kind, referrer_id, present) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(from_sqlite)?;
    for write in &batch.party_references {
        let (kind, id) = write.referrer.columns();
        references.execute(params![write.party_id, kind, id, write.present]).map_err(from_sqlite)?;
    }
    Ok(())
}

/// A table of deferred entries.
#[derive(Clone, Copy)]
enum DeferredTable {
    PartyReferences,
    Identifiers,
}

impl DeferredTable {
    /// How many entries wait. The tables are only appended to and emptied
    /// whole, and SQLite numbers a row one past the largest rowid, so the
    /// largest is the count, found without a scan.
    fn waiting(self, connection: &Connection) -> Result<i64, StoreError> {
        let sql = match self {
            DeferredTable::PartyReferences => "SELECT coalesce(max(rowid), 0) FROM deferred_party_references",
            DeferredTable::Identifiers => "SELECT coalesce(max(rowid), 0) FROM deferred_identifiers",
        };
        connection
            .prepare_cached(sql)
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(from_sqlite)
    }

    /// Applies the waiting entries, the last one committed of each key
    /// winning, and empties the table. A few statements do it in SQLite
    /// rather than a statement per entry: each sorts the entries once,
    /// inserts in key order, and no entry's text crosses into Rust.
    ///
    /// Entries that only add (a catch-up from an empty store) are inserted
    /// as they are, sorted by key: with no removal among them, the last
    /// entry of a key adds it as the first did. Otherwise a key's last
    /// entry is the row of its largest rowid, whose `present` SQLite reports
    /// beside the `max` (a bare column of a `max` aggregate); that grouping
    /// costs about half as much again as the plain sort.
    fn write(self, connection: &Connection) -> Result<(), StoreError> {
        let statements: [&str; 4] = match self {
            DeferredTable::PartyReferences => [
                "INSERT OR IGNORE INTO party_references (party_id, referrer_kind, referrer_id) \
                 SELECT party_id, referrer_kind, referrer_id FROM deferred_party_references \
                 ORDER BY party_id, referrer_kind, referrer_id",
                "INSERT OR IGNORE INTO party_references (party_id, referrer_kind, referrer_id) \
                 SELECT party_id, referrer_kind, referrer_id FROM \
                 (SELECT party_id, referrer_kind, referrer_id, present, max(rowid) FROM deferred_party_references \
                  GROUP BY party_id, referrer_kind, referrer_id) \
                 WHERE present",
                "DELETE FROM party_references WHERE (party_id, referrer_kind, referrer_id) IN \
                 (SELECT party_id, referrer_kind, referrer_id FROM \
                  (SELECT party_id, referrer_kind, referrer_id, present, max(rowid) FROM deferred_party_references \
                   GROUP BY party_id, referrer_kind, referrer_id) \
                  WHERE NOT present)",
                "DELETE FROM deferred_party_references",
            ],
            DeferredTable::Identifiers => [
                "INSERT OR IGNORE INTO identifier_index (kind, code, audience, lcc_id) \
                 SELECT kind, code, audience, lcc_id FROM deferred_identifiers \
                 ORDER BY kind, code, audience, lcc_id",
                "INSERT OR IGNORE INTO identifier_index (kind, code, audience, lcc_id) \
                 SELECT kind, code, audience, lcc_id FROM \
                 (SELECT kind, code, audience, lcc_id, present, max(rowid) FROM deferred_identifiers \
                  GROUP BY kind, code, audience, lcc_id) \
                 WHERE present",
                "DELETE FROM identifier_index WHERE (kind, code, audience, lcc_id) IN \
                 (SELECT kind, code, audience, lcc_id FROM \
                  (SELECT kind, code, audience, lcc_id, present, max(rowid) FROM deferred_identifiers \
                   GROUP BY kind, code, audience, lcc_id) \
                  WHERE NOT present)",
                "DELETE FROM deferred_identifiers",
            ],
        };
        let [insert_all, insert_last_present, delete_last_absent, empty] = statements;
        if self.has_removals(connection)? {
            connection.execute(insert_last_present, []).map_err(from_sqlite)?;
            connection.execute(delete_last_absent, []).map_err(from_sqlite)?;
        } else {
            connection.execute(insert_all, []).map_err(from_sqlite)?;
        }
        connection.execute(empty, []).map(drop).map_err(from_sqlite)
    }

    /// Whether any waiting entry removes one: a catch-up from an empty
    /// store rarely has any, and then no grouping is needed.
    fn has_removals(self, connection: &Connection) -> Result<bool, StoreError> {
        let sql = match self {
            DeferredTable::PartyReferences => {
                "SELECT EXISTS (SELECT 1 FROM deferred_party_references WHERE NOT present)"
            }
            DeferredTable::Identifiers => "SELECT EXISTS (SELECT 1 FROM deferred_identifiers WHERE NOT present)",
        };
        connection.query_row(sql, [], |row| row.get(0)).map_err(from_sqlite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::{reads, schema};
    use crate::store::{IdentifierKind, IdentifierWrite, PartyReferrer, WriteVersion};

    fn reference(party: &str, work: &str, present: bool) -> PartyReferenceWrite {
        PartyReferenceWrite {
            party_id: party.into(),
            referrer: PartyReferrer::Work(work.into()),
            present,
            version: WriteVersion(1),
        }
    }

    fn identifier(code: &str, work: &str, present: bool) -> IdentifierWrite {
        IdentifierWrite {
            kind: IdentifierKind::Iswc,
            code: code.into(),
            lcc_id: work.into(),
            present,
            version: WriteVersion(1),
        }
    }

    fn batch(references: Vec<PartyReferenceWrite>, identifiers: Vec<IdentifierWrite>, defer: bool) -> WriteBatch {
        WriteBatch { party_references: references, identifiers, defer_index_entries: defer, ..WriteBatch::default() }
    }

    fn rows(connection: &Connection, sql: &str) -> Vec<String> {
        connection
            .prepare(sql)
            .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect())
            .expect("rows")
    }

    fn references(connection: &Connection) -> Vec<String> {
        rows(connection, "SELECT party_id || ' ' || referrer_id FROM party_references ORDER BY 1")
    }

    fn identifiers(connection: &Connection) -> Vec<String> {
        rows(connection, "SELECT code || ' ' || lcc_id FROM identifier_index ORDER BY 1")
    }

    /// Both deferred tables were emptied when their entries were written.
    fn assert_nothing_waits(connection: &Connection) {
        assert_eq!(rows(connection, "SELECT 'left' FROM deferred_party_references"), Vec::<String>::new());
        assert_eq!(rows(connection, "SELECT 'left' FROM deferred_identifiers"), Vec::<String>::new());
    }

    fn referrers(connection: &Connection, party: &str) -> Vec<String> {
        reads::party_referrers(connection, &[party.to_owned()])
            .expect("referrers")
            .into_iter()
            .map(|(_, referrer)| format!("{referrer:?}"))
            .collect()
    }

    #[test]
    fn a_batch_writes_its_entries_and_the_last_write_of_a_key_wins() {
        let connection = schema::in_memory_model();
        let references = vec![
            reference("PTY-2", "LCC-1", true),
            reference("PTY-1", "LCC-1", true),
            reference("PTY-2", "LCC-1", false),
        ];
        write(&connection, &batch(references, vec![identifier("T-1", "LCC-1", true)], false)).expect("write");
        assert_eq!(self::references(&connection), ["PTY-1 LCC-1"], "PTY-2 was added, then removed, in that order");
        assert_eq!(identifiers(&connection), ["T-1 LCC-1"]);
    }

    #[test]
    fn deferred_entries_wait_counted_as_references_until_a_batch_that_does_not_defer_writes_them() {
        let connection = schema::in_memory_model();
        write(
            &connection,
            &batch(vec![reference("PTY-1", "LCC-9", true)], vec![identifier("T-9", "LCC-9", true)], false),
        )
        .expect("written at once");
        let deferring = [
            batch(
                vec![reference("PTY-2", "LCC-1", true), reference("PTY-1", "LCC-9", false)],
                vec![identifier("T-1", "LCC-1", true), identifier("T-9", "LCC-9", false)],
                true,
            ),
            batch(vec![reference("PTY-2", "LCC-1", false), reference("PTY-2", "LCC-2", true)], vec![], true),
            batch(vec![reference("PTY-2", "LCC-1", true)], vec![identifier("T-1", "LCC-1", false)], true),
        ];
        for deferring in &deferring {
            write(&connection, deferring).expect("deferred");
        }
        assert_eq!(references(&connection), ["PTY-1 LCC-9"], "nothing deferred is written yet");
        assert_eq!(identifiers(&connection), ["T-9 LCC-9"]);
        assert_eq!(referrers(&connection, "PTY-1"), Vec::<String>::new(), "a deferred removal counts");
        assert_eq!(referrers(&connection, "PTY-2"), [r#"Work("LCC-1")"#, r#"Work("LCC-2")"#], "in the order committed");

        write(&connection, &batch(vec![reference("PTY-3", "LCC-3", true)], vec![], false)).expect("written");
        assert_eq!(references(&connection), ["PTY-2 LCC-1", "PTY-2 LCC-2", "PTY-3 LCC-3"]);
        assert_eq!(identifiers(&connection), Vec::<String>::new(), "T-1 added then removed, T-9 removed");
        assert_nothing_waits(&connection);
        assert_eq!(referrers(&connection, "PTY-2"), [r#"Work("LCC-1")"#, r#"Work("LCC-2")"#]);
    }

    #[test]
    fn deferred_entries_that_only_add_write_each_key_once_beside_those_written_before() {
        let connection = schema::in_memory_model();
        write(
            &connection,
            &batch(vec![reference("PTY-1", "LCC-1", true)], vec![identifier("T-1", "LCC-1", true)], false),
        )
        .expect("written at once");
        let deferring = [
            batch(
                vec![reference("PTY-2", "LCC-2", true), reference("PTY-1", "LCC-1", true)],
                vec![identifier("T-2", "LCC-2", true), identifier("T-1", "LCC-1", true)],
                true,
            ),
            batch(vec![reference("PTY-2", "LCC-2", true)], vec![identifier("T-2", "LCC-2", true)], true),
        ];
        for deferring in &deferring {
            write(&connection, deferring).expect("deferred");
        }
        assert!(!DeferredTable::PartyReferences.has_removals(&connection).expect("removals"));
        write(&connection, &batch(vec![], vec![], false)).expect("written");
        assert_eq!(references(&connection), ["PTY-1 LCC-1", "PTY-2 LCC-2"], "each key once");
        assert_eq!(identifiers(&connection), ["T-1 LCC-1", "T-2 LCC-2"]);
        assert_nothing_waits(&connection);
    }

    #[test]
    fn deferred_entries_of_a_table_are_written_once_enough_wait() {
        let connection = schema::in_memory_model();
        let deferring =
            |party: &str| batch(vec![reference(party, "LCC-1", true)], vec![identifier(party, "LCC-1", true)], true);
        write_deferring_up_to(&connection, &deferring("A"), 3).expect("deferred");
        write_deferring_up_to(&connection, &deferring("B"), 3).expect("deferred");
        assert_eq!(references(&connection), Vec::<String>::new());
        write_deferring_up_to(&connection, &deferring("C"), 3).expect("deferred, then written");
        assert_eq!(references(&connection), ["A LCC-1", "B LCC-1", "C LCC-1"]);
        assert_eq!(identifiers(&connection), ["A LCC-1", "B LCC-1", "C LCC-1"]);
        write_deferring_up_to(&connection, &deferring("D"), 3).expect("deferred");
        assert_eq!(
            DeferredTable::PartyReferences.waiting(&connection).expect("count"),
            1,
            "counted from the emptied table"
        );
        assert_eq!(references(&connection).len(), 3);
    }
}
