//! Faults on real topics: the projector killed with SIGKILL mid-stream and
//! restarted ends with the store of one clean file-source run, no event
//! lost or applied twice; SIGTERM finishes the batch, leaves the group and
//! exits 0; a broker that is not there at start gives readiness false and
//! retries, not a crash, and projection resumes when it appears; a broker
//! that goes away mid-run turns readiness false without an exit; a broker
//! killed mid-stream and restarted with its topics loses no event, and so
//! does a cluster of three that loses one broker for good.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use end_to_end_tests::KillOnDrop;
use end_to_end_tests::kafka::{
    Broker, create_topics, kafka_projector_command, list_dead_letters, produce_single_object, project_until_caught_up,
    wait_until_caught_up,
};
use end_to_end_tests::{
    ProjectedStream, assert_same_documents, dump_documents, events_committed, generate_and_project, http, metric,
    sigkill_at_random_points, spawn_listening, summary_of,
};

#[test]
fn sigkill_mid_stream_then_restart_gives_the_file_projection_and_sigterm_exits_cleanly() {
    let directory = tempfile::tempdir().expect("tempdir");
    let ProjectedStream { events, manifest, clean, .. } = generate_and_project(directory.path(), 3_000, 17, 2_000);

    let broker = Broker::start(&directory.path().join("broker"));
    create_topics(&broker, "", 3, &["dead-letters"]);
    let published = directory.path().join("published-schemas");
    produce_single_object(&broker, &events, &published);
    let data = directory.path().join("killed");
    // Every start joins a group of its own: where a start resumes comes from
    // the store's checkpoints, not from offsets committed to Kafka, and no
    // start waits for a killed member to time out of its group. Each writes
    // batch by batch, with checkpoints, from its first batch on (a sorted
    // catch-up would start over after every kill until one finished it).
    let mut starts = 0;
    let mut projector = || {
        starts += 1;
        let mut command = kafka_projector_command(&broker, &data, &format!("projector-{starts}"), "");
        command.arg("--writer-schema-dir").arg(&published).env("LCC_SORTED_CATCH_UP", "false");
        command
    };

    sigkill_at_random_points(6, 7, (150, 600), || {
        projector().arg("--exit-when-caught-up").stderr(Stdio::null()).spawn().expect("starts")
    });

    // SIGTERM while following: the batch is finished, the group left, exit 0.
    let following = projector().stderr(Stdio::null()).spawn().expect("starts");
    std::thread::sleep(Duration::from_millis(800));
    let status =
        std::process::Command::new("kill").args(["-TERM", &following.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let output = following.wait_with_output().expect("exits");
    assert!(output.status.success(), "SIGTERM must give exit 0, got {:?}", output.status);
    let terminated = summary_of(&String::from_utf8_lossy(&output.stdout));
    eprintln!("after SIGTERM: {terminated:?}");

    let last = project_until_caught_up(projector());
    assert!((last.events as usize) < manifest.events, "a restart resumes from the store's checkpoints");
    assert_same_documents(&dump_documents(&clean), &dump_documents(&data));
    let parked = list_dead_letters(&broker, "operator", "");
    assert_eq!(parked.len(), manifest.malformed_events, "each malformed event is parked, once per origin position");
}

#[test]
fn an_absent_broker_gives_readiness_false_and_projection_resumes_when_it_comes() {
    let directory = tempfile::tempdir().expect("tempdir");
    let ProjectedStream { events, clean, clean_run, .. } = generate_and_project(directory.path(), 200, 23, 1_000);
    let mut broker = Broker::start(&directory.path().join("broker"));
    // The broker goes away before the projector starts.
    broker.kill();

    let data = directory.path().join("data");
    let published = directory.path().join("published-schemas");
    let mut projector = kafka_projector_command(&broker, &data, "projector", "");
    projector.arg("--writer-schema-dir").arg(&published).stderr(Stdio::null());
    let (mut child, mut listening) = spawn_listening(&mut projector);
    let admin = listening.remove("admin").expect("an admin listener");
    wait_until_not_ready_for_the_broker(&admin);
    assert!(child.try_wait().expect("wait").is_none(), "no broker is no reason to exit");

    broker.restart();
    create_topics(&broker, "", 3, &["dead-letters"]);
    produce_single_object(&broker, &events, &published); // Six topics of three partitions.
    wait_until_every_event_is_applied_once(&admin, clean_run.applied);
    assert_same_documents(&dump_documents(&clean), &dump_documents(&data));

    // The broker goes away while the projector runs: readiness turns false, the process stays up.
    broker.kill();
    wait_until_not_ready_for_the_broker(&admin);
    let started = Instant::now();
    while metric(&admin, "lcc_projector_source_up") != 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the source stayed up without a broker");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.try_wait().expect("wait").is_none(), "a lost broker is no reason to exit");
    child.kill().expect("stop");
    child.wait().expect("reaped");
}

/// Waits until the projector at `admin` says it is not ready because the broker is not reachable.
fn wait_until_not_ready_for_the_broker(admin: &str) {
    let started = Instant::now();
    loop {
        let (status, _, body) = http(admin, "GET", "/readyz", &[], "");
        if status == 503 && body.contains("Kafka broker is not reachable") {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "still no readiness failure for the broker: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_broker_killed_mid_stream_and_restarted_with_its_topics_loses_no_event() {
    let directory = tempfile::tempdir().expect("tempdir");
    fault_mid_stream(directory.path(), 1, |broker| {
        broker.kill();
        std::thread::sleep(Duration::from_secs(2));
        broker.restart();
        "killed the broker and restarted it on its data".to_owned()
    });
}

#[test]
fn one_broker_of_three_killed_mid_stream_loses_no_event_and_applies_none_twice() {
    let directory = tempfile::tempdir().expect("tempdir");
    fault_mid_stream(directory.path(), 3, |broker| {
        broker.kill_node(1);
        "killed broker 1 of 3 (topics replicated three times) and left it down".to_owned()
    });
}

/// Produces the first half of a generated stream to a broker of `nodes`
/// nodes, starts the projector, applies `fault` (which says what it did)
/// once the projector has committed an event, and produces the second half,
/// so the projector must fetch from what the fault left and park poison
/// events through it. The projector ends with the store of one clean file
/// projection, every event applied once and every poison event parked.
fn fault_mid_stream(directory: &Path, nodes: usize, fault: impl FnOnce(&mut Broker) -> String) {
    let ProjectedStream { events, manifest, clean, clean_run } = generate_and_project(directory, 3_000, 31, 2_000);
    let (first_half, second_half) = split_segments(&events, &directory.join("halves"));
    let mut broker = Broker::cluster(&directory.join("broker"), nodes);
    create_topics(&broker, "", 3, &["dead-letters"]);
    let published = directory.join("published-schemas");
    produce_single_object(&broker, &first_half, &published);

    let data = directory.join("data");
    let mut projector = kafka_projector_command(&broker, &data, "projector", "");
    projector.arg("--writer-schema-dir").arg(&published).stderr(Stdio::null());
    let (child, mut listening) = spawn_listening(&mut projector);
    let _projector = KillOnDrop(child);
    let admin = listening.remove("admin").expect("an admin listener");
    let started = Instant::now();
    while events_committed(&admin, "applied") == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the projector committed nothing");
        std::thread::sleep(Duration::from_millis(20));
    }

    let parked_before_the_fault = events_committed(&admin, "parked");
    let applied_before_the_fault = events_committed(&admin, "applied");
    let what_was_done = fault(&mut broker);
    produce_single_object(&broker, &second_half, &published);
    wait_until_every_event_is_applied_once(&admin, clean_run.applied);
    assert_same_documents(&dump_documents(&clean), &dump_documents(&data));
    assert!(
        events_committed(&admin, "parked") > parked_before_the_fault,
        "poison events were parked through what the fault left"
    );
    let parked = list_dead_letters(&broker, "operator", "");
    assert_eq!(parked.len(), manifest.malformed_events, "every poison event is parked, before and after the fault");
    eprintln!(
        "{what_was_done} after {applied_before_the_fault} events were applied; compared the store with a clean \
         file projection: {} events applied once each, {} parked",
        clean_run.applied,
        parked.len()
    );
}

/// Copies the first half of the generated segments into `halves/first` and
/// the rest into `halves/second`. Files are named `<segment>-<topic>.avro`, so
/// each half keeps the order of every topic.
fn split_segments(events: &Path, halves: &Path) -> (PathBuf, PathBuf) {
    let segment_of = |file: &Path| -> String {
        let name = file.file_name().and_then(|name| name.to_str()).expect("a UTF-8 file name");
        name.split('-').next().expect("a segment number").to_owned()
    };
    let files: Vec<PathBuf> =
        std::fs::read_dir(events).expect("events").map(|entry| entry.expect("entry").path()).collect();
    let segments: std::collections::BTreeSet<String> = files.iter().map(|file| segment_of(file)).collect();
    let first_of_second_half = segments.iter().nth(segments.len() / 2).expect("two segments or more").clone();
    let (first, second) = (halves.join("first"), halves.join("second"));
    for file in &files {
        let half = if segment_of(file) < first_of_second_half { &first } else { &second };
        std::fs::create_dir_all(half).expect("half directory");
        std::fs::copy(file, half.join(file.file_name().expect("file name"))).expect("copy");
    }
    (first, second)
}

/// Waits until the projector at `admin` has applied `applied` events and
/// caught up with its 18 partitions, and checks it applied none twice. Lag
/// is known from fetch statistics, which may predate what was just produced
/// and still show empty topics; every event is applied exactly once, so the
/// applied count is exact.
fn wait_until_every_event_is_applied_once(admin: &str, applied: u64) {
    let started = Instant::now();
    while events_committed(admin, "applied") < applied {
        assert!(started.elapsed() < Duration::from_secs(120), "the projector did not apply the whole stream");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_until_caught_up(admin, 18);
    assert_eq!(events_committed(admin, "applied"), applied, "no event is applied twice");
}
