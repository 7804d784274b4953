//! The bulk export of published works: `page` (from 1) and `limit` (1 to the
//! configured maximum, default 100), a stable order, a total and links.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{json, push_json_array};
use crate::app::App;
use crate::errors::ApiError;
use crate::keys::Scope;

/// The default page size, as the specification's documented request uses.
pub const DEFAULT_LIMIT: u32 = 100;

fn parameter(query: &HashMap<String, String>, name: &str, default: u32, max: u32) -> Result<u32, ApiError> {
    let Some(text) = query.get(name) else { return Ok(default) };
    let value: u32 = text
        .trim()
        .parse()
        .map_err(|_| ApiError::InvalidParameter(format!("{name} must be a whole number from 1 to {max}")))?;
    if value == 0 || value > max {
        return Err(ApiError::InvalidParameter(format!("{name} must be a whole number from 1 to {max}")));
    }
    Ok(value)
}

/// `GET /bulk/works?page=&limit=`.
pub async fn bulk_works(
    State(app): State<Arc<App>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let granted = match app.authorize(&headers, Scope::BulkRead, None) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        let page = parameter(&query, "page", 1, u32::MAX)?;
        let limit = parameter(&query, "limit", DEFAULT_LIMIT, app.settings.bulk_max_limit)?;
        let offset = u64::from(page - 1) * u64::from(limit);
        let rows = app.store.bulk_page(granted.audience(), offset, limit).await?;
        let link = |page: u32| serde_json::json!(app.public_url(&format!("/bulk/works?page={page}&limit={limit}")));
        let last_page = rows.total.div_ceil(u64::from(limit)).max(1);
        let next = if u64::from(page) < last_page { link(page + 1) } else { serde_json::Value::Null };
        let previous = if page > 1 { link(page - 1) } else { serde_json::Value::Null };
        let mut body = format!("{{\"page\":{page},\"limit\":{limit},\"total\":{},\"items\":", rows.total).into_bytes();
        push_json_array(&mut body, &rows.rows);
        body.extend_from_slice(
            format!(",\"links\":{{\"self\":{},\"next\":{next},\"prev\":{previous}}}}}", link(page)).as_bytes(),
        );
        Ok(json(StatusCode::OK, body))
    };
    granted.respond(result.await)
}
