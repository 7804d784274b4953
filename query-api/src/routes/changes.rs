//! The change feed: `GET /bulk/changes?since=&limit=`, every change of a
//! published work's bulk row in commit order, withdrawals included, from an
//! opaque cursor (see `read_model::change_feed`).
//!
//! A client copies the catalogue from a snapshot, then follows the feed from
//! the snapshot's cursor, applying each item: an upsert replaces the work's
//! row, a withdrawal removes it. Each item carries the work's version, so
//! applying an item twice or an older one after a newer changes nothing.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::Audience;
use read_model::calendar::Timestamp;
use read_model::change_feed::{ChangeFeedGone, ChangeQuery, ChangesRead, FeedCursor};
use read_model::documents::BulkRow;
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::json_of;
use super::parameters::{ChangesQuery, QueryParameters};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;

/// The default and largest page sizes.
pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;

/// One page of the change feed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangePage {
    /// The changes, oldest first.
    pub items: Vec<ChangeItem>,
    /// Continue from here (`since=`); present also when the page is empty.
    pub next: String,
    /// Whether the page reached the newest committed change: poll again
    /// later. False while newer changes are committed but not served yet (a
    /// replicated store serves a change once no older one can still land
    /// before it, within seconds): poll again in a moment.
    pub caught_up: bool,
    pub links: ChangeLinks,
}

/// One change of a work's public record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeItem {
    /// The position of this change; `since=` it continues after it.
    pub cursor: String,
    pub lcc_id: String,
    /// `upsert` (published or changed: `row` is the work's new bulk row) or
    /// `withdrawn` (no longer published: remove the row).
    #[schema(pattern = "^(upsert|withdrawn)$")]
    pub kind: &'static str,
    /// Grows with every change of the work: keep the item with the highest
    /// version of each work.
    pub version: u64,
    /// When the change was committed.
    #[schema(value_type = String, format = DateTime)]
    pub changed_at: Timestamp,
    /// The bulk row exactly as `/bulk/works` serves it; absent when withdrawn.
    #[schema(value_type = Option<BulkRow>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<Box<RawValue>>,
}

/// Absolute links to this page and the next.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub next: String,
}

impl ChangeLinks {
    /// The links of a page of the feed at `path` read `since` a cursor, continuing at `next`.
    pub(super) fn of(app: &App, path: &str, since: Option<&str>, limit: u32, next: &str) -> ChangeLinks {
        let link = |since: Option<&str>| {
            let since = since.map(|since| format!("since={since}&")).unwrap_or_default();
            app.public_url(&format!("{path}?{since}limit={limit}"))
        };
        ChangeLinks { this: link(since.map(str::trim)), next: link(Some(next)) }
    }
}

pub(super) fn limit_of(text: Option<&str>) -> Result<u32, ApiError> {
    let Some(text) = text else { return Ok(DEFAULT_LIMIT) };
    let invalid = || ApiError::InvalidParameter(format!("limit must be a whole number from 1 to {MAX_LIMIT}"));
    let value: u32 = text.trim().parse().map_err(|_| invalid())?;
    if value == 0 || value > MAX_LIMIT {
        return Err(invalid());
    }
    Ok(value)
}

/// The cursor of `since`, checked to be of the caller's audience.
fn cursor_of(text: Option<&str>, audience: Audience) -> Result<Option<FeedCursor>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    let cursor = FeedCursor::decode(text.trim()).map_err(|_| ApiError::InvalidCursor)?;
    if cursor.audience != audience {
        return Err(ApiError::CursorOfAnotherAudience(cursor.audience.code()));
    }
    Ok(Some(cursor))
}

