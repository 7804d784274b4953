//! The public lookup link, opened in real Chromium without a key: the page
//! of a work's public record (`/records/{lccId}`, from a real evidence
//! package's `publicLookupUrl`) shows the record, and checks dropped and
//! pasted documents in the page with WebCrypto. Its verdicts on fifty
//! documents (packages before and after a key rotation, changed copies,
//! sandbox packages, snapshot manifests) agree with `query-api evidence
//! verify` and with `jwcrypto` + `rfc8785`. A screenshot of each verdict is
//! written under `target/test-output/public-record/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use end_to_end_tests::{
    BASE_PATH, CHROMIUM_FLAGS, avro_files_in, binary, copy_files, issue_production_key, project, register_sandbox_key,
    require_external_tool, serve_quietly, workspace_root,
};
use projector::generate::{GenerateOptions, generate};
use serde_json::{Value, json};

use crate::signed_evidence::{
    active_production_kid, fetch, json_report, save, signing_keys, verify_with_jwcrypto, verify_with_our_command,
    wait_for_rotation,
};

/// Where the screenshots go: kept with the build's output, which CI keeps.
fn screenshot_directory() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from);
    let directory = target.join("test-output/public-record");
    std::fs::create_dir_all(&directory).expect("the screenshot directory");
    directory
}

/// Runs tests/browser/check_on_record_page.mjs with `spec`; returns its report.
fn check_in_chromium(spec: &Value) -> Value {
    let browser = workspace_root().join("tests/browser");
    let mut driver = Command::new("node");
    driver.arg(browser.join("check_on_record_page.mjs")).current_dir(&browser);
    json_report(driver, spec)
}

/// `text` with one byte changed: the first character of `member`'s string
/// value, so the copy is still JSON and only its signature can tell.
fn with_one_byte_changed(text: &str, member: &str) -> String {
    let marker = format!("\"{member}\":\"");
    let at = text.find(&marker).unwrap_or_else(|| panic!("no {member}")) + marker.len();
    let mut bytes = text.as_bytes().to_vec();
    bytes[at] ^= 0x01;
    String::from_utf8(bytes).expect("still UTF-8")
}

/// The statements of a package the public record also makes, by the
/// page's row names, that differ from `record`.
fn differing_statements(package: &Value, record: &Value) -> Vec<&'static str> {
    let certificate =
        |value: &Value| (value["certificate"]["certificateId"].clone(), value["certificate"]["revoked"].clone());
    [
        ("Title", package["title"] != record["title"]),
        ("Status", package["status"] != record["status"]),
        ("Earliest recorded", package["earliestRecordedAt"] != record["earliestRecordedAt"]),
        ("File SHA-256", package["fileSha256"] != record["fileSha256"]),
        ("Certificate", certificate(package) != certificate(record)),
        ("Dispute status", package["disputeStatus"] != record["disputeStatus"]),
        ("Protection ends on", package["protection"]["endsOn"] != record["protection"]["endsOn"]),
        ("Protection in force", package["protection"]["inForce"] != record["protection"]["inForce"]),
        ("Provenance chain", package["provenanceChain"] != record["provenanceChain"]),
    ]
    .into_iter()
    .filter_map(|(name, differs)| differs.then_some(name))
    .collect()
}

/// One checked document: its file and the page's expected verdict.
struct Case {
    document: PathBuf,
    verdict: &'static str,
}

