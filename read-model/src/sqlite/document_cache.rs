//! Documents a reading process has read, held in memory until a batch
//! changes them.
//!
//! A point read from SQLite descends two B-trees of a file much larger than
//! the CPU's caches, and under load that was the largest part of the query
//! API's time per lookup. This cache answers repeated
//! reads of a document from memory, within a bound in bytes
//! (`crate::cached_documents`).
//!
//! It never serves a document older than a pooled reader's snapshot may be.
//! Every batch write records, in its own transaction, the keys of the
//! documents it wrote (`document_changes`: one row per batch, numbered in
//! commit order). Before it answers from memory, the cache applies the
//! records committed since it last looked, dropping those keys. It looks
//! again once [`SNAPSHOT_REUSE`] has passed, and after every write that this
//! process makes: the freshness a pooled reader gives. A document read from
//! a snapshot is kept only if no record newer than that snapshot has been
//! applied, or the record's drop would be undone. A cache that finds records
//! missing (forgotten while it was idle, or a model file created anew)
//! drops everything.
//!
//! This module reads only the change records itself; documents come from
//! the reader pool. It must never hold a document that it cannot prove
//! unchanged since it was read.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, TryLockError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::connections::{PageAccess, open_reader};
use super::reader_pool::{ReaderPool, SNAPSHOT_REUSE};
use super::reads;
use crate::cached_documents::{CachedDocuments, DocumentCacheCounters};
use crate::clock::Clock;
use crate::documents::DocumentKind;
use crate::store::{Body, StoreError};
use crate::stored_bodies;

/// Pending batch records above which dropping everything is cheaper than
/// dropping their keys one by one.
const MAX_RECORDS_APPLIED: i64 = 64;

/// Applied-through value before the first refresh: nothing may be kept yet.
const NOTHING_APPLIED: i64 = i64::MIN;

/// How long reads go straight to the store after a refresh failed (a model
/// file that has no change records yet, say), rather than each read opening
/// a connection to try again.
const RETRY_REFRESH_AFTER: Duration = Duration::from_secs(1);

/// The documents of one model file held in memory.
#[derive(Debug)]
pub(super) struct DocumentCache {
    path: PathBuf,
    entries: CachedDocuments,
    /// The newest change record applied to `entries`.
    applied_through: RwLock<i64>,
    /// A connection outside any transaction, so each refresh sees the newest commit.
    refresher: Mutex<Option<Connection>>,
    clock: Clock,
    epoch: Instant,
    /// Until when, in nanoseconds since `epoch`, the last refresh vouches for the entries.
    fresh_until: AtomicU64,
    /// The reader pool's write generation that the last refresh saw.
    refreshed_generation: AtomicU64,
    /// Until when, in nanoseconds since `epoch`, no refresh is tried after one failed.
    refresh_failed_until: AtomicU64,
    counters: Arc<DocumentCacheCounters>,
}

impl DocumentCache {
    /// A cache of the documents of the model file at `path`, holding up to
    /// `capacity_bytes` and counting into `counters`.
    pub(super) fn new(
        path: PathBuf,
        capacity_bytes: u64,
        counters: Arc<DocumentCacheCounters>,
        clock: Clock,
    ) -> DocumentCache {
        DocumentCache {
            path,
            entries: CachedDocuments::new(capacity_bytes),
            applied_through: RwLock::new(NOTHING_APPLIED),
            refresher: Mutex::new(None),
            epoch: clock.now(),
            clock,
            fresh_until: AtomicU64::new(0),
            refreshed_generation: AtomicU64::new(0),
            refresh_failed_until: AtomicU64::new(0),
            counters,
        }
    }

