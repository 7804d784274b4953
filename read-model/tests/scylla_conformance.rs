//! The store conformance suite against the CQL backend, on the cluster
//! `SCYLLA_NODES` names (`host:port`, comma-separated): the Apache Cassandra
//! node `scripts/test.sh` starts for the run, or one's own ScyllaDB. Without
//! it every case fails: a backend that was not tested must not pass. Each
//! case gets keyspaces of its own, dropped afterwards, so the suite may share
//! a cluster with anything else.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use read_model::clock::Clock;
use read_model::conformance::StoreUnderTest;
use read_model::{ModelVersions, ScyllaSettings, ScyllaStore};

async fn fresh_scylla_store(clock: Clock) -> StoreUnderTest {
    let nodes = std::env::var("SCYLLA_NODES")
        .ok()
        .filter(|nodes| !nodes.trim().is_empty())
        .expect("SCYLLA_NODES names the CQL cluster the conformance suite runs on (scripts/test.sh starts one)");
    static CASES: AtomicU32 = AtomicU32::new(0);
    let started = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis() % 1_000_000);
    let mut settings = ScyllaSettings::new(nodes.split(',').map(|node| node.trim().to_owned()).collect());
    settings.keyspace =
        format!("conformance_{}_{started}_{}", std::process::id(), CASES.fetch_add(1, Ordering::Relaxed));
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
