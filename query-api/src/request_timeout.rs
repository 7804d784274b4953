//! The per-request timeout: a request whose answer is not ready within the
//! configured time gets a 503 problem (`request_timeout`) instead of holding
//! its connection. Only the wait for the answer's head is bounded: a body
//! streamed from disk (a snapshot file) may take as long as the client
//! reads.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;

/// Answers 503 when `next` takes longer than `timeout`.
pub async fn limit(State(timeout): State<Duration>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(path, timeout = ?timeout, "a request timed out");
            ApiError::RequestTimeout(timeout.as_secs()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request as HttpRequest, StatusCode};
    use axum::routing::get;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn an_answer_that_does_not_come_in_time_is_a_503_problem() {
        let router = Router::new()
            .route("/never", get(std::future::pending::<&'static str>))
            .route("/at-once", get(|| async { "done" }))
            .layer(axum::middleware::from_fn_with_state(Duration::from_millis(20), limit));
        let get = |path: &str| router.clone().oneshot(HttpRequest::get(path).body(Body::empty()).expect("request"));
        let answered = get("/at-once").await.expect("infallible");
        assert_eq!(answered.status(), StatusCode::OK);
        let timed_out = get("/never").await.expect("infallible");
        assert_eq!(timed_out.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(timed_out.headers()["content-type"], "application/problem+json");
        let body = timed_out.into_body().collect().await.expect("body").to_bytes();
        let problem: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(problem["code"], "request_timeout");
    }
}
