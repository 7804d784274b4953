//! License status.

use std::sync::Arc;

use super::json;
use super::parameters::{LicensePath, PathParameters};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::DocumentKind;
use read_model::documents::LicenseStatusDocument;

/// `GET /licenses/{id}/status`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/licenses/{id}/status",
    operation_id = "getLicenseStatus",
    tag = "Licenses",
    summary = "Status of a license",
    description = "The kind (`Blanket` or `Individual`), the status and since when, and the validity of a license.",
    params(LicensePath),
    responses(
        (status = 200, description = "The license status.", body = LicenseStatusDocument),
        (status = 404, description = "No license has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["licenses:read"])),
)]
pub async fn license_status(
    State(app): State<Arc<App>>,
    PathParameters(LicensePath { id }): PathParameters<LicensePath>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::LicensesRead, Some(&id), async |_| {
        let body = app.store.document(DocumentKind::LicenseStatus, &id).await?;
        body.map(|body| json(StatusCode::OK, body)).ok_or_else(|| ApiError::NotFound(format!("no license {id}")))
    })
    .await
}
