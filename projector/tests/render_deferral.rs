//! Deferred rendering: what a deferred batch writes, and how documents it
//! left unrendered are rendered after a crash that lost them.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::generate::world::Draft;
use projector::projection::batch::{Rendering, project_batch};
use projector::render_deferral::RenderDeferral;
use projector::runner::{NoObserver, RunOptions, SourceFeed, SourceMessage, run};
use projector::source::SourcedEvent;
use projector::source::file::FileSource;
use read_model::documents::{BulkRow, RightType, RightsProfile};
use read_model::{Audience, DocumentKind, DocumentReads, ModelVersion, ProjectionWrites, Store};
use support::{Projection, T0, party, published, right, rights, work};

/// Every event of the files in `events`, in file-name order, and the source's id.
fn read_events(events: &std::path::Path) -> (Vec<SourcedEvent>, String) {
    let source = FileSource::new(events, Arc::new(Contract::load().expect("contract")));
    let mut read = Vec::new();
    for name in source.files().expect("files") {
        source.read_file(&name, 0, &mut |event| {
            read.push(event);
            true
        });
    }
    (read, source.source_id().to_owned())
}

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

/// A source that stays behind forever (it never reports having caught up)
/// and then goes quiet: the documents its full batches deferred are rendered
/// once they have waited the longest they may, while the run goes on.
#[tokio::test]
async fn deferred_documents_are_rendered_when_their_wait_is_up_even_if_the_source_never_catches_up() {
    let projection = Projection::new().await;
    let drafts = vec![party("PTY-1", "Ada Adler", T0), work("LCC-1", "PTY-1", T0 + 1), published("LCC-1", T0 + 2)];
    let (events, source_id) = read_events(&projection.write("events", drafts, 10));
    let event_count = events.len();
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    let stop = Arc::new(AtomicBool::new(false));
    let reader_stop = Arc::clone(&stop);
    let reader = std::thread::spawn(move || {
        for event in events {
            sender.blocking_send(SourceMessage::Event(event)).expect("the loop receives");
        }
        while !reader_stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let feed = SourceFeed { source_id: source_id.clone(), receiver, stop, reader };
    let letters = DeadLetterFile::open(&projection.directory.path().join("letters.jsonl")).expect("dead letters");
    let options = RunOptions {
        // One full batch: the source is behind, so its documents wait.
        batch_size: event_count,
        linger: Duration::from_secs(3600),
        exit_when_caught_up: false,
        poll_interval: Duration::from_millis(10),
        render_deferral: RenderDeferral { max_documents: 1_000, max_wait: Duration::from_millis(200) },
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
    let checkpoints = projection.store.checkpoints(ModelVersion(1), &source_id).await.expect("checkpoints");
    assert!(!checkpoints.is_empty(), "released with the documents");
    shutdown.send(()).expect("the run waits");
    let totals = run.await.expect("task").expect("run");
    assert_eq!(totals.applied, 3);
    assert_eq!(totals.batches, 2, "one batch of events, one of its deferred documents");
}
