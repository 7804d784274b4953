//! Conditional requests through the router: a tag on every answer built in
//! memory, 304 for a client that holds it, a new tag once the document
//! changes, one tag per representation, and the caching headers.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use read_model::documents::DocumentKind;
use read_model::{DocumentWrite, ModelVersion, ProjectionWrites, WriteBatch, WriteVersion};
use support::{BASE, Service, text};

async fn get(service: &Service, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut request = Request::get(format!("{BASE}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    service.send(request.body(Body::empty()).expect("request")).await
}

fn tag_of(response: &Response) -> String {
    response.headers()[header::ETAG].to_str().expect("text").to_owned()
}

#[tokio::test]
async fn a_client_holding_the_tag_gets_304_until_the_document_changes() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let path = "/rights/SANDBOX-LCC-0003";
    let first = get(&service, path, &[("x-api-key", &key)]).await;
    assert_eq!(first.status(), StatusCode::OK);
    let tag = tag_of(&first);
    assert_eq!(first.headers()[header::CACHE_CONTROL], "private, no-cache");
    assert_eq!(first.headers()[header::VARY], "accept, accept-encoding, x-api-key");

    let again = get(&service, path, &[("x-api-key", &key), ("if-none-match", &tag)]).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(tag_of(&again), tag);
    assert!(again.headers().contains_key("x-ratelimit-remaining"), "a 304 counts against the limit");
    assert_eq!(text(again).await, "", "no body");
    let listed = get(&service, path, &[("x-api-key", &key), ("if-none-match", &format!("\"other\", W/{tag}"))]).await;
    assert_eq!(listed.status(), StatusCode::NOT_MODIFIED, "a tag in a list, compared weakly");

    let body = br#"{"lccId":"SANDBOX-LCC-0003","changed":true}"#.to_vec();
    let write = DocumentWrite {
        kind: DocumentKind::RightsProfile,
        key: "SANDBOX-LCC-0003".into(),
        body: Some(body),
        version: WriteVersion(u64::MAX >> 2),
    };
    let batch = WriteBatch { documents: vec![write], ..WriteBatch::default() };
    service.store.apply_batch(ModelVersion(1), Arc::new(batch)).await.expect("write");
    let started = Instant::now();
    let changed = loop {
        let response = get(&service, path, &[("x-api-key", &key), ("if-none-match", &tag)]).await;
        if response.status() == StatusCode::OK {
            break response;
        }
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
        assert!(started.elapsed() < Duration::from_secs(5), "the changed document was not served");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_ne!(tag_of(&changed), tag, "a new document, a new tag");
    assert!(text(changed).await.contains("\"changed\":true"));
}

#[tokio::test]
async fn each_representation_and_kind_of_answer_has_its_tag_and_caching_headers() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let path = "/rights/SANDBOX-LCC-0003/metadata";
    let json = get(&service, path, &[("x-api-key", &key)]).await;
    let xml = get(&service, path, &[("x-api-key", &key), ("accept", "application/xml")]).await;
    assert_ne!(tag_of(&json), tag_of(&xml), "JSON and oai_dc XML are two representations");
    let held =
        get(&service, path, &[("x-api-key", &key), ("accept", "application/xml"), ("if-none-match", &tag_of(&json))])
            .await;
    assert_eq!(held.status(), StatusCode::OK, "the JSON tag does not stand for the XML");

    let keyless = get(&service, "/openapi.json", &[]).await;
    assert_eq!(keyless.headers()[header::CACHE_CONTROL], "public, no-cache");
    let tag = tag_of(&keyless);
    assert_eq!(get(&service, "/openapi.json", &[("if-none-match", &tag)]).await.status(), StatusCode::NOT_MODIFIED);
    for path in [
        "/sandbox/fixtures",
        "/bulk/works?limit=2",
        "/bulk/changes?limit=2",
        "/bulk/snapshots",
        "/rights?iswc=T-900.000.001-1",
    ] {
        let response = get(&service, path, &[("x-api-key", &key)]).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let tag = tag_of(&response);
        let held = get(&service, path, &[("x-api-key", &key), ("if-none-match", &tag)]).await;
        assert_eq!(held.status(), StatusCode::NOT_MODIFIED, "{path}");
    }

    let missing = get(&service, "/rights/SANDBOX-LCC-9999", &[("x-api-key", &key)]).await;
    assert!(!missing.headers().contains_key(header::ETAG), "problems carry no tag");
    let request = Request::post(format!("{BASE}/rights/lookup"))
        .header("x-api-key", &key)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"lccIds":["SANDBOX-LCC-0003"]}"#))
        .expect("request");
    assert!(!service.send(request).await.headers().contains_key(header::ETAG), "POST answers carry no tag");

    let (_, list, _) = support::split(get(&service, "/bulk/snapshots", &[("x-api-key", &key)]).await).await;
    let id = list["snapshots"][0]["snapshotId"].as_str().expect("id").to_owned();
    let (_, manifest, _) =
        support::split(get(&service, &format!("/bulk/snapshots/{id}"), &[("x-api-key", &key)]).await).await;
    let file = &manifest["files"][0];
    let path = format!("/bulk/snapshots/{id}/files/{}", file["name"].as_str().expect("name"));
    let sha = format!("\"{}\"", file["sha256"].as_str().expect("sha256"));
    let held = get(&service, &path, &[("x-api-key", &key), ("if-none-match", &sha)]).await;
    assert_eq!((held.status(), tag_of(&held)), (StatusCode::NOT_MODIFIED, sha));
}

