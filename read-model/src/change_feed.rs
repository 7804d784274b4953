//! The change feed: every change of a work's bulk row, in commit order, as
//! the values the store port carries, and the cursor clients hold.
//!
//! A change is recorded by the store in the same write as the bulk row it
//! describes, so the feed and the export never disagree. Its position is a
//! sequence that encodes the commit time: the milliseconds since the epoch
//! shifted left by [`SEQUENCE_INDEX_BITS`], plus the change's index within
//! its write. Positions therefore order changes by commit, and a time is a
//! position too (OAI-PMH harvests by date). Two writers that commit in the
//! same millisecond (ScyllaDB's projectors, one per partition) can produce
//! one sequence twice, so a position also names the work, and positions
//! order by (sequence, lccId).
//!
//! Retention removes changes older than the retention period, except the
//! newest change of a work that is still published. The store keeps a
//! horizon, the newest position it has removed: a cursor is good while
//! every change after it is retained, so cursors behind the horizon are
//! refused, and a read without a cursor starts at the horizon (a client
//! starts from a snapshot, which holds everything before it). The newest
//! changes kept behind the horizon serve the reads of current records
//! ([`ChangeQuery::latest_only`], what OAI-PMH lists), which start at the
//! very beginning: every published work is there.
//!
//! This module must not know how HTTP spells a cursor's refusal; it only
//! encodes cursors and defines what a read answers.

use std::time::Duration;

use crate::base64url;
use crate::identifiers::Audience;
use crate::records::{Body, ModelVersion};

/// Bits of a sequence that number the changes within one commit's millisecond.
pub const SEQUENCE_INDEX_BITS: u32 = 20;

/// How long changes are kept by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The latest millisecond a sequence can name (in the year 2248).
const LAST_MILLISECOND: i64 = i64::MAX >> SEQUENCE_INDEX_BITS;

/// The first sequence of a millisecond; times before 1970 or after
/// [`LAST_MILLISECOND`] are clamped to the range.
pub fn sequence_of_millisecond(unix_ms: i64) -> i64 {
    unix_ms.clamp(0, LAST_MILLISECOND) << SEQUENCE_INDEX_BITS
}

/// The commit millisecond of a sequence.
pub fn millisecond_of_sequence(sequence: i64) -> i64 {
    sequence >> SEQUENCE_INDEX_BITS
}

/// A place in the feed: a change's, or the gap before the first one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeedPosition {
    pub sequence: i64,
    /// The work of the change; empty for a position before every change of
    /// its sequence.
    pub lcc_id: String,
}

impl FeedPosition {
    /// The position just before every change committed at or after `unix_ms`.
    pub fn before_millisecond(unix_ms: i64) -> FeedPosition {
        FeedPosition { sequence: sequence_of_millisecond(unix_ms), lcc_id: String::new() }
    }
}

/// What happened to a work's public record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// Published or changed: the item carries the bulk row.
    Upsert,
    /// No longer published: the row left the export.
    Withdrawn,
}

impl ChangeKind {
    /// The kind as the API names it.
    pub fn code(self) -> &'static str {
        match self {
            ChangeKind::Upsert => "upsert",
            ChangeKind::Withdrawn => "withdrawn",
        }
    }
}

/// One change of the feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeItem {
    pub position: FeedPosition,
    pub kind: ChangeKind,
    /// Grows with every change of the work: a client keeps the item with the
    /// highest version of each work, so applying an item twice, or an older
    /// one after a newer, changes nothing.
    pub version: u64,
    /// The bulk row exactly as the export serves it; `None` when withdrawn.
    pub body: Option<Body>,
}

impl ChangeItem {
    pub fn lcc_id(&self) -> &str {
        &self.position.lcc_id
    }

    /// When the change was committed, in milliseconds since the epoch.
    pub fn committed_at_ms(&self) -> i64 {
        millisecond_of_sequence(self.position.sequence)
    }
}

/// A read of the feed of one audience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeQuery {
    pub audience: Audience,
    /// Read changes after this position of this model version; when `None`,
    /// from the horizon (or, with `latest_only`, from the very beginning).
    pub after: Option<(ModelVersion, FeedPosition)>,
    /// Read no change with a later sequence.
    pub until_sequence: Option<i64>,
    pub limit: u32,
    /// Only the newest change of each work, the current records (what
    /// OAI-PMH lists): a change that a later one of the same work
    /// supersedes is skipped. Such a read lists records rather than
    /// changes, so what retention removed behind its position does not
    /// make it gone; deletions are kept for the retention period only.
    pub latest_only: bool,
}

/// What a read of the feed answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangesRead {
    Page(ChangePage),
    /// The cursor can no longer be continued from.
    Gone(ChangeFeedGone),
}

/// One page of changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangePage {
    /// The model version the page was read from; cursors name it.
    pub model_version: ModelVersion,
    pub items: Vec<ChangeItem>,
    /// Where the next read continues: after the last item, or where this
    /// read started when it found none.
    pub next: FeedPosition,
    /// Whether changes after `next` are committed but not served yet: a
    /// store whose writers commit concurrently serves a change only once no
    /// older one can still land before it (the CQL backend's settling
    /// time), so a reader that wants everything committed polls again soon.
    pub settling: bool,
}

