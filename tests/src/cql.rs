//! The CQL side of the end-to-end tests: the cluster `SCYLLA_NODES` names
//! (the Apache Cassandra node `scripts/test.sh` starts for the run, or one's
//! own ScyllaDB), clusters of a test's own started by `scripts/cassandra.sh`,
//! keyspaces of a test's own, and a dump of a keyspace's tables to compare
//! two stores with.
//!
//! The dump reads through the `scylla` driver's generic rows, not through
//! the backend under test, so a value the backend binds to the wrong column
//! shows as a difference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures_util::StreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::value::Row;

use crate::KillOnDrop;
use crate::{binary, spawn_listening};

/// The contact points of the cluster the CQL tests share.
pub fn nodes() -> String {
    std::env::var("SCYLLA_NODES")
        .ok()
        .filter(|nodes| !nodes.trim().is_empty())
        .expect("SCYLLA_NODES names the CQL cluster the production path runs on (scripts/test.sh starts one)")
}

/// A CQL cluster: the shared one, or Apache Cassandra nodes a test started
/// for itself (stopped when dropped).
#[derive(Debug)]
pub struct Cluster {
    nodes: String,
    /// How many nodes keep each row: as many as a production cluster keeps, up to three.
    replication_factor: usize,
    /// The client-side timeout of one request, in milliseconds.
    request_timeout_ms: u64,
    /// Where `scripts/cassandra.sh` keeps the nodes of a test's own cluster.
    directory: Option<PathBuf>,
}

impl Cluster {
    /// The cluster the CQL tests share ([`nodes`]).
    pub fn shared() -> Cluster {
        // The shared cluster may be one's own ScyllaDB of any size: one replica is enough for tests.
        // Two cores run the nodes, the projector and the test: leave room for a slow moment.
        Cluster { nodes: nodes(), replication_factor: 1, request_timeout_ms: 30_000, directory: None }
    }

    /// Starts `count` Cassandra nodes of a cluster of their own under
    /// `directory`, on 127.0.0.`first` and the addresses after it, each
    /// ready for CQL.
    pub fn start(directory: &Path, count: usize, first: u8) -> Cluster {
        let path = directory.to_str().expect("utf-8 path");
        let nodes =
            crate::engines::engine_script("cassandra.sh", &["start", path, &count.to_string(), &first.to_string()]);
        let replication_factor = count.min(3);
        Cluster { nodes, replication_factor, request_timeout_ms: 30_000, directory: Some(directory.to_path_buf()) }
    }

    /// This cluster, with a client-side request timeout of `milliseconds`.
    pub fn with_request_timeout(mut self, milliseconds: u64) -> Cluster {
        self.request_timeout_ms = milliseconds;
        self
    }

    /// The contact points, comma-separated.
    pub fn nodes(&self) -> &str {
        &self.nodes
    }

    /// Kills the node on 127.0.0.`node` at once (SIGKILL).
    pub fn kill(&self, node: u8) {
        crate::engines::engine_script("cassandra.sh", &["kill", self.own_directory(), &node.to_string()]);
    }

    /// Starts the node on 127.0.0.`node` again on its data, ready for CQL.
    pub fn restart(&self, node: u8) {
        crate::engines::engine_script("cassandra.sh", &["restart", self.own_directory(), &node.to_string()]);
    }

    /// Where the node on 127.0.0.`node` logs, for a failing test to print.
    pub fn log(&self, node: u8) -> PathBuf {
        PathBuf::from(self.own_directory()).join(format!("node-{node}")).join("system.log")
    }

    fn own_directory(&self) -> &str {
        let directory = self.directory.as_deref().expect("only a test's own cluster is killed or restarted");
        directory.to_str().expect("utf-8 path")
    }

    /// The store flags of our binaries for keyspace `keyspace` on this cluster.
    pub fn store_arguments(&self, command: &mut Command, keyspace: &str) {
        command.args(["--store", "scylla", "--scylla-nodes", &self.nodes, "--scylla-keyspace", keyspace]);
        command.args(["--scylla-replication-factor", &self.replication_factor.to_string()]);
        command.args(["--scylla-request-timeout-ms", &self.request_timeout_ms.to_string()]);
    }

