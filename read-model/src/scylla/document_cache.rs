//! Documents the query API has read from the cluster, held in memory until a
//! notification says they changed.
//!
//! Why: over CQL a lookup's largest cost is the node's read, which takes
//! more CPU than the rest of the request; a document that did not change
//! need not be read again.
//!
//! How it stays fresh. The projector writes a batch's notifications only
//! after the documents they announce (`write_protocol`, phase "notified"),
//! and every change of a document's bytes changes the tag of its answer, so
//! it is notified. At most once every [`REFRESH_INTERVAL`] (on the first
//! read after it) the cache reads the notifications of both audiences
//! written since it last looked, settled or not, and drops every document of
//! each id they name; the reads that arrive while it does are served as the
//! last refresh left the entries, for up to [`SERVE_WHILE_REFRESHING`] after
//! it started. A document read from the cluster is kept only if no refresh
//! dropped anything while it was read.
//!
//! A notification can land behind a position already read: the
//! notifications of one batch land in any order, so each refresh reads the
//! last [`REREAD_WINDOW`] again; and projectors on several hosts stamp
//! theirs with their own clocks, within the feed's settle time
//! (`change_feed_settle`), so every [`FULL_REREAD_INTERVAL`] a refresh reads
//! that time and the interval again. A refresh that finds more than
//! [`MOST_NOTIFICATIONS_READ`] of an audience (a projector working through
//! a backlog) drops everything instead. The batches this process writes
//! drop their documents at once.
//!
//! It must not serve a document past a notification of it that a refresh
//! has read; documents come from `reads`, notifications from
//! `notification_feed`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::notification_feed::NotificationFeed;
use super::reads::VersionReads;
use crate::cached_documents::{CachedDocuments, DocumentCacheCounters};
use crate::change_feed::{FeedPosition, sequence_of_millisecond};
use crate::clock::Clock;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::notifications::{NotificationQuery, NotificationsRead};
use crate::store::{Body, ModelVersion, StoreError};
use crate::stored_bodies;

/// How long the entries are served after a refresh before the next one.
pub const REFRESH_INTERVAL: Duration = Duration::from_millis(100);

/// How long after a refresh started the entries are still served while the
/// next one runs: a refresh takes several reads of the cluster, longer than
/// [`REFRESH_INTERVAL`] on a busy one, and the reads that arrive meanwhile
/// would otherwise all go to the cluster.
pub const SERVE_WHILE_REFRESHING: Duration = Duration::from_secs(1);

/// How far back each refresh reads the notifications again.
pub const REREAD_WINDOW: Duration = Duration::from_secs(1);

/// How often a refresh reads the whole settle time (and this interval) again.
pub const FULL_REREAD_INTERVAL: Duration = Duration::from_secs(5);

/// Notifications of an audience a refresh reads at most; past that it drops
/// every entry, which costs fewer reads of the node than the rest would.
pub const MOST_NOTIFICATIONS_READ: u32 = 256;

/// How long reads go straight to the cluster after a refresh failed.
const RETRY_REFRESH_AFTER: Duration = Duration::from_secs(1);

/// The documents of one model version held in memory.
#[derive(Debug)]
pub(super) struct DocumentCache {
    version: ModelVersion,
    entries: CachedDocuments,
    /// Grows with every refresh or write that drops entries: a read keeps
    /// what it read only if it did not grow meanwhile.
    generation: RwLock<u64>,
    /// Where the refreshes stand; `None` before the first.
    read_through: tokio::sync::Mutex<Option<ReadThrough>>,
    clock: Clock,
    epoch: Instant,
    /// How far back a full re-read reads: the settle time and the interval between two.
    full_reread: Duration,
    /// When the last refresh that succeeded started, in nanoseconds since
    /// `epoch`; `None` (`u64::MAX`) before the first.
    refreshed_at: AtomicU64,
    /// Until when, in nanoseconds since `epoch`, no refresh is tried after one failed.
    refresh_failed_until: AtomicU64,
    counters: Arc<DocumentCacheCounters>,
}

/// Where the refreshes stand.
#[derive(Debug)]
struct ReadThrough {
    /// The newest notification read.
    position: FeedPosition,
    /// When the last full re-read ran, in milliseconds since 1970.
    full_reread_at_ms: i64,
}

/// What a read of a document needs from the active version.
pub(super) struct VersionSources<'a> {
    pub reads: VersionReads<'a>,
    pub notifications: NotificationFeed<'a>,
}

impl DocumentCache {
    /// A cache of model version `version`'s documents, holding up to
    /// `capacity_bytes`, for a feed whose notifications land within
    /// `settle`, counting into `counters`.
    pub(super) fn new(
        version: ModelVersion,
        capacity_bytes: u64,
        settle: Duration,
        clock: Clock,
        counters: Arc<DocumentCacheCounters>,
    ) -> DocumentCache {
        DocumentCache {
            version,
            entries: CachedDocuments::new(capacity_bytes),
            generation: RwLock::new(0),
            read_through: tokio::sync::Mutex::new(None),
            epoch: clock.now(),
            clock,
            full_reread: settle + FULL_REREAD_INTERVAL,
            refreshed_at: AtomicU64::new(u64::MAX),
            refresh_failed_until: AtomicU64::new(0),
            counters,
        }
    }

    pub(super) fn version(&self) -> ModelVersion {
        self.version
    }

    /// What the cache holds, for its statistics.
    pub(super) fn held(&self) -> &CachedDocuments {
        &self.entries
    }

