//! `/api/docs`: interactive documentation, outside production only.
//!
//! A small page of our own (`query-api/assets/docs/`) reads the served
//! OpenAPI document and lets a visitor send requests with a key. Every asset
//! is compiled into the binary and served from here, and the
//! Content-Security-Policy header forbids loading or sending anything to any
//! other origin. The router leaves these routes out in production, so there
//! they are 404 like any unknown route.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::BASE_PATH;

/// The page's own origin only: no CDN, no analytics, no third-party request.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const PAGE: &str = include_str!("../../assets/docs/index.html");
const SCRIPT: &str = include_str!("../../assets/docs/docs.js");
const STYLE: &str = include_str!("../../assets/docs/docs.css");

/// The documentation routes; merged into the public router outside production.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let page = PAGE.replace("{{OPENAPI_URL}}", &format!("{BASE_PATH}/openapi.json"));
    Router::new()
        .route("/api/docs", get(move || async move { asset("text/html; charset=utf-8", page.clone()) }))
        .route("/api/docs/docs.js", get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route("/api/docs/docs.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
}

fn asset(content_type: &'static str, body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
