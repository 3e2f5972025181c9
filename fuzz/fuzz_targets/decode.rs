//! Any bytes as a page decode into records or typed errors
//! (ringtrace_check::decode).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A violated property panics, so that libFuzzer keeps the input.
    if let Err(violation) = ringtrace_check::decode::check(data) {
        panic!("{violation}");
    }
});
