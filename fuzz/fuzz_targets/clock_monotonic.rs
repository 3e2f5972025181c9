//! Whatever the clock does, the ring's time is monotonic, exact and counted
//! (ringtrace_check::clock_monotonic); clock names parse or are refused.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A violated property panics, so that libFuzzer keeps the input.
    if let Err(violation) = ringtrace_check::clock_monotonic::check(data) {
        panic!("{violation}");
    }
});
