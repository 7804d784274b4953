//! The CQL backend's document cache, seen from the query API, on the cluster
//! `SCYLLA_NODES` names. Two stores on one keyspace stand for the projector
//! and the API. A document changed by a batch is served anew once the API
//! reads the batch's notifications (at most a refresh interval later),
//! documents no notification names keep being answered from memory, and a
//! notification of a projector whose clock is behind is found by the next
//! re-read of the settle time. The stores read manual clocks the tests
//! move, so a bound is checked by moving past it, not by sleeping.

use std::sync::Arc;
use std::time::Duration;

use read_model::clock::Clock;
use read_model::documents::DocumentKind;
use read_model::notifications::{AnswerTags, Notification, NotificationWrite, Subject};
use read_model::{
    DocumentCacheStatistics, DocumentReads, DocumentWrite, ModelVersion, ModelVersions, ProjectionWrites,
    ScyllaSettings, ScyllaStore, WriteBatch, WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);
const SETTLE: Duration = Duration::from_secs(10);
/// How often the API's cache reads the notifications (`REFRESH_INTERVAL`).
const REFRESH: Duration = Duration::from_millis(100);
/// How far back each refresh reads the notifications again (`REREAD_WINDOW`).
const REREAD_WINDOW: Duration = Duration::from_secs(1);
/// How often a refresh reads the whole settle time again (`FULL_REREAD_INTERVAL`).
const FULL_REREAD_INTERVAL: Duration = Duration::from_secs(5);

struct TwoProcesses {
    projector: ScyllaStore,
    api: ScyllaStore,
    clock: Clock,
    /// A clock started with `clock`, for a process on another host.
    other_host_clock: Clock,
    settings: ScyllaSettings,
}

async fn two_processes(name: &str) -> TwoProcesses {
    let mut settings = read_model::conformance::cluster_settings(&format!("cache_{name}"));
    settings.change_feed_settle = SETTLE;
    let (clock, other_host_clock) = (Clock::manual(), Clock::manual());
    let projector =
        ScyllaStore::connect_with_clock(settings.clone(), clock.clone()).await.expect("the cluster answers");
    projector.migrate().await.expect("migrate");
    projector.create_model_version(V1).await.expect("create");
    projector.activate_model_version(V1).await.expect("activate");
    let api = ScyllaStore::connect_with_clock(settings.clone(), clock.clone()).await.expect("connect a second time");
    TwoProcesses { projector, api, clock, other_host_clock, settings }
}

fn profile(key: &str, text: &str) -> DocumentWrite {
    DocumentWrite {
        kind: DocumentKind::RightsProfile,
        key: key.into(),
        body: Some(text.as_bytes().to_vec()),
        version: WriteVersion(text.len() as u64),
    }
}

fn notification(id: &str, version: u64) -> NotificationWrite {
    let notification = Notification {
        subject: Subject::Work,
        id: id.into(),
        version,
        withdrawn: false,
        changed: Vec::new(),
        tags: AnswerTags::default(),
        parties: Vec::new(),
    };
    NotificationWrite { id: id.into(), version, body: notification.encode() }
}

