//! The path and query of a request, through the router: path parameters
//! (ids, ISWCs, snapshot and file names), query parameters (`iswc`,
//! `isrc`, `page`, `limit`, `since`, `sha256`, `audience`, OAI-PMH's
//! arguments and its resumption token) and their percent-encodings.
//!
//! The input's first byte chooses the key (see `FuzzedService::key`), the
//! method and the accepted encodings; the rest is the request target. A
//! target that is not a URI never reaches the router (the HTTP server
//! answers 400 first), so it is skipped.

use axum::body::Body;
use axum::http::{Method, Request, Uri};
use query_api::app::BASE_PATH;

use crate::service::{after_key_choices, assert_keeps_the_contract, service};

const METHODS: [Method; 4] = [Method::GET, Method::GET, Method::HEAD, Method::POST];
const ENCODINGS: [&str; 4] = ["", "gzip", "br, zstd", "*"];

/// Every answer keeps the contract (`assert_keeps_the_contract`).
pub fn check(input: &[u8]) {
    let Some((&choices, target)) = input.split_first() else { return };
    let Ok(uri) = Uri::try_from(target) else { return };
    let method = METHODS[usize::from(choices >> 3) % METHODS.len()].clone();
    let service = service();
    let mut request = Request::builder().method(method.clone()).uri(uri.clone());
    if let Some(key) = service.key(choices) {
        request = request.header("x-api-key", key);
    }
    let encoding = ENCODINGS[usize::from(choices >> 5) % ENCODINGS.len()];
    if !encoding.is_empty() {
        request = request.header("accept-encoding", encoding);
    }
    let request = request.body(Body::empty()).expect("a request of a valid URI");
    let answer = service.send(request);
    assert_keeps_the_contract(&format!("{method} {uri}"), &answer);
}

/// A request to every endpoint with the fixtures' ids and identifiers,
/// real cursors, snapshot ids and resumption tokens, in each key's reach.
pub fn seeds() -> Vec<Vec<u8>> {
    let service = service();
    let cursor = service.feed_cursors.first().cloned().unwrap_or_default();
    let mut targets: Vec<String> = [
        "/rights/SANDBOX-LCC-0003",
        "/rights/LCC-0000000001",
        "/rights?iswc=T-900.000.001-1",
        "/rights?isrc=QZSB12500001",
        "/rights?iswc=T9000000011",
        "/rights/SANDBOX-LCC-0003/verify?sha256=6ead1b3cdd41059b66e8ca79e8c3183f418fdc1e242cc1a02bfaab2099dd4309",
        "/rights/SANDBOX-LCC-0003/verify?certificateId=SANDBOX-CERT-0003",
        "/licenses/SANDBOX-LIC-BLANKET-ACTIVE/status",
        "/rights/SANDBOX-LCC-0003/metadata",
        "/rights/SANDBOX-LCC-0003/metadata?format=xml",
        "/rights/SANDBOX-LCC-0003/provenance",
        "/rights/SANDBOX-LCC-0003/evidence",
        "/bulk/works?page=1&limit=2",
        "/bulk/works?page=3&limit=1000",
        "/bulk/changes?limit=2",
        "/bulk/snapshots",
        "/sandbox/fixtures",
        "/keys",
        "/keys?audience=sandbox",
        "/openapi.json",
        "/oai?verb=Identify",
        "/oai?verb=ListMetadataFormats",
        "/oai?verb=ListSets",
        "/oai?verb=ListRecords&metadataPrefix=oai_dc",
        "/oai?verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-01&until=2030-01-01T00:00:00Z",
        "/oai?verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:lcc:SANDBOX-LCC-0003",
    ]
    .into_iter()
    .map(|path| format!("{BASE_PATH}{path}"))
    .collect();
    targets.push(format!("{BASE_PATH}/bulk/changes?since={cursor}&limit=3"));
    targets.push(format!("{BASE_PATH}/oai?verb=ListRecords&resumptionToken={cursor}~99"));
    for snapshot in &service.snapshot_ids {
        targets.push(format!("{BASE_PATH}/bulk/snapshots/{snapshot}"));
        targets.push(format!("{BASE_PATH}/bulk/snapshots/{snapshot}/files/works-00000.ndjson.gz"));
        targets.push(format!("{BASE_PATH}/bulk/snapshots/{snapshot}/files/works-00000.parquet"));
    }
    targets.push("/api/docs".into());
    after_key_choices(targets, &[1, 2])
}
