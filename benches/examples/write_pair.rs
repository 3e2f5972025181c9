//! A quick paired measurement of one event on a write path against a bare
//! rdtsc, for trying changes to the fast path (ring_ratio is the full one):
//! `cargo run --release -p ringtrace-benches --example write_pair -- [rseq|cas] [reserve|write|writer]`
//! (reserve, write and commit as three calls; `cpu_writer(cpu).write`; a `CpuWriter` kept).
use ringtrace_benches::{pin, ratio_to_rdtsc, record_16b, ring_on, write_16b, writer_16b};
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
    let how = std::env::args().nth(2).unwrap_or_else(|| "reserve".into());
    let writer = ring.cpu_writer(cpu);
    let [p10, p50, p90] = match how.as_str() {
        "reserve" => ratio_to_rdtsc(&tsc, || record_16b(&ring, cpu, black_box(&payload))),
        "write" => ratio_to_rdtsc(&tsc, || write_16b(&ring, cpu, black_box(&payload))),
        "writer" => ratio_to_rdtsc(&tsc, || writer_16b(&writer, black_box(&payload))),
        other => panic!("{other}: reserve, write or writer"),
    };
    println!(
        "{} path, {how}: times a bare rdtsc p10 {p10:.2} p50 {p50:.2} p90 {p90:.2}",
        ring.write_path()
    );
}
