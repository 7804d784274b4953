//! The API's reads ([`DocumentReads`]) on the active version's prepared
//! statements: each one partition, read speculatively; documents through
//! the version's document cache (`document_cache`) when it is on.

use async_trait::async_trait;

use super::ScyllaStore;
use super::change_feed::VersionFeed;
use super::document_cache::VersionSources;
use super::notification_feed::NotificationFeed;
use super::reads::VersionReads;
use crate::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::notifications::{NotificationQuery, NotificationsRead};
use crate::store::{
    Body, BulkKey, BulkPage, DocumentCacheStatistics, DocumentReads, IdentifierKind, ModelVersion, StoreError,
};

/// Runs a read on the active version's statements.
macro_rules! on_active {
    ($store:expr, |$reads:ident| $body:expr) => {{
        let statements = $store.active_statements().await?;
        let $reads = VersionReads { session: &$store.inner.session, statements: &statements };
        $body.await
    }};
}

#[async_trait]
impl DocumentReads for ScyllaStore {
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        let (version, statements) = self.active_version_statements().await?;
        let reads = VersionReads { session: &self.inner.session, statements: &statements };
        let Some(cache) = self.document_cache(version) else { return reads.document(kind, key).await };
        let notifications = NotificationFeed { session: &self.inner.session, statements: &statements };
        cache.document(&VersionSources { reads, notifications }, kind, key).await
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

    async fn notifications(&self, query: &NotificationQuery) -> Result<NotificationsRead, StoreError> {
        let (version, statements) = self.active_version_statements().await?;
        let feed = NotificationFeed { session: &self.inner.session, statements: &statements };
        feed.read(version, query, self.inner.clock.unix_ms(), self.inner.settings.change_feed_settle).await
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

    /// Counted across versions; what is held is what the newest version's cache holds.
    fn document_cache_statistics(&self) -> Option<DocumentCacheStatistics> {
        if self.inner.settings.document_cache_bytes == 0 {
            return None;
        }
        let current = self.inner.documents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(self.inner.document_cache_counters.statistics(current.as_ref().map(|cache| cache.held())))
    }
}
