#![no_main]
//! Fuzz target `gctrace`: see `volley_fuzzing::check_gctrace` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_gctrace(data));
