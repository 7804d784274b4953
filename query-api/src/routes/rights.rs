//! Rights profiles: by work identifier, and by ISWC or ISRC.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::documents::RightsProfile;
use read_model::identifiers::{display_iswc, normalize_isrc, normalize_iswc};
use read_model::{Audience, Body, DocumentKind, IdentifierKind};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::parameters::{IdentifierQuery, PathParameters, QueryParameters, WorkPath};
use super::{json, json_of, stored_json_list, work_document};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;

/// The answer of `GET /rights?iswc=` or `?isrc=`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentifierLookup {
    /// The ISWC looked up, printed form (present on ISWC lookups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iswc: Option<String>,
    /// The ISRC looked up, compact form (present on ISRC lookups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isrc: Option<String>,
    pub count: usize,
    /// Every profile registered under the code, in the caller's audience.
    #[schema(value_type = Vec<RightsProfile>)]
    pub results: Vec<Box<RawValue>>,
}

/// `GET /rights/{lccId}`: the stored profile, sent as stored.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights/{lccId}",
    operation_id = "getRightsProfile",
    tag = "Rights",
    summary = "Rights profile of a work",
    description = "Who holds the work, the split ratio of its rights, and whether it is open for licensing.",
    params(WorkPath),
    responses(
        (status = 200, description = "The rights profile.", body = RightsProfile),
        (status = 404, description = "No work has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["rights:read"])),
)]
pub async fn rights_by_id(
    State(app): State<Arc<App>>,
    PathParameters(WorkPath { lcc_id }): PathParameters<WorkPath>,
    credentials: Credentials,
) -> Response {
    rights_profile(&app, &credentials, &lcc_id).await
}

/// The answer of `GET /rights/{lccId}`, whether the router or the direct
/// path (`super::direct`) took the request.
pub(super) async fn rights_profile(app: &App, credentials: &Credentials, lcc_id: &str) -> Response {
    app.answer_authorized(credentials, Scope::RightsRead, Some(lcc_id), async |_| {
        Ok(json(StatusCode::OK, work_document(app, DocumentKind::RightsProfile, lcc_id).await?))
    })
    .await
}

/// `GET /rights?iswc=` or `?isrc=`: every profile of the caller's audience under that code.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights",
    operation_id = "findRightsProfiles",
    tag = "Rights",
    summary = "Rights profiles by ISWC or ISRC",
    description = "Give exactly one of `iswc` or `isrc`. A sandbox key finds sandbox works only, a production key production works only.",
    params(IdentifierQuery),
    responses(
        (status = 200, description = "The profiles registered under the code.", body = IdentifierLookup),
        (status = 400, description = "Both codes or neither, or a code that is not an ISWC or ISRC.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No work is registered under the code.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["rights:read"])),
)]
pub async fn rights_by_identifier(
    State(app): State<Arc<App>>,
    QueryParameters(query): QueryParameters<IdentifierQuery>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::RightsRead, None, async |granted| {
        let (kind, code, shown) = match (&query.iswc, &query.isrc) {
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
        let profiles = profiles_under(&app, kind, &code, &shown, granted.audience()).await?;
        let (iswc, isrc) = match kind {
            IdentifierKind::Iswc => (Some(shown), None),
            IdentifierKind::Isrc => (None, Some(shown)),
        };
        let lookup = IdentifierLookup { iswc, isrc, count: profiles.len(), results: stored_json_list(profiles)? };
        json_of(StatusCode::OK, &lookup)
    })
    .await
}

/// The stored profiles of the caller's audience registered under an ISWC or
/// ISRC (`code` normalized, `shown` as answers print it); 404 when none.
pub(super) async fn profiles_under(
    app: &App,
    kind: IdentifierKind,
    code: &str,
    shown: &str,
    audience: Audience,
) -> Result<Vec<Body>, ApiError> {
    let mut profiles = Vec::new();
    for id in app.store.works_by_identifier(kind, code, audience).await? {
        profiles.extend(app.store.document(DocumentKind::RightsProfile, &id).await?);
    }
    if profiles.is_empty() {
        return Err(ApiError::NotFound(format!("no work is registered under {} {shown}", kind.code().to_uppercase())));
    }
    Ok(profiles)
}
