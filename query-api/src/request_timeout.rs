//! The per-request timeout: a request whose answer is not ready within the
//! configured time gets a 503 problem (`request_timeout`) instead of holding
//! its connection. Only the wait for the answer's head is bounded: a body
//! streamed from disk (a snapshot file) may take as long as the client
//! reads.

use std::time::Duration;

use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;

/// The answer `answer` gives, or a 503 problem when it takes longer than
/// `timeout`; `route` names the request in the warning.
pub async fn within(timeout: Duration, route: &str, answer: impl Future<Output = Response>) -> Response {
    match tokio::time::timeout(timeout, answer).await {
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
        let answered = within(timeout, "/at-once", async { "done".into_response() }).await;
        assert_eq!(answered.status(), StatusCode::OK);
        let timed_out = within(timeout, "/never", std::future::pending()).await;
        assert_eq!(timed_out.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(timed_out.headers()["content-type"], "application/problem+json");
        let body = timed_out.into_body().collect().await.expect("body").to_bytes();
        let problem: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(problem["code"], "request_timeout");
    }
}