    /// One document: from memory when the cache can vouch for it, else from
    /// `readers` (and then kept).
    pub(super) fn document(
        &self,
        readers: &ReaderPool,
        kind: DocumentKind,
        key: &str,
    ) -> Result<Option<Body>, StoreError> {
        let write_generation = readers.write_generation();
        if !self.is_fresh(write_generation) && !self.refresh(write_generation) {
            return readers.with(|connection| reads::document(connection, kind, key));
        }
        if let Some(body) = self.entries.get(kind, key) {
            self.counters.hit();
            return body.map(Some);
        }
        self.counters.miss();
        let (stored, read_at) = readers.with(|connection| {
            Ok((reads::stored_document(connection, kind, key)?, reads::latest_document_change(connection)?))
        })?;
        let Some(stored) = stored else { return Ok(None) };
        let body = stored_bodies::decompress_borrowed(&stored)?;
        self.keep(kind, key, &body, &stored, read_at);
        Ok(Some(body))
    }

    /// What the cache holds, for its statistics.
    pub(super) fn held(&self) -> &CachedDocuments {
        &self.entries
    }

    fn now(&self) -> u64 {
        u64::try_from(self.clock.since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    fn is_fresh(&self, write_generation: u64) -> bool {
        self.refreshed_generation.load(Ordering::Acquire) == write_generation
            && self.now() < self.fresh_until.load(Ordering::Acquire)
    }

    /// Keeps a document (`body`, stored as `stored`) read from a snapshot
    /// that had seen change record `read_at`, unless a newer record has
    /// been applied since.
    fn keep(&self, kind: DocumentKind, key: &str, body: &[u8], stored: &[u8], read_at: i64) {
        // Held while inserting, so no refresh can apply a record in between.
        let applied_through = self.applied_through.read().unwrap_or_else(PoisonError::into_inner);
        if *applied_through != NOTHING_APPLIED && read_at >= *applied_through {
            self.entries.keep(kind, key, body, stored);
        }
    }

    /// Applies the change records committed since the last refresh. False
    /// when the cache cannot vouch for its entries now: another thread is
    /// refreshing, or the records cannot be read.
    fn refresh(&self, write_generation: u64) -> bool {
        if self.now() < self.refresh_failed_until.load(Ordering::Acquire) {
            return false;
        }
        let mut refresher = match self.refresher.try_lock() {
            Ok(refresher) => refresher,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        let started = self.now();
        match self.apply_new_records(&mut refresher) {
            Ok(()) => {
                self.refreshed_generation.store(write_generation, Ordering::Release);
                let reuse = u64::try_from(SNAPSHOT_REUSE.as_nanos()).unwrap_or(u64::MAX);
                self.fresh_until.store(started.saturating_add(reuse), Ordering::Release);
                true
            }
            Err(_) => {
                // The entries stay, unvouched: reads go to the store, which
                // reports any failure, until a refresh succeeds. The
                // connection is opened afresh in case it is broken.
                *refresher = None;
                let retry = u64::try_from(RETRY_REFRESH_AFTER.as_nanos()).unwrap_or(u64::MAX);
                self.refresh_failed_until.store(self.now().saturating_add(retry), Ordering::Release);
                false
            }
        }
    }

    fn apply_new_records(&self, refresher: &mut Option<Connection>) -> Result<(), StoreError> {
        let connection = match refresher {
            Some(connection) => connection,
            None => refresher.insert(open_reader(&self.path, PageAccess::Copied)?),
        };
        let applied = *self.applied_through.read().unwrap_or_else(PoisonError::into_inner);
        let latest = reads::latest_document_change(connection)?;
        if latest == applied {
            return Ok(());
        }
        let catch_up = applied != NOTHING_APPLIED && latest > applied && latest - applied <= MAX_RECORDS_APPLIED;
        let records = if catch_up { reads::document_changes(connection, applied, latest)? } else { Vec::new() };
        // Records numbered one after another, none missing: drop their keys.
        // Anything else (a first look, a gap, a file created anew): drop all.
        let contiguous = catch_up
            && records.len() as i64 == latest - applied
            && records.iter().zip(applied + 1..).all(|((sequence, _), expected)| *sequence == expected);
        let mut applied_through = self.applied_through.write().unwrap_or_else(PoisonError::into_inner);
        if contiguous {
            for key in records.iter().flat_map(|(_, keys)| keys) {
                self.entries.forget(key);
            }
        } else if applied != NOTHING_APPLIED {
            self.entries.clear();
            self.counters.reset();
        }
        *applied_through = latest;
        Ok(())
    }
}
