//! Any bytes as a ring file recover into a typed error or a
//! self-consistent partial recovery (ringtrace_check::recover).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A violated property panics, so that libFuzzer keeps the input.
    if let Err(violation) = ringtrace_check::recover::check(data) {
        panic!("{violation}");
    }
});
