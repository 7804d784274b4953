//! Where a test's programs keep their data: the embedded default (a data
//! directory holding the SQLite store) or a keyspace of its own on the
//! shared CQL cluster (with a data directory beside it for the files every
//! store keeps: dead letters, snapshots, signing keys). A test written once
//! against [`TestStore`] runs on both backends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cql::{Cluster, fresh_keyspace};

/// A store a test's programs use, and what the test reads of it directly.
pub trait TestStore {
    /// Adds the flags that point one of our binaries at this store to `command`.
    fn add_store_flags(&self, command: &mut Command);

    /// The documents and states of model version `version`, for comparing
    /// two stores over the same events (see [`crate::dump_model_version`]).
    fn dump_model_version(&self, version: u32) -> BTreeMap<String, Vec<String>>;

    /// The model versions the store holds, in order.
    fn model_versions(&self) -> Vec<u32>;
}

impl TestStore for Path {
    fn add_store_flags(&self, command: &mut Command) {
        command.arg("--data-dir").arg(self);
    }

    fn dump_model_version(&self, version: u32) -> BTreeMap<String, Vec<String>> {
        crate::dump_model_version(self, version)
    }

    fn model_versions(&self) -> Vec<u32> {
        let mut versions: Vec<u32> = std::fs::read_dir(self)
            .expect("the data directory lists")
            .filter_map(|entry| {
                let name = entry.expect("an entry").file_name().into_string().ok()?;
                name.strip_prefix("model-v")?.strip_suffix(".sqlite")?.parse().ok()
            })
            .collect();
        versions.sort_unstable();
        versions
    }
}

impl TestStore for PathBuf {
    fn add_store_flags(&self, command: &mut Command) {
        self.as_path().add_store_flags(command);
    }

    fn dump_model_version(&self, version: u32) -> BTreeMap<String, Vec<String>> {
        self.as_path().dump_model_version(version)
    }

    fn model_versions(&self) -> Vec<u32> {
        self.as_path().model_versions()
    }
}

/// A keyspace of a test's own on the shared CQL cluster, dropped with its
/// model versions when the test ends.
#[derive(Debug)]
pub struct CqlStore {
    pub data: PathBuf,
    pub keyspace: String,
    cluster: Cluster,
}

impl CqlStore {
    /// A fresh keyspace named after `purpose`, with its files in `data`.
    pub fn new(data: &Path, purpose: &str) -> CqlStore {
        CqlStore { data: data.to_path_buf(), keyspace: fresh_keyspace(purpose), cluster: Cluster::shared() }
    }
}

impl TestStore for CqlStore {
    fn add_store_flags(&self, command: &mut Command) {
        self.data.add_store_flags(command);
        self.cluster.store_arguments(command, &self.keyspace);
    }

    fn dump_model_version(&self, version: u32) -> BTreeMap<String, Vec<String>> {
        let mut dump = self.cluster.dump_model_version(&self.keyspace, version);
        // As on SQLite: checkpoints name the source, which two stores compared may not share.
        dump.remove("checkpoints");
        dump
    }

    fn model_versions(&self) -> Vec<u32> {
        let prefix = format!("{}_v", self.keyspace);
        let names = self.cluster.keyspaces_named_after(&self.keyspace);
        let mut versions: Vec<u32> = names.iter().filter_map(|name| name.strip_prefix(&prefix)?.parse().ok()).collect();
        versions.sort_unstable();
        versions
    }
}

impl Drop for CqlStore {
    fn drop(&mut self) {
        self.cluster.drop_keyspaces(&self.keyspace);
    }
}
