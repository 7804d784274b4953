//! Conditional requests: every `200` answer to a `GET` that the router
//! builds in memory gets a strong entity tag, and a request whose
//! `If-None-Match` names it gets `304` with no body.
//!
//! The tag is a 128-bit hash of what the answer is: its bytes, its content
//! type and the kind of key it was answered to. So each representation has
//! its own tag (the JSON and the `oai_dc` XML of one record differ; a sandbox
//! and a production answer differ even with equal bytes), and an answer
//! computed at request time (a remaining term, a verification date) gets a
//! new tag exactly when its content changes. A 304 has passed the access
//! guard like any answer, so it counts against the rate limit.
//!
//! An answer computed at request time (a verification, an evidence package
//! stamped with the instant it was issued, a provenance assembled from its
//! entries) gets from its handler the weak tag of what it states
//! ([`KnownTag`], RFC 9110, section 8.8.1), computed from the stored inputs
//! by `read_model::answer_tags`: the same tag the projector records in the
//! notification of a change, and one that `If-None-Match` matches while
//! the answer states the same, whatever its issue instant.
//!
//! Where a handler gives `Last-Modified` (a date after which the answer has
//! not changed), `If-Modified-Since` answers 304 too, unless the request
//! also has `If-None-Match`, which takes precedence (RFC 9110, 13.2.2).
//!
//! Every answer is also compressed here when the request accepts a coding
//! (`crate::compression`): a compressed representation's tag is the
//! identity tag marked with its coding (`"…-gzip"`), so a cache never takes
//! one coding's bytes for another's tag, and `If-None-Match` with it is
//! answered 304 when the same coding is negotiated again.
//!
//! Answers streamed from disk (snapshot files) carry their own tag and
//! handle their conditions themselves; an answer that already has a tag
//! is left alone, and those files are sent as they are.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use read_model::answer_tags::{self, Requester};

use crate::compression::{self, Encoding};

// Header values are constants: `HeaderValue::from_static` outside a
// constant checks every byte again on each answer.

/// `Vary`: answers depend on the key (its audience and scopes), on `Accept`
/// and, through their coding, on `Accept-Encoding`.
const VARY: HeaderValue = HeaderValue::from_static("accept, accept-encoding, x-api-key");

/// `Vary` of an untagged answer that was offered a coding.
const VARY_CODING: HeaderValue = HeaderValue::from_static("accept-encoding");

/// Bodies at least this large are compressed off the request threads.
const COMPRESSED_ON_A_BLOCKING_THREAD_FROM: usize = 64 * 1024;

/// Keyed answers belong to one client: no shared cache keeps them, and the
/// client revalidates before it reuses one. Keyless answers may be shared.
const KEYED_CACHE_CONTROL: HeaderValue = HeaderValue::from_static("private, no-cache");
const KEYLESS_CACHE_CONTROL: HeaderValue = HeaderValue::from_static("public, no-cache");

/// The tag a handler computed for its answer (a weak tag of what a
/// computed answer states), used instead of a hash of the bytes.
#[derive(Debug, Clone)]
pub struct KnownTag(pub String);

/// What a request asks of its answer's representation, taken before the
/// request is handed on: the coding it accepts and, for a `GET`, its
/// conditions and the kind of key it carries.
#[derive(Debug)]
pub struct Conditions {
    encoding: Option<Encoding>,
    /// `None` for any method but `GET`: such answers get no tag.
    get: Option<GetConditions>,
}

#[derive(Debug)]
struct GetConditions {
    if_none_match: Option<HeaderValue>,
    if_modified_since: Option<HeaderValue>,
    key_kind: Requester,
}

impl Conditions {
    pub fn of(request: &Request) -> Conditions {
        let headers = request.headers();
        let encoding =
            headers.get(header::ACCEPT_ENCODING).and_then(|value| value.to_str().ok()).and_then(compression::negotiate);
        let get = (request.method() == Method::GET).then(|| GetConditions {
            if_none_match: headers.get(header::IF_NONE_MATCH).cloned(),
            if_modified_since: headers.get(header::IF_MODIFIED_SINCE).cloned(),
            key_kind: key_kind(headers),
        });
        Conditions { encoding, get }
    }

    /// Adds the tag to a `GET` answer, compresses any answer as the request
    /// accepted, and answers 304 when the client holds the tag.
    pub async fn apply(self, response: Response) -> Response {
        let Conditions { encoding, get } = self;
        let Some(GetConditions { if_none_match, if_modified_since, key_kind }) = get else {
            return compressed_untagged(response, encoding).await;
        };
        // Streamed files carry their own tag and are already compressed files;
        // an event stream never ends, so it is neither collected nor tagged.
        if response.headers().contains_key(header::ETAG) || is_event_stream(&response) {
            return response;
        }
        if response.status() != StatusCode::OK {
            return compressed_untagged(response, encoding).await;
        }
        let (mut parts, body) = response.into_parts();
        let Ok(collected) = body.collect().await else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let bytes = collected.to_bytes();
        let content_type = parts.headers.get(header::CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
        let mut tag = match parts.extensions.remove::<KnownTag>() {
            Some(KnownTag(tag)) => tag,
            None => answer_tags::strong(key_kind, content_type, &bytes),
        };
        let mut body = bytes;
        if let Some(encoding) = encoding.filter(|_| worth_compressing(&parts.headers, &body))
            && let Some(compressed) = compress(encoding, body.clone()).await
        {
            tag = with_coding(&tag, encoding);
            parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding.token()));
            parts.headers.remove(header::CONTENT_LENGTH);
            body = compressed;
        }
        let cache_control = if key_kind == Requester::Keyless { KEYLESS_CACHE_CONTROL } else { KEYED_CACHE_CONTROL };
        if !parts.headers.contains_key(header::CACHE_CONTROL) {
            parts.headers.insert(header::CACHE_CONTROL, cache_control);
        }
        parts.headers.insert(header::VARY, VARY);
        let not_modified = match (&if_none_match, &if_modified_since) {
            (Some(condition), _) => names_tag(condition, &tag),
            (None, Some(since)) => unmodified_since(parts.headers.get(header::LAST_MODIFIED), since),
            (None, None) => false,
        };
        // The tag's own bytes become the header's, without a copy.
        if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(tag)) {
            parts.headers.insert(header::ETAG, value);
        }
        if not_modified {
            parts.status = StatusCode::NOT_MODIFIED;
            parts.headers.remove(header::CONTENT_TYPE);
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.remove(header::CONTENT_ENCODING);
            return Response::from_parts(parts, Body::empty());
        }
        Response::from_parts(parts, Body::from(body))
    }
}

