//! The fuzz targets' properties under proptest, on stable: random bytes
//! decoded into the same scripts the fuzz targets run (see
//! `ringtrace_check`). proptest shrinks a failing input to a short one;
//! the fuzzers explore with coverage feedback and keep a corpus.

use proptest::prelude::*;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_ring_ops_script_matches_the_model(input in bytes(if cfg!(miri) { 200 } else { 2_000 })) {
        if let Err(v) = ringtrace_check::ring_ops::check(&input) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }

    #[test]
    fn any_clock_script_keeps_time_monotonic_exact_and_counted(input in bytes(if cfg!(miri) { 200 } else { 2_000 })) {
        if let Err(v) = ringtrace_check::clock_monotonic::check(&input) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }

    #[test]
    fn any_bytes_decode_as_a_page_without_panic(input in bytes(if cfg!(miri) { 300 } else { 5_000 })) {
        if let Err(v) = ringtrace_check::decode::check(&input) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads the seed files from disk")]
    fn a_damaged_ring_file_recovers_consistently_or_is_refused(
        seed in 0usize..4,
        damage in prop::collection::vec((any::<usize>(), any::<u8>()), 1..40),
    ) {
        // A seed file (fuzz/corpus/recover) with bytes overwritten anywhere
        // past the header (whose checksum would refuse it outright) and,
        // one time in four, in it too.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/recover");
        let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        let mut file = std::fs::read(&names[seed % names.len()]).unwrap();
        let from = if damage.len() % 4 == 0 { 0 } else { 4096 };
        for (at, byte) in damage {
            let len = file.len() - from;
            file[from + at % len] = byte;
        }
        if let Err(v) = ringtrace_check::recover::check(&file) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }

    #[test]
    fn any_clock_name_parses_or_is_refused_with_a_reason(name in ".{0,40}") {
        if let Err(v) = ringtrace_check::clock_monotonic::check_clock_name(&name) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }

    #[test]
    fn any_tick_conversion_is_monotonic(hz in any::<u64>(), a in any::<u64>(), b in any::<u64>()) {
        if let Err(v) = ringtrace_check::clock_monotonic::check_conversion(hz, a, b) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }
}
