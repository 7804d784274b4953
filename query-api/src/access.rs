//! The access guard every keyed endpoint answers through: key, then quota,
//! then scope, then audience, all before any store read; and the quota of
//! endpoints that take no key, per client address.

use std::convert::Infallible;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use read_model::identifiers::{Audience, SANDBOX_PREFIX};

use crate::app::App;
use crate::connection::Connection;
use crate::errors::ApiError;
use crate::keys::memo::KeyMemo;
use crate::keys::sandbox::{SandboxKeyError, SandboxKeys};
use crate::keys::{KeyKind, Principal, Scope};
use crate::rate_limit::RateDecision;

/// What a keyed request presents: its `x-api-key`, and the key memo of the
/// connection it came on. Its `Debug` output says whether there is a key,
/// never the key.
pub struct Credentials {
    key: Option<HeaderValue>,
    memo: Option<Arc<KeyMemo>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Credentials").field("presents_a_key", &self.present_a_key()).finish_non_exhaustive()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Credentials {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Credentials, Infallible> {
        Ok(Credentials::of(&parts.headers, parts.extensions.get::<Connection>()))
    }
}

impl Credentials {
    /// What a request with these headers presents, on `connection` when
    /// it came on one.
    pub fn of(headers: &HeaderMap, connection: Option<&Connection>) -> Credentials {
        Credentials {
            key: headers.get(crate::keys::API_KEY_HEADER).cloned(),
            memo: connection.map(|connection| Arc::clone(&connection.key_memo)),
        }
    }

    /// Whether the request has an `x-api-key` header at all.
    pub fn present_a_key(&self) -> bool {
        self.key.is_some()
    }
}

/// A request that passed the access checks, and its quota state.
#[derive(Debug)]
pub struct Granted {
    pub principal: Principal,
    pub rate: RateDecision,
}

impl Granted {
    /// The audience this caller may read.
    pub fn audience(&self) -> Audience {
        match self.principal.kind {
            KeyKind::Production => Audience::Production,
            KeyKind::Sandbox => Audience::Sandbox,
        }
    }

    /// The handler's answer with the rate-limit headers added.
    fn respond(&self, result: Result<Response, ApiError>) -> Response {
        with_rate_headers(result.unwrap_or_else(IntoResponse::into_response), &self.rate)
    }
}

pub fn with_rate_headers(mut response: Response, rate: &RateDecision) -> Response {
    rate.write_headers(response.headers_mut());
    response
}

/// Seconds since the Unix epoch, for sandbox key expiry.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_secs()).unwrap_or(0)
}

impl App {
    /// Authenticates the caller and checks quota, scope and audience.
    ///
    /// `record` is the record id the request names, if any: a sandbox key
    /// naming a production id is refused here, before any store read.
    /// `cost` is how many requests this one counts as (a batch of lookups).
    #[allow(clippy::result_large_err)]
    async fn authorize(
        &self,
        credentials: &Credentials,
        scope: Scope,
        record: Option<&str>,
        cost: NonZeroU32,
    ) -> Result<Granted, Response> {
        let principal = self.authenticate(credentials).await.map_err(IntoResponse::into_response)?;
        let rate = self.rate_limits.check_cost(principal.rate_client, principal.rate_limit, cost);
        let refuse = |error: ApiError| with_rate_headers(error.into_response(), &rate);
        if let Some(retry_after) = rate.retry_after {
            if cost.get() > principal.rate_limit {
                return Err(refuse(ApiError::BatchOverQuota { cost: cost.get(), limit: principal.rate_limit }));
            }
            return Err(refuse(ApiError::RateLimited { retry_after }));
        }
        if !principal.scopes.contains(scope) {
            return Err(refuse(ApiError::InsufficientScope(scope.name())));
        }
        if principal.kind == KeyKind::Sandbox && record.is_some_and(|id| !id.starts_with(SANDBOX_PREFIX)) {
            return Err(refuse(ApiError::SandboxKeyOnProductionRecord));
        }
        Ok(Granted { principal, rate })
    }

    /// Answers a keyed request: runs `answer` once `App::authorize` lets
    /// the caller through and adds the rate-limit headers to what it returns,
    /// error or not; a refused caller gets the refusal and `answer` never runs.
    pub async fn answer_authorized(
        &self,
        credentials: &Credentials,
        scope: Scope,
        record: Option<&str>,
        answer: impl AsyncFnOnce(&Granted) -> Result<Response, ApiError>,
    ) -> Response {
        self.answer_authorized_costing(credentials, scope, record, NonZeroU32::MIN, answer).await
    }

    /// [`App::answer_authorized`] for a request that counts as `cost` requests.
    pub async fn answer_authorized_costing(
        &self,
        credentials: &Credentials,
        scope: Scope,
        record: Option<&str>,
        cost: NonZeroU32,
        answer: impl AsyncFnOnce(&Granted) -> Result<Response, ApiError>,
    ) -> Response {
        match self.authorize(credentials, scope, record, cost).await {
            Ok(granted) => granted.respond(answer(&granted).await),
            Err(refused) => refused,
        }
    }

    async fn authenticate(&self, credentials: &Credentials) -> Result<Principal, ApiError> {
        let key = credentials
            .key
            .as_ref()
            .ok_or(ApiError::MissingApiKey)?
            .to_str()
            .map_err(|_| ApiError::InvalidApiKey)?
            .trim();
        if key.is_empty() {
            return Err(ApiError::MissingApiKey);
        }
        if SandboxKeys::is_sandbox_key(key) {
            return self.sandbox_keys.verify(key, now_unix()).map_err(|error| match error {
                SandboxKeyError::Expired => ApiError::ExpiredApiKey,
                SandboxKeyError::Malformed | SandboxKeyError::BadSignature => ApiError::InvalidApiKey,
            });
        }
        match self.production_keys.authenticate(key, credentials.memo.as_deref()).await {
            Ok(Some(principal)) => Ok(principal),
            Ok(None) => Err(ApiError::InvalidApiKey),
            Err(error) => {
                tracing::error!(%error, "key store unavailable");
                Err(ApiError::Unavailable)
            }
        }
    }

    /// Quota check for endpoints that take no key, per client address.
    #[allow(clippy::result_large_err)]
    pub fn limit_anonymous(&self, client: &str) -> Result<RateDecision, Response> {
        let rate = self.rate_limits.check(&format!("address:{client}"), self.settings.default_rate_limit);
        match rate.retry_after {
            Some(retry_after) => Err(with_rate_headers(ApiError::RateLimited { retry_after }.into_response(), &rate)),
            None => Ok(rate),
        }
    }
}
