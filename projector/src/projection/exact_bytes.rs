//! Serialization into allocations of exactly the serialized size.
//!
//! A batch keeps every body it serializes (provenance entries, documents,
//! encoded states) until the store has written it, while the next batch is
//! projected. `serde_json::to_vec` starts at 128 bytes and doubles, so a
//! provenance entry of about 280 bytes held 512; and mimalloc's `realloc`
//! keeps a block that shrinks by less than half, so `shrink_to_fit` would
//! not give the slack back. Here each thread serializes into a buffer it
//! reuses and copies out exactly the bytes written, which also saves the
//! copies of the doublings. Measured with heaptrack on the benchmark's
//! 1,004,856 events in batches of 60,000, the peak heap fell from 375 to
//! 332 MiB.
//!
//! This module only serializes; what is serialized is the caller's concern.

use std::cell::RefCell;

use serde::Serialize;

use super::compact_json;

/// A buffer that grew beyond this (a rare, very large document) is dropped
/// after use rather than kept for the thread's lifetime.
const LARGEST_KEPT_BUFFER: usize = 1 << 20;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `value` as JSON, the bytes `serde_json` writes (see [`compact_json`]).
pub fn json(value: &impl Serialize) -> Vec<u8> {
    // Plain data structs serialize to a Vec without failing; a shape
    // `compact_json` leaves to `serde_json` is written again by it.
    with_buffer(|buffer| {
        compact_json::write(buffer, value).is_ok() || {
            buffer.clear();
            serde_json::to_writer(buffer, value).is_ok()
        }
    })
}

/// `value` as MessagePack, struct fields by position.
pub fn message_pack(value: &impl Serialize) -> Vec<u8> {
    // As for JSON: writing plain structs to a Vec cannot fail.
    with_buffer(|buffer| rmp_serde::encode::write(buffer, value).is_ok())
}

/// Runs `serialize` into the thread's buffer and copies out what it wrote;
/// empty when it failed.
fn with_buffer(serialize: impl FnOnce(&mut Vec<u8>) -> bool) -> Vec<u8> {
    BUFFER.with_borrow_mut(|buffer| {
        buffer.clear();
        let bytes = if serialize(buffer) { buffer.as_slice().to_vec() } else { Vec::new() };
        if buffer.capacity() > LARGEST_KEPT_BUFFER {
            *buffer = Vec::new();
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Entry {
        event_id: String,
        changed: Vec<String>,
    }

    fn entry(size: usize) -> Entry {
        Entry { event_id: "e".repeat(size), changed: vec!["title".into(), "isrcs".into()] }
    }

    #[test]
    fn bodies_equal_the_serializers_own_output_and_hold_no_slack() {
        for size in [0, 100, 300, 5_000] {
            let value = entry(size);
            let json_body = json(&value);
            assert_eq!(json_body, serde_json::to_vec(&value).expect("json"));
            assert_eq!(json_body.capacity(), json_body.len(), "{size}-byte id");
            let packed = message_pack(&value);
            assert_eq!(packed, rmp_serde::to_vec(&value).expect("message pack"));
            assert_eq!(packed.capacity(), packed.len(), "{size}-byte id");
        }
    }

    #[test]
    fn a_value_compact_json_leaves_to_serde_json_is_written_by_it_whole() {
        let keyed_by_truth = std::collections::BTreeMap::from([(false, entry(3)), (true, entry(4))]);
        let body = json(&keyed_by_truth);
        assert_eq!(body, serde_json::to_vec(&keyed_by_truth).expect("json"));
        assert!(body.starts_with(br#"{"false":{"event_id":"eee""#), "{}", String::from_utf8_lossy(&body));
    }

    #[test]
    fn a_large_body_does_not_leave_the_thread_a_large_buffer() {
        let large = json(&entry(2 * LARGEST_KEPT_BUFFER));
        assert!(large.len() > 2 * LARGEST_KEPT_BUFFER);
        BUFFER.with_borrow(|buffer| assert_eq!(buffer.capacity(), 0));
        let small = json(&entry(10));
        assert_eq!(small, serde_json::to_vec(&entry(10)).expect("json"));
    }
}
