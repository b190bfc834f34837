#![no_main]
//! Fuzz target `h3`: see `volley_fuzzing::check_h3` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_h3(data));
