//! A quick paired measurement of one event on a write path against a bare
//! rdtsc, for trying changes to the fast path (ring_ratio is the full one):
//! `cargo run --release -p ringtrace-benches --example write_pair -- [rseq|cas]`.
use ringtrace_benches::{pin, record_16b, ring_on};
use ringtrace_clock::{Clock, Tsc};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "rseq".into());
    let path = ringtrace_ring::WritePath::parse(&path).unwrap_or_else(|e| panic!("{e}"));
    let tsc = Tsc::new().expect("a TSC");
    let cpu = ringtrace_ring::cpu::current_cpu();
    pin(cpu);
    let ring = ring_on(tsc, path).unwrap_or_else(|| panic!("{path} unavailable"));
    let payload = [0xA5u8; 16];
    let n = 50_000u32;
    let mut ratios = Vec::new();
    for _ in 0..151 {
        let t = Instant::now();
        for _ in 0..n {
            black_box(tsc.read());
        }
        let bare = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        for _ in 0..n {
            record_16b(&ring, cpu, black_box(&payload));
        }
        ratios.push(t.elapsed().as_nanos() as f64 / bare);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q) as usize];
    println!(
        "{} path: times a bare rdtsc p10 {:.2} p50 {:.2} p90 {:.2}",
        ring.write_path(),
        at(0.1),
        at(0.5),
        at(0.9)
    );
}
