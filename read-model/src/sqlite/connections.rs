//! Opening SQLite connections with the settings the store relies on.
//!
//! WAL journaling lets any number of readers, in this process or another, read
//! while one writer writes. `synchronous = NORMAL` keeps every committed
//! transaction across a process crash (the WAL is in the OS cache); only a
//! power loss may drop the newest transactions, and since checkpoints commit
//! with their documents the projector then replays exactly what was lost.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::errors::from_sqlite;
use crate::store::StoreError;

/// The size the writer cuts its log file back to when the log restarts
/// (`journal_size_limit`): the threshold's 256 MiB and room for the batches
/// committed while a RESTART checkpoint waits for the writer and readers.
pub(super) const LOG_FILE_LIMIT_BYTES: i64 = 512 * 1024 * 1024;
/// How long a connection waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a read-write connection, creating the file when missing.
pub(super) fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open(path).map_err(from_sqlite)?;
    configure(&connection, -32_768)?;
    Ok(connection)
}

/// Opens the writer of a model file: its commits never checkpoint the log,
/// a [`super::wal_writeback::LogWriteback`] does, and a log that restarts is
/// cut back to [`LOG_FILE_LIMIT_BYTES`].
pub(super) fn open_model_writer(path: &Path) -> Result<Connection, StoreError> {
    let connection = open_writer(path)?;
    connection
        .execute_batch(&format!("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = {LOG_FILE_LIMIT_BYTES};"))
        .map_err(from_sqlite)?;
    Ok(connection)
}

/// How a reader gets pages out of the OS cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageAccess {
    /// Through a memory map of the file (up to the build's limit, see
    /// .cargo/config.toml): a lookup copies no page. For the API's document
    /// reads, which touch few pages, often the same ones.
    MemoryMapped,
    /// Copied into the connection's own cache. For the projector's state
    /// reads, scattered over the whole file: mapped, every page they touch
    /// would stay in the process's resident set and break its memory bound.
    Copied,
}

/// Opens a connection for reads; it never writes.
pub(super) fn open_reader(path: &Path, access: PageAccess) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::Unavailable(format!("{} does not exist", path.display())));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let connection = Connection::open_with_flags(path, flags).map_err(from_sqlite)?;
    configure(&connection, -16_384)?;
    connection.execute_batch("PRAGMA query_only = ON;").map_err(from_sqlite)?;
    if access == PageAccess::MemoryMapped {
        connection.execute_batch("PRAGMA mmap_size = 68719476736;").map_err(from_sqlite)?;
    }
    Ok(connection)
}

fn configure(connection: &Connection, cache_kib: i64) -> Result<(), StoreError> {
    connection.busy_timeout(BUSY_TIMEOUT).map_err(from_sqlite)?;
    connection.set_prepared_statement_cache_capacity(64);
    connection
        .execute_batch(&format!(
            "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = {cache_kib}; \
             PRAGMA temp_store = MEMORY;"
        ))
        .map_err(from_sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection's value of an integer pragma.
    fn pragma(connection: &Connection, name: &str) -> i64 {
        connection.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0)).expect(name)
    }

    #[test]
    fn only_memory_mapped_readers_map_the_file() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("model.sqlite");
        open_writer(&path).expect("writer").execute_batch("CREATE TABLE t (v INTEGER);").expect("table");
        let mapped = open_reader(&path, PageAccess::MemoryMapped).expect("mapped reader");
        let copied = open_reader(&path, PageAccess::Copied).expect("copying reader");
        assert!(pragma(&mapped, "mmap_size") > 0, "the document reader maps the file");
        assert_eq!(pragma(&copied, "mmap_size"), 0, "the state reader copies pages");
    }

    #[test]
    fn a_model_writer_bounds_its_log_file_and_leaves_the_write_back_to_its_thread() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let writer = open_model_writer(&directory.path().join("model.sqlite")).expect("writer");
        assert_eq!(pragma(&writer, "journal_size_limit"), LOG_FILE_LIMIT_BYTES);
        assert_eq!(pragma(&writer, "wal_autocheckpoint"), 0);
    }
}
