//! The ScyllaDB backend: the read model on a cluster, for when one machine
//! is not enough.
//!
//! Layout (`schemas/cql/`): a catalog keyspace names the model versions and
//! the active one; each version is a keyspace of its own, so a rebuild
//! writes a fresh keyspace while readers read the active one, and dropping a
//! version is dropping its keyspace. Every statement is prepared once per
//! keyspace and routed to a replica and shard that own its partition.
//!
//! What differs from the embedded backend, and why it is still correct:
//! there is no transaction across partitions, so a batch is written in
//! phases whose order a replay repairs, every write stamped with its version
//! (`write_protocol`, driven here through `version_cluster`); bulk bucket
//! counts are absolute values recounted after the rows change, off the
//! batch path, not counters, which a replay would double.
//!
//! It must not interpret documents, and it never writes a model version
//! without an explicit timestamp (see `schemas/cql/model.cql`).

mod bulk_pages;
mod catalog_clock;
mod change_feed;
mod errors;
mod execution;
#[cfg(feature = "conformance")]
pub mod model;
mod prepared_versions;
mod reads;
mod row_mapping;
pub mod schema;
mod session;
mod settings;
mod statements;
mod timestamps;
mod version_cluster;
pub mod write_protocol;

use std::sync::Arc;

use async_trait::async_trait;
use scylla::client::execution_profile::ExecutionProfileHandle;
use scylla::client::session::Session;
use tokio::sync::OnceCell;

use self::change_feed::{FeedPlacement, VersionFeed};
use self::errors::unavailable;
use self::execution::{Prepared, ddl_statement, execute, select};
use self::prepared_versions::PreparedVersions;
use self::reads::VersionReads;
use self::schema::{CATALOG_CQL, MODEL_CQL, SCHEMA_REVISION, render};
use self::settings::validate_keyspace;
pub use self::settings::{ScyllaSettings, parse_consistency};
use self::statements::{
    ACTIVE_ROW, API_KEYS_PARTITION, CatalogStatement, ModelStatement, REVISION_ROW, VERSIONS_PARTITION,
};
use self::version_cluster::VersionCluster;
use self::write_protocol::BucketRecounts;
use crate::active_version_cache::ActiveVersionCache;
use crate::api_keys::{ApiKeyRecord, ApiKeys};
use crate::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use crate::clock::Clock;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::store::{
    AggregateKey, BatchWritten, Body, BulkKey, BulkPage, Checkpoint, DocumentReads, IdentifierKind, ModelVersion,
    ModelVersionInfo, ModelVersions, PartyReferrer, ProjectionWrites, StoreError, StoredAggregate, WriteBatch,
};

/// The ScyllaDB store. Cheap to clone; clones share the session.
#[derive(Debug, Clone)]
pub struct ScyllaStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    session: Session,
    read_profile: ExecutionProfileHandle,
    settings: ScyllaSettings,
    /// Prepared once the catalog tables exist (after the first `migrate`).
    catalog: OnceCell<Prepared<CatalogStatement>>,
    versions: PreparedVersions<Prepared<ModelStatement>>,
    active: ActiveVersionCache,
    /// The calendar time changes are stamped with and kept by.
    clock: Clock,
    /// The millisecond of this process's newest batch of changes, so that
    /// its batches never share one.
    newest_feed_millisecond: std::sync::Mutex<i64>,
    /// When retention last swept, and the sequence it swept through.
    feed_sweep: tokio::sync::Mutex<Option<(i64, i64)>>,
    /// The bulk buckets this process marked and has yet to count.
    recounts: BucketRecounts,
}

/// How often retention sweeps the feed's days.
const FEED_SWEEP_INTERVAL_MS: i64 = 10 * 60 * 1000;

impl ScyllaStore {
    /// Connects to the cluster. The schema need not exist yet: `migrate` creates it.
    pub async fn connect(settings: ScyllaSettings) -> Result<ScyllaStore, StoreError> {
        validate_keyspace(&settings.keyspace).map_err(StoreError::Corrupt)?;
        let (session, read_profile) = session::connect(&settings).await?;
        Ok(ScyllaStore {
            inner: Arc::new(Inner {
                session,
                read_profile,
                settings,
                catalog: OnceCell::new(),
                versions: PreparedVersions::default(),
                active: ActiveVersionCache::default(),
                clock: Clock::system(),
                newest_feed_millisecond: std::sync::Mutex::new(0),
                feed_sweep: tokio::sync::Mutex::new(None),
                recounts: BucketRecounts::default(),
            }),
        })
    }

