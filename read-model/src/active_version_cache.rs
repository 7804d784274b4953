//! Both backends' short-lived memory of which model version is active.
//!
//! Readers ask for the active version on every request; asking the catalog
//! each time would double the cost of a lookup. A cached answer is trusted
//! for [`ACTIVE_VERSION_TTL`], so an activation by another process reaches
//! every reader within that time, and one by this process (which records it
//! here) at once.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::store::ModelVersion;

/// How long a reader trusts its cached idea of the active version.
pub const ACTIVE_VERSION_TTL: Duration = Duration::from_millis(500);

/// The active version as last read or set, with when.
#[derive(Debug, Default)]
pub struct ActiveVersionCache {
    entry: Mutex<Option<(Option<ModelVersion>, Instant)>>,
    clock: Clock,
}

impl ActiveVersionCache {
    /// A cache that reads the time from `clock`.
    pub fn with_clock(clock: Clock) -> ActiveVersionCache {
        ActiveVersionCache { entry: Mutex::new(None), clock }
    }

    /// The cached answer, if it is fresh.
    pub fn fresh(&self) -> Option<Option<ModelVersion>> {
        let entry = self.entry.lock().unwrap_or_else(PoisonError::into_inner);
        entry.filter(|(_, read_at)| self.clock.since(*read_at) < ACTIVE_VERSION_TTL).map(|(version, _)| version)
    }

    /// Records the active version as just read from, or written to, the catalog.
    pub fn record(&self, version: Option<ModelVersion>) {
        *self.entry.lock().unwrap_or_else(PoisonError::into_inner) = Some((version, self.clock.now()));
    }

    /// Forgets the cached answer, so the next reader asks the catalog.
    pub fn forget(&self) {
        self.entry.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_version_is_fresh_until_forgotten() {
        let cache = ActiveVersionCache::default();
        assert_eq!(cache.fresh(), None, "nothing known yet");
        cache.record(None);
        assert_eq!(cache.fresh(), Some(None), "no active version is an answer too");
        cache.record(Some(ModelVersion(2)));
        assert_eq!(cache.fresh(), Some(Some(ModelVersion(2))));
        cache.forget();
        assert_eq!(cache.fresh(), None);
    }

    #[test]
    fn a_recorded_version_is_trusted_for_its_time_to_live_only() {
        let clock = Clock::manual();
        let cache = ActiveVersionCache::with_clock(clock.clone());
        cache.record(Some(ModelVersion(1)));
        clock.advance(ACTIVE_VERSION_TTL - Duration::from_millis(1));
        assert_eq!(cache.fresh(), Some(Some(ModelVersion(1))));
        clock.advance(Duration::from_millis(1));
        assert_eq!(cache.fresh(), None, "asked again once the time to live has passed");
    }
}
