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
