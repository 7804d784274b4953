//! The change feed on SQLite: recording a batch's bulk-row changes in its
//! transaction, retention, and the feed's reads.
//!
//! Sequences are unique here (one writer per file, one transaction per
//! batch), so a position is its sequence alone, and a change's version is
//! its sequence: it grows with every change of a work because changes are
//! committed in one order. This module must not decide what a change is;
//! `writes` finds it by comparing a row with the one it replaces.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::errors::from_sqlite;
use crate::change_feed::{
    ChangeFeedBounds, ChangeFeedGone, ChangeItem, ChangeKind, ChangePage, ChangeQuery, ChangesRead, FeedPosition,
    SEQUENCE_INDEX_BITS, sequence_of_millisecond,
};
use crate::identifiers::Audience;
use crate::records::{Body, ModelVersion, StoreError};
use crate::stored_bodies;

/// A change found by the batch write, before it has a sequence.
#[derive(Debug)]
pub(super) struct RecordedChange<'a> {
    pub(super) audience: &'static str,
    pub(super) lcc_id: &'a str,
    /// The new row; `None` for a withdrawal.
    pub(super) body: Option<&'a [u8]>,
    /// Whether the work had a row before: only then can it have earlier
    /// changes for this one to supersede.
    pub(super) replaces_a_row: bool,
}

/// The feed's state row.
struct FeedState {
    horizon: i64,
    swept_through: i64,
}

fn feed_state(connection: &Connection) -> Result<FeedState, StoreError> {
    connection
        .prepare_cached("SELECT horizon, swept_through FROM change_feed_state WHERE singleton = 1")
        .and_then(|mut statement| {
            statement.query_row([], |row| Ok(FeedState { horizon: row.get(0)?, swept_through: row.get(1)? }))
        })
        .map_err(from_sqlite)
}

