//! The SQLite store's document cache, seen from a reading process: two
//! stores on one directory stand for the query API and the projector. A
//! cached document must never outlive a batch that changed it by more than
//! a pooled reader's snapshot may (10 ms), while documents no batch changed
//! keep being answered from memory. Time is a manual clock the tests move,
//! so a bound is checked by moving past it, not by sleeping.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use read_model::clock::Clock;
use read_model::documents::DocumentKind;
use read_model::{
    DocumentCacheStatistics, DocumentReads, DocumentWrite, ModelVersion, ModelVersions, ProjectionWrites, SqliteStore,
    WriteBatch, WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);

/// How long a pooled reader may reuse its snapshot, and the cache vouch for what it holds.
const FRESHNESS_BOUND: Duration = Duration::from_millis(10);

struct TwoProcesses {
    directory: tempfile::TempDir,
    projector: SqliteStore,
    api: SqliteStore,
    /// The API's clock.
    clock: Clock,
}

async fn two_processes(api_cache_bytes: u64) -> TwoProcesses {
    let directory = tempfile::tempdir().expect("temporary directory");
    let projector = SqliteStore::open(directory.path()).expect("open");
    projector.migrate().await.expect("migrate");
    projector.create_model_version(V1).await.expect("create");
    projector.activate_model_version(V1).await.expect("activate");
    let clock = Clock::manual();
    let api =
        SqliteStore::open_with_clock(directory.path(), api_cache_bytes, clock.clone()).expect("open a second time");
    TwoProcesses { directory, projector, api, clock }
}

fn profile(key: &str, body: Option<&str>) -> DocumentWrite {
    DocumentWrite {
        kind: DocumentKind::RightsProfile,
        key: key.into(),
        body: body.map(|text| text.as_bytes().to_vec()),
        version: WriteVersion(1),
    }
}

async fn write(store: &SqliteStore, documents: Vec<DocumentWrite>) {
    store.apply_batch(V1, Arc::new(WriteBatch { documents, ..WriteBatch::default() })).await.expect("write batch");
}

async fn read(store: &SqliteStore, key: &str) -> Option<String> {
    let body = store.document(DocumentKind::RightsProfile, key).await.expect("read");
    body.map(|bytes| String::from_utf8(bytes).expect("utf-8"))
}

fn statistics(store: &SqliteStore) -> DocumentCacheStatistics {
    store.document_cache_statistics().expect("the cache is on")
}