    /// Drops the catalog keyspace and every model version keyspace it names.
    /// For tests and for decommissioning; nothing in normal operation calls it.
    pub async fn drop_all_keyspaces(&self) -> Result<(), StoreError> {
        let mut keyspaces: Vec<String> = match self.listed_versions().await {
            Ok(versions) => versions.into_iter().map(|version| self.inner.settings.model_keyspace(version)).collect(),
            Err(_) => Vec::new(),
        };
        keyspaces.push(self.inner.settings.keyspace.clone());
        for keyspace in keyspaces {
            self.run_ddl(&format!("DROP KEYSPACE IF EXISTS {keyspace}")).await?;
        }
        self.inner.versions.forget_all();
        Ok(())
    }

    async fn run_ddl(&self, statement: &str) -> Result<(), StoreError> {
        self.inner
            .session
            .query_unpaged(ddl_statement(statement), ())
            .await
            .map(drop)
            .map_err(|error| unavailable(&format!("{statement} failed"), error))
    }

    async fn catalog(&self) -> Result<&Prepared<CatalogStatement>, StoreError> {
        let keyspace = &self.inner.settings.keyspace;
        self.inner
            .catalog
            .get_or_try_init(|| {
                let statements = CatalogStatement::ALL
                    .into_iter()
                    .map(|statement| (statement, statement.text(keyspace), statement.access()));
                Prepared::prepare(&self.inner.session, &self.inner.read_profile, statements)
            })
            .await
    }

    /// The timestamp of the next catalog write (see `catalog_clock`).
    async fn catalog_stamp(&self) -> Result<i64, StoreError> {
        let now_micros = self.inner.clock.unix_ms().saturating_mul(1_000);
        catalog_clock::advance(&self.inner.session, self.catalog().await?, now_micros).await
    }

    async fn listed_versions(&self) -> Result<Vec<ModelVersion>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectVersions)?;
        let rows: Vec<(i32,)> = select(&self.inner.session, statement, (VERSIONS_PARTITION,)).await?;
        rows.into_iter().map(|(version,)| row_mapping::model_version(version)).collect()
    }

    async fn stored_active_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectActiveVersion)?;
        let rows: Vec<(i32,)> = select(&self.inner.session, statement, (ACTIVE_ROW,)).await?;
        let version = rows.into_iter().next().map(|(version,)| row_mapping::model_version(version)).transpose()?;
        self.inner.active.record(version);
        Ok(version)
    }

    /// The prepared statements of a version the catalog knows.
    async fn version_statements(&self, version: ModelVersion) -> Result<Arc<Prepared<ModelStatement>>, StoreError> {
        let prepare = async {
            if !self.listed_versions().await?.contains(&version) {
                return Err(StoreError::UnknownModelVersion(version));
            }
            let keyspace = self.inner.settings.model_keyspace(version);
            let statements = ModelStatement::all()
                .into_iter()
                .map(|statement| (statement, statement.text(&keyspace), statement.access()));
            Prepared::prepare(&self.inner.session, &self.inner.read_profile, statements).await
        };
        self.inner.versions.get_or_prepare(version, prepare).await
    }

    async fn active_statements(&self) -> Result<Arc<Prepared<ModelStatement>>, StoreError> {
        self.active_version_statements().await.map(|(_, statements)| statements)
    }

    async fn active_version_statements(&self) -> Result<(ModelVersion, Arc<Prepared<ModelStatement>>), StoreError> {
        let version = self.active_model_version().await?.ok_or(StoreError::NoActiveModelVersion)?;
        Ok((version, self.version_statements(version).await?))
    }

    /// Where this batch's changes go: the millisecond after this process's
    /// previous batch at the earliest, so its changes keep their order.
    fn feed_placement(&self, batch: &WriteBatch, now_ms: i64) -> FeedPlacement {
        let mut newest = self.inner.newest_feed_millisecond.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        FeedPlacement::next(&mut newest, batch.bulk_rows.len(), now_ms, batch.change_feed_retention)
    }

    /// Sweeps the feed's days past retention, at most once per
    /// [`FEED_SWEEP_INTERVAL_MS`], and raises the horizon past what any
    /// removal took.
    async fn sweep_feed(
        &self,
        feed: &VersionFeed<'_>,
        removed: Option<i64>,
        cutoff: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut newest_removed = removed;
        if let Some(cutoff) = cutoff {
            let mut sweep = self.inner.feed_sweep.lock().await;
            let due = sweep.is_none_or(|(swept_at, _)| now_ms - swept_at >= FEED_SWEEP_INTERVAL_MS);
            if due {
                let swept_through = match *sweep {
                    Some((_, swept_through)) => swept_through,
                    None => feed.horizon().await?,
                };
                newest_removed = newest_removed.max(feed.sweep(swept_through, cutoff).await?);
                *sweep = Some((now_ms, cutoff));
            }
        }
        match newest_removed {
            Some(sequence) => feed.raise_horizon(sequence).await,
            None => Ok(()),
        }
    }

    async fn create_version_keyspace(&self, version: ModelVersion) -> Result<(), StoreError> {
        let keyspace = self.inner.settings.model_keyspace(version);
        for statement in render(MODEL_CQL, &keyspace, self.inner.settings.replication_factor) {
            self.run_ddl(&statement).await?;
        }
        Ok(())
    }
}

