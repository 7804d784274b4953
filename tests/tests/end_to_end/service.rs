//! The single-machine service as a user runs it (`cargo run --release`): the
//! README's first session through the real binary, then SIGTERM; and a
//! sandbox key that outlives a restart; and the sandbox snapshot a newcomer
//! finds ready.

use end_to_end_tests::{RunningService, external_check, http};

#[test]
fn the_readme_first_session_works_against_the_real_service() {
    let service = RunningService::start(&[], |_| {});
    let (status, _, body) = service.request("GET", "/sandbox/fixtures", &[], "");
    assert_eq!(status, 200, "{body}");
    let fixtures: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(fixtures["fixtures"][0]["id"], "SANDBOX-LCC-0001");

    let key = service.register_sandbox_key();
    let (status, headers, body) = service.request("GET", "/rights/SANDBOX-LCC-0002", &[("x-api-key", &key)], "");
    assert_eq!(status, 200, "{body}");
    assert!(headers.iter().any(|(name, value)| name == "x-ratelimit-limit" && value == "60"), "{headers:?}");
    let profile: serde_json::Value = serde_json::from_str(&body).expect("json");
    let first_read = body;
    assert_eq!(profile["holders"].as_array().map(Vec::len), Some(3));

    let (status, _, body) = service.request("GET", "/rights/SANDBOX-LCC-0002", &[], "");
    assert_eq!(status, 401, "{body}");
    let (status, _, again) = service.request("GET", "/rights/SANDBOX-LCC-0002", &[("x-api-key", &key)], "");
    assert_eq!((status, &again), (200, &first_read), "the cached profile is the one read first");

    let (status, _, body) = http(&service.admin, "GET", "/healthz", &[], "");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, _, body) = http(&service.admin, "GET", "/readyz", &[], "");
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let (status, headers, metrics) = http(&service.admin, "GET", "/metrics", &[], "");
    assert_eq!(status, 200);
    assert!(
        headers.iter().any(|(name, value)| name == "content-type" && value.starts_with("text/plain; version=0.0.4"))
    );
    for expected in [
        "lcc_http_requests_total{method=\"GET\",route=\"/api/v1/public/v1/rights/{lccId}\",status=\"200\"} 2",
        "lcc_http_requests_total{method=\"GET\",route=\"/api/v1/public/v1/rights/{lccId}\",status=\"401\"} 1",
        "lcc_http_authentication_failures_total 1",
        "lcc_http_request_duration_seconds_bucket",
        "lcc_store_read_duration_seconds_count{operation=\"rights_profiles\"}",
        "lcc_build_info{version=",
        "lcc_document_cache_misses_total",
        "lcc_document_cache_bytes",
        "lcc_document_cache_holds_stored 0",
    ] {
        assert!(metrics.contains(expected), "{expected} missing from:\n{metrics}");
    }
    let hits = metrics
        .lines()
        .find_map(|line| line.strip_prefix("lcc_document_cache_hits_total "))
        .and_then(|value| value.parse::<u64>().ok());
    assert!(hits.is_some_and(|hits| hits >= 1), "the repeated read was answered from memory:\n{metrics}");
    external_check("promtool", &["check", "metrics"], &metrics);
    let (status, _, _) = http(&service.address, "GET", "/metrics", &[], "");
    assert_eq!(status, 404, "metrics are on the admin listener only");

    let status = service.stop();
    assert!(status.success(), "SIGTERM stops the service cleanly: {status:?}");
}

#[test]
fn a_sandbox_key_survives_a_restart_with_a_secret_kept_owner_only_in_the_data_directory() {
    use std::os::unix::fs::PermissionsExt;
    let service = RunningService::start(&[], |_| {});
    let key = service.register_sandbox_key();
    let secret = service.data.path().join("sandbox-key-secret");
    let mode = std::fs::metadata(&secret).expect("the secret is kept").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only its owner may read it");
    let kept = std::fs::read(&secret).expect("secret");

    let service = service.restart(&[]);
    let (status, _, body) = service.request("GET", "/rights/SANDBOX-LCC-0002", &[("x-api-key", &key)], "");
    assert_eq!(status, 200, "the key registered before the restart still works: {body}");
    assert_eq!(std::fs::read(&secret).expect("secret"), kept, "the secret is reused, not made again");
}

#[test]
fn a_newcomer_finds_a_sandbox_snapshot_ready_and_downloads_it() {
    let service = RunningService::start(&[], |_| {});
    let key = service.register_sandbox_key();
    let started = std::time::Instant::now();
    let snapshot = loop {
        let (status, _, body) = service.request("GET", "/bulk/snapshots", &[("x-api-key", &key)], "");
        assert_eq!(status, 200, "{body}");
        let list: serde_json::Value = serde_json::from_str(&body).expect("json");
        if let Some(first) = list["snapshots"].as_array().and_then(|snapshots| snapshots.first()) {
            break first.clone();
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "no sandbox snapshot was cut");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(snapshot["rowCount"], 14, "every published sandbox work: the snapshot waited for the projector");
    let id = snapshot["snapshotId"].as_str().expect("id");
    let (status, _, body) = service.request("GET", &format!("/bulk/snapshots/{id}"), &[("x-api-key", &key)], "");
    assert_eq!(status, 200, "{body}");
    let manifest: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(manifest["audience"], "sandbox");
    let (status, _, body) = service.request(
        "GET",
        &format!("/bulk/changes?since={}", manifest["changesCursor"].as_str().expect("cursor")),
        &[("x-api-key", &key)],
        "",
    );
    assert_eq!(status, 200, "the manifest's cursor continues the feed: {body}");
    let parquet = manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|file| file["format"] == "parquet")
        .expect("a Parquet file");
    let path = service.data.path().join("snapshots/sandbox").join(id).join(parquet["name"].as_str().expect("name"));
    assert_eq!(
        std::fs::metadata(path).expect("the file is in the data directory").len(),
        parquet["bytes"].as_u64().expect("bytes")
    );
}
