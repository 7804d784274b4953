//! Writes a model file's write-ahead log back into the database file on a
//! thread of its own: what SQLite calls a WAL checkpoint, named otherwise
//! here because a checkpoint in this code base is a source's offset.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its
//! threshold: the writer copies pages into the database and waits for two
//! fsyncs before the next batch can be written. Here the writer connection
//! has automatic checkpoints off, and after each commit it wakes this thread,
//! which runs a PASSIVE checkpoint on a connection of its own (same
//! `synchronous = NORMAL` durability: the log is synced before pages are
//! copied, the database after), so the writer never waits for those fsyncs.
//!
//! A PASSIVE checkpoint never waits, but it cannot restart the log while the
//! writer keeps appending to it, so the log would grow without bound. When
//! it exceeds [`RESTART_AFTER_FRAMES`], the thread runs a RESTART
//! checkpoint instead, which waits for the writer's current transaction and
//! for readers to leave the log (a reader keeps its snapshot for at most
//! 10 ms); the writer's next commit then overwrites the log file from its
//! start.
//!
//! A writer that begins its next transaction as soon as one commits leaves
//! SQLite's busy handler, which polls, almost no moment to get in, and the
//! log would grow by gigabytes before a restart won. So the writer calls
//! [`LogWriteback::wait_while_restarting`] before each transaction, and a
//! restart holds it back from the moment it starts waiting for the current
//! transaction until it is done. Once a RESTART has the write lock, SQLite
//! blocks new writers until it is done anyway; the checkpoint connection's
//! busy timeout bounds the whole wait.
//!
//! The log file is kept, not emptied: appending to an emptied log makes the
//! file system allocate blocks and zero the parts of them that a frame
//! leaves unwritten, while overwriting pages still in the OS cache costs
//! neither. For the same reason the log restarts early, at 256 MiB: a log
//! that outgrows its file whenever this thread falls behind the writer has
//! the writer zeroing fresh blocks instead of projecting.
//! [`super::connections::LOG_FILE_LIMIT_BYTES`] bounds what the file keeps.
//!
//! This module must not write documents or state: it only moves pages from
//! the log into the database file.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::connections::open_writer;
use super::errors::from_sqlite;
use crate::store::StoreError;

/// Log size, in pages, above which the log restarts (256 MiB of 8 KiB pages).
pub(super) const RESTART_AFTER_FRAMES: i64 = 32_768;

