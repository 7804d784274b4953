//! The bulk export of published works: `page` (from 1) and `limit` (1 to the
//! configured maximum, default 100), a stable order, a total and links.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::documents::BulkRow;
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::parameters::{BulkQuery, QueryParameters};
use super::{json_of, stored_json_list};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;

/// The largest page number, as the OpenAPI document states it (a 32-bit integer).
const MAX_PAGE: u32 = i32::MAX as u32;

/// The default page size, as the specification's documented request uses.
pub const DEFAULT_LIMIT: u32 = 100;

/// One page of the bulk export.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkPage {
    pub page: u32,
    pub limit: u32,
    /// Published works in the caller's audience, over all pages.
    pub total: u64,
    /// Published works, personal data removed, in a stable order.
    #[schema(value_type = Vec<BulkRow>)]
    pub items: Vec<Box<RawValue>>,
    pub links: PageLinks,
}

/// Absolute links to this page and its neighbours (null at either end).
#[derive(Debug, Serialize, ToSchema)]
pub struct PageLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub next: Option<String>,
    pub prev: Option<String>,
}

fn parameter(text: Option<&str>, name: &str, default: u32, max: u32) -> Result<u32, ApiError> {
    let Some(text) = text else { return Ok(default) };
    let invalid = || ApiError::InvalidParameter(format!("{name} must be a whole number from 1 to {max}"));
    let value: u32 = text.trim().parse().map_err(|_| invalid())?;
    if value == 0 || value > max {
        return Err(invalid());
    }
    Ok(value)
}

/// `GET /bulk/works?page=&limit=`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/bulk/works",
    operation_id = "listPublishedWorks",
    tag = "Bulk",
    summary = "Bulk export of published works",
    description = "Open data: published works with personal information removed, in a stable order. Page N costs what page 1 costs. A sandbox key lists sandbox works only; a production key never sees them.",
    params(BulkQuery),
    responses(
        (status = 200, description = "One page of published works.", body = BulkPage),
        (status = 400, description = "`page` or `limit` is not a whole number in range.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["bulk:read"])),
)]
pub async fn bulk_works(
    State(app): State<Arc<App>>,
    QueryParameters(query): QueryParameters<BulkQuery>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::BulkRead, None, async |granted| {
        let page = parameter(query.page.as_deref(), "page", 1, MAX_PAGE)?;
        let limit = parameter(query.limit.as_deref(), "limit", DEFAULT_LIMIT, app.settings.bulk_max_limit)?;
        let offset = u64::from(page - 1) * u64::from(limit);
        let rows = app.store.bulk_page(granted.audience(), offset, limit).await?;
        let link = |page: u32| app.public_url(&format!("/bulk/works?page={page}&limit={limit}"));
        let last_page = rows.total.div_ceil(u64::from(limit)).max(1);
        let links = PageLinks {
            this: link(page),
            next: (u64::from(page) < last_page).then(|| link(page + 1)),
            prev: (page > 1).then(|| link(page - 1)),
        };
        json_of(
            StatusCode::OK,
            &BulkPage { page, limit, total: rows.total, items: stored_json_list(rows.rows)?, links },
        )
    })
    .await
}
