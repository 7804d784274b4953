//! The body of a batch lookup (`POST /rights/lookup`), through the router.
//!
//! The input's first byte chooses the key (see `FuzzedService::key`) and
//! whether the body is declared JSON; the rest is the body.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use query_api::app::BASE_PATH;

use crate::service::{after_key_choices, assert_keeps_the_contract, service};

/// Every answer keeps the contract (`assert_keeps_the_contract`), and a
/// batch that is answered counts one result for each of its identifiers.
pub fn check(input: &[u8]) {
    let Some((&choices, body)) = input.split_first() else { return };
    let service = service();
    let mut request = Request::post(format!("{BASE_PATH}/rights/lookup"));
    if let Some(key) = service.key(choices) {
        request = request.header("x-api-key", key);
    }
    if choices & 0x80 == 0 {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let request = request.body(Body::from(body.to_vec())).expect("a request");
    let answer = service.send(request);
    assert_keeps_the_contract("POST /rights/lookup", &answer);
    if answer.status == StatusCode::OK {
        let batch: serde_json::Value = serde_json::from_slice(&answer.body).expect("an answered batch is JSON");
        let results = batch["results"].as_array().expect("an answered batch has results");
        assert_eq!(batch["count"].as_u64(), u64::try_from(results.len()).ok(), "count and results disagree");
    }
}

/// Batches of the fixtures' ids, ISWCs and ISRCs, found and not, for both audiences.
pub fn seeds() -> Vec<Vec<u8>> {
    let bodies = [
        r#"{"lccIds":["SANDBOX-LCC-0003","SANDBOX-LCC-9999"],"iswcs":["T-900.000.001-1"]}"#,
        r#"{"isrcs":["QZSB12500001","QZ-SB1-25-00002"]}"#,
        r#"{"lccIds":["LCC-0000000001","LCC-0000000002","LCC-0000000040"]}"#,
        r#"{"lccIds":[],"iswcs":[],"isrcs":[]}"#,
        r#"{"iswcs":["T9000000011","T-900.000.002-2"],"lccIds":["SANDBOX-LCC-0001"]}"#,
    ];
    after_key_choices(bodies.map(str::to_owned), &[1, 2])
}
