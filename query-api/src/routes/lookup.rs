//! `POST /rights/lookup`: up to 100 identifiers in one request, each answered
//! as its own lookup would be.
//!
//! Each identifier counts as one request against the caller's quota, taken
//! all at once before any store read: a batch larger than what is left is
//! refused whole. The answer is 200 whenever the body could be read; each
//! result carries its own status and, where it failed, its problem. A
//! profile is embedded as stored, so a batch of one holds the bytes a single
//! lookup sends.

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use read_model::documents::RightsProfile;
use read_model::identifiers::{SANDBOX_PREFIX, display_iswc, normalize_isrc, normalize_iswc};
use read_model::{Audience, DocumentKind, IdentifierKind};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::rights::profiles_under;
use super::{json_body, json_of, stored_json, stored_json_list, work_document};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::{ApiError, Problem};
use crate::keys::{KeyKind, Scope};

/// The most identifiers one request may name.
pub const MAX_IDENTIFIERS: usize = 100;

/// The body of `POST /rights/lookup`: identifiers of any of the three kinds.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({ "lccIds": ["SANDBOX-LCC-0003"], "iswcs": ["T-900.000.001-1"], "isrcs": ["QZSB12500002"] }))]
pub struct LookupRequest {
    /// Work identifiers.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub lcc_ids: Vec<String>,
    /// ISWCs, printed or compact.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub iswcs: Vec<String>,
    /// ISRCs, compact or hyphenated.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub isrcs: Vec<String>,
}

/// The answer: one result per identifier, `lccIds` first, then `iswcs`,
/// then `isrcs`, each in the order given.
#[derive(Debug, Serialize, ToSchema)]
pub struct LookupResults {
    pub count: usize,
    pub results: Vec<LookupResult>,
}

/// The answer for one identifier.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LookupResult {
    /// The identifier as given (one of the three is present).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lcc_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iswc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isrc: Option<String>,
    /// What its own lookup would answer: 200, 400, 403 or 404.
    pub status: u16,
    /// With an `lccId` found: its rights profile, as `GET /rights/{lccId}` sends it.
    #[schema(value_type = Option<RightsProfile>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Box<RawValue>>,
    /// With an ISWC or ISRC found: every profile registered under it, as `GET /rights?…` lists them.
    #[schema(value_type = Option<Vec<RightsProfile>>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<Vec<Box<RawValue>>>,
    /// Where it failed: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

/// One identifier of a request, by kind.
#[derive(Debug, Clone)]
enum Identifier {
    LccId(String),
    Iswc(String),
    Isrc(String),
}

impl LookupRequest {
    fn identifiers(self) -> Vec<Identifier> {
        let lcc_ids = self.lcc_ids.into_iter().map(Identifier::LccId);
        let iswcs = self.iswcs.into_iter().map(Identifier::Iswc);
        lcc_ids.chain(iswcs).chain(self.isrcs.into_iter().map(Identifier::Isrc)).collect()
    }
}

/// The identifiers of a body, or why the body is refused.
fn read_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Vec<Identifier>, ApiError> {
    let body = json_body(headers, body)?;
    let request: LookupRequest = serde_json::from_slice(&body).map_err(|error| {
        ApiError::InvalidParameter(format!(
            "the body must be a JSON object with arrays of strings lccIds, iswcs and isrcs: {error}"
        ))
    })?;
    let identifiers = request.identifiers();
    if identifiers.is_empty() || identifiers.len() > MAX_IDENTIFIERS {
        return Err(ApiError::InvalidParameter(format!(
            "name from 1 to {MAX_IDENTIFIERS} identifiers; this body names {}",
            identifiers.len()
        )));
    }
    Ok(identifiers)
}

