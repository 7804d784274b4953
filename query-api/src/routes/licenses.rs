//! License status.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use read_model::DocumentKind;

use super::json;
use crate::app::App;
use crate::errors::ApiError;
use crate::keys::Scope;

/// `GET /licenses/{id}/status`.
pub async fn license_status(State(app): State<Arc<App>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let granted = match app.authorize(&headers, Scope::LicensesRead, Some(&id)) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        let body = app.store.document(DocumentKind::LicenseStatus, &id).await?;
        body.map(|body| json(StatusCode::OK, body)).ok_or_else(|| ApiError::NotFound(format!("no license {id}")))
    };
    granted.respond(result.await)
}
