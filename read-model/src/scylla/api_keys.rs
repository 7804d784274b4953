//! Production keys on the cluster ([`ApiKeys`]): one partition of the
//! catalog keyspace, written with the catalog's own clock.

use async_trait::async_trait;

use super::ScyllaStore;
use super::execution::{execute, select};
use super::row_mapping;
use super::statements::{API_KEYS_PARTITION, CatalogStatement};
use crate::api_keys::{ApiKeyRecord, ApiKeys};
use crate::store::StoreError;

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
        // The filter first: a key is usable once its row exists, and must not
        // read more than its filter allows meanwhile.
        if let Some(filter) = &key.notification_filter {
            let insert = self.catalog().await?.get(CatalogStatement::InsertNotificationFilter)?;
            let stamp = self.catalog_stamp().await?;
            execute(&self.inner.session, insert, (API_KEYS_PARTITION, &key.key_id, filter, stamp)).await?;
        }
        execute(&self.inner.session, statement, values).await.map(drop)
    }

    async fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectApiKeys)?;
        let rows: Vec<row_mapping::ApiKeyRow> = select(&self.inner.session, statement, (API_KEYS_PARTITION,)).await?;
        let mut keys = rows.into_iter().map(row_mapping::api_key).collect::<Result<Vec<_>, _>>()?;
        let statement = self.catalog().await?.get(CatalogStatement::SelectNotificationFilters)?;
        let filters: std::collections::HashMap<String, String> =
            select::<(String, String)>(&self.inner.session, statement, (API_KEYS_PARTITION,))
                .await?
                .into_iter()
                .collect();
        for key in &mut keys {
            key.notification_filter = filters.get(&key.key_id).cloned();
        }
        keys.sort_by(|left, right| (left.created_at_ms, &left.key_id).cmp(&(right.created_at_ms, &right.key_id)));
        Ok(keys)
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectApiKey)?;
        let rows: Vec<row_mapping::ApiKeyRow> =
            select(&self.inner.session, statement, (API_KEYS_PARTITION, key_hash)).await?;
        let Some(mut key) = rows.into_iter().next().map(row_mapping::api_key).transpose()? else {
            return Ok(None);
        };
        let statement = self.catalog().await?.get(CatalogStatement::SelectNotificationFilter)?;
        let filters: Vec<(String,)> =
            select(&self.inner.session, statement, (API_KEYS_PARTITION, key.key_id.as_str())).await?;
        key.notification_filter = filters.into_iter().next().map(|(filter,)| filter);
        Ok(Some(key))
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
