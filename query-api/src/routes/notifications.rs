//! The notification feed: `GET /notifications?since=&limit=`, every change
//! of an answer a key can read, in commit order, from an opaque cursor (see
//! `read_model::notifications`).
//!
//! A client that holds answers (a rights profile, a verification, a license
//! status) follows the feed and compares each item's tags with the `ETag`s
//! of its copies: a copy whose tag differs is stale and fetched again; one
//! that matches is current, without a request. Each item carries a version
//! that grows per id, so applying an item twice or an older one after a
//! newer changes nothing.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::ModelVersion;
use read_model::calendar::Timestamp;
use read_model::change_feed::{ChangeFeedGone, FeedPosition, millisecond_of_sequence};
use read_model::notifications::{
    Answer, AnswerTags, Notification, NotificationCursor, NotificationItem as StoredItem, NotificationQuery,
    NotificationsRead, Subject,
};
use read_model::{Audience, DocumentReads};
use serde::Serialize;
use utoipa::ToSchema;

use super::changes::{ChangeLinks, limit_of};
use super::json_of;
use super::parameters::{NotificationsQuery, QueryParameters};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::keys::notification_filter::NotificationFilter;

/// One page of the notification feed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationPage {
    /// The notifications, oldest first.
    pub items: Vec<NotificationItem>,
    /// Continue from here (`since=`); present also when the page is empty.
    pub next: String,
    /// Whether the page reached the newest committed notification: poll
    /// again later. False while newer ones are committed but not served yet
    /// (a replicated store serves one once no older one can still land
    /// before it, within seconds).
    pub caught_up: bool,
    pub links: ChangeLinks,
}

/// One notification: which answers of a work or license changed, and the
/// tag of each of its answers now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationItem {
    /// The position of this notification; `since=` it continues after it.
    pub cursor: String,
    /// When the change was recorded.
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: Timestamp,
    /// `work` (a work's answers) or `license` (a license's status).
    pub subject: Subject,
    /// The work's lccId, or the license's id.
    pub id: String,
    /// Grows with every notification of the id: keep the newest of each id.
    pub version: u64,
    /// Whether this change withdrew the work.
    pub withdrawn: bool,
    /// The answers whose content changed.
    pub changed: Vec<Answer>,
    /// The entity tag of each answer of the subject now, changed or not, as
    /// the endpoint serves it in `ETag`: `rights` (`/rights/{lccId}`),
    /// `verification` (`/verify` without `sha256`), `metadata` (`/metadata`
    /// as JSON), `provenance`, `evidence`, `licenseStatus`
    /// (`/licenses/{id}/status`).
    pub tags: AnswerTags,
    /// The IPI name numbers of the parties the work or license names (its
    /// creators and holders, or its licensee), where they have one.
    pub parties: Vec<String>,
}

/// Store pages one read scans for what a filtered key admits before it
/// answers with what it found and the position it reached.
const SCANNED_PAGES: usize = 10;

/// What one read of the feed gives a key: the items its filter admits.
#[derive(Debug)]
pub struct KeyPage {
    pub model_version: ModelVersion,
    pub items: Vec<NotificationItem>,
    /// Where the next read continues.
    pub next: FeedPosition,
    /// Whether the read reached the newest notification served.
    pub exhausted: bool,
    /// Whether it did and none is settling behind it: poll again later.
    pub caught_up: bool,
}

/// Up to `limit` notifications after `after` that `filter` admits (all of
/// the audience's without one), reading at most [`SCANNED_PAGES`] pages of
/// the feed; a cursor that can no longer be continued from is the 410.
pub async fn read_for_key(
    reads: &dyn DocumentReads,
    audience: Audience,
    filter: Option<&NotificationFilter>,
    mut after: Option<(ModelVersion, FeedPosition)>,
    limit: u32,
) -> Result<KeyPage, ApiError> {
    let mut items = Vec::new();
    for _ in 0..SCANNED_PAGES {
        let wanted = limit - items.len() as u32;
        let read = NotificationQuery { audience, after: after.clone(), limit: wanted };
        let page = match reads.notifications(&read).await? {
            NotificationsRead::Page(page) => page,
            NotificationsRead::Gone { gone, model_version, resume_from } => {
                return Err(gone_error(audience, &gone, model_version, resume_from));
            }
        };
        let exhausted = page.items.len() < wanted as usize;
        for stored in page.items {
            let notification = decoded(&stored)?;
            if filter.is_none_or(|filter| filter.admits(&notification)) {
                items.push(served(audience, page.model_version, stored.position, notification));
            }
        }
        after = Some((page.model_version, page.next.clone()));
        if exhausted || items.len() == limit as usize {
            let caught_up = exhausted && !page.settling;
            return Ok(KeyPage { model_version: page.model_version, items, next: page.next, exhausted, caught_up });
        }
    }
    let (model_version, next) = after.expect("a page was read");
    Ok(KeyPage { model_version, items, next, exhausted: false, caught_up: false })
}

