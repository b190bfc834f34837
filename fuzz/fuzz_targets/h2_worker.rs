#![no_main]
//! Fuzz target `h2_worker`: see `volley::fuzzing::check_h2_worker` for what is checked. It
//! runs the lenient check while the defect kept in `regressions/h2_worker/open/` is open.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| volley::fuzzing::check_h2_worker_lenient(data));
