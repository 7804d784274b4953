//! The change feed on ScyllaDB: its writes in a batch's first phase, its
//! reads, and retention.
//!
//! Changes live in one partition per (audience, day), clustered by
//! (sequence, lccId); `change_feed_days` lists the days, so a read walks
//! from the cursor's day to the next that holds changes and never filters.
//! Every bulk-row write appends a change: without reading the row first the
//! backend cannot tell an unchanged rewrite, and a change applied again is
//! harmless by the version rule. A change's version is the row's write
//! version, which grows with every change of the work whichever projector
//! writes it; `change_feed_heads` keeps each work's newest change by that
//! version.
//!
//! Projectors commit concurrently and their clocks differ, so a change can
//! become visible with a sequence a little older than one already read.
//! Reads therefore stop a settling time before now
//! (`ScyllaSettings::change_feed_settle`, 10 s by default): a change is
//! served only once every change before it has landed, given clocks within
//! that margin.

use std::time::Duration;

use futures_util::FutureExt;
use scylla::client::session::Session;

use super::execution::{Prepared, execute, read_concurrently, select};
use super::statements::{HORIZON_ROW, ModelStatement};
use super::timestamps;
use crate::change_feed::{
    ChangeFeedBounds, ChangeFeedGone, ChangeItem, ChangeKind, ChangePage, ChangeQuery, ChangesRead, FeedPosition,
    SEQUENCE_INDEX_BITS, millisecond_of_sequence, sequence_of_millisecond,
};
use crate::identifiers::Audience;
use crate::records::{ModelVersion, StoreError, WriteVersion};
use crate::store::KeyedWrite;
use crate::stored_bodies;

pub(super) const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Changes read per request while sweeping or skipping superseded changes.
const SCAN_PAGE: i32 = 1_000;

/// The day partition of a sequence.
pub(super) fn day_of(sequence: i64) -> i64 {
    millisecond_of_sequence(sequence).div_euclid(DAY_MS)
}

/// Where a batch's changes go in the feed, and what retention removes.
#[derive(Debug, Clone, Copy)]
pub(super) struct FeedPlacement {
    /// The sequence of the batch's first change.
    pub first_sequence: i64,
    /// Changes committed before this sequence are past retention.
    pub retention_cutoff: Option<i64>,
}

impl FeedPlacement {
    /// The placement of a batch of `rows` changes committed at `now_ms`,
    /// after a process's newest batch, whose millisecond `newest` holds (and
    /// is moved past this batch): a later batch of one process never shares
    /// a sequence with an earlier one, even when the clock steps back.
    pub(super) fn next(newest: &mut i64, rows: usize, now_ms: i64, retention: Option<Duration>) -> FeedPlacement {
        let millisecond = now_ms.max(*newest + 1);
        *newest = millisecond + i64::try_from(rows >> SEQUENCE_INDEX_BITS).unwrap_or(0);
        let retention_cutoff = retention.map(|retention| {
            let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
            sequence_of_millisecond(now_ms.saturating_sub(retention_ms))
        });
        FeedPlacement { first_sequence: sequence_of_millisecond(millisecond), retention_cutoff }
    }
}

/// A `change_feed` row: (sequence, lccId, version, body).
type ChangeRow = (i64, String, i64, Option<Vec<u8>>);

/// A change as served: its body read back from how it is stored (see [`crate::stored_bodies`]).
fn change_item((sequence, lcc_id, version, body): ChangeRow) -> Result<ChangeItem, StoreError> {
    Ok(ChangeItem {
        position: FeedPosition { sequence, lcc_id },
        kind: if body.is_some() { ChangeKind::Upsert } else { ChangeKind::Withdrawn },
        version: u64::try_from(version).unwrap_or(0),
        body: body.map(stored_bodies::decompress).transpose()?,
    })
}

/// The feed's statements on one model version.
#[derive(Debug, Clone, Copy)]
pub(super) struct VersionFeed<'a> {
    pub session: &'a Session,
    pub statements: &'a Prepared<ModelStatement>,
}

impl<'a> VersionFeed<'a> {
    /// Removes the changes that `rows` supersede and that retention has
    /// passed (committed before `cutoff`), reading each work's head before
    /// the batch appends a new one. Returns the newest removed sequence.
    pub(super) async fn remove_superseded(&self, rows: &[KeyedWrite], cutoff: i64) -> Result<Option<i64>, StoreError> {
        let head = self.statements.get(ModelStatement::SelectChangeHead)?;
        let reads = rows
            .iter()
            .map(|write| {
                async move {
                    let heads: Vec<(i64,)> = select(self.session, head, (write.key.as_str(),)).await?;
                    Ok(heads.into_iter().next().map(|(sequence,)| (write, sequence)))
                }
                .boxed()
            })
            .collect();
        let mut newest_removed = None;
        for (write, sequence) in read_concurrently(reads).await?.into_iter().flatten() {
            if sequence < cutoff {
                self.delete(&write.key, sequence, write.version).await?;
                newest_removed = newest_removed.max(Some(sequence));
            }
        }
        Ok(newest_removed)
    }

