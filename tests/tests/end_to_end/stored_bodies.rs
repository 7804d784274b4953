//! The bodies a real projector stores, read with libraries we did not
//! write: every body of every table decodes with python-lz4 or zstandard
//! and the committed dictionary it names (tests/store/stored_bodies.py),
//! both codecs are in use, and each work's rights profile so decoded is
//! the answer the real query API serves for it, byte for byte.

use std::process::Command;

use end_to_end_tests::{BASE_PATH, http, issue_production_key, project, serve_quietly};
use projector::generate::{GenerateOptions, generate};

#[test]
fn every_stored_body_decodes_with_independent_libraries_to_what_the_api_serves() {
    end_to_end_tests::require_external_tool("python3");
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let data = directory.path().join("data");
    generate(&GenerateOptions { works: 300, seed: 31, events_per_segment: 2_000, sandbox: false }, &events)
        .expect("generate");
    project(&events, &data, 500);

    let output = Command::new("python3")
        .arg(end_to_end_tests::workspace_root().join("tests/store/stored_bodies.py"))
        .arg(data.join("model-v1.sqlite"))
        .output()
        .expect("python3 runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let held = |column: &str, codec: &str| report[column][codec].as_u64().expect("a count");
    let rights = "work_documents.rights_profile";
    assert!(held(rights, "lz4") > 0 && held(rights, "zstd") == 0, "{}", report[rights]);
    for column in [
        "work_documents.verification",
        "work_documents.metadata",
        "work_documents.evidence",
        "license_statuses.body",
        "provenance_entries.body",
        "bulk_rows.body",
    ] {
        assert!(held(column, "zstd") > 0 && held(column, "lz4") == 0, "{column}: {}", report[column]);
    }
    // Short states are kept as they are.
    assert!(held("aggregates.state", "zstd") > 0 && held("aggregates.state", "plain") > 0);

    let profiles = report["rightsProfiles"].as_object().expect("profiles");
    assert!(profiles.len() > 200, "{} profiles", profiles.len());
    let key = issue_production_key(&data, &["rights:read"], 1_000_000);
    let (mut server, address) = serve_quietly(&data);
    for (lcc_id, decoded) in profiles.iter().step_by(7) {
        let (status, _, served) =
            http(&address, "GET", &format!("{BASE_PATH}/rights/{lcc_id}"), &[("x-api-key", &key)], "");
        assert_eq!(status, 200, "{lcc_id}");
        assert_eq!(Some(served.as_str()), decoded.as_str(), "{lcc_id}");
    }
    let _ = server.kill();
    let _ = server.wait();
}
