//! The scripts reach what they are meant to check: over a fixed set of
//! pseudo-random inputs, events are committed and read, clocks go back and
//! are corrected, dead writers cost events, and overwrite mode overruns.
//! If decoding stopped early (as `arbitrary`'s own `Vec` does at its first
//! "no more" byte) the properties would pass while checking nothing.

fn inputs(n: usize, len: usize) -> impl Iterator<Item = Vec<u8>> {
    (0..n as u64).map(move |i| ringtrace_check::pseudo_random_bytes(0x9E37_79B9_7F4A_7C15 ^ i, len))
}

#[test]
fn ring_and_clock_scripts_commit_read_correct_lose_and_overrun() {
    let (mut ops, mut committed, mut read, mut fixups, mut lost, mut overrun) = (0, 0, 0, 0, 0, 0);
    let n = if cfg!(miri) { 4 } else { 200 };
    for bytes in inputs(n, 1_500) {
        for o in [
            ringtrace_check::ring_ops::check(&bytes).unwrap(),
            ringtrace_check::clock_monotonic::check(&bytes).unwrap(),
        ] {
            ops += o.ops;
            committed += o.committed;
            read += o.read;
            fixups += o.ts_fixups;
            lost += o.lost;
            overrun += o.overrun;
        }
    }
    assert!(
        ops > n * 100,
        "scripts are short: {ops} ops from {n} inputs"
    );
    assert!(
        committed > 0 && read > 0,
        "{committed} committed, {read} read"
    );
    assert!(fixups > 0, "no clock went back");
    if !cfg!(miri) {
        assert!(lost > 0, "no dead writer cost an event");
        assert!(overrun > 0, "nothing was overrun");
    }
}

#[test]
fn page_inputs_decode_records_and_find_corruption() {
    let (mut parsed, mut records, mut corrupt) = (0, 0, 0);
    for bytes in inputs(if cfg!(miri) { 8 } else { 500 }, 300) {
        let o = ringtrace_check::decode::check(&bytes).unwrap();
        parsed += usize::from(o.header_ok);
        records += o.records;
        corrupt += usize::from(o.corrupt);
    }
    assert!(
        parsed > 0 && records > 0 && corrupt > 0,
        "{parsed} {records} {corrupt}"
    );
}
