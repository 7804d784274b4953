//! Projectors in one consumer group, sharing one store: two split the
//! partitions; one is killed with SIGKILL mid-stream; once its session times
//! out the survivor alone is assigned every partition, resumes the killed
//! member's from the store's checkpoints, and the final store equals the
//! file-source projection of the same events.
//!
//! The projectors write into one store while each renders documents whose
//! inputs another changes (a work on one's partition names a party on
//! another's), so the store's read-set check (`read_model::read_set`) is
//! what keeps documents from going stale here.

use std::process::Stdio;
use std::time::{Duration, Instant};

use end_to_end_tests::KillOnDrop;
use end_to_end_tests::kafka::{Broker, create_topics, kafka_projector_command, metric, produce_single_object};
use end_to_end_tests::{
    ProjectedStream, assert_same_documents, dump_documents, generate_and_project, http, spawn_listening,
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

    let broker = Broker::start(&directory.path().join("broker"));
    create_topics(&broker, "", PARTITIONS as u32, &["dead-letters"]);
    let published = directory.path().join("published-schemas");

    let data = directory.path().join("shared-store");
    let start = || {
        let mut command = kafka_projector_command(&broker, &data, "projectors", "");
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
        let producing = scope.spawn(|| produce_single_object(&broker, &events, &published));
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
    assert_same_documents(&dump_documents(&clean), &dump_documents(&data));
}
