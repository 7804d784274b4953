//! The change feed's cursor (`FeedCursor::decode`), as `since` carries it.

use read_model::change_feed::{FeedCursor, MalformedCursor};

use crate::service::{problem_code, query_value, service};

/// Decoding never panics, and a cursor that decodes is one this service
/// could have issued: encoding it and decoding again gives it back, in
/// characters that need no escaping in a URL. As `since` (read without the
/// whitespace around it), a text that does not decode is refused as
/// `invalid_cursor`; one that does is a page whose links are URLs, a
/// cursor of the other audience's feed, or one that is gone.
pub fn check(input: &[u8]) {
    check_cursor(input, "/bulk/changes", FeedCursor::decode, FeedCursor::encode);
}

/// [`check`] for the feed at `path`, whose cursors `decode` reads and `encode` writes.
pub(crate) fn check_cursor<C: PartialEq + std::fmt::Debug>(
    input: &[u8],
    path: &str,
    decode: fn(&str) -> Result<C, MalformedCursor>,
    encode: fn(&C) -> String,
) {
    let text = String::from_utf8_lossy(input);
    if let Ok(cursor) = decode(&text) {
        let encoded = encode(&cursor);
        assert!(
            encoded.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte)),
            "a cursor's text needs escaping: {encoded:?}"
        );
        assert_eq!(decode(&encoded), Ok(cursor), "a cursor does not survive encoding");
    }
    let service = service();
    let answer = service.get(&format!("{path}?limit=1&since={}", query_value(&text)), &service.production_key);
    let code = problem_code(&answer);
    if answer.status == axum::http::StatusCode::OK {
        let page: serde_json::Value = serde_json::from_slice(&answer.body).expect("a page is JSON");
        for link in [&page["links"]["self"], &page["links"]["next"]] {
            let link = link.as_str().expect("a page links itself and the next");
            assert!(axum::http::Uri::try_from(link).is_ok(), "since={text:?} gave the link {link:?}");
        }
    }
    match decode(text.trim()) {
        Err(_) => assert_eq!(code.as_deref(), Some("invalid_cursor"), "since={text:?} answered {}", answer.status),
        Ok(_) => assert!(
            matches!(code.as_deref(), None | Some("cursor_of_another_audience" | "cursor_gone")),
            "since={text:?} answered {} {code:?}",
            answer.status
        ),
    }
}

/// The cursors of every change of the fixtures' feeds, both audiences.
pub fn seeds() -> Vec<Vec<u8>> {
    service().feed_cursors.iter().map(|cursor| cursor.clone().into_bytes()).collect()
}
