//! What the CQL backend's change feed does beyond the conformance suite, on
//! the cluster `SCYLLA_NODES` names: a change is served only once it has
//! settled, and until then a page that stops before it says so (`settling`),
//! which is what keeps the API from calling a reader caught up too soon.

use std::sync::Arc;
use std::time::Duration;

use read_model::change_feed::{ChangePage, ChangeQuery, ChangesRead};
use read_model::clock::Clock;
use read_model::{
    Audience, DocumentReads, KeyedWrite, ModelVersion, ModelVersions, ProjectionWrites, ScyllaStore, WriteBatch,
    WriteVersion,
};

const V1: ModelVersion = ModelVersion(1);
const SETTLE: Duration = Duration::from_secs(10);

async fn page(store: &ScyllaStore) -> ChangePage {
    let query = ChangeQuery {
        audience: Audience::Production,
        after: None,
        until_sequence: None,
        limit: 100,
        latest_only: false,
    };
    match store.changes(&query).await.expect("read") {
        ChangesRead::Page(page) => page,
        ChangesRead::Gone(gone) => panic!("the feed is gone: {gone:?}"),
    }
}

#[tokio::test]
async fn a_change_is_served_once_settled_and_a_page_before_then_says_it_is_settling() {
    let mut settings = read_model::conformance::cluster_settings("settling");
    settings.change_feed_settle = SETTLE;
    let clock = Clock::manual();
    let store = ScyllaStore::connect_with_clock(settings, clock.clone()).await.expect("the cluster answers");
    store.migrate().await.expect("migrate");
    store.create_model_version(V1).await.expect("create");
    store.activate_model_version(V1).await.expect("activate");

    let empty = page(&store).await;
    assert!(empty.items.is_empty() && !empty.settling, "an empty feed has nothing settling");
    let row = KeyedWrite { key: "LCC-A".into(), body: Some(b"a1".to_vec()), version: WriteVersion(1) };
    let batch = WriteBatch { bulk_rows: vec![row], ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");

    let fresh = page(&store).await;
    assert!(fresh.items.is_empty(), "a change committed a moment ago is not served yet");
    assert!(fresh.settling, "and the page says one is settling");
    clock.advance(SETTLE + Duration::from_secs(1));
    let settled = page(&store).await;
    assert_eq!(settled.items.len(), 1, "once settled, the change is served");
    assert!(!settled.settling, "and nothing is left settling");
    store.drop_all_keyspaces().await.expect("drop the test's keyspaces");
}
