//! The API's reads ([`DocumentReads`]) on the active version: inline, since
//! they are point or short range reads, and documents through the cache.

use std::sync::Arc;

use async_trait::async_trait;

use super::SqliteStore;
use super::change_feed;
use super::document_cache::DocumentCache;
use super::errors::from_sqlite;
use super::notifications;
use super::reads;
use crate::change_feed::{ChangeFeedBounds, ChangeItem, ChangeQuery, ChangesRead};
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::notifications::{NotificationQuery, NotificationsRead};
use crate::store::{
    Body, BulkKey, BulkPage, DocumentCacheStatistics, DocumentReads, IdentifierKind, ModelVersion, StoreError,
};

#[async_trait]
impl DocumentReads for SqliteStore {
    async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        let file = self.active_file()?;
        if self.inner.document_cache_bytes == 0 {
            return file.readers.with(|connection| reads::document(connection, kind, key));
        }
        file.documents
            .get_or_init(|| {
                let counters = Arc::clone(&self.inner.document_cache_counters);
                DocumentCache::new(
                    file.path.clone(),
                    self.inner.document_cache_bytes,
                    counters,
                    self.inner.clock.clone(),
                )
            })
            .document(&file.readers, kind, key)
    }

    async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
        self.read_active(|connection| reads::provenance(connection, lcc_id))
    }

    async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError> {
        self.read_active(|connection| reads::works_by_identifier(connection, kind, code, audience))
    }

    async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError> {
        self.read_active(|connection| reads::bulk_page(connection, audience, offset, limit))
    }

    async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError> {
        // A walk over the whole export through the mapped readers would map
        // every page of it into this process; copying readers keep a
        // bounded page cache instead.
        let file = self.active_file()?;
        file.state_readers.with(|connection| reads::bulk_rows_after(connection, audience, after, limit))
    }

    async fn changes(&self, query: &ChangeQuery) -> Result<ChangesRead, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        file.readers.with(|connection| change_feed::changes(connection, version, query))
    }

    async fn latest_change(
        &self,
        audience: Audience,
        lcc_id: &str,
    ) -> Result<Option<(ModelVersion, ChangeItem)>, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        let item = file.readers.with(|connection| change_feed::latest_change(connection, audience, lcc_id))?;
        Ok(item.map(|item| (version, item)))
    }

    async fn notifications(&self, query: &NotificationQuery) -> Result<NotificationsRead, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        file.readers.with(|connection| notifications::read(connection, version, query))
    }

    async fn change_feed_bounds(&self, audience: Audience) -> Result<ChangeFeedBounds, StoreError> {
        let (version, file) = self.active_version_and_file()?;
        file.readers.with(|connection| change_feed::bounds(connection, version, audience))
    }

    async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError> {
        self.read_active(reads::sandbox_fixtures)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.read_active(|connection| connection.query_row("SELECT 1", [], |_| Ok(())).map_err(from_sqlite))
    }

    /// Counted across versions; what is held is what the active version's cache holds.
    fn document_cache_statistics(&self) -> Option<DocumentCacheStatistics> {
        if self.inner.document_cache_bytes == 0 {
            return None;
        }
        let active = self.active_file().ok();
        let held = active.as_ref().and_then(|file| file.documents.get().map(DocumentCache::held));
        Some(self.inner.document_cache_counters.statistics(held))
    }
}
