//! The provenance chain checked by a client we did not write: for every
//! sandbox work, the `rfc8785` package and hashlib recompute each entry's
//! `chainHash` from the served entries, and the evidence package names the
//! chain's head (`tests/provenance/verify_chain.py`).

use std::process::Command;

use end_to_end_tests::{BASE_PATH, RunningService, require_external_tool, workspace_root};

#[test]
fn every_sandbox_works_provenance_chain_verifies_with_rfc8785_and_the_evidence_names_its_head() {
    require_external_tool("python3");
    let service = RunningService::start(&[], |_| {});
    let key = service.register_sandbox_key();
    let (status, _, body) = service.request("GET", "/sandbox/fixtures", &[], "");
    assert_eq!(status, 200, "{body}");
    let fixtures: serde_json::Value = serde_json::from_str(&body).expect("json");
    let works: Vec<String> = fixtures["fixtures"]
        .as_array()
        .expect("fixtures")
        .iter()
        .filter(|fixture| fixture["resource"] == "work")
        .map(|fixture| fixture["id"].as_str().expect("id").to_owned())
        .collect();
    assert!(works.len() >= 14, "{works:?}");
    let output = Command::new("python3")
        .arg(workspace_root().join("tests/provenance/verify_chain.py"))
        .arg(format!("{}{BASE_PATH}", service.origin()))
        .arg(&key)
        .args(&works)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "the chain does not verify:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).expect("a JSON report");
    assert_eq!(report["works"].as_u64(), Some(works.len() as u64));
    assert!(report["entries"].as_u64().is_some_and(|entries| entries > works.len() as u64), "{report}");
}
