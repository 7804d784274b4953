//! Documents held in memory by kind and key, within a bound in bytes
//! (S3-FIFO eviction, by `quick_cache`), and what a cache has done: the part
//! of a document cache that both backends share.
//!
//! Each backend's cache decides when an entry may be served and when it
//! must go (`sqlite::document_cache`, `scylla::document_cache`); this module
//! only holds entries and counts, and must not decide either.

use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

use crate::documents::DocumentKind;
use crate::store::{Body, DocumentCacheStatistics};

/// Memory an entry takes beside its key and body (map slot, allocations).
const ENTRY_OVERHEAD_BYTES: u64 = 64;

/// Documents held in memory.
#[derive(Debug)]
pub(crate) struct CachedDocuments {
    entries: Cache<CachedDocument, Body, BodyWeight>,
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

impl Weighter<CachedDocument, Body> for BodyWeight {
    fn weight(&self, cached: &CachedDocument, body: &Body) -> u64 {
        (cached.key.len() + body.len()) as u64 + ENTRY_OVERHEAD_BYTES
    }
}

impl CachedDocuments {
    /// Room for `capacity_bytes` of keys and bodies.
    pub(crate) fn new(capacity_bytes: u64) -> CachedDocuments {
        let estimated_entries = usize::try_from(capacity_bytes / 2_048).unwrap_or(usize::MAX).max(16);
        CachedDocuments { entries: Cache::with_weighter(estimated_entries, capacity_bytes, BodyWeight) }
    }

    pub(crate) fn get(&self, kind: DocumentKind, key: &str) -> Option<Body> {
        self.entries.get(&DocumentLookup { kind, key })
    }

    pub(crate) fn keep(&self, kind: DocumentKind, key: &str, body: &Body) {
        self.entries.insert(CachedDocument { kind, key: key.into() }, body.clone());
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

    /// The bytes held, keys and bodies.
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
