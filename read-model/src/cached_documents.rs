//! Documents held in memory by kind and key, within a bound in bytes
//! (S3-FIFO eviction, by `quick_cache`), and what a cache has done: the part
//! of a document cache that both backends share.
//!
//! Entries are held as the store holds them (`stored_bodies`: a zstd frame
//! made with its kind's dictionary, a fraction of the document's size), and
//! decompressed when served: a bound then holds several times the documents
//! it would hold decompressed, and a document held costs a decompression,
//! far less than the read of the store that a document missed costs.
//!
//! Each backend's cache decides when an entry may be served and when it
//! must go (`sqlite::document_cache`, `scylla::document_cache`); this module
//! only holds entries and counts, and must not decide either.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

use crate::documents::DocumentKind;
use crate::records::StoreError;
use crate::store::{Body, DocumentCacheStatistics};
use crate::stored_bodies;

/// Memory an entry takes beside its key and stored body (map slot, allocations).
const ENTRY_OVERHEAD_BYTES: u64 = 64;

/// Documents held in memory, as stored.
#[derive(Debug)]
pub(crate) struct CachedDocuments {
    entries: Cache<CachedDocument, Arc<[u8]>, BodyWeight>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CachedDocument {
    kind: DocumentKind,
    key: Box<str>,
}

/// A borrowed [`CachedDocument`], so that a lookup allocates nothing. Its
/// fields hash exactly as the owned key's do.
#[derive(Hash)]
struct DocumentLookup<'a> {
    kind: DocumentKind,
    key: &'a str,
}

impl Equivalent<CachedDocument> for DocumentLookup<'_> {
    fn equivalent(&self, cached: &CachedDocument) -> bool {
        self.kind == cached.kind && self.key == &*cached.key
    }
}

#[derive(Debug, Clone, Copy)]
struct BodyWeight;

impl Weighter<CachedDocument, Arc<[u8]>> for BodyWeight {
    fn weight(&self, cached: &CachedDocument, stored: &Arc<[u8]>) -> u64 {
        (cached.key.len() + stored.len()) as u64 + ENTRY_OVERHEAD_BYTES
    }
}

impl CachedDocuments {
    /// Room for `capacity_bytes` of keys and bodies.
    pub(crate) fn new(capacity_bytes: u64) -> CachedDocuments {
        let estimated_entries = usize::try_from(capacity_bytes / 2_048).unwrap_or(usize::MAX).max(16);
        CachedDocuments { entries: Cache::with_weighter(estimated_entries, capacity_bytes, BodyWeight) }
    }

    /// The document held for `kind` and `key`, decompressed.
    pub(crate) fn get(&self, kind: DocumentKind, key: &str) -> Option<Result<Body, StoreError>> {
        let stored = self.entries.get(&DocumentLookup { kind, key })?;
        Some(stored_bodies::decompress_borrowed(&stored))
    }

    /// Holds `stored`, a document as the store holds it.
    pub(crate) fn keep(&self, kind: DocumentKind, key: &str, stored: &[u8]) {
        self.entries.insert(CachedDocument { kind, key: key.into() }, Arc::from(stored));
    }

    /// Drops every kind of document of `key`.
    pub(crate) fn forget(&self, key: &str) {
        for kind in DocumentKind::ALL {
            self.entries.remove(&DocumentLookup { kind, key });
        }
    }

    pub(crate) fn clear(&self) {
        self.entries.clear();
    }

    /// The bytes held, keys and stored bodies.
    pub(crate) fn bytes(&self) -> u64 {
        self.entries.weight()
    }
}

/// What the caches of one store have done, counted across model versions.
#[derive(Debug, Default)]
pub(crate) struct DocumentCacheCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    resets: AtomicU64,
}

impl DocumentCacheCounters {
    pub(crate) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// A cache dropped everything it held.
    pub(crate) fn reset(&self) {
        self.resets.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, with `bytes` held by the cache being read now.
    pub(crate) fn statistics(&self, bytes: u64) -> DocumentCacheStatistics {
        DocumentCacheStatistics {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            resets: self.resets.load(Ordering::Relaxed),
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored_bodies::{BodyKind, compress};

    #[test]
    fn a_document_is_held_as_stored_and_served_as_written() {
        let cache = CachedDocuments::new(1 << 20);
        let profile = br#"{"lccId":"LCC-0000000001","title":"Title of LCC-0000000001","status":"published","openForLicensing":true,"holders":[]}"#;
        let stored = compress(BodyKind::RightsProfile, profile).expect("compress");
        cache.keep(DocumentKind::RightsProfile, "LCC-0000000001", &stored);
        let served = cache.get(DocumentKind::RightsProfile, "LCC-0000000001").expect("held").expect("readable");
        assert_eq!(served, profile);
        let weight = ("LCC-0000000001".len() + stored.len()) as u64 + ENTRY_OVERHEAD_BYTES;
        assert_eq!(cache.bytes(), weight, "the stored frame is what is held");
        assert!(stored.len() < profile.len() / 2);
        assert!(cache.get(DocumentKind::Verification, "LCC-0000000001").is_none(), "another kind");

        // A body stored before compression (a sandbox fixture) is held and served as it is.
        cache.keep(DocumentKind::Metadata, "SANDBOX-1", b"{\"a\":1}");
        assert_eq!(cache.get(DocumentKind::Metadata, "SANDBOX-1").expect("held").expect("readable"), b"{\"a\":1}");
        cache.forget("LCC-0000000001");
        assert!(cache.get(DocumentKind::RightsProfile, "LCC-0000000001").is_none());
    }
}
