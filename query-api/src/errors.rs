//! The API's error boundary: every failure becomes an RFC 9457
//! `application/problem+json` body with a stable machine-readable `code`.
//!
//! 5xx bodies never carry internal messages; the cause is logged instead.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::StoreError;
use serde::Serialize;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("this endpoint needs an API key in the x-api-key header")]
    MissingApiKey,
    #[error("the API key is not valid")]
    InvalidApiKey,
    #[error("the sandbox API key has expired; register for a new one")]
    ExpiredApiKey,
    #[error("this API key lacks the {0} scope")]
    InsufficientScope(&'static str),
    #[error("sandbox keys read sandbox records only (ids starting with SANDBOX-)")]
    SandboxKeyOnProductionRecord,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidParameter(String),
    #[error("`since` is not a cursor this service issued; continue from the `next` cursor a page returned")]
    InvalidCursor,
    #[error("the cursor belongs to the {0} feed; this key reads the other one")]
    CursorOfAnotherAudience(&'static str),
    /// The cursor cannot be continued from; `snapshot` links the newest snapshot to start again from.
    #[error("{reason}; start again from the newest snapshot and its cursor")]
    ChangesGone { reason: String, snapshot: Option<String> },
    /// A notification cursor cannot be continued from; `resume_from` is the feed's end.
    #[error("{reason}; revalidate the answers you hold with their tags, then continue from `resumeFrom`")]
    NotificationsGone { reason: String, resume_from: String },
    #[error("this key has {0} notification streams open on this server, the most it may; close one first")]
    TooManyStreams(u32),
    /// The stream's cursor is more than a page behind; `pull` reads the feed from it.
    #[error("the cursor is far behind; catch up with {pull} first, then stream from its last `next`")]
    FarBehind { pull: String },
    #[error("the range does not overlap the file's {0} bytes")]
    RangeNotSatisfiable(u64),
    #[error("the request body must be application/json")]
    UnsupportedMediaType,
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    #[error("no route matches {0}")]
    UnknownRoute(String),
    #[error("{0} is not allowed here")]
    MethodNotAllowed(String),
    #[error("too many requests; retry in {retry_after} s")]
    RateLimited { retry_after: u64 },
    #[error("a batch of {cost} lookups is more than this key's {limit} requests a minute; split it")]
    BatchOverQuota { cost: u32, limit: u32 },
    #[error("the read model is unavailable; retry shortly")]
    Unavailable,
    #[error("the answer took longer than {0} s; retry shortly")]
    RequestTimeout(u64),
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::MissingApiKey | ApiError::InvalidApiKey | ApiError::ExpiredApiKey => StatusCode::UNAUTHORIZED,
            ApiError::InsufficientScope(_) | ApiError::SandboxKeyOnProductionRecord => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) | ApiError::UnknownRoute(_) => StatusCode::NOT_FOUND,
            ApiError::InvalidParameter(_) | ApiError::InvalidCursor | ApiError::CursorOfAnotherAudience(_) => {
                StatusCode::BAD_REQUEST
            }
            ApiError::ChangesGone { .. } | ApiError::NotificationsGone { .. } => StatusCode::GONE,
            ApiError::TooManyStreams(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::FarBehind { .. } => StatusCode::CONFLICT,
            ApiError::RangeNotSatisfiable(_) => StatusCode::RANGE_NOT_SATISFIABLE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RateLimited { .. } | ApiError::BatchOverQuota { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable | ApiError::RequestTimeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code clients branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::MissingApiKey => "missing_api_key",
            ApiError::InvalidApiKey => "invalid_api_key",
            ApiError::ExpiredApiKey => "expired_api_key",
            ApiError::InsufficientScope(_) => "insufficient_scope",
            ApiError::SandboxKeyOnProductionRecord => "sandbox_key_production_record",
            ApiError::NotFound(_) => "not_found",
            ApiError::InvalidParameter(_) => "invalid_parameter",
            ApiError::InvalidCursor => "invalid_cursor",
            ApiError::CursorOfAnotherAudience(_) => "cursor_of_another_audience",
            ApiError::ChangesGone { .. } | ApiError::NotificationsGone { .. } => "cursor_gone",
            ApiError::TooManyStreams(_) => "too_many_streams",
            ApiError::FarBehind { .. } => "far_behind",
            ApiError::RangeNotSatisfiable(_) => "range_not_satisfiable",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::UnknownRoute(_) => "unknown_route",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::BatchOverQuota { .. } => "batch_over_quota",
            ApiError::Unavailable => "service_unavailable",
            ApiError::RequestTimeout(_) => "request_timeout",
            ApiError::Internal => "internal_error",
        }
    }

    fn title(&self) -> &'static str {
        match self.status() {
            StatusCode::UNAUTHORIZED => "Unauthorized",
            StatusCode::FORBIDDEN => "Forbidden",
            StatusCode::NOT_FOUND => "Not Found",
            StatusCode::BAD_REQUEST => "Bad Request",
            StatusCode::GONE => "Gone",
            StatusCode::CONFLICT => "Conflict",
            StatusCode::RANGE_NOT_SATISFIABLE => "Range Not Satisfiable",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "Unsupported Media Type",
            StatusCode::PAYLOAD_TOO_LARGE => "Content Too Large",
            StatusCode::METHOD_NOT_ALLOWED => "Method Not Allowed",
            StatusCode::TOO_MANY_REQUESTS => "Too Many Requests",
            StatusCode::SERVICE_UNAVAILABLE => "Service Unavailable",
            _ => "Internal Server Error",
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::Unavailable(_) | StoreError::NoActiveModelVersion => {
                tracing::warn!(%error, "store unavailable");
                ApiError::Unavailable
            }
            other => {
                tracing::error!(error = %other, "store failure");
                ApiError::Internal
            }
        }
    }
}

