//! Series that every request updates, kept in one copy per shard of
//! threads and added into their Prometheus series when they are rendered.
//!
//! A Prometheus counter or histogram is a set of atomics that every thread
//! updates, so two threads serving lookups at once would pass those cache
//! lines from one core to the other on every request, a cost that counting
//! instructions does not show (docs/benchmarks.md has the timed
//! comparison). Here each thread updates its shard's copy (prometheus'
//! unsynchronized local series) under a lock that, but for rendering, only
//! the threads of that shard take, so its line stays in the thread's core.
//! Rendering takes each shard's lock in turn and adds what it holds into
//! the shared series before they are gathered, so a scrape counts every
//! request recorded before it.
//!
//! This module only keeps the copies; which series have them is the
//! metrics module's to decide.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Shards per sharded series: more than the threads that serve requests
/// on the machines the service runs on, so that two seldom share one.
const SHARDS: usize = 16;

thread_local! {
    /// The shard of the current thread, given out in turn.
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
    };
}

/// A value on cache lines of its own (two of 64 bytes: a line's neighbour
/// is fetched with it), so that one shard's updates move no other's line.
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// One copy of a series' local state per shard.
#[derive(Debug)]
pub(super) struct Shards<T> {
    shards: Box<[Padded<Mutex<T>>]>,
}

impl<T> Shards<T> {
    pub(super) fn new(mut make: impl FnMut() -> T) -> Shards<T> {
        Shards { shards: (0..SHARDS).map(|_| Padded(Mutex::new(make()))).collect() }
    }

    /// Updates the current thread's copy.
    pub(super) fn update(&self, update: impl FnOnce(&T)) {
        let index = SHARD.with(|index| *index);
        update(&self.shards[index].0.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Visits every copy, each under its lock.
    pub(super) fn each(&self, mut visit: impl FnMut(&T)) {
        for shard in &self.shards {
            visit(&shard.0.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    use super::*;

    #[test]
    fn every_update_of_every_thread_is_visited() {
        let shards = Arc::new(Shards::new(|| AtomicU64::new(0)));
        let threads: Vec<_> = (0..2 * SHARDS)
            .map(|_| {
                let shards = Arc::clone(&shards);
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        shards.update(|count| {
                            count.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        let mut total = 0;
        let mut used = 0;
        shards.each(|count| {
            let count = count.load(Ordering::Relaxed);
            total += count;
            used += usize::from(count > 0);
        });
        assert_eq!(total, 2 * SHARDS as u64 * 1_000);
        assert!(used > 1, "threads are spread over the shards");
    }
}