    async fn delete(&self, lcc_id: &str, sequence: i64, version: WriteVersion) -> Result<(), StoreError> {
        let statement = self.statements.get(ModelStatement::DeleteChange)?;
        let audience = Audience::of(lcc_id).code();
        let timestamp = timestamps::of_write_version(version);
        execute(self.session, statement, (timestamp, audience, day_of(sequence), sequence, lcc_id)).await.map(drop)
    }

    /// Sweeps the days that ended before `cutoff` and after the day
    /// `swept_through` falls in: withdrawals and superseded changes go, and
    /// days left empty leave the list. Returns the newest removed sequence.
    pub(super) async fn sweep(&self, swept_through: i64, cutoff: i64) -> Result<Option<i64>, StoreError> {
        let mut newest_removed = None;
        for audience in [Audience::Production, Audience::Sandbox] {
            for day in self.days(audience).await? {
                if day < day_of(swept_through) || day >= day_of(cutoff) {
                    continue;
                }
                let mut after = FeedPosition { sequence: i64::MIN, lcc_id: String::new() };
                let mut kept = 0usize;
                loop {
                    let rows = self.read_day(audience, day, &after, i64::MAX, SCAN_PAGE).await?;
                    let Some(last) = rows.last() else { break };
                    after = last.position.clone();
                    for item in rows {
                        if item.body.is_none() || !self.is_head(&item).await? {
                            let version = WriteVersion(item.version);
                            self.delete(item.lcc_id(), item.position.sequence, version).await?;
                            newest_removed = newest_removed.max(Some(item.position.sequence));
                        } else {
                            kept += 1;
                        }
                    }
                }
                if kept == 0 {
                    let statement = self.statements.get(ModelStatement::DeleteChangeDay)?;
                    let timestamp = timestamps::of_feed_day((day + 1) * DAY_MS);
                    execute(self.session, statement, (timestamp, audience.code(), day)).await?;
                }
            }
        }
        Ok(newest_removed)
    }

