//! `cargo fuzz run notification_cursor`: see `untrusted_input::Target::NotificationCursor`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::NotificationCursor.check(input));
