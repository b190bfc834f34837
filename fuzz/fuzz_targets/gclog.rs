#![no_main]
//! Fuzz target `gclog`: see `volley::fuzzing::check_gclog` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley::fuzzing::check_gclog(data));
