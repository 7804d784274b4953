//! When snapshots are cut: a task beside the server that keeps each
//! audience's newest snapshot no older than the interval, and keeps the
//! newest few.
//!
//! A snapshot is cut when the feed has moved past the newest snapshot's
//! cursor and either the feed has been quiet for [`QUIET`] (the projector
//! caught up: a newcomer's first snapshot holds the whole sandbox), the
//! newest snapshot is older than the interval (a busy feed is never quiet),
//! or a rebuild replaced the model version the newest snapshot names (its
//! cursor is gone). Replicas sharing the directory
//! take a lock file first, so only one cuts at a time; the others see its
//! snapshot and find nothing to do.

use std::fs::{File, TryLockError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use read_model::calendar::Timestamp;
use read_model::change_feed::{FeedCursor, millisecond_of_sequence};
use read_model::{Audience, DocumentReads, StoreError};

use super::cutting::cut_snapshot;
use super::errors::SnapshotError;
use super::library::SnapshotLibrary;
use crate::signing::Signer;

/// How long the feed must not move before a due snapshot is cut early.
pub const QUIET: Duration = Duration::from_secs(2);

/// How often the task looks.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the task is told.
#[derive(Debug, Clone)]
pub struct SnapshotSchedule {
    pub library: SnapshotLibrary,
    /// The longest the newest snapshot may lag the feed.
    pub interval: Duration,
    /// Snapshots kept per audience.
    pub keep: usize,
    pub rows_per_file: u64,
    /// Signs the manifests.
    pub signer: Arc<Signer>,
}

/// Cuts snapshots as they fall due until `shutdown` resolves.
pub async fn run_snapshot_schedule(
    store: Arc<dyn DocumentReads>,
    schedule: SnapshotSchedule,
    shutdown: impl Future<Output = ()>,
) {
    let started = Instant::now();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        for audience in [Audience::Sandbox, Audience::Production] {
            match cut_if_due(store.as_ref(), &schedule, audience, started.elapsed()).await {
                Ok(Some(snapshot_id)) => {
                    tracing::info!(snapshot = snapshot_id, audience = audience.code(), "cut a snapshot")
                }
                Ok(None) | Err(SnapshotError::Store(StoreError::NoActiveModelVersion)) => {}
                Err(error) => tracing::warn!(%error, audience = audience.code(), "failed to cut a snapshot"),
            }
        }
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
}

/// Cuts a snapshot of `audience` if one is due; returns its id.
pub async fn cut_if_due(
    store: &dyn DocumentReads,
    schedule: &SnapshotSchedule,
    audience: Audience,
    running_for: Duration,
) -> Result<Option<String>, SnapshotError> {
    let bounds = store.change_feed_bounds(audience).await?;
    let Some(newest) = bounds.newest.clone() else { return Ok(None) };
    let latest = schedule.library.latest(audience);
    let current =
        FeedCursor { model_version: bounds.model_version, audience, position: bounds.continue_from() }.encode();
    if latest.as_ref().is_some_and(|manifest| manifest.changes_cursor == current) {
        return Ok(None);
    }
    let now = Timestamp::now();
    let quiet = now.0 - millisecond_of_sequence(newest.sequence) >= i64::try_from(QUIET.as_millis()).unwrap_or(0);
    let age = match &latest {
        Some(manifest) => Timestamp::parse(&manifest.created_at)
            .map_or(Duration::MAX, |created| Duration::from_millis(u64::try_from(now.0 - created.0).unwrap_or(0))),
        None => running_for,
    };
    // After a rebuild the newest snapshot's cursor is gone: cut at once.
    let model_replaced = latest.as_ref().is_some_and(|manifest| manifest.model_version != bounds.model_version.0);
    if !quiet && !model_replaced && age < schedule.interval {
        return Ok(None);
    }
    let Some(_lock) = cutting_lock(&schedule.library)? else { return Ok(None) };
    // Another replica may have cut while this one waited for the lock.
    if schedule.library.latest(audience).is_some_and(|manifest| manifest.changes_cursor == current) {
        return Ok(None);
    }
    let manifest = cut_snapshot(store, &schedule.library, &schedule.signer, audience, schedule.rows_per_file).await?;
    schedule.library.prune(audience, schedule.keep);
    Ok(Some(manifest.snapshot_id))
}

/// The lock every cutter takes, released when dropped; `None` when another holds it.
fn cutting_lock(library: &SnapshotLibrary) -> Result<Option<File>, SnapshotError> {
    let path = library.root().join(".cutting.lock");
    let io_error = |source| SnapshotError::Io { path: path.clone(), source };
    std::fs::create_dir_all(library.root()).map_err(io_error)?;
    let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io_error)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(error)) => Err(io_error(error)),
    }
}
