//! The sandbox: the fixture catalogue and self-service key registration.
//! Neither takes a key; both are limited per client address.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::calendar::Timestamp;
use read_model::documents::SandboxFixture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::{ClientAddress, json_body, json_of, stored_json_list};
use crate::access::with_rate_headers;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;

/// What sandbox data is and the legal basis it is provided under, as the
/// specification states it; said wherever sandbox data is described.
pub const SIMULATED_DATA_NOTICE: &str = "Simulated data, not a record of the registry: provided under Decree \
     277/2026, Article 7(5).";

/// The answer of `GET /sandbox/fixtures`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FixtureCatalogue {
    /// What the fixtures are and the legal basis they are provided under.
    #[schema(examples("Simulated data, not a record of the registry: provided under Decree 277/2026, Article 7(5)."))]
    pub notice: &'static str,
    pub count: usize,
    #[schema(value_type = Vec<SandboxFixture>)]
    pub fixtures: Vec<Box<RawValue>>,
}

/// `GET /sandbox/fixtures`: every sandbox record with the scenarios it shows.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/sandbox/fixtures",
    operation_id = "listSandboxFixtures",
    tag = "Sandbox",
    summary = "Sandbox test identifiers",
    description = "Every sandbox work and license id, with the scenarios it demonstrates and, for works, the ISWC and ISRCs to try. All of it is simulated data, provided under Decree 277/2026, Article 7(5), as `notice` says. Takes no key; limited per client address.",
    responses(
        (status = 200, description = "The fixture catalogue.", body = FixtureCatalogue),
    ),
)]
pub async fn fixtures(State(app): State<Arc<App>>, ClientAddress(client): ClientAddress) -> Response {
    let rate = match app.limit_anonymous(&client) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let result = async {
        let fixtures = stored_json_list(app.store.sandbox_fixtures().await?)?;
        json_of(StatusCode::OK, &FixtureCatalogue { notice: SIMULATED_DATA_NOTICE, count: fixtures.len(), fixtures })
    };
    with_rate_headers(result.await.unwrap_or_else(IntoResponse::into_response), &rate)
}

/// The body of `POST /sandbox/register`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// The requester's e-mail address. It is checked for shape and not stored.
    #[schema(format = Email, max_length = 254, examples("developer@example.org"))]
    pub email: String,
}

/// The answer of `POST /sandbox/register`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxKey {
    /// Send it in the `x-api-key` header. It is shown only in this response.
    pub api_key: String,
    pub key_type: &'static str,
    pub scopes: Vec<&'static str>,
    pub rate_limit_per_minute: u32,
    pub expires_at: Timestamp,
}

/// A plausible e-mail address: one `@`, a local part, and a dotted domain.
pub fn is_plausible_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    email.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && !email.chars().any(|character| character.is_whitespace() || character.is_control())
}

/// `POST /sandbox/register` with `{"email": "..."}`: a sandbox key at once.
///
/// The address is checked and not stored anywhere: the key is a signed
/// token, so there is nothing to remember.
#[utoipa::path(
    post,
    context_path = BASE_PATH,
    path = "/sandbox/register",
    operation_id = "registerSandboxKey",
    tag = "Sandbox",
    summary = "Register for a sandbox key",
    description = "Issues a sandbox key at once: every scope, sandbox records only, valid for a fixed number of days. The key is shown only in this response. Takes no key; limited per client address.",
    request_body(content = Registration, content_type = "application/json"),
    responses(
        (status = 201, description = "The new sandbox key.", body = SandboxKey,
         headers(("Cache-Control" = String, description = "`no-store`: the answer carries a key."))),
        (status = 400, description = "The body is not a JSON object with a plausible `email`.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body is larger than 4 KiB.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 415, description = "The body is not `application/json`.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
)]
pub async fn register(
    State(app): State<Arc<App>>,
    ClientAddress(client): ClientAddress,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let rate = match app.limit_anonymous(&client) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let result = (|| {
        let body = json_body(&headers, body)?;
        let registration: Registration = serde_json::from_slice(&body).map_err(|error| {
            ApiError::InvalidParameter(format!("the body must be a JSON object with one string field, email: {error}"))
        })?;
        let email = registration.email.trim();
        if !is_plausible_email(email) {
            return Err(ApiError::InvalidParameter("email must be an e-mail address".into()));
        }
        let issued = app.sandbox_keys.issue(crate::access::now_unix()).map_err(|error| {
            tracing::error!(%error, "cannot generate a sandbox key");
            ApiError::Internal
        })?;
        let key = SandboxKey {
            api_key: issued.key,
            key_type: "sandbox",
            scopes: crate::keys::Scopes::all().iter().map(crate::keys::Scope::name).collect(),
            rate_limit_per_minute: app.sandbox_keys.rate_limit,
            expires_at: Timestamp(i64::try_from(issued.expires_at_unix).unwrap_or(i64::MAX) * 1000),
        };
        // The answer carries a key: no cache, shared or private, may keep it.
        let mut response = json_of(StatusCode::CREATED, &key)?;
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        Ok(response)
    })();
    with_rate_headers(result.unwrap_or_else(IntoResponse::into_response), &rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_email_addresses() {
        for good in ["a@b.co", "first.last+tag@example.org"] {
            assert!(is_plausible_email(good), "{good}");
        }
        for bad in ["", "a", "@b.co", "a@b", "a@.b", "a@b.", "a b@c.de", "a@b@c.de"] {
            assert!(!is_plausible_email(bad), "{bad}");
        }
    }
}
