//! The notification feed on SQLite: appending a batch's notifications in
//! its transaction, retention, and the feed's reads.
//!
//! One writer commits in sequence order, so a notification is served as
//! soon as it is committed and a position is its sequence alone. This
//! module must not decide what a notification is; the projector does.

use std::time::Duration;

use rusqlite::{Connection, params};

use super::errors::from_sqlite;
use crate::change_feed::{ChangeFeedGone, FeedPosition, SEQUENCE_INDEX_BITS, sequence_of_millisecond};
use crate::identifiers::Audience;
use crate::notifications::{
    NotificationItem, NotificationPage, NotificationQuery, NotificationWrite, NotificationsRead,
};
use crate::records::{ModelVersion, StoreError};

fn horizon(connection: &Connection) -> Result<i64, StoreError> {
    connection
        .prepare_cached("SELECT horizon FROM notifications_state WHERE singleton = 1")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(from_sqlite)
}

/// The newest sequence recorded, or the horizon when that is later: where
/// a reader that has read everything stands.
fn end(connection: &Connection, horizon: i64) -> Result<i64, StoreError> {
    let newest: Option<i64> = connection
        .prepare_cached("SELECT max(sequence) FROM notifications")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(from_sqlite)?;
    Ok(newest.unwrap_or(0).max(horizon))
}

/// Appends a batch's notifications, committed at `now_ms`, and removes
/// those older than `retention`. Sequences only grow, even when the clock
/// steps back: a batch starts after the millisecond of the newest one.
pub(super) fn record(
    connection: &Connection,
    notifications: &[NotificationWrite],
    now_ms: i64,
    retention: Option<Duration>,
) -> Result<(), StoreError> {
    let horizon = horizon(connection)?;
    if !notifications.is_empty() {
        let after = end(connection, horizon)?;
        let first = sequence_of_millisecond(now_ms).max(((after >> SEQUENCE_INDEX_BITS) + 1) << SEQUENCE_INDEX_BITS);
        let mut insert = connection
            .prepare_cached("INSERT INTO notifications (sequence, audience, id, body) VALUES (?1, ?2, ?3, ?4)")
            .map_err(from_sqlite)?;
        for (index, notification) in notifications.iter().enumerate() {
            let audience = Audience::of(&notification.id).code();
            insert
                .execute(params![first + index as i64, audience, notification.id, notification.body])
                .map_err(from_sqlite)?;
        }
    }
    let Some(retention) = retention else { return Ok(()) };
    let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    let cutoff = sequence_of_millisecond(now_ms.saturating_sub(retention_ms));
    if cutoff <= horizon {
        return Ok(());
    }
    let newest_removed: Option<i64> = connection
        .prepare_cached("SELECT max(sequence) FROM notifications WHERE sequence < ?1")
        .and_then(|mut statement| statement.query_row([cutoff], |row| row.get(0)))
        .map_err(from_sqlite)?;
    if let Some(removed) = newest_removed {
        connection
            .prepare_cached("DELETE FROM notifications WHERE sequence <= ?1")
            .and_then(|mut statement| statement.execute([removed]))
            .map_err(from_sqlite)?;
        connection
            .prepare_cached("UPDATE notifications_state SET horizon = ?1 WHERE singleton = 1 AND horizon < ?1")
            .and_then(|mut statement| statement.execute([removed]))
            .map_err(from_sqlite)?;
    }
    Ok(())
}

/// A page of the feed of the file `connection` reads, which is model version `version`.
pub(super) fn read(
    connection: &Connection,
    version: ModelVersion,
    query: &NotificationQuery,
) -> Result<NotificationsRead, StoreError> {
    let horizon = horizon(connection)?;
    let end = end(connection, horizon)?;
    let gone = |gone| NotificationsRead::Gone {
        gone,
        model_version: version,
        resume_from: FeedPosition { sequence: end, lcc_id: String::new() },
    };
    let after = match &query.after {
        None => FeedPosition { sequence: horizon, lcc_id: String::new() },
        Some((cursor_version, _)) if *cursor_version != version => {
            return Ok(gone(ChangeFeedGone::OtherModelVersion { active: version }));
        }
        // A position past the end reads nothing until the feed passes it,
        // as on the cluster.
        Some((_, position)) if position.sequence < horizon => {
            return Ok(gone(ChangeFeedGone::Purged));
        }
        Some((_, position)) => position.clone(),
    };
    let mut statement = connection
        .prepare_cached(
            "SELECT sequence, id, body FROM notifications WHERE audience = ?1 AND sequence > ?2 \
             ORDER BY sequence LIMIT ?3",
        )
        .map_err(from_sqlite)?;
    let rows = statement
        .query_map(params![query.audience.code(), after.sequence, query.limit], |row| {
            Ok(NotificationItem {
                position: FeedPosition { sequence: row.get(0)?, lcc_id: row.get(1)? },
                body: row.get(2)?,
            })
        })
        .map_err(from_sqlite)?;
    let items = rows.collect::<Result<Vec<_>, _>>().map_err(from_sqlite)?;
    let mut next = items.last().map_or(after, |item| item.position.clone());
    if items.len() < query.limit as usize {
        // Caught up: the cursor moves to the feed's end, so that a quiet
        // audience's cursor does not fall behind the horizon.
        next = next.max(FeedPosition { sequence: end, lcc_id: String::new() });
    }
    Ok(NotificationsRead::Page(NotificationPage { model_version: version, items, next, settling: false }))
}
