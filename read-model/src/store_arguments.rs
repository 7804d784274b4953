//! The command-line choice of backend, shared by every binary that opens
//! the read model, so that `--store`, `--data-dir` and the `--scylla-*`
//! flags mean the same in each (with `LCC_*` environment fallbacks).
//!
//! Defaults work on one machine: the embedded SQLite store in `./data`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scylla::statement::Consistency;

use crate::scylla::{ScyllaSettings, ScyllaStore, parse_consistency};
use crate::sqlite::{DEFAULT_DOCUMENT_CACHE_BYTES, SqliteStore};
use crate::store::{Store, StoreError};

/// Which backend holds the read model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The embedded SQLite store in `--data-dir`.
    Sqlite,
    /// A ScyllaDB cluster at `--scylla-nodes`.
    Scylla,
}

#[derive(Debug, Clone, clap::Args)]
pub struct StoreArguments {
    /// Which backend holds the read model.
    #[arg(long = "store", env = "LCC_STORE", value_enum, default_value = "sqlite")]
    pub backend: Backend,
    /// Directory of the embedded SQLite store, and of the files kept beside
    /// any store (API keys, dead-letter files).
    #[arg(long, env = "LCC_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Memory for documents read from the store, in MiB, dropped when a
    /// batch changes them (on ScyllaDB, when the batch's notifications are
    /// read: a tenth of a second later, up to a second on a busy cluster);
    /// 0 turns the cache off. Only the query API reads documents, so only it
    /// fills the cache.
    #[arg(long, env = "LCC_DOCUMENT_CACHE_MIB", default_value_t = DEFAULT_DOCUMENT_CACHE_BYTES >> 20)]
    pub document_cache_mib: u64,
    /// ScyllaDB contact points, comma-separated `host:port`.
    #[arg(long, env = "LCC_SCYLLA_NODES", value_delimiter = ',', default_value = "127.0.0.1:9042")]
    pub scylla_nodes: Vec<String>,
    /// The catalog keyspace; model version N lives in `<keyspace>_v<N>`.
    #[arg(long, env = "LCC_SCYLLA_KEYSPACE", default_value = "rights")]
    pub scylla_keyspace: String,
    /// Consistency of every read and write.
    #[arg(long, env = "LCC_SCYLLA_CONSISTENCY", default_value = "LOCAL_QUORUM", value_parser = parse_consistency)]
    pub scylla_consistency: Consistency,
    /// The datacenter to use; by default every node is local.
    #[arg(long, env = "LCC_SCYLLA_LOCAL_DATACENTER")]
    pub scylla_local_datacenter: Option<String>,
    /// Replicas per datacenter of the keyspaces `migrate` creates (3 in production).
    #[arg(long, env = "LCC_SCYLLA_REPLICATION_FACTOR", default_value_t = 1)]
    pub scylla_replication_factor: u32,
    /// Client-side timeout of one request, in milliseconds.
    #[arg(long, env = "LCC_SCYLLA_REQUEST_TIMEOUT_MS", default_value_t = 5_000)]
    pub scylla_request_timeout_ms: u64,
    /// How long a read waits before asking a second replica too, in milliseconds.
    #[arg(long, env = "LCC_SCYLLA_SPECULATIVE_DELAY_MS", default_value_t = 50)]
    pub scylla_speculative_delay_ms: u64,
    /// User name, when the cluster requires authentication.
    #[arg(long, env = "LCC_SCYLLA_USER", requires = "scylla_password")]
    pub scylla_user: Option<String>,
    /// Password of `--scylla-user`.
    #[arg(long, env = "LCC_SCYLLA_PASSWORD", hide_env_values = true)]
    pub scylla_password: Option<String>,
}

