//! The router: every public endpoint under `/api/v1/public/v1`, its OpenAPI
//! description, the interactive documentation outside production, and the
//! problem+json answers for unknown routes and wrong methods.
//!
//! One function builds it ([`router`]); tests drive it with
//! `tower::ServiceExt::oneshot`, and the server serves the same value. Beside
//! the axum router it holds the direct path of the rights lookup (`direct`),
//! which takes the plain `GET /rights/{lccId}` requests before the router. The
//! handlers carry their own `#[utoipa::path]` descriptions, and the router
//! and the OpenAPI document are collected from the same list, so a route
//! cannot exist without its description or the other way round.

mod bulk;
mod changes;
mod direct;
mod docs;
mod evidence;
mod licenses;
mod lookup;
mod metadata;
mod notification_stream;
pub mod notifications;
mod oai;
pub mod openapi;
mod parameters;
mod public_record;
mod rights;
mod sandbox;
mod signing_keys;
mod snapshots;
mod verify;
mod webhooks;

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRef, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::{Body, DocumentKind};
use serde_json::value::RawValue;
use tower::Service;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::App;
use crate::config::Environment;
use crate::connection::Connection;
use crate::edge::{Edge, EdgeLayer};
use crate::errors::ApiError;

/// Largest request body accepted (sandbox registration is the only body).
pub const MAX_BODY_BYTES: usize = 4 * 1024;

/// The public endpoints with their descriptions, at their full paths: each
/// handler's description names [`crate::app::BASE_PATH`] as its context path.
/// They are not nested under it, since a nested router rewrites every
/// request's URI, a cost paid by every lookup.
fn described_endpoints() -> OpenApiRouter<RouterState> {
    OpenApiRouter::new()
        .routes(routes!(rights::rights_by_identifier))
        .routes(routes!(rights::rights_by_id))
        .routes(routes!(lookup::lookup))
        .routes(routes!(verify::verify))
        .routes(routes!(licenses::license_status))
        .routes(routes!(metadata::metadata))
        .routes(routes!(metadata::provenance))
        .routes(routes!(bulk::bulk_works))
        .routes(routes!(changes::changes))
        .routes(routes!(notifications::notifications))
        .routes(routes!(notification_stream::stream))
        .routes(routes!(webhooks::webhooks))
        .routes(routes!(snapshots::list))
        .routes(routes!(snapshots::manifest))
        .routes(routes!(snapshots::file))
        .routes(routes!(evidence::evidence))
        .routes(routes!(public_record::public_record))
        .routes(routes!(sandbox::fixtures))
        .routes(routes!(sandbox::register))
        .routes(routes!(oai::oai_get, oai::oai_post))
        .routes(routes!(signing_keys::key_set))
        .routes(routes!(openapi::openapi_json))
}

/// What handlers extract with `State`: the application, and the OpenAPI
/// document as it was completed for this router.
#[derive(Debug, Clone)]
pub struct RouterState {
    app: Arc<App>,
    openapi: openapi::ServedDocument,
}

impl FromRef<RouterState> for Arc<App> {
    fn from_ref(state: &RouterState) -> Arc<App> {
        Arc::clone(&state.app)
    }
}

impl FromRef<RouterState> for openapi::ServedDocument {
    fn from_ref(state: &RouterState) -> openapi::ServedDocument {
        state.openapi.clone()
    }
}

/// Builds the public router.
pub fn router(app: Arc<App>) -> PublicRouter {
    let (api, description) = described_endpoints().split_for_parts();
    let openapi = openapi::ServedDocument::of(description, &app.settings);
    let edge = EdgeLayer::new(Arc::clone(&app.metrics), app.settings.connections.request_timeout, MAX_BODY_BYTES);
    let rights = edge.for_route(direct::RIGHTS_ROUTE, direct::RightsLookups::new(Arc::clone(&app)));
    let mut router = api.merge(public_record::page::router());
    if app.settings.environment != Environment::Production {
        router = router.merge(docs::router());
    }
    // After the merge: the fallback is set on the routes registered so far.
    let routed = router
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(unknown_route)
        .layer(edge)
        .with_state(RouterState { app, openapi });
    PublicRouter { routed, rights, connection: None }
}

/// The public API as one service: the direct path of the rights lookup,
/// and the router for every other request.
#[derive(Debug, Clone)]
pub struct PublicRouter {
    routed: Router,
    rights: Edge<direct::RightsLookups>,
    /// The connection the requests come on, once the server has given one.
    connection: Option<Connection>,
}

impl PublicRouter {
    /// The public API for the requests of one connection. The direct path
    /// is handed the connection once, here; a request for the router
    /// carries it as an extension, whose map costs an allocation and a
    /// rehash on every request.
    pub fn on_connection(&self, connection: Connection) -> PublicRouter {
        PublicRouter {
            routed: self.routed.clone(),
            rights: self.rights.map_inner(|lookups| lookups.on_connection(connection.clone())),
            connection: Some(connection),
        }
    }