#[tokio::test]
async fn a_batch_drops_the_documents_it_changed_and_only_those() {
    let stores = two_processes(1 << 20).await;
    write(&stores.projector, vec![profile("LCC-1", Some("one, first")), profile("LCC-2", Some("two"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one, first"));
    assert_eq!(read(&stores.api, "LCC-2").await.as_deref(), Some("two"));
    let before = statistics(&stores.api);
    assert_eq!(read(&stores.api, "LCC-2").await.as_deref(), Some("two"));
    assert_eq!(statistics(&stores.api).hits, before.hits + 1, "a repeated read is answered from memory");

    write(&stores.projector, vec![profile("LCC-1", Some("one, second"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one, first"), "within the bound, as a snapshot");
    stores.clock.advance(FRESHNESS_BOUND);
    let before = statistics(&stores.api);
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one, second"));
    assert_eq!(read(&stores.api, "LCC-2").await.as_deref(), Some("two"));
    let after = statistics(&stores.api);
    assert_eq!(after.misses, before.misses + 1, "the changed document is read again");
    assert_eq!(after.hits, before.hits + 1, "the unchanged one is still held");
    assert_eq!(after.resets, 0);
}

#[tokio::test]
async fn a_deleted_document_is_not_served_from_memory() {
    let stores = two_processes(1 << 20).await;
    write(&stores.projector, vec![profile("LCC-1", Some("one"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one"));
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one"));
    write(&stores.projector, vec![profile("LCC-1", None)]).await;
    stores.clock.advance(FRESHNESS_BOUND);
    assert_eq!(read(&stores.api, "LCC-1").await, None);
}

#[tokio::test]
async fn a_write_of_this_process_is_seen_at_once() {
    let stores = two_processes(1 << 20).await;
    write(&stores.api, vec![profile("LCC-1", Some("first"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("first"));
    write(&stores.api, vec![profile("LCC-1", Some("second"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("second"));
}

#[tokio::test]
async fn a_cache_that_fell_far_behind_drops_everything() {
    let stores = two_processes(1 << 20).await;
    write(&stores.projector, vec![profile("LCC-1", Some("v0")), profile("LCC-2", Some("stays"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("v0"));
    assert_eq!(read(&stores.api, "LCC-2").await.as_deref(), Some("stays"));
    for version in 1..=100 {
        write(&stores.projector, vec![profile("LCC-1", Some(&format!("v{version}")))]).await;
    }
    stores.clock.advance(FRESHNESS_BOUND);
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("v100"));
    assert_eq!(statistics(&stores.api).resets, 1);
    let before = statistics(&stores.api);
    assert_eq!(read(&stores.api, "LCC-2").await.as_deref(), Some("stays"));
    assert_eq!(statistics(&stores.api).misses, before.misses + 1, "nothing was held after the reset");
}

#[tokio::test]
async fn the_cache_holds_no_more_than_its_bound() {
    let bound = 64 * 1024;
    let stores = two_processes(bound).await;
    let body = "x".repeat(1_000);
    let documents = (0..500).map(|index| profile(&format!("LCC-{index}"), Some(&body))).collect();
    write(&stores.projector, documents).await;
    for index in 0..500 {
        assert_eq!(read(&stores.api, &format!("LCC-{index}")).await.map(|text| text.len()), Some(1_000));
    }
    let held = statistics(&stores.api);
    assert!(held.bytes > 0 && held.bytes <= bound, "{} bytes held against a bound of {bound}", held.bytes);
    assert!(held.holds_stored, "once full, the cache holds documents as stored");
}

#[tokio::test]
async fn a_model_file_without_change_records_is_read_without_the_cache() {
    let stores = two_processes(1 << 20).await;
    write(&stores.projector, vec![profile("LCC-1", Some("first"))]).await;
    // As a file written before change records existed, and not migrated since.
    let file = stores.directory.path().join("model-v1.sqlite");
    rusqlite::Connection::open(&file).expect("open").execute_batch("DROP TABLE document_changes").expect("drop");
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("first"));
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("first"));
    rusqlite::Connection::open(&file)
        .expect("open")
        .execute("UPDATE work_documents SET rights_profile = CAST('second' AS BLOB) WHERE id = 'LCC-1'", [])
        .expect("update");
    stores.clock.advance(FRESHNESS_BOUND);
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("second"), "nothing stale was kept");
    assert_eq!(statistics(&stores.api), DocumentCacheStatistics::default(), "every read went to the store");
}

#[tokio::test]
async fn a_store_without_a_cache_reports_none() {
    let stores = two_processes(0).await;
    write(&stores.projector, vec![profile("LCC-1", Some("one"))]).await;
    assert_eq!(read(&stores.api, "LCC-1").await.as_deref(), Some("one"));
    assert_eq!(stores.api.document_cache_statistics(), None);
}

/// Readers race a writer that rewrites one document many times, while the
/// API's clock moves 4 ms after each commit. No read returns a version older
/// than one committed more than [`FRESHNESS_BOUND`] before the read began, by
/// that clock (a document read before a change but kept after the change was
/// applied would), and once the writer is done and the bound has passed
/// every reader sees the last version. Reads need not be monotonic: pooled
/// readers hold snapshots of different ages, with or without a cache.
async fn readers_race_a_writer(cache_bytes: u64) -> DocumentCacheStatistics {
    const VERSIONS: usize = 300;
    let stores = two_processes(cache_bytes).await;
    write(&stores.projector, vec![profile("LCC-1", Some("0"))]).await;
    let committed: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(vec![stores.clock.now()]));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (api, clock) = (stores.api.clone(), stores.clock.clone());
            let (committed, done) = (Arc::clone(&committed), Arc::clone(&done));
            tokio::spawn(async move {
                while !done.load(Ordering::Acquire) {
                    let began = clock.now();
                    let seen: usize = read(&api, "LCC-1").await.expect("present").parse().expect("a number");
                    let due = {
                        let committed = committed.lock().expect("commit times");
                        committed.iter().rposition(|&at| at + FRESHNESS_BOUND < began).unwrap_or(0)
                    };
                    assert!(seen >= due, "read version {seen}, but version {due} was committed well before");
                    tokio::task::yield_now().await;
                }
                read(&api, "LCC-1").await
            })
        })
        .collect();
    for version in 1..=VERSIONS {
        write(&stores.projector, vec![profile("LCC-1", Some(&version.to_string()))]).await;
        committed.lock().expect("commit times").push(stores.clock.now());
        stores.clock.advance(Duration::from_millis(4));
        tokio::task::yield_now().await;
    }
    stores.clock.advance(FRESHNESS_BOUND);
    done.store(true, Ordering::Release);
    for reader in readers {
        assert_eq!(reader.await.expect("reader").as_deref(), Some(VERSIONS.to_string().as_str()));
    }
    stores.api.document_cache_statistics().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cached_reads_racing_a_writer_are_never_staler_than_a_snapshot() {
    let statistics = readers_race_a_writer(1 << 20).await;
    assert!(statistics.hits > 0, "the readers were served from memory in between");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uncached_reads_racing_a_writer_are_never_staler_than_a_snapshot() {
    readers_race_a_writer(0).await;
}
