//! A store decorator that times every read the API makes into
//! `lcc_store_read_duration_seconds`, by operation. It changes no answer.

use read_model::notifications::{NotificationQuery, NotificationsRead};
use std::sync::Arc;

use async_trait::async_trait;
use read_model::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use read_model::identifiers::Audience;
use read_model::{
    Body, BulkKey, BulkPage, DocumentCacheStatistics, DocumentKind, DocumentReads, IdentifierKind, ModelVersion,
    StoreError,
};

use crate::metrics::Metrics;

/// A store decorator that times every read into `lcc_store_read_duration_seconds`.
pub struct MeteredReads {
    pub inner: Arc<dyn DocumentReads>,
    pub metrics: Arc<Metrics>,
}

impl std::fmt::Debug for MeteredReads {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("MeteredReads").finish_non_exhaustive()
    }
}

#[async_trait]
impl DocumentReads for MeteredReads {
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        let _timer = self.metrics.time_document_read(kind);
        self.inner.document(kind, key).await
    }

    async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
        let _timer = self.metrics.observe_store("provenance").start_timer();
        self.inner.provenance(lcc_id).await
    }

    async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError> {
        let _timer = self.metrics.observe_store("identifier_index").start_timer();
        self.inner.works_by_identifier(kind, code, audience).await
    }

    async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError> {
        let _timer = self.metrics.observe_store("bulk_page").start_timer();
        self.inner.bulk_page(audience, offset, limit).await
    }

    async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError> {
        let _timer = self.metrics.observe_store("bulk_rows").start_timer();
        self.inner.bulk_rows_after(audience, after, limit).await
    }

    async fn changes(&self, query: &ChangeQuery) -> Result<ChangesRead, StoreError> {
        let _timer = self.metrics.observe_store("change_feed").start_timer();
        self.inner.changes(query).await
    }

    async fn notifications(&self, query: &NotificationQuery) -> Result<NotificationsRead, StoreError> {
        let _timer = self.metrics.observe_store("notifications").start_timer();
        self.inner.notifications(query).await
    }

    async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<(ModelVersion, ChangeItem)>, StoreError> {
        let _timer = self.metrics.observe_store("change_feed_latest").start_timer();
        self.inner.latest_change(audience, lcc_id).await
    }

    async fn change_feed_bounds(&self, audience: Audience) -> Result<ChangeFeedBounds, StoreError> {
        let _timer = self.metrics.observe_store("change_feed_bounds").start_timer();
        self.inner.change_feed_bounds(audience).await
    }

    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError> {
        let _timer = self.metrics.observe_store("sandbox_fixtures").start_timer();
        self.inner.sandbox_fixtures().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let _timer = self.metrics.observe_store("ping").start_timer();
        self.inner.ping().await
    }

    fn document_cache_statistics(&self) -> Option<DocumentCacheStatistics> {
        self.inner.document_cache_statistics()
    }
}
