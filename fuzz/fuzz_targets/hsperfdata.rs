#![no_main]
//! Fuzz target `hsperfdata`: see `volley_fuzzing::check_hsperfdata` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_hsperfdata(data));
