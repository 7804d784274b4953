//! `cargo fuzz run batch_lookup`: see `untrusted_input::Target::BatchLookup`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::BatchLookup.check(input));
