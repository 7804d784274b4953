//! Where a batch's changes and notifications land in their feeds, and
//! retention: the feeds' days
//! past the retention period are swept at most once per interval, and the
//! horizon is raised past whatever a sweep or a batch removed.

use super::ScyllaStore;
use super::change_feed::{FeedPlacement, VersionFeed};
use super::notification_feed::NotificationFeed;
use crate::store::{StoreError, WriteBatch};

/// How often retention sweeps the feed's days.
const FEED_SWEEP_INTERVAL_MS: i64 = 10 * 60 * 1000;

impl ScyllaStore {
    /// Where this batch's changes go: the millisecond after this process's
    /// previous batch at the earliest, so its changes keep their order.
    pub(super) fn feed_placement(&self, batch: &WriteBatch, now_ms: i64) -> FeedPlacement {
        let mut newest = self.inner.newest_feed_millisecond.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        FeedPlacement::next(
            &mut newest,
            batch.bulk_rows.len() + batch.notifications.len(),
            now_ms,
            batch.change_feed_retention,
        )
    }

    /// Sweeps the feeds' days past retention (changes and notifications),
    /// at most once per [`FEED_SWEEP_INTERVAL_MS`], and raises the change
    /// feed's horizon past what any removal took.
    pub(super) async fn sweep_feed(
        &self,
        feed: &VersionFeed<'_>,
        notifications: &NotificationFeed<'_>,
        removed: Option<i64>,
        cutoff: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut newest_removed = removed;
        if let Some(cutoff) = cutoff {
            let mut sweep = self.inner.feed_sweep.lock().await;
            let due = sweep.is_none_or(|(swept_at, _)| now_ms - swept_at >= FEED_SWEEP_INTERVAL_MS);
            if due {
                let swept_through = match *sweep {
                    Some((_, swept_through)) => swept_through,
                    None => feed.horizon().await?,
                };
                newest_removed = newest_removed.max(feed.sweep(swept_through, cutoff).await?);
                notifications.sweep(cutoff).await?;
                *sweep = Some((now_ms, cutoff));
            }
        }
        match newest_removed {
            Some(sequence) => feed.raise_horizon(sequence).await,
            None => Ok(()),
        }
    }
}
