//! The SQLite DDL (from `schemas/sqlite/`) and its idempotent application.
//!
//! `PRAGMA user_version` records the schema revision of each file, so that a
//! binary refuses a file written by a newer one instead of misreading it,
//! and upgrades a file written by an older one in the transaction that
//! applies the DDL.

use rusqlite::{Connection, TransactionBehavior};

use super::errors::from_sqlite;
use crate::documents::DocumentKind;
use crate::store::StoreError;

/// The catalog DDL, exactly as committed.
pub const CATALOG_DDL: &str = include_str!("../../../schemas/sqlite/catalog.sql");
/// The model-version DDL, exactly as committed.
pub const MODEL_DDL: &str = include_str!("../../../schemas/sqlite/model.sql");
/// Moves a revision-1 model file's documents into the rows of revision 2.
const MODEL_REVISION_2_UPGRADE: &str = include_str!("../../../schemas/sqlite/model-revision-2.sql");
/// Records every published work in the change feed that revision 3 adds.
const MODEL_REVISION_3_UPGRADE: &str = include_str!("../../../schemas/sqlite/model-revision-3.sql");
/// Moves provenance entries, bulk rows and states into the WITHOUT ROWID
/// tables of revision 4, once [`REVISION_4_TABLES`] exist under their new names.
const MODEL_REVISION_4_COPY: &str = include_str!("../../../schemas/sqlite/model-revision-4.sql");
/// The tables revision 4 gives a new shape.
const REVISION_4_TABLES: [&str; 3] = ["provenance_entries", "bulk_rows", "aggregates"];
/// Moves a work's documents and the license statuses into the WITHOUT ROWID
/// tables of revision 6, once [`REVISION_6_TABLES`] exist under their new names.
const MODEL_REVISION_6_COPY: &str = include_str!("../../../schemas/sqlite/model-revision-6.sql");
/// The tables revision 6 gives a new shape.
const REVISION_6_TABLES: [&str; 2] = ["work_documents", "license_statuses"];

/// The schema revision this binary writes and reads. Revision 2 keeps a
/// work's four documents in one row (`work_documents`); revision 3 adds the
/// change feed; revision 4 keeps the tables of small rows WITHOUT ROWID;
/// revision 5 adds the notifications (created empty by the DDL: the
/// notifications of a file's past are not recorded); revision 6 keeps the
/// documents WITHOUT ROWID too; revision 7 adds the deferred index entries
/// (created empty by the DDL), which a program of revision 6 would not read;
/// revision 8 keeps a batch's provenance entries of a work in one row (see
/// `provenance_groups`), which a program of revision 7 would serve as one
/// entry, while the rows of one entry that files of revision 7 hold are
/// read as they are; revision 9 may hold LZ4 blocks (`stored_bodies`),
/// which a program of revision 8 would serve as they are, while the zstd
/// frames that files of revision 8 hold are read as they are.
const SCHEMA_REVISION: i64 = 9;

pub(super) fn migrate_catalog(connection: &mut Connection) -> Result<(), StoreError> {
    migrate(connection, CATALOG_DDL, &[])
}

pub(super) fn migrate_model(connection: &mut Connection) -> Result<(), StoreError> {
    let revision_4 = reshape_tables(4, &REVISION_4_TABLES, MODEL_REVISION_4_COPY)?;
    let revision_6 = reshape_tables(6, &REVISION_6_TABLES, MODEL_REVISION_6_COPY)?;
    migrate(
        connection,
        MODEL_DDL,
        &[
            (1, MODEL_REVISION_2_UPGRADE),
            (2, MODEL_REVISION_3_UPGRADE),
            (3, revision_4.as_str()),
            (5, revision_6.as_str()),
        ],
    )
}

