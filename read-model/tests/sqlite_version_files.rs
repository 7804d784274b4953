//! A reading process follows a model version that another process drops
//! and creates again under the same number: it must read the new file, not
//! the removed one its connections (and document cache) still hold open.

use std::sync::Arc;

use read_model::documents::DocumentKind;
use read_model::{
    DocumentReads, DocumentWrite, ModelVersion, ModelVersions, ProjectionWrites, SqliteStore, WriteBatch, WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);
const V2: ModelVersion = ModelVersion(2);

async fn write(store: &SqliteStore, version: ModelVersion, text: &str) {
    let documents = vec![DocumentWrite {
        kind: DocumentKind::RightsProfile,
        key: "LCC-1".into(),
        body: Some(text.as_bytes().to_vec()),
        version: WriteVersion(1),
    }];
    store.apply_batch(version, Arc::new(WriteBatch { documents, ..WriteBatch::default() })).await.expect("write");
}

async fn read(store: &SqliteStore) -> String {
    let body = store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read").expect("present");
    String::from_utf8(body).expect("utf-8")
}

/// Waits until `api` reads `expected`: a reader trusts its idea of the
/// active version for 500 ms, then follows the catalog.
async fn wait_until_read(api: &SqliteStore, expected: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = read(api).await;
        if found == expected {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the reader still reads {found:?}, not {expected:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn a_version_created_anew_is_read_from_its_new_file(api_cache_bytes: u64) {
    let directory = tempfile::tempdir().expect("temporary directory");
    let projector = SqliteStore::open(directory.path()).expect("open");
    projector.migrate().await.expect("migrate");
    for (version, text) in [(V1, "version 1"), (V2, "version 2, first file")] {
        projector.create_model_version(version).await.expect("create");
        write(&projector, version, text).await;
    }
    projector.activate_model_version(V2).await.expect("activate 2");
    let api = SqliteStore::open_with_document_cache(directory.path(), api_cache_bytes).expect("open again");
    assert_eq!(read(&api).await, "version 2, first file");
    assert_eq!(read(&api).await, "version 2, first file");

    projector.activate_model_version(V1).await.expect("activate 1");
    wait_until_read(&api, "version 1").await;
    projector.drop_model_version(V2).await.expect("drop 2");
    projector.create_model_version(V2).await.expect("create 2 again");
    write(&projector, V2, "version 2, second file").await;
    projector.activate_model_version(V2).await.expect("activate 2 again");
    wait_until_read(&api, "version 2, second file").await;
}

#[tokio::test]
async fn a_version_created_anew_is_read_from_its_new_file_with_the_document_cache() {
    a_version_created_anew_is_read_from_its_new_file(1 << 20).await;
}

#[tokio::test]
async fn a_version_created_anew_is_read_from_its_new_file_without_the_document_cache() {
    a_version_created_anew_is_read_from_its_new_file(0).await;
}
