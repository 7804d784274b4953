//! Documents held in memory by kind and key, within a bound in bytes
//! (S3-FIFO eviction, by `quick_cache`), and what a cache has done: the part
//! of a document cache that both backends share.
//!
//! A cache holds documents as they are served until it first evicts one to
//! make room (replacing a document's own entry, as two lookups that missed
//! it at once do, makes none). From then on it holds them as the store does
//! (`stored_bodies`: a zstd frame or an LZ4 block made with its kind's
//! dictionary, a fraction of the document's size) and decompresses one each time it is
//! served; it drops what it held, so every entry is held one way. So a
//! registry whose documents fit the bound is served without decompressing
//! any, and one larger is held several times over: a decompression costs a
//! good part of a lookup, but far less than the read of the store that a
//! miss costs.
//! (Holding only the entries that do not fit as frames would not do: the
//! eviction keeps the entries it holds longest, and a frame would seldom
//! displace them. Nor would comparing the bytes held with the bound: the
//! cache is sharded, each shard evicts within its own part of the bound,
//! and the shards together seldom come within one document of the whole.)
//!
//! Each backend's cache decides when an entry may be served and when it
//! must go (`sqlite::document_cache`, `scylla::document_cache`); this module
//! only holds entries and counts, and must not decide either.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Equivalent, Lifecycle, Weighter};

use crate::documents::DocumentKind;
use crate::records::StoreError;
use crate::store::{Body, DocumentCacheStatistics};
use crate::stored_bodies;

/// Memory an entry takes beside its key and body (map slot, allocations).
const ENTRY_OVERHEAD_BYTES: u64 = 64;

/// Documents held in memory, as they are served until one was evicted,
/// then as stored.
#[derive(Debug)]
pub(crate) struct CachedDocuments {
    entries: Cache<CachedDocument, Arc<[u8]>, BodyWeight, DefaultHashBuilder, NoteDisplaced>,
    /// Set when keeping a document first evicted another one: the cache is full.
    evicted: AtomicBool,
    /// Set once the cache has switched to holding documents as stored.
    holds_stored: AtomicBool,
}

/// Collects what one insertion displaced ([`Displaced`]).
#[derive(Debug, Clone, Copy)]
struct NoteDisplaced;

/// The entries one insertion displaced: how many, and the first one's key.
/// The cache reports the entry an insertion replaces as displaced too, so
/// only another document's key means that room was made.
#[derive(Debug, Default)]
struct Displaced {
    count: usize,
    first: Option<CachedDocument>,
}

impl Displaced {
    fn made_room_for(&self, kind: DocumentKind, key: &str) -> bool {
        self.count > 1 || self.first.as_ref().is_some_and(|first| !DocumentLookup { kind, key }.equivalent(first))
    }
}

impl Lifecycle<CachedDocument, Arc<[u8]>> for NoteDisplaced {
    type RequestState = Displaced;

    fn on_evict(&self, displaced: &mut Displaced, key: CachedDocument, _held: Arc<[u8]>) {
        displaced.count += 1;
        displaced.first.get_or_insert(key);
    }
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
    fn weight(&self, cached: &CachedDocument, held: &Arc<[u8]>) -> u64 {
        entry_weight(&cached.key, held)
    }
}

fn entry_weight(key: &str, held: &[u8]) -> u64 {
    (key.len() + held.len()) as u64 + ENTRY_OVERHEAD_BYTES
}

impl CachedDocuments {
    /// Room for `capacity_bytes` of keys and bodies.
    pub(crate) fn new(capacity_bytes: u64) -> CachedDocuments {
        let estimated_entries = usize::try_from(capacity_bytes / 2_048).unwrap_or(usize::MAX).max(16);
        CachedDocuments {
            entries: Cache::with(
                estimated_entries,
                capacity_bytes,
                BodyWeight,
                DefaultHashBuilder::default(),
                NoteDisplaced,
            ),
            evicted: AtomicBool::new(false),
            holds_stored: AtomicBool::new(false),
        }
    }

    /// The document held for `kind` and `key`, as it is served. A body is
    /// never a stored frame or block (`stored_bodies`), so what is held says
    /// which way it was held.
    pub(crate) fn get(&self, kind: DocumentKind, key: &str) -> Option<Result<Body, StoreError>> {
        let held = self.entries.get(&DocumentLookup { kind, key })?;
        Some(stored_bodies::decompress_borrowed(&held))
    }