/// The upgrade to `revision` that gives `tables` a new shape: each created
/// as model.sql defines it, under the name `<table>_revision_<revision>`,
/// then `copy`, which fills them and puts them in place of the old ones.
fn reshape_tables(revision: i64, tables: &[&str], copy: &str) -> Result<String, StoreError> {
    let mut upgrade = String::new();
    for table in tables {
        let create = format!("CREATE TABLE IF NOT EXISTS {table} (");
        let start =
            MODEL_DDL.find(&create).ok_or_else(|| StoreError::Corrupt(format!("model.sql does not define {table}")))?;
        let length = MODEL_DDL[start..].find(';').map_or(MODEL_DDL.len() - start, |end| end + 1);
        upgrade.push_str(&MODEL_DDL[start..start + length].replacen(
            &create,
            &format!("CREATE TABLE {table}_revision_{revision} ("),
            1,
        ));
        upgrade.push('\n');
    }
    upgrade.push_str(copy);
    Ok(upgrade)
}

/// Applies `ddl`, then each upgrade whose revision is the file's, in one
/// transaction. The revision is read inside it, so two processes that
/// migrate one file at once cannot both upgrade it.
fn migrate(connection: &mut Connection, ddl: &str, upgrades: &[(i64, &str)]) -> Result<(), StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(from_sqlite)?;
    let revision: i64 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(from_sqlite)?;
    if revision > SCHEMA_REVISION {
        return Err(StoreError::Corrupt(format!(
            "schema revision {revision} is newer than this program's {SCHEMA_REVISION}"
        )));
    }
    transaction.execute_batch(ddl).map_err(from_sqlite)?;
    for (from_revision, upgrade) in upgrades {
        // A fresh file (revision 0) has just been created at the newest revision.
        if revision != 0 && revision <= *from_revision {
            transaction.execute_batch(upgrade).map_err(from_sqlite)?;
        }
    }
    transaction.execute_batch(&format!("PRAGMA user_version = {SCHEMA_REVISION}")).map_err(from_sqlite)?;
    transaction.commit().map_err(from_sqlite)
}

/// Turns a read that failed on a file of another schema revision (a query
/// API upgraded before `projector migrate` has run, or not yet upgraded
/// after it has) into `Unavailable`, which the API answers with 503 until
/// the two agree, and says why. Checked only once a read has failed, so
/// reads pay nothing for it.
pub(super) fn explain_read_failure(connection: &Connection, error: StoreError) -> StoreError {
    let StoreError::Corrupt(reason) = &error else { return error };
    match connection.query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0)) {
        Ok(revision) if revision != SCHEMA_REVISION => StoreError::Unavailable(format!(
            "the file is at schema revision {revision} and this program reads revision {SCHEMA_REVISION} \
             (run `projector migrate` with the newer program): {reason}"
        )),
        _ => error,
    }
}

/// The column of `work_documents` holding each of a work's document kinds,
/// in column order. License statuses, keyed by license id, have a table of
/// their own.
pub(super) const WORK_DOCUMENT_COLUMNS: [(DocumentKind, &str); 4] = [
    (DocumentKind::RightsProfile, "rights_profile"),
    (DocumentKind::Verification, "verification"),
    (DocumentKind::Metadata, "metadata"),
    (DocumentKind::Evidence, "evidence"),
];

/// The position of `kind` among [`WORK_DOCUMENT_COLUMNS`], or `None` for a
/// kind kept in a table of its own.
pub(super) fn work_document_column(kind: DocumentKind) -> Option<usize> {
    WORK_DOCUMENT_COLUMNS.iter().position(|(work_kind, _)| *work_kind == kind)
}

