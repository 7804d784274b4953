//! Production keys managed by the operator command while the service runs:
//! a key issued now is accepted on its first request, a revoked key is
//! refused within a second, without a restart, and a key whose
//! notifications the operator limited reads only those.

use std::time::{Duration, Instant};

use end_to_end_tests::{
    BASE_PATH, RunningService, binary, generate_and_project, http, issue_production_key_with_id, revoke_production_key,
    serve_quietly,
};

#[test]
fn a_key_issued_while_the_service_runs_works_at_once_and_a_revoked_one_is_refused_within_a_second() {
    let service = RunningService::start(&[], |_| {});
    let (key, key_id) = issue_production_key_with_id(service.data.path(), &["rights:read"], 600);
    let issued = Instant::now();
    let (status, headers, body) = service.request("GET", "/rights/LCC-0000000001", &[("x-api-key", &key)], "");
    let first_answer = issued.elapsed();
    // The store holds only sandbox works, so the production id is unknown: 404, not 401.
    assert_eq!(status, 404, "the first request with the new key is authenticated: {body}");
    assert!(headers.iter().any(|(name, value)| name == "x-ratelimit-limit" && value == "600"), "{headers:?}");
    eprintln!("the new key was accepted {first_answer:?} after the command returned");

    revoke_production_key(service.data.path(), &key_id);
    let revoked = Instant::now();
    loop {
        let (status, _, body) = service.request("GET", "/rights/LCC-0000000001", &[("x-api-key", &key)], "");
        if status == 401 {
            assert!(body.contains("invalid_api_key"), "{body}");
            break;
        }
        assert!(revoked.elapsed() < Duration::from_secs(1), "the revoked key was still accepted: {status}");
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("the revoked key was refused {:?} after the command returned", revoked.elapsed());
}

/// Runs `query-api keys --data-dir DATA ARGUMENTS…`: (success, stdout, stderr).
fn keys_command(data: &std::path::Path, arguments: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(binary("query-api"))
        .arg("keys")
        .arg("--data-dir")
        .arg(data)
        .args(arguments)
        .output()
        .expect("query-api keys runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn a_key_limited_to_works_by_the_operator_reads_their_notifications_only() {
    let directory = tempfile::tempdir().expect("tempdir");
    let data = generate_and_project(directory.path(), 30, 47, 10_000).clean;
    let issue = ["issue", "--partner", "Acme Music", "--scopes", "notifications:read"];
    let (refused, _, reason) = keys_command(&data, &[&issue[..], &["--notify-parties", "123"]].concat());
    assert!(!refused && reason.contains("IPI"), "an IPI of three digits is refused: {reason}");
    let works = ["--notify-works", "LCC-0000000001,LCC-0000000002"];
    let (issued, key, told) = keys_command(&data, &[&issue[..], &works[..]].concat());
    assert!(issued && told.contains("notifications of works:LCC-0000000001,LCC-0000000002"), "{told}");
    let (_, listed, _) = keys_command(&data, &["list"]);
    assert!(listed.contains("notifications of works:LCC-0000000001,LCC-0000000002"), "{listed}");

    let (mut server, address) = serve_quietly(&data);
    let path = format!("{BASE_PATH}/notifications?limit=1000");
    let (status, _, body) = http(&address, "GET", &path, &[("x-api-key", key.trim())], "");
    let _ = server.kill();
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).expect("a page");
    let ids: std::collections::BTreeSet<&str> =
        page["items"].as_array().expect("items").iter().map(|item| item["id"].as_str().expect("id")).collect();
    assert_eq!(ids, ["LCC-0000000001", "LCC-0000000002"].into(), "exactly the two works' notifications");
}
