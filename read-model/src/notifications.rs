//! Notifications: a record, made by the projector in the same write as the
//! documents, of every change of the bytes of an answer a key can read: a
//! work's rights profile, verification, metadata, provenance and evidence,
//! and a license's status.
//!
//! A notification is thin. It names the work or license, which answers
//! changed, and the entity tag each answer of it has now (the tags the API
//! serves, from [`crate::answer_tags`]), so a client that holds a copy
//! knows whether it is stale without fetching it. Its version grows with
//! every notification of the id, so a client that keeps the newest of
//! each id can apply them twice or out of order.
//!
//! The feed orders notifications as the change feed orders changes
//! ([`crate::change_feed`]): a position is a commit sequence and the id,
//! cursors name a model version and an audience, and retention removes
//! what is older than the retention period. Unlike the change feed, no
//! notification is kept past retention: a client that fell behind
//! continues from the feed's end and revalidates the answers it holds with
//! their tags (`If-None-Match`), which costs a `304` for each unchanged one.
//!
//! This module defines the values and the cursor; it must not know how a
//! backend stores them or how HTTP spells a refusal.

use serde::{Deserialize, Serialize};

use crate::change_feed::{self, ChangeFeedGone, FeedPosition, MalformedCursor};
use crate::identifiers::Audience;
use crate::records::{Body, ModelVersion};

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Subject {
    Work,
    License,
}

/// An answer a notification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Answer {
    /// `GET /rights/{lccId}`.
    Rights,
    /// `GET /rights/{lccId}/verify`, without `sha256`.
    Verification,
    /// `GET /rights/{lccId}/metadata`, as JSON.
    Metadata,
    /// `GET /rights/{lccId}/provenance`.
    Provenance,
    /// `GET /rights/{lccId}/evidence`.
    Evidence,
    /// `GET /licenses/{id}/status`.
    LicenseStatus,
}

impl Answer {
    /// A work's answers, in a fixed order.
    pub const OF_A_WORK: [Answer; 5] =
        [Answer::Rights, Answer::Verification, Answer::Metadata, Answer::Provenance, Answer::Evidence];

    /// Every answer, in the order of their bits in a stored notification.
    pub const ALL: [Answer; 6] = [
        Answer::Rights,
        Answer::Verification,
        Answer::Metadata,
        Answer::Provenance,
        Answer::Evidence,
        Answer::LicenseStatus,
    ];

    /// The answer's place in [`Answer::ALL`].
    pub fn index(self) -> usize {
        match self {
            Answer::Rights => 0,
            Answer::Verification => 1,
            Answer::Metadata => 2,
            Answer::Provenance => 3,
            Answer::Evidence => 4,
            Answer::LicenseStatus => 5,
        }
    }

    /// Whether the answer's tag is weak: it is computed at request time
    /// (see [`crate::answer_tags`]).
    pub fn has_weak_tag(self) -> bool {
        matches!(self, Answer::Verification | Answer::Provenance | Answer::Evidence)
    }

    /// The answer's tag with this digest, as the API serves it.
    pub fn tag(self, digest: u128) -> String {
        if self.has_weak_tag() { crate::answer_tags::weak(digest) } else { crate::answer_tags::quoted(digest) }
    }
}

/// The 128-bit digest a tag names: its 32 hexadecimal digits.
pub fn digest_of(tag: &str) -> Option<u128> {
    let hex = tag.strip_prefix("W/").unwrap_or(tag).strip_prefix('"')?.strip_suffix('"')?;
    (hex.len() == 32).then(|| u128::from_str_radix(hex, 16).ok()).flatten()
}

/// The entity tag of each answer of the subject, as the API serves it now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AnswerTags {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rights: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license_status: Option<String>,
}

impl AnswerTags {
    pub fn get(&self, answer: Answer) -> Option<&str> {
        match answer {
            Answer::Rights => self.rights.as_deref(),
            Answer::Verification => self.verification.as_deref(),
            Answer::Metadata => self.metadata.as_deref(),
            Answer::Provenance => self.provenance.as_deref(),
            Answer::Evidence => self.evidence.as_deref(),
            Answer::LicenseStatus => self.license_status.as_deref(),
        }
    }

    pub fn set(&mut self, answer: Answer, tag: String) {
        let slot = match answer {
            Answer::Rights => &mut self.rights,
            Answer::Verification => &mut self.verification,
            Answer::Metadata => &mut self.metadata,
            Answer::Provenance => &mut self.provenance,
            Answer::Evidence => &mut self.evidence,
            Answer::LicenseStatus => &mut self.license_status,
        };
        *slot = Some(tag);
    }
}

