//! The one request that does not go through the router: `GET
//! /rights/{lccId}`, the lookup partners make most.
//!
//! axum's routing of a path with a parameter costs about a sixth of a cached
//! lookup's instructions. That includes matching the path, decoding the
//! parameter into the request's extensions, and boxing and cloning the
//! route's services and futures on every request (4,800 of 29,200 by
//! `scripts/instructions-per-lookup.sh`). Here a plain test of the path picks
//! such a request out, and the router's own handler answers it, through an
//! edge of its own that names the route as the router would. A request that
//! is not plainly such a lookup goes to the router: a `HEAD`, one with a
//! query string, or one whose id is empty, has a further segment or needs
//! percent-decoding. The router also keeps the route for its OpenAPI
//! description. This module must not answer a request differently from the
//! router. `tests/direct_path.rs` sends the same requests to both and
//! compares the answers.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use tower::Service;

use super::rights;
use crate::access::Credentials;
use crate::app::App;
use crate::connection::Connection;

/// The path of a rights lookup up to its `{lccId}`: `BASE_PATH` then `/rights/`.
const RIGHTS_PREFIX: &str = "/api/v1/public/v1/rights/";

/// The route's name in spans and metrics, the path template the router matches.
pub(super) const RIGHTS_ROUTE: &str = "/api/v1/public/v1/rights/{lccId}";

/// Whether `request` is plainly a rights lookup by id, which the direct
/// path answers.
pub(super) fn is_rights_lookup(request: &Request) -> bool {
    lcc_id(request).is_some()
}

/// The id a plain rights lookup names.
fn lcc_id(request: &Request) -> Option<&str> {
    if request.method() != Method::GET || request.uri().query().is_some() {
        return None;
    }
    let id = request.uri().path().strip_prefix(RIGHTS_PREFIX)?;
    (!id.is_empty() && !id.contains(['/', '%'])).then_some(id)
}

/// Answers the requests [`is_rights_lookup`] picks out.
#[derive(Debug, Clone)]
pub(super) struct RightsLookups {
    app: Arc<App>,
    /// The connection the requests come on, once the server has given one.
    connection: Option<Connection>,
}

impl RightsLookups {
    pub(super) fn new(app: Arc<App>) -> RightsLookups {
        RightsLookups { app, connection: None }
    }

    /// The lookups of the requests that come on `connection`.
    pub(super) fn on_connection(&self, connection: Connection) -> RightsLookups {
        RightsLookups { app: Arc::clone(&self.app), connection: Some(connection) }
    }
}

impl Service<Request> for RightsLookups {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let app = Arc::clone(&self.app);
        let credentials = Credentials::of(request.headers(), self.connection.as_ref());
        // The public router sends only the requests `is_rights_lookup`
        // picked out, so the id is the rest of the path: it is not checked again.
        let lcc_id = request.uri().path().strip_prefix(RIGHTS_PREFIX).unwrap_or_default().to_owned();
        Box::pin(async move { Ok(rights::rights_profile(&app, &credentials, &lcc_id).await) })
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;
    use crate::app::BASE_PATH;

    fn request(method: Method, uri: &str) -> Request {
        Request::builder().method(method).uri(uri).body(Body::empty()).expect("request")
    }

    #[test]
    fn only_a_plain_get_of_one_id_is_taken_from_the_router() {
        assert_eq!(RIGHTS_PREFIX, format!("{BASE_PATH}/rights/"));
        assert_eq!(RIGHTS_ROUTE, format!("{BASE_PATH}/rights/{{lccId}}"));
        let taken = request(Method::GET, &format!("{RIGHTS_PREFIX}LCC-0000000001"));
        assert_eq!(lcc_id(&taken), Some("LCC-0000000001"));
        for (method, path) in [
            (Method::HEAD, "LCC-0000000001"),
            (Method::POST, "LCC-0000000001"),
            (Method::GET, ""),
            (Method::GET, "LCC-0000000001/"),
            (Method::GET, "LCC-0000000001/verify"),
            (Method::GET, "LCC%2D0000000001"),
            (Method::GET, "LCC-0000000001?fields=all"),
        ] {
            let left = request(method.clone(), &format!("{RIGHTS_PREFIX}{path}"));
            assert!(!is_rights_lookup(&left), "{method} {path} is the router's");
        }
        assert!(!is_rights_lookup(&request(Method::GET, &format!("{BASE_PATH}/rights?iswc=T-900.000.001-1"))));
    }
}
