//! Rights profiles: by work identifier, and by ISWC or ISRC.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use read_model::identifiers::{display_iswc, normalize_isrc, normalize_iswc};
use read_model::{DocumentKind, IdentifierKind};

use super::{json, push_json_array};
use crate::app::App;
use crate::errors::ApiError;
use crate::keys::Scope;

/// `GET /rights/{lccId}`: the stored profile, sent as stored.
pub async fn rights_by_id(State(app): State<Arc<App>>, Path(lcc_id): Path<String>, headers: HeaderMap) -> Response {
    let granted = match app.authorize(&headers, Scope::RightsRead, Some(&lcc_id)) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        let body = app.store.document(DocumentKind::RightsProfile, &lcc_id).await?;
        body.map(|body| json(StatusCode::OK, body)).ok_or_else(|| ApiError::NotFound(format!("no work {lcc_id}")))
    };
    granted.respond(result.await)
}

/// `GET /rights?iswc=` or `?isrc=`: every profile of the caller's audience under that code.
pub async fn rights_by_identifier(
    State(app): State<Arc<App>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let granted = match app.authorize(&headers, Scope::RightsRead, None) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        let (kind, code, shown) = match (query.get("iswc"), query.get("isrc")) {
            (Some(iswc), None) => {
                let code =
                    normalize_iswc(iswc).map_err(|error| ApiError::InvalidParameter(format!("iswc: {error}")))?;
                (IdentifierKind::Iswc, code.clone(), display_iswc(&code))
            }
            (None, Some(isrc)) => {
                let code =
                    normalize_isrc(isrc).map_err(|error| ApiError::InvalidParameter(format!("isrc: {error}")))?;
                (IdentifierKind::Isrc, code.clone(), code)
            }
            _ => {
                return Err(ApiError::InvalidParameter("give exactly one of the query parameters iswc or isrc".into()));
            }
        };
        let ids = app.store.works_by_identifier(kind, &code, granted.audience()).await?;
        let mut results = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Some(body) = app.store.document(DocumentKind::RightsProfile, id).await? {
                results.push(body);
            }
        }
        if results.is_empty() {
            return Err(ApiError::NotFound(format!(
                "no work is registered under {} {shown}",
                kind.code().to_uppercase()
            )));
        }
        // The stored profiles are spliced in as they are, without re-encoding.
        let mut body =
            format!("{{\"{}\":{},\"count\":{},\"results\":", kind.code(), serde_json::json!(shown), results.len())
                .into_bytes();
        push_json_array(&mut body, &results);
        body.push(b'}');
        Ok(json(StatusCode::OK, body))
    };
    granted.respond(result.await)
}
