//! The one layer every public request passes through once its route is
//! matched (or the direct path of the rights lookup, `routes::direct`, has
//! taken it): its span and id, the body limit, the timeout, conditional
//! requests and compression, the request metrics, and the headers every
//! answer carries.
//!
//! It is one hand-written service rather than one middleware per concern
//! because `Router::layer` wraps every route once per layer, and each wrap
//! is cloned, boxed and polled again on every request: about 4,000
//! instructions of a lookup per layer. The rules themselves live in their
//! modules (`request_tracing`, `request_timeout`, `conditional`, `metrics`,
//! `cross_origin`); this module only puts them in order and must not decide
//! any of them.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::Method;
use axum::response::Response;
use tower::{Layer, Service};
use tracing::Instrument;

use crate::conditional::Conditions;
use crate::metrics::{Metrics, RouteSeries};
use crate::request_tracing::{self, REQUEST_ID_HEADER};
use crate::{cross_origin, request_timeout};

/// Wraps each route of the public router in an [`Edge`].
#[derive(Debug, Clone)]
pub struct EdgeLayer {
    settings: Arc<EdgeSettings>,
}

#[derive(Debug)]
struct EdgeSettings {
    metrics: Arc<Metrics>,
    request_timeout: Duration,
    max_body_bytes: usize,
}

impl EdgeLayer {
    pub fn new(metrics: Arc<Metrics>, request_timeout: Duration, max_body_bytes: usize) -> EdgeLayer {
        EdgeLayer { settings: Arc::new(EdgeSettings { metrics, request_timeout, max_body_bytes }) }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        self.edge(inner, None)
    }
}

impl EdgeLayer {
    /// The edge of a service that answers one route outside the router,
    /// which names it `name` in spans and metrics (the router's routes are
    /// named by the path they matched).
    pub fn for_route<S>(&self, name: &'static str, inner: S) -> Edge<S> {
        self.edge(inner, Some(name))
    }

    fn edge<S>(&self, inner: S, name: Option<&'static str>) -> Edge<S> {
        let route = RouteEdge { settings: Arc::clone(&self.settings), series: RouteSeries::default(), name };
        Edge { inner, route: Arc::new(route) }
    }
}

/// A route with the edge's rules around it.
#[derive(Debug, Clone)]
pub struct Edge<S> {
    inner: S,
    route: Arc<RouteEdge>,
}

impl<S> Edge<S> {
    /// The same edge, with its route's name and series, around the service
    /// `wrap` makes of the one inside.
    pub fn map_inner<T>(&self, wrap: impl FnOnce(&S) -> T) -> Edge<T> {
        Edge { inner: wrap(&self.inner), route: Arc::clone(&self.route) }
    }
}

/// What the edge keeps for one route (one method of one path, or a fallback).
#[derive(Debug)]
struct RouteEdge {
    settings: Arc<EdgeSettings>,
    series: RouteSeries,
    /// The route's name when no router matched it.
    name: Option<&'static str>,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // The service that was polled ready answers; its clone waits for the next request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let edge = Arc::clone(&self.route);
        Box::pin(async move {
            let settings = &edge.settings;
            let started = Instant::now();
            let request_id = request_tracing::request_id(request.headers());
            // A shared string and a standard method: clones, not copies.
            let matched = match edge.name {
                Some(_) => None,
                None => request.extensions().get::<MatchedPath>().cloned(),
            };
            let route = edge.name.or(matched.as_ref().map(MatchedPath::as_str)).unwrap_or("unmatched");
            let method = request.method().clone();
            let span = request_tracing::span(&request_id, &method, route);
            let conditions = Conditions::of(&request);
            // Only a request that may carry a body pays for its limit.
            if request.method() != Method::GET {
                DefaultBodyLimit::max(settings.max_body_bytes).apply(&mut request);
            }
            // Pinned where they are made: the futures are large, and each
            // wrapper would otherwise move the one inside it.
            let answer = pin!(async move {
                let Ok(response) = inner.call(request).await;
                conditions.apply(response).await
            });
            let limited = pin!(request_timeout::within(started, settings.request_timeout, route, answer));
            let mut response = limited.instrument(span.clone()).await;
            let status = response.status();
            let elapsed = started.elapsed();
            span.record("status", status.as_u16());
            span.in_scope(|| {
                tracing::debug!(elapsed_us = elapsed.as_micros() as u64, "answered");
            });
            settings.metrics.record_request(&edge.series, route, &method, status, elapsed);
            cross_origin::add_common_headers(response.headers_mut());
            response.headers_mut().insert(REQUEST_ID_HEADER, request_id);
            Ok(response)
        })
    }
}
