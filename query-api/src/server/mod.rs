//! Serving the router on a listener until a shutdown future resolves. Tests
//! and `main` drive it the same way.
//!
//! The public listener is served with hyper's HTTP/1 connection builder
//! rather than `axum::serve`, which sets no timeout and no cap: a client
//! that opens connections and never finishes a request head would hold file
//! descriptors until the process has none left. Here a connection whose
//! request head is not complete within the header timeout (counted from its
//! opening, and again from each answer, so it is the idle keep-alive
//! timeout too) is closed; connections past the total or per-address cap
//! are closed at once ([`connection_limits`]); a failing accept is logged
//! once per interval; and shutdown is ordered: readiness turns false, the
//! listener closes, and requests in flight get a grace period.

pub mod admin;
pub mod connection_limits;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use crate::app::App;
use crate::connection::Connection;
use crate::routes::router;
use connection_limits::ConnectionLimits;

/// How often a failing accept is logged.
const ACCEPT_FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Serves the public API on `listener` until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let settings = app.settings.connections.clone();
    let limits = ConnectionLimits::new(settings.max_connections, settings.max_connections_per_address);
    let router = router(Arc::clone(&app));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(settings.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut accept_failures = AcceptFailures::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failures.record(&error);
                    // Out of descriptors lasts until a connection ends: wait, do not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let permit = match limits.admit(peer.ip()) {
            Ok(permit) => permit,
            Err(refusal) => {
                app.metrics.connection_refused(refusal.label());
                continue;
            }
        };
        let connection = Connection { peer, key_memo: Arc::default() };
        let service = router
            .on_connection(connection)
            .map_request(|request: Request<Incoming>| request.map(axum::body::Body::new));
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)));
        let metrics = Arc::clone(&app.metrics);
        metrics.connection_opened();
        tokio::spawn(async move {
            // A reset, a header timeout or a malformed head ends only this connection.
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed");
            }
            metrics.connection_closed();
            drop(permit);
        });
    }
    app.draining.store(true, Ordering::Release);
    drop(listener);
    if tokio::time::timeout(settings.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(grace = ?settings.shutdown_grace, "requests still in flight after the grace period were cut");
    }
    Ok(())
}

/// Accept failures (out of file descriptors, say), logged once per interval
/// with how many there were, rather than once each or never.
#[derive(Debug, Default)]
struct AcceptFailures {
    last_logged: Option<Instant>,
    since_logged: u64,
}

impl AcceptFailures {
    fn record(&mut self, error: &std::io::Error) {
        self.since_logged += 1;
        if self.last_logged.is_none_or(|logged| logged.elapsed() >= ACCEPT_FAILURE_LOG_INTERVAL) {
            tracing::error!(%error, failures = self.since_logged, "failed to accept connections");
            self.last_logged = Some(Instant::now());
            self.since_logged = 0;
        }
    }
}
