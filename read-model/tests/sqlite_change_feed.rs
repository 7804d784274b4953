//! What the SQLite store's change feed does beyond the conformance suite
//! (whose retention case both backends pass): rewrites of a row with its own
//! bytes that record nothing, growing sequences when a writer's clock steps
//! back, cursors past the newest change, and a quiet audience's cursor that
//! keeps its place while its client polls.

use std::sync::Arc;
use std::time::Duration;

use read_model::change_feed::{ChangeFeedGone, ChangeItem, ChangeQuery, ChangesRead, FeedPosition};
use read_model::clock::Clock;
use read_model::{
    Audience, DocumentReads, KeyedWrite, ModelVersion, ModelVersions, ProjectionWrites, SqliteStore, WriteBatch,
    WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);
const RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

async fn store_with_clock() -> (tempfile::TempDir, SqliteStore, Clock) {
    let directory = tempfile::tempdir().expect("temporary directory");
    let clock = Clock::manual();
    let store = SqliteStore::open_with_clock(directory.path(), 0, clock.clone()).expect("open");
    store.migrate().await.expect("migrate");
    store.create_model_version(V1).await.expect("create");
    store.activate_model_version(V1).await.expect("activate");
    (directory, store, clock)
}

async fn write(store: &SqliteStore, rows: &[(&str, Option<&str>)]) {
    let bulk_rows = rows
        .iter()
        .map(|(key, body)| KeyedWrite {
            key: (*key).to_owned(),
            body: body.map(|text| text.as_bytes().to_vec()),
            version: WriteVersion(1),
        })
        .collect();
    let batch = WriteBatch { bulk_rows, change_feed_retention: Some(RETENTION), ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
}

async fn read(store: &SqliteStore, after: Option<FeedPosition>) -> ChangesRead {
    read_changes(store, after, false).await
}

async fn read_changes(store: &SqliteStore, after: Option<FeedPosition>, latest_only: bool) -> ChangesRead {
    let query = ChangeQuery {
        audience: Audience::Production,
        after: after.map(|position| (V1, position)),
        until_sequence: None,
        limit: 100,
        latest_only,
    };
    store.changes(&query).await.expect("read")
}

fn described(read: &ChangesRead) -> Vec<(String, Option<String>)> {
    let ChangesRead::Page(page) = read else { panic!("expected a page, got {read:?}") };
    page.items.iter().map(|item: &ChangeItem| (item.lcc_id().to_owned(), body_text(item))).collect()
}

fn body_text(item: &ChangeItem) -> Option<String> {
    item.body.as_ref().map(|body| String::from_utf8_lossy(body).into_owned())
}

fn entry(lcc_id: &str, body: Option<&str>) -> (String, Option<String>) {
    (lcc_id.to_owned(), body.map(str::to_owned))
}

#[tokio::test]
async fn a_row_rewritten_with_its_own_bytes_is_no_change_and_sequences_grow_when_the_clock_steps_back() {
    let (directory, store, clock) = store_with_clock().await;
    write(&store, &[("LCC-A", Some("a1"))]).await;
    write(&store, &[("LCC-A", Some("a1")), ("LCC-NONE", None)]).await;
    assert_eq!(described(&read(&store, None).await), [entry("LCC-A", Some("a1"))]);

    // A second process on the same files whose clock is a day behind.
    let behind = Clock::manual();
    let late = SqliteStore::open_with_clock(directory.path(), 0, behind.clone()).expect("open");
    clock.advance(DAY);
    write(&store, &[("LCC-A", Some("a2"))]).await;
    write(&late, &[("LCC-A", Some("a3"))]).await;
    let ChangesRead::Page(page) = read(&store, None).await else { panic!("gone") };
    let sequences: Vec<i64> = page.items.iter().map(|item| item.position.sequence).collect();
    assert!(sequences.windows(2).all(|pair| pair[0] < pair[1]), "{sequences:?}");
    let versions: Vec<u64> = page.items.iter().map(|item| item.version).collect();
    assert!(versions.windows(2).all(|pair| pair[0] < pair[1]), "{versions:?}");
}

#[tokio::test]
async fn a_cursor_past_the_newest_change_is_not_a_position_of_this_feed() {
    let (_directory, store, _clock) = store_with_clock().await;
    write(&store, &[("LCC-A", Some("a1"))]).await;
    let ChangesRead::Page(page) = read(&store, None).await else { panic!("gone") };
    let beyond = FeedPosition { sequence: page.next.sequence + (1 << 40), lcc_id: String::new() };
    assert_eq!(read(&store, Some(beyond)).await, ChangesRead::Gone(ChangeFeedGone::Purged));
    assert_eq!(described(&read(&store, Some(page.next)).await), [], "the newest position continues, empty");
}

#[tokio::test]
async fn a_quiet_audiences_cursor_moves_with_the_feed_while_its_client_polls() {
    let (_directory, store, clock) = store_with_clock().await;
    write(&store, &[("SANDBOX-LCC-S", Some("s1")), ("LCC-A", Some("a1"))]).await;
    let sandbox = |after: Option<FeedPosition>| {
        let query = ChangeQuery {
            audience: Audience::Sandbox,
            after: after.map(|position| (V1, position)),
            until_sequence: None,
            limit: 100,
            latest_only: false,
        };
        let store = store.clone();
        async move { store.changes(&query).await.expect("read") }
    };
    let ChangesRead::Page(first) = sandbox(None).await else { panic!("gone") };
    assert_eq!(first.items.len(), 1);
    let polled_at_start = first.next.clone();
    clock.advance(DAY * 15);
    write(&store, &[("LCC-A", Some("a2"))]).await;
    let ChangesRead::Page(fortnight) = sandbox(Some(polled_at_start.clone())).await else { panic!("gone") };
    assert!(fortnight.items.is_empty());
    assert!(fortnight.next > polled_at_start, "caught up, the cursor moves to the feed's newest change");
    clock.advance(RETENTION + DAY);
    write(&store, &[("LCC-A", Some("a3"))]).await;
    clock.advance(DAY * 15);
    write(&store, &[("LCC-A", Some("a4"))]).await;
    assert!(
        matches!(sandbox(Some(fortnight.next.clone())).await, ChangesRead::Page(_)),
        "a client that polls keeps its place"
    );
    assert_eq!(
        sandbox(Some(polled_at_start)).await,
        ChangesRead::Gone(ChangeFeedGone::Purged),
        "one silent for longer than the retention starts again"
    );
}
