//! Compression through the router: each coding gives back the identity
//! body, carries its own tag (304 for it), and files and small bodies are
//! sent as they are.

mod support;

use std::io::Read as _;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use support::{BASE, Service};

async fn get(service: &Service, path: &str, headers: &[(&str, &str)]) -> (Response, Vec<u8>) {
    let mut request = Request::get(format!("{BASE}{path}")).header("x-api-key", &service.full_key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = service.send(request.body(Body::empty()).expect("request")).await;
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes().to_vec();
    (Response::from_parts(parts, Body::empty()), bytes)
}

fn decoded(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    match coding {
        "gzip" => flate2::read::GzDecoder::new(body).read_to_end(&mut plain).map(|_| ()).expect("gunzip"),
        "br" => brotli::Decompressor::new(body, 4096).read_to_end(&mut plain).map(|_| ()).expect("unbrotli"),
        "zstd" => plain = zstd::stream::decode_all(body).expect("unzstd"),
        other => panic!("unexpected coding {other}"),
    }
    plain
}

fn header_text(response: &Response, name: header::HeaderName) -> Option<&str> {
    response.headers().get(name).and_then(|value| value.to_str().ok())
}

#[tokio::test]
async fn each_coding_gives_back_the_identity_body_under_its_own_tag() {
    let service = Service::start().await;
    let page = "/bulk/works?limit=200";
    let (identity, plain) = get(&service, page, &[]).await;
    assert_eq!(identity.status(), StatusCode::OK);
    assert_eq!(header_text(&identity, header::CONTENT_ENCODING), None);
    let identity_tag = header_text(&identity, header::ETAG).expect("tag").to_owned();
    for coding in ["gzip", "br", "zstd"] {
        let (coded, body) = get(&service, page, &[("accept-encoding", coding)]).await;
        assert_eq!(header_text(&coded, header::CONTENT_ENCODING), Some(coding));
        assert!(header_text(&coded, header::VARY).is_some_and(|vary| vary.contains("accept-encoding")));
        let tag = header_text(&coded, header::ETAG).expect("tag").to_owned();
        assert_eq!(tag, format!("{}-{coding}\"", identity_tag.trim_end_matches('"')));
        assert!(body.len() < plain.len() / 4, "{coding}: {} of {} bytes", body.len(), plain.len());
        assert_eq!(decoded(coding, &body), plain, "{coding} gives back the identity body");
        let (held, empty) = get(&service, page, &[("accept-encoding", coding), ("if-none-match", &tag)]).await;
        assert_eq!(held.status(), StatusCode::NOT_MODIFIED, "{coding}");
        assert!(empty.is_empty());
        let (other, _) = get(&service, page, &[("if-none-match", &tag)]).await;
        assert_eq!(other.status(), StatusCode::OK, "{coding}: the identity representation is another one");
    }
    let (browser, _) = get(&service, page, &[("accept-encoding", "gzip, deflate, br, zstd")]).await;
    assert_eq!(header_text(&browser, header::CONTENT_ENCODING), Some("zstd"));
}

#[tokio::test]
async fn small_bodies_files_and_unknown_codings_are_sent_as_they_are() {
    let service = Service::start().await;
    let (problem, _) = get(&service, "/rights/LCC-9999999999", &[("accept-encoding", "gzip")]).await;
    assert_eq!(problem.status(), StatusCode::NOT_FOUND);
    assert_eq!(header_text(&problem, header::CONTENT_ENCODING), None, "a small problem body");
    let (unknown, _) = get(&service, "/bulk/works?limit=200", &[("accept-encoding", "deflate, compress")]).await;
    assert_eq!(header_text(&unknown, header::CONTENT_ENCODING), None);

    let (_, list) = get(&service, "/bulk/snapshots", &[]).await;
    let list: serde_json::Value = serde_json::from_slice(&list).expect("json");
    let snapshot = list["snapshots"][0]["snapshotId"].as_str().expect("snapshot").to_owned();
    let (_, manifest) = get(&service, &format!("/bulk/snapshots/{snapshot}"), &[]).await;
    let manifest: serde_json::Value = serde_json::from_slice(&manifest).expect("json");
    let name = manifest["files"][0]["name"].as_str().expect("file").to_owned();
    let (file, bytes) =
        get(&service, &format!("/bulk/snapshots/{snapshot}/files/{name}"), &[("accept-encoding", "gzip")]).await;
    assert_eq!(header_text(&file, header::CONTENT_ENCODING), None, "a snapshot file is sent as it is");
    assert_eq!(bytes.len() as u64, manifest["files"][0]["bytes"].as_u64().expect("bytes"));
}

#[tokio::test]
async fn a_batch_answer_is_compressed_too() {
    let service = Service::start().await;
    let ids: Vec<String> = (1..=40).map(|index| format!("LCC-{index:010}")).collect();
    let body = serde_json::json!({ "lccIds": ids }).to_string();
    let send = |coding: Option<&'static str>| {
        let mut request = Request::post(format!("{BASE}/rights/lookup"))
            .header("x-api-key", &service.full_key)
            .header("content-type", "application/json");
        if let Some(coding) = coding {
            request = request.header("accept-encoding", coding);
        }
        service.send(request.body(Body::from(body.clone())).expect("request"))
    };
    let plain = send(None).await.into_body().collect().await.expect("body").to_bytes();
    let coded = send(Some("gzip")).await;
    assert_eq!(header_text(&coded, header::CONTENT_ENCODING), Some("gzip"));
    let coded = coded.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(decoded("gzip", &coded), plain.to_vec());
}
