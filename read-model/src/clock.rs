//! The time the freshness rules of the read side read: how long a pooled
//! reader keeps its snapshot, how long the document cache vouches for what
//! it holds, how long the active version is trusted; and the calendar time
//! the change feed stamps its changes with and keeps them by.
//!
//! In production it is the system's monotonic clock. Tests drive a manual
//! clock instead, so that "no staler than the bound" is checked by moving
//! time past the bound, not by sleeping. This module must not sleep or wait:
//! who waits for real time (a sweeper thread) still waits with the system.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A source of the current instant.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<Manual>>,
}

#[derive(Debug)]
struct Manual {
    start: Instant,
    /// The calendar time at `start`, in milliseconds since the epoch.
    start_unix_ms: i64,
    elapsed_nanos: AtomicU64,
}

impl Clock {
    /// The system's monotonic clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that moves only when [`Clock::advance`] moves it; clones share it.
    pub fn manual() -> Clock {
        Clock {
            manual: Some(Arc::new(Manual {
                start: Instant::now(),
                start_unix_ms: system_unix_ms(),
                elapsed_nanos: AtomicU64::new(0),
            })),
        }
    }

    /// Now.
    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(manual) => manual.start + Duration::from_nanos(manual.elapsed_nanos.load(Ordering::Acquire)),
        }
    }

    /// The calendar time, in milliseconds since the epoch. A manual clock
    /// starts at the system's and moves with [`Clock::advance`].
    pub fn unix_ms(&self) -> i64 {
        match &self.manual {
            None => system_unix_ms(),
            Some(manual) => {
                let elapsed_ms = manual.elapsed_nanos.load(Ordering::Acquire) / 1_000_000;
                manual.start_unix_ms.saturating_add(i64::try_from(elapsed_ms).unwrap_or(i64::MAX))
            }
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

fn system_unix_ms() -> i64 {
    let since_epoch = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
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
        let calendar = clock.unix_ms();
        clock.advance(Duration::from_secs(86_400));
        assert_eq!(clone.unix_ms(), calendar + 86_400_000);
    }
}
