//! Projectors in one consumer group, sharing one store: two split the
//! partitions; one is killed with SIGKILL mid-stream; once its session times
//! out the survivor alone is assigned every partition, resumes the killed
//! member's from the store's checkpoints, and the final store equals the
//! file-source projection of the same events.
//!
//! The projectors write into one store while each renders documents whose
//! inputs another changes (a work on one's partition names a party on
//! another's), so the store's read-set check (`read_model::read_set`) is
//! what keeps documents from going stale here: on SQLite, and on a
//! Cassandra keyspace, where the check runs without transactions.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use end_to_end_tests::KillOnDrop;
use end_to_end_tests::kafka::{Broker, create_topics, kafka_projector_command, produce_single_object};
use end_to_end_tests::{
    CqlStore, ProjectedStream, TestStore, assert_same_documents, generate_and_project, http, metric, project,
    spawn_listening,
};

const PARTITIONS: usize = 4;
const TOPICS: usize = 6;

/// The partitions a projector holds, and the messages they still lag by
/// (`None` while the broker's offsets of some partition are not known).
fn assignment(admin: &str) -> Option<(usize, Option<i64>)> {
    let (status, _, metrics) = std::panic::catch_unwind(|| http(admin, "GET", "/metrics", &[], "")).ok()?;
    if status != 200 {
        return None;
    }
    let partitions = metrics.lines().filter(|line| line.starts_with("lcc_projector_partition_stalled{")).count();
    let lags: Vec<i64> = metrics
        .lines()
        .filter(|line| line.starts_with("lcc_projector_partition_lag_messages{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    Some((partitions, (lags.len() == partitions).then(|| lags.iter().sum())))
}

/// Polls until `done` holds for the assignments of `admins`, or fails with `what`.
fn wait_for(admins: &[&str], what: &str, done: impl Fn(&[(usize, Option<i64>)]) -> bool) -> Vec<(usize, Option<i64>)> {
    let started = Instant::now();
    loop {
        let assignments: Option<Vec<(usize, Option<i64>)>> = admins.iter().map(|admin| assignment(admin)).collect();
        if let Some(assignments) = assignments
            && done(&assignments)
        {
            return assignments;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every partition is held by exactly one of the members, and each member holds some.
fn split_among_all(assignments: &[(usize, Option<i64>)]) -> bool {
    assignments.iter().all(|(partitions, _)| *partitions > 0)
        && assignments.iter().map(|(partitions, _)| partitions).sum::<usize>() == PARTITIONS * TOPICS
}

#[test]
fn projectors_split_the_partitions_and_a_killed_members_partitions_resume_from_the_store() {
    let directory = tempfile::tempdir().expect("tempdir");
    let ProjectedStream { events, clean, .. } = generate_and_project(directory.path(), 12_000, 53, 5_000);
    let data = directory.path().join("shared-store");
    split_kill_and_resume(directory.path(), &events, &data, &clean.dump_model_version(1));
}

#[test]
fn projectors_of_one_group_writing_into_cassandra_split_kill_and_resume() {
    let directory = tempfile::tempdir().expect("tempdir");
    let ProjectedStream { events, .. } = generate_and_project(directory.path(), 4_000, 53, 2_000);
    let clean = CqlStore::new(&directory.path().join("clean"), "group_clean");
    project(&events, &clean, 500);
    let data = CqlStore::new(&directory.path().join("shared-store"), "group_shared");
    split_kill_and_resume(directory.path(), &events, &data, &clean.dump_model_version(1));
}

/// Two projectors of one group follow the topics into `data`; one is killed
/// while it has messages left, the survivor takes over its partitions and
/// catches up, and `data` ends holding `expected`.
fn split_kill_and_resume(
    directory: &std::path::Path,
    events: &std::path::Path,
    data: &(impl TestStore + ?Sized),
    expected: &BTreeMap<String, Vec<String>>,
) {
    let broker = Broker::start(&directory.join("broker"));
    create_topics(&broker, "", PARTITIONS as u32, &["dead-letters"]);
    let published = directory.join("published-schemas");

    let start = || {
        let mut command = kafka_projector_command(&broker, data, "projectors", "");
        command.arg("--writer-schema-dir").arg(&published).stderr(Stdio::null());
        let (child, mut listening) = spawn_listening(&mut command);
        (KillOnDrop(child), listening.remove("admin").expect("an admin listener"))
    };
    let mut members = [start(), start()];
    let admins = [members[0].1.clone(), members[1].1.clone()];
    wait_for(&[&admins[0], &admins[1]], "the two projectors split the partitions", split_among_all);

    // The events arrive once the group has formed, so both members have
    // messages left while they are produced; the one killed is one of them.
    let producer = std::thread::scope(|scope| {
        let producing = scope.spawn(|| produce_single_object(&broker, events, &published));
        let behind = |assignment: &(usize, Option<i64>)| assignment.1.is_some_and(|lag| lag > 0);
        let assignments =
            wait_for(&[&admins[0], &admins[1]], "one of the two projectors has messages left", |assignments| {
                split_among_all(assignments) && assignments.iter().any(behind)
            });
        let killed = assignments.iter().position(behind).expect("a member with messages left");
        let child = &mut members[killed].0.0;
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        producing.join().expect("the producer finishes");
        (assignments, killed)
    });
    let (assignments, killed) = producer;
    let survivor_admin = &admins[1 - killed];
    let rebalances = metric(survivor_admin, "lcc_projector_rebalances_total");
    let (partitions, lag) = assignments[killed];
    eprintln!("killed a projector with {} messages left on its {partitions} partitions", lag.unwrap_or_default());

    // The broker notices the missed heartbeats after the session timeout,
    // starts a new generation and makes the survivor rejoin; as the only
    // member it is assigned every partition.
    let assignments =
        wait_for(&[survivor_admin], "the survivor holds every partition and has caught up", |assignments| {
            assignments[0] == (PARTITIONS * TOPICS, Some(0))
        });
    eprintln!(
        "the survivor holds {} partitions after {} rebalances; {} write conflicts",
        assignments[0].0,
        metric(survivor_admin, "lcc_projector_rebalances_total") - rebalances,
        metric(survivor_admin, "lcc_projector_write_conflicts_total")
    );
    // On CQL, bulk bucket counts (the killed member's marked buckets among
    // them) are counted off the batch path, once the survivor has been idle
    // for up to 30 s; everything else is final once it has caught up.
    let started = Instant::now();
    let mut actual = data.dump_model_version(1);
    while actual != *expected && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_secs(1));
        actual = data.dump_model_version(1);
    }
    assert_same_documents(expected, &actual);
}
