#![no_main]
//! Fuzz target `response`: see `volley_fuzzing::check_response` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_response(data));
