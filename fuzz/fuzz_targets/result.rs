#![no_main]
//! Fuzz target `result`: see `volley_fuzzing::check_result` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_result(data));
