#![no_main]
//! Fuzz target `h2`: see `volley_fuzzing::check_h2` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_h2(data));
