//! What browsers and caches expect of every answer: CORS for pages on other
//! origins (a preflight that takes no key and no quota), `nosniff`
//! everywhere, and no cache keeping a registration's key.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use support::{BASE, Service, split};

#[tokio::test]
async fn a_preflight_is_answered_without_a_key_and_without_spending_quota() {
    let service = Service::start().await;
    let preflight = Request::builder()
        .method("OPTIONS")
        .uri(format!("{BASE}/rights/SANDBOX-LCC-0003"))
        .header(header::ORIGIN, "https://partner.example")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "GET")
        .header(header::ACCESS_CONTROL_REQUEST_HEADERS, "x-api-key, if-none-match")
        .body(Body::empty())
        .expect("request");
    let answer = service.send(preflight).await;
    assert!(answer.status().is_success(), "{}", answer.status());
    let headers = answer.headers();
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    let allowed = headers[header::ACCESS_CONTROL_ALLOW_HEADERS].to_str().expect("text").to_ascii_lowercase();
    for name in ["x-api-key", "if-none-match", "if-modified-since", "content-type"] {
        assert!(allowed.contains(name), "{name} not allowed: {allowed}");
    }
    assert!(headers[header::ACCESS_CONTROL_ALLOW_METHODS].to_str().expect("text").contains("GET"));
    assert!(!headers.contains_key("x-ratelimit-remaining"), "a preflight is not limited");
}

#[tokio::test]
async fn every_answer_exposes_its_limit_and_tag_to_scripts_and_is_never_sniffed() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    for (key, expected) in [(Some(key.as_str()), StatusCode::OK), (None, StatusCode::UNAUTHORIZED)] {
        let mut request =
            Request::get(format!("{BASE}/rights/SANDBOX-LCC-0003")).header(header::ORIGIN, "https://partner.example");
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        let (status, _, answer) = split(service.send(request.body(Body::empty()).expect("request")).await).await;
        assert_eq!(status, expected);
        let headers = answer.headers();
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let exposed = headers[header::ACCESS_CONTROL_EXPOSE_HEADERS].to_str().expect("text").to_ascii_lowercase();
        for name in
            ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "etag", "retry-after", "x-request-id"]
        {
            assert!(exposed.contains(name), "{name} not exposed: {exposed}");
        }
    }
    let (_, _, unknown) = service.get("/no/such/route", None).await;
    assert_eq!(unknown.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

#[tokio::test]
async fn a_registration_answer_is_never_stored_by_a_cache() {
    let service = Service::start().await;
    let request = Request::post(format!("{BASE}/sandbox/register"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"email":"developer@example.org"}"#))
        .expect("request");
    let (status, body, answer) = split(service.send(request).await).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(answer.headers()[header::CACHE_CONTROL], "no-store");
}
