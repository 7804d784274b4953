//! The keyless public record (`/records/{lccId}`): its JSON and HTML forms,
//! what it leaves out, its conditional answers, its limit per address, the
//! page's security headers and assets, and the evidence package's link to it.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use query_api::config::Environment;
use query_api::routes::router;
use serde_json::json;
use support::{BASE, Service, split, text};
use tower::ServiceExt;

const CHROMIUM_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";

fn get(path: &str, accept: Option<&str>) -> Request<Body> {
    let mut request = Request::get(format!("{BASE}{path}"));
    if let Some(accept) = accept {
        request = request.header(header::ACCEPT, accept);
    }
    request.body(Body::empty()).expect("request")
}

#[tokio::test]
async fn the_json_record_needs_no_key_and_states_only_public_facts() {
    let service = Service::start().await;
    let (status, record, response) = split(service.send(get("/records/SANDBOX-LCC-0003", None)).await).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(response.headers()["x-ratelimit-limit"], "60", "limited per address");
    let members: Vec<&str> = record.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        members,
        [
            "audience",
            "certificate",
            "disputeStatus",
            "earliestRecordedAt",
            "fileSha256",
            "isrcs",
            "iswc",
            "keySetUrl",
            "lccId",
            "notice",
            "protection",
            "provenanceChain",
            "status",
            "title"
        ],
        "no holder, party, share or dispute party: {record}"
    );
    assert_eq!(record["audience"], "sandbox");
    assert!(record["notice"].as_str().is_some_and(|notice| notice.contains("Decree 277/2026, Article 7(5)")));
    assert_eq!(record["keySetUrl"], "https://api.example.org/api/v1/public/v1/keys?audience=sandbox");
    assert_eq!(record["protection"], json!({ "inForce": true, "endsOn": "2110-12-31" }));
    assert_eq!(
        record["certificate"].as_object().map(|certificate| certificate.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["certificateId".into(), "issuedAt".into(), "revoked".into(), "sha256".into()]),
        "a revocation reason is not public"
    );

    // What it states is what the keyed answers state.
    let key = service.sandbox_key();
    let (_, evidence, _) = service.get("/rights/SANDBOX-LCC-0003/evidence", Some(&key)).await;
    let (_, provenance, _) = service.get("/rights/SANDBOX-LCC-0003/provenance", Some(&key)).await;
    let (_, profile, _) = service.get("/rights/SANDBOX-LCC-0003", Some(&key)).await;
    for member in ["title", "status", "earliestRecordedAt", "fileSha256", "disputeStatus"] {
        assert_eq!(record[member], evidence[member], "{member}");
    }
    assert_eq!(record["certificate"]["certificateId"], evidence["certificate"]["certificateId"]);
    assert_eq!(record["provenanceChain"], provenance["chain"]);
    assert_eq!((&record["iswc"], &record["isrcs"]), (&profile["iswc"], &profile["isrcs"]));

    let production = service.production_work();
    let (status, record, _) = split(service.send(get(&format!("/records/{production}"), None)).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((record["audience"].as_str(), &record["notice"]), (Some("production"), &json!(null)));
    assert_eq!(record["keySetUrl"], "https://api.example.org/api/v1/public/v1/keys");

    let (status, problem, response) = split(service.send(get("/records/LCC-9999999999", None)).await).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/problem+json");
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_in_production_too() {
    let service = Service::start().await;
    let production = service.in_environment(Environment::Production);
    for (path, accept) in [
        ("/records/SANDBOX-LCC-0003", CHROMIUM_ACCEPT),
        ("/records/SANDBOX-LCC-0003", "application/json"),
        ("/assets/record/record.js", "*/*"),
    ] {
        let response = router(Arc::clone(&production)).oneshot(get(path, Some(accept))).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK, "{path} {accept}");
    }
}

#[tokio::test]
async fn the_evidence_package_links_to_the_public_record() {
    let service = Service::start().await;
    let (_, package, _) = service.get("/rights/SANDBOX-LCC-0003/evidence", Some(&service.sandbox_key())).await;
    assert_eq!(package["publicLookupUrl"], "https://api.example.org/api/v1/public/v1/records/SANDBOX-LCC-0003");
    let (status, _, _) = split(service.send(get("/records/SANDBOX-LCC-0003", None)).await).await;
    assert_eq!(status, StatusCode::OK, "the link answers without a key");
}

