//! The per-request timeout: a request whose answer is not ready within the
//! configured time gets a 503 problem (`request_timeout`) instead of holding
//! its connection. Only the wait for the answer's head is bounded: a body
//! streamed from disk (a snapshot file) may take as long as the client
//! reads.

use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;

/// The answer `answer` gives, or a 503 problem when it is not ready
/// `timeout` after `started`; `route` names the request in the warning.
/// The caller's start is taken rather than the clock read again: the
/// edge reads it for the request's metrics anyway.
pub async fn within(
    started: Instant,
    timeout: Duration,
    route: &str,
    answer: impl Future<Output = Response>,
) -> Response {
    // A timeout too long to add to an instant never comes.
    let Some(deadline) = started.checked_add(timeout) else { return answer.await };
    match tokio::time::timeout_at(deadline.into(), answer).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(route, timeout = ?timeout, "a request timed out");
            ApiError::RequestTimeout(timeout.as_secs()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn an_answer_that_does_not_come_in_time_is_a_503_problem() {
        let timeout = Duration::from_millis(20);
        let answered = within(Instant::now(), timeout, "/at-once", async { "done".into_response() }).await;
        assert_eq!(answered.status(), StatusCode::OK);
        let timed_out = within(Instant::now(), timeout, "/never", std::future::pending()).await;
        assert_eq!(timed_out.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(timed_out.headers()["content-type"], "application/problem+json");
        let body = timed_out.into_body().collect().await.expect("body").to_bytes();
        let problem: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(problem["code"], "request_timeout");
    }

    #[tokio::test]
    async fn the_time_counts_from_the_request_start() {
        // An answer that is ready on its second poll.
        let late = || async {
            tokio::task::yield_now().await;
            "late".into_response()
        };
        let timeout = Duration::from_secs(10);
        let earlier = Instant::now() - 2 * timeout;
        assert_eq!(within(Instant::now(), timeout, "/fresh", late()).await.status(), StatusCode::OK);
        assert_eq!(within(earlier, timeout, "/stale", late()).await.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(within(earlier, Duration::MAX, "/unbounded", late()).await.status(), StatusCode::OK);
    }
}
