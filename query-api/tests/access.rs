//! Every keyed endpoint against no key, an unknown key, a key lacking the
//! scope, a sandbox key on a production id, and a good key; and the errors
//! every route shares.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use query_api::keys::Scope;
use support::{BASE, Service};
use tower::ServiceExt;

/// (path with a production id, path with a sandbox id, scope it needs)
fn endpoints(production: &str) -> Vec<(String, String, Scope)> {
    vec![
        (format!("/rights/{production}"), "/rights/SANDBOX-LCC-0001".into(), Scope::RightsRead),
        (format!("/rights/{production}/verify"), "/rights/SANDBOX-LCC-0001/verify".into(), Scope::RightsVerify),
        (format!("/rights/{production}/metadata"), "/rights/SANDBOX-LCC-0001/metadata".into(), Scope::MetadataRead),
        (format!("/rights/{production}/provenance"), "/rights/SANDBOX-LCC-0001/provenance".into(), Scope::MetadataRead),
        (format!("/rights/{production}/evidence"), "/rights/SANDBOX-LCC-0001/evidence".into(), Scope::EvidenceRead),
        (
            "/licenses/LIC-00000001/status".into(),
            "/licenses/SANDBOX-LIC-BLANKET-ACTIVE/status".into(),
            Scope::LicensesRead,
        ),
    ]
}

#[tokio::test]
async fn every_keyed_endpoint_checks_key_scope_and_audience() {
    let service = Service::start().await;
    let production = service.production_work();
    let sandbox_key = service.sandbox_key();
    for (production_path, sandbox_path, scope) in endpoints(production) {
        let (status, body, _) = service.get(&production_path, None).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("missing_api_key")),
            "{production_path}"
        );
        let (status, body, _) = service.get(&production_path, Some("lcc_live_0000")).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("invalid_api_key")),
            "{production_path}"
        );

        let others: Vec<Scope> = Scope::ALL.into_iter().filter(|other| *other != scope).collect();
        let lacking = service.issue_key(&others, 1_000).await;
        let (status, body, _) = service.get(&production_path, Some(&lacking)).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("insufficient_scope")),
            "{production_path}"
        );
        assert_eq!(body["detail"], format!("this API key lacks the {scope} scope"));

        let (status, body, _) = service.get(&production_path, Some(&sandbox_key)).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("sandbox_key_production_record")),
            "{production_path}"
        );

        let only = service.issue_key(&[scope], 1_000).await;
        let (status, production_body, response) = service.get(&production_path, Some(&only)).await;
        assert_eq!(status, StatusCode::OK, "{production_path}: {production_body}");
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.headers()["x-ratelimit-limit"], "1000");

        let (status, sandbox_body, _) = service.get(&sandbox_path, Some(&sandbox_key)).await;
        assert_eq!(status, StatusCode::OK, "{sandbox_path}: {sandbox_body}");
        let keys =
            |value: &serde_json::Value| value.as_object().map(|object| object.keys().cloned().collect::<Vec<_>>());
        assert_eq!(
            keys(&production_body),
            keys(&sandbox_body),
            "sandbox and production shapes are identical: {sandbox_path}"
        );
    }
}

#[tokio::test]
async fn unknown_ids_are_404_problems() {
    let service = Service::start().await;
    for path in [
        "/rights/LCC-9999999999",
        "/rights/LCC-9999999999/verify",
        "/rights/LCC-9999999999/evidence",
        "/licenses/LIC-404/status",
        "/rights/LCC-9999999999/provenance",
    ] {
        let (status, body, response) = service.get(path, Some(&service.full_key)).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{path}");
        assert_eq!(response.headers()["content-type"], "application/problem+json");
        assert_eq!(body["status"], 404);
        assert!(body["type"].as_str().is_some_and(|kind| kind.ends_with("not_found")));
    }
}

#[tokio::test]
async fn malformed_parameters_are_precise_400_problems() {
    let service = Service::start().await;
    let key = service.full_key.clone();
    for (path, expected) in [
        ("/rights?iswc=T-034.524.680-2", "check digit"),
        ("/rights?iswc=X123", "iswc"),
        ("/rights?isrc=US-S1Z-99-001", "isrc"),
        ("/rights?iswc=T0345246801&isrc=USS1Z9900001", "exactly one"),
        ("/rights", "exactly one"),
        ("/bulk/works?page=0", "page"),
        ("/bulk/works?page=abc", "page"),
        ("/bulk/works?limit=0", "limit"),
        ("/bulk/works?limit=1001", "limit must be a whole number from 1 to 1000"),
        ("/rights/LCC-0000000001/verify?sha256=xyz", "sha256"),
    ] {
        let (status, body, _) = service.get(path, Some(&key)).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_parameter")),
            "{path}: {body}"
        );
        assert!(body["detail"].as_str().is_some_and(|detail| detail.contains(expected)), "{path}: {body}");
    }
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405() {
    let service = Service::start().await;
    let (status, body, _) = service.get("/nowhere", None).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("unknown_route")));
    let response = service.send(Request::get("/api/v2/other").body(Body::empty()).expect("request")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response =
        service.send(Request::delete(format!("{BASE}/rights/LCC-1")).body(Body::empty()).expect("request")).await;
    let (status, body, _) = support::split(response).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed")));
    let response =
        service.send(Request::get(format!("{BASE}/sandbox/register")).body(Body::empty()).expect("request")).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    // The documentation's routes, merged after the API's, answer a wrong method the same way.
    for path in ["/api/docs", "/api/docs/docs.js"] {
        let response = service.send(Request::post(path).body(Body::empty()).expect("request")).await;
        let (status, body, _) = support::split(response).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed")));
    }
}

