//! The write protocol's crash promise on a real CQL node: the projector,
//! writing into Apache Cassandra (the node `scripts/test.sh` starts), killed
//! with SIGKILL at random points and restarted each time, ends with the same
//! store as one clean run, table by table (`Cluster::dump_documents` says
//! what a replay may legitimately write differently).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use end_to_end_tests::cql::{Cluster, drop_keyspaces, fresh_keyspace, store_arguments};
use end_to_end_tests::{
    assert_same_documents, binary, parked_events, sigkill_once_committed, spawn_listening, summary_of,
};
use projector::generate::{GenerateOptions, Random, generate};

/// The kills, each on a running projector.
const KILLS: usize = 20;

/// `projector run` of `events` into keyspace `keyspace`, exiting once caught
/// up, deferring the rendering of up to `deferred` documents while behind,
/// starting with a sorted catch-up if `sorted` and the keyspace has no checkpoints.
fn projector(events: &Path, data: &Path, keyspace: &str, deferred: usize, sorted: bool) -> Command {
    let mut command = Command::new(binary("projector"));
    command
        .args(["run", "--exit-when-caught-up", "--batch-size", "250", "--admin-listen", "127.0.0.1:0"])
        .arg("--source")
        .arg(format!("file://{}", events.display()))
        .arg("--data-dir")
        .arg(data)
        .env("LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", deferred.to_string())
        .env("LCC_SORTED_CATCH_UP", sorted.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    store_arguments(&mut command, keyspace);
    command
}

fn run_to_the_end(events: &Path, data: &Path, keyspace: &str, sorted: bool) -> end_to_end_tests::RunSummary {
    let output = projector(events, data, keyspace, 400, sorted).output().expect("projector runs");
    assert!(output.status.success(), "projector into {keyspace} failed: {:?}", output.status);
    summary_of(&String::from_utf8_lossy(&output.stdout))
}

#[test]
fn sigkill_at_random_points_while_writing_into_cassandra_then_restart_gives_the_clean_store() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 4_000, seed: 17, events_per_segment: 2_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");
    let (clean, crashed) = (fresh_keyspace("crash_clean"), fresh_keyspace("crash_killed"));

    // The clean run writes in a sorted catch-up, the killed runs but the first two batch by batch.
    let clean_summary = run_to_the_end(&events, &directory.path().join("clean"), &clean, true);
    assert_eq!(clean_summary.events as usize, manifest.events);

    // Each run is killed once it has committed one to six batches, and a
    // moment more. Every other run defers rendering (up to 400 documents), so
    // kills land while documents and checkpoints wait; the others render in
    // each batch, so kills land between every phase of a batch that carries
    // checkpoints, and the stream moves on from run to run. The first two
    // runs, on a keyspace without checkpoints, start with a sorted catch-up,
    // whose batches carry no checkpoints until its last: kills leave states
    // and documents that the runs after them find again.
    let mut random = Random::new(2027);
    let crashed_data = directory.path().join("crashed");
    for attempt in 0..KILLS {
        let deferred = if attempt % 2 == 0 { 400 } else { 0 };
        let sorted = attempt < 2;
        let (mut child, mut listening) =
            spawn_listening(&mut projector(&events, &crashed_data, &crashed, deferred, sorted));
        let admin = listening.remove("admin").expect("an admin listener");
        let batches = random.range(1, 7) as u64;
        sigkill_once_committed(&mut child, &admin, batches, Duration::from_millis(random.range(0, 300) as u64));
    }
    let final_summary = run_to_the_end(&events, &crashed_data, &crashed, false);
    eprintln!(
        "the last run read {} of {} events and applied {} of {}",
        final_summary.events, clean_summary.events, final_summary.applied, clean_summary.applied
    );
    assert!(final_summary.events < clean_summary.events, "the restart must resume from checkpoints, not start over");

    let expected = Cluster::shared().dump_documents(&clean);
    let actual = Cluster::shared().dump_documents(&crashed);
    let rows: usize = expected.values().map(Vec::len).sum();
    eprintln!(
        "killed the projector {KILLS} times while it wrote into Cassandra; compared {} tables, {rows} rows",
        expected.len()
    );
    assert_same_documents(&expected, &actual);
    assert_eq!(parked_events(&crashed_data), manifest.malformed_events, "each malformed event is parked exactly once");
    drop_keyspaces(&clean);
    drop_keyspaces(&crashed);
}