/// Appends a batch's changes, committed at `now_ms`, and applies retention.
///
/// The batch's sequences start at the later of `now_ms` and the millisecond
/// after the newest recorded change, so sequences only grow even when the
/// clock steps back.
pub(super) fn record(
    connection: &Connection,
    changes: &[RecordedChange<'_>],
    now_ms: i64,
    retention: Option<Duration>,
) -> Result<(), StoreError> {
    let state = feed_state(connection)?;
    let mut horizon = state.horizon;
    let cutoff = retention.map(|retention| {
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        sequence_of_millisecond(now_ms.saturating_sub(retention_ms))
    });
    if !changes.is_empty() {
        let newest: Option<i64> =
            connection.query_row("SELECT max(sequence) FROM change_feed", [], |row| row.get(0)).map_err(from_sqlite)?;
        let after = newest.unwrap_or(0).max(state.horizon);
        let first = sequence_of_millisecond(now_ms).max(((after >> SEQUENCE_INDEX_BITS) + 1) << SEQUENCE_INDEX_BITS);
        let mut insert = connection
            .prepare_cached("INSERT INTO change_feed (sequence, audience, lcc_id, body) VALUES (?1, ?2, ?3, ?4)")
            .map_err(from_sqlite)?;
        // A work's older changes are superseded now; those past retention go at once.
        let mut superseded = connection
            .prepare_cached(
                "DELETE FROM change_feed WHERE lcc_id = ?1 AND sequence < ?2 AND sequence < ?3 RETURNING sequence",
            )
            .map_err(from_sqlite)?;
        for (index, change) in changes.iter().enumerate() {
            let sequence = first + index as i64;
            insert.execute(params![sequence, change.audience, change.lcc_id, change.body]).map_err(from_sqlite)?;
            if let Some(cutoff) = cutoff.filter(|_| change.replaces_a_row) {
                let removed =
                    superseded.query_map(params![change.lcc_id, sequence, cutoff], |row| row.get::<_, i64>(0));
                for removed in removed.map_err(from_sqlite)? {
                    horizon = horizon.max(removed.map_err(from_sqlite)?);
                }
            }
        }
    }
    let mut swept_through = state.swept_through;
    if let Some(cutoff) = cutoff.filter(|cutoff| *cutoff > state.swept_through) {
        // Changes that aged past retention since the last sweep: withdrawals,
        // and changes a later one supersedes. A work's newest change stays
        // while it is published; when a later change supersedes it, the
        // deletion above removes it.
        let mut sweep = connection
            .prepare_cached(
                "DELETE FROM change_feed WHERE sequence > ?1 AND sequence <= ?2 AND (body IS NULL OR EXISTS \
                 (SELECT 1 FROM change_feed AS later WHERE later.lcc_id = change_feed.lcc_id \
                  AND later.sequence > change_feed.sequence)) RETURNING sequence",
            )
            .map_err(from_sqlite)?;
        for removed in
            sweep.query_map(params![state.swept_through, cutoff], |row| row.get::<_, i64>(0)).map_err(from_sqlite)?
        {
            horizon = horizon.max(removed.map_err(from_sqlite)?);
        }
        swept_through = cutoff;
    }
    if horizon != state.horizon || swept_through != state.swept_through {
        connection
            .prepare_cached("UPDATE change_feed_state SET horizon = ?1, swept_through = ?2 WHERE singleton = 1")
            .and_then(|mut statement| statement.execute(params![horizon, swept_through]))
            .map_err(from_sqlite)?;
    }
    Ok(())
}

/// A page of the feed of the file `connection` reads, which is model version `version`.
pub(super) fn changes(
    connection: &Connection,
    version: ModelVersion,
    query: &ChangeQuery,
) -> Result<ChangesRead, StoreError> {
    let state = feed_state(connection)?;
    let after = match &query.after {
        None if query.latest_only => FeedPosition { sequence: 0, lcc_id: String::new() },
        None => FeedPosition { sequence: state.horizon, lcc_id: String::new() },
        Some((cursor_version, _)) if *cursor_version != version => {
            return Ok(ChangesRead::Gone(ChangeFeedGone::OtherModelVersion { active: version }));
        }
        Some((_, position)) => {
            let newest: Option<i64> = connection
                .query_row("SELECT max(sequence) FROM change_feed", [], |row| row.get(0))
                .map_err(from_sqlite)?;
            // Listing records, a position is a time to list from: any time will do.
            let beyond = position.sequence > newest.unwrap_or(state.horizon).max(state.horizon);
            if !query.latest_only && (position.sequence < state.horizon || beyond) {
                return Ok(ChangesRead::Gone(ChangeFeedGone::Purged));
            }
            position.clone()
        }
    };
    let latest_only = if query.latest_only {
        " AND NOT EXISTS (SELECT 1 FROM change_feed AS later \
           WHERE later.lcc_id = change_feed.lcc_id AND later.sequence > change_feed.sequence)"
    } else {
        ""
    };
    let sql = format!(
        "SELECT sequence, lcc_id, body FROM change_feed \
         WHERE audience = ?1 AND sequence > ?2 AND sequence <= ?3{latest_only} ORDER BY sequence LIMIT ?4"
    );
    let mut statement = connection.prepare_cached(&sql).map_err(from_sqlite)?;
    let rows = statement
        .query_map(
            params![query.audience.code(), after.sequence, query.until_sequence.unwrap_or(i64::MAX), query.limit],
            change_item,
        )
        .map_err(from_sqlite)?;
    let items = rows.map(|row| decoded(row.map_err(from_sqlite)?)).collect::<Result<Vec<ChangeItem>, _>>()?;
    let mut next = items.last().map_or(after, |item| item.position.clone());
    if items.len() < query.limit as usize && query.until_sequence.is_none() && !query.latest_only {
        // Caught up: the audience has nothing up to the feed's newest change,
        // so the cursor moves there, and a quiet audience's cursor does not
        // fall behind the horizon that the other audience's retention moves.
        let newest: Option<i64> =
            connection.query_row("SELECT max(sequence) FROM change_feed", [], |row| row.get(0)).map_err(from_sqlite)?;
        let end = FeedPosition { sequence: newest.unwrap_or(0).max(state.horizon), lcc_id: String::new() };
        next = next.max(end);
    }
    // One writer commits in sequence order, so a change is served as soon as it is committed.
    Ok(ChangesRead::Page(ChangePage { model_version: version, items, next, settling: false }))
}

/// The newest retained change of one work of one audience.
pub(super) fn latest_change(
    connection: &Connection,
    audience: Audience,
    lcc_id: &str,
) -> Result<Option<ChangeItem>, StoreError> {
    connection
        .prepare_cached(
            "SELECT sequence, lcc_id, body FROM change_feed WHERE lcc_id = ?1 AND audience = ?2 \
             ORDER BY sequence DESC LIMIT 1",
        )
        .and_then(|mut statement| statement.query_row(params![lcc_id, audience.code()], change_item).optional())
        .map_err(from_sqlite)?
        .map(decoded)
        .transpose()
}

/// The horizon and the oldest and newest retained changes of one audience.
pub(super) fn bounds(
    connection: &Connection,
    version: ModelVersion,
    audience: Audience,
) -> Result<ChangeFeedBounds, StoreError> {
    let state = feed_state(connection)?;
    let end = |order: &str| -> Result<Option<FeedPosition>, StoreError> {
        connection
            .prepare_cached(&format!(
                "SELECT sequence, lcc_id FROM change_feed WHERE audience = ?1 ORDER BY sequence {order} LIMIT 1"
            ))
            .and_then(|mut statement| {
                statement
                    .query_row([audience.code()], |row| Ok(FeedPosition { sequence: row.get(0)?, lcc_id: row.get(1)? }))
                    .optional()
            })
            .map_err(from_sqlite)
    };
    Ok(ChangeFeedBounds { model_version: version, horizon: state.horizon, oldest: end("ASC")?, newest: end("DESC")? })
}

/// A change with its body as served (see [`crate::stored_bodies`]).
fn decoded(item: ChangeItem) -> Result<ChangeItem, StoreError> {
    Ok(ChangeItem { body: item.body.map(stored_bodies::decompress).transpose()?, ..item })
}

fn change_item(row: &rusqlite::Row<'_>) -> rusqlite::Result<ChangeItem> {
    let sequence: i64 = row.get(0)?;
    let body: Option<Body> = row.get(2)?;
    Ok(ChangeItem {
        position: FeedPosition { sequence, lcc_id: row.get(1)? },
        kind: if body.is_some() { ChangeKind::Upsert } else { ChangeKind::Withdrawn },
        version: sequence as u64,
        body,
    })
}