/// An empty model file in memory, at this program's revision, for tests.
#[cfg(test)]
pub(super) fn in_memory_model() -> Connection {
    let mut connection = Connection::open_in_memory().expect("open");
    migrate_model(&mut connection).expect("schema");
    connection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::reads;

    fn revision(connection: &Connection) -> i64 {
        connection.query_row("PRAGMA user_version", [], |row| row.get(0)).expect("revision")
    }

    /// A model file as revision 1 wrote it: one table per document kind.
    fn revision_1_model() -> Connection {
        let connection = Connection::open_in_memory().expect("open");
        connection
            .execute_batch(
                "CREATE TABLE rights_profiles (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 CREATE TABLE verification_inputs (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 CREATE TABLE dublin_core_records (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 CREATE TABLE evidence_inputs (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 CREATE TABLE license_statuses (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 INSERT INTO rights_profiles VALUES ('LCC-1', CAST('profile 1' AS BLOB));
                 INSERT INTO evidence_inputs VALUES ('LCC-1', CAST('evidence 1' AS BLOB));
                 INSERT INTO dublin_core_records VALUES ('LCC-2', CAST('metadata 2' AS BLOB));
                 INSERT INTO verification_inputs VALUES ('LCC-3', CAST('verification 3' AS BLOB));
                 INSERT INTO license_statuses VALUES ('LIC-1', CAST('license 1' AS BLOB));
                 PRAGMA user_version = 1;",
            )
            .expect("revision 1");
        connection
    }

    fn read(connection: &Connection, kind: DocumentKind, key: &str) -> Option<String> {
        reads::document(connection, kind, key).expect("read").map(|body| String::from_utf8(body).expect("text"))
    }

    /// Each document of `expected` reads as its body (`None`: there is none).
    fn assert_documents(connection: &Connection, expected: &[(DocumentKind, &str, Option<&str>)]) {
        for (kind, key, body) in expected {
            assert_eq!(read(connection, *kind, key).as_deref(), *body, "{kind:?} of {key}");
        }
    }

    /// Migrates a file of an older revision, then again, which must do nothing.
    fn upgrade(connection: &mut Connection) {
        migrate_model(connection).expect("upgrade");
        migrate_model(connection).expect("a second migration does nothing");
        assert_eq!(revision(connection), SCHEMA_REVISION);
    }

    /// The first column of every row `sql` selects.
    fn strings(connection: &Connection, sql: &str) -> Vec<String> {
        let mut statement = connection.prepare(sql).expect("prepare");
        statement.query_map([], |row| row.get(0)).expect("query").collect::<Result<_, _>>().expect("rows")
    }

    #[test]
    fn a_revision_1_model_keeps_every_document_when_upgraded() {
        let mut connection = revision_1_model();
        upgrade(&mut connection);
        let expected = [
            (DocumentKind::RightsProfile, "LCC-1", Some("profile 1")),
            (DocumentKind::Evidence, "LCC-1", Some("evidence 1")),
            (DocumentKind::Verification, "LCC-1", None),
            (DocumentKind::Metadata, "LCC-2", Some("metadata 2")),
            (DocumentKind::RightsProfile, "LCC-2", None),
            (DocumentKind::Verification, "LCC-3", Some("verification 3")),
            (DocumentKind::LicenseStatus, "LIC-1", Some("license 1")),
        ];
        assert_documents(&connection, &expected);
        let rows: i64 =
            connection.query_row("SELECT count(*) FROM work_documents", [], |row| row.get(0)).expect("count");
        assert_eq!(rows, 3, "one row per work");
        let old_tables: i64 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name IN \
                 ('rights_profiles', 'verification_inputs', 'dublin_core_records', 'evidence_inputs')",
                [],
                |row| row.get(0),
            )
            .expect("schema");
        assert_eq!(old_tables, 0, "the tables of revision 1 are dropped");
    }

    #[test]
    fn a_revision_2_model_gets_a_change_for_every_published_work_when_upgraded() {
        let mut connection = in_memory_model();
        connection
            .execute_batch(
                "INSERT INTO bulk_rows VALUES ('production', 7, 'LCC-2', CAST('row 2' AS BLOB));
                 INSERT INTO bulk_rows VALUES ('production', 3, 'LCC-1', CAST('row 1' AS BLOB));
                 INSERT INTO bulk_rows VALUES ('sandbox', 1, 'SANDBOX-LCC-1', CAST('sandbox row' AS BLOB));
                 DROP TABLE change_feed; DROP TABLE change_feed_state;
                 PRAGMA user_version = 2;",
            )
            .expect("revision 2");
        upgrade(&mut connection);
        let mut statement = connection
            .prepare("SELECT audience, lcc_id, CAST(body AS TEXT) FROM change_feed ORDER BY sequence")
            .expect("feed");
        let changes: Vec<(String, String, String)> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .expect("read")
            .collect::<Result<_, _>>()
            .expect("rows");
        let expected = [
            ("production", "LCC-1", "row 1"),
            ("production", "LCC-2", "row 2"),
            ("sandbox", "SANDBOX-LCC-1", "sandbox row"),
        ];
        assert_eq!(changes, expected.map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned())), "export order");
        let horizon: i64 =
            connection.query_row("SELECT horizon FROM change_feed_state", [], |row| row.get(0)).expect("state");
        let first: i64 =
            connection.query_row("SELECT min(sequence) FROM change_feed", [], |row| row.get(0)).expect("min");
        assert_eq!(first, horizon + 1, "the changes follow the horizon");
    }

    #[test]
    fn a_revision_3_model_keeps_its_rows_in_tables_without_rowid_when_upgraded() {
        let mut connection = Connection::open_in_memory().expect("open");
        connection
            .execute_batch(
                "CREATE TABLE provenance_entries (lcc_id TEXT NOT NULL, recorded_at INTEGER NOT NULL, \
                     topic TEXT NOT NULL, aggregate_version INTEGER NOT NULL, body BLOB NOT NULL, \
                     UNIQUE (lcc_id, recorded_at, topic, aggregate_version));
                 CREATE TABLE bulk_rows (audience TEXT NOT NULL, bucket INTEGER NOT NULL, lcc_id TEXT NOT NULL, \
                     body BLOB NOT NULL, UNIQUE (audience, bucket, lcc_id));
                 CREATE TABLE aggregates (topic TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, \
                     state BLOB NOT NULL, UNIQUE (topic, id));
                 INSERT INTO provenance_entries VALUES ('LCC-2', 5, 'works', 1, CAST('entry 2' AS BLOB));
                 INSERT INTO provenance_entries VALUES ('LCC-1', 9, 'rights', 3, CAST('entry 1' AS BLOB));
                 INSERT INTO bulk_rows VALUES ('production', 3, 'LCC-1', CAST('row 1' AS BLOB));
                 INSERT INTO aggregates VALUES ('works', 'LCC-1', 4, CAST('state 1' AS BLOB));
                 INSERT INTO aggregates VALUES ('parties', 'PTY-1', 2, CAST('state 2' AS BLOB));
                 PRAGMA user_version = 3;",
            )
            .expect("revision 3");
        upgrade(&mut connection);
        let rows = |sql: &str| strings(&connection, sql);
        assert_eq!(
            rows(
                "SELECT lcc_id || ':' || recorded_at || ':' || topic || ':' || aggregate_version || ':' || \
                  CAST(body AS TEXT) FROM provenance_entries"
            ),
            ["LCC-1:9:rights:3:entry 1", "LCC-2:5:works:1:entry 2"]
        );
        assert_eq!(
            rows("SELECT audience || ':' || bucket || ':' || lcc_id || ':' || CAST(body AS TEXT) FROM bulk_rows"),
            ["production:3:LCC-1:row 1"]
        );
        assert_eq!(
            rows("SELECT topic || ':' || id || ':' || version || ':' || CAST(state AS TEXT) FROM aggregates"),
            ["parties:PTY-1:2:state 2", "works:LCC-1:4:state 1"]
        );
        let with_rowid = rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name IN ('provenance_entries', 'bulk_rows', 'aggregates') AND sql NOT LIKE '%WITHOUT ROWID'",
        );
        assert!(with_rowid.is_empty(), "still rowid tables: {with_rowid:?}");
        let key_indexes =
            rows("SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'sqlite_autoindex_%'");
        assert!(
            key_indexes.iter().all(|name| ["provenance_entries", "bulk_rows", "aggregates"]
                .iter()
                .all(|table| !name.contains(&format!("_{table}_")))),
            "a key index is left: {key_indexes:?}"
        );
        connection
            .execute("INSERT INTO aggregates VALUES ('works', 'LCC-1', 5, CAST('again' AS BLOB))", [])
            .expect_err("the key stays unique");
    }

    #[test]
    fn a_revision_5_model_keeps_its_documents_in_tables_without_rowid_when_upgraded() {
        let mut connection = in_memory_model();
        connection
            .execute_batch(
                "DROP TABLE work_documents; DROP TABLE license_statuses;
                 CREATE TABLE work_documents (id TEXT PRIMARY KEY, rights_profile BLOB, verification BLOB, \
                     metadata BLOB, evidence BLOB);
                 CREATE TABLE license_statuses (id TEXT PRIMARY KEY, body BLOB NOT NULL);
                 INSERT INTO work_documents VALUES ('LCC-2', NULL, NULL, CAST('metadata 2' AS BLOB), NULL);
                 INSERT INTO work_documents VALUES ('LCC-1', CAST('profile 1' AS BLOB), NULL, NULL, \
                     CAST('evidence 1' AS BLOB));
                 INSERT INTO license_statuses VALUES ('LIC-1', CAST('license 1' AS BLOB));
                 PRAGMA user_version = 5;",
            )
            .expect("revision 5");
        upgrade(&mut connection);
        let expected = [
            (DocumentKind::RightsProfile, "LCC-1", Some("profile 1")),
            (DocumentKind::Evidence, "LCC-1", Some("evidence 1")),
            (DocumentKind::Metadata, "LCC-1", None),
            (DocumentKind::Metadata, "LCC-2", Some("metadata 2")),
            (DocumentKind::LicenseStatus, "LIC-1", Some("license 1")),
        ];
        assert_documents(&connection, &expected);
        let names = |sql: &str| strings(&connection, sql);
        let with_rowid = names(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name IN ('work_documents', 'license_statuses') AND sql NOT LIKE '%WITHOUT ROWID'",
        );
        assert!(with_rowid.is_empty(), "still rowid tables: {with_rowid:?}");
        let key_indexes = names(
            "SELECT name FROM sqlite_schema WHERE type = 'index' \
             AND tbl_name IN ('work_documents', 'license_statuses')",
        );
        assert!(key_indexes.is_empty(), "a key index is left: {key_indexes:?}");
        connection
            .execute("INSERT INTO work_documents (id, metadata) VALUES ('LCC-2', CAST('again' AS BLOB))", [])
            .expect_err("the key stays unique");
    }

    #[test]
    fn a_revision_7_model_keeps_its_provenance_of_one_entry_a_row_when_upgraded() {
        let mut connection = in_memory_model();
        connection
            .execute_batch(
                "INSERT INTO provenance_entries VALUES ('LCC-1', 20, 'rights', 1, CAST('{\"entry\":2}' AS BLOB));
                 INSERT INTO provenance_entries VALUES ('LCC-1', 10, 'works', 1, CAST('{\"entry\":1}' AS BLOB));
                 PRAGMA user_version = 7;",
            )
            .expect("revision 7");
        upgrade(&mut connection);
        let entries = reads::provenance(&connection, "LCC-1").expect("read");
        assert_eq!(entries, [br#"{"entry":1}"#.to_vec(), br#"{"entry":2}"#.to_vec()]);
    }

    #[test]
    fn a_read_that_fails_on_a_file_of_another_revision_says_so_and_is_transient() {
        let connection = revision_1_model();
        let failed = reads::document(&connection, DocumentKind::RightsProfile, "LCC-1").expect_err("no such table");
        match explain_read_failure(&connection, failed) {
            StoreError::Unavailable(reason) => assert!(reason.contains("schema revision 1"), "{reason}"),
            other => panic!("expected Unavailable, got {other:?}"),
        }

        let current = in_memory_model();
        let failure = StoreError::Corrupt("a body that is not JSON".into());
        let kept = explain_read_failure(&current, failure);
        assert!(matches!(kept, StoreError::Corrupt(_)), "a file of this revision keeps its error: {kept:?}");
    }

    #[test]
    fn a_fresh_file_gets_the_newest_revision_and_a_newer_one_is_refused() {
        let mut fresh = Connection::open_in_memory().expect("open");
        migrate_model(&mut fresh).expect("create");
        assert_eq!(revision(&fresh), SCHEMA_REVISION);

        fresh.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_REVISION + 1)).expect("newer");
        let refused = migrate_model(&mut fresh);
        assert!(matches!(refused, Err(StoreError::Corrupt(_))), "{refused:?}");
        assert_eq!(revision(&fresh), SCHEMA_REVISION + 1, "a refused file is left as it was");
    }
}