/// The problem document (RFC 9457) every failure is answered with.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(examples(json!({
    "type": "urn:lcc:problem:insufficient_scope",
    "title": "Forbidden",
    "status": 403,
    "detail": "this API key lacks the rights:verify scope",
    "code": "insufficient_scope"
})))]
pub struct Problem {
    /// `urn:lcc:problem:` followed by `code`.
    #[serde(rename = "type")]
    pub problem_type: String,
    pub title: &'static str,
    /// The HTTP status, repeated.
    pub status: u16,
    /// What went wrong, for people; never an internal message.
    pub detail: String,
    /// Stable machine-readable code to branch on, for example `missing_api_key`,
    /// `insufficient_scope`, `not_found`, `invalid_parameter`, `rate_limited`.
    pub code: &'static str,
    /// With `cursor_gone`: the newest snapshot's manifest, to start again
    /// from (absent while none has been cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// With `cursor_gone` on the notification feed: a cursor at the feed's
    /// end, to continue from once the answers held are revalidated.
    #[serde(rename = "resumeFrom", skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<String>,
}

impl ApiError {
    /// The problem document of this error.
    pub fn problem(&self) -> Problem {
        let snapshot = match self {
            ApiError::ChangesGone { snapshot, .. } => snapshot.clone(),
            _ => None,
        };
        let resume_from = match self {
            ApiError::NotificationsGone { resume_from, .. } => Some(resume_from.clone()),
            _ => None,
        };
        Problem {
            snapshot,
            resume_from,
            problem_type: format!("urn:lcc:problem:{}", self.code()),
            title: self.title(),
            status: self.status().as_u16(),
            detail: self.to_string(),
            code: self.code(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, serde_json::to_vec(&self.problem()).unwrap_or_default()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, const { HeaderValue::from_static("application/problem+json") });
        match self {
            ApiError::RateLimited { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            // Waiting does not help; a minute is when a split batch's first part passes.
            ApiError::BatchOverQuota { .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(60));
            }
            _ => {}
        }
        if let ApiError::RangeNotSatisfiable(length) = self
            && let Ok(value) = HeaderValue::from_str(&format!("bytes */{length}"))
        {
            headers.insert(header::CONTENT_RANGE, value);
        }
        if matches!(self, ApiError::MissingApiKey | ApiError::InvalidApiKey | ApiError::ExpiredApiKey) {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("ApiKey header=\"x-api-key\""));
        }
        response
    }
}
