//! Any sequence of ring operations (ringtrace_check::ring_ops) matches the model.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A violated property panics, so that libFuzzer keeps the input.
    if let Err(violation) = ringtrace_check::ring_ops::check(data) {
        panic!("{violation}");
    }
});
