//! Signed answers through the router: evidence packages and snapshot
//! manifests verify against the key set `/keys` serves for their audience,
//! and against no other; the key set itself is keyless, cacheable and
//! conditional.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use query_api::signing::{KeySet, Rejection, verify_document};
use support::{BASE, Service, split};

async fn key_set(service: &Service, query: &str) -> KeySet {
    let (status, body, response) = service.get(&format!("/keys{query}"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/jwk-set+json");
    serde_json::from_value(body).expect("a JWK Set")
}

async fn bytes_of(service: &Service, path: &str, key: &str) -> Vec<u8> {
    let (status, body, _) = service.get(path, Some(key)).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    serde_json::to_vec(&body).expect("json")
}

#[tokio::test]
async fn evidence_packages_verify_against_their_audiences_key_set_only() {
    let service = Service::start().await;
    let production = key_set(&service, "").await;
    let sandbox = key_set(&service, "?audience=sandbox").await;
    assert_eq!(key_set(&service, "?audience=production").await, production);
    assert!(production.keys.iter().all(|key| key.kid.starts_with("production-")), "{production:?}");

    let work = service.production_work();
    let package = bytes_of(&service, &format!("/rights/{work}/evidence"), &service.full_key).await;
    let verified = verify_document(&package, &production).expect("a production package verifies");
    assert_eq!(verified.kid, production.keys[0].kid);
    assert!(verified.dated.is_some(), "generatedAt is signed");
    assert!(matches!(verify_document(&package, &sandbox), Err(Rejection::UnknownKey(_))));

    let sandbox_key = service.sandbox_key();
    let sandbox_package = bytes_of(&service, "/rights/SANDBOX-LCC-0003/evidence", &sandbox_key).await;
    assert!(verify_document(&sandbox_package, &sandbox).is_ok());
    assert!(
        matches!(verify_document(&sandbox_package, &production), Err(Rejection::UnknownKey(_))),
        "a sandbox package is never production evidence"
    );

    // Any one changed value, anywhere in the package, breaks it.
    let mut value: serde_json::Value = serde_json::from_slice(&package).expect("json");
    value["protection"]["remaining"]["days"] =
        serde_json::json!(value["protection"]["remaining"]["days"].as_i64().expect("days") + 1);
    let tampered = serde_json::to_vec(&value).expect("json");
    assert!(matches!(verify_document(&tampered, &production), Err(Rejection::ContentChanged(_))));
}

#[tokio::test]
async fn snapshot_manifests_are_signed_for_their_audience() {
    let service = Service::start().await;
    for (key, query) in [(service.full_key.clone(), ""), (service.sandbox_key(), "?audience=sandbox")] {
        let (_, list, _) = service.get("/bulk/snapshots", Some(&key)).await;
        let snapshot = list["snapshots"][0]["snapshotId"].as_str().expect("a snapshot").to_owned();
        let manifest = bytes_of(&service, &format!("/bulk/snapshots/{snapshot}"), &key).await;
        let verified = verify_document(&manifest, &key_set(&service, query).await).expect("verifies");
        assert!(verified.dated.is_some(), "createdAt is signed");
    }
}

#[tokio::test]
async fn the_key_set_is_keyless_cacheable_and_conditional() {
    let service = Service::start().await;
    let get = |headers: Vec<(&'static str, String)>| {
        let mut request = Request::get(format!("{BASE}/keys"));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        service.send(request.body(Body::empty()).expect("request"))
    };
    let (status, _, first) = split(get(vec![]).await).await;
    assert_eq!(status, StatusCode::OK);
    let headers = first.headers();
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=300");
    assert!(headers.contains_key("x-ratelimit-limit"), "limited per address");
    let tag = headers[header::ETAG].to_str().expect("tag").to_owned();
    let last_modified = headers[header::LAST_MODIFIED].to_str().expect("date").to_owned();
    assert_eq!(last_modified, "Thu, 01 Jan 2026 00:00:00 GMT", "the newest key's creation");

    let (status, _, held) = split(get(vec![("if-none-match", tag.clone())]).await).await;
    assert_eq!((status, held.headers()[header::ETAG].to_str().ok()), (StatusCode::NOT_MODIFIED, Some(tag.as_str())));
    let (status, _, _) = split(get(vec![("if-modified-since", last_modified.clone())]).await).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    let (status, _, _) = split(get(vec![("if-modified-since", "Wed, 31 Dec 2025 23:59:59 GMT".into())]).await).await;
    assert_eq!(status, StatusCode::OK, "changed since then");
    let (status, _, _) = split(get(vec![("if-modified-since", "yesterday".into())]).await).await;
    assert_eq!(status, StatusCode::OK, "a date that does not parse is ignored");
    let (status, _, _) =
        split(get(vec![("if-none-match", "\"other\"".into()), ("if-modified-since", last_modified)]).await).await;
    assert_eq!(status, StatusCode::OK, "If-None-Match takes precedence");

    let (status, body, _) = service.get("/keys?audience=everyone", None).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_parameter")));
}