/// `POST /rights/lookup`.
#[utoipa::path(
    post,
    context_path = BASE_PATH,
    path = "/rights/lookup",
    operation_id = "lookupRightsProfiles",
    tag = "Rights",
    summary = "Rights profiles of up to 100 identifiers at once",
    description = "Name up to 100 identifiers in any mix of `lccIds`, `iswcs` and `isrcs`. Each gets its own result, in the order `lccIds`, `iswcs`, `isrcs` as given, with the status and body its own lookup would have (200 with the profile or profiles; 400, 403 or 404 with a problem). The request is 200 unless the body itself is bad. Each identifier counts as one request against the key's limit, taken at once: a batch larger than the quota left is refused whole with 429, and one larger than the key's whole limit with 429 `batch_over_quota`. A sandbox key finds sandbox works only.",
    request_body(content = LookupRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "One result per identifier.", body = LookupResults),
        (status = 400, description = "The body is not JSON of this shape, or names no identifier or more than 100.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is larger than 4 KiB.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not `application/json`.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["rights:read"])),
)]
pub async fn lookup(
    State(app): State<Arc<App>>,
    credentials: Credentials,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let identifiers = read_body(&headers, body);
    // A body that cannot be read counts as one request, like any other.
    let cost = identifiers.as_ref().map_or(1, Vec::len);
    let cost = NonZeroU32::new(u32::try_from(cost).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
    app.answer_authorized_costing(&credentials, Scope::RightsRead, None, cost, async |granted| {
        let identifiers = identifiers?;
        let mut results = Vec::with_capacity(identifiers.len());
        for identifier in identifiers {
            results.push(look_up(&app, granted.principal.kind, granted.audience(), identifier).await?);
        }
        json_of(StatusCode::OK, &LookupResults { count: results.len(), results })
    })
    .await
}

/// One identifier's result. Store failures fail the whole request (503), as
/// they would fail a single lookup.
async fn look_up(
    app: &App,
    kind: KeyKind,
    audience: Audience,
    identifier: Identifier,
) -> Result<LookupResult, ApiError> {
    let mut result = LookupResult {
        lcc_id: None,
        iswc: None,
        isrc: None,
        status: 200,
        profile: None,
        profiles: None,
        problem: None,
    };
    let answer = match identifier {
        Identifier::LccId(lcc_id) => {
            let answer = profile(app, kind, &lcc_id).await;
            result.lcc_id = Some(lcc_id);
            answer.map(|body| result.profile = Some(body))
        }
        Identifier::Iswc(iswc) => {
            let answer = match normalize_iswc(&iswc) {
                Ok(code) => profiles(app, IdentifierKind::Iswc, &code, &display_iswc(&code), audience).await,
                Err(error) => Err(ApiError::InvalidParameter(format!("iswc: {error}"))),
            };
            result.iswc = Some(iswc);
            answer.map(|bodies| result.profiles = Some(bodies))
        }
        Identifier::Isrc(isrc) => {
            let answer = match normalize_isrc(&isrc) {
                Ok(code) => profiles(app, IdentifierKind::Isrc, &code, &code, audience).await,
                Err(error) => Err(ApiError::InvalidParameter(format!("isrc: {error}"))),
            };
            result.isrc = Some(isrc);
            answer.map(|bodies| result.profiles = Some(bodies))
        }
    };
    match answer {
        Ok(()) => Ok(result),
        Err(error @ (ApiError::Unavailable | ApiError::Internal)) => Err(error),
        Err(error) => {
            result.status = error.status().as_u16();
            result.problem = Some(error.problem());
            Ok(result)
        }
    }
}

async fn profile(app: &App, kind: KeyKind, lcc_id: &str) -> Result<Box<RawValue>, ApiError> {
    if kind == KeyKind::Sandbox && !lcc_id.starts_with(SANDBOX_PREFIX) {
        return Err(ApiError::SandboxKeyOnProductionRecord);
    }
    stored_json(work_document(app, DocumentKind::RightsProfile, lcc_id).await?)
}

async fn profiles(
    app: &App,
    kind: IdentifierKind,
    code: &str,
    shown: &str,
    audience: Audience,
) -> Result<Vec<Box<RawValue>>, ApiError> {
    stored_json_list(profiles_under(app, kind, code, shown, audience).await?)
}
