//! A span per request, named by a request id that the answer carries in
//! `x-request-id`: taken from the request when a proxy (or the caller) set a
//! well-formed one, so one id follows a request through the balancer's log
//! and ours; otherwise made here, unique across replicas.
//!
//! Whatever the handlers log happens inside the span, so an error names the
//! request it belongs to. The span records the method, the route template
//! and the status, never a header, a query string or a body: those may hold
//! keys or personal data.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use tracing::Span;

pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id taken from a request; a longer one is replaced.
const MAX_REQUEST_ID_LENGTH: usize = 128;

/// The request's id: the one it carries when that is well formed, or a new one.
pub fn request_id(headers: &HeaderMap) -> HeaderValue {
    headers
        .get(&REQUEST_ID_HEADER)
        .filter(|value| is_well_formed(value.as_bytes()))
        .cloned()
        .unwrap_or_else(new_request_id)
}

/// The span a request is answered in; its status is recorded when it is known.
pub fn span(request_id: &HeaderValue, method: &Method, route: &str) -> Span {
    tracing::info_span!(
        "request",
        request_id = request_id.to_str().unwrap_or_default(),
        method = %method,
        route,
        status = tracing::field::Empty,
    )
}

/// Visible ASCII without spaces, at most [`MAX_REQUEST_ID_LENGTH`] bytes,
/// and not an API key that a client put in the wrong header: what a log
/// line can carry safely.
fn is_well_formed(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_REQUEST_ID_LENGTH
        && id.iter().all(|byte| byte.is_ascii_graphic())
        && !id.starts_with(b"lcc_")
}

/// A random per-process prefix and a counter: unique across replicas and
/// restarts without a random draw per request.
fn new_request_id() -> HeaderValue {
    static PREFIX: LazyLock<String> = LazyLock::new(|| {
        crate::keys::random_bytes::<6>().map(|bytes| read_model::hex::lower_hex(&bytes)).unwrap_or_else(|_| {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            format!("{:012x}", nanos.as_nanos() as u64 & 0xffff_ffff_ffff)
        })
    });
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // The counter in at least ten hexadecimal digits, written without the
    // formatting machinery: this runs on every request that brings no id.
    let mut counter = [0_u8; 16];
    read_model::hex::write_lower_hex(&COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes(), &mut counter);
    let significant = counter.len() - counter.iter().take_while(|&&digit| digit == b'0').count();
    let counter = &counter[counter.len() - significant.max(10)..];
    let mut id = Vec::with_capacity(PREFIX.len() + 1 + counter.len());
    id.extend_from_slice(PREFIX.as_bytes());
    id.push(b'-');
    id.extend_from_slice(counter);
    // Made at its length, so the bytes take it over as it is, not copied:
    // the id is hex and a dash.
    HeaderValue::from_maybe_shared(axum::body::Bytes::from(id)).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_visible_ascii_ids_are_taken_from_requests() {
        assert!(is_well_formed(b"f3b2c1d0-7a6b-4c5d-8e9f-0a1b2c3d4e5f"));
        assert!(!is_well_formed(b""));
        assert!(!is_well_formed(b"two words"));
        assert!(!is_well_formed("caf\u{e9}".as_bytes()));
        assert!(!is_well_formed(&[b'a'; MAX_REQUEST_ID_LENGTH + 1]));
        assert!(!is_well_formed(b"lcc_live_0123456789abcdef"), "a key is never logged as an id");
    }

    #[test]
    fn made_ids_are_distinct_and_well_formed() {
        let (first, second) = (new_request_id(), new_request_id());
        assert_ne!(first, second);
        assert!(is_well_formed(first.as_bytes()), "{first:?}");
        let (prefix, counter) = first.to_str().expect("ascii").split_once('-').expect("a dash");
        assert_eq!((prefix.len(), counter.len()), (12, 10), "{first:?}");
        assert!(counter.bytes().all(|digit| digit.is_ascii_hexdigit()), "{first:?}");
    }
}
