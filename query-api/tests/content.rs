//! What the endpoints answer: sandbox registration, identifier lookups per
//! audience, bulk paging, Dublin Core XML, verification, evidence, and a
//! store that is down and comes back.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use query_api::routes::router;
use read_model::{ModelVersion, ModelVersions, SqliteStore};
use support::{BASE, Service, split, text};
use tower::ServiceExt;

fn register(body: &str, content_type: &str) -> Request<Body> {
    Request::post(format!("{BASE}/sandbox/register"))
        .header("content-type", content_type)
        .body(Body::from(body.to_owned()))
        .expect("request")
}

#[tokio::test]
async fn sandbox_registration_issues_a_working_key_at_once() {
    let service = Service::start().await;
    let (status, body, response) =
        split(service.send(register(r#"{"email":"dev@example.org"}"#, "application/json")).await).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(response.headers()["x-ratelimit-limit"], "60");
    assert_eq!(body["keyType"], "sandbox");
    assert_eq!(body["scopes"].as_array().map(Vec::len), Some(7));
    let key = body["apiKey"].as_str().expect("key").to_owned();
    let (status, profile, _) = service.get("/rights/SANDBOX-LCC-0002", Some(&key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(profile["lccId"], "SANDBOX-LCC-0002");

    let (status, body, _) =
        split(service.send(register("email=dev@example.org", "application/x-www-form-urlencoded")).await).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("unsupported_media_type")));
    for bad in [r#"{"email":"not-an-address"}"#, r#"{"mail":"a@b.co"}"#, "[]", "{", r#"{"email":"a@b.co","x":1}"#] {
        let (status, body, _) = split(service.send(register(bad, "application/json")).await).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_parameter")), "{bad}");
    }
    let huge = format!(r#"{{"email":"{}@example.org"}}"#, "a".repeat(10_000));
    let (status, body, _) = split(service.send(register(&huge, "application/json")).await).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large")));
}

#[tokio::test]
async fn identifier_lookups_return_only_the_callers_audience() {
    let service = Service::start().await;
    let sandbox_key = service.sandbox_key();
    let (status, body, _) = service.get("/rights?iswc=T-900.000.001-1", Some(&sandbox_key)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["count"], 1);
    assert_eq!(body["results"][0]["lccId"], "SANDBOX-LCC-0001");
    let (status, _, _) = service.get("/rights?iswc=T9000000011", Some(&service.full_key)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "production keys do not see sandbox records");
    let (status, body, _) = service.get("/rights?isrc=QZ-SB1-25-00002", Some(&sandbox_key)).await;
    assert_eq!((status, body["results"][0]["lccId"].as_str()), (StatusCode::OK, Some("SANDBOX-LCC-0002")));

    let production = service.store.clone();
    let profile: serde_json::Value = serde_json::from_slice(
        &read_model::DocumentReads::document(&production, read_model::DocumentKind::RightsProfile, "LCC-0000000002")
            .await
            .expect("read")
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    if let Some(iswc) = profile["iswc"].as_str() {
        let (status, body, _) = service.get(&format!("/rights?iswc={iswc}"), Some(&service.full_key)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            body["results"]
                .as_array()
                .is_some_and(|results| results.iter().any(|result| result["lccId"] == "LCC-0000000002"))
        );
        let (status, _, _) = service.get(&format!("/rights?iswc={iswc}"), Some(&sandbox_key)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "sandbox keys do not see production records");
    }
}

#[tokio::test]
async fn bulk_pages_cover_the_export_once_with_links_and_no_other_audience() {
    let service = Service::start().await;
    let (status, first, _) = service.get("/bulk/works?page=1&limit=100", Some(&service.full_key)).await;
    assert_eq!(status, StatusCode::OK);
    let total = first["total"].as_u64().expect("total");
    assert!(total > 150, "{total}");
    assert_eq!(first["links"]["prev"], serde_json::Value::Null);
    assert_eq!(first["links"]["next"], "https://api.example.org/api/v1/public/v1/bulk/works?page=2&limit=100");
    let mut seen = Vec::new();
    let mut page = 1;
    loop {
        let (_, body, _) = service.get(&format!("/bulk/works?page={page}&limit=100"), Some(&service.full_key)).await;
        let items = body["items"].as_array().expect("items").clone();
        assert!(items.iter().all(|item| !item["lccId"].as_str().unwrap_or_default().starts_with("SANDBOX-")));
        assert!(items.iter().all(|item| item.get("email").is_none() && item.get("personalData").is_none()));
        seen.extend(items.into_iter().map(|item| item["lccId"].as_str().unwrap_or_default().to_owned()));
        if body["links"]["next"].is_null() {
            break;
        }
        page += 1;
    }
    let count = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!((count, seen.len() as u64), (total as usize, total), "every work exactly once");
    let (_, sandbox, _) = service.get("/bulk/works", Some(&service.sandbox_key())).await;
    assert_eq!(sandbox["total"], 14);
    assert_eq!(sandbox["limit"], 100);
}

#[tokio::test]
async fn metadata_is_json_by_default_and_oai_dc_xml_on_request() {
    let service = Service::start().await;
    let (status, json, _) = service.get("/rights/SANDBOX-LCC-0002/metadata", Some(&service.sandbox_key())).await;
    assert_eq!(status, StatusCode::OK);
    for element in [
        "title",
        "creator",
        "subject",
        "description",
        "publisher",
        "contributor",
        "date",
        "type",
        "format",
        "identifier",
        "source",
        "language",
        "relation",
        "coverage",
        "rights",
    ] {
        assert!(json[element].is_array(), "{element} missing: {json}");
    }
    let request = Request::get(format!("{BASE}/rights/SANDBOX-LCC-0002/metadata"))
        .header("x-api-key", service.sandbox_key())
        .header("accept", "application/xml")
        .body(Body::empty())
        .expect("request");
    let response = service.send(request).await;
    assert_eq!(response.headers()["content-type"], "application/xml; charset=utf-8");
    let xml = text(response).await;
    assert!(xml.contains("<oai_dc:dc"), "{xml}");
    assert!(xml.contains("<dc:title>Closed Split Rights (by ISRC)</dc:title>"), "{xml}");
    assert!(xml.contains("<dc:identifier>SANDBOX-LCC-0002</dc:identifier>"), "{xml}");
}

#[tokio::test]
async fn verification_names_each_check_and_compares_file_hashes() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let (_, valid, _) = service.get("/rights/SANDBOX-LCC-0001/verify", Some(&key)).await;
    assert_eq!(valid["verified"], true, "{valid}");
    let names: Vec<&str> =
        valid["checks"].as_array().expect("checks").iter().filter_map(|check| check["name"].as_str()).collect();
    assert_eq!(
        names,
        ["certificate", "rights_chain_complete", "no_open_dispute", "protection_in_force", "record_active"]
    );
    let failed = |body: &serde_json::Value| -> Vec<String> {
        body["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|check| check["passed"] == false)
            .filter_map(|check| check["name"].as_str().map(str::to_owned))
            .collect()
    };
    for (work, expected) in [
        ("SANDBOX-LCC-0004", "no_open_dispute"),
        ("SANDBOX-LCC-0011", "protection_in_force"),
        ("SANDBOX-LCC-0012", "record_active"),
        ("SANDBOX-LCC-0013", "certificate"),
        ("SANDBOX-LCC-0014", "rights_chain_complete"),
    ] {
        let (_, body, _) = service.get(&format!("/rights/{work}/verify"), Some(&key)).await;
        assert_eq!(body["verified"], false, "{work}");
        assert_eq!(failed(&body), [expected], "{work}");
    }
    // A sandbox work's file is the text "<lccId>: <title>\n", so a client can hash it itself.
    let registered = query_api::keys::sha256_hex("SANDBOX-LCC-0001: Open Single Holder (by ISWC)\n");
    let (_, matching, _) =
        service.get(&format!("/rights/SANDBOX-LCC-0001/verify?sha256={}", registered.to_uppercase()), Some(&key)).await;
    assert_eq!(matching["checks"][5]["name"], "file_hash_matches");
    assert_eq!(matching["checks"][5]["passed"], true);
    let (_, other, _) =
        service.get(&format!("/rights/SANDBOX-LCC-0001/verify?sha256={}", "0".repeat(64)), Some(&key)).await;
    assert_eq!((other["verified"].as_bool(), failed(&other)), (Some(false), vec!["file_hash_matches".to_owned()]));
}

#[tokio::test]
async fn the_evidence_package_has_every_element_of_the_specification() {
    let service = Service::start().await;
    let (status, body, _) = service.get("/rights/SANDBOX-LCC-0003/evidence", Some(&service.sandbox_key())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["lccId"], "SANDBOX-LCC-0003");
    assert!(body["earliestRecordedAt"].as_str().is_some_and(|at| at.ends_with('Z')));
    assert_eq!(body["fileSha256"].as_str().map(str::len), Some(64));
    assert_eq!(body["rightsChain"]["authorsRights"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["rightsChain"]["relatedRights"].as_array().map(Vec::len), Some(2));
    assert_eq!(body["protection"]["endsOn"], "2110-12-31");
    assert_eq!(body["protection"]["inForce"], true);
    assert!(body["protection"]["remaining"]["years"].as_i64().is_some_and(|years| years >= 80));
    assert_eq!(body["disputeStatus"], "none");
    assert_eq!(body["publicLookupUrl"], "https://api.example.org/api/v1/public/v1/records/SANDBOX-LCC-0003");
}

#[tokio::test]
async fn a_store_without_an_active_model_answers_503_and_recovers_without_restart() {
    let service = Service::start().await;
    let empty = service.directory.path().join("empty");
    let store = SqliteStore::open(&empty).expect("store");
    let app = Arc::new(query_api::app::App {
        store: Arc::new(store.clone()),
        production_keys: Arc::clone(&service.app.production_keys),
        sandbox_keys: service.app.sandbox_keys.clone(),
        rate_limits: query_api::rate_limit::RateLimits::new(60),
        settings: service.app.settings.clone(),
        metrics: Arc::clone(&service.app.metrics),
        snapshots: service.app.snapshots.clone(),
        signer: Arc::clone(&service.app.signer),
        draining: Default::default(),
        notification_streams: Default::default(),
        webhooks: Arc::new(store.clone()),
        clock: service.app.clock.clone(),
    });
    let get = |app: Arc<query_api::app::App>, key: String| async move {
        let request =
            Request::get(format!("{BASE}/rights/LCC-1")).header("x-api-key", key).body(Body::empty()).expect("request");
        split(router(app).oneshot(request).await.expect("infallible")).await
    };
    let (status, body, _) = get(Arc::clone(&app), service.full_key.clone()).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("service_unavailable")));
    assert_eq!(body["detail"], "the read model is unavailable; retry shortly", "a fixed message, no internals");
    store.migrate().await.expect("migrate");
    store.create_model_version(ModelVersion(1)).await.expect("create");
    store.activate_model_version(ModelVersion(1)).await.expect("activate");
    let (status, _, _) = get(app, service.full_key.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the store is back: an unknown id is now a plain 404");
}