/// Runs a read on the active version's statements.
macro_rules! on_active {
    ($store:expr, |$reads:ident| $body:expr) => {{
        let statements = $store.active_statements().await?;
        let $reads = VersionReads { session: &$store.inner.session, statements: &statements };
        $body.await
    }};
}

/// Runs a read on a given version's statements.
macro_rules! on_version {
    ($store:expr, $version:expr, |$reads:ident| $body:expr) => {{
        let statements = $store.version_statements($version).await?;
        let $reads = VersionReads { session: &$store.inner.session, statements: &statements };
        $body.await
    }};
}

#[async_trait]
impl DocumentReads for ScyllaStore {
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        on_active!(self, |reads| reads.document(kind, key))
    }

    async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
        on_active!(self, |reads| reads.provenance(lcc_id))
    }

    async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError> {
        on_active!(self, |reads| reads.works_by_identifier(kind, code, audience))
    }

    async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError> {
        on_active!(self, |reads| reads.bulk_page(audience, offset, limit))
    }

    async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError> {
        on_active!(self, |reads| reads.bulk_rows_after(audience, after, limit))
    }

    async fn changes(&self, query: &ChangeQuery) -> Result<ChangesRead, StoreError> {
        let (version, statements) = self.active_version_statements().await?;
        let feed = VersionFeed { session: &self.inner.session, statements: &statements };
        feed.changes(version, query, self.inner.clock.unix_ms(), self.inner.settings.change_feed_settle).await
    }

    async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<(ModelVersion, ChangeItem)>, StoreError> {
        let (version, statements) = self.active_version_statements().await?;
        let feed = VersionFeed { session: &self.inner.session, statements: &statements };
        Ok(feed.latest_change(audience, lcc_id).await?.map(|item| (version, item)))
    }

    async fn change_feed_bounds(&self, audience: Audience) -> Result<ChangeFeedBounds, StoreError> {
        let (version, statements) = self.active_version_statements().await?;
        VersionFeed { session: &self.inner.session, statements: &statements }.bounds(version, audience).await
    }

    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError> {
        on_active!(self, |reads| reads.sandbox_fixtures())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.stored_active_version().await?.ok_or(StoreError::NoActiveModelVersion).map(drop)
    }
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
            write_protocol::write_batch(&cluster, &self.inner.recounts, &batch, placement.first_sequence).await?;
        self.sweep_feed(&feed, removed, placement.retention_cutoff, now_ms).await?;
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

