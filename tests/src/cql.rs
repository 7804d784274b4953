//! The CQL side of the end-to-end tests: the cluster `SCYLLA_NODES` names
//! (the Apache Cassandra node `scripts/test.sh` starts for the run, or one's
//! own ScyllaDB), keyspaces of a test's own on it, and a dump of a
//! keyspace's tables to compare two stores with.
//!
//! The dump reads through the `scylla` driver's generic rows, not through
//! the backend under test, so a value the backend binds to the wrong column
//! shows as a difference.

use std::collections::BTreeMap;
use std::process::Command;

use futures_util::StreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::value::Row;

/// The contact points of the cluster the CQL tests run on.
pub fn nodes() -> String {
    std::env::var("SCYLLA_NODES")
        .ok()
        .filter(|nodes| !nodes.trim().is_empty())
        .expect("SCYLLA_NODES names the CQL cluster the production path runs on (scripts/test.sh starts one)")
}

/// A keyspace name no other test or run uses.
pub fn fresh_keyspace(purpose: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
    format!("{purpose}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// The store flags of our binaries for keyspace `keyspace` on [`nodes`].
pub fn store_arguments(command: &mut Command, keyspace: &str) {
    command.args(["--store", "scylla", "--scylla-nodes", &nodes(), "--scylla-keyspace", keyspace]);
    // Two cores run the node, the projector and the test: leave room for a slow moment.
    command.args(["--scylla-request-timeout-ms", "30000"]);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

async fn session() -> Session {
    let nodes = nodes();
    SessionBuilder::new().known_nodes(nodes.split(',').map(str::trim)).build().await.expect("the cluster answers")
}

/// The one text column of every row a schema query answers (names of tables or keyspaces).
async fn schema_names(
    session: &Session,
    query: &str,
    values: impl scylla::serialize::row::SerializeRow,
) -> Vec<String> {
    let rows = session.query_unpaged(query, values).await.expect("the schema reads");
    let rows = rows.into_rows_result().expect("rows");
    let names: Result<Vec<(String,)>, _> = rows.rows::<(String,)>().expect("names").collect();
    names.expect("names decode").into_iter().map(|(name,)| name).collect()
}

/// Every row of every table of `keyspace` but those in `left_out`, each
/// rendered as text and sorted, by table.
pub fn dump_keyspace(keyspace: &str, left_out: &[&str]) -> BTreeMap<String, Vec<String>> {
    runtime().block_on(async {
        let session = session().await;
        let query = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?";
        let tables = schema_names(&session, query, (keyspace,)).await;
        assert!(!tables.is_empty(), "keyspace {keyspace} has no tables");
        let mut dump = BTreeMap::new();
        for table in tables {
            if left_out.contains(&table.as_str()) {
                continue;
            }
            let mut rows: Vec<String> = Vec::new();
            let pager =
                session.query_iter(format!("SELECT * FROM {keyspace}.{table}"), ()).await.expect("the table reads");
            let mut stream = pager.rows_stream::<Row>().expect("generic rows");
            while let Some(row) = stream.next().await {
                rows.push(format!("{:?}", row.expect("a row").columns));
            }
            rows.sort();
            dump.insert(table, rows);
        }
        dump
    })
}

/// Drops keyspace `keyspace` and the model version keyspaces named after it.
pub fn drop_keyspaces(keyspace: &str) {
    runtime().block_on(async {
        let session = session().await;
        for name in schema_names(&session, "SELECT keyspace_name FROM system_schema.keyspaces", ()).await {
            if name == keyspace || name.starts_with(&format!("{keyspace}_v")) {
                session.query_unpaged(format!("DROP KEYSPACE IF EXISTS {name}"), ()).await.expect("drop");
            }
        }
    });
}
