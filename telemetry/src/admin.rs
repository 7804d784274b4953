//! The admin listener's routes, served apart from any public port:
//! `/metrics` (Prometheus text exposition), `/healthz` (the process answers)
//! and `/readyz` (the process can do its work now, with the reason when not).

use std::future::Future;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The content type of the Prometheus text exposition format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The admin router: `metrics` renders the exposition text at each scrape;
/// `readiness` answers `Err(reason)` when the process cannot serve now.
pub fn router<Metrics, Readiness, Ready>(metrics: Metrics, readiness: Readiness) -> Router
where
    Metrics: Fn() -> String + Clone + Send + Sync + 'static,
    Readiness: Fn() -> Ready + Clone + Send + Sync + 'static,
    Ready: Future<Output = Result<(), String>> + Send + 'static,
{
    Router::new()
        .route("/metrics", get(move || std::future::ready(exposition(metrics()))))
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(move || {
                let ready = readiness();
                async move {
                    match ready.await {
                        Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
                        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {reason}\n")),
                    }
                }
            }),
        )
}

fn exposition(text: String) -> Response {
    let mut response = text.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_TEXT));
    response
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    async fn get_text(router: &Router, path: &str) -> (StatusCode, Option<String>, String) {
        let request = Request::get(path).body(Body::empty()).expect("request");
        let response = router.clone().oneshot(request).await.expect("response");
        let status = response.status();
        let content_type =
            response.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).map(str::to_owned);
        let body = response.into_body().collect().await.expect("body").to_bytes();
        (status, content_type, String::from_utf8(body.to_vec()).expect("text"))
    }

    #[tokio::test]
    async fn metrics_are_rendered_at_each_scrape_as_prometheus_text() {
        let scrapes = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = Arc::clone(&scrapes);
        let metrics = move || format!("scrapes_total {}\n", counted.fetch_add(1, Ordering::Relaxed) + 1);
        let router = router(metrics, || async { Ok(()) });
        assert_eq!(
            get_text(&router, "/metrics").await,
            (StatusCode::OK, Some(PROMETHEUS_TEXT.into()), "scrapes_total 1\n".into())
        );
        assert_eq!(get_text(&router, "/metrics").await.2, "scrapes_total 2\n");
    }

    #[tokio::test]
    async fn readiness_follows_the_probe_and_gives_its_reason() {
        let down = Arc::new(AtomicBool::new(true));
        let probe = Arc::clone(&down);
        let readiness = move || {
            let down = probe.load(Ordering::Relaxed);
            async move { if down { Err("store unreachable".to_owned()) } else { Ok(()) } }
        };
        let router = router(String::new, readiness);
        let (status, _, body) = get_text(&router, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "not ready: store unreachable\n"));
        down.store(false, Ordering::Relaxed);
        let (status, _, body) = get_text(&router, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ready\n"));
        let (status, _, body) = get_text(&router, "/healthz").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    }
}
