#![no_main]
//! Fuzz target `nodetrace`: see `volley_fuzzing::check_nodetrace` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_nodetrace(data));
