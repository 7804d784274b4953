//! Keeping a copy of the registry, as partners and harvesters do it, with
//! clients we did not write: a Python client (standard library and
//! pyarrow) downloads the newest snapshot, resumes an interrupted download,
//! checks every file against the manifest, and follows the change feed
//! while the projector applies publications, amendments, party renames and
//! withdrawals; Sickle harvests OAI-PMH in full and then incrementally. The
//! scripts are in `tests/catalogue/`. The same copy is kept from the
//! embedded default and from a service over Apache Cassandra.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{
    BASE_PATH, CqlStore, KillOnDrop, TestStore, avro_files_in, binary, copy_files, http, issue_production_key, project,
    require_external_tool, serve_quietly, wait_until_the_feed_settles, workspace_root,
};
use projector::generate::{GenerateOptions, generate};
use serde_json::Value;

fn script(name: &str) -> PathBuf {
    workspace_root().join("tests/catalogue").join(name)
}

/// The JSON report a script prints on its last line; panics with its error output otherwise.
fn report_of(output: &std::process::Output, what: &str) -> Value {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("the report is JSON")
}

fn harvest(base_url: &str, arguments: &[&str]) -> Value {
    let output =
        Command::new("python3").arg(script("harvest.py")).arg(base_url).args(arguments).output().expect("python3");
    report_of(&output, "the Sickle harvest")
}

/// The current UTC second, as OAI-PMH's `from` takes it.
fn utc_second_now() -> String {
    let now = read_model::calendar::Timestamp::now().to_string();
    format!("{}Z", &now[..19])
}

#[test]
fn a_partner_copies_the_catalogue_from_a_snapshot_and_keeps_it_equal_to_the_export_by_following_the_feed() {
    let directory = tempfile::tempdir().expect("tempdir");
    copy_the_catalogue(directory.path(), &directory.path().join("data"));
}

#[test]
fn a_partner_copies_the_catalogue_from_a_service_over_cassandra() {
    let directory = tempfile::tempdir().expect("tempdir");
    copy_the_catalogue(directory.path(), &CqlStore::new(&directory.path().join("data"), "catalogue_copy"));
}

/// Generates a registry in `directory`, projects it into `data` in two
/// parts and keeps a copy of it while the second part is applied.
fn copy_the_catalogue(directory: &Path, data: &(impl TestStore + ?Sized)) {
    require_external_tool("python3");
    let generated = directory.join("generated");
    generate(&GenerateOptions { works: 3_000, seed: 29, events_per_segment: 4_000, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    // The first two segments (one file per topic each) now, the rest while the client follows.
    let (first, rest) = files.split_at(12);
    assert!(!rest.is_empty(), "the stream has more than two segments");
    let events = directory.join("events");
    std::fs::create_dir_all(&events).expect("events directory");
    copy_files(first, &events);
    project(&events, data, 1_000);

    let mut cut = Command::new(binary("query-api"));
    cut.args(["snapshot", "--audience", "production", "--rows-per-file", "1000"]);
    data.add_store_flags(&mut cut);
    let cut = cut.env("RUST_LOG", "warn").output().expect("query-api snapshot");
    assert!(cut.status.success(), "{}", String::from_utf8_lossy(&cut.stderr));

    let (server, address) = serve_quietly(data);
    let _server = KillOnDrop(server);
    let base_url = format!("http://{address}{BASE_PATH}");
    let key = issue_production_key(data, &["bulk:read"], 1_000_000);
    wait_until_the_feed_settles(&address, &key);

    let full = harvest(&format!("{base_url}/oai"), &["full"]);
    let (_, _, body) = http(&address, "GET", &format!("{BASE_PATH}/bulk/works?limit=1"), &[("x-api-key", &key)], "");
    let total = serde_json::from_str::<Value>(&body).expect("json")["total"].as_u64().expect("total");
    assert_eq!(full["live"].as_array().expect("live").len() as u64, total, "the harvest holds every published work");
    assert_eq!(full["titled"].as_u64(), Some(total), "each with its Dublin Core title");
    let harvested_until = utc_second_now();

    let workdir = directory.join("client");
    std::fs::create_dir_all(&workdir).expect("client directory");
    let (stop_file, ready_file) = (directory.join("stop"), directory.join("ready"));
    let mut client = Command::new("python3")
        .arg(script("copy_catalogue.py"))
        .args(["--base-url", &base_url, "--key", &key])
        .arg("--workdir")
        .arg(&workdir)
        .arg("--stop-file")
        .arg(&stop_file)
        .arg("--ready-file")
        .arg(&ready_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let started = Instant::now();
    while !ready_file.exists() {
        assert!(client.try_wait().expect("wait").is_none(), "the client stopped before following the feed");
        assert!(started.elapsed() < Duration::from_secs(120), "the client did not load the snapshot in time");
        std::thread::sleep(Duration::from_millis(20));
    }

    // The projector applies the rest of the stream in small batches while the client follows.
    copy_files(rest, &events);
    project(&events, data, 200);
    std::fs::write(&stop_file, "caught up").expect("stop file");
    let copied = report_of(&client.wait_with_output().expect("the client ends"), "the catalogue copy");
    eprintln!("catalogue copy: {copied}");
    assert_eq!(copied["resumedDownload"], true, "{copied}");
    assert!(copied["files"].as_u64().is_some_and(|files| files >= 4), "files of 1,000 rows, two formats: {copied}");
    assert_eq!(copied["snapshotRows"], copied["parquetRows"]);
    assert!(copied["upserts"].as_u64().is_some_and(|upserts| upserts > 100), "{copied}");
    assert!(copied["rowsChangedSinceSnapshot"].as_u64().is_some_and(|changed| changed > 0), "amended works: {copied}");
    let withdrawn: Vec<&str> =
        copied["withdrawn"].as_array().expect("withdrawn").iter().filter_map(Value::as_str).collect();
    assert!(!withdrawn.is_empty(), "the stream withdraws works after the snapshot: {copied}");

    let since = harvest(&format!("{base_url}/oai"), &["since", &harvested_until]);
    let deleted: Vec<&str> = since["deleted"].as_array().expect("deleted").iter().filter_map(Value::as_str).collect();
    for lcc_id in &withdrawn {
        let identifier = format!("oai:127.0.0.1:{lcc_id}");
        assert!(deleted.contains(&identifier.as_str()), "{identifier} is a deleted record in the incremental harvest");
    }
    assert!(since["live"].as_array().is_some_and(|live| !live.is_empty()), "amended works come back too");
}
