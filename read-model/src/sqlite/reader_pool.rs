//! A pool of reader connections to one database file that keep their read
//! snapshot for a few milliseconds.
//!
//! Every SQLite read transaction takes and releases file locks and checks the
//! file (several system calls): for a point lookup that is more work than the
//! lookup. So a pooled reader keeps its transaction open and serves further
//! reads from the same snapshot, for at most [`SNAPSHOT_REUSE`], and never
//! across a write made through this store in this process (each write bumps
//! the pool's write generation, which a reader checks before it reads). A
//! write by another process, such as the projector's, is therefore visible to
//! readers here within [`SNAPSHOT_REUSE`]; a write by this process at once.
//!
//! An idle reader must not hold its snapshot for long: while it does, SQLite
//! cannot checkpoint the write-ahead log past it. A sweeper thread ends the
//! snapshot of a reader once it has been idle for [`SNAPSHOT_REUSE`] (a
//! reader in use renews its own, so none is older than twice that); it
//! runs only while some idle reader holds one and exits with the pool. A
//! dropped pool closes its idle connections at once.
//!
//! Every read takes the idle list's lock, so nothing slow happens under it:
//! the sweeper takes the readers it sweeps out of the list and ends their
//! snapshots with the lock released. A thread that ran SQLite under that
//! lock and lost its core to another process there would stall every read
//! until it got one back. Under load the sweeper finds nothing to end, as
//! no reader stays idle for long.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::connections::{PageAccess, open_reader};
use super::errors::from_sqlite;
use super::schema;
use crate::clock::Clock;
use crate::store::StoreError;

/// How long a reader serves reads from one snapshot.
pub(super) const SNAPSHOT_REUSE: Duration = Duration::from_millis(10);

/// Idle connections kept per file; more may be open while busy.
const MAX_IDLE_READERS: usize = 16;

/// Reader connections to one database file, reused across calls.
#[derive(Debug)]
pub(super) struct ReaderPool {
    path: PathBuf,
    access: PageAccess,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    idle: Mutex<Vec<Reader>>,
    /// Bumped after every write this process makes to the file.
    write_generation: AtomicU64,
    /// Wakes the sweeper when it sleeps because no idle reader held a snapshot.
    snapshot_parked: Condvar,
    sweeper_running: AtomicBool,
    /// Set (under the `idle` lock) while the sweeper sleeps with nothing to sweep.
    sweeper_sleeping: AtomicBool,
    /// The time snapshots age by.
    clock: Clock,
}

#[derive(Debug)]
struct Reader {
    connection: Connection,
    snapshot: Option<Snapshot>,
    /// When its last read began.
    last_used: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    opened: Instant,
    write_generation: u64,
}

impl Reader {
    /// Ends the read transaction, if one is open.
    fn end_snapshot(&mut self) -> Result<(), StoreError> {
        if self.snapshot.take().is_some() && !self.connection.is_autocommit() {
            self.connection.execute_batch("COMMIT").map_err(from_sqlite)?;
        }
        Ok(())
    }

    /// Whether the snapshot may serve a read at `now`.
    fn snapshot_is_fresh(&self, write_generation: u64, now: Instant) -> bool {
        self.snapshot.is_some_and(|snapshot| {
            snapshot.write_generation == write_generation
                && now.saturating_duration_since(snapshot.opened) < SNAPSHOT_REUSE
        })
    }

    /// Whether the sweeper should end its snapshot at `now`.
    fn holds_idle_snapshot(&self, now: Instant) -> bool {
        self.snapshot.is_some() && now.saturating_duration_since(self.last_used) >= SNAPSHOT_REUSE
    }
}

impl ReaderPool {
    pub(super) fn new(path: PathBuf, access: PageAccess, clock: Clock) -> ReaderPool {
        let shared = Shared {
            idle: Mutex::new(Vec::new()),
            write_generation: AtomicU64::new(0),
            snapshot_parked: Condvar::new(),
            sweeper_running: AtomicBool::new(false),
            sweeper_sleeping: AtomicBool::new(false),
            clock,
        };
        ReaderPool { path, access, shared: Arc::new(shared) }
    }

