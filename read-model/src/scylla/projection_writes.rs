//! The projector's reads and its batch write ([`ProjectionWrites`]): the
//! write protocol run through `version_cluster`, the feed's placement and
//! retention, and the bucket counts settled off the batch path.

use std::sync::Arc;

use async_trait::async_trait;

use super::ScyllaStore;
use super::change_feed::VersionFeed;
use super::notification_feed::NotificationFeed;
use super::reads::VersionReads;
use super::version_cluster::VersionCluster;
use super::write_protocol;
use crate::store::{
    AggregateKey, BatchWritten, Checkpoint, ModelVersion, PartyReferrer, ProjectionWrites, StoreError, StoredAggregate,
    WriteBatch,
};

/// Runs a read on a given version's statements.
macro_rules! on_version {
    ($store:expr, $version:expr, |$reads:ident| $body:expr) => {{
        let statements = $store.version_statements($version).await?;
        let $reads = VersionReads { session: &$store.inner.session, statements: &statements };
        $body.await
    }};
}

#[async_trait]
impl ProjectionWrites for ScyllaStore {
    async fn check_writer_settings(&self) -> Result<(), StoreError> {
        let cluster = self.inner.session.get_cluster_state();
        let datacenters = cluster.get_nodes_info().iter().filter_map(|node| node.datacenter.clone()).collect();
        match self.inner.settings.writer_problem(&datacenters) {
            Some(problem) => Err(StoreError::Misconfigured(problem)),
            None => Ok(()),
        }
    }

    async fn aggregates(
        &self,
        version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        on_version!(self, version, |reads| reads.aggregates(keys))
    }

    async fn party_referrers(
        &self,
        version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        on_version!(self, version, |reads| reads.party_referrers(party_ids))
    }

    async fn checkpoints(&self, version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        on_version!(self, version, |reads| reads.checkpoints(source))
    }

    /// Writes carry their write versions as timestamps: retries and racing
    /// projectors can deliver them out of order.
    fn orders_writes_by_version(&self) -> bool {
        true
    }

    /// Writes the batch by the write protocol (see `write_protocol`), which
    /// checks the read set after writing: without transactions a check
    /// before writing could be overtaken.
    async fn apply_batch(&self, version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError> {
        let statements = self.version_statements(version).await?;
        let now_ms = self.inner.clock.unix_ms();
        let placement = self.feed_placement(&batch, now_ms);
        let feed = VersionFeed { session: &self.inner.session, statements: &statements };
        let removed = match placement.retention_cutoff {
            Some(cutoff) => feed.remove_superseded(&batch.bulk_rows, cutoff).await?,
            None => None,
        };
        let cluster =
            VersionCluster { session: &self.inner.session, statements: &statements, clock: &self.inner.clock };
        let written =
            write_protocol::write_batch(&cluster, &self.inner.recounts, &batch, placement.first_sequence).await;
        // Whatever landed of the documents, none is served as it was before.
        self.forget_written(version, &batch);
        let written = written?;
        let notifications = NotificationFeed { session: &self.inner.session, statements: &statements };
        self.sweep_feed(&feed, &notifications, removed, placement.retention_cutoff, now_ms).await?;
        Ok(written)
    }

    /// Counts the bulk buckets whose counts batches left to count.
    async fn settle(&self, version: ModelVersion) -> Result<(), StoreError> {
        let statements = self.version_statements(version).await?;
        let cluster =
            VersionCluster { session: &self.inner.session, statements: &statements, clock: &self.inner.clock };
        self.inner.recounts.settle(&cluster).await
    }
}
