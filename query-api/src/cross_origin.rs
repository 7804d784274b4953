//! CORS and the headers every answer carries, for pages on any origin.
//!
//! Keys travel in a header, never in cookies, so allowing every origin (`*`)
//! gives a page nothing its user could not ask for. The headers are the
//! same on every answer, so they are static values the edge (`crate::edge`)
//! adds to each (no allocation, no boxed future: a general CORS layer cost
//! the lookup benchmark several per cent). A preflight (`OPTIONS` with
//! `Access-Control-Request-Method`) reaches the router's method fallback,
//! which answers it with [`preflight`] before any access check: it takes
//! no key and counts against no limit.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

// The values are constants rather than `HeaderValue::from_static` at each
// answer: outside a constant, that checks every byte again each time.

/// Any origin may read the answers.
const ANY_ORIGIN: HeaderValue = HeaderValue::from_static("*");

/// The response headers scripts on other origins may read.
const EXPOSED_HEADERS: HeaderValue = HeaderValue::from_static(
    "x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, x-request-id, etag, last-modified, retry-after",
);

const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");

/// The methods a page may use.
const ALLOWED_METHODS: HeaderValue = HeaderValue::from_static("GET, POST");

/// The request headers a page may send.
const ALLOWED_HEADERS: HeaderValue =
    HeaderValue::from_static("x-api-key, if-none-match, if-modified-since, content-type");

/// How long a browser may keep a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: HeaderValue = HeaderValue::from_static("86400");

/// Adds the headers every answer carries: CORS for simple requests and
/// `X-Content-Type-Options: nosniff`.
pub fn add_common_headers(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, ANY_ORIGIN);
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED_HEADERS);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
}

/// Whether a request is a CORS preflight.
pub fn is_preflight(method: &axum::http::Method, headers: &HeaderMap) -> bool {
    method == axum::http::Method::OPTIONS && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The answer to a preflight: what a page may send, for a day.
pub fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, ALLOWED_METHODS);
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOWED_HEADERS);
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, PREFLIGHT_MAX_AGE);
    response
}