    /// Tells the readers that this process committed a write to the file:
    /// no read that starts after this returns is served from an older snapshot.
    pub(super) fn note_write(&self) {
        self.shared.write_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The number of writes this process has noted so far.
    pub(super) fn write_generation(&self) -> u64 {
        self.shared.write_generation.load(Ordering::Acquire)
    }

    /// Runs `read` on an idle reader (opening one when none is idle), in a
    /// snapshot no older than [`SNAPSHOT_REUSE`] and no older than this
    /// process's last write.
    pub(super) fn with<T>(&self, read: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        // Both read before the snapshot starts, so a write that lands in
        // between, or the time that passes, makes it look older, never newer.
        let write_generation = self.write_generation();
        let now = self.shared.clock.now();
        let pooled = self.shared.lock_idle().pop();
        let mut reader = match pooled {
            Some(reader) => reader,
            None => Reader { connection: open_reader(&self.path, self.access)?, snapshot: None, last_used: now },
        };
        reader.last_used = now;
        let result = (|| {
            if !reader.snapshot_is_fresh(write_generation, now) {
                reader.end_snapshot()?;
                reader.connection.execute_batch("BEGIN").map_err(from_sqlite)?;
                reader.snapshot = Some(Snapshot { opened: now, write_generation });
            }
            read(&reader.connection)
        })()
        .map_err(|error| schema::explain_read_failure(&reader.connection, error));
        match &result {
            // A connection that failed for a reason other than the query may be
            // broken (file replaced, disk gone): drop it rather than reuse it.
            Err(StoreError::Unavailable(_)) => {}
            Err(_) => {
                if reader.end_snapshot().is_ok() {
                    self.park(reader);
                }
            }
            Ok(_) => self.park(reader),
        }
        result
    }

    /// Returns a reader to the pool, waking the sweeper for its snapshot.
    fn park(&self, reader: Reader) {
        let holds_snapshot = reader.snapshot.is_some();
        {
            let mut idle = self.shared.lock_idle();
            if idle.len() >= MAX_IDLE_READERS {
                return;
            }
            idle.push(reader);
        }
        if holds_snapshot {
            if !self.shared.sweeper_running.swap(true, Ordering::AcqRel) {
                let shared = Arc::downgrade(&self.shared);
                let spawned = std::thread::Builder::new()
                    .name("sqlite-snapshot-sweeper".into())
                    .spawn(move || sweep_idle_snapshots(&shared));
                if spawned.is_err() {
                    // Without a sweeper, idle readers must not keep snapshots.
                    self.shared.sweeper_running.store(false, Ordering::Release);
                    self.shared.lock_idle().iter_mut().for_each(|reader| drop(reader.end_snapshot()));
                    return;
                }
            }
            // While snapshots are parked the sweeper wakes on its own; it
            // needs a signal only when it went to sleep with none.
            if self.shared.sweeper_sleeping.swap(false, Ordering::AcqRel) {
                self.shared.snapshot_parked.notify_one();
            }
        }
    }
}

impl Drop for ReaderPool {
    /// Closes the idle connections here and now. The sweeper may hold the
    /// pool for up to a second more, and a process that ends meanwhile would
    /// leave its connections unclosed, so SQLite would not remove the log.
    fn drop(&mut self) {
        drop(std::mem::take(&mut *self.shared.lock_idle()));
        self.shared.snapshot_parked.notify_one();
    }
}

impl Shared {
    fn lock_idle(&self) -> MutexGuard<'_, Vec<Reader>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the readers idle for [`SNAPSHOT_REUSE`] out of the list, ends
    /// their snapshots with the lock released, and puts them back under
    /// the readers in use, closing one whose snapshot cannot be ended.
    /// Whether there were any.
    fn end_idle_snapshots(&self) -> bool {
        let now = self.clock.now();
        let mut swept: Vec<Reader> =
            self.lock_idle().extract_if(.., |reader| reader.holds_idle_snapshot(now)).collect();
        if swept.is_empty() {
            return false;
        }
        swept.retain_mut(|reader| reader.end_snapshot().is_ok());
        let mut idle = self.lock_idle();
        let room = MAX_IDLE_READERS.saturating_sub(idle.len());
        // At the bottom: the readers in use are taken from the top, and the
        // swept ones are the least recently used.
        idle.splice(0..0, swept.drain(..room.min(swept.len())));
        drop(idle);
        // What is left had no room: closed here, with the lock released.
        drop(swept);
        true
    }
}

/// When the first snapshot held in `idle` is due to be ended.
fn next_idle_expiry(idle: &[Reader]) -> Option<Instant> {
    idle.iter().filter(|reader| reader.snapshot.is_some()).map(|reader| reader.last_used + SNAPSHOT_REUSE).min()
}

/// Ends the snapshots of readers idle for [`SNAPSHOT_REUSE`]. Holds the pool
/// only while it waits a bounded time, so it notices within a second that
/// the pool is gone, and exits.
fn sweep_idle_snapshots(shared: &Weak<Shared>) {
    const IDLE_WAIT: Duration = Duration::from_secs(1);
    // Under load the idle list is often empty for a moment (every reader
    // checked out). Sleeping then would make the next park wake the sweeper,
    // a cross-thread wake-up per request; so it keeps its own pace for this
    // many empty sweeps before it sleeps until woken.
    const EMPTY_SWEEPS_BEFORE_SLEEP: u32 = 100;
    let mut empty_sweeps = 0;
    while let Some(shared) = shared.upgrade() {
        if shared.end_idle_snapshots() {
            continue;
        }
        // Looked at under the lock the sweeper then waits with, so that a
        // reader parked after the look finds it asleep and wakes it.
        let idle = shared.lock_idle();
        let wait = match next_idle_expiry(&idle) {
            Some(expires) => {
                empty_sweeps = 0;
                expires.saturating_duration_since(shared.clock.now())
            }
            None if empty_sweeps < EMPTY_SWEEPS_BEFORE_SLEEP => {
                empty_sweeps += 1;
                SNAPSHOT_REUSE
            }
            None => {
                shared.sweeper_sleeping.store(true, Ordering::Release);
                IDLE_WAIT
            }
        };
        let (guard, _) = shared.snapshot_parked.wait_timeout(idle, wait).unwrap_or_else(PoisonError::into_inner);
        drop(guard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with_one_row() -> (tempfile::TempDir, PathBuf, Connection) {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("pool.sqlite");
        let writer = super::super::connections::open_writer(&path).expect("writer");
        writer.execute_batch("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);").expect("setup");
        (directory, path, writer)
    }

    fn count(pool: &ReaderPool) -> i64 {
        pool.with(|connection| {
            connection.query_row("SELECT count(*) FROM t", [], |row| row.get(0)).map_err(from_sqlite)
        })
        .expect("read")
    }

    #[test]
    fn a_write_noted_by_this_process_is_seen_by_the_next_read() {
        let (_directory, path, writer) = file_with_one_row();
        let pool = ReaderPool::new(path, PageAccess::MemoryMapped, Clock::system());
        assert_eq!(count(&pool), 1);
        writer.execute("INSERT INTO t VALUES (2)", []).expect("insert");
        pool.note_write();
        assert_eq!(count(&pool), 2);
    }

    #[test]
    fn a_write_by_another_connection_is_seen_once_the_snapshot_has_aged() {
        let (_directory, path, writer) = file_with_one_row();
        let clock = Clock::manual();
        let pool = ReaderPool::new(path, PageAccess::MemoryMapped, clock.clone());
        assert_eq!(count(&pool), 1);
        // Not noted: as if another process wrote. The snapshot still serves
        // within its reuse window, and not after it.
        writer.execute("INSERT INTO t VALUES (2)", []).expect("insert");
        clock.advance(SNAPSHOT_REUSE - Duration::from_millis(1));
        assert_eq!(count(&pool), 1, "the snapshot serves within its window");
        clock.advance(Duration::from_millis(1));
        assert_eq!(count(&pool), 2);
    }

    #[test]
    fn a_snapshot_is_ended_once_its_reader_is_idle_not_while_it_is_in_use() {
        let (_directory, path, _writer) = file_with_one_row();
        let clock = Clock::manual();
        let pool = ReaderPool::new(path, PageAccess::MemoryMapped, clock.clone());
        assert_eq!(count(&pool), 1);
        clock.advance(SNAPSHOT_REUSE - Duration::from_millis(1));
        assert_eq!(count(&pool), 1, "served from the snapshot, which is still fresh");
        // The snapshot is now older than its reuse, but its reader was in use
        // a moment ago: it renews the snapshot itself on its next read.
        clock.advance(Duration::from_millis(2));
        assert!(!pool.shared.end_idle_snapshots(), "a reader in use is not swept");
        assert!(pool.shared.lock_idle().iter().all(|reader| reader.snapshot.is_some()));
        clock.advance(SNAPSHOT_REUSE);
        // This sweep, or the sweeper thread's, ends it.
        pool.shared.end_idle_snapshots();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let idle = pool.shared.lock_idle();
            if idle.len() == 1
                && idle.iter().all(|reader| reader.snapshot.is_none() && reader.connection.is_autocommit())
            {
                break;
            }
            drop(idle);
            assert!(Instant::now() < deadline, "the idle reader's snapshot was not ended");
            std::thread::yield_now();
        }
    }

    #[test]
    fn idle_snapshots_are_ended_so_the_log_can_be_checkpointed() {
        let (_directory, path, writer) = file_with_one_row();
        let pool = ReaderPool::new(path, PageAccess::MemoryMapped, Clock::system());
        assert_eq!(count(&pool), 1);
        assert!(pool.shared.lock_idle().iter().all(|reader| reader.snapshot.is_some()));
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.shared.lock_idle().iter().any(|reader| !reader.connection.is_autocommit()) {
            assert!(Instant::now() < deadline, "the sweeper did not end the idle snapshot");
            std::thread::sleep(SNAPSHOT_REUSE);
        }
        // With no reader holding a snapshot, a checkpoint that restarts the log completes.
        writer.execute("INSERT INTO t VALUES (2)", []).expect("insert");
        let busy: i64 = writer.query_row("PRAGMA wal_checkpoint(RESTART)", [], |row| row.get(0)).expect("checkpoint");
        assert_eq!(busy, 0, "a reader still blocked the checkpoint");
    }

    #[test]
    fn a_dropped_pool_closes_its_connections_at_once() {
        let (directory, path, writer) = file_with_one_row();
        let pool = ReaderPool::new(path, PageAccess::MemoryMapped, Clock::system());
        // Parks a reader with a snapshot, which starts the sweeper; the pool
        // is dropped once the sweeper holds it (it holds it while it waits).
        assert_eq!(count(&pool), 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&pool.shared) < 2 {
            assert!(Instant::now() < deadline, "the sweeper never held the pool");
            std::thread::yield_now();
        }
        drop(pool);
        drop(writer);
        assert!(!directory.path().join("pool.sqlite-wal").exists(), "the last connection to close removes the log");
    }
}
