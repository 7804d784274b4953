//! The ceiling of the API load benchmark (`scripts/bench-api.sh`): the least
//! an axum server can do per request on this machine. Every request gets the
//! same JSON body of a given size, with no key check, no rate limit, no store
//! read and no metrics, on the same runtime and HTTP stack as the query API.
//!
//!     constant_body_server ADDRESS BODY_BYTES

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let address = arguments.next().context("usage: constant_body_server ADDRESS BODY_BYTES")?;
    let size: usize = arguments.next().context("missing BODY_BYTES")?.parse().context("BODY_BYTES is a number")?;
    // A JSON string of the requested length: {"padding":"xxxx…"}.
    let padding = size.saturating_sub(r#"{"padding":""}"#.len());
    let body = Bytes::from(format!(r#"{{"padding":"{}"}}"#, "x".repeat(padding)));
    let answer = move || {
        let body = body.clone();
        async move { ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response() }
    };
    let router = Router::new().fallback(answer);
    let listener =
        tokio::net::TcpListener::bind(&address).await.with_context(|| format!("failed to bind {address}"))?;
    axum::serve(listener, router).await.context("failed to serve")
}
