//! One HTTP attempt: a signed POST to an endpoint, through the checked
//! resolver, with TLS verified, no redirect followed, a time limit, and at
//! most a few kilobytes of the answer read.
//!
//! The client is blocking; the deliverer runs each attempt on Tokio's
//! blocking pool, so a slow receiver holds one thread, never another
//! subscription's task.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::unversioned::transport::DefaultConnector;

use super::addresses::{CheckedResolver, Resolution};
use super::signature::SignedHeaders;

/// The most of an answer's body read.
pub const ANSWER_BYTES: u64 = 4 * 1024;

/// How attempts are made.
#[derive(Debug, Clone)]
pub struct SenderSettings {
    /// The time limit of one attempt, connection to last byte.
    pub timeout: Duration,
    pub resolution: Resolution,
    /// Whether `http://` endpoints are refused (production).
    pub https_only: bool,
    /// The roots TLS certificates are checked against; Mozilla's when `None`.
    pub roots: Option<Vec<Certificate<'static>>>,
}

/// What an attempt met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status, when the endpoint answered.
    pub status: Option<u16>,
    /// Up to [`ANSWER_BYTES`] of the body, when asked for.
    pub body: Vec<u8>,
    /// Why there is no answer, or it could not be read.
    pub error: Option<String>,
    pub duration: Duration,
}

impl Answer {
    /// Whether the endpoint acknowledged the message: a 2xx answer, read without error.
    pub fn acknowledged(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|status| (200..300).contains(&status))
    }
}

/// Posts signed messages.
#[derive(Debug, Clone)]
pub struct Sender {
    agent: ureq::Agent,
}

impl Sender {
    pub fn new(settings: &SenderSettings) -> Sender {
        let roots = match &settings.roots {
            Some(certificates) => RootCerts::new_with_certs(certificates),
            None => RootCerts::WebPki,
        };
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .https_only(settings.https_only)
            .timeout_global(Some(settings.timeout))
            .user_agent("lcc-rights-webhooks/1")
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build();
        let resolver = CheckedResolver(Arc::new(settings.resolution.clone()));
        Sender { agent: ureq::Agent::with_parts(config, DefaultConnector::default(), resolver) }
    }

    /// Posts `body` to `endpoint` with the signed headers; reads the
    /// answer's body when `read_body`. Blocks for up to the timeout.
    pub fn post(&self, endpoint: &str, headers: &SignedHeaders, body: Vec<u8>, read_body: bool) -> Answer {
        let started = Instant::now();
        let sent = self
            .agent
            .post(endpoint)
            .header("content-type", "application/json")
            .header("webhook-id", &headers.id)
            .header("webhook-timestamp", headers.timestamp.to_string())
            .header("webhook-signature", &headers.signature)
            .header("webhook-key-id", &headers.kid)
            .send(&body[..]);
        let mut answer = Answer { status: None, body: Vec::new(), error: None, duration: Duration::ZERO };
        match sent {
            Ok(mut response) => {
                answer.status = Some(response.status().as_u16());
                if read_body {
                    match response.body_mut().with_config().limit(ANSWER_BYTES).read_to_vec() {
                        Ok(bytes) => answer.body = bytes,
                        Err(error) => answer.error = Some(format!("cannot read the answer: {error}")),
                    }
                }
            }
            Err(error) => answer.error = Some(error.to_string()),
        }
        answer.duration = started.elapsed();
        answer
    }
}