#[async_trait]
impl ModelVersions for ScyllaStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        let settings = &self.inner.settings;
        for statement in render(CATALOG_CQL, &settings.keyspace, settings.replication_factor) {
            self.run_ddl(&statement).await?;
        }
        let catalog = self.catalog().await?;
        let revision: Vec<(i32,)> =
            select(&self.inner.session, catalog.get(CatalogStatement::SelectSchemaRevision)?, (REVISION_ROW,)).await?;
        if let Some((stored,)) = revision.first()
            && *stored > SCHEMA_REVISION
        {
            return Err(StoreError::Corrupt(format!(
                "schema revision {stored} is newer than this program's {SCHEMA_REVISION}"
            )));
        }
        for version in self.listed_versions().await? {
            self.create_version_keyspace(version).await?;
        }
        let upsert = catalog.get(CatalogStatement::UpsertSchemaRevision)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, upsert, (REVISION_ROW, SCHEMA_REVISION, stamp)).await.map(drop)
    }

    async fn model_versions(&self) -> Result<Vec<ModelVersionInfo>, StoreError> {
        let active = self.stored_active_version().await?;
        let versions = self.listed_versions().await?;
        Ok(versions.into_iter().map(|version| ModelVersionInfo { version, active: active == Some(version) }).collect())
    }

    async fn create_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        let column = row_mapping::version_column(version)?;
        self.create_version_keyspace(version).await?;
        let insert = self.catalog().await?.get(CatalogStatement::InsertVersion)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, insert, (VERSIONS_PARTITION, column, stamp)).await.map(drop)
    }

    async fn activate_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        if !self.listed_versions().await?.contains(&version) {
            return Err(StoreError::UnknownModelVersion(version));
        }
        let upsert = self.catalog().await?.get(CatalogStatement::UpsertActiveVersion)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, upsert, (ACTIVE_ROW, row_mapping::version_column(version)?, stamp)).await?;
        self.inner.active.record(Some(version));
        Ok(())
    }

    async fn drop_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        if !self.listed_versions().await?.contains(&version) {
            return Err(StoreError::UnknownModelVersion(version));
        }
        if self.stored_active_version().await? == Some(version) {
            return Err(StoreError::ActiveModelVersion(version));
        }
        // The keyspace goes before the catalog forgets it: a drop that fails
        // or times out leaves the version listed, and dropping it again (or
        // `migrate`, which recreates listed keyspaces) repairs it, where the
        // other order would leave a keyspace no catalog names.
        self.run_ddl(&format!("DROP KEYSPACE IF EXISTS {}", self.inner.settings.model_keyspace(version))).await?;
        let delete = self.catalog().await?.get(CatalogStatement::DeleteVersion)?;
        let stamp = self.catalog_stamp().await?;
        let values = (stamp, VERSIONS_PARTITION, row_mapping::version_column(version)?);
        execute(&self.inner.session, delete, values).await?;
        self.inner.versions.forget(version);
        Ok(())
    }

    async fn active_model_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        match self.inner.active.fresh() {
            Some(version) => Ok(version),
            None => self.stored_active_version().await,
        }
    }
}

/// Keys live in one partition of the catalog keyspace, so listing them is
/// one partition read. Without lightweight transactions a revocation is a
/// plain write of the revocation time; two operators revoking one key at
/// once leave one of their two times.
#[async_trait]
impl ApiKeys for ScyllaStore {
    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::InsertApiKey)?;
        let rate_limit = i32::try_from(key.rate_limit_per_minute)
            .map_err(|_| StoreError::Corrupt(format!("rate limit {}", key.rate_limit_per_minute)))?;
        let values = (
            API_KEYS_PARTITION,
            &key.key_hash,
            &key.key_id,
            &key.partner,
            &key.scopes,
            rate_limit,
            key.created_at_ms,
            key.revoked_at_ms,
            self.catalog_stamp().await?,
        );
        execute(&self.inner.session, statement, values).await.map(drop)
    }

    async fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectApiKeys)?;
        let rows: Vec<row_mapping::ApiKeyRow> = select(&self.inner.session, statement, (API_KEYS_PARTITION,)).await?;
        let mut keys = rows.into_iter().map(row_mapping::api_key).collect::<Result<Vec<_>, _>>()?;
        keys.sort_by(|left, right| (left.created_at_ms, &left.key_id).cmp(&(right.created_at_ms, &right.key_id)));
        Ok(keys)
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectApiKey)?;
        let rows: Vec<row_mapping::ApiKeyRow> =
            select(&self.inner.session, statement, (API_KEYS_PARTITION, key_hash)).await?;
        rows.into_iter().next().map(row_mapping::api_key).transpose()
    }

    async fn revoke_api_key(&self, key_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        let Some(key) = self.api_keys().await?.into_iter().find(|key| key.key_id == key_id) else {
            return Ok(false);
        };
        if key.revoked_at_ms.is_none() {
            let statement = self.catalog().await?.get(CatalogStatement::RevokeApiKey)?;
            let stamp = self.catalog_stamp().await?;
            execute(&self.inner.session, statement, (API_KEYS_PARTITION, &key.key_hash, at_ms, stamp)).await?;
        }
        Ok(true)
    }
}
