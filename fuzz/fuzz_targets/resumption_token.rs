//! `cargo fuzz run resumption_token`: see `untrusted_input::Target::ResumptionToken`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::ResumptionToken.check(input));
