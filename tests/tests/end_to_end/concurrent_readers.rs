//! One writer and many readers, across processes: while the projector binary
//! writes, a reader in this process (its own connections, as another process
//! would have) reads without errors and only ever sees whole batches.

use std::time::Duration;

use end_to_end_tests::projector_command;
use projector::generate::{GenerateOptions, generate};
use read_model::{Audience, DocumentReads, SqliteStore, StoreError};

#[tokio::test]
async fn readers_in_another_process_read_while_the_projector_writes() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 4_000, seed: 17, events_per_segment: 2_000, sandbox: false };
    generate(&options, &events).expect("generate");
    let data = directory.path().join("data");

    let mut child = projector_command(&events, &data, 500).spawn().expect("projector starts");
    let mut reads = 0;
    let mut totals = Vec::new();
    let mut store = None;
    while child.try_wait().expect("wait").is_none() {
        if store.is_none() && data.join("catalog.sqlite").exists() {
            store = SqliteStore::open(&data).ok();
        }
        if let Some(store) = &store {
            match store.bulk_page(Audience::Production, 0, 50).await {
                Ok(page) => {
                    // Rows and total come from one snapshot: a page is never torn.
                    assert_eq!(page.rows.len() as u64, page.total.min(50));
                    totals.push(page.total);
                    reads += 1;
                }
                Err(StoreError::NoActiveModelVersion) => {}
                Err(error) => panic!("a read failed while the projector wrote: {error}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(child.wait().expect("exit").success());
    assert!(reads >= 10, "only {reads} reads overlapped the projection");
    let mut distinct = totals.clone();
    distinct.dedup();
    assert!(distinct.len() >= 3, "the reads must have seen the store mid-projection: {distinct:?}");
}
