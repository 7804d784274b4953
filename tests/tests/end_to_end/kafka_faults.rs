//! Faults on real topics: the projector killed with SIGKILL mid-stream and
//! restarted ends with the store of one clean file-source run, no event
//! lost or applied twice; SIGTERM finishes the batch, leaves the group and
//! exits 0; a broker that is not there at start gives readiness false and
//! retries, not a crash, and projection resumes when it appears; a broker
//! that goes away mid-run turns readiness false without an exit.

use std::process::Stdio;
use std::time::{Duration, Instant};

use end_to_end_tests::kafka::{
    Broker, create_topics, kafka_projector_command, kafka_projector_command_with_admin, list_dead_letters,
    produce_single_object, project_until_caught_up, wait_for_port, wait_until_caught_up,
};
use end_to_end_tests::{assert_same_documents, dump_documents, free_port, http, project, sigkill_after, summary_of};
use projector::generate::{GenerateOptions, Random, generate};

#[test]
fn sigkill_mid_stream_then_restart_gives_the_file_projection_and_sigterm_exits_cleanly() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let manifest =
        generate(&GenerateOptions { works: 3_000, seed: 17, events_per_segment: 2_000, sandbox: false }, &events)
            .expect("generate");
    let clean = directory.path().join("file-projection");
    project(&events, &clean, 500);

    let Some(broker) = Broker::start(&directory.path().join("broker")) else { return };
    create_topics(&broker, "", 3, &["dead-letters"]);
    let published = directory.path().join("published-schemas");
    produce_single_object(&broker, &events, &published, true);
    let data = directory.path().join("killed");
    // Every start joins a group of its own: where a start resumes comes from
    // the store's checkpoints, not from offsets committed to Kafka, and no
    // start waits for a killed member to time out of its group.
    let mut starts = 0;
    let mut projector = || {
        starts += 1;
        let mut command = kafka_projector_command(&broker, &data, &format!("projector-{starts}"), "");
        command.arg("--writer-schema-dir").arg(&published);
        command
    };

    let mut random = Random::new(7);
    let mut killed_mid_stream = 0;
    for attempt in 0..6 {
        let mut child = projector().arg("--exit-when-caught-up").stderr(Stdio::null()).spawn().expect("starts");
        let delay = Duration::from_millis(random.range(150, 600) as u64);
        if sigkill_after(&mut child, delay) {
            killed_mid_stream += 1;
            eprintln!("attempt {attempt}: killed after {delay:?}");
        }
    }
    assert!(killed_mid_stream >= 3, "only {killed_mid_stream} kills hit a running projector; the test proved little");

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
    let events = directory.path().join("events");
    generate(&GenerateOptions { works: 200, seed: 23, events_per_segment: 1_000, sandbox: false }, &events)
        .expect("generate");
    let clean = directory.path().join("file-projection");
    project(&events, &clean, 500);
    let Some(mut broker) = Broker::start(&directory.path().join("broker")) else { return };
    // The broker goes away before the projector starts.
    broker.kill();

    let data = directory.path().join("data");
    let admin_port = free_port();
    let published = directory.path().join("published-schemas");
    let admin = format!("127.0.0.1:{admin_port}");
    let mut projector = kafka_projector_command_with_admin(&broker, &data, "projector", "", &admin);
    projector.arg("--writer-schema-dir").arg(&published).stderr(Stdio::null());
    let mut child = projector.spawn().expect("starts");
    wait_for_port(admin_port, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    let (status, _, body) = http(&admin, "GET", "/readyz", &[], "");
    assert_eq!(status, 503, "not ready without a broker: {body}");
    assert!(body.contains("Kafka broker is not reachable"), "{body}");
    assert!(child.try_wait().expect("wait").is_none(), "no broker is no reason to exit");

    broker.restart();
    create_topics(&broker, "", 3, &["dead-letters"]);
    produce_single_object(&broker, &events, &published, false); // Six topics of three partitions.
    wait_until_caught_up(&admin, 18);
    assert_same_documents(&dump_documents(&clean), &dump_documents(&data));

    // The broker goes away while the projector runs: readiness turns false, the process stays up.
    broker.kill();
    let started = Instant::now();
    loop {
        let (status, _, body) = http(&admin, "GET", "/readyz", &[], "");
        if status == 503 {
            assert!(body.contains("Kafka broker is not reachable"), "{body}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "readiness stayed true without a broker");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(child.try_wait().expect("wait").is_none(), "a lost broker is no reason to exit");
    let (_, _, metrics) = http(&admin, "GET", "/metrics", &[], "");
    assert!(metrics.contains("lcc_projector_source_up 0"), "{metrics}");
    child.kill().expect("stop");
    child.wait().expect("reaped");
}