    /// Issues a production key with `scopes` and a rate limit no test reaches
    /// on the store `keyspace`; returns the key.
    pub fn issue_key(&self, keyspace: &str, scopes: &[&str]) -> String {
        let mut command = Command::new(binary("query-api"));
        command.arg("keys");
        self.store_arguments(&mut command, keyspace);
        let output = command
            .args(["issue", "--partner", "CQL tests", "--rate-limit", "1000000000", "--scopes", &scopes.join(",")])
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit())
            .output()
            .expect("query-api keys runs");
        assert!(output.status.success(), "query-api keys issue on {keyspace} failed");
        String::from_utf8(output.stdout).expect("utf-8").lines().next().expect("the key").trim().to_owned()
    }

    /// `query-api serve` over the store `keyspace`, on port 0, with files in
    /// `data`; the server and its listeners' addresses (`public`, `admin`).
    pub fn serve(&self, keyspace: &str, data: &Path) -> (KillOnDrop, BTreeMap<String, String>) {
        let mut command = Command::new(binary("query-api"));
        command.args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]);
        command.args(["--snapshot-interval-minutes", "0"]).arg("--data-dir").arg(data);
        self.store_arguments(&mut command, keyspace);
        let (child, listening) = spawn_listening(command.env("RUST_LOG", "warn"));
        (KillOnDrop(child), listening)
    }

    /// Every row of every table of `keyspace` but those in `left_out`, each
    /// rendered as text and sorted, by table.
    pub fn dump_keyspace(&self, keyspace: &str, left_out: &[&str]) -> BTreeMap<String, Vec<String>> {
        runtime().block_on(dump(&self.nodes, keyspace, left_out))
    }

    /// The documents and states of model version 1 of the store `keyspace`,
    /// as two runs over the same events must leave them: the change feed's
    /// tables and the notifications are left out (a replayed or retried batch
    /// appends its changes again, and the feeds record commit order, time and
    /// batch boundaries, as does what was last notified), and so are bucket
    /// counts of zero (a bucket without a count row reads as empty, so a
    /// bucket that held rows and lost them again, counted 0, and one whose
    /// rows a crash kept from being counted before they went give the same
    /// pages).
    pub fn dump_documents(&self, keyspace: &str) -> BTreeMap<String, Vec<String>> {
        self.dump_model_version(keyspace, 1)
    }

    /// [`Cluster::dump_documents`] of model version `version`.
    pub fn dump_model_version(&self, keyspace: &str, version: u32) -> BTreeMap<String, Vec<String>> {
        let left_out = [
            "change_feed",
            "change_feed_days",
            "change_feed_heads",
            "change_feed_horizon",
            "notifications",
            "notification_days",
        ];
        let mut dump = self.dump_keyspace(&format!("{keyspace}_v{version}"), &left_out);
        if let Some(counts) = dump.get_mut("bulk_bucket_counts") {
            counts.retain(|row| !row.ends_with("Some(BigInt(0))]"));
        }
        // What was last notified follows batch boundaries, as the notifications do.
        if let Some(states) = dump.get_mut("aggregates") {
            states.retain(|row| !row.contains("\"notified-"));
        }
        dump
    }

    /// How many bulk buckets of model version `version` of the store
    /// `keyspace` are marked: their stored row count waits for a recount.
    pub fn marked_buckets(&self, keyspace: &str, version: u32) -> usize {
        runtime().block_on(async {
            let session = session(&self.nodes).await;
            let query = format!("SELECT * FROM {keyspace}_v{version}.bulk_bucket_marks");
            let pager = session.query_iter(query, ()).await.expect("the marks read");
            pager.rows_stream::<Row>().expect("generic rows").count().await
        })
    }

    /// The model version keyspaces of the store `keyspace` (`<keyspace>_v<N>`).
    pub fn keyspaces_named_after(&self, keyspace: &str) -> Vec<String> {
        runtime().block_on(async {
            let session = session(&self.nodes).await;
            version_keyspaces(&session, keyspace).await
        })
    }

    /// Drops keyspace `keyspace` and the model version keyspaces named after it.
    pub fn drop_keyspaces(&self, keyspace: &str) {
        runtime().block_on(drop_all(&self.nodes, keyspace));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(directory) = &self.directory {
            crate::engines::stop_engine("cassandra.sh", directory);
        }
    }
}

/// A keyspace name no other test or run uses.
pub fn fresh_keyspace(purpose: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
    format!("{purpose}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// The store flags of our binaries for keyspace `keyspace` on the shared cluster.
pub fn store_arguments(command: &mut Command, keyspace: &str) {
    Cluster::shared().store_arguments(command, keyspace);
}

/// [`Cluster::drop_keyspaces`] on the shared cluster.
pub fn drop_keyspaces(keyspace: &str) {
    Cluster::shared().drop_keyspaces(keyspace);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

async fn session(nodes: &str) -> Session {
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

async fn dump(nodes: &str, keyspace: &str, left_out: &[&str]) -> BTreeMap<String, Vec<String>> {
    let session = session(nodes).await;
    let query = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?";
    let tables = schema_names(&session, query, (keyspace,)).await;
    assert!(!tables.is_empty(), "keyspace {keyspace} has no tables");
    let mut dump = BTreeMap::new();
    for table in tables {
        if left_out.contains(&table.as_str()) {
            continue;
        }
        let mut rows: Vec<String> = Vec::new();
        let pager = session.query_iter(format!("SELECT * FROM {keyspace}.{table}"), ()).await.expect("the table reads");
        let mut stream = pager.rows_stream::<Row>().expect("generic rows");
        while let Some(row) = stream.next().await {
            rows.push(format!("{:?}", row.expect("a row").columns));
        }
        rows.sort();
        dump.insert(table, rows);
    }
    dump
}

async fn version_keyspaces(session: &Session, keyspace: &str) -> Vec<String> {
    let mut names = schema_names(session, "SELECT keyspace_name FROM system_schema.keyspaces", ()).await;
    names.retain(|name| name.strip_prefix(keyspace).and_then(|rest| rest.strip_prefix("_v")).is_some());
    names
}

async fn drop_all(nodes: &str, keyspace: &str) {
    let session = session(nodes).await;
    for name in version_keyspaces(&session, keyspace).await.into_iter().chain([keyspace.to_owned()]) {
        session.query_unpaged(format!("DROP KEYSPACE IF EXISTS {name}"), ()).await.expect("drop");
    }
}
