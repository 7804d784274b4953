//! Deferred rendering: what a deferred batch writes, and how documents it
//! left unrendered are rendered after a crash that lost them.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use projector::contract::Topic;
use projector::dead_letter::DeadLetterFile;
use projector::generate::drafts::{Draft, Payload};
use projector::projection::batch::{Rendering, project_batch};
use projector::render_deferral::RenderDeferral;
use projector::runner::{BatchObserver, CommittedBatch, NoObserver, RunOptions, run};
use projector::source::file::RecordsFound;
use projector::source::{SourceFeed, SourceMessage};
use read_model::calendar::Timestamp;
use read_model::documents::{BulkRow, RightType, RightsProfile};
use read_model::{
    AggregateKey, Audience, BatchWritten, Checkpoint, DocumentKind, DocumentReads, ModelVersion, PartyReferrer,
    ProjectionWrites, SqliteStore, Store, StoreError, StoredAggregate, WriteBatch, WriteVersion,
};
use support::{Projection, T0, party, published, read_events, right, rights, work};

/// A party, and a published work whose rights it holds.
fn published_work_with_its_author() -> Vec<Draft> {
    vec![
        party("PTY-1", "Ada Adler", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        rights("LCC-1", T0 + 3, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
    ]
}

#[tokio::test]
async fn a_deferred_batch_writes_states_and_indexes_but_no_document_and_no_checkpoint() {
    let projection = Projection::new().await;
    let drafts = published_work_with_its_author();
    let (events, source_id) = read_events(&projection.write("events", drafts, 10));
    let version = ModelVersion(1);
    let outcome = project_batch(&projection.store, version, &source_id, &events, None, Rendering::Deferred)
        .await
        .expect("project");
    assert_eq!(outcome.applied, 4);
    assert!(outcome.write.documents.is_empty() && outcome.write.bulk_rows.is_empty(), "nothing rendered");
    assert!(outcome.write.checkpoints.is_empty(), "checkpoints wait for the documents");
    assert!(!outcome.held_checkpoints.is_empty());
    assert_eq!(outcome.deferred.len(), 1, "one work to render: {:?}", outcome.deferred);
    assert_eq!(outcome.write.provenance.len(), 3, "the work's own events");
    assert!(outcome.write.party_references.iter().any(|reference| reference.party_id == "PTY-1" && reference.present));

    projection.store.apply_batch(version, Arc::new(outcome.write)).await.expect("write");
    assert_eq!(projection.store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read"), None);
    assert_eq!(projection.store.provenance("LCC-1").await.expect("provenance").len(), 3);
    assert!(projection.store.checkpoints(version, &source_id).await.expect("checkpoints").is_empty());
}

/// The SQLite store's projector port, claiming the given write ordering, and recording which
/// aggregates the projector reads.
#[derive(Debug)]
struct RecordingStore {
    inner: SqliteStore,
    orders_writes_by_version: bool,
    read: Mutex<Vec<AggregateKey>>,
}

impl RecordingStore {
    fn read_topics(&self, id: &str) -> Vec<String> {
        let read = self.read.lock().expect("read keys");
        read.iter().filter(|key| key.id == id).map(|key| key.topic.clone()).collect()
    }
}

#[async_trait]
impl ProjectionWrites for RecordingStore {
    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        self.read.lock().expect("read keys").extend_from_slice(keys);
        self.inner.aggregates(version, keys).await
    }

    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        self.inner.party_referrers(version, party_ids).await
    }

    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.inner.checkpoints(version, source).await
    }

    fn orders_writes_by_version(&self) -> bool {
        self.orders_writes_by_version
    }

    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError> {
        self.inner.apply_batch(version, batch).await
    }
}

