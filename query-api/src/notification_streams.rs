//! How many notification streams each key holds open on this replica, so
//! that one key cannot hold every connection a replica allows. A stream
//! takes a slot when it opens and gives it back when its body is dropped
//! (the client went away, or the server is shutting down).
//!
//! The count is per replica: a key may hold this many on each replica the
//! balancer sends it to, and the balancer keeps a client on one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Streams one key may hold open on one replica.
pub const MAX_STREAMS_PER_KEY: u32 = 2;

/// The open streams of every key.
#[derive(Debug, Clone, Default)]
pub struct StreamSlots {
    open: Arc<Mutex<HashMap<Arc<str>, u32>>>,
}

/// One open stream's slot, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    slots: StreamSlots,
    key_id: Arc<str>,
}

impl StreamSlots {
    /// A slot for `key_id`, or `None` when the key holds the most it may.
    pub fn take(&self, key_id: &Arc<str>) -> Option<StreamSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(Arc::clone(key_id)).or_default();
        if *count >= MAX_STREAMS_PER_KEY {
            return None;
        }
        *count += 1;
        Some(StreamSlot { slots: self.clone(), key_id: Arc::clone(key_id) })
    }

    /// The streams open now, across keys.
    pub fn open(&self) -> u32 {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).values().sum()
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.key_id) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_streams_and_gets_a_slot_back_when_one_closes() {
        let slots = StreamSlots::default();
        let key: Arc<str> = Arc::from("key-1");
        let other: Arc<str> = Arc::from("key-2");
        let first = slots.take(&key).expect("a first stream");
        let _second = slots.take(&key).expect("a second stream");
        assert!(slots.take(&key).is_none(), "a third is refused");
        let _elsewhere = slots.take(&other).expect("another key is not affected");
        assert_eq!(slots.open(), 3);
        drop(first);
        assert!(slots.take(&key).is_some(), "a closed stream gives its slot back");
    }
}