#[test]
fn the_public_lookup_link_shows_the_record_and_checks_packages_in_chromium_as_our_verifiers_do() {
    for tool in ["python3", "node", "chromium"] {
        require_external_tool(tool);
    }
    let directory = tempfile::tempdir().expect("tempdir");
    let data = directory.path().join("data");
    let generated = directory.path().join("generated");
    generate(&GenerateOptions { works: 120, seed: 48, events_per_segment: 200, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    let (first, rest) = files.split_at(11);
    let events = directory.path().join("events");
    std::fs::create_dir_all(&events).expect("events");
    copy_files(first, &events);
    project(&events, &data, 500);
    project(&workspace_root().join("schemas/fixtures/sandbox"), &data, 500);
    let cut = Command::new(binary("query-api"))
        .args(["snapshot", "--audience", "both", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .output()
        .expect("query-api snapshot");
    assert!(cut.status.success(), "{}", String::from_utf8_lossy(&cut.stderr));
    let key = issue_production_key(&data, &["evidence:read", "bulk:read"], 1_000_000);
    let (mut server, address) = serve_quietly(&data);
    let saved = directory.path().join("saved");
    std::fs::create_dir_all(&saved).expect("saved");
    let sandbox_key = register_sandbox_key(&address);

    // Packages and manifests issued before the rotation, by the first keys.
    let page: Value = serde_json::from_str(&fetch(&address, "/bulk/works?limit=20", Some(&key))).expect("json");
    let works: Vec<String> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|row| row["lccId"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(works.len(), 20, "the first segments publish twenty works");
    let package_of =
        |work: &str, name: &str| save(&saved, name, &fetch(&address, &format!("/rights/{work}/evidence"), Some(&key)));
    let before: Vec<PathBuf> =
        works.iter().enumerate().map(|(index, work)| package_of(work, &format!("before-{index}.json"))).collect();
    let manifest_of = |key: &str, name: &str| {
        let list: Value = serde_json::from_str(&fetch(&address, "/bulk/snapshots", Some(key))).expect("json");
        let id = list["snapshots"][0]["snapshotId"].as_str().expect("a snapshot").to_owned();
        save(&saved, name, &fetch(&address, &format!("/bulk/snapshots/{id}"), Some(key)))
    };
    let production_manifest = manifest_of(&key, "manifest-production.json");
    let sandbox_manifest = manifest_of(&sandbox_key, "manifest-sandbox.json");
    let fixtures: Value = serde_json::from_str(&fetch(&address, "/sandbox/fixtures", None)).expect("json");
    let sandbox_packages: Vec<PathBuf> = fixtures["fixtures"]
        .as_array()
        .expect("fixtures")
        .iter()
        .filter(|fixture| fixture["resource"] == "work")
        .take(6)
        .enumerate()
        .map(|(index, fixture)| {
            let work = fixture["id"].as_str().expect("id");
            save(
                &saved,
                &format!("sandbox-{index}.json"),
                &fetch(&address, &format!("/rights/{work}/evidence"), Some(&sandbox_key)),
            )
        })
        .collect();
    assert_eq!(sandbox_packages.len(), 6);

    // The registry moves on, and its production key is rotated while it serves.
    copy_files(rest, &events);
    project(&events, &data, 500);
    let old_kid = active_production_kid(&signing_keys(&data, &["list"]));
    let new_kid = active_production_kid(&signing_keys(&data, &["generate", "--audience", "production", "--activate"]));
    signing_keys(&data, &["retire", &old_kid]);
    let production_keys = save(&saved, "keys.json", &wait_for_rotation(&address, &old_kid, &new_kid));
    let after: Vec<PathBuf> =
        works[..10].iter().enumerate().map(|(index, work)| package_of(work, &format!("after-{index}.json"))).collect();

    // The page is the record of a work that changed since its first package.
    let read =
        |path: &Path| serde_json::from_str::<Value>(&std::fs::read_to_string(path).expect("read")).expect("json");
    let record_of =
        |work: &str| serde_json::from_str::<Value>(&fetch(&address, &format!("/records/{work}"), None)).expect("json");
    let (chosen, record) = (0..10)
        .map(|index| (index, record_of(&works[index])))
        .find(|(index, record)| !differing_statements(&read(&before[*index]), record).is_empty())
        .expect("a work among the first ten changed after its first package");
    let work = works[chosen].as_str();
    let stale_package = read(&before[chosen]);
    let fresh_package = read(&after[chosen]);
    let link = fresh_package["publicLookupUrl"].as_str().expect("a public lookup link");
    let path = format!("{BASE_PATH}/records/{work}");
    assert!(link.ends_with(&path), "{link}");
    let url = format!("http://{address}{path}");

    let mut cases: BTreeMap<String, Case> = BTreeMap::new();
    let verdict_on = |package: &Path| if read(package)["lccId"] == work { "valid" } else { "other-work" };
    for (index, package) in before.iter().enumerate() {
        cases.insert(format!("before-{index:02}"), Case { document: package.clone(), verdict: verdict_on(package) });
    }
    for (index, package) in after.iter().enumerate() {
        cases.insert(format!("after-{index:02}"), Case { document: package.clone(), verdict: verdict_on(package) });
    }
    for (index, package) in before[..12].iter().enumerate() {
        let member = ["fileSha256", "title", "earliestRecordedAt"][index % 3];
        let changed = with_one_byte_changed(&std::fs::read_to_string(package).expect("read"), member);
        let document = save(&saved, &format!("changed-{index}.json"), &changed);
        cases.insert(format!("changed-{index:02}"), Case { document, verdict: "invalid" });
    }
    for (index, package) in sandbox_packages.iter().enumerate() {
        cases.insert(format!("sandbox-{index:02}"), Case { document: package.clone(), verdict: "other-audience" });
    }
    cases.insert("manifest-production".into(), Case { document: production_manifest, verdict: "valid-manifest" });
    cases.insert("manifest-sandbox".into(), Case { document: sandbox_manifest, verdict: "other-audience" });
    assert_eq!(cases.len(), 50);

    // Dropped as a person would, each verdict photographed; then all fifty pasted.
    let fresh = &after[chosen];
    let changed = save(
        &saved,
        "changed.json",
        &with_one_byte_changed(&std::fs::read_to_string(fresh).expect("read"), "fileSha256"),
    );
    let screenshots = screenshot_directory();
    let mut steps = vec![
        json!({ "name": "valid", "document": fresh, "how": "drop", "screenshot": true }),
        json!({ "name": "changed-since", "document": before[chosen], "how": "drop", "screenshot": true }),
        json!({ "name": "one-byte-changed", "document": changed, "how": "drop", "screenshot": true }),
        json!({ "name": "audience-mismatch", "document": sandbox_packages[0], "how": "drop", "screenshot": true }),
    ];
    steps.extend(cases.iter().map(|(name, case)| json!({ "name": name, "document": case.document, "how": "paste" })));
    let report = check_in_chromium(
        &json!({ "url": url, "chromiumFlags": CHROMIUM_FLAGS, "screenshots": screenshots, "steps": steps }),
    );

    // The page without a key: the record, from the page's own origin only.
    assert_eq!(report["record"]["heading"], record["title"], "{report}");
    let text = report["record"]["text"].as_str().expect("text");
    for fact in
        [&record["lccId"], &record["fileSha256"], &record["earliestRecordedAt"], &record["provenanceChain"]["hash"]]
    {
        assert!(text.contains(fact.as_str().expect("a string")), "the page shows {fact}:\n{text}");
    }
    assert_eq!(report["record"]["notice"], Value::Null, "a record of the registry is not called simulated");
    assert_eq!(report["record"]["overflow"], 0, "nothing wider than a phone's screen");
    let origin = format!("http://{address}/");
    let requests = report["requests"].as_array().expect("requests");
    assert!(
        requests.iter().all(|request| request.as_str().is_some_and(|url| url.starts_with(&origin))),
        "{requests:?}"
    );
    assert_eq!(report["violations"], json!([]), "the page keeps its own Content-Security-Policy");
    assert_eq!(report["consoleErrors"], json!([]));
    assert_eq!(report["cookies"], 0);

    let step = |name: &str| &report["steps"][name];
    assert_eq!(step("valid")["verdict"], "valid", "{}", step("valid"));
    assert_eq!(step("valid")["kid"], new_kid.as_str());
    assert!(
        step("valid")["headline"].as_str().is_some_and(|line| line.starts_with("Valid") && line.contains(&new_kid))
    );
    assert_eq!(step("valid")["differences"], 0);
    let stale = step("changed-since");
    assert_eq!((&stale["verdict"], &stale["kid"]), (&json!("valid"), &json!(old_kid)), "{stale}");
    assert!(stale["sentence"].as_str().is_some_and(|sentence| sentence.contains("(retired)")), "{stale}");
    assert_eq!(
        stale["rows"],
        json!(differing_statements(&stale_package, &record)),
        "the statements that changed since"
    );
    let tampered = step("one-byte-changed");
    assert_eq!(tampered["verdict"], "invalid", "{tampered}");
    assert!(tampered["headline"].as_str().is_some_and(|line| line.contains("changed after the registry signed it")));
    let mismatch = step("audience-mismatch");
    assert_eq!(mismatch["verdict"], "other-audience", "{mismatch}");
    assert!(
        mismatch["headline"]
            .as_str()
            .is_some_and(|line| line.starts_with("Audience mismatch") && line.contains("sandbox"))
    );
    for name in ["record", "valid", "changed-since", "one-byte-changed", "audience-mismatch"] {
        let screenshot = screenshots.join(format!("{name}.png"));
        assert!(std::fs::metadata(&screenshot).is_ok_and(|file| file.len() > 1_000), "{}", screenshot.display());
    }
    eprintln!("screenshots of the page and its verdicts: {}", screenshots.display());

    // Fifty documents: the page, our command and jwcrypto give one verdict.
    let independent = verify_with_jwcrypto(&json!({
        "cases": cases.iter().map(|(name, case)| json!({ "name": name, "document": case.document, "keys": production_keys })).collect::<Vec<_>>(),
    }));
    let keys_flag = ["--keys", production_keys.to_str().expect("path")];
    for (name, case) in &cases {
        let page = step(name);
        assert_eq!(page["verdict"], case.verdict, "{name}: {page}");
        let (valid, printed) = verify_with_our_command(&case.document, &keys_flag);
        let file = case.document.display().to_string();
        let sentence = printed.trim_end().replace(&format!("{file} is "), "").replace(&format!("{file}: "), "");
        assert_eq!(page["sentence"], sentence.as_str(), "{name}: the page and `query-api evidence verify` disagree");
        assert_eq!(page["signature"] == "valid", valid, "{name}");
        let theirs = &independent["verdicts"][name];
        assert_eq!(theirs["valid"].as_bool(), Some(valid), "{name}: jwcrypto says {theirs}");
        if valid {
            assert_eq!(theirs["kid"], page["kid"], "{name}");
        }
    }
    let valid_count = cases.keys().filter(|name| step(name)["signature"] == "valid").count();
    assert_eq!(valid_count, 31, "twenty before the rotation (retired key), ten after, one manifest");

    let _ = server.kill();
    let _ = server.wait();
}
