//! Faults on a real CQL cluster: three Apache Cassandra nodes of the test's
//! own (127.0.0.2 to 127.0.0.4, since the run's shared node holds
//! 127.0.0.1), every keyspace replicated three times and read and written
//! at the default consistency, LOCAL_QUORUM. The projector follows a
//! directory of event files into the cluster while the API serves lookups:
//!
//! 1. one node killed: the projector goes on and every lookup is answered;
//! 2. a second node killed: writes wait and say why, readiness turns false on
//!    both programs, and lookups answer a 503 problem within the request
//!    timeout instead of hanging;
//! 3. both nodes back: the projector resumes, and the store ends equal,
//!    table by table, to a clean run over the same events on the same cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::cql::{Cluster, fresh_keyspace};
use end_to_end_tests::{
    BASE_PATH, KillOnDrop, assert_same_documents, avro_files_in, binary, committed_events, copy_files, http, metric,
    projector_command, spawn_listening,
};
use projector::generate::{GenerateOptions, generate};

/// Works of the generated registry.
const WORKS: usize = 1_500;
/// The client-side timeout of one request to the cluster, in milliseconds.
/// Until a coordinator's failure detector convicts a killed node (10 to 20 s)
/// it may still ask that node for a read, and it asks a third replica only
/// after its speculation threshold: half its read timeout (20 s on the
/// test nodes, `scripts/cassandra.sh`) until it has measured the table's
/// latency. A read with one node of three down may therefore take 10 s
/// and still be answered; the client waits longer than that.
const REQUEST_TIMEOUT_MS: u64 = 15_000;
/// How long a lookup may take at most: the request timeout, and room for the
/// API to answer after it.
const LONGEST_ANSWER: Duration = Duration::from_millis(REQUEST_TIMEOUT_MS + 5_000);

/// Records in the Avro container files `files`.
fn records_in(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|file| {
            let reader = apache_avro::Reader::new(std::fs::File::open(file).expect("open")).expect("a container file");
            reader.count() as u64
        })
        .sum()
}

/// The status of `GET /readyz` on the admin listener `admin`.
fn readiness(admin: &str) -> u16 {
    http(admin, "GET", "/readyz", &[], "").0
}

/// Looks up works `works` through the API at `public`; returns each answer's
/// status, content type and duration, failing when one takes longer than
/// [`LONGEST_ANSWER`].
fn look_up(public: &str, key: &str, works: std::ops::Range<usize>) -> Vec<(u16, String, Duration)> {
    works
        .map(|work| {
            let started = Instant::now();
            let path = format!("{BASE_PATH}/rights/LCC-{work:010}");
            let (status, headers, _) = http(public, "GET", &path, &[("x-api-key", key)], "");
            let elapsed = started.elapsed();
            assert!(elapsed <= LONGEST_ANSWER, "GET {path} took {elapsed:?}, past the request timeout");
            let content_type = headers.into_iter().find(|(name, _)| name == "content-type").unwrap_or_default().1;
            (status, content_type, elapsed)
        })
        .collect()
}

