//! The admin listener, apart from the public one: `/metrics`, `/healthz`
//! and `/readyz`. Readiness is false while the store does not answer and
//! once shutdown begins, so a balancer stops sending requests before the
//! public listener closes.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use read_model::DocumentReads;
use tokio::net::TcpListener;

use crate::app::App;
use crate::metrics::Metrics;

/// Serves the admin endpoints (metrics, health, readiness) on their own listener.
pub async fn run(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let admin = router(Arc::clone(&app.metrics), Arc::clone(&app.store), Arc::clone(&app.draining));
    axum::serve(listener, admin).with_graceful_shutdown(shutdown).await
}

/// The admin listener's router: `/metrics`, `/healthz`, `/readyz` (the
/// store answers, and the public listener is not draining for shutdown).
pub fn router(metrics: Arc<Metrics>, store: Arc<dyn DocumentReads>, draining: Arc<AtomicBool>) -> Router {
    let scraped_store = Arc::clone(&store);
    telemetry::admin::router(
        move || {
            if let Some(statistics) = scraped_store.document_cache_statistics() {
                metrics.record_document_cache(statistics);
            }
            metrics.render()
        },
        move || {
            let store = Arc::clone(&store);
            let draining = draining.load(Ordering::Acquire);
            async move {
                if draining {
                    return Err("shutting down: the public listener no longer accepts connections".to_owned());
                }
                store.ping().await.map_err(|error| error.to_string())
            }
        },
    )
}
