//! The store conformance suite against the embedded SQLite backend. It always runs.

use std::sync::Arc;

use read_model::ModelVersions;
use read_model::SqliteStore;
use read_model::clock::Clock;
use read_model::conformance::StoreUnderTest;

async fn fresh_sqlite_store(clock: Clock) -> StoreUnderTest {
    let directory = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open_with_clock(directory.path(), 0, clock).expect("open store");
    store.migrate().await.expect("migrate");
    StoreUnderTest { store: Arc::new(store), guard: Box::new(directory), cleanup: None }
}

read_model::store_conformance_tests!(fresh_sqlite_store);
