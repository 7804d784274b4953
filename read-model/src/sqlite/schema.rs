//! The SQLite DDL (from `schemas/sqlite/`) and its idempotent application.
//!
//! `PRAGMA user_version` records the schema revision of each file, so that a
//! binary refuses a file written by a newer one instead of misreading it.

use rusqlite::Connection;

use super::errors::from_sqlite;
use crate::store::StoreError;

/// The catalog DDL, exactly as committed.
pub const CATALOG_DDL: &str = include_str!("../../../schemas/sqlite/catalog.sql");
/// The model-version DDL, exactly as committed.
pub const MODEL_DDL: &str = include_str!("../../../schemas/sqlite/model.sql");

/// The schema revision this binary writes and reads.
const SCHEMA_REVISION: i64 = 1;

pub(super) fn migrate_catalog(connection: &Connection) -> Result<(), StoreError> {
    migrate(connection, CATALOG_DDL)
}

pub(super) fn migrate_model(connection: &Connection) -> Result<(), StoreError> {
    migrate(connection, MODEL_DDL)
}

fn migrate(connection: &Connection, ddl: &str) -> Result<(), StoreError> {
    let revision: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(from_sqlite)?;
    if revision > SCHEMA_REVISION {
        return Err(StoreError::Corrupt(format!(
            "schema revision {revision} is newer than this program's {SCHEMA_REVISION}"
        )));
    }
    connection
        .execute_batch(&format!("BEGIN IMMEDIATE; {ddl}; PRAGMA user_version = {SCHEMA_REVISION}; COMMIT;"))
        .map_err(from_sqlite)
}