    /// Holds the document `body`, which the store holds as `stored`.
    pub(crate) fn keep(&self, kind: DocumentKind, key: &str, body: &[u8], stored: &[u8]) {
        if self.evicted.load(Ordering::Relaxed) && !self.holds_stored.swap(true, Ordering::Relaxed) {
            self.entries.clear();
        }
        let held = if self.holds_stored.load(Ordering::Relaxed) { stored } else { body };
        let mut displaced = Displaced::default();
        self.entries.insert_with_lifecycle(CachedDocument { kind, key: key.into() }, Arc::from(held), &mut displaced);
        if displaced.made_room_for(kind, key) {
            self.evicted.store(true, Ordering::Relaxed);
        }
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

    /// The counters, with what the cache being read now holds (nothing
    /// when there is none yet).
    pub(crate) fn statistics(&self, held: Option<&CachedDocuments>) -> DocumentCacheStatistics {
        DocumentCacheStatistics {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            resets: self.resets.load(Ordering::Relaxed),
            bytes: held.map_or(0, CachedDocuments::bytes),
            holds_stored: held.is_some_and(|cache| cache.holds_stored.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored_bodies::{BodyKind, compress};

    /// A rights profile's body and its stored frame.
    fn profile(id: &str) -> (Vec<u8>, Vec<u8>) {
        let holders: Vec<String> = (0..8)
            .map(|holder| {
                format!(r#"{{"partyId":"PTY-{holder:08}","name":"Holder {holder}","role":"composer","share":12.5}}"#)
            })
            .collect();
        let body = format!(
            r#"{{"lccId":"{id}","title":"Title of {id}","status":"published","openForLicensing":true,"holders":[{}]}}"#,
            holders.join(",")
        )
        .into_bytes();
        let stored = compress(BodyKind::RightsProfile, &body).expect("compress");
        (body, stored)
    }

    /// Keeps `count` profiles and returns how many are held, checking that
    /// each held one is served as written.
    fn keep_and_count(cache: &CachedDocuments, count: usize) -> usize {
        let ids: Vec<String> = (0..count).map(|number| format!("LCC-{number:010}")).collect();
        for id in &ids {
            let (body, stored) = profile(id);
            cache.keep(DocumentKind::RightsProfile, id, &body, &stored);
        }
        ids.iter()
            .filter(|id| {
                let served = cache.get(DocumentKind::RightsProfile, id);
                served.inspect(|served| assert_eq!(served.as_ref().expect("readable"), &profile(id).0)).is_some()
            })
            .count()
    }

    #[test]
    fn documents_that_fit_are_held_as_served() {
        let cache = CachedDocuments::new(1 << 20);
        assert_eq!(keep_and_count(&cache, 100), 100);
        let statistics = DocumentCacheCounters::default().statistics(Some(&cache));
        assert!(!statistics.holds_stored);
        let (body, _) = profile("LCC-0000000000");
        assert_eq!(statistics.bytes, 100 * entry_weight("LCC-0000000000", &body), "each held as served");
        assert!(cache.get(DocumentKind::Verification, "LCC-0000000000").is_none(), "another kind");
        cache.keep(DocumentKind::Verification, "LCC-0000000000", b"{\"a\":1}", b"{\"a\":1}");
        cache.forget("LCC-0000000000");
        assert!(cache.get(DocumentKind::RightsProfile, "LCC-0000000000").is_none(), "every kind forgotten");
        assert!(cache.get(DocumentKind::Verification, "LCC-0000000000").is_none(), "every kind forgotten");
        assert!(cache.get(DocumentKind::RightsProfile, "LCC-0000000001").is_some(), "other keys kept");
    }

    #[test]
    fn a_document_kept_twice_is_still_held_as_served() {
        let cache = CachedDocuments::new(1 << 20);
        let (body, stored) = profile("LCC-0000000000");
        // Two lookups that missed the same document at once each keep it.
        cache.keep(DocumentKind::RightsProfile, "LCC-0000000000", &body, &stored);
        cache.keep(DocumentKind::RightsProfile, "LCC-0000000000", &body, &stored);
        let (other, other_stored) = profile("LCC-0000000001");
        cache.keep(DocumentKind::RightsProfile, "LCC-0000000001", &other, &other_stored);
        let statistics = DocumentCacheCounters::default().statistics(Some(&cache));
        assert!(!statistics.holds_stored, "a replaced entry made no room");
        assert_eq!(statistics.bytes, 2 * entry_weight("LCC-0000000000", &body), "both held as served");
        assert_eq!(cache.get(DocumentKind::RightsProfile, "LCC-0000000000").expect("held").expect("readable"), body);
    }

    #[test]
    fn once_one_is_evicted_documents_are_held_as_stored() {
        // Large enough to be sharded as the default bound is.
        let capacity = 4 << 20;
        let cache = CachedDocuments::new(capacity);
        let held = keep_and_count(&cache, 20_000);
        let statistics = DocumentCacheCounters::default().statistics(Some(&cache));
        assert!(statistics.holds_stored);
        assert!(statistics.bytes <= capacity);
        let (body, stored) = profile("LCC-0000000000");
        assert!(stored.len() < body.len() / 2);
        let as_served = usize::try_from(capacity / entry_weight("LCC-0000000000", &body)).expect("small");
        assert!(held > 2 * as_served, "{held} documents held, where {as_served} fit as served");
    }
}
