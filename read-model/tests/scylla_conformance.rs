//! The store conformance suite against the CQL backend, on the cluster
//! `SCYLLA_NODES` names (`host:port`, comma-separated): the Apache Cassandra
//! node `scripts/test.sh` starts for the run, or one's own ScyllaDB. Without
//! it every case fails: a backend that was not tested must not pass. Each
//! case gets keyspaces of its own, dropped afterwards, so the suite may share
//! a cluster with anything else.

use std::sync::Arc;

use read_model::clock::Clock;
use read_model::conformance::StoreUnderTest;
use read_model::{ModelVersions, ScyllaStore};

async fn fresh_scylla_store(clock: Clock) -> StoreUnderTest {
    let mut settings = read_model::conformance::cluster_settings("conformance");
    // One client writes and reads: nothing to wait for before reading the feed.
    settings.change_feed_settle = std::time::Duration::ZERO;
    let store = ScyllaStore::connect_with_clock(settings, clock)
        .await
        .expect("SCYLLA_NODES is set, so the cluster must be reachable");
    store.migrate().await.expect("migrate a fresh keyspace");
    let cleanup_store = store.clone();
    let cleanup = async move {
        cleanup_store.drop_all_keyspaces().await.expect("drop the case's keyspaces");
    };
    StoreUnderTest { store: Arc::new(store), guard: Box::new(()), cleanup: Some(Box::pin(cleanup)) }
}

read_model::store_conformance_tests!(fresh_scylla_store);