impl StoreArguments {
    /// The ScyllaDB settings these arguments describe.
    pub fn scylla_settings(&self) -> ScyllaSettings {
        let mut settings = ScyllaSettings::new(self.scylla_nodes.clone());
        settings.keyspace = self.scylla_keyspace.clone();
        settings.consistency = self.scylla_consistency;
        settings.local_datacenter = self.scylla_local_datacenter.clone();
        settings.replication_factor = self.scylla_replication_factor;
        settings.request_timeout = Duration::from_millis(self.scylla_request_timeout_ms);
        settings.speculative_delay = Duration::from_millis(self.scylla_speculative_delay_ms);
        settings.credentials = self.scylla_user.clone().zip(self.scylla_password.clone());
        settings.document_cache_bytes = self.document_cache_mib.saturating_mul(1 << 20);
        settings
    }

    /// Where the read model is, for log lines and operator output.
    pub fn describe(&self) -> String {
        match self.backend {
            Backend::Sqlite => format!("SQLite store in {}", self.data_dir.display()),
            Backend::Scylla => {
                format!("ScyllaDB keyspace {} at {}", self.scylla_keyspace, self.scylla_nodes.join(","))
            }
        }
    }

    /// Opens the store once. A ScyllaDB cluster that cannot be reached is `Unavailable`.
    pub async fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match self.backend {
            Backend::Sqlite => Arc::new(SqliteStore::open_with_document_cache(
                &self.data_dir,
                self.document_cache_mib.saturating_mul(1 << 20),
            )?),
            Backend::Scylla => Arc::new(ScyllaStore::connect(self.scylla_settings()).await?),
        })
    }

    /// Opens the store, waiting for a cluster that cannot be reached yet
    /// (retrying with a doubling pause of up to 30 s), so that a service
    /// started before its database waits instead of exiting and restarting.
    /// A local SQLite directory that cannot be opened will not heal by
    /// waiting, so that fails at once.
    pub async fn open_waiting(&self) -> Result<Arc<dyn Store>, StoreError> {
        let mut pause = Duration::from_millis(500);
        loop {
            match self.open().await {
                Err(StoreError::Unavailable(reason)) if self.backend == Backend::Scylla => {
                    tracing::warn!(store = %self.describe(), %reason, retry_in = ?pause, "the store is unavailable");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(30));
                }
                opened => return opened,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        store: StoreArguments,
    }

    #[test]
    fn the_default_is_the_embedded_store() {
        let arguments = Command::parse_from(["test"]).store;
        assert_eq!(arguments.backend, Backend::Sqlite);
        assert_eq!(arguments.data_dir, PathBuf::from("data"));
        assert_eq!(arguments.document_cache_mib, 256);
        assert_eq!(arguments.describe(), "SQLite store in data");
    }

    #[test]
    fn scylla_flags_become_settings() {
        let arguments = Command::parse_from([
            "test",
            "--store",
            "scylla",
            "--scylla-nodes",
            "a:9042,b:9042",
            "--scylla-consistency",
            "quorum",
            "--scylla-local-datacenter",
            "eu-west",
            "--scylla-user",
            "api",
            "--scylla-password",
            "secret",
        ])
        .store;
        let settings = arguments.scylla_settings();
        assert_eq!(settings.nodes, ["a:9042", "b:9042"]);
        assert_eq!(settings.consistency, Consistency::Quorum);
        assert_eq!(settings.local_datacenter.as_deref(), Some("eu-west"));
        assert_eq!(settings.credentials, Some(("api".into(), "secret".into())));
        assert_eq!(arguments.describe(), "ScyllaDB keyspace rights at a:9042,b:9042");
    }

    #[tokio::test]
    async fn a_sqlite_directory_that_cannot_be_opened_fails_at_once_instead_of_waiting() {
        let directory = tempfile::tempdir().expect("tempdir");
        let file = directory.path().join("not-a-directory");
        std::fs::write(&file, b"x").expect("write");
        let arguments = Command::parse_from(["test", "--data-dir", file.to_str().expect("utf-8")]).store;
        assert!(matches!(arguments.open_waiting().await, Err(StoreError::Unavailable(_))));
    }

    #[test]
    fn an_unknown_consistency_is_refused_at_parse_time() {
        let parsed = Command::try_parse_from(["test", "--scylla-consistency", "MOSTLY"]);
        assert!(parsed.is_err());
    }
}
