//! The ScyllaDB write protocol under crashes and racing writers, against the
//! model of ScyllaDB's semantics (`read_model::scylla::model`): the
//! projector's own batches, written by the protocol the ScyllaDB backend
//! runs, with a phase's statements landing in any order, every statement
//! landing again late, and a crash between any two statements.
//!
//! What must hold: a crash at any point, followed by a restart that resumes
//! from the stored checkpoints, ends in the same documents, index entries,
//! references, states, checkpoints and bulk bucket counts as a run without a
//! crash; so do two projectors racing on a party and the works that name it
//! while a third, which lost its partitions, still writes. And at any point,
//! a notification that has landed announces documents that have landed.

mod support;

use std::sync::Arc;

use projector::contract::Topic;
use projector::generate::drafts::{Draft, Payload};
use projector::generate::{GenerateOptions, generate};
use projector::projection::batch::{Rendering, project_batch, render_stale_again};
use projector::source::SourcedEvent;
use read_model::documents::RightType;
use read_model::notifications::{Answer, Notification};
use read_model::scylla::model::{CRASHED, ClusterModel, Contents, Faults, ModelWriter};
use read_model::{DocumentKind, ModelVersion, ProjectionWrites, StoreError, WriteBatch};
use support::{T0, party, published, read_events, right, rights, work};

const VERSION: ModelVersion = ModelVersion(1);

/// Events per batch: small, so that a registry makes many batches.
const BATCH_SIZE: usize = 6;

/// The writers' clocks start here (microseconds), and a restarted writer's later.
const CLOCK_MICROS: i64 = 1_700_000_000_000_000;
const RESTART_MICROS: i64 = CLOCK_MICROS + 3_600_000_000;

/// A writer counts a bucket it keeps marking at most once per 40 of its clock's
/// readings (each reading advances it by a millisecond), so some recounts wait.
const RECOUNT_INTERVAL_MICROS: i64 = 40_000;

/// A generated registry's events: all of them, and split into the parties'
/// and everything else, as two projectors owning different topics see them.
struct Registry {
    all: Vec<SourcedEvent>,
    parties: Vec<SourcedEvent>,
    others: Vec<SourcedEvent>,
}

fn registry(works: usize) -> Registry {
    let directory = tempfile::tempdir().expect("tempdir");
    let options = GenerateOptions { works, seed: 7, events_per_segment: 40, sandbox: false };
    generate(&options, directory.path()).expect("generate");
    let (all, _) = read_events(directory.path());
    let is_party = |event: &SourcedEvent| event.outcome.as_ref().is_ok_and(|event| event.topic == Topic::Parties);
    let (parties, others) = all.iter().cloned().partition(is_party);
    Registry { all, parties, others }
}

/// Projects the events of `events` past the writer's checkpoints of
/// `source`, batch by batch, writing each until it is fresh as the runner
/// does, then settles the store as the runner does when caught up.
async fn project(writer: &ModelWriter, source: &str, events: &[SourcedEvent]) -> Result<(), StoreError> {
    let checkpoints = writer.checkpoints(VERSION, source).await?;
    let next_offset = |event: &SourcedEvent| {
        let position = &event.position;
        checkpoints
            .iter()
            .find(|checkpoint| checkpoint.stream == position.stream && checkpoint.partition == position.partition)
            .map_or(0, |checkpoint| checkpoint.next_offset)
    };
    let remaining: Vec<SourcedEvent> =
        events.iter().filter(|event| event.position.offset >= next_offset(event)).cloned().collect();
    for batch in remaining.chunks(BATCH_SIZE) {
        let write = project_batch(writer, VERSION, source, batch, None, Rendering::InBatch).await?.write;
        write_until_fresh(writer, write).await?;
    }
    writer.settle(VERSION).await
}

/// Writes a batch, and renders again what the store reports stale, as the runner does.
async fn write_until_fresh(writer: &ModelWriter, mut write: WriteBatch) -> Result<(), StoreError> {
    loop {
        let written = writer.apply_batch(VERSION, Arc::new(write.clone())).await?;
        if written.stale.is_empty() {
            return Ok(());
        }
        write = render_stale_again(writer, VERSION, &written.stale, &write).await?;
    }
}

fn writer(cluster: &ClusterModel, faults: Faults, clock_micros: i64) -> ModelWriter {
    ModelWriter::new(cluster, faults, clock_micros, RECOUNT_INTERVAL_MICROS)
}