    /// One document: from memory when the cache can vouch for it, else from
    /// the cluster (and then kept).
    pub(super) async fn document(
        &self,
        sources: &VersionSources<'_>,
        kind: DocumentKind,
        key: &str,
    ) -> Result<Option<Body>, StoreError> {
        if !self.refreshed_within(REFRESH_INTERVAL) && !self.refresh(&sources.notifications).await {
            return sources.reads.document(kind, key).await;
        }
        if let Some(body) = self.entries.get(kind, key) {
            self.counters.hit();
            return body.map(Some);
        }
        self.counters.miss();
        let generation = *self.generation.read().unwrap_or_else(PoisonError::into_inner);
        let Some(stored) = sources.reads.stored_document(kind, key).await? else { return Ok(None) };
        let body = stored_bodies::decompress_borrowed(&stored)?;
        // Held while inserting, so no refresh can drop anything in between.
        let current = self.generation.read().unwrap_or_else(PoisonError::into_inner);
        if *current == generation {
            self.entries.keep(kind, key, &body, &stored);
        }
        Ok(Some(body))
    }

    /// Drops the documents of `keys`, which this process has just written.
    pub(super) fn forget_written<'k>(&self, keys: impl IntoIterator<Item = &'k str>) {
        let mut generation = self.generation.write().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            self.entries.forget(key);
        }
        *generation += 1;
    }

    fn now(&self) -> u64 {
        nanos(self.clock.since(self.epoch))
    }

    /// Whether the last refresh that succeeded started less than `bound` ago.
    fn refreshed_within(&self, bound: Duration) -> bool {
        let refreshed_at = self.refreshed_at.load(Ordering::Acquire);
        refreshed_at != u64::MAX && self.now().saturating_sub(refreshed_at) < nanos(bound)
    }

    /// Applies the notifications written since the last refresh. False when
    /// the cache cannot vouch for its entries now: the notifications cannot
    /// be read, or another read is refreshing and the last refresh started
    /// [`SERVE_WHILE_REFRESHING`] ago or more.
    async fn refresh(&self, feed: &NotificationFeed<'_>) -> bool {
        if self.now() < self.refresh_failed_until.load(Ordering::Acquire) {
            return false;
        }
        let Ok(mut read_through) = self.read_through.try_lock() else {
            // Another read is refreshing; the last refresh still vouches for a while.
            return self.refreshed_within(SERVE_WHILE_REFRESHING);
        };
        if self.refreshed_within(REFRESH_INTERVAL) {
            return true;
        }
        let started = self.now();
        match self.apply_notifications(&mut read_through, feed).await {
            Ok(()) => {
                self.refreshed_at.store(started, Ordering::Release);
                true
            }
            Err(_) => {
                // The entries stay, unvouched: reads go to the cluster, which
                // reports any failure, until a refresh succeeds.
                let retry = self.now().saturating_add(nanos(RETRY_REFRESH_AFTER));
                self.refresh_failed_until.store(retry, Ordering::Release);
                false
            }
        }
    }

    async fn apply_notifications(
        &self,
        read_through: &mut Option<ReadThrough>,
        feed: &NotificationFeed<'_>,
    ) -> Result<(), StoreError> {
        let now_ms = self.clock.unix_ms();
        // Left as it was when a read fails, so the next refresh reads the same notifications.
        let Some(ReadThrough { position: start, full_reread_at_ms }) = read_through.as_ref() else {
            // The first look: nothing is held yet, so nothing before now can be stale.
            *read_through = Some(ReadThrough { position: feed.end_position().await?, full_reread_at_ms: now_ms });
            return Ok(());
        };
        let (start, full_reread_at_ms) = (start.clone(), *full_reread_at_ms);
        let full = now_ms - full_reread_at_ms >= millis(FULL_REREAD_INTERVAL);
        let window = if full { self.full_reread } else { REREAD_WINDOW };
        let earliest =
            FeedPosition { sequence: sequence_of_millisecond(now_ms - millis(window)), lcc_id: String::new() };
        let reread_from = start.clone().min(earliest);
        let mut newest = start;
        let mut ids = BTreeSet::new();
        let mut too_many = false;
        for audience in [Audience::Production, Audience::Sandbox] {
            let after = Some((self.version, reread_from.clone()));
            let query = NotificationQuery { audience, after, limit: MOST_NOTIFICATIONS_READ };
            match feed.read(self.version, &query, now_ms, Duration::ZERO).await? {
                NotificationsRead::Page(page) => {
                    too_many |= page.items.len() >= MOST_NOTIFICATIONS_READ as usize;
                    for item in page.items {
                        newest = newest.max(item.position.clone());
                        ids.insert(item.position.lcc_id);
                    }
                }
                // Retention passed the position: whatever happened since is unknown.
                NotificationsRead::Gone { .. } => too_many = true,
            }
        }
        if too_many {
            newest = newest.max(feed.end_position().await?);
        }
        if too_many || !ids.is_empty() {
            let mut generation = self.generation.write().unwrap_or_else(PoisonError::into_inner);
            if too_many {
                self.entries.clear();
                self.counters.reset();
            } else {
                for id in &ids {
                    self.entries.forget(id);
                }
            }
            *generation += 1;
        }
        let full_reread_at_ms = if full { now_ms } else { full_reread_at_ms };
        *read_through = Some(ReadThrough { position: newest, full_reread_at_ms });
        Ok(())
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