#[tokio::test]
async fn the_rate_limit_allows_exactly_its_count_then_answers_429() {
    let service = Service::start().await;
    let key = service.issue_key(&[Scope::RightsRead], 5).await;
    for remaining in (0..5).rev() {
        let (status, _, response) = service.get("/rights/LCC-0000000001", Some(&key)).await;
        assert_eq!(status, StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers["x-ratelimit-limit"], "5");
        assert_eq!(headers["x-ratelimit-remaining"], remaining.to_string().as_str());
        assert_eq!(headers.get_all("x-ratelimit-reset").iter().count(), 1, "single-valued");
        let reset: u64 = headers["x-ratelimit-reset"].to_str().expect("ascii").parse().expect("seconds");
        assert_eq!(reset, (5 - remaining) * 12, "seconds until the quota is full again");
    }
    let (status, body, response) = service.get("/rights/LCC-0000000001", Some(&key)).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")));
    let headers = response.headers();
    assert_eq!(headers["x-ratelimit-remaining"], "0");
    let retry_after: u64 = headers["retry-after"].to_str().expect("ascii").parse().expect("seconds");
    assert!((1..=12).contains(&retry_after), "{retry_after}");
    assert_eq!(headers["content-type"], "application/problem+json");
}

/// Sends `GET /sandbox/fixtures` to `router` as the client `forwarded_for` behind a proxy.
async fn fixtures_for(router: &query_api::routes::PublicRouter, forwarded_for: &str) -> StatusCode {
    let request = Request::get(format!("{BASE}/sandbox/fixtures"))
        .header("x-forwarded-for", forwarded_for)
        .body(Body::empty())
        .expect("request");
    router.clone().oneshot(request).await.expect("infallible").status()
}

#[tokio::test]
async fn behind_a_trusted_proxy_anonymous_limits_count_per_forwarded_client() {
    let service = Service::start().await;
    let proxied = query_api::routes::router(service.behind_a_proxy());
    for _ in 0..60 {
        assert_eq!(fixtures_for(&proxied, "10.0.0.1, 198.51.100.1").await, StatusCode::OK);
    }
    assert_eq!(fixtures_for(&proxied, "10.0.0.2, 198.51.100.1").await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(fixtures_for(&proxied, "198.51.100.2").await, StatusCode::OK, "another client has its own quota");

    // Without the flag the header is ignored, so a client cannot mint quotas by forging it.
    let direct = &service.router;
    for index in 0..60 {
        assert_eq!(fixtures_for(direct, &format!("198.51.100.{index}")).await, StatusCode::OK);
    }
    assert_eq!(fixtures_for(direct, "203.0.113.9").await, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn every_answer_carries_a_request_id_taken_from_the_request_when_well_formed() {
    let service = Service::start().await;
    let request_id = |response: &axum::response::Response| {
        response.headers().get("x-request-id").and_then(|value| value.to_str().ok()).map(str::to_owned)
    };
    let (_, _, first) = service.get("/rights/SANDBOX-LCC-0001", Some(&service.full_key)).await;
    let (_, _, second) = service.get("/rights/SANDBOX-LCC-0001", None).await;
    let (first, second) = (request_id(&first).expect("an id"), request_id(&second).expect("an id on a 401 too"));
    assert_ne!(first, second, "made ids are distinct");

    for (sent, kept) in [("proxy-7f3a-0001", true), ("two words", false), ("", false)] {
        let request = Request::get(format!("{BASE}/sandbox/fixtures"))
            .header("x-request-id", sent)
            .body(Body::empty())
            .expect("request");
        let answered = request_id(&service.send(request).await).expect("an id");
        assert_eq!(answered == sent, kept, "sent {sent:?}, answered {answered:?}");
    }
    let unknown = service.send(Request::get("/nowhere").body(Body::empty()).expect("request")).await;
    assert!(request_id(&unknown).is_some(), "an unknown route has an id too");
}
