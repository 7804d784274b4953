//! `cargo fuzz run avro_message`: see `untrusted_input::Target::AvroMessage`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::AvroMessage.check(input));