#[tokio::test]
async fn a_browser_gets_a_page_with_a_strict_policy_and_no_cookie() {
    let service = Service::start().await;
    let response = service.send(get("/records/SANDBOX-LCC-0003", Some(CHROMIUM_ACCEPT))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().expect("policy");
    for directive in ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert!(!policy.contains("unsafe-inline") && !policy.contains("http"), "{policy}");
    assert!(!headers.contains_key(header::SET_COOKIE));
    assert!(headers[header::VARY].to_str().expect("vary").contains("accept"));
    let page = text(response).await;
    assert!(page.contains("<h1>"), "{page}");
    assert!(page.contains("Decree 277/2026, Article 7(5)"), "a sandbox page says what it is");
    assert!(page.contains(r#"<label for="document">"#) && page.contains(r#"<label for="file">"#), "labelled inputs");
    assert!(page.contains(r#"name="viewport""#));
    // The only scripts: the page's own module, and the record as a data block.
    let scripts: Vec<&str> =
        page.match_indices("<script").map(|(at, _)| &page[at..at + 100.min(page.len() - at)]).collect();
    assert_eq!(scripts.len(), 2, "{scripts:?}");
    assert!(scripts[0].starts_with(&format!(r#"<script type="module" src="{BASE}/assets/record/record.js""#)));
    assert!(scripts[1].starts_with(r#"<script type="application/json" id="public-record">"#));

    let production = service.production_work();
    let page = text(service.send(get(&format!("/records/{production}"), Some(CHROMIUM_ACCEPT))).await).await;
    assert!(!page.contains("Decree 277/2026"), "a record of the registry is not simulated");

    let missing = service.send(get("/records/LCC-9999999999", Some(CHROMIUM_ACCEPT))).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(missing.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert!(text(missing).await.contains("No such work"));

    for (asset, content_type) in [
        ("record.js", "text/javascript; charset=utf-8"),
        ("verification.js", "text/javascript; charset=utf-8"),
        ("canonical-json.js", "text/javascript; charset=utf-8"),
        ("record.css", "text/css; charset=utf-8"),
    ] {
        let response = service.send(get(&format!("/assets/record/{asset}"), None)).await;
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_eq!(response.headers()[header::CONTENT_TYPE], content_type);
    }
}

#[tokio::test]
async fn each_form_has_its_own_tag_and_a_held_tag_gets_304() {
    let service = Service::start().await;
    let json_answer = service.send(get("/records/SANDBOX-LCC-0003", Some("application/json"))).await;
    let html_answer = service.send(get("/records/SANDBOX-LCC-0003", Some(CHROMIUM_ACCEPT))).await;
    let json_tag = json_answer.headers()[header::ETAG].clone();
    let html_tag = html_answer.headers()[header::ETAG].clone();
    assert_ne!(json_tag, html_tag);
    assert_eq!(json_answer.headers()[header::CACHE_CONTROL], "public, no-cache");
    for (accept, tag) in [("application/json", &json_tag), (CHROMIUM_ACCEPT, &html_tag)] {
        let request = Request::get(format!("{BASE}/records/SANDBOX-LCC-0003"))
            .header(header::ACCEPT, accept)
            .header(header::IF_NONE_MATCH, tag)
            .body(Body::empty())
            .expect("request");
        assert_eq!(service.send(request).await.status(), StatusCode::NOT_MODIFIED, "{accept}");
    }
}

#[tokio::test]
async fn a_flood_from_one_address_is_limited_like_the_other_keyless_endpoints() {
    let service = Service::start().await;
    let mut statuses = Vec::new();
    for _ in 0..61 {
        statuses.push(service.send(get("/records/SANDBOX-LCC-0003", Some(CHROMIUM_ACCEPT))).await.status());
    }
    assert!(statuses[..60].iter().all(|status| *status == StatusCode::OK), "{statuses:?}");
    let (status, problem, response) =
        split(service.send(get("/records/SANDBOX-LCC-0003", Some(CHROMIUM_ACCEPT))).await).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")));
    assert!(response.headers().contains_key(header::RETRY_AFTER));
    assert_eq!(response.headers()["x-ratelimit-remaining"], "0");
    let (status, _, _) = split(service.send(get("/keys", None)).await).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "one quota per address for every keyless endpoint");
}

#[tokio::test]
async fn the_sandbox_fixtures_name_the_legal_basis_of_simulated_data() {
    let service = Service::start().await;
    let (status, catalogue, _) = split(service.send(get("/sandbox/fixtures", None)).await).await;
    assert_eq!(status, StatusCode::OK);
    assert!(catalogue["notice"].as_str().is_some_and(|notice| notice.contains("Decree 277/2026, Article 7(5)")));
    let (_, document, _) = split(service.send(get("/openapi.json", None)).await).await;
    let sandbox_tag = document["tags"].as_array().expect("tags").iter().find(|tag| tag["name"] == "Sandbox").cloned();
    assert!(
        sandbox_tag.is_some_and(|tag| tag["description"].as_str().is_some_and(|text| text.contains("Decree 277/2026")))
    );
}
