//! The catalog file (`catalog.sqlite`): which model versions exist and
//! which one is active, and the store's [`ModelVersions`] over it.

use std::path::PathBuf;
use std::sync::PoisonError;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};

use super::SqliteStore;
use super::errors::from_sqlite;
use super::schema;
use crate::store::{ModelVersion, ModelVersionInfo, ModelVersions, StoreError};

impl SqliteStore {
    pub(super) fn read_active_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        if let Some(version) = self.inner.active.fresh() {
            return Ok(version);
        }
        let version = self.inner.catalog_readers.with(|connection| {
            connection
                .prepare_cached("SELECT version FROM active_model_version WHERE singleton = 1")
                .and_then(|mut statement| statement.query_row([], |row| row.get::<_, u32>(0)).optional())
                .map_err(from_sqlite)
        })?;
        let version = version.map(ModelVersion);
        self.inner.active.record(version);
        if let Some(version) = version {
            self.forget_replaced_file(version);
        }
        Ok(version)
    }

    pub(super) fn with_catalog_writer<T>(
        &self,
        write: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self.inner.catalog_writer.lock().unwrap_or_else(PoisonError::into_inner);
        let result = write(&mut connection);
        self.inner.catalog_readers.note_write();
        result
    }
}

#[async_trait]
impl ModelVersions for SqliteStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        self.with_catalog_writer(schema::migrate_catalog)?;
        for info in self.model_versions().await? {
            self.version_file(info.version).with_writer(|writer| schema::migrate_model(&mut writer.connection))?;
        }
        Ok(())
    }

    async fn model_versions(&self) -> Result<Vec<ModelVersionInfo>, StoreError> {
        let active = self.active_model_version().await?;
        let versions = self.inner.catalog_readers.with(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT version FROM model_versions ORDER BY version")
                .map_err(from_sqlite)?;
            let rows = statement.query_map([], |row| row.get::<_, u32>(0)).map_err(from_sqlite)?;
            rows.collect::<Result<Vec<u32>, _>>().map_err(from_sqlite)
        })?;
        Ok(versions
            .into_iter()
            .map(|version| ModelVersionInfo {
                version: ModelVersion(version),
                active: active == Some(ModelVersion(version)),
            })
            .collect())
    }

    async fn create_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.version_file(version).with_writer(|writer| schema::migrate_model(&mut writer.connection))?;
        self.with_catalog_writer(|connection| {
            connection
                .execute("INSERT OR IGNORE INTO model_versions (version) VALUES (?1)", [version.0])
                .map_err(from_sqlite)
                .map(drop)
        })
    }

    async fn activate_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.known_version_file(version)?;
        self.with_catalog_writer(|connection| {
            connection
                .execute(
                    "INSERT INTO active_model_version (singleton, version) VALUES (1, ?1) \
                     ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
                    [version.0],
                )
                .map_err(from_sqlite)
                .map(drop)
        })?;
        self.inner.active.record(Some(version));
        Ok(())
    }

    async fn drop_model_version(&self, version: ModelVersion) -> Result<(), StoreError> {
        self.known_version_file(version)?;
        self.inner.active.forget();
        if self.active_model_version().await? == Some(version) {
            return Err(StoreError::ActiveModelVersion(version));
        }
        self.with_catalog_writer(|connection| {
            connection
                .execute("DELETE FROM model_versions WHERE version = ?1", [version.0])
                .map_err(from_sqlite)
                .map(drop)
        })?;
        self.inner.versions.lock().unwrap_or_else(PoisonError::into_inner).remove(&version);
        let path = self.model_file(version);
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            if let Err(error) = std::fs::remove_file(&file)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                return Err(StoreError::Unavailable(format!("cannot remove {}: {error}", file.display())));
            }
        }
        Ok(())
    }

    async fn active_model_version(&self) -> Result<Option<ModelVersion>, StoreError> {
        self.read_active_version()
    }
}