/// The first differences between two contents, for a readable failure.
fn differences(expected: &Contents, actual: &Contents) -> String {
    let mut found = Vec::new();
    for table in expected.keys().chain(actual.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (want, got) = (expected.get(table), actual.get(table));
        let keys: std::collections::BTreeSet<_> = want.into_iter().chain(got).flat_map(|rows| rows.keys()).collect();
        for key in keys {
            let (want_row, got_row) = (want.and_then(|rows| rows.get(key)), got.and_then(|rows| rows.get(key)));
            if want_row != got_row {
                let show = |row: Option<&std::collections::BTreeMap<&str, Vec<u8>>>| {
                    row.map(|columns| {
                        columns
                            .iter()
                            .map(|(column, value)| format!("{column}={}", String::from_utf8_lossy(value)))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                };
                found.push(format!(
                    "{table} {key:?}:\n  expected {:?}\n  found    {:?}",
                    show(want_row),
                    show(got_row)
                ));
            }
        }
    }
    found.truncate(4);
    found.join("\n")
}

/// A run without a crash: its contents and how many statements it took.
async fn reference(runs: &[(&str, &[SourcedEvent])]) -> (Contents, usize) {
    let cluster = ClusterModel::default();
    let writer = writer(&cluster, Faults::default(), CLOCK_MICROS);
    for (source, events) in runs {
        project(&writer, source, events).await.expect("project");
    }
    (cluster.contents(), writer.statements_applied())
}

fn assert_crashed(outcome: Result<(), StoreError>, crash_after: usize) {
    match outcome {
        Err(StoreError::Corrupt(message)) if message == CRASHED => {}
        other => panic!("the writer was to crash after {crash_after} statements: {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_crash_between_any_two_statements_then_a_replay_ends_as_a_run_without_a_crash() {
    let registry = registry(12);
    let (expected, statements) = reference(&[("events", &registry.all)]).await;
    assert!(expected.contains_key("rights_profiles") && expected.contains_key("bulk_bucket_counts"));
    assert!(expected.contains_key("party_references") && expected.contains_key("license_statuses"));
    assert!(statements > 300, "{statements} statements");
    assert!(!expected.contains_key("bulk_bucket_marks"), "a settled store has no marks left");
    for crash_after in 0..statements {
        let cluster = ClusterModel::default();
        let seed = crash_after as u64;
        let late_retries = crash_after % 2 == 1;
        let faults = Faults { crash_after: Some(crash_after), seed, late_retries, yields: 0 };
        assert_crashed(project(&writer(&cluster, faults, CLOCK_MICROS), "events", &registry.all).await, crash_after);
        let restarted = writer(&cluster, Faults { seed: seed + 1, late_retries, ..Faults::default() }, RESTART_MICROS);
        project(&restarted, "events", &registry.all).await.expect("the restarted writer projects");
        let contents = cluster.contents();
        assert!(
            contents == expected,
            "crash after {crash_after} of {statements}:\n{}",
            differences(&expected, &contents)
        );
    }
}

/// The query API's document cache over CQL drops a document when it reads a
/// notification of it, so a notification that landed before its document
/// would let the cache keep the document as it was. At every crash point,
/// each notification that has landed names only answers whose documents
/// have landed.
#[tokio::test(flavor = "current_thread")]
async fn a_notification_never_lands_before_the_documents_it_announces() {
    let registry = registry(12);
    let (_, statements) = reference(&[("events", &registry.all)]).await;
    let mut checked = 0;
    for crash_after in 0..statements {
        let cluster = ClusterModel::default();
        let faults = Faults { crash_after: Some(crash_after), seed: crash_after as u64, ..Faults::default() };
        assert_crashed(project(&writer(&cluster, faults, CLOCK_MICROS), "events", &registry.all).await, crash_after);
        for (id, body) in cluster.notifications() {
            let notification = Notification::decode(&id, &body).expect("a stored notification decodes");
            for answer in Answer::ALL.into_iter().filter(|answer| notification.tags.get(*answer).is_some()) {
                let Some(kind) = stored_document(answer) else { continue };
                assert!(
                    cluster.document(kind, &id).is_some(),
                    "crash after {crash_after}: a notification of {id} landed before its {kind:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > statements, "only {checked} announced documents checked");
}

/// The stored document an answer is served from; provenance is assembled from its entries.
fn stored_document(answer: Answer) -> Option<DocumentKind> {
    match answer {
        Answer::Rights => Some(DocumentKind::RightsProfile),
        Answer::Verification => Some(DocumentKind::Verification),
        Answer::Metadata => Some(DocumentKind::Metadata),
        Answer::Evidence => Some(DocumentKind::Evidence),
        Answer::LicenseStatus => Some(DocumentKind::LicenseStatus),
        Answer::Provenance => None,
    }
}

/// A rebalance: the parties' writer races the works' writer on parties and
/// the works that name them, and the works' previous owner, which lost the
/// partitions, still writes the first part of them. Every statement of the
/// races is a crash point of one of the two owners, which restarts.
#[tokio::test(flavor = "current_thread")]
async fn two_writers_racing_during_a_rebalance_and_a_crash_of_either_end_as_one_writer_alone() {
    let registry = registry(8);
    let (expected, statements) = reference(&[("parties", &registry.parties), ("works", &registry.others)]).await;
    let lost_at = registry.others.len() * 3 / 5;
    let mut crashes = 0;
    for crash_after in 0..statements {
        let cluster = ClusterModel::default();
        let seed = crash_after as u64 * 3;
        let late_retries = crash_after % 3 == 0;
        let crash = Faults { crash_after: Some(crash_after), seed, late_retries, yields: 3 };
        let race = Faults { seed: seed + 1, late_retries, yields: 3, ..Faults::default() };
        let previous = Faults { seed: seed + 2, late_retries, yields: 3, ..Faults::default() };
        let parties_crash = crash_after % 2 == 0;
        let (parties_faults, works_faults) = if parties_crash { (crash, race) } else { (race, crash) };
        let parties = writer(&cluster, parties_faults, CLOCK_MICROS);
        let works = writer(&cluster, works_faults, CLOCK_MICROS + 5_000);
        let previous_owner = writer(&cluster, previous, CLOCK_MICROS - 5_000);
        let (parties_outcome, works_outcome, previous_outcome) = tokio::join!(
            project(&parties, "parties", &registry.parties),
            project(&works, "works", &registry.others),
            project(&previous_owner, "works", &registry.others[..lost_at]),
        );
        previous_outcome.expect("the previous owner writes");
        let (crashed, survived, source, events) = if parties_crash {
            (parties_outcome, works_outcome, "parties", &registry.parties)
        } else {
            (works_outcome, parties_outcome, "works", &registry.others)
        };
        // A crash point past the crashing writer's own statements is no crash.
        if crashed.is_ok() {
            continue;
        }
        assert_crashed(crashed, crash_after);
        crashes += 1;
        survived.expect("the other writer projects");
        let restarted = writer(&cluster, Faults { seed: seed + 3, ..Faults::default() }, RESTART_MICROS);
        project(&restarted, source, events).await.expect("the restarted writer projects");
        let contents = cluster.contents();
        assert!(contents == expected, "crash after {crash_after}:\n{}", differences(&expected, &contents));
    }
    assert!(crashes * 3 > statements, "{crashes} of {statements} crash points fell inside the writers' statements");
}

/// A work's batch is rendered while the party it names has its old name,
/// and the rename commits before the batch is written; the rename's writer
/// does not see the work's reference yet, so the work's writer must render
/// the work again. A crash at any point of that leaves the checkpoints
/// behind the work's events, so the restarted writer renders it.
#[tokio::test(flavor = "current_thread")]
async fn a_work_rendered_before_a_rename_of_its_party_is_rendered_again_whenever_its_writer_crashes() {
    let projection = support::Projection::new().await;
    let rename = Payload::PartyRenamed("New Name".into());
    let party_drafts = vec![party("PTY-1", "Old Name", T0), Draft::new(Topic::Parties, "PTY-1", T0 + 9, rename)];
    let (party_events, _) = read_events(&projection.write("parties", party_drafts, 10));
    let (registered, renamed) = party_events.split_at(1);
    let drafts = vec![
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        rights("LCC-1", T0 + 3, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
    ];
    let (work_events, _) = read_events(&projection.write("work", drafts, 10));
    let mut crashes = 0;
    for crash_after in 0..40 {
        let cluster = ClusterModel::default();
        let parties = writer(&cluster, Faults::default(), CLOCK_MICROS);
        project(&parties, "parties", registered).await.expect("the party is registered");
        let works = writer(&cluster, Faults { crash_after: Some(crash_after), ..Faults::default() }, CLOCK_MICROS);
        let outcome = project_batch(&works, VERSION, "works", &work_events, None, Rendering::InBatch).await;
        project(&parties, "parties", renamed).await.expect("the party is renamed");
        let written = write_until_fresh(&works, outcome.expect("the work's batch").write).await;
        if written.is_err() {
            crashes += 1;
            let restarted = writer(&cluster, Faults::default(), RESTART_MICROS);
            project(&restarted, "works", &work_events).await.expect("the restarted writer projects");
        }
        let profile = cluster.document(DocumentKind::RightsProfile, "LCC-1").expect("the work's profile");
        let profile = String::from_utf8(profile).expect("JSON");
        assert!(profile.contains("New Name") && !profile.contains("Old Name"), "crash after {crash_after}: {profile}");
    }
    assert!(crashes > 20, "the writer crashed at every point of its writes: {crashes}");
}