/// Why a cursor can no longer be continued from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeFeedGone {
    /// The cursor is of a model version that is no longer the active one.
    OtherModelVersion { active: ModelVersion },
    /// Changes after the cursor were removed by retention (or the cursor was
    /// never a position of this feed).
    Purged,
}

/// The extent of one audience's feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeFeedBounds {
    pub model_version: ModelVersion,
    /// The newest removed position: cursors behind it are gone.
    pub horizon: i64,
    /// The oldest and newest retained changes of the audience, if any.
    pub oldest: Option<FeedPosition>,
    pub newest: Option<FeedPosition>,
}

impl ChangeFeedBounds {
    /// Where a reader that has every change of the audience so far
    /// continues: after its newest change, or after the horizon when that is
    /// later (retention in the other audience moved it), so that the
    /// position is never behind the horizon.
    pub fn continue_from(&self) -> FeedPosition {
        let horizon = FeedPosition { sequence: self.horizon, lcc_id: String::new() };
        self.newest.clone().filter(|newest| *newest > horizon).unwrap_or(horizon)
    }
}

/// A cursor as clients hold it: a position of one audience's feed in one
/// model version, encoded URL-safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCursor {
    pub model_version: ModelVersion,
    pub audience: Audience,
    pub position: FeedPosition,
}

/// Why a text is not a cursor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the cursor is not one this service issued; continue from a cursor a page returned")]
pub struct MalformedCursor;

/// The format tag cursors start with, so that a later format can be told apart.
const CURSOR_FORMAT: &str = "c1";

impl FeedCursor {
    /// The cursor's text: `c1.` and the base64url (no padding) of
    /// `model.audience.sequence.lccId`. Clients treat it as opaque.
    pub fn encode(&self) -> String {
        encode_cursor(CURSOR_FORMAT, self.model_version, self.audience, &self.position)
    }

    pub fn decode(text: &str) -> Result<FeedCursor, MalformedCursor> {
        let (model_version, audience, position) = decode_cursor(CURSOR_FORMAT, text)?;
        Ok(FeedCursor { model_version, audience, position })
    }
}

/// The text of a cursor of the feed whose cursors start with `format`:
/// `format.` and the base64url (no padding) of `model.audience.sequence.id`.
pub(crate) fn encode_cursor(
    format: &str,
    model_version: ModelVersion,
    audience: Audience,
    position: &FeedPosition,
) -> String {
    let audience = match audience {
        Audience::Production => "p",
        Audience::Sandbox => "s",
    };
    let inner = format!("{}.{audience}.{}.{}", model_version.0, position.sequence, position.lcc_id);
    format!("{format}.{}", base64url::encode(inner.as_bytes()))
}

/// What [`encode_cursor`] encoded with `format`.
pub(crate) fn decode_cursor(
    format: &str,
    text: &str,
) -> Result<(ModelVersion, Audience, FeedPosition), MalformedCursor> {
    let encoded = text.strip_prefix(format).and_then(|rest| rest.strip_prefix('.')).ok_or(MalformedCursor)?;
    let inner = String::from_utf8(base64url::decode(encoded).ok_or(MalformedCursor)?).map_err(|_| MalformedCursor)?;
    let mut parts = inner.splitn(4, '.');
    let mut next = || parts.next().ok_or(MalformedCursor);
    let model_version = next()?.parse().map(ModelVersion).map_err(|_| MalformedCursor)?;
    let audience = match next()? {
        "p" => Audience::Production,
        "s" => Audience::Sandbox,
        _ => return Err(MalformedCursor),
    };
    let sequence: i64 = next()?.parse().map_err(|_| MalformedCursor)?;
    let lcc_id = next()?.to_owned();
    if sequence < 0 || lcc_id.chars().any(char::is_control) {
        return Err(MalformedCursor);
    }
    Ok((model_version, audience, FeedPosition { sequence, lcc_id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let cursor = FeedCursor {
            model_version: ModelVersion(3),
            audience: Audience::Sandbox,
            position: FeedPosition {
                sequence: sequence_of_millisecond(1_764_000_000_000) + 7,
                lcc_id: "SANDBOX-LCC-1".into(),
            },
        };
        let text = cursor.encode();
        assert!(text.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte)), "{text}");
        assert_eq!(FeedCursor::decode(&text), Ok(cursor));
        for bad in ["", "c1", "c1.", "c2.MQ", "c1.!!", "c1.MS5wLjE", "c1.MS54LjEuTENDLTE", "c1.eC5wLjEuTA"] {
            assert_eq!(FeedCursor::decode(bad), Err(MalformedCursor), "{bad:?}");
        }
    }

    #[test]
    fn sequences_order_by_commit_time_and_carry_it() {
        let early = sequence_of_millisecond(1_000);
        assert!(early + (1 << SEQUENCE_INDEX_BITS) - 1 < sequence_of_millisecond(1_001));
        assert_eq!(millisecond_of_sequence(early + 12), 1_000);
        assert!(sequence_of_millisecond(32_503_680_000_000) > sequence_of_millisecond(4_102_444_800_000), "year 3000");
        assert_eq!(sequence_of_millisecond(-5), 0);
        assert!(FeedPosition::before_millisecond(1_000) < FeedPosition { sequence: early, lcc_id: "A".into() });
    }
}
