//! `cargo fuzz run sandbox_key`: see `untrusted_input::Target::SandboxKey`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use untrusted_input::Target;

fuzz_target!(|input: &[u8]| Target::SandboxKey.check(input));
