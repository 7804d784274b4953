//! `GET /keys`: the public keys that verify evidence packages and snapshot
//! manifests, as a JWK Set per audience. Takes no key; limited per client
//! address; a shared cache may keep it for a few minutes.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::Audience;

use super::ClientAddress;
use super::parameters::{KeySetQuery, QueryParameters};
use crate::access::with_rate_headers;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;

/// How long a cache may keep a key set. A new key is published this long
/// (at least) before it signs, so a verifier's cached set always holds it.
pub const KEY_SET_CACHE_CONTROL: &str = "public, max-age=300";

/// `GET /keys`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/keys",
    operation_id = "getSigningKeys",
    tag = "Keys",
    summary = "The keys that verify signed documents",
    description = "A JWK Set (RFC 7517) of Ed25519 public keys (`kty` `OKP`, RFC 8037). Evidence packages and snapshot manifests carry a `signature` member: a detached JWS (RFC 7515, `alg` `EdDSA`) over the RFC 8785 canonical JSON of the document without that member, whose header names one of these keys (`kid`). `status` says whether a key signs now (`active`), is announced or was replaced (`published`), or is `retired` (it signed nothing after `retiredAt`, and what it signed before still verifies). Production and sandbox keys are separate sets: a sandbox document never verifies against the production set. Takes no key; limited per client address.",
    params(KeySetQuery),
    responses(
        (status = 200, description = "The key set.", body = crate::signing::KeySet, content_type = "application/jwk-set+json"),
        (status = 400, description = "`audience` is neither `production` nor `sandbox`.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
)]
pub async fn key_set(
    State(app): State<Arc<App>>,
    ClientAddress(client): ClientAddress,
    query: Result<QueryParameters<KeySetQuery>, ApiError>,
) -> Response {
    let rate = match app.limit_anonymous(&client) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let audience = query.and_then(|QueryParameters(query)| match query.audience.as_deref() {
        None | Some("production") => Ok(Audience::Production),
        Some("sandbox") => Ok(Audience::Sandbox),
        Some(other) => {
            Err(ApiError::InvalidParameter(format!("audience must be `production` or `sandbox`, not {other:?}")))
        }
    });
    let response = match audience {
        Ok(audience) => {
            let mut response = (StatusCode::OK, app.signer.key_set(audience)).into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jwk-set+json"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(KEY_SET_CACHE_CONTROL));
            if let Ok(date) = HeaderValue::from_str(&crate::http_date::format(app.signer.key_sets_changed_at())) {
                headers.insert(header::LAST_MODIFIED, date);
            }
            response
        }
        Err(error) => error.into_response(),
    };
    with_rate_headers(response, &rate)
}