/// A batch writing `documents` and notifying the ids of `notified`.
async fn write(store: &ScyllaStore, documents: Vec<DocumentWrite>, notified: &[&str]) {
    let notifications = notified.iter().map(|id| notification(id, 1)).collect();
    let batch = WriteBatch { documents, notifications, ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write batch");
}

async fn read(store: &ScyllaStore, key: &str) -> Option<String> {
    let body = store.document(DocumentKind::RightsProfile, key).await.expect("read");
    body.map(|bytes| String::from_utf8(bytes).expect("utf-8"))
}

fn statistics(store: &ScyllaStore) -> DocumentCacheStatistics {
    store.document_cache_statistics().expect("the cache is on by default")
}

#[tokio::test]
async fn a_notified_change_is_served_after_the_next_refresh_and_other_documents_stay_in_memory() {
    let TwoProcesses { projector, api, clock, .. } = two_processes("notified").await;
    write(&projector, vec![profile("LCC-A", "a1"), profile("LCC-B", "b1")], &["LCC-A", "LCC-B"]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    assert_eq!(read(&api, "LCC-B").await.as_deref(), Some("b1"));
    // Past the window each refresh reads again, which drops what it names once more.
    clock.advance(REREAD_WINDOW + REFRESH);
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    assert_eq!(statistics(&api).hits, 1, "the second read of LCC-A is answered from memory");

    write(&projector, vec![profile("LCC-A", "a2, later")], &["LCC-A"]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"), "within a refresh interval the copy may serve");
    clock.advance(REFRESH);
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a2, later"), "the notification dropped the copy");
    let hits = statistics(&api).hits;
    assert_eq!(read(&api, "LCC-B").await.as_deref(), Some("b1"));
    assert_eq!(statistics(&api).hits, hits + 1, "LCC-B was not notified since, so it is still answered from memory");
    projector.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}

#[tokio::test]
async fn a_notification_that_lands_behind_one_already_read_is_applied_within_the_settle_time() {
    let TwoProcesses { projector, api, clock, other_host_clock, settings } = two_processes("late").await;
    // A projector on another host, whose clock falls three seconds behind.
    let lagging = ScyllaStore::connect_with_clock(settings, other_host_clock).await.expect("connect a third time");
    clock.advance(Duration::from_secs(3));
    write(&projector, vec![profile("LCC-A", "a1")], &["LCC-A"]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    // Past the window each refresh reads again, so that only the lagging notification could drop it.
    clock.advance(REREAD_WINDOW + REFRESH);
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    write(&lagging, vec![profile("LCC-A", "a2, from behind")], &["LCC-A"]).await;
    clock.advance(REFRESH);
    assert_eq!(
        read(&api, "LCC-A").await.as_deref(),
        Some("a1"),
        "the lagging notification sorts before the position read and the last second read again"
    );
    clock.advance(FULL_REREAD_INTERVAL);
    assert_eq!(
        read(&api, "LCC-A").await.as_deref(),
        Some("a2, from behind"),
        "a full re-read of the settle time found it"
    );
    projector.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}

#[tokio::test]
async fn a_write_of_this_process_is_seen_at_once() {
    let TwoProcesses { projector, .. } = two_processes("own").await;
    write(&projector, vec![profile("LCC-A", "a1")], &[]).await;
    assert_eq!(read(&projector, "LCC-A").await.as_deref(), Some("a1"));
    write(&projector, vec![profile("LCC-A", "a2, own")], &[]).await;
    assert_eq!(read(&projector, "LCC-A").await.as_deref(), Some("a2, own"));
    projector.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}

#[tokio::test]
async fn a_refresh_that_finds_a_backlog_of_notifications_drops_everything() {
    let TwoProcesses { projector, api, clock, .. } = two_processes("backlog").await;
    write(&projector, vec![profile("LCC-A", "a1")], &["LCC-A"]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    let many: Vec<String> = (0..300).map(|index| format!("LCC-{index:04}")).collect();
    let notified: Vec<&str> = many.iter().map(String::as_str).collect();
    write(&projector, vec![profile("LCC-A", "a2, in a backlog")], &notified).await;
    clock.advance(REFRESH);
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a2, in a backlog"), "dropped with everything else");
    assert_eq!(statistics(&api).resets, 1, "one refresh read more notifications than it reads one by one");
    projector.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}

#[tokio::test]
async fn a_store_without_a_cache_reports_none_and_reads_the_cluster() {
    let TwoProcesses { projector, clock, mut settings, .. } = two_processes("off").await;
    settings.document_cache_bytes = 0;
    let api = ScyllaStore::connect_with_clock(settings, clock).await.expect("connect");
    write(&projector, vec![profile("LCC-A", "a1")], &[]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a1"));
    write(&projector, vec![profile("LCC-A", "a2")], &[]).await;
    assert_eq!(read(&api, "LCC-A").await.as_deref(), Some("a2"), "without a cache, every read reads the cluster");
    assert_eq!(api.document_cache_statistics(), None);
    projector.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}
