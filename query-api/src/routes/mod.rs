//! The router: every public endpoint under `/api/v1/public/v1`, and the
//! problem+json answers for unknown routes and wrong methods.
//!
//! One function builds it ([`router`]); tests drive it with
//! `tower::ServiceExt::oneshot`, and the server serves the same value.

mod bulk;
mod evidence;
mod licenses;
mod metadata;
mod rights;
mod sandbox;
mod verify;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;

/// Largest request body accepted (sandbox registration is the only body).
pub const MAX_BODY_BYTES: usize = 4 * 1024;

/// Builds the public router.
pub fn router(app: Arc<App>) -> Router {
    let api = Router::new()
        .route("/rights", get(rights::rights_by_identifier))
        .route("/rights/{lcc_id}", get(rights::rights_by_id))
        .route("/rights/{lcc_id}/verify", get(verify::verify))
        .route("/rights/{lcc_id}/metadata", get(metadata::metadata))
        .route("/rights/{lcc_id}/provenance", get(metadata::provenance))
        .route("/rights/{lcc_id}/evidence", get(evidence::evidence))
        .route("/licenses/{id}/status", get(licenses::license_status))
        .route("/bulk/works", get(bulk::bulk_works))
        .route("/sandbox/fixtures", get(sandbox::fixtures))
        .route("/sandbox/register", post(sandbox::register))
        .method_not_allowed_fallback(method_not_allowed);
    let metrics = Arc::clone(&app.metrics);
    Router::new()
        .nest(BASE_PATH, api)
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(metrics, crate::metrics::track))
        .with_state(app)
}

async fn unknown_route(request: Request) -> ApiError {
    ApiError::UnknownRoute(request.uri().path().to_owned())
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::MethodNotAllowed(request.method().to_string())
}

/// A JSON response from bytes that are already JSON.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Appends `[item,item,…]`: stored JSON documents spliced in as they are,
/// without decoding and encoding them again.
pub(crate) fn push_json_array(body: &mut Vec<u8>, items: &[Vec<u8>]) {
    body.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.push(b']');
}

/// Serializes a response document.
pub(crate) fn json_of(status: StatusCode, value: &impl serde::Serialize) -> Result<Response, ApiError> {
    serde_json::to_vec(value).map(|body| json(status, body)).map_err(|_| ApiError::Internal)
}

/// Decodes a stored document; a stored body that does not decode is an internal error.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        tracing::error!(%error, "a stored document does not decode");
        ApiError::Internal
    })
}

/// The client address of a request, for limits on endpoints without a key.
pub(crate) fn client_address(connect_info: Option<&ConnectInfo<SocketAddr>>) -> String {
    connect_info.map_or_else(|| "unknown".to_owned(), |ConnectInfo(address)| address.ip().to_string())
}
