//! A quick paired measurement of one event on a write path against a bare
//! rdtsc, for trying changes to the fast path (ring_ratio is the full one):
//! `cargo run --release -p ringtrace-benches --example write_pair -- [rseq|cas]`.
use ringtrace_benches::{pin, ratio_to_rdtsc, record_16b, ring_on};
use ringtrace_clock::Tsc;
use std::hint::black_box;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "rseq".into());
    let path = ringtrace_ring::WritePath::parse(&path).unwrap_or_else(|e| panic!("{e}"));
    let tsc = Tsc::new().expect("a TSC");
    let cpu = ringtrace_ring::cpu::current_cpu();
    pin(cpu);
    let ring = ring_on(tsc, path).unwrap_or_else(|| panic!("{path} unavailable"));
    let payload = [0xA5u8; 16];
    let [p10, p50, p90] = ratio_to_rdtsc(&tsc, || record_16b(&ring, cpu, black_box(&payload)));
    println!(
        "{} path: times a bare rdtsc p10 {p10:.2} p50 {p50:.2} p90 {p90:.2}",
        ring.write_path()
    );
}