/// A notification as the projector records it: the stored body of a feed item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub subject: Subject,
    /// The lccId of a work, or the id of a license.
    pub id: String,
    /// Grows with every notification of the id.
    pub version: u64,
    /// Whether this change withdrew the work.
    pub withdrawn: bool,
    /// The answers whose bytes changed, in a fixed order.
    pub changed: Vec<Answer>,
    /// The tag of every answer of the subject now, changed or not.
    pub tags: AnswerTags,
    /// The IPI name numbers of the parties the subject names (a work's
    /// creators and holders, a license's licensee) that have one, sorted:
    /// what a key limited to given parties is matched on.
    #[serde(default)]
    pub parties: Vec<String>,
}

/// The format byte stored notifications start with.
const STORED_FORMAT: u8 = 1;

impl Notification {
    /// The notification as stored: compact, since a store keeps every one
    /// for the retention period. The id is the feed position's, not
    /// repeated; a tag is its 16-byte digest (its weakness follows from its
    /// answer). Layout: format, flags (bit 0 license, bit 1 withdrawn), the
    /// changed answers' bits, the present tags' bits, the version (LEB128),
    /// each present tag's digest in [`Answer::ALL`] order, the number of
    /// parties and each as a length and its bytes.
    pub fn encode(&self) -> Vec<u8> {
        let flags = u8::from(self.subject == Subject::License) | (u8::from(self.withdrawn) << 1);
        let changed = self.changed.iter().fold(0_u8, |bits, answer| bits | (1 << answer.index()));
        let digests: Vec<(Answer, u128)> =
            Answer::ALL.into_iter().filter_map(|answer| Some((answer, digest_of(self.tags.get(answer)?)?))).collect();
        let present = digests.iter().fold(0_u8, |bits, (answer, _)| bits | (1 << answer.index()));
        let mut bytes = vec![STORED_FORMAT, flags, changed, present];
        let mut version = self.version;
        loop {
            let low = (version & 0x7f) as u8;
            version >>= 7;
            if version == 0 {
                bytes.push(low);
                break;
            }
            bytes.push(low | 0x80);
        }
        for (_, digest) in &digests {
            bytes.extend_from_slice(&digest.to_be_bytes());
        }
        let parties: Vec<&String> = self.parties.iter().filter(|party| party.len() <= usize::from(u8::MAX)).collect();
        bytes.push(u8::try_from(parties.len()).unwrap_or(u8::MAX));
        for party in parties.into_iter().take(usize::from(u8::MAX)) {
            bytes.push(party.len() as u8);
            bytes.extend_from_slice(party.as_bytes());
        }
        bytes
    }

    /// The notification of `id` stored as `bytes`; `None` when they are not one.
    pub fn decode(id: &str, bytes: &[u8]) -> Option<Notification> {
        let (&[format, flags, changed_bits, present], mut rest) = bytes.split_first_chunk::<4>()?;
        if format != STORED_FORMAT {
            return None;
        }
        let mut version = 0_u64;
        for shift in (0..64).step_by(7) {
            let (&byte, tail) = rest.split_first()?;
            rest = tail;
            version |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let mut tags = AnswerTags::default();
        let mut changed = Vec::new();
        for answer in Answer::ALL {
            if present & (1 << answer.index()) != 0 {
                let (digest, tail) = rest.split_first_chunk::<16>()?;
                rest = tail;
                tags.set(answer, answer.tag(u128::from_be_bytes(*digest)));
            }
            if changed_bits & (1 << answer.index()) != 0 {
                changed.push(answer);
            }
        }
        let (&count, mut rest) = rest.split_first()?;
        let mut parties = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let (&length, tail) = rest.split_first()?;
            let (party, tail) = tail.split_at_checked(usize::from(length))?;
            parties.push(String::from_utf8(party.to_vec()).ok()?);
            rest = tail;
        }
        rest.is_empty().then(|| Notification {
            subject: if flags & 1 != 0 { Subject::License } else { Subject::Work },
            id: id.to_owned(),
            version,
            withdrawn: flags & 2 != 0,
            changed,
            tags,
            parties,
        })
    }
}

/// A notification to append, as a batch carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationWrite {
    /// The work or license id; its audience is the id's.
    pub id: String,
    pub version: u64,
    /// The [`Notification`] as stored ([`Notification::encode`]).
    pub body: Body,
}

/// One notification of the feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationItem {
    pub position: FeedPosition,
    /// The [`Notification`] as stored ([`Notification::encode`]).
    pub body: Body,
}

/// A read of the notifications of one audience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationQuery {
    pub audience: Audience,
    /// Read after this position of this model version; when `None`, from
    /// the oldest retained notification.
    pub after: Option<(ModelVersion, FeedPosition)>,
    pub limit: u32,
}

