//! Two SQLite stores opened on one directory, as two projector processes
//! sharing the embedded store: the commit mark lets a batch skip the
//! read-set check only while nobody else has written.

use std::sync::Arc;

use read_model::documents::DocumentKind;
use read_model::{
    AggregateKey, DocumentWrite, ModelVersion, ModelVersions, PartyReferrer, ProjectionWrites, ReadInput, ReadSet,
    SqliteStore, StoreError, StoredAggregate, WriteBatch, WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);

fn party() -> AggregateKey {
    AggregateKey { topic: "parties".into(), id: "PTY-1".into() }
}

fn party_at(version: u64) -> Arc<WriteBatch> {
    let aggregates = vec![(party(), StoredAggregate { version, state: b"party".to_vec() })];
    Arc::new(WriteBatch { aggregates, ..WriteBatch::default() })
}

/// A work document rendered from the party at `version`, read after `read_after`.
fn rendered_from_party_at(version: u64, read_after: Option<read_model::CommitMark>) -> Arc<WriteBatch> {
    Arc::new(WriteBatch {
        documents: vec![DocumentWrite {
            kind: DocumentKind::RightsProfile,
            key: "LCC-1".into(),
            body: Some(format!("{{\"party\":{version}}}").into_bytes()),
            version: WriteVersion(version),
        }],
        read_set: ReadSet {
            documents: vec![PartyReferrer::Work("LCC-1".into())],
            inputs: vec![ReadInput { key: party(), version, written: None, dependents: vec![0] }],
            changed_parties: Vec::new(),
            read_after,
        },
        ..WriteBatch::default()
    })
}

#[tokio::test]
async fn a_write_by_another_process_since_the_reads_forces_the_check() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let first = SqliteStore::open(directory.path()).expect("open");
    first.migrate().await.expect("migrate");
    first.create_model_version(V1).await.expect("create");
    let second = SqliteStore::open(directory.path()).expect("open a second time");

    let mark = first.apply_batch(V1, party_at(4)).await.expect("write").mark;
    assert!(mark.is_some(), "SQLite gives a commit mark");
    second.apply_batch(V1, party_at(5)).await.expect("the other process renames the party");

    let refused = first.apply_batch(V1, rendered_from_party_at(4, mark)).await;
    assert!(matches!(refused, Err(StoreError::WriteConflict(_))), "{refused:?}");
    let written = first.apply_batch(V1, rendered_from_party_at(5, None)).await.expect("rendered again");
    assert!(written.stale.is_empty());
}

#[tokio::test]
async fn while_nobody_else_writes_the_mark_skips_the_check() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(directory.path()).expect("open");
    store.migrate().await.expect("migrate");
    store.create_model_version(V1).await.expect("create");
    let first = store.apply_batch(V1, party_at(4)).await.expect("write").mark;
    let second = store.apply_batch(V1, party_at(5)).await.expect("write").mark;
    assert_eq!(first, second, "this process's own commits leave the mark as it was");

    // The read set is out of date, but only this process wrote since the
    // mark: a batch pipelined behind this process's own write overlays it,
    // so the check is skipped and the batch is written as it is.
    let written = store.apply_batch(V1, rendered_from_party_at(4, second)).await.expect("no check");
    assert!(written.stale.is_empty());
    let refused = store.apply_batch(V1, rendered_from_party_at(4, None)).await;
    assert!(matches!(refused, Err(StoreError::WriteConflict(_))), "without a mark it is checked: {refused:?}");
}