/// `GET /bulk/changes?since=&limit=`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/bulk/changes",
    operation_id = "listChanges",
    tag = "Bulk",
    summary = "Changes to published works since a cursor",
    description = "Every change to a work's bulk row in commit order: publication, amendment, a party rename that reaches the row, and withdrawal (an item of its own). Start from a snapshot's `changesCursor` (or without `since`, from the oldest retained change) and continue from each page's `next`, also when a page is empty. A page from deep in the feed costs what the first costs. Changes are kept 30 days by default; an older cursor, or one of a model version replaced by a rebuild, gets 410 with a link to the newest snapshot. A sandbox key reads the sandbox works' changes only; a production key never sees them.",
    params(ChangesQuery),
    responses(
        (status = 200, description = "One page of changes.", body = ChangePage),
        (status = 400, description = "`since` is not a cursor of this service or of this key's audience, or `limit` is out of range.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The cursor can no longer be continued from; `snapshot` links the newest snapshot.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["bulk:read"])),
)]
pub async fn changes(
    State(app): State<Arc<App>>,
    QueryParameters(query): QueryParameters<ChangesQuery>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::BulkRead, None, async |granted| {
        let audience = granted.audience();
        let limit = limit_of(query.limit.as_deref())?;
        let cursor = cursor_of(query.since.as_deref(), audience)?;
        let read = ChangeQuery {
            audience,
            after: cursor.map(|cursor| (cursor.model_version, cursor.position)),
            until_sequence: None,
            limit,
            latest_only: false,
        };
        let page = match app.store.changes(&read).await? {
            ChangesRead::Page(page) => page,
            ChangesRead::Gone(gone) => return Err(gone_error(&app, audience, &gone)),
        };
        let cursor_at = |position| FeedCursor { model_version: page.model_version, audience, position }.encode();
        let items = page
            .items
            .into_iter()
            .map(|item| {
                let changed_at = Timestamp(item.committed_at_ms());
                Ok(ChangeItem {
                    kind: item.kind.code(),
                    version: item.version,
                    changed_at,
                    row: item.body.map(super::stored_json).transpose()?,
                    lcc_id: item.position.lcc_id.clone(),
                    cursor: cursor_at(item.position),
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let next = cursor_at(page.next);
        let links = ChangeLinks::of(&app, "/bulk/changes", query.since.as_deref(), limit, &next);
        let caught_up = items.len() < limit as usize && !page.settling;
        json_of(StatusCode::OK, &ChangePage { items, next, caught_up, links })
    })
    .await
}

/// The 410 answer, linking the newest snapshot of the audience.
fn gone_error(app: &App, audience: Audience, gone: &ChangeFeedGone) -> ApiError {
    let reason = match gone {
        ChangeFeedGone::OtherModelVersion { active } => {
            format!("the cursor is of a model version that a rebuild replaced (now {active})")
        }
        ChangeFeedGone::Purged => "changes after the cursor are no longer retained".to_owned(),
    };
    let snapshot = app
        .snapshots
        .latest(audience)
        .map(|manifest| app.public_url(&format!("/bulk/snapshots/{}", manifest.snapshot_id)));
    ApiError::ChangesGone { reason, snapshot }
}

#[cfg(test)]
mod tests {
    use read_model::ModelVersion;
    use read_model::change_feed::FeedPosition;

    use super::*;

    #[test]
    fn limits_outside_one_to_a_thousand_are_refused() {
        assert_eq!(limit_of(None).ok(), Some(DEFAULT_LIMIT));
        assert_eq!(limit_of(Some("1000")).ok(), Some(1_000));
        for bad in ["0", "1001", "-1", "ten", ""] {
            assert!(matches!(limit_of(Some(bad)), Err(ApiError::InvalidParameter(_))), "{bad:?}");
        }
    }

    #[test]
    fn a_cursor_of_the_other_audience_is_refused_by_name() {
        let sandbox = FeedCursor {
            model_version: ModelVersion(1),
            audience: Audience::Sandbox,
            position: FeedPosition { sequence: 5, lcc_id: "SANDBOX-LCC-1".into() },
        };
        let text = sandbox.encode();
        assert_eq!(cursor_of(Some(&text), Audience::Sandbox).ok().flatten(), Some(sandbox));
        assert!(matches!(
            cursor_of(Some(&text), Audience::Production),
            Err(ApiError::CursorOfAnotherAudience("sandbox"))
        ));
        assert!(matches!(cursor_of(Some("c1.bad!"), Audience::Production), Err(ApiError::InvalidCursor)));
    }
}