/// What a read of the notifications answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationsRead {
    Page(NotificationPage),
    /// The cursor can no longer be continued from; `resume_from` is the
    /// end of the feed of the active model version.
    Gone {
        gone: ChangeFeedGone,
        model_version: ModelVersion,
        resume_from: FeedPosition,
    },
}

/// One page of notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationPage {
    pub model_version: ModelVersion,
    pub items: Vec<NotificationItem>,
    /// Where the next read continues.
    pub next: FeedPosition,
    /// Whether notifications after `next` are committed but not served yet
    /// (see [`crate::change_feed::ChangePage::settling`]).
    pub settling: bool,
}

/// The format tag notification cursors start with, so that a change feed
/// cursor is never taken for one.
const CURSOR_FORMAT: &str = "n1";

/// A cursor of the notification feed as clients hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationCursor {
    pub model_version: ModelVersion,
    pub audience: Audience,
    pub position: FeedPosition,
}

impl NotificationCursor {
    /// The cursor's text: `n1.` and the base64url (no padding) of
    /// `model.audience.sequence.id`. Clients treat it as opaque.
    pub fn encode(&self) -> String {
        change_feed::encode_cursor(CURSOR_FORMAT, self.model_version, self.audience, &self.position)
    }

    pub fn decode(text: &str) -> Result<NotificationCursor, MalformedCursor> {
        let (model_version, audience, position) = change_feed::decode_cursor(CURSOR_FORMAT, text)?;
        Ok(NotificationCursor { model_version, audience, position })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change_feed::{FeedCursor, sequence_of_millisecond};

    #[test]
    fn cursors_round_trip_and_are_never_change_feed_cursors() {
        let cursor = NotificationCursor {
            model_version: ModelVersion(2),
            audience: Audience::Production,
            position: FeedPosition { sequence: sequence_of_millisecond(1_764_000_000_000) + 3, lcc_id: "LIC-7".into() },
        };
        let text = cursor.encode();
        assert!(text.starts_with("n1."), "{text}");
        assert_eq!(NotificationCursor::decode(&text), Ok(cursor.clone()));
        let change =
            FeedCursor { model_version: cursor.model_version, audience: cursor.audience, position: cursor.position };
        assert_eq!(NotificationCursor::decode(&change.encode()), Err(MalformedCursor));
        assert!(FeedCursor::decode(&text).is_err());
        for bad in ["", "n1", "n1.", "n1.!!", "n1.eC5wLjEuTA"] {
            assert_eq!(NotificationCursor::decode(bad), Err(MalformedCursor), "{bad:?}");
        }
    }

    #[test]
    fn a_notification_names_its_answers_as_the_api_does() {
        let mut tags = AnswerTags::default();
        tags.set(Answer::LicenseStatus, "\"ab\"".into());
        let notification = Notification {
            subject: Subject::License,
            id: "LIC-1".into(),
            version: 3,
            withdrawn: false,
            changed: vec![Answer::LicenseStatus],
            tags,
            parties: vec!["00014107338".into()],
        };
        let json = serde_json::to_string(&notification).expect("json");
        assert_eq!(
            json,
            r#"{"subject":"license","id":"LIC-1","version":3,"withdrawn":false,"changed":["licenseStatus"],"tags":{"licenseStatus":"\"ab\""},"parties":["00014107338"]}"#
        );
        assert_eq!(serde_json::from_str::<Notification>(&json).expect("back"), notification);
    }

    #[test]
    fn stored_notifications_are_compact_and_read_back_as_written() {
        let mut tags = AnswerTags::default();
        for answer in Answer::OF_A_WORK {
            tags.set(answer, answer.tag(u128::from(answer.index() as u8) << 100 | 7));
        }
        let notification = Notification {
            subject: Subject::Work,
            id: "LCC-0000000001".into(),
            version: (3 << 28) | 5,
            withdrawn: true,
            changed: vec![Answer::Rights, Answer::Evidence],
            tags,
            parties: vec!["00014107338".into(), "00099999999".into()],
        };
        let stored = notification.encode();
        assert_eq!(stored.len(), 4 + 5 + 5 * 16 + 1 + 2 * 12, "{stored:?}");
        assert_eq!(Notification::decode("LCC-0000000001", &stored), Some(notification.clone()));
        assert!(notification.tags.verification.as_deref().is_some_and(|tag| tag.starts_with("W/\"")));
        assert!(notification.tags.rights.as_deref().is_some_and(|tag| tag.starts_with('"')));
        for cut in 0..stored.len() {
            assert_eq!(Notification::decode("LCC-0000000001", &stored[..cut]), None, "cut at {cut}");
        }
        assert_eq!(Notification::decode("LCC-0000000001", b"{}"), None);
        assert_eq!(digest_of("\"00\""), None);
        assert_eq!(digest_of(&Answer::Evidence.tag(9)), Some(9));
    }
}
