#![no_main]
//! Fuzz target `h2_worker`: see `volley_fuzzing::check_h2_worker` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_h2_worker(data));
