#![no_main]
//! Fuzz target `units`: see `volley_fuzzing::check_units` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_units(data));
