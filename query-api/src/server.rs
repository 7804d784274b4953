//! Serving the router on a listener until a shutdown future resolves. Tests
//! and `main` drive it the same way.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::app::App;
use crate::routes::router;

/// Serves the public API on `listener` until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service).with_graceful_shutdown(shutdown).await
}

/// Serves the admin endpoints (metrics, health, readiness) on their own listener.
pub async fn run_admin(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let admin = crate::metrics::admin_router(Arc::clone(&app.metrics), Arc::clone(&app.store));
    axum::serve(listener, admin).with_graceful_shutdown(shutdown).await
}