fn is_event_stream(response: &Response) -> bool {
    response.headers().get(header::CONTENT_TYPE).is_some_and(|value| value.as_bytes() == b"text/event-stream")
}

/// A JSON or XML body of at least the compression minimum, not yet coded.
fn worth_compressing(headers: &HeaderMap, body: &[u8]) -> bool {
    body.len() >= compression::MINIMUM_BYTES
        && !headers.contains_key(header::CONTENT_ENCODING)
        && headers.get(header::CONTENT_TYPE).is_some_and(|value| compression::is_compressible(value.as_bytes()))
}

/// `body` in `encoding`; `None` (send it as it is) if the coder fails.
async fn compress(encoding: Encoding, body: Bytes) -> Option<Bytes> {
    let coded = if body.len() >= COMPRESSED_ON_A_BLOCKING_THREAD_FROM {
        tokio::task::spawn_blocking(move || encoding.compress(&body)).await.ok()?
    } else {
        encoding.compress(&body)
    };
    match coded {
        Ok(coded) => Some(Bytes::from(coded)),
        Err(error) => {
            tracing::error!(%error, encoding = encoding.token(), "failed to compress an answer; sent as it is");
            None
        }
    }
}

/// Compresses an answer that has no tag (a `POST` answer, a problem) when
/// the request accepts a coding and the body is worth it.
async fn compressed_untagged(response: Response, encoding: Option<Encoding>) -> Response {
    let Some(encoding) = encoding else { return response };
    let compressible = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| compression::is_compressible(value.as_bytes()));
    if !compressible || response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let bytes = collected.to_bytes();
    parts.headers.append(header::VARY, VARY_CODING);
    if !worth_compressing(&parts.headers, &bytes) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    match compress(encoding, bytes.clone()).await {
        Some(compressed) => {
            parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding.token()));
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(compressed))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// The tag of a coded representation: the identity tag marked with the coding.
fn with_coding(tag: &str, encoding: Encoding) -> String {
    match tag.strip_suffix('"') {
        Some(open) => format!("{open}-{}\"", encoding.token()),
        None => tag.to_owned(),
    }
}

/// Which kind of key a request carries, by the prefix every key has.
fn key_kind(headers: &HeaderMap) -> Requester {
    match headers.get(crate::keys::API_KEY_HEADER).and_then(|value| value.to_str().ok()) {
        None => Requester::Keyless,
        Some(key) if crate::keys::sandbox::SandboxKeys::is_sandbox_key(key.trim()) => Requester::Sandbox,
        Some(_) => Requester::Production,
    }
}

/// Whether an `If-None-Match` value names `tag` (weak comparison, as RFC
/// 9110 asks for this header), or is `*`.
pub(crate) fn names_tag(condition: &HeaderValue, tag: &str) -> bool {
    let Ok(text) = condition.to_str() else { return false };
    let tag = tag.trim_start_matches("W/");
    text.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == tag)
}

/// Whether an answer last modified at `last_modified` is unchanged since
/// the `If-Modified-Since` date; an answer without a date, or a date that
/// does not parse, is not.
pub(crate) fn unmodified_since(last_modified: Option<&HeaderValue>, since: &HeaderValue) -> bool {
    let parse = |value: &HeaderValue| value.to_str().ok().and_then(crate::http_date::parse);
    match (last_modified.and_then(parse), parse(since)) {
        (Some(modified), Some(since)) => modified <= since,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_names_a_tag_in_a_list_weakly_or_with_a_star() {
        let tag = "\"abc\"";
        for matching in ["\"abc\"", "W/\"abc\"", "\"x\", \"abc\"", "*"] {
            assert!(names_tag(&HeaderValue::from_static(matching), tag), "{matching}");
        }
        for other in ["\"abd\"", "abc", ""] {
            assert!(!names_tag(&HeaderValue::from_static(other), tag), "{other}");
        }
    }

    #[test]
    fn a_coded_representation_has_the_identity_tag_marked_with_its_coding() {
        assert_eq!(with_coding("\"abc\"", Encoding::Gzip), "\"abc-gzip\"");
        assert_eq!(with_coding("W/\"abc\"", Encoding::Zstd), "W/\"abc-zstd\"");
        assert!(names_tag(&HeaderValue::from_static("\"abc-br\""), &with_coding("\"abc\"", Encoding::Brotli)));
        assert!(!names_tag(&HeaderValue::from_static("\"abc\""), &with_coding("\"abc\"", Encoding::Brotli)));
    }
}
