//! Deferred rendering: what a deferred batch writes, and how documents it
//! left unrendered are rendered after a crash that lost them.

mod support;

use std::sync::Arc;

use projector::contract::Contract;
use projector::projection::batch::{Rendering, project_batch};
use projector::source::SourcedEvent;
use projector::source::file::FileSource;
use read_model::documents::{BulkRow, RightType, RightsProfile};
use read_model::{Audience, DocumentKind, DocumentReads, ModelVersion, ProjectionWrites};
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

#[tokio::test]
async fn a_deferred_batch_writes_states_and_indexes_but_no_document_and_no_checkpoint() {
    let projection = Projection::new().await;
    let drafts = vec![
        party("PTY-1", "Ada Adler", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        rights("LCC-1", T0 + 3, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
    ];
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
    let drafts = vec![
        party("PTY-1", "Ada Adler", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        rights("LCC-1", T0 + 3, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
    ];
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