    async fn is_head(&self, item: &ChangeItem) -> Result<bool, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangeHead)?;
        let heads: Vec<(i64,)> = select(self.session, statement, (item.lcc_id(),)).await?;
        Ok(heads.first().is_some_and(|(sequence,)| *sequence == item.position.sequence))
    }

    /// The stored horizon (0 before anything was removed).
    pub(super) async fn horizon(&self) -> Result<i64, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangeHorizon)?;
        let rows: Vec<(i64,)> = select(self.session, statement, (HORIZON_ROW,)).await?;
        Ok(rows.first().map_or(0, |(horizon,)| *horizon))
    }

    /// Raises the horizon; stamped with its millisecond, so a lower one never wins.
    pub(super) async fn raise_horizon(&self, horizon: i64) -> Result<(), StoreError> {
        let statement = self.statements.get(ModelStatement::WriteChangeHorizon)?;
        execute(self.session, statement, (HORIZON_ROW, horizon, timestamps::of_feed_sequence(horizon))).await.map(drop)
    }

    async fn days(&self, audience: Audience) -> Result<Vec<i64>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangeDays)?;
        let rows: Vec<(i64,)> = select(self.session, statement, (audience.code(),)).await?;
        Ok(rows.into_iter().map(|(day,)| day).collect())
    }

    async fn read_day(
        &self,
        audience: Audience,
        day: i64,
        after: &FeedPosition,
        until: i64,
        limit: i32,
    ) -> Result<Vec<ChangeItem>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangesAfter)?;
        let values = (audience.code(), day, after.sequence, after.lcc_id.as_str(), until, limit);
        let rows: Vec<ChangeRow> = select(self.session, statement, values).await?;
        rows.into_iter().map(change_item).collect()
    }

    /// A page of the feed of model version `version`, read at `now_ms`.
    pub(super) async fn changes(
        &self,
        version: ModelVersion,
        query: &ChangeQuery,
        now_ms: i64,
        settle: Duration,
    ) -> Result<ChangesRead, StoreError> {
        let horizon = self.horizon().await?;
        let start = match &query.after {
            None if query.latest_only => FeedPosition { sequence: i64::MIN, lcc_id: String::new() },
            None => FeedPosition { sequence: horizon, lcc_id: String::new() },
            Some((cursor_version, _)) if *cursor_version != version => {
                return Ok(ChangesRead::Gone(ChangeFeedGone::OtherModelVersion { active: version }));
            }
            Some((_, position)) if position.sequence < horizon && !query.latest_only => {
                return Ok(ChangesRead::Gone(ChangeFeedGone::Purged));
            }
            Some((_, position)) => position.clone(),
        };
        let settled = if settle.is_zero() {
            i64::MAX
        } else {
            sequence_of_millisecond(now_ms - i64::try_from(settle.as_millis()).unwrap_or(0)) - 1
        };
        let until = query.until_sequence.map_or(settled, |until| until.min(settled));
        let mut after = start;
        let mut items = Vec::new();
        let wanted = query.limit as usize;
        let days = self.days(query.audience).await?;
        for &day in &days {
            if day < day_of(after.sequence) || day > day_of(until) {
                continue;
            }
            while items.len() < wanted {
                let page =
                    if query.latest_only { SCAN_PAGE } else { i32::try_from(wanted - items.len()).unwrap_or(i32::MAX) };
                let rows = self.read_day(query.audience, day, &after, until, page).await?;
                let exhausted = rows.len() < page as usize;
                for item in rows {
                    if items.len() == wanted {
                        break;
                    }
                    after = item.position.clone();
                    if !query.latest_only || self.is_head(&item).await? {
                        items.push(item);
                    }
                }
                if exhausted {
                    break;
                }
            }
            if items.len() == wanted {
                break;
            }
        }
        let mut settling = false;
        if items.len() < wanted && !query.latest_only && query.until_sequence.is_none() && !settle.is_zero() {
            // Caught up to the settled moment: nothing of the audience lands
            // before it any more, so the cursor moves there, and a quiet
            // audience's cursor does not fall behind the horizon.
            after = after.max(FeedPosition { sequence: until, lcc_id: String::new() });
            settling =
                self.newest_sequence(query.audience, days.last().copied()).await?.is_some_and(|newest| newest > until);
        }
        Ok(ChangesRead::Page(ChangePage { model_version: version, items, next: after, settling }))
    }

    /// The newest change of one work, if retained.
    pub(super) async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<ChangeItem>, StoreError> {
        if Audience::of(lcc_id) != audience {
            return Ok(None);
        }
        let statement = self.statements.get(ModelStatement::SelectChangeHead)?;
        let heads: Vec<(i64,)> = select(self.session, statement, (lcc_id,)).await?;
        let Some((sequence,)) = heads.into_iter().next() else { return Ok(None) };
        let statement = self.statements.get(ModelStatement::SelectChange)?;
        let rows: Vec<ChangeRow> =
            select(self.session, statement, (audience.code(), day_of(sequence), sequence, lcc_id)).await?;
        rows.into_iter().next().map(change_item).transpose()
    }

    /// The sequence of the newest change of `audience` in the day partition `day`.
    async fn newest_sequence(&self, audience: Audience, day: Option<i64>) -> Result<Option<i64>, StoreError> {
        Ok(self.feed_end(ModelStatement::SelectLastChange, audience, day).await?.map(|position| position.sequence))
    }

    /// The first or last change (`statement`) of `audience` in the day partition `day`.
    async fn feed_end(
        &self,
        statement: ModelStatement,
        audience: Audience,
        day: Option<i64>,
    ) -> Result<Option<FeedPosition>, StoreError> {
        let Some(day) = day else { return Ok(None) };
        let rows: Vec<(i64, String)> =
            select(self.session, self.statements.get(statement)?, (audience.code(), day)).await?;
        Ok(rows.into_iter().next().map(|(sequence, lcc_id)| FeedPosition { sequence, lcc_id }))
    }

    pub(super) async fn bounds(
        &self,
        version: ModelVersion,
        audience: Audience,
    ) -> Result<ChangeFeedBounds, StoreError> {
        let days = self.days(audience).await?;
        Ok(ChangeFeedBounds {
            model_version: version,
            horizon: self.horizon().await?,
            oldest: self.feed_end(ModelStatement::SelectFirstChange, audience, days.first().copied()).await?,
            newest: self.feed_end(ModelStatement::SelectLastChange, audience, days.last().copied()).await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_sequence_falls_in_the_day_of_its_millisecond() {
        assert_eq!(day_of(sequence_of_millisecond(0)), 0);
        assert_eq!(day_of(sequence_of_millisecond(DAY_MS - 1) + 5), 0);
        assert_eq!(day_of(sequence_of_millisecond(DAY_MS)), 1);
        assert_eq!(day_of(sequence_of_millisecond(1_764_000_000_000)), 1_764_000_000_000 / DAY_MS);
    }

    #[test]
    fn a_processs_batches_take_growing_sequences_even_when_the_clock_steps_back() {
        let mut newest = 0;
        let first = FeedPlacement::next(&mut newest, 10, 5_000, None);
        assert_eq!(first.first_sequence, sequence_of_millisecond(5_000));
        let same_moment = FeedPlacement::next(&mut newest, 10, 5_000, None);
        assert_eq!(same_moment.first_sequence, sequence_of_millisecond(5_001));
        let clock_back = FeedPlacement::next(&mut newest, 3 << SEQUENCE_INDEX_BITS, 4_000, None);
        assert_eq!(clock_back.first_sequence, sequence_of_millisecond(5_002));
        let after_a_big_batch = FeedPlacement::next(&mut newest, 1, 4_000, None);
        assert_eq!(after_a_big_batch.first_sequence, sequence_of_millisecond(5_006), "a batch past 2^20 rows spans");
        let kept = FeedPlacement::next(&mut newest, 1, 90_000, Some(Duration::from_secs(60)));
        assert_eq!(kept.retention_cutoff, Some(sequence_of_millisecond(30_000)));
    }
}
