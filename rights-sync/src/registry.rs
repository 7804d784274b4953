//! The registry's API as the sync calls it: JSON reads with the key, file
//! downloads that resume, and the key's rate limit respected by waiting.
//!
//! It owns what HTTP answers mean for a sync (an answer to act on, a refusal
//! that no retry changes, a registry that cannot answer now) and must not
//! know what the answers hold.

use std::cell::Cell;
use std::io::Read;
use std::time::Duration;

use serde::de::DeserializeOwned;

/// How long one request may take, a file download's included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest wait for the rate limit that the sync accepts before it stops.
const LONGEST_LIMIT_WAIT: Duration = Duration::from_secs(120);
/// Refusals over the rate limit (429) in a row after which a request gives up.
const MOST_REFUSALS_IN_A_ROW: u32 = 10;
/// Bytes of a refusal's body kept for its message.
const REFUSAL_BODY_BYTES: u64 = 4 * 1024;

/// Why a request did not give an answer to act on.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry could not be reached or answered 5xx: a later run may succeed.
    #[error("{path}: the registry cannot answer now: {reason}")]
    Unavailable { path: String, reason: String },
    /// A 4xx answer other than 410 and 429: retrying changes nothing.
    #[error("{path}: the registry refused the request ({status}): {detail}")]
    Refused { path: String, status: u16, detail: String },
    /// 410: the cursor can no longer be continued from.
    #[error("{path}: the registry can no longer continue from the cursor: {detail}")]
    Gone { path: String, detail: String },
    /// An answer that is not what the API describes.
    #[error("{path}: unexpected answer: {reason}")]
    Unexpected { path: String, reason: String },
}

/// A file download's answer.
#[derive(Debug)]
pub enum Download {
    /// The whole file (200).
    Whole(ureq::Body),
    /// The rest of it from the offset asked (206).
    Rest(ureq::Body),
}

/// One registry's API, called with one key (which `Debug` leaves out).
pub struct Registry {
    agent: ureq::Agent,
    /// The origin and base path, without a trailing slash.
    base_url: String,
    key: String,
    /// Set when an answer said the key's quota is spent: how long to wait
    /// before the next request.
    quota_spent_for: Cell<Option<Duration>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Registry").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(base_url: &str, key: String) -> Registry {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        Registry { agent, base_url: base_url.trim_end_matches('/').to_owned(), key, quota_spent_for: Cell::new(None) }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `GET path` (under the base path) with the key, parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self, path: &str) -> Result<T, RegistryError> {
        let body = self.bytes(path)?;
        serde_json::from_slice(&body).map_err(|error| unexpected(path, error))
    }

    /// `GET path` with the key: the answer's bytes.
    pub fn bytes(&self, path: &str) -> Result<Vec<u8>, RegistryError> {
        let mut response = self.get(path, &[])?;
        expect_status(path, &mut response, &[200])?;
        response.body_mut().with_config().limit(u64::MAX).read_to_vec().map_err(|error| unavailable(path, error))
    }

    /// Downloads a file from `offset` on: the rest of it when the file still
    /// has the entity tag `tag` the download began with, else all of it.
    pub fn download(&self, path: &str, offset: u64, tag: &str) -> Result<Download, RegistryError> {
        let range = format!("bytes={offset}-");
        let headers: &[(&str, &str)] = if offset > 0 { &[("range", &range), ("if-range", tag)] } else { &[] };
        let mut response = self.get(path, headers)?;
        let status = expect_status(path, &mut response, &[200, 206])?;
        let body = response.into_body();
        Ok(if status == 206 { Download::Rest(body) } else { Download::Whole(body) })
    }

    /// Sends `GET`, waiting as the rate limit asks: after a 429 for its
    /// `Retry-After`, and before the next request when an answer said the
    /// quota is spent (not before reading that answer, which may be a file
    /// the server is still sending).
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let url = format!("{}{path}", self.base_url);
        if let Some(wait) = self.quota_spent_for.take() {
            wait_for_the_limit(path, wait)?;
        }
        for _ in 0..MOST_REFUSALS_IN_A_ROW {
            let mut request = self.agent.get(&url).header("x-api-key", &self.key);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let response = request.call().map_err(|error| unavailable(path, error))?;
            let header = |name: &str| {
                response.headers().get(name).and_then(|value| value.to_str().ok()).and_then(|text| text.parse().ok())
            };
            if response.status().as_u16() == 429 {
                let wait = Duration::from_secs(header("retry-after").unwrap_or(1));
                tracing::warn!(path, "the registry refused a request over the key's rate limit (429)");
                wait_for_the_limit(path, wait)?;
                continue;
            }
            if header("x-ratelimit-remaining") == Some(0) {
                self.quota_spent_for.set(Some(Duration::from_secs(header("x-ratelimit-reset").unwrap_or(1))));
            }
            return Ok(response);
        }
        let reason = format!("refused {MOST_REFUSALS_IN_A_ROW} times in a row over the key's rate limit");
        Err(RegistryError::Unavailable { path: path.to_owned(), reason })
    }
}

fn wait_for_the_limit(path: &str, wait: Duration) -> Result<(), RegistryError> {
    if wait > LONGEST_LIMIT_WAIT {
        let reason = format!("the key's rate limit asks for a wait of {} s", wait.as_secs());
        return Err(RegistryError::Unavailable { path: path.to_owned(), reason });
    }
    tracing::info!(seconds = wait.as_secs(), "waiting for the key's rate limit");
    std::thread::sleep(wait);
    Ok(())
}

/// The answer's status when it is one of `expected`; otherwise the error it means.
fn expect_status(
    path: &str,
    response: &mut ureq::http::Response<ureq::Body>,
    expected: &[u16],
) -> Result<u16, RegistryError> {
    let status = response.status().as_u16();
    if expected.contains(&status) {
        return Ok(status);
    }
    let mut detail = String::new();
    let _ = response.body_mut().as_reader().take(REFUSAL_BODY_BYTES).read_to_string(&mut detail);
    let detail = serde_json::from_str::<serde_json::Value>(&detail)
        .ok()
        .and_then(|problem| problem["detail"].as_str().map(str::to_owned))
        .unwrap_or(detail);
    let path = path.to_owned();
    Err(match status {
        410 => RegistryError::Gone { path, detail },
        400..=499 => RegistryError::Refused { path, status, detail },
        _ => RegistryError::Unavailable { path, reason: format!("status {status}: {detail}") },
    })
}

fn unavailable(path: &str, error: impl std::fmt::Display) -> RegistryError {
    RegistryError::Unavailable { path: path.to_owned(), reason: error.to_string() }
}

fn unexpected(path: &str, error: impl std::fmt::Display) -> RegistryError {
    RegistryError::Unexpected { path: path.to_owned(), reason: error.to_string() }
}
