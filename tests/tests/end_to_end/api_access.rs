//! Access rules through the real binary: every keyed endpoint against no key,
//! an unknown key, a key lacking the scope, a sandbox key on a production id,
//! and a good key; malformed parameters; the rate limit at exactly its count.
//!
//! The store holds the bundled sandbox fixtures (projected by the service
//! itself) and a small generated production stream (projected before it
//! starts); production keys come from the operator command.

use std::path::Path;

use end_to_end_tests::{ALL_SCOPES, RunningService, issue_production_key, project};
use projector::generate::{GenerateOptions, generate};

/// Every keyed endpoint (production ids, except the sandbox license) with its scope.
const ENDPOINTS: [(&str, &str); 8] = [
    ("/rights/LCC-0000000001", "rights:read"),
    ("/rights/LCC-0000000001/verify", "rights:verify"),
    ("/rights/LCC-0000000001/metadata", "metadata:read"),
    ("/rights/LCC-0000000001/provenance", "metadata:read"),
    ("/rights/LCC-0000000001/evidence", "evidence:read"),
    ("/licenses/SANDBOX-LIC-BLANKET-ACTIVE/status", "licenses:read"),
    ("/bulk/works?page=1&limit=5", "bulk:read"),
    ("/rights?isrc=ZZZZZ0000000", "rights:read"),
];

/// The service over the sandbox fixtures and 60 generated production works,
/// with a key of every scope and the keys `issue` makes.
fn start_with_production_works(issue: impl FnOnce(&Path) -> Vec<String>) -> (RunningService, String, Vec<String>) {
    let mut full_key = String::new();
    let mut keys = Vec::new();
    let service = RunningService::start(&[], |data| {
        let events = data.join("production-events");
        let options = GenerateOptions { works: 60, seed: 31, events_per_segment: 10_000, sandbox: false };
        generate(&options, &events).expect("generate");
        project(&events, data, 1_000);
        full_key = issue_production_key(data, &ALL_SCOPES, 1_000_000);
        keys = issue(data);
    });
    (service, full_key, keys)
}

fn code(body: &str) -> String {
    let problem: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    problem["code"].as_str().unwrap_or_default().to_owned()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
}

#[test]
fn every_keyed_endpoint_enforces_key_scope_and_audience_in_the_real_service() {
    let (service, full_key, lacking_keys) = start_with_production_works(|data| {
        ENDPOINTS
            .iter()
            .map(|(_, scope)| {
                issue_production_key(
                    data,
                    &ALL_SCOPES.into_iter().filter(|other| other != scope).collect::<Vec<_>>(),
                    1_000,
                )
            })
            .collect()
    });
    let sandbox_key = service.register_sandbox_key();
    for ((path, scope), lacking) in ENDPOINTS.into_iter().zip(&lacking_keys) {
        let (status, _, body) = service.request("GET", path, &[], "");
        assert_eq!((status, code(&body)), (401, "missing_api_key".into()), "{path}");
        let (status, headers, body) = service.request("GET", path, &[("x-api-key", "lcc_live_unknown")], "");
        assert_eq!((status, code(&body)), (401, "invalid_api_key".into()), "{path}");
        assert_eq!(header(&headers, "content-type"), Some("application/problem+json"));
        assert_eq!(header(&headers, "www-authenticate"), Some("ApiKey header=\"x-api-key\""));

        let (status, _, body) = service.request("GET", path, &[("x-api-key", lacking)], "");
        assert_eq!((status, code(&body)), (403, "insufficient_scope".into()), "{path}");
        assert!(body.contains(&format!("lacks the {scope} scope")), "{path}: {body}");

        let (status, _, body) = service.request("GET", path, &[("x-api-key", &full_key)], "");
        let expected = if path.starts_with("/rights?isrc") { 404 } else { 200 };
        assert_eq!(status, expected, "{path}: {body}");
    }
    for path in ["/rights/LCC-0000000001", "/rights/LCC-0000000001/evidence", "/licenses/LIC-0000000001/status"] {
        let (status, _, body) = service.request("GET", path, &[("x-api-key", &sandbox_key)], "");
        assert_eq!((status, code(&body)), (403, "sandbox_key_production_record".into()), "{path}");
    }
    let (status, _, body) = service.request("GET", "/rights/SANDBOX-LCC-0003", &[("x-api-key", &sandbox_key)], "");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = service.request("GET", "/bulk/works?limit=100", &[("x-api-key", &sandbox_key)], "");
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).expect("json");
    let ids: Vec<&str> =
        page["items"].as_array().expect("items").iter().filter_map(|row| row["lccId"].as_str()).collect();
    assert!(!ids.is_empty() && ids.iter().all(|id| id.starts_with("SANDBOX-")), "{ids:?}");

    for (path, expected) in [
        ("/rights?iswc=T-034.524.680-2", "check digit"),
        ("/rights?iswc=T0345246801&isrc=USS1Z9900001", "exactly one"),
        ("/rights?iswc=a&iswc=b", "iswc"),
        ("/bulk/works?page=0", "page"),
        ("/bulk/works?limit=1001", "limit"),
        ("/rights/LCC-0000000001/verify?sha256=xyz", "sha256"),
    ] {
        let (status, _, body) = service.request("GET", path, &[("x-api-key", &full_key)], "");
        assert_eq!((status, code(&body)), (400, "invalid_parameter".into()), "{path}: {body}");
        assert!(body.contains(expected), "{path}: {body}");
    }
}

#[test]
fn the_rate_limit_allows_exactly_its_count_with_headers_then_answers_429() {
    let (service, _, keys) = start_with_production_works(|data| vec![issue_production_key(data, &["rights:read"], 5)]);
    let key = &keys[0];
    for remaining in (0..5).rev() {
        let (status, headers, body) = service.request("GET", "/rights/LCC-0000000002", &[("x-api-key", key)], "");
        assert_eq!(status, 200, "{body}");
        assert_eq!(header(&headers, "x-ratelimit-limit"), Some("5"));
        assert_eq!(header(&headers, "x-ratelimit-remaining"), Some(remaining.to_string().as_str()));
        let reset: u64 = header(&headers, "x-ratelimit-reset").expect("reset").parse().expect("whole seconds");
        assert!(reset <= 60, "{reset}");
    }
    let (status, headers, body) = service.request("GET", "/rights/LCC-0000000002", &[("x-api-key", key)], "");
    assert_eq!((status, code(&body)), (429, "rate_limited".into()), "{body}");
    assert_eq!(header(&headers, "x-ratelimit-remaining"), Some("0"));
    let retry_after: u64 = header(&headers, "retry-after").expect("Retry-After").parse().expect("seconds");
    assert!((1..=12).contains(&retry_after), "{retry_after}");
    for name in ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"] {
        assert_eq!(headers.iter().filter(|(key, _)| key == name).count(), 1, "{name} is single-valued");
    }
}
