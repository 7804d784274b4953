//! `cargo fuzz run avro_file`: see `untrusted_input::Target::AvroFile`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::AvroFile.check(input));
