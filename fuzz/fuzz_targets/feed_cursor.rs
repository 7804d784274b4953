//! `cargo fuzz run feed_cursor`: see `untrusted_input::Target::FeedCursor`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::FeedCursor.check(input));
