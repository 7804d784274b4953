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
//! An answer stamped with the instant it was issued (an evidence package's
//! signed `generatedAt`) differs in its bytes at every issue, so a strong
//! tag would never match: its handler gives the layer what the answer
//! states without the instant ([`StatedContent`]), and the layer tags that
//! with a weak tag (RFC 9110, section 8.8.1), which `If-None-Match` matches.
//!
//! Where a handler gives `Last-Modified` (a date after which the answer has
//! not changed), `If-Modified-Since` answers 304 too, unless the request
//! also has `If-None-Match`, which takes precedence (RFC 9110, 13.2.2).
//!
//! Answers streamed from disk (snapshot files) carry their own tag and
//! handle their conditions themselves; this layer leaves any answer that
//! already has a tag alone.

use std::hash::{BuildHasher, Hasher};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use foldhash::quality::FixedState;
use http_body_util::BodyExt;

/// `Vary`: answers depend on the key (its audience and scopes) and on `Accept`.
const VARY: &str = "accept, x-api-key";

/// Keyed answers belong to one client: no shared cache keeps them, and the
/// client revalidates before it reuses one. Keyless answers may be shared.
const KEYED_CACHE_CONTROL: &str = "private, no-cache";
const KEYLESS_CACHE_CONTROL: &str = "public, no-cache";

/// What an answer stamped with its issue instant states without it: the
/// bytes its weak tag is computed over.
#[derive(Debug, Clone)]
pub struct StatedContent(pub Bytes);

/// Adds the tag to a `GET` answer, and answers 304 when the client holds it.
pub async fn conditional(request: Request, next: Next) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
    let if_modified_since = request.headers().get(header::IF_MODIFIED_SINCE).cloned();
    let key_kind = key_kind(request.headers());
    let response = next.run(request).await;
    if response.status() != StatusCode::OK || response.headers().contains_key(header::ETAG) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let bytes = collected.to_bytes();
    let content_type = parts.headers.get(header::CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
    let tag = match parts.extensions.remove::<StatedContent>() {
        Some(StatedContent(stated)) => format!("W/{}", entity_tag(key_kind, content_type, &stated)),
        None => entity_tag(key_kind, content_type, &bytes),
    };
    let cache_control = if key_kind == KeyKind::None { KEYLESS_CACHE_CONTROL } else { KEYED_CACHE_CONTROL };
    if !parts.headers.contains_key(header::CACHE_CONTROL) {
        parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    }
    parts.headers.insert(header::VARY, HeaderValue::from_static(VARY));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        parts.headers.insert(header::ETAG, value);
    }
    let not_modified = match (&if_none_match, &if_modified_since) {
        (Some(condition), _) => names_tag(condition, &tag),
        (None, Some(since)) => unmodified_since(parts.headers.get(header::LAST_MODIFIED), since),
        (None, None) => false,
    };
    if not_modified {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_TYPE);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Which kind of key a request carries, by the prefix every key has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    None,
    Sandbox,
    Production,
}

fn key_kind(headers: &HeaderMap) -> KeyKind {
    match headers.get("x-api-key").and_then(|value| value.to_str().ok()) {
        None => KeyKind::None,
        Some(key) if crate::keys::sandbox::SandboxKeys::is_sandbox_key(key.trim()) => KeyKind::Sandbox,
        Some(_) => KeyKind::Production,
    }
}

/// The strong tag of an answer: 128 bits of a fixed-seed hash, the same on
/// every replica of one build.
fn entity_tag(key_kind: KeyKind, content_type: &[u8], body: &[u8]) -> String {
    let half = |seed: u64| {
        let mut hasher = FixedState::with_seed(seed).build_hasher();
        hasher.write_u8(key_kind as u8);
        hasher.write(content_type);
        hasher.write(body);
        hasher.finish()
    };
    format!("\"{:016x}{:016x}\"", half(0x6c63_635f_7461_6731), half(0x6c63_635f_7461_6732))
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
    fn tags_differ_by_bytes_representation_and_audience_and_are_stable() {
        let json = entity_tag(KeyKind::Sandbox, b"application/json", b"{}");
        assert_eq!(json, entity_tag(KeyKind::Sandbox, b"application/json", b"{}"), "stable");
        assert_eq!(json.len(), 34, "32 hexadecimal digits, quoted");
        assert_ne!(json, entity_tag(KeyKind::Production, b"application/json", b"{}"));
        assert_ne!(json, entity_tag(KeyKind::Sandbox, b"application/xml", b"{}"));
        assert_ne!(json, entity_tag(KeyKind::Sandbox, b"application/json", b"{ }"));
    }

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
}
