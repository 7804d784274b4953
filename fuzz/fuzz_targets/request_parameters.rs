//! `cargo fuzz run request_parameters`: see `untrusted_input::Target::RequestParameters`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::RequestParameters.check(input));
