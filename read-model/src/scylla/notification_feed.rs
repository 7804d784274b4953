//! The notification feed on ScyllaDB: its reads and its retention. Its
//! writes are the batch's phase "notified" (`write_protocol::mutation`).
//!
//! Notifications live in one partition per (audience, day), as the change
//! feed's changes do, and are served only once settled
//! (`ScyllaSettings::change_feed_settle`): projectors commit concurrently
//! and their clocks differ. Retention removes whole days: a day is removed
//! once all of it is past the retention period, so a notification is kept
//! at least that long and at most a day longer. The horizon, the newest
//! removed sequence, is kept beside the change feed's.
//!
//! A projector that replays a batch after a crash appends its notifications
//! again at new sequences, with the versions they had: a client that keeps
//! the newest version of each id applies them without harm.

use std::time::Duration;

use scylla::client::session::Session;

use super::change_feed::{DAY_MS, day_of};
use super::execution::{Prepared, execute, select};
use super::statements::{ModelStatement, NOTIFICATIONS_HORIZON_ROW};
use super::timestamps;
use crate::change_feed::{ChangeFeedGone, FeedPosition, sequence_of_millisecond};
use crate::identifiers::Audience;
use crate::notifications::{NotificationItem, NotificationPage, NotificationQuery, NotificationsRead};
use crate::records::{ModelVersion, StoreError};

/// The notification feed's statements on one model version.
#[derive(Debug, Clone, Copy)]
pub(super) struct NotificationFeed<'a> {
    pub session: &'a Session,
    pub statements: &'a Prepared<ModelStatement>,
}

impl NotificationFeed<'_> {
    async fn horizon(&self) -> Result<i64, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangeHorizon)?;
        let rows: Vec<(i64,)> = select(self.session, statement, (NOTIFICATIONS_HORIZON_ROW,)).await?;
        Ok(rows.first().map_or(0, |(horizon,)| *horizon))
    }

    async fn days(&self, audience: Audience) -> Result<Vec<i64>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectNotificationDays)?;
        let rows: Vec<(i64,)> = select(self.session, statement, (audience.code(),)).await?;
        Ok(rows.into_iter().map(|(day,)| day).collect())
    }

    /// The position of the newest notification of either audience, or the
    /// horizon when that is later: where a reader that has read everything stands.
    async fn end(&self, horizon: i64) -> Result<FeedPosition, StoreError> {
        let mut end = FeedPosition { sequence: horizon, lcc_id: String::new() };
        for audience in [Audience::Production, Audience::Sandbox] {
            if let Some(day) = self.days(audience).await?.last() {
                let statement = self.statements.get(ModelStatement::SelectLastNotification)?;
                let rows: Vec<(i64, String)> = select(self.session, statement, (audience.code(), *day)).await?;
                if let Some((sequence, id)) = rows.into_iter().next() {
                    end = end.max(FeedPosition { sequence, lcc_id: id });
                }
            }
        }
        Ok(end)
    }

    /// Where a reader that has read every notification stands now.
    pub(super) async fn end_position(&self) -> Result<FeedPosition, StoreError> {
        let horizon = self.horizon().await?;
        self.end(horizon).await
    }

    /// A page of the feed of model version `version`, read at `now_ms`.
    pub(super) async fn read(
        &self,
        version: ModelVersion,
        query: &NotificationQuery,
        now_ms: i64,
        settle: Duration,
    ) -> Result<NotificationsRead, StoreError> {
        let horizon = self.horizon().await?;
        let settled = if settle.is_zero() {
            i64::MAX
        } else {
            sequence_of_millisecond(now_ms - i64::try_from(settle.as_millis()).unwrap_or(0)) - 1
        };
        let start = match &query.after {
            None => FeedPosition { sequence: horizon, lcc_id: String::new() },
            Some((cursor_version, position)) if *cursor_version != version || position.sequence < horizon => {
                let gone = if *cursor_version != version {
                    ChangeFeedGone::OtherModelVersion { active: version }
                } else {
                    ChangeFeedGone::Purged
                };
                // Not past what is settled, so that nothing can still land before it.
                let settled_end = FeedPosition { sequence: settled.max(horizon), lcc_id: String::new() };
                let resume_from = self.end(horizon).await?.min(settled_end);
                return Ok(NotificationsRead::Gone { gone, model_version: version, resume_from });
            }
            Some((_, position)) => position.clone(),
        };
        let wanted = query.limit as usize;
        let mut after = start;
        let mut items = Vec::new();
        let days = self.days(query.audience).await?;
        for &day in &days {
            if day < day_of(after.sequence) || day > day_of(settled) || items.len() == wanted {
                continue;
            }
            let statement = self.statements.get(ModelStatement::SelectNotificationsAfter)?;
            let limit = i32::try_from(wanted - items.len()).unwrap_or(i32::MAX);
            let values = (query.audience.code(), day, after.sequence, after.lcc_id.as_str(), settled, limit);
            let rows: Vec<(i64, String, Vec<u8>)> = select(self.session, statement, values).await?;
            for (sequence, id, body) in rows {
                after = FeedPosition { sequence, lcc_id: id };
                items.push(NotificationItem { position: after.clone(), body });
            }
        }
        let mut settling = false;
        if items.len() < wanted && !settle.is_zero() {
            // Caught up to the settled moment: nothing of the audience lands
            // before it any more, so the cursor moves there.
            after = after.max(FeedPosition { sequence: settled, lcc_id: String::new() });
            settling = self.end(horizon).await?.sequence > settled;
        }
        Ok(NotificationsRead::Page(NotificationPage { model_version: version, items, next: after, settling }))
    }

    /// Removes the days wholly before `cutoff` and raises the horizon past them.
    pub(super) async fn sweep(&self, cutoff: i64) -> Result<(), StoreError> {
        let mut newest_removed = None;
        for audience in [Audience::Production, Audience::Sandbox] {
            for day in self.days(audience).await? {
                if day >= day_of(cutoff) {
                    continue;
                }
                // Stamped with the next day's first millisecond: later than every row of the day.
                let timestamp = timestamps::of_feed_day((day + 1) * DAY_MS);
                let rows = self.statements.get(ModelStatement::DeleteNotificationDayRows)?;
                execute(self.session, rows, (timestamp, audience.code(), day)).await?;
                let listing = self.statements.get(ModelStatement::DeleteNotificationDay)?;
                execute(self.session, listing, (timestamp, audience.code(), day)).await?;
                newest_removed = newest_removed.max(Some(sequence_of_millisecond((day + 1) * DAY_MS) - 1));
            }
        }
        if let Some(horizon) = newest_removed {
            let statement = self.statements.get(ModelStatement::WriteChangeHorizon)?;
            let values = (NOTIFICATIONS_HORIZON_ROW, horizon, timestamps::of_feed_sequence(horizon));
            execute(self.session, statement, values).await?;
        }
        Ok(())
    }
}