/// What a stored notification states.
fn decoded(item: &StoredItem) -> Result<Notification, ApiError> {
    Notification::decode(&item.position.lcc_id, &item.body).ok_or_else(|| {
        tracing::error!(id = item.position.lcc_id, "a stored notification is not one");
        ApiError::Internal
    })
}

/// A notification at `position` as the feed and the stream serve it.
fn served(
    audience: Audience,
    model_version: ModelVersion,
    position: FeedPosition,
    notification: Notification,
) -> NotificationItem {
    NotificationItem {
        recorded_at: Timestamp(millisecond_of_sequence(position.sequence)),
        cursor: NotificationCursor { model_version, audience, position }.encode(),
        subject: notification.subject,
        id: notification.id,
        version: notification.version,
        withdrawn: notification.withdrawn,
        changed: notification.changed,
        tags: notification.tags,
        parties: notification.parties,
    }
}

/// The 410 answer to a cursor that can no longer be continued from.
pub(super) fn gone_error(
    audience: Audience,
    gone: &ChangeFeedGone,
    model_version: ModelVersion,
    resume_from: FeedPosition,
) -> ApiError {
    let reason = match gone {
        ChangeFeedGone::OtherModelVersion { active } => {
            format!("the cursor is of a model version that a rebuild replaced (now {active})")
        }
        ChangeFeedGone::Purged => "notifications after the cursor are no longer retained".to_owned(),
    };
    let resume_from = NotificationCursor { model_version, audience, position: resume_from }.encode();
    ApiError::NotificationsGone { reason, resume_from }
}

/// The cursor of `since`, checked to be of the caller's audience.
pub(super) fn cursor_of(text: Option<&str>, audience: Audience) -> Result<Option<NotificationCursor>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    let cursor = NotificationCursor::decode(text.trim()).map_err(|_| ApiError::InvalidCursor)?;
    if cursor.audience != audience {
        return Err(ApiError::CursorOfAnotherAudience(cursor.audience.code()));
    }
    Ok(Some(cursor))
}

/// `GET /notifications?since=&limit=`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/notifications",
    operation_id = "listNotifications",
    tag = "Notifications",
    summary = "Changes to the answers of works and licenses since a cursor",
    description = "Not in the specification. Every change of the content of an answer a key can read, in commit order: a work's rights profile, verification, metadata, provenance or evidence (a holder, a split, a dispute, a certificate, a party's public name, a withdrawal), and a license's status. Each item names the work or license, which answers changed, and the entity tag of each of its answers now, the `ETag` the endpoint serves: a copy held with another tag is stale. Start without `since` (from the oldest retained notification) and continue from each page's `next`, also when a page is empty. Notifications are kept 30 days by default; an older cursor, or one of a model version replaced by a rebuild, gets 410 with `resumeFrom`: revalidate the answers you hold with `If-None-Match`, then continue from it. A sandbox key reads the sandbox's notifications only; a production key never sees them. The end of a term of protection changes the verification and evidence tags without a change of any record; it is notified when the work is next changed.",
    params(NotificationsQuery),
    responses(
        (status = 200, description = "One page of notifications.", body = NotificationPage),
        (status = 400, description = "`since` is not a notification cursor of this service or of this key's audience, or `limit` is out of range.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The cursor can no longer be continued from; `resumeFrom` is a cursor at the feed's end.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["notifications:read"])),
)]
pub async fn notifications(
    State(app): State<Arc<App>>,
    QueryParameters(query): QueryParameters<NotificationsQuery>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::NotificationsRead, None, async |granted| {
        let audience = granted.audience();
        let limit = limit_of(query.limit.as_deref())?;
        let cursor = cursor_of(query.since.as_deref(), audience)?;
        let after = cursor.map(|cursor| (cursor.model_version, cursor.position));
        let filter = granted.principal.notification_filter.as_deref();
        let page = read_for_key(app.store.as_ref(), audience, filter, after, limit).await?;
        let next = NotificationCursor { model_version: page.model_version, audience, position: page.next }.encode();
        let links = ChangeLinks::of(&app, "/notifications", query.since.as_deref(), limit, &next);
        json_of(StatusCode::OK, &NotificationPage { items: page.items, next, caught_up: page.caught_up, links })
    })
    .await
}
