//! The projector's reads and its batch write ([`ProjectionWrites`]): state
//! reads through the copying readers, and each batch as one transaction on
//! Tokio's blocking pool (see `writes`).

use std::sync::Arc;

use async_trait::async_trait;

use super::SqliteStore;
use super::reads;
use super::state_reads;
use super::writes;
use crate::store::{
    AggregateKey, BatchWritten, Checkpoint, ModelVersion, PartyReferrer, ProjectionWrites, StoreError, StoredAggregate,
    WriteBatch,
};

#[async_trait]
impl ProjectionWrites for SqliteStore {
    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| state_reads::aggregates(connection, keys))
    }

    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| reads::party_referrers(connection, party_ids))
    }

    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.known_version_file(version)?.state_readers.with(|connection| reads::checkpoints(connection, source))
    }

    /// Batches commit in one serial order (see `writes`).
    fn orders_writes_by_version(&self) -> bool {
        false
    }

    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError> {
        let file = self.known_version_file(version)?;
        let clock = self.inner.clock.clone();
        tokio::task::spawn_blocking(move || {
            let stored = writes::with_stored_bodies(&batch)?;
            file.with_writer(|writer| writes::apply_batch(writer, &stored, clock.unix_ms()))
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("batch write task failed: {error}")))?
    }
}