    /// The router alone, which answers every request itself, the rights
    /// lookups too: what the direct path is compared with.
    pub fn routed(self) -> Router {
        self.routed
    }
}

impl Service<Request> for PublicRouter {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        ready!(self.rights.poll_ready(context))?;
        <Router as Service<Request>>::poll_ready(&mut self.routed, context)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if direct::is_rights_lookup(&request) {
            return self.rights.call(request);
        }
        if let Some(connection) = &self.connection {
            request.extensions_mut().insert(connection.clone());
        }
        Box::pin(self.routed.call(request))
    }
}

async fn unknown_route(request: Request) -> ApiError {
    ApiError::UnknownRoute(request.uri().path().to_owned())
}

/// A method the route does not serve; a CORS preflight is answered here.
async fn method_not_allowed(request: Request) -> Response {
    if crate::cross_origin::is_preflight(request.method(), request.headers()) {
        return crate::cross_origin::preflight();
    }
    ApiError::MethodNotAllowed(request.method().to_string()).into_response()
}

/// A request body, once it is known to be `application/json` and within
/// [`MAX_BODY_BYTES`]; otherwise the problem that says which it is not.
pub(crate) fn json_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or_default();
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    if !media_type.eq_ignore_ascii_case("application/json") {
        return Err(ApiError::UnsupportedMediaType);
    }
    body.map_err(|rejection| body_problem(&rejection))
}

/// The problem of a body that could not be read.
pub(crate) fn body_problem(rejection: &BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(MAX_BODY_BYTES)
    } else {
        ApiError::InvalidParameter("the request body could not be read".into())
    }
}

/// Headers a served answer ends up with: its type and length, the rate
/// limit's three, the conditional ones (tag, cache control, vary), the
/// three every answer carries and its id.
const ANSWER_HEADERS: usize = 12;

/// A JSON response from bytes that are already JSON. Its header map is
/// made large enough for [`ANSWER_HEADERS`] at once, rather than grown and
/// rehashed as the layers add them.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.reserve(ANSWER_HEADERS);
    // A constant: `from_static` elsewhere checks the bytes on every answer.
    headers.insert(header::CONTENT_TYPE, const { HeaderValue::from_static("application/json") });
    response
}

/// A stored JSON document, to be embedded in a response as it is: it is
/// checked to be JSON, but not decoded into a document and encoded again.
pub(crate) fn stored_json(body: Vec<u8>) -> Result<Box<RawValue>, ApiError> {
    String::from_utf8(body).ok().and_then(|text| RawValue::from_string(text).ok()).ok_or_else(|| {
        tracing::error!("a stored document is not JSON");
        ApiError::Internal
    })
}

/// Every stored document of a list, as [`stored_json`].
pub(crate) fn stored_json_list(bodies: Vec<Vec<u8>>) -> Result<Vec<Box<RawValue>>, ApiError> {
    bodies.into_iter().map(stored_json).collect()
}

/// The stored document of `kind` for the work `lcc_id`; 404 when there is none.
pub(crate) async fn work_document(app: &App, kind: DocumentKind, lcc_id: &str) -> Result<Body, ApiError> {
    app.store.document(kind, lcc_id).await?.ok_or_else(|| ApiError::NotFound(format!("no work {lcc_id}")))
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

/// The address a request comes from, for limits on endpoints without a key.
///
/// Behind a trusted proxy (`--trust-x-forwarded-for`) it is the last entry of
/// `X-Forwarded-For`: the address the proxy itself saw and appended, which
/// a client cannot forge (entries before it can be anything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddress(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress
where
    Arc<App>: FromRef<S>,
{
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<ClientAddress, Self::Rejection> {
        let app = Arc::<App>::from_ref(state);
        let peer = parts.extensions.get::<Connection>().map(|connection| connection.peer.ip());
        let forwarded = app.settings.trust_x_forwarded_for.then(|| last_forwarded_for(&parts.headers)).flatten();
        Ok(ClientAddress(forwarded.or(peer).map_or_else(|| "unknown".to_owned(), |address| address.to_string())))
    }
}

fn last_forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let last_header = headers.get_all("x-forwarded-for").iter().next_back()?;
    last_header.to_str().ok()?.rsplit(',').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forwarded_address_is_the_one_the_proxy_appended() {
        let mut headers = HeaderMap::new();
        assert_eq!(last_forwarded_for(&headers), None);
        headers.append("x-forwarded-for", HeaderValue::from_static("10.9.9.9, 203.0.113.7"));
        assert_eq!(last_forwarded_for(&headers), "203.0.113.7".parse().ok());
        headers.append("x-forwarded-for", HeaderValue::from_static("198.51.100.2"));
        assert_eq!(last_forwarded_for(&headers), "198.51.100.2".parse().ok());
        headers.insert("x-forwarded-for", HeaderValue::from_static("not an address"));
        assert_eq!(last_forwarded_for(&headers), None);
    }
}