#[tokio::test]
async fn an_answer_computed_at_request_time_keeps_its_weak_tag_until_what_it_states_changes() {
    use query_api::routes::router;
    use tower::ServiceExt;
    let service = Service::start().await;
    let key = service.sandbox_key();
    for suffix in ["/verify", "/evidence"] {
        let clock = read_model::clock::Clock::manual();
        let app = router(service.with_clock(clock.clone()));
        let get = |tag: Option<String>| {
            let mut request = Request::get(format!("{BASE}/rights/SANDBOX-LCC-0003{suffix}")).header("x-api-key", &key);
            if let Some(tag) = tag {
                request = request.header("if-none-match", tag);
            }
            app.clone().oneshot(request.body(Body::empty()).expect("request"))
        };
        let first = get(None).await.expect("infallible");
        assert_eq!(first.status(), StatusCode::OK, "{suffix}");
        let tag = tag_of(&first);
        assert!(tag.starts_with("W/\""), "{suffix}: {tag}");
        let (_, evidence, _) = support::split(
            service
                .send(
                    Request::get(format!("{BASE}/rights/SANDBOX-LCC-0003/evidence"))
                        .header("x-api-key", &key)
                        .body(Body::empty())
                        .expect("request"),
                )
                .await,
        )
        .await;
        let ends_on = evidence["protection"]["endsOn"].as_str().expect("a term of protection").to_owned();
        // An evidence package is stamped with the instant it is issued and a
        // verification with its day; the weak tag follows what they state.
        clock.advance(Duration::from_secs(1));
        let same_day = get(Some(tag.clone())).await.expect("infallible");
        assert_eq!(same_day.status(), StatusCode::NOT_MODIFIED, "{suffix}: nothing it states has changed");
        assert_eq!(tag_of(&same_day), tag, "{suffix}");
        clock.advance(Duration::from_secs(24 * 60 * 60));
        let next_day = get(Some(tag.clone())).await.expect("infallible");
        assert_eq!(next_day.status(), StatusCode::NOT_MODIFIED, "{suffix}: a new day, the same statements");
        let ends_ms = read_model::calendar::Timestamp::parse(&format!("{ends_on}T00:00:00.000Z")).expect("date").0;
        let until_after_the_term = u64::try_from(ends_ms + 2 * 86_400_000 - clock.unix_ms()).expect("a future end");
        clock.advance(Duration::from_millis(until_after_the_term));
        let ended = get(Some(tag.clone())).await.expect("infallible");
        assert_eq!(ended.status(), StatusCode::OK, "{suffix}: protection ended, a new answer");
        assert_ne!(tag_of(&ended), tag, "{suffix}");
    }
}

#[tokio::test]
async fn a_rights_profile_is_tagged_for_the_kind_of_key_asking_whether_the_cache_or_the_store_answers() {
    use read_model::answer_tags::{self, Requester};
    let service = Service::start().await;
    let sandbox_key = service.sandbox_key();
    let askers = [(sandbox_key.as_str(), Requester::Sandbox), (service.full_key.as_str(), Requester::Production)];
    for work in ["SANDBOX-LCC-0003", service.production_work()] {
        let path = format!("/rights/{work}");
        // The first answer reads the store and keeps the profile; the rest
        // are served from the cache. Each kind of key gets the tag of its
        // own answer, which differs from the other's for the same bytes.
        let mut tags = std::collections::BTreeSet::new();
        for (key, requester) in askers.iter().chain(&askers).chain(&askers) {
            let response = get(&service, &path, &[("x-api-key", key)]).await;
            if response.status() == StatusCode::FORBIDDEN {
                assert_eq!((*requester, work), (Requester::Sandbox, service.production_work()));
                continue;
            }
            assert_eq!(response.status(), StatusCode::OK, "{work}, {requester:?}");
            let tag = tag_of(&response);
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
            assert_eq!(tag, answer_tags::strong(*requester, answer_tags::JSON, &body), "{work}, {requester:?}");
            let held = get(&service, &path, &[("x-api-key", key), ("if-none-match", &tag)]).await;
            assert_eq!(held.status(), StatusCode::NOT_MODIFIED, "{work}, {requester:?}");
            tags.insert(tag);
        }
        let expected = if work == service.production_work() { 1 } else { 2 };
        assert_eq!(tags.len(), expected, "{work}: one tag for each kind of key that may read it, every time");
    }
    let statistics = read_model::DocumentReads::document_cache_statistics(&service.store).expect("a cache");
    assert!(statistics.hits >= 8, "the cache answered the repeated lookups: {statistics:?}");
}
