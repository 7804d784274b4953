//! Signed evidence checked by clients we did not write, through the real
//! binaries: `jwcrypto` and `rfc8785` (tests/evidence/verify_signatures.py)
//! verify packages and a manifest fetched from a running `query-api serve`
//! against the key sets it serves, before and after a key rotation made
//! with the operator commands while it runs, and `query-api evidence
//! verify` reaches the same verdict on every case.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{
    ALL_SCOPES, BASE_PATH, binary, generate_and_project, http, issue_production_key, project, register_sandbox_key,
    require_external_tool, spawn_listening, workspace_root,
};

/// A GET under the base path; panics unless it answers 200.
pub(crate) fn fetch(address: &str, path: &str, key: Option<&str>) -> String {
    let headers: Vec<(&str, &str)> = key.map(|key| ("x-api-key", key)).into_iter().collect();
    let (status, _, body) = http(address, "GET", &format!("{BASE_PATH}{path}"), &headers, "");
    assert_eq!(status, 200, "{path}: {body}");
    body
}

pub(crate) fn save(directory: &Path, name: &str, content: &str) -> PathBuf {
    let path = directory.join(name);
    std::fs::write(&path, content).expect("save");
    path
}

/// Runs `query-api signing-keys` on the keyring in `data`; returns its listing.
pub(crate) fn signing_keys(data: &Path, arguments: &[&str]) -> String {
    let output = Command::new(binary("query-api"))
        .arg("signing-keys")
        .args(arguments)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("runs");
    assert!(output.status.success(), "signing-keys {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

/// The id of the active production key in a `signing-keys` listing.
pub(crate) fn active_production_kid(listing: &str) -> String {
    listing
        .lines()
        .find(|line| line.contains("\tproduction\tactive"))
        .and_then(|line| line.split('\t').next())
        .unwrap_or_else(|| panic!("no active production key in {listing:?}"))
        .to_owned()
}

/// `query-api evidence verify`: (valid, what it printed).
pub(crate) fn verify_with_our_command(document: &Path, keys: &[&str]) -> (bool, String) {
    let output =
        Command::new(binary("query-api")).args(["evidence", "verify"]).arg(document).args(keys).output().expect("runs");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(printed.starts_with(if output.status.success() { "valid:" } else { "invalid:" }), "{printed}");
    (output.status.success(), printed)
}

/// The verdicts of the independent checker.
pub(crate) fn verify_with_jwcrypto(spec: &serde_json::Value) -> serde_json::Value {
    let mut checker = Command::new("python3");
    checker.arg(workspace_root().join("tests/evidence/verify_signatures.py"));
    json_report(checker, spec)
}

/// Runs `checker` with `spec` on its standard input; it must succeed and
/// print one JSON report, which is returned.
pub(crate) fn json_report(mut checker: Command, spec: &serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    let mut child = checker
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{checker:?} does not start: {error}"));
    child.stdin.take().expect("stdin").write_all(spec.to_string().as_bytes()).expect("write");
    let output = child.wait_with_output().expect("runs");
    assert!(output.status.success(), "{checker:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn signed_packages_and_manifests_verify_with_jwcrypto_across_a_rotation_and_our_verifier_agrees() {
    require_external_tool("python3");
    let directory = tempfile::tempdir().expect("tempdir");
    let projected = generate_and_project(directory.path(), 40, 35, 10_000);
    let data = projected.clean.clone();
    project(&workspace_root().join("schemas/fixtures/sandbox"), &data, 500);
    let key = issue_production_key(&data, &ALL_SCOPES, 100_000);
    let mut serve = Command::new(binary("query-api"));
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(&data)
        .env("RUST_LOG", "warn");
    let (mut server, mut listening) = spawn_listening(&mut serve);
    let address = listening.remove("public").expect("public listener");
    let saved = directory.path().join("saved");
    std::fs::create_dir_all(&saved).expect("saved");

    // The embedded default created its keyring, owner-only, beside the store.
    let keyring = data.join("signing-keys.json");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&keyring).expect("keyring").permissions().mode() & 0o777, 0o600);
    let listing = signing_keys(&data, &["list"]);
    let old_kid = active_production_kid(&listing);

    let sandbox_key = register_sandbox_key(&address);
    let work = "LCC-0000000001";
    let before = save(&saved, "before.json", &fetch(&address, &format!("/rights/{work}/evidence"), Some(&key)));
    let production_keys_before = save(&saved, "keys-before.json", &fetch(&address, "/keys", None));
    let sandbox_keys = save(&saved, "sandbox-keys.json", &fetch(&address, "/keys?audience=sandbox", None));
    let sandbox_package =
        save(&saved, "sandbox.json", &fetch(&address, "/rights/SANDBOX-LCC-0003/evidence", Some(&sandbox_key)));
    wait_for("a production snapshot", || {
        let list: serde_json::Value =
            serde_json::from_str(&fetch(&address, "/bulk/snapshots", Some(&key))).expect("json");
        list["snapshots"].as_array().is_some_and(|snapshots| !snapshots.is_empty())
    });
    let list: serde_json::Value = serde_json::from_str(&fetch(&address, "/bulk/snapshots", Some(&key))).expect("json");
    let snapshot = list["snapshots"][0]["snapshotId"].as_str().expect("id").to_owned();
    let manifest = save(&saved, "manifest.json", &fetch(&address, &format!("/bulk/snapshots/{snapshot}"), Some(&key)));
    let mut tampered_text = std::fs::read_to_string(&before).expect("package");
    tampered_text = tampered_text.replacen("\"inForce\":true", "\"inForce\":false", 1);
    let tampered = save(&saved, "tampered.json", &tampered_text);

    // Rotate while the service runs: a new key signs, the old one retires.
    let generated = signing_keys(&data, &["generate", "--audience", "production", "--activate"]);
    let new_kid = active_production_kid(&generated);
    assert_ne!(new_kid, old_kid);
    signing_keys(&data, &["retire", &old_kid]);
    let after_keys = wait_for_rotation(&address, &old_kid, &new_kid);
    let production_keys_after = save(&saved, "keys-after.json", &after_keys);
    let after = save(&saved, "after.json", &fetch(&address, &format!("/rights/{work}/evidence"), Some(&key)));

    let cases: BTreeMap<&str, (&Path, &Path, bool)> = BTreeMap::from([
        ("package before rotation", (before.as_path(), production_keys_before.as_path(), true)),
        ("package before rotation, keys after", (before.as_path(), production_keys_after.as_path(), true)),
        ("package after rotation", (after.as_path(), production_keys_after.as_path(), true)),
        ("package after rotation, keys before", (after.as_path(), production_keys_before.as_path(), false)),
        ("one value changed", (tampered.as_path(), production_keys_before.as_path(), false)),
        ("sandbox package, sandbox keys", (sandbox_package.as_path(), sandbox_keys.as_path(), true)),
        ("sandbox package, production keys", (sandbox_package.as_path(), production_keys_after.as_path(), false)),
        ("snapshot manifest", (manifest.as_path(), production_keys_after.as_path(), true)),
    ]);
    let spec = serde_json::json!({
        "cases": cases.iter().map(|(name, (document, keys, _))| serde_json::json!({
            "name": name, "document": document, "keys": keys,
        })).collect::<Vec<_>>(),
        "flips": [
            { "name": "package", "document": before, "keys": production_keys_after },
            { "name": "manifest", "document": manifest, "keys": production_keys_after },
        ],
    });
    let report = verify_with_jwcrypto(&spec);
    for (name, (document, keys, expected)) in &cases {
        let independent = &report["verdicts"][name];
        assert_eq!(independent["valid"].as_bool(), Some(*expected), "jwcrypto on {name}: {independent}");
        let ours = verify_with_our_command(document, &["--keys", keys.to_str().expect("path")]);
        assert_eq!(ours.0, *expected, "query-api evidence verify on {name}: {}", ours.1);
    }
    assert_eq!(report["verdicts"]["package before rotation, keys after"]["status"], "retired", "{report}");
    assert_eq!(report["verdicts"]["package after rotation"]["kid"], new_kid.as_str());
    for name in ["package", "manifest"] {
        let flips = &report["flips"][name];
        assert!(flips["tried"].as_u64().is_some_and(|tried| tried > 500), "{flips}");
        assert_eq!(flips["verified"], 0, "{name}: a copy with one byte changed verified: {flips}");
    }

    // Our verifier fetches the key set itself too, and says why a document fails.
    let keys_url = format!("http://{address}{BASE_PATH}/keys");
    assert!(verify_with_our_command(&before, &["--keys-url", &keys_url]).0);
    let (valid, printed) = verify_with_our_command(&tampered, &["--keys-url", &keys_url]);
    assert!(!valid && printed.contains("changed after key"), "{printed}");
    let (valid, printed) = verify_with_our_command(&sandbox_package, &["--keys-url", &keys_url]);
    assert!(!valid && printed.contains("sandbox"), "{printed}");
    // And agrees with jwcrypto on a sample of the one-byte changes.
    let original = std::fs::read(&before).expect("package");
    for position in (0..original.len()).step_by(original.len() / 40 + 1) {
        let mut changed = original.clone();
        changed[position] ^= 0x01;
        let copy = save(&saved, "changed.json", &String::from_utf8_lossy(&changed));
        let (valid, printed) =
            verify_with_our_command(&copy, &["--keys", production_keys_after.to_str().expect("path")]);
        assert!(!valid, "byte {position} changed, still valid: {printed}");
    }

    let _ = server.kill();
    let _ = server.wait();
}

/// Waits until the running service publishes the rotation; returns the key set.
pub(crate) fn wait_for_rotation(address: &str, old_kid: &str, new_kid: &str) -> String {
    let mut key_set = String::new();
    wait_for("the service to read the rotated keyring", || {
        key_set = fetch(address, "/keys", None);
        let parsed: serde_json::Value = serde_json::from_str(&key_set).expect("json");
        let status_of = |kid: &str| {
            parsed["keys"]
                .as_array()
                .and_then(|keys| keys.iter().find(|key| key["kid"] == kid))
                .map(|key| key["status"].as_str().unwrap_or_default().to_owned())
        };
        status_of(old_kid).as_deref() == Some("retired") && status_of(new_kid).as_deref() == Some("active")
    });
    key_set
}
