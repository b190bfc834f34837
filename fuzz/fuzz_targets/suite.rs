#![no_main]
//! Fuzz target `suite`: see `volley_fuzzing::check_suite` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_suite(data));
