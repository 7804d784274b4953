//! The time the freshness rules of the read side read: how long a pooled
//! reader keeps its snapshot, how long the document cache vouches for what
//! it holds, how long the active version is trusted.
//!
//! In production it is the system's monotonic clock. Tests drive a manual
//! clock instead, so that "no staler than the bound" is checked by moving
//! time past the bound, not by sleeping. This module must not sleep or wait:
//! who waits for real time (a sweeper thread) still waits with the system.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of the current instant.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<Manual>>,
}

#[derive(Debug)]
struct Manual {
    start: Instant,
    elapsed_nanos: AtomicU64,
}

impl Clock {
    /// The system's monotonic clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that moves only when [`Clock::advance`] moves it; clones share it.
    pub fn manual() -> Clock {
        Clock { manual: Some(Arc::new(Manual { start: Instant::now(), elapsed_nanos: AtomicU64::new(0) })) }
    }

    /// Now.
    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(manual) => manual.start + Duration::from_nanos(manual.elapsed_nanos.load(Ordering::Acquire)),
        }
    }

    /// The time since `earlier`, zero if `earlier` is later.
    pub fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// Moves a manual clock forward; the system clock moves by itself, so
    /// this does nothing to it.
    pub fn advance(&self, by: Duration) {
        if let Some(manual) = &self.manual {
            let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            manual.elapsed_nanos.fetch_add(nanos, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_its_clones_move_with_it() {
        let clock = Clock::manual();
        let clone = clock.clone();
        let start = clock.now();
        assert_eq!(clock.now(), start);
        clone.advance(Duration::from_millis(15));
        assert_eq!(clock.since(start), Duration::from_millis(15));
        assert_eq!(clock.since(start + Duration::from_secs(1)), Duration::ZERO);
    }
}
