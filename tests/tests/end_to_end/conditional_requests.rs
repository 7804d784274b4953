//! Conditional requests through the real binaries: every endpoint answers
//! 200 with a tag and 304 with that tag, and after the projector changes
//! the records, the changed ones answer 200 with a new tag while the
//! unchanged ones still answer 304. Every coding of an answer decodes, with
//! libraries we did not write, to the identity body, and has its own tag.

use std::process::Command;

use end_to_end_tests::{
    ALL_SCOPES, BASE_PATH, avro_files_in, copy_files, http, issue_production_key, project, serve_quietly,
};
use projector::generate::{GenerateOptions, generate};

/// (status, ETag) of a GET with an optional `If-None-Match`.
fn tagged(address: &str, path: &str, key: &str, held: Option<&str>) -> (u16, Option<String>) {
    let mut headers = vec![("x-api-key", key)];
    if let Some(tag) = held {
        headers.push(("if-none-match", tag));
    }
    let (status, response_headers, body) = http(address, "GET", &format!("{BASE_PATH}{path}"), &headers, "");
    if status == 304 {
        assert!(body.is_empty(), "{path}: a 304 has no body");
    }
    let tag = response_headers.into_iter().find(|(name, _)| name == "etag").map(|(_, value)| value);
    (status, tag)
}

#[test]
fn tags_hold_until_the_projector_changes_a_record_and_then_change() {
    let directory = tempfile::tempdir().expect("tempdir");
    let generated = directory.path().join("generated");
    generate(&GenerateOptions { works: 400, seed: 30, events_per_segment: 700, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    let events = directory.path().join("events");
    let data = directory.path().join("data");
    std::fs::create_dir_all(&events).expect("events");
    let half = files.len() / 2 / 6 * 6;
    copy_files(&files[..half], &events);
    project(&events, &data, 500);
    let key = issue_production_key(&data, &ALL_SCOPES, 1_000_000);
    let (mut server, address) = serve_quietly(&data);

    let (_, _, body) = http(&address, "GET", &format!("{BASE_PATH}/bulk/works?limit=1000"), &[("x-api-key", &key)], "");
    let export: serde_json::Value = serde_json::from_str(&body).expect("json");
    let works: Vec<String> = export["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|row| row["lccId"].as_str().expect("id").to_owned())
        .collect();
    assert!(works.len() > 50, "{}", works.len());
    let mut paths =
        vec!["/bulk/works?limit=1000".to_owned(), "/openapi.json".to_owned(), "/sandbox/fixtures".to_owned()];
    for work in &works {
        for suffix in ["", "/metadata", "/provenance", "/verify"] {
            paths.push(format!("/rights/{work}{suffix}"));
        }
    }
    let mut held = Vec::new();
    for path in &paths {
        let (status, tag) = tagged(&address, path, &key, None);
        assert_eq!(status, 200, "{path}");
        let tag = tag.unwrap_or_else(|| panic!("{path} has no tag"));
        assert_eq!(tagged(&address, path, &key, Some(&tag)), (304, Some(tag.clone())), "{path}");
        held.push((path.clone(), tag));
    }

    copy_files(&files[half..], &events);
    project(&events, &data, 500);
    let (mut changed, mut unchanged) = (0, 0);
    for (path, tag) in &held {
        match tagged(&address, path, &key, Some(tag)) {
            (304, Some(same)) => {
                assert_eq!(&same, tag);
                unchanged += 1;
            }
            (200, Some(new)) => {
                assert_ne!(&new, tag, "{path}: a new answer, a new tag");
                changed += 1;
            }
            // A work withdrawn meanwhile may be gone from some answers.
            (404, None) => changed += 1,
            other => panic!("{path}: {other:?}"),
        }
    }
    assert!(changed > 0 && unchanged > 0, "changed {changed}, unchanged {unchanged}");
    let (status, _) = tagged(&address, "/openapi.json", &key, Some(&held[1].1));
    assert_eq!(status, 304, "the document did not change");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn every_coding_of_the_real_service_decodes_with_independent_libraries_to_the_identity_body() {
    end_to_end_tests::require_external_tool("python3");
    let service = end_to_end_tests::RunningService::start(&[], |_| {});
    let key = service.register_sandbox_key();
    for path in ["/bulk/works?limit=1000", "/sandbox/fixtures", "/openapi.json"] {
        let output = Command::new("python3")
            .arg(end_to_end_tests::workspace_root().join("tests/encodings/decode_codings.py"))
            .arg(format!("{}{BASE_PATH}{path}", service.origin()))
            .arg(&key)
            .output()
            .expect("python3 runs");
        assert!(
            output.status.success(),
            "{path}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
        let identity = report["identity"]["bytes"].as_u64().expect("bytes");
        for coding in ["gzip", "br", "zstd"] {
            let coded = report[coding]["bytes"].as_u64().expect("bytes");
            assert!(coded < identity, "{path} {coding}: {coded} of {identity} bytes");
            assert!(report[coding]["etag"].as_str().is_some_and(|tag| tag.ends_with(&format!("-{coding}\""))));
        }
    }
}
