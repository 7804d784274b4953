//! The single-machine service as a user runs it (`cargo run --release`): the
//! README's first session through the real binary, then SIGTERM.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{binary, external_check, free_port, http, workspace_root};

#[test]
fn the_readme_first_session_works_against_the_real_service() {
    let directory = tempfile::tempdir().expect("tempdir");
    let address = format!("127.0.0.1:{}", free_port());
    let admin = format!("127.0.0.1:{}", free_port());
    let mut service = Command::new(binary("rights-service"))
        .current_dir(workspace_root())
        .arg("--data-dir")
        .arg(directory.path())
        .arg("--listen")
        .arg(&address)
        .arg("--admin-listen")
        .arg(&admin)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("service starts");
    let base = "/api/v1/public/v1";
    let started = Instant::now();
    let fixtures = loop {
        assert!(started.elapsed() < Duration::from_secs(60), "the service did not come up");
        if std::net::TcpStream::connect(&address).is_ok() {
            let (status, _, body) = http(&address, "GET", &format!("{base}/sandbox/fixtures"), &[], "");
            let parsed: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if status == 200 && parsed["count"].as_u64() == Some(28) {
                break parsed;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(fixtures["fixtures"][0]["id"], "SANDBOX-LCC-0001");

    let (status, _, body) = http(
        &address,
        "POST",
        &format!("{base}/sandbox/register"),
        &[("content-type", "application/json")],
        r#"{"email":"me@example.org"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let registered: serde_json::Value = serde_json::from_str(&body).expect("json");
    let key = registered["apiKey"].as_str().expect("key");

    let (status, headers, body) =
        http(&address, "GET", &format!("{base}/rights/SANDBOX-LCC-0002"), &[("x-api-key", key)], "");
    assert_eq!(status, 200, "{body}");
    assert!(headers.iter().any(|(name, value)| name == "x-ratelimit-limit" && value == "60"), "{headers:?}");
    let profile: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(profile["holders"].as_array().map(Vec::len), Some(3));

    let (status, _, body) = http(&address, "GET", &format!("{base}/rights/SANDBOX-LCC-0002"), &[], "");
    assert_eq!(status, 401, "{body}");

    let (status, _, body) = http(&admin, "GET", "/healthz", &[], "");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, _, body) = http(&admin, "GET", "/readyz", &[], "");
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let (status, headers, metrics) = http(&admin, "GET", "/metrics", &[], "");
    assert_eq!(status, 200);
    assert!(
        headers.iter().any(|(name, value)| name == "content-type" && value.starts_with("text/plain; version=0.0.4"))
    );
    for expected in [
        "lcc_http_requests_total{method=\"GET\",route=\"/api/v1/public/v1/rights/{lccId}\",status=\"200\"} 1",
        "lcc_http_requests_total{method=\"GET\",route=\"/api/v1/public/v1/rights/{lccId}\",status=\"401\"} 1",
        "lcc_http_authentication_failures_total 1",
        "lcc_http_request_duration_seconds_bucket",
        "lcc_store_read_duration_seconds_count{operation=\"rights_profiles\"}",
        "lcc_build_info{version=",
    ] {
        assert!(metrics.contains(expected), "{expected} missing from:\n{metrics}");
    }
    external_check("promtool", &["check", "metrics"], &metrics);
    let (status, _, _) = http(&address, "GET", "/metrics", &[], "");
    assert_eq!(status, 404, "metrics are on the admin listener only");

    let killed = Command::new("kill").arg("-TERM").arg(service.id().to_string()).status().expect("kill");
    assert!(killed.success());
    let status = service.wait().expect("exit");
    assert!(status.success(), "SIGTERM stops the service cleanly: {status:?}");
}
