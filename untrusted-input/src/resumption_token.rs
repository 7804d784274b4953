//! OAI-PMH's resumption token (`ResumptionToken::decode`).

use query_api::oai::resumption::ResumptionToken;
use read_model::change_feed::FeedCursor;

use crate::service::{query_value, service};

/// Decoding never panics, and a token that decodes is read back the same
/// after encoding. A harvest resumed with a text that does not decode is
/// answered with OAI-PMH's `badResumptionToken`.
pub fn check(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let decoded = ResumptionToken::decode(&text);
    if let Some(token) = &decoded {
        assert_eq!(ResumptionToken::decode(&token.encode()).as_ref(), Some(token), "a token does not survive encoding");
    }
    let service = service();
    let answer =
        service.get(&format!("/oai?verb=ListRecords&resumptionToken={}", query_value(&text)), &service.production_key);
    let refused = String::from_utf8_lossy(&answer.body).contains("code=\"badResumptionToken\"");
    if decoded.is_none() {
        assert!(refused, "resumptionToken={text:?} was not refused: {}", String::from_utf8_lossy(&answer.body));
    }
}

/// Tokens at every change of the fixtures' feeds, with and without an end.
pub fn seeds() -> Vec<Vec<u8>> {
    service()
        .feed_cursors
        .iter()
        .filter_map(|text| FeedCursor::decode(text).ok())
        .enumerate()
        .map(|(index, cursor)| {
            let until_sequence = (index % 2 == 1).then_some(cursor.position.sequence + 1_000);
            ResumptionToken { cursor, until_sequence }.encode().into_bytes()
        })
        .collect()
}
