//! Batch lookups through the router: one result per identifier with its
//! own status, the same profile bytes as single lookups, the 100-identifier
//! bound, the body's errors, and the quota taken whole.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use query_api::keys::Scope;
use serde_json::{Value, json};
use support::{BASE, Service, split};

async fn post(
    service: &Service,
    key: &str,
    body: &str,
    content_type: &str,
) -> (StatusCode, Value, axum::response::Response) {
    let request = Request::post(format!("{BASE}/rights/lookup"))
        .header("x-api-key", key)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body.to_owned()))
        .expect("request");
    split(service.send(request).await).await
}

async fn raw(service: &Service, path: &str, key: &str) -> Vec<u8> {
    let request = Request::get(format!("{BASE}{path}")).header("x-api-key", key).body(Body::empty()).expect("request");
    let response = service.send(request).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.into_body().collect().await.expect("body").to_bytes().to_vec()
}

#[tokio::test]
async fn each_identifier_gets_the_answer_of_its_own_lookup_in_request_order() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let body = json!({
        "lccIds": ["SANDBOX-LCC-0003", "SANDBOX-LCC-9999", "LCC-0000000001", "not an id"],
        "iswcs": ["T-900.000.001-1", "T-900.000.001-2", "T-034.524.680-1"],
        "isrcs": ["QZSB12500002", "QZ-SB1-25-00002", "nonsense"],
    });
    let (status, answer, response) = post(&service, &key, &body.to_string(), "application/json").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let limit: u32 = response.headers()["x-ratelimit-limit"].to_str().expect("text").parse().expect("number");
    let remaining: u32 = response.headers()["x-ratelimit-remaining"].to_str().expect("text").parse().expect("number");
    assert_eq!(remaining, limit - 10, "ten identifiers cost ten requests");
    let statuses: Vec<u64> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| result["status"].as_u64().expect("status"))
        .collect();
    assert_eq!(statuses, [200, 404, 403, 403, 200, 400, 404, 200, 200, 400], "a sandbox key is refused any other id");
    assert_eq!(answer["count"], 10);
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results[0]["lccId"], "SANDBOX-LCC-0003");
    assert_eq!(results[2]["problem"]["code"], "sandbox_key_production_record");
    assert_eq!(results[5]["problem"]["code"], "invalid_parameter");
    assert_eq!(results[1]["problem"]["code"], "not_found");
    assert_eq!(results[4]["iswc"], "T-900.000.001-1", "the identifier as given");
    assert_eq!(results[8]["isrc"], "QZ-SB1-25-00002");
    assert_eq!(results[7]["profiles"], results[8]["profiles"], "one ISRC, two spellings");

    // The same bytes as single lookups: the profile is embedded as stored.
    let (_, _, response) = post(&service, &key, r#"{"lccIds":["SANDBOX-LCC-0003"]}"#, "application/json").await;
    let batch =
        String::from_utf8(response.into_body().collect().await.expect("body").to_bytes().to_vec()).expect("utf-8");
    let single = String::from_utf8(raw(&service, "/rights/SANDBOX-LCC-0003", &key).await).expect("utf-8");
    assert!(batch.contains(&format!("\"profile\":{single}")), "{batch}\n{single}");
    let by_iswc: Value =
        serde_json::from_slice(&raw(&service, "/rights?iswc=T-900.000.001-1", &key).await).expect("json");
    assert_eq!(results[4]["profiles"], by_iswc["results"]);
}

#[tokio::test]
async fn bad_bodies_are_refused_whole_and_the_quota_is_taken_whole() {
    let service = Service::start().await;
    let key = service.issue_key(&[Scope::RightsRead], 150).await;
    let hundred: Vec<String> = (1..=100).map(|index| format!("LCC-{index:010}")).collect();
    let (status, answer, response) =
        post(&service, &key, &json!({ "lccIds": hundred }).to_string(), "application/json").await;
    assert_eq!((status, answer["count"].as_u64()), (StatusCode::OK, Some(100)), "{answer}");
    assert_eq!(response.headers()["x-ratelimit-remaining"], "50");
    let (status, answer, response) =
        post(&service, &key, &json!({ "lccIds": hundred }).to_string(), "application/json").await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")),
        "more than is left"
    );
    assert_eq!(response.headers()["x-ratelimit-remaining"], "50", "a refused batch takes nothing");
    let (status, answer, _) =
        post(&service, &key, &json!({ "lccIds": &hundred[..50] }).to_string(), "application/json").await;
    assert_eq!((status, answer["count"].as_u64()), (StatusCode::OK, Some(50)), "what is left still passes");

    let full = service.full_key.clone();
    let too_many: Vec<String> = (1..=101).map(|index| format!("LCC-{index}")).collect();
    for (body, content_type, expected, code) in [
        (json!({ "lccIds": too_many }).to_string(), "application/json", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("{}".to_owned(), "application/json", StatusCode::BAD_REQUEST, "invalid_parameter"),
        (r#"{"lccIds":"LCC-1"}"#.to_owned(), "application/json", StatusCode::BAD_REQUEST, "invalid_parameter"),
        (r#"{"ids":["LCC-1"]}"#.to_owned(), "application/json", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("not json".to_owned(), "application/json", StatusCode::BAD_REQUEST, "invalid_parameter"),
        (
            r#"{"lccIds":["LCC-1"]}"#.to_owned(),
            "text/plain",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            format!(r#"{{"lccIds":["{}"]}}"#, "x".repeat(5_000)),
            "application/json",
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
    ] {
        let (status, answer, _) = post(&service, &full, &body, content_type).await;
        assert_eq!((status, answer["code"].as_str()), (expected, Some(code)), "{}", &body[..body.len().min(60)]);
    }

    let sixty = service.issue_key(&[Scope::RightsRead], 60).await;
    let (status, answer, response) =
        post(&service, &sixty, &json!({ "lccIds": &hundred[..61] }).to_string(), "application/json").await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("batch_over_quota")),
        "{}",
        answer["detail"]
    );
    assert_eq!(response.headers()[header::RETRY_AFTER], "60");
    assert_eq!(response.headers()["x-ratelimit-remaining"], "59", "refused, it counts as one request");
    let (status, answer, _) =
        post(&service, &sixty, &json!({ "lccIds": &hundred[..59] }).to_string(), "application/json").await;
    assert_eq!((status, answer["count"].as_u64()), (StatusCode::OK, Some(59)));
    let lacking = service.issue_key(&[Scope::BulkRead], 1_000).await;
    let (status, answer, _) = post(&service, &lacking, r#"{"lccIds":["LCC-1"]}"#, "application/json").await;
    assert_eq!((status, answer["code"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
}