/// The checkpointing thread of one writer connection; stopped and joined on drop.
#[derive(Debug)]
pub(super) struct LogWriteback {
    wake: Option<SyncSender<()>>,
    /// Held by the thread while a RESTART checkpoint runs.
    restarting: Arc<Mutex<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriteback {
    /// Starts checkpointing the file at `path` through a connection of its
    /// own, restarting the log once it holds more than `restart_after_frames` pages.
    pub(super) fn start(path: &Path, restart_after_frames: i64) -> Result<LogWriteback, StoreError> {
        let connection = open_writer(path)?;
        // Open the log now, so the thread never creates files after the model is dropped.
        connection.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())).map_err(from_sqlite)?;
        // One pending wake-up is enough: a checkpoint moves every page logged before it starts.
        let (wake, woken) = std::sync::mpsc::sync_channel(1);
        let restarting = Arc::new(Mutex::new(()));
        let held_while_restarting = Arc::clone(&restarting);
        let thread = std::thread::Builder::new()
            .name("sqlite-wal-writeback".into())
            .spawn(move || write_back_when_woken(&connection, &woken, &held_while_restarting, restart_after_frames))
            .map_err(|error| StoreError::Unavailable(format!("cannot start the checkpoint thread: {error}")))?;
        Ok(LogWriteback { wake: Some(wake), restarting, thread: Some(thread) })
    }

    /// Returns once no restart of the log is under way. The writer calls it
    /// before each transaction, outside any transaction.
    pub(super) fn wait_while_restarting(&self) {
        drop(self.restarting.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Asks for a checkpoint of what has been committed so far.
    pub(super) fn wake(&self) {
        if let Some(wake) = &self.wake {
            // Full: a wake-up is pending already. Disconnected: the thread has ended.
            let _ = wake.try_send(());
        }
    }
}

impl Drop for LogWriteback {
    fn drop(&mut self) {
        // Closing the channel ends the thread after its current checkpoint.
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_back_when_woken(
    connection: &Connection,
    woken: &Receiver<()>,
    restarting: &Mutex<()>,
    restart_after_frames: i64,
) {
    let mut logged_at_last_restart = None;
    while woken.recv().is_ok() {
        // A failed checkpoint leaves the pages in the log, where readers still
        // find them; the next wake-up tries again.
        let Ok(logged) = checkpoint(connection, "PASSIVE") else { continue };
        if restart_due(logged, restart_after_frames, logged_at_last_restart) {
            let _writer_held_back = restarting.lock().unwrap_or_else(PoisonError::into_inner);
            logged_at_last_restart = checkpoint(connection, "RESTART").ok();
        }
    }
}

/// Whether a log of `logged` pages should restart. A log restarts at the
/// writer's next commit, not at the checkpoint, so until then it still
/// counts the pages it held at the last restart; restarting it again would
/// hold the writer back for nothing. A log that has grown since (a reader
/// kept it from restarting) is restarted again.
fn restart_due(logged: i64, restart_after_frames: i64, logged_at_last_restart: Option<i64>) -> bool {
    logged > restart_after_frames && logged_at_last_restart != Some(logged)
}

/// Runs a checkpoint; returns the number of pages in the log.
fn checkpoint(connection: &Connection, mode: &str) -> rusqlite::Result<i64> {
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| row.get(1))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::sqlite::connections::open_model_writer;

    /// A fresh model file with one table, and its writer.
    struct Model {
        directory: tempfile::TempDir,
        path: PathBuf,
        writer: Connection,
    }

    impl Model {
        fn new() -> Model {
            let directory = tempfile::tempdir().expect("temporary directory");
            let path = directory.path().join("model.sqlite");
            let writer = open_model_writer(&path).expect("writer");
            writer.execute_batch("CREATE TABLE t (v BLOB);").expect("table");
            Model { directory, path, writer }
        }

        fn log_writeback(&self, restart_after_frames: i64) -> LogWriteback {
            LogWriteback::start(&self.path, restart_after_frames).expect("start")
        }

        fn database_size(&self) -> u64 {
            std::fs::metadata(&self.path).expect("database file").len()
        }

        fn log_path(&self) -> PathBuf {
            self.directory.path().join("model.sqlite-wal")
        }

        fn log_size(&self) -> u64 {
            std::fs::metadata(self.log_path()).expect("log").len()
        }

        /// The log header's checkpoint sequence number, which counts the
        /// times the log restarted (SQLite's file format, bytes 12 to 15).
        fn log_restarts(&self) -> u32 {
            let mut header = [0_u8; 16];
            let mut log = std::fs::File::open(self.log_path()).expect("log");
            std::io::Read::read_exact(&mut log, &mut header).expect("log header");
            u32::from_be_bytes([header[12], header[13], header[14], header[15]])
        }

        /// Pages in the log, and how many of them are in the database.
        fn log_frames(&self) -> (i64, i64) {
            self.writer
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| Ok((row.get(1)?, row.get(2)?)))
                .expect("checkpoint")
        }
    }

    #[test]
    fn a_log_restarts_once_past_its_limit_and_not_again_before_the_writer_commits() {
        assert!(!restart_due(500, 500, None), "at the limit");
        assert!(restart_due(501, 500, None), "past the limit");
        assert!(!restart_due(501, 500, Some(501)), "unchanged since its restart");
        assert!(restart_due(600, 500, Some(501)), "grown since its restart");
        assert!(!restart_due(20, 500, Some(501)), "restarted by the writer");
    }

    #[test]
    fn commits_are_moved_into_the_database_by_the_checkpoint_thread() {
        let model = Model::new();
        let writeback = model.log_writeback(RESTART_AFTER_FRAMES);
        for _ in 0..50 {
            model.writer.execute("INSERT INTO t (v) VALUES (zeroblob(20000))", []).expect("insert");
        }
        let database_before = model.database_size();
        writeback.wake();
        drop(writeback);
        let database_after = model.database_size();
        assert!(database_after > database_before + 50 * 20_000, "{database_before} -> {database_after}");
        let (logged, moved) = model.log_frames();
        assert_eq!(logged, moved, "every logged page is in the database");
    }

    #[test]
    fn the_writer_does_not_checkpoint_on_commit() {
        let model = Model::new();
        let database_before = model.database_size();
        for _ in 0..2_000 {
            model.writer.execute("INSERT INTO t (v) VALUES (zeroblob(8000))", []).expect("insert");
        }
        assert_eq!(model.database_size(), database_before, "pages stay in the log");
    }

    #[test]
    fn a_long_log_restarts_from_the_start_of_its_file() {
        let model = Model::new();
        let limit = 500;
        let writeback = model.log_writeback(limit);
        // Past the limit: one row per page.
        model
            .writer
            .execute_batch(&format!(
                "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {}) \
                 INSERT INTO t (v) SELECT zeroblob(7000) FROM n;",
                limit + 100
            ))
            .expect("insert");
        let grown = model.log_size();
        assert!(grown > (limit as u64) * 8192, "the log has grown");
        writeback.wake();
        drop(writeback);
        model.writer.execute("INSERT INTO t (v) VALUES (zeroblob(7000))", []).expect("insert after the restart");
        let (logged, moved) = model.log_frames();
        assert!(logged < 10, "the next commit was logged from the start: {logged} pages in the log");
        assert_eq!(logged, moved);
        assert_eq!(model.log_size(), grown, "the file is kept to be overwritten");
        assert_eq!(
            model.writer.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0)).expect("count"),
            limit + 101
        );
    }

    #[test]
    fn a_writer_that_never_pauses_still_lets_the_log_restart() {
        let model = Model::new();
        // A transaction writes 400 pages, so the log passes the limit every two.
        let writeback = model.log_writeback(500);
        let first = model.log_restarts();
        for _ in 0..60 {
            // What the store's writer does around each batch.
            writeback.wait_while_restarting();
            model
                .writer
                .execute_batch(
                    "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) \
                     INSERT INTO t (v) SELECT zeroblob(7000) FROM n;",
                )
                .expect("insert");
            writeback.wake();
        }
        drop(writeback);
        // Left to SQLite's busy handler, a restart rarely finds a moment between two transactions.
        let restarts = model.log_restarts() - first;
        assert!(restarts >= 3, "the log restarted {restarts} times in 60 transactions");
    }

    #[test]
    fn a_short_log_is_kept_for_the_writer_to_reuse() {
        let model = Model::new();
        let writeback = model.log_writeback(RESTART_AFTER_FRAMES);
        model.writer.execute("INSERT INTO t (v) VALUES (zeroblob(70000))", []).expect("insert");
        writeback.wake();
        drop(writeback);
        assert!(model.log_size() > 0);
    }
}
