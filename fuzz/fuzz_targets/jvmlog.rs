#![no_main]
//! Fuzz target `jvmlog`: see `volley_fuzzing::check_jvmlog` for what is checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley_fuzzing::check_jvmlog(data));