/// Waits until `condition` holds, failing after `deadline` with `what`.
fn wait_for(what: &str, deadline: Duration, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The projector following `events` into `keyspace` (its other files in
/// `data`), logging warnings to `log`.
fn following_projector(
    cluster: &Cluster,
    events: &Path,
    data: &Path,
    keyspace: &str,
    log: &Path,
) -> (KillOnDrop, String) {
    let mut command = Command::new(binary("projector"));
    command
        .args(["run", "--batch-size", "250", "--admin-listen", "127.0.0.1:0"])
        .arg("--source")
        .arg(format!("file://{}", events.display()))
        .arg("--data-dir")
        .arg(data)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::from(std::fs::File::create(log).expect("a log file")));
    cluster.store_arguments(&mut command, keyspace);
    let (child, mut listening) = spawn_listening(&mut command);
    (KillOnDrop(child), listening.remove("admin").expect("an admin listener"))
}

#[test]
fn a_three_node_cassandra_cluster_losing_one_then_two_nodes_serves_waits_and_resumes_to_the_clean_store() {
    let directory = tempfile::tempdir().expect("tempdir");
    let cluster = Cluster::start(&directory.path().join("cassandra"), 3, 2).with_request_timeout(REQUEST_TIMEOUT_MS);
    eprintln!("started a Cassandra cluster of three nodes at {}", cluster.nodes());
    let generated = directory.path().join("generated");
    let options = GenerateOptions { works: WORKS, seed: 31, events_per_segment: 1_000, sandbox: false };
    let manifest = generate(&options, &generated).expect("generate");
    let files = avro_files_in(&generated);
    let thirds: Vec<&[PathBuf]> = files.chunks(files.len().div_ceil(3)).collect();
    assert_eq!(thirds.len(), 3, "{} files make three stages", files.len());

    // Stage 0, every node up: the first third projected and served.
    let faulted = fresh_keyspace("cluster_faulted");
    let followed = directory.path().join("followed");
    std::fs::create_dir_all(&followed).expect("followed directory");
    copy_files(thirds[0], &followed);
    let projector_log = directory.path().join("projector.log");
    let (projector, projector_admin) =
        following_projector(&cluster, &followed, &directory.path().join("faulted"), &faulted, &projector_log);
    let mut expected = records_in(thirds[0]);
    let caught_up = |expected: u64| {
        committed_events(&projector_admin) == expected
            && metric(&projector_admin, "lcc_projector_documents_awaiting_render") == 0
    };
    wait_for("the first third projected", Duration::from_secs(180), || caught_up(expected));
    let key = cluster.issue_key(&faulted, &["rights:read"]);
    let (api, listening) = cluster.serve(&faulted, &directory.path().join("api"));
    let (public, api_admin) = (&listening["public"], &listening["admin"]);
    wait_for("the API ready", Duration::from_secs(60), || readiness(api_admin) == 200);
    let answered = look_up(public, &key, 0..200);
    assert!(answered.iter().all(|(status, ..)| *status == 200 || *status == 404), "{answered:?}");

    // Stage 1, one node down: the projector goes on, and the API answers every lookup.
    cluster.kill(4);
    eprintln!("killed the Cassandra node on 127.0.0.4");
    copy_files(thirds[1], &followed);
    expected += records_in(thirds[1]);
    let (mut lookups, mut slowest) = (0, Duration::ZERO);
    while !caught_up(expected) {
        let answered = look_up(public, &key, lookups % WORKS..lookups % WORKS + 20);
        let failed: Vec<_> = answered.iter().filter(|(status, ..)| *status != 200 && *status != 404).collect();
        assert!(failed.is_empty(), "with one node of three down, lookups failed: {failed:?}");
        lookups += answered.len();
        slowest = answered.iter().map(|(.., elapsed)| *elapsed).fold(slowest, Duration::max);
        assert!(lookups < 200_000, "the projector did not catch up with one node down");
    }
    let answered = look_up(public, &key, 0..WORKS);
    assert!(answered.iter().all(|(status, ..)| *status == 200 || *status == 404), "{answered:?}");
    lookups += answered.len();
    slowest = answered.iter().map(|(.., elapsed)| *elapsed).fold(slowest, Duration::max);
    assert_eq!(readiness(&projector_admin), 200, "one node down leaves the projector ready");
    assert_eq!(readiness(api_admin), 200, "one node down leaves the API ready");
    eprintln!(
        "one node down: the projector caught up and the API answered all {lookups} lookups, the slowest in {slowest:?}"
    );

    // Stage 2, two nodes down: quorum is lost.
    cluster.kill(3);
    eprintln!("killed the Cassandra node on 127.0.0.3");
    copy_files(thirds[2], &followed);
    expected += records_in(thirds[2]);
    wait_for("the API not ready", LONGEST_ANSWER * 4, || readiness(api_admin) == 503);
    wait_for("the projector not ready", LONGEST_ANSWER * 4, || readiness(&projector_admin) == 503);
    let answered = look_up(public, &key, 0..5);
    for (status, content_type, _) in &answered {
        assert_eq!((*status, content_type.as_str()), (503, "application/problem+json"), "a lookup without quorum");
    }
    wait_for("the projector saying why its writes wait", LONGEST_ANSWER * 4, || {
        std::fs::read_to_string(&projector_log).unwrap_or_default().contains("store unavailable; retrying")
    });
    assert!(committed_events(&projector_admin) < expected, "no batch can commit without quorum");
    eprintln!("two nodes down: both programs not ready, lookups answered 503, the projector's writes wait");

    // Stage 3, both back: the projector resumes and finishes.
    cluster.restart(3);
    cluster.restart(4);
    eprintln!("restarted the nodes on 127.0.0.3 and 127.0.0.4");
    wait_for("the projector caught up after the restarts", Duration::from_secs(300), || caught_up(expected));
    wait_for("the API ready again", Duration::from_secs(120), || readiness(api_admin) == 200);
    let answered = look_up(public, &key, 0..WORKS);
    assert!(answered.iter().all(|(status, ..)| *status == 200 || *status == 404), "{answered:?}");
    assert_eq!(expected, manifest.events as u64, "every generated event was followed");
    // While batches arrive a projector recounts a bucket it keeps marking
    // at most every 30 seconds, so the last batches may leave counts behind
    // their rows; once idle for its settle interval it counts every marked
    // bucket. The clean run settles before it exits.
    wait_for("the projector settled the bucket counts", Duration::from_secs(180), || {
        cluster.marked_buckets(&faulted, 1) == 0
    });

    drop((api, projector));

    // The clean run: every event, no fault, from the same directory (checkpoints name it).
    let clean = fresh_keyspace("cluster_clean");
    let mut clean_run = projector_command(&followed, &directory.path().join("clean"), 250);
    cluster.store_arguments(&mut clean_run, &clean);
    let output = clean_run.stderr(Stdio::inherit()).output().expect("projector runs");
    assert!(output.status.success(), "the clean run failed: {:?}", output.status);

    let (clean_dump, faulted_dump) = (cluster.dump_documents(&clean), cluster.dump_documents(&faulted));
    let rows: usize = clean_dump.values().map(Vec::len).sum();
    eprintln!("compared the faulted store with the clean run: {} tables, {rows} rows", clean_dump.len());
    assert_same_documents(&clean_dump, &faulted_dump);
}
