//! The catalog keyspace and the keyspaces of model versions: the DDL that
//! creates them (`schemas/cql/`), the catalog's prepared statements and
//! reads, each version's prepared statements, and the store's
//! [`ModelVersions`] over them.

use std::sync::Arc;

use async_trait::async_trait;

use super::ScyllaStore;
use super::catalog_clock;
use super::errors::unavailable;
use super::execution::{Prepared, ddl_statement, execute, select};
use super::row_mapping;
use super::schema::{CATALOG_CQL, MODEL_CQL, SCHEMA_REVISION, drop_keyspace, render};
use super::statements::{ACTIVE_ROW, CatalogStatement, ModelStatement, REVISION_ROW, VERSIONS_PARTITION};
use crate::active_version_cache::ACTIVE_VERSION_TTL;
use crate::store::{ModelVersion, ModelVersionInfo, ModelVersions, StoreError};

impl ScyllaStore {
    /// Drops the catalog keyspace and every model version keyspace it names.
    /// For tests and for decommissioning; nothing in normal operation calls it.
    pub async fn drop_all_keyspaces(&self) -> Result<(), StoreError> {
        let mut keyspaces: Vec<String> = match self.listed_versions().await {
            Ok(versions) => versions.into_iter().map(|version| self.inner.settings.model_keyspace(version)).collect(),
            Err(_) => Vec::new(),
        };
        keyspaces.push(self.inner.settings.keyspace.clone());
        for keyspace in keyspaces {
            self.run_ddl(&drop_keyspace(&keyspace)).await?;
        }
        self.inner.versions.forget_all();
        Ok(())
    }

    pub(super) async fn run_ddl(&self, statement: &str) -> Result<(), StoreError> {
        self.inner
            .session
            .query_unpaged(ddl_statement(statement), ())
            .await
            .map(drop)
            .map_err(|error| unavailable(&format!("{statement} failed"), error))
    }

    pub(super) async fn catalog(&self) -> Result<&Prepared<CatalogStatement>, StoreError> {
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
    pub(super) async fn catalog_stamp(&self) -> Result<i64, StoreError> {
        let now_micros = self.inner.clock.unix_ms().saturating_mul(1_000);
        catalog_clock::advance(&self.inner.session, self.catalog().await?, now_micros).await
    }

    pub(super) async fn listed_versions(&self) -> Result<Vec<ModelVersion>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectVersions)?;
        let rows: Vec<(i32,)> = select(&self.inner.session, statement, (VERSIONS_PARTITION,)).await?;
        rows.into_iter().map(|(version,)| row_mapping::model_version(version)).collect()
    }

    pub(super) async fn stored_active_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectActiveVersion)?;
        let rows: Vec<(i32,)> = select(&self.inner.session, statement, (ACTIVE_ROW,)).await?;
        let version = rows.into_iter().next().map(|(version,)| row_mapping::model_version(version)).transpose()?;
        self.inner.active.record(version);
        Ok(version)
    }

    /// The prepared statements of a version the catalog knows.
    pub(super) async fn version_statements(
        &self,
        version: ModelVersion,
    ) -> Result<Arc<Prepared<ModelStatement>>, StoreError> {
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

    pub(super) async fn active_statements(&self) -> Result<Arc<Prepared<ModelStatement>>, StoreError> {
        self.active_version_statements().await.map(|(_, statements)| statements)
    }

    pub(super) async fn active_version_statements(
        &self,
    ) -> Result<(ModelVersion, Arc<Prepared<ModelStatement>>), StoreError> {
        let version = self.active_model_version().await?.ok_or(StoreError::NoActiveModelVersion)?;
        Ok((version, self.version_statements(version).await?))
    }

    async fn create_version_keyspace(&self, version: ModelVersion) -> Result<(), StoreError> {
        let keyspace = self.inner.settings.model_keyspace(version);
        for statement in render(MODEL_CQL, &keyspace, self.inner.settings.replication_factor) {
            self.run_ddl(&statement).await?;
        }
        Ok(())
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
        // A reader trusts its cached active version for ACTIVE_VERSION_TTL,
        // so one that cached this version before another was activated may
        // still read it that long, and finish a read begun then: the keyspace
        // goes only once twice that time has passed since the check above.
        tokio::time::sleep(2 * ACTIVE_VERSION_TTL).await;
        // The keyspace goes before the catalog forgets it: a drop that fails
        // or times out leaves the version listed, and dropping it again (or
        // `migrate`, which recreates listed keyspaces) repairs it, where the
        // other order would leave a keyspace no catalog names.
        self.run_ddl(&drop_keyspace(&self.inner.settings.model_keyspace(version))).await?;
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
