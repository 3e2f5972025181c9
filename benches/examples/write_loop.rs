//! Writes 16-byte events in a loop for a few seconds on one pinned CPU, for
//! a profiler to look at: `cargo run --release -p ringtrace-benches
//! --example write_loop -- [rseq|cas] [seconds]`.
use ringtrace_benches::{pin, record_16b_any, ring_on};
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = ringtrace_ring::WritePath::parse(&args.next().unwrap_or_else(|| "rseq".into()))
        .unwrap_or_else(|e| panic!("{e}"));
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let cpu = ringtrace_ring::cpu::current_cpu();
    pin(cpu);
    let clock = "tsc"
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let ring = ring_on(clock, path).unwrap_or_else(|| panic!("{path} unavailable"));
    let payload = [0xA5u8; 16];
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    while std::time::Instant::now() < until {
        for _ in 0..100_000 {
            record_16b_any(&ring, cpu, black_box(&payload));
        }
        n += 100_000;
    }
    println!(
        "{} events on the {} path: {:.2} ns each",
        n,
        ring.write_path(),
        seconds * 1e9 / n as f64
    );
}
