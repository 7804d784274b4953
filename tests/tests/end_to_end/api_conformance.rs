//! The served API checked by independent tools against the real binary:
//! `openapi-spec-validator` on the document, `schemathesis` on every
//! operation with a production key and with a sandbox key, and headless
//! Chromium on `/api/docs` with every other host unreachable.
//!
//! The tools are installed by `scripts/test.sh`; where one is missing the
//! test fails.

use std::path::PathBuf;
use std::process::Command;

use end_to_end_tests::{
    ALL_SCOPES, BASE_PATH, RunningService, external_check, headless_chromium, issue_production_key,
    require_external_tool, workspace_root,
};

/// Where tests keep what a person may want to look at after a run.
fn artifacts_directory() -> PathBuf {
    let directory = workspace_root().join("target/test-artifacts");
    std::fs::create_dir_all(&directory).expect("artifacts directory");
    directory
}

#[test]
fn the_served_description_is_valid_openapi_3_1() {
    let service = RunningService::start(&[], |_| {});
    let (status, _, document) = service.request("GET", "/openapi.json", &[], "");
    assert_eq!(status, 200);
    let parsed: serde_json::Value = serde_json::from_str(&document).expect("json");
    assert_eq!(parsed["openapi"], "3.1.0");
    external_check("openapi-spec-validator", &["--schema", "3.1", "-"], &document);
}

/// Examples per operation and phase: 60 in the suite; a longer run sets
/// `LCC_SCHEMATHESIS_MAX_EXAMPLES` (the README's 300 run about 16,000 cases).
fn max_examples() -> String {
    std::env::var("LCC_SCHEMATHESIS_MAX_EXAMPLES").unwrap_or_else(|_| "60".into())
}

/// Runs schemathesis with every check against the running service with `key`.
fn schemathesis(service: &RunningService, key: &str, seed: &str) {
    let output = Command::new("schemathesis")
        .current_dir(workspace_root().join("tests"))
        .args(["--config-file", "schemathesis.toml", "run"])
        .arg(format!("{}{BASE_PATH}/openapi.json", service.origin()))
        // One worker: Hypothesis parses lambdas' source from several threads at
        // once, which CPython 3.11 can fail on (an AST recursion-depth error).
        .args(["--checks", "all", "--max-examples", &max_examples(), "--workers", "1", "--seed", seed])
        .args(["--header", &format!("x-api-key: {key}")])
        .args(["--exclude-operation-id", "streamNotifications"])
        .env("NO_COLOR", "1")
        .output()
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&output.stdout);
    eprintln!("{report}");
    assert!(
        output.status.success(),
        "schemathesis found failures:\n{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Schemathesis leaves out the operation that serves the document it was
    // pointed at (`/openapi.json`), and is told to leave out the event stream,
    // which never ends (its own tests are in notification_stream.rs); the
    // other twenty are all tested.
    assert!(report.contains("Operations:       21 selected / 22 total"), "not every operation was tested:\n{report}");
}

#[test]
fn schemathesis_finds_no_server_error_and_no_answer_that_contradicts_the_document() {
    require_external_tool("schemathesis");
    let mut production_key = String::new();
    let service = RunningService::start(&[("LCC_DEFAULT_RATE_LIMIT", "1000000")], |data| {
        production_key = issue_production_key(data, &ALL_SCOPES, 1_000_000);
    });
    schemathesis(&service, &production_key, "20261121");
    let sandbox_key = service.register_sandbox_key();
    schemathesis(&service, &sandbox_key, "20261122");
}

#[test]
fn the_interactive_documentation_renders_in_headless_chromium_from_the_service_alone() {
    require_external_tool("chromium");
    let service = RunningService::start(&[], |_| {});
    let profile = tempfile::tempdir().expect("profile");
    let net_log = profile.path().join("net-log.json");
    let screenshot = artifacts_directory().join("api-docs.png");
    let _ = std::fs::remove_file(&screenshot);
    let url = format!("{}/api/docs", service.origin());
    let chromium = |extra: &[String]| {
        let output = headless_chromium(profile.path())
            .arg("--window-size=1280,1600")
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs");
        assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };

    let dom = chromium(&["--dump-dom".to_owned(), format!("--log-net-log={}", net_log.display())]);
    assert!(dom.contains("data-state=\"ready\""), "the page did not finish rendering:\n{dom}");
    for operation in [
        "getRightsProfile",
        "findRightsProfiles",
        "verifyRights",
        "getLicenseStatus",
        "getMetadata",
        "getProvenance",
        "listPublishedWorks",
        "getEvidencePackage",
        "listSandboxFixtures",
        "registerSandboxKey",
        "getOpenApiDescription",
    ] {
        assert!(dom.contains(&format!("data-operation-id=\"{operation}\"")), "{operation} is not listed:\n{dom}");
    }
    assert!(dom.contains("/rights/{lccId}/verify") && dom.contains("rights:verify"), "paths and scopes are shown");

    // Every request the page made went to the service; the browser's own
    // background requests have no initiator and never resolve here.
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&net_log).expect("net log")).expect("net log parses");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_u64().expect("event type");
    let page_requests: Vec<String> = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["type"].as_u64() == Some(start_job))
        .filter(|event| event["params"]["initiator"].as_str().is_some_and(|origin| origin.starts_with("http")))
        .filter_map(|event| event["params"]["url"].as_str().map(str::to_owned))
        .collect();
    for expected in ["/api/docs/docs.js", "/api/docs/docs.css", &format!("{BASE_PATH}/openapi.json")] {
        assert!(
            page_requests.contains(&format!("{}{expected}", service.origin())),
            "{expected} not loaded: {page_requests:?}"
        );
    }
    for request in &page_requests {
        assert!(request.starts_with(&format!("{}/", service.origin())), "the page loaded {request}");
    }

    chromium(&[format!("--screenshot={}", screenshot.display())]);
    let png = std::fs::read(&screenshot).expect("screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "the screenshot is not a rendered page");
    eprintln!("screenshot kept at {}", screenshot.display());
}
