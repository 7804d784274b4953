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

use crate::base64url;
use crate::change_feed::{ChangeFeedGone, FeedPosition, MalformedCursor};
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

/// A notification to append, as a batch carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationWrite {
    /// The work or license id; its audience is the id's.
    pub id: String,
    pub version: u64,
    /// The [`Notification`] as JSON.
    pub body: Body,
}

/// One notification of the feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationItem {
    pub position: FeedPosition,
    /// The [`Notification`] as JSON.
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
        let audience = match self.audience {
            Audience::Production => "p",
            Audience::Sandbox => "s",
        };
        let inner = format!("{}.{audience}.{}.{}", self.model_version.0, self.position.sequence, self.position.lcc_id);
        format!("{CURSOR_FORMAT}.{}", base64url::encode(inner.as_bytes()))
    }

    pub fn decode(text: &str) -> Result<NotificationCursor, MalformedCursor> {
        let encoded =
            text.strip_prefix(CURSOR_FORMAT).and_then(|rest| rest.strip_prefix('.')).ok_or(MalformedCursor)?;
        let inner =
            String::from_utf8(base64url::decode(encoded).ok_or(MalformedCursor)?).map_err(|_| MalformedCursor)?;
        let mut parts = inner.splitn(4, '.');
        let mut next = || parts.next().ok_or(MalformedCursor);
        let model_version = next()?.parse().map(ModelVersion).map_err(|_| MalformedCursor)?;
        let audience = match next()? {
            "p" => Audience::Production,
            "s" => Audience::Sandbox,
            _ => return Err(MalformedCursor),
        };
        let sequence: i64 = next()?.parse().map_err(|_| MalformedCursor)?;
        let id = next()?.to_owned();
        if sequence < 0 || id.chars().any(char::is_control) {
            return Err(MalformedCursor);
        }
        Ok(NotificationCursor { model_version, audience, position: FeedPosition { sequence, lcc_id: id } })
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
}
