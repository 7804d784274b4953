//! Rebuild on real topics: while the live projector follows the topics into
//! model version 1 and the query API serves it, `projector rebuild --into 2`
//! replays every topic from the earliest offset into version 2;
//! `projector activate 2` switches the running API without a restart and
//! without one failed request; version 1 can then be dropped. On the
//! embedded default and on Apache Cassandra alike.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use end_to_end_tests::KillOnDrop;
use end_to_end_tests::kafka::{
    Broker, create_topics, kafka_projector_command, produce_single_object, wait_until_caught_up,
};
use end_to_end_tests::{
    BASE_PATH, CqlStore, TestStore, assert_same_documents, binary, http, issue_production_key, spawn_listening,
};
use projector::generate::{GenerateOptions, generate};

fn projector(arguments: &[&str], data: &(impl TestStore + ?Sized)) -> String {
    let mut command = Command::new(binary("projector"));
    command.args(arguments);
    data.add_store_flags(&mut command);
    let output = command.env("RUST_LOG", "warn").stderr(Stdio::inherit()).output().expect("projector runs");
    assert!(output.status.success(), "projector {arguments:?} failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_rebuild_is_activated_under_load_without_a_failed_request_and_the_old_version_dropped() {
    let directory = tempfile::tempdir().expect("tempdir");
    let data = directory.path().join("data");
    let clean = directory.path().join("file-projection");
    rebuild_under_load(directory.path(), &data, &clean);
}

#[test]
fn a_rebuild_over_cassandra_is_activated_under_load_and_the_old_version_dropped() {
    let directory = tempfile::tempdir().expect("tempdir");
    let data = CqlStore::new(&directory.path().join("data"), "kafka_rebuild");
    let clean = CqlStore::new(&directory.path().join("file-projection"), "kafka_rebuild_clean");
    rebuild_under_load(directory.path(), &data, &clean);
}

/// The live projector follows the topics into version 1 of `data`, the
/// rebuild writes version 2 beside it, and a clean projection of the same
/// events from files into `clean` is what version 2 must hold.
fn rebuild_under_load(
    directory: &std::path::Path,
    data: &(impl TestStore + ?Sized),
    clean: &(impl TestStore + ?Sized),
) {
    let events = directory.join("events");
    generate(&GenerateOptions { works: 300, seed: 29, events_per_segment: 1_000, sandbox: false }, &events)
        .expect("generate");
    let broker = Broker::start(&directory.join("broker"));
    create_topics(&broker, "", 2, &["dead-letters"]);
    let published = directory.join("published-schemas");
    produce_single_object(&broker, &events, &published);
    // The live projector follows the topics into version 1 (the first, so active).
    let mut live = kafka_projector_command(&broker, data, "live", "");
    live.arg("--writer-schema-dir").arg(&published).stderr(Stdio::null());
    let (live, mut listening) = spawn_listening(&mut live);
    let mut live = KillOnDrop(live);
    let live_admin = listening.remove("admin").expect("an admin listener");

    // The query API serves whatever version is active.
    let key = issue_production_key(data, &["rights:read"], 1_000_000);
    let mut api = Command::new(binary("query-api"));
    api.arg("serve");
    data.add_store_flags(&mut api);
    api.args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]).env("RUST_LOG", "warn");
    let (api, mut listening) = spawn_listening(&mut api);
    let _api = KillOnDrop(api);
    let address = listening.remove("public").expect("a public listener");
    wait_until_caught_up(&live_admin, 12);
    let path = format!("{BASE_PATH}/rights/LCC-0000000007");
    let started = Instant::now();
    let served_by_v1 = loop {
        let (status, _, body) = http(&address, "GET", &path, &[("x-api-key", &key)], "");
        if status == 200 {
            break body;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "version 1 never served the work: {status} {body}");
        std::thread::sleep(Duration::from_millis(100));
    };

    // Rebuild version 2 from the earliest offsets, in a group of its own, beside the live one.
    let rebuilt = projector(
        &[
            "rebuild",
            "--into",
            "2",
            "--source",
            &broker.source(),
            "--kafka-group-id",
            "live",
            "--dead-letter-topic",
            "dead-letters",
            "--writer-schema-dir",
            published.to_str().expect("utf-8 path"),
            "--admin-listen",
            "127.0.0.1:0",
            "--exit-when-caught-up",
        ],
        data,
    );
    assert!(rebuilt.contains("\"applied\""), "{rebuilt}");
    let versions = projector(&["versions"], data);
    assert!(versions.contains(r#"{"active":true,"version":1}"#), "{versions}");
    assert!(versions.contains(r#"{"active":false,"version":2}"#), "{versions}");

    // Requests keep flowing while version 2 is activated.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let load = {
        let (stop, failures, requests) = (Arc::clone(&stop), Arc::clone(&failures), Arc::clone(&requests));
        let (address, path, key, expected) = (address.clone(), path.clone(), key.clone(), served_by_v1.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let (status, _, body) = http(&address, "GET", &path, &[("x-api-key", &key)], "");
                requests.fetch_add(1, Ordering::Relaxed);
                if (status != 200 || body != expected) && failures.fetch_add(1, Ordering::Relaxed) < 3 {
                    eprintln!("failed during the switch: {status} {body}");
                }
            }
        })
    };
    let more_requests = |count: u64| {
        let (target, started) = (requests.load(Ordering::Relaxed) + count, Instant::now());
        while requests.load(Ordering::Relaxed) < target {
            assert!(started.elapsed() < Duration::from_secs(60), "the load stopped");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    more_requests(20);
    assert!(projector(&["activate", "2"], data).contains("model version 2 is active"));
    more_requests(50);

    // The rebuild is now the live version; the old live projector stops and version 1 goes.
    Command::new("kill").args(["-TERM", &live.0.id().to_string()]).status().expect("kill runs");
    assert!(live.0.wait().expect("exits").success(), "SIGTERM gives exit 0");
    assert!(projector(&["drop", "1"], data).contains("model version 1 dropped"));
    assert_eq!(data.model_versions(), [2], "version 1 is gone from the store");
    more_requests(20);
    stop.store(true, Ordering::Relaxed);
    load.join().expect("load thread");
    let (status, _, body) = http(&address, "GET", &path, &[("x-api-key", &key)], "");
    assert_eq!((status, body), (200, served_by_v1), "version 2 serves the same document with version 1 gone");
    assert_eq!(failures.load(Ordering::Relaxed), 0, "no request failed during the switch");

    // Version 2 holds what a clean file projection of the events gives.
    end_to_end_tests::project(&events, clean, 500);
    assert_same_documents(&clean.dump_model_version(1), &data.dump_model_version(2));
}