/// A party is stored; then a deferred batch registers a work that names it.
/// Returns the store, which recorded the second batch's reads, and that batch's write.
async fn deferred_batch_naming_a_stored_party(orders_writes_by_version: bool) -> (RecordingStore, WriteBatch) {
    let projection = Projection::new().await;
    let version = ModelVersion(1);
    let (first, source_id) = read_events(&projection.write("party", vec![party("PTY-1", "Ada Adler", T0)], 10));
    let outcome =
        project_batch(&projection.store, version, &source_id, &first, None, Rendering::InBatch).await.expect("project");
    projection.store.apply_batch(version, Arc::new(outcome.write)).await.expect("write");

    let store = RecordingStore { inner: projection.store.clone(), orders_writes_by_version, read: Mutex::default() };
    let drafts = vec![
        work("LCC-1", "PTY-1", T0 + 1),
        rights("LCC-1", T0 + 2, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
    ];
    let (second, source_id) = read_events(&projection.write("work", drafts, 10));
    let outcome =
        project_batch(&store, version, &source_id, &second, None, Rendering::Deferred).await.expect("project");
    assert_eq!(outcome.applied, 2);
    let reference = outcome.write.party_references.iter().find(|reference| reference.party_id == "PTY-1");
    assert!(reference.is_some_and(|reference| reference.present), "the work names the party");
    (store, outcome.write)
}

/// The inputs a deferred batch does not render from would only supply the
/// write versions of its index changes; a serial backend ignores those.
#[tokio::test]
async fn a_deferred_batch_reads_no_aggregate_that_only_a_write_version_needs_when_the_backend_is_serial() {
    let (store, _) = deferred_batch_naming_a_stored_party(false).await;
    assert!(store.read_topics("PTY-1").is_empty(), "the named party is not read: {:?}", store.read_topics("PTY-1"));
    let mut own = store.read_topics("LCC-1");
    own.sort();
    own.dedup();
    assert_eq!(own, ["rights", "works"], "the work's own states that index changes follow from");
}

#[tokio::test]
async fn a_deferred_batch_versions_its_index_changes_by_every_input_when_the_backend_orders_writes_by_version() {
    let (store, write) = deferred_batch_naming_a_stored_party(true).await;
    assert_eq!(store.read_topics("PTY-1"), ["parties"], "the named party is read for its version");
    let own = store.read_topics("LCC-1");
    assert!(own.contains(&"certificates".to_owned()) && own.contains(&"disputes".to_owned()), "{own:?}");
    let reference = write.party_references.iter().find(|reference| reference.party_id == "PTY-1").expect("reference");
    assert_eq!(
        reference.version,
        WriteVersion::of_inputs(1 + 1, 1),
        "the work's and the rights' versions, then the party's"
    );
}

/// Index changes follow from a work's works and rights states alone, so a
/// deferred batch that changes neither reads none of the work's other states.
#[tokio::test]
async fn a_deferred_batch_reads_only_its_own_states_of_a_work_whose_works_and_rights_it_left_alone() {
    let projection = Projection::new().await;
    let version = ModelVersion(1);
    let (first, source_id) = read_events(&projection.write("work", published_work_with_its_author(), 10));
    let outcome =
        project_batch(&projection.store, version, &source_id, &first, None, Rendering::InBatch).await.expect("project");
    projection.store.apply_batch(version, Arc::new(outcome.write)).await.expect("write");

    let store =
        RecordingStore { inner: projection.store.clone(), orders_writes_by_version: false, read: Mutex::default() };
    let certificate = Payload::CertificateIssued("CERT-1".into(), "ab".repeat(32), Timestamp(T0 + 10));
    let drafts = vec![Draft::new(Topic::Certificates, "LCC-1", T0 + 10, certificate)];
    let (second, source_id) = read_events(&projection.write("certificate", drafts, 10));
    let outcome =
        project_batch(&store, version, &source_id, &second, None, Rendering::Deferred).await.expect("project");
    assert_eq!(outcome.applied, 1);
    assert_eq!(outcome.deferred.len(), 1, "the work waits to be rendered");
    assert_eq!(store.read_topics("LCC-1"), ["certificates"], "only the state the event changes");
}

/// A crash after a deferred batch committed and before its documents were
/// rendered: the checkpoints were held back, so a restart reads the events
/// again; they are duplicates now, and mark their documents to render.
#[tokio::test]
async fn documents_a_crash_left_unrendered_are_rendered_when_the_events_are_read_again() {
    let projection = Projection::new().await;
    let drafts = published_work_with_its_author();
    let files = projection.write("events", drafts, 10);
    let (events, source_id) = read_events(&files);
    let version = ModelVersion(1);
    let outcome = project_batch(&projection.store, version, &source_id, &events, None, Rendering::Deferred)
        .await
        .expect("project");
    projection.store.apply_batch(version, Arc::new(outcome.write)).await.expect("write");

    let totals = projection.project(&files, 2).await;
    assert_eq!(totals.applied, 0, "every event was applied before the crash");
    assert_eq!(totals.skipped_as_duplicates, 4);
    let profile: RightsProfile = projection.document(DocumentKind::RightsProfile, "LCC-1").await.expect("rendered");
    assert_eq!(profile.holders[0].holder.name.as_deref(), Some("Ada Adler"));
    let page = projection.store.bulk_page(Audience::Production, 0, 10).await.expect("page");
    let row: BulkRow = serde_json::from_slice(&page.rows[0]).expect("bulk row");
    assert_eq!(row.lcc_id, "LCC-1");
    assert!(!projection.store.checkpoints(version, &source_id).await.expect("checkpoints").is_empty());
}

/// A source whose reader sends `messages`, then sends nothing more until it is asked to stop.
fn scripted_feed(source_id: String, messages: Vec<SourceMessage>) -> SourceFeed {
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    let stop = Arc::new(AtomicBool::new(false));
    let reader_stop = Arc::clone(&stop);
    let reader = std::thread::spawn(move || {
        for message in messages {
            sender.blocking_send(message).expect("the loop receives");
        }
        while !reader_stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    SourceFeed { source_id, receiver, stop, reader, backlog: Arc::new(RecordsFound::default()) }
}

/// A source that stays behind forever (it never reports having caught up)
/// and then goes quiet: the documents its full batches deferred are rendered
/// once they have waited the longest they may, while the run goes on.
#[tokio::test]
async fn deferred_documents_are_rendered_when_their_wait_is_up_even_if_the_source_never_catches_up() {
    let projection = Projection::new().await;
    let drafts = vec![party("PTY-1", "Ada Adler", T0), work("LCC-1", "PTY-1", T0 + 1), published("LCC-1", T0 + 2)];
    let (events, source_id) = read_events(&projection.write("events", drafts, 10));
    let event_count = events.len();
    let feed = scripted_feed(source_id.clone(), events.into_iter().map(SourceMessage::Event).collect());
    let letters = DeadLetterFile::open(&projection.directory.path().join("letters.jsonl")).expect("dead letters");
    let options = RunOptions {
        // One full batch: the source is behind, so its documents wait.
        batch_size: event_count,
        linger: Duration::from_secs(3600),
        render_deferral: RenderDeferral {
            max_documents: 1_000,
            max_wait: Duration::from_millis(200),
            ..RenderDeferral::DEFAULT
        },
        ..RunOptions::default()
    };
    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    let store: Arc<dyn Store> = Arc::new(projection.store.clone());
    let observer = Arc::new(NoObserver);
    let run = tokio::spawn(run(store, ModelVersion(1), feed, Box::new(letters), observer, options, async {
        let _ = stopped.await;
    }));

    let mut rendered = None;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        rendered = projection.store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read");
        if rendered.is_some() {
            break;
        }
    }
    assert!(rendered.is_some(), "the deferred documents were rendered while the run went on");
    assert!(!run.is_finished());
    // Committed in the documents' transaction; a pooled reader may serve a
    // snapshot up to 10 ms old until the writer has noted its write.
    let mut checkpoints = Vec::new();
    for _ in 0..200 {
        checkpoints = projection.store.checkpoints(ModelVersion(1), &source_id).await.expect("checkpoints");
        if !checkpoints.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!checkpoints.is_empty(), "released with the documents");
    shutdown.send(()).expect("the run waits");
    let totals = run.await.expect("task").expect("run");
    assert_eq!(totals.applied, 3);
    assert_eq!(totals.batches, 2, "one batch of events, one of its deferred documents");
}

/// Three works deferred by one full batch, rendered two documents to a write.
#[tokio::test]
async fn deferred_documents_are_rendered_no_more_than_the_bound_to_a_write() {
    let projection = Projection::new().await;
    let mut drafts = vec![party("PTY-1", "Ada Adler", T0)];
    for (index, id) in ["LCC-1", "LCC-2", "LCC-3"].into_iter().enumerate() {
        let at = T0 + 10 * (index as i64 + 1);
        drafts.extend([work(id, "PTY-1", at), published(id, at + 1)]);
    }
    let (events, source_id) = read_events(&projection.write("events", drafts, 10));
    let event_count = events.len();
    let messages = events.into_iter().map(SourceMessage::Event).chain([SourceMessage::CaughtUp]).collect();
    let feed = scripted_feed(source_id, messages);
    let letters = DeadLetterFile::open(&projection.directory.path().join("letters.jsonl")).expect("dead letters");
    let options = RunOptions {
        // One full batch: the source is behind, so its documents wait.
        batch_size: event_count,
        linger: Duration::from_secs(3600),
        exit_when_caught_up: true,
        render_deferral: RenderDeferral {
            max_documents: 1_000,
            max_wait: Duration::from_secs(3600),
            max_documents_per_write: 2,
        },
        ..RunOptions::default()
    };
    let store: Arc<dyn Store> = Arc::new(projection.store.clone());
    let totals = run(store, ModelVersion(1), feed, Box::new(letters), Arc::new(NoObserver), options, async {
        std::future::pending::<()>().await;
    })
    .await
    .expect("run");
    assert_eq!(totals.applied, 7);
    assert_eq!(totals.batches, 3, "one batch of events, then two writes of two documents and of one");
    for id in ["LCC-1", "LCC-2", "LCC-3"] {
        let profile = projection.store.document(DocumentKind::RightsProfile, id).await.expect("read");
        assert!(profile.is_some(), "{id} rendered");
    }
}

/// A source that is briefly slower than the loop, without having caught up:
/// the batch the linger cuts keeps the documents waiting, and the source's
/// word that it has caught up renders them.
#[tokio::test]
async fn a_linger_cut_keeps_documents_waiting_until_the_source_says_it_has_caught_up() {
    let projection = Projection::new().await;
    let (mut events, source_id) = read_events(&projection.write("events", published_work_with_its_author(), 10));
    let last = events.pop().expect("four events");
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    let stop = Arc::new(AtomicBool::new(false));
    let reader_stop = Arc::clone(&stop);
    let reader = std::thread::spawn(move || {
        while !reader_stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let feed = SourceFeed { source_id, receiver, stop, reader, backlog: Arc::new(RecordsFound::default()) };
    let letters = DeadLetterFile::open(&projection.directory.path().join("letters.jsonl")).expect("dead letters");
    let options = RunOptions {
        // The first three events fill a batch: the source is behind.
        batch_size: events.len(),
        linger: Duration::from_millis(20),
        exit_when_caught_up: true,
        render_deferral: RenderDeferral {
            max_documents: 1_000,
            max_wait: Duration::from_secs(3600),
            ..RenderDeferral::DEFAULT
        },
        ..RunOptions::default()
    };
    let store: Arc<dyn Store> = Arc::new(projection.store.clone());
    let committed = Arc::new(CommittedBatches::default());
    let observer = Arc::clone(&committed) as Arc<dyn BatchObserver>;
    let run = tokio::spawn(run(store, ModelVersion(1), feed, Box::new(letters), observer, options, async {
        std::future::pending::<()>().await;
    }));
    for event in events {
        sender.send(SourceMessage::Event(event)).await.expect("the loop receives");
    }
    sender.send(SourceMessage::Event(last)).await.expect("the loop receives");
    // The full batch, then the last event alone once the linger cut it.
    committed.wait_for(2).await;
    let read = |kind| projection.store.document(kind, "LCC-1");
    assert_eq!(read(DocumentKind::RightsProfile).await.expect("read"), None, "waiting past the linger cut");
    assert_eq!(projection.store.provenance("LCC-1").await.expect("provenance").len(), 3, "the states are written");

    sender.send(SourceMessage::CaughtUp).await.expect("the loop receives");
    drop(sender);
    let totals = run.await.expect("task").expect("run");
    assert_eq!(totals.applied, 4);
    assert!(read(DocumentKind::RightsProfile).await.expect("read").is_some(), "rendered once caught up");
}

/// Counts the batches the loop reports committed, so a test can wait for a
/// batch to be written instead of sleeping.
#[derive(Debug, Default)]
struct CommittedBatches {
    count: Mutex<u64>,
    changed: tokio::sync::Notify,
}

impl CommittedBatches {
    /// Waits until `count` batches have committed, for at most ten seconds.
    async fn wait_for(&self, count: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let changed = self.changed.notified();
            if *self.count.lock().expect("count") >= count {
                return;
            }
            let waited = tokio::time::timeout_at(deadline, changed).await;
            assert!(waited.is_ok(), "only {} of {count} batches committed", self.count.lock().expect("count"));
        }
    }
}

impl BatchObserver for CommittedBatches {
    fn batch_committed(&self, _: &CommittedBatch<'_>) {
        *self.count.lock().expect("count") += 1;
        self.changed.notify_waiters();
    }
}
