//! What a fired tracepoint costs against a bare ring write of the same
//! bytes, per clock: `cargo run --release -p ringtrace-benches --example
//! tracepoint_cost -- [rounds]`. One thread, pinned, a memory ring in
//! overwrite mode (no reader), the 20-byte event of `paced`
//! (`bench:event(thread: u32, seq: u64)`: id, tid, then the fields).
//! Interleaved rounds; prints each way's median ns per event.
use ringtrace_benches::pin;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::hint::black_box;
use std::time::Instant;

ringtrace_tracepoint::tracepoint! {
    system = bench;
    /// One event, as `paced` fires it.
    pub fn event(thread: u32, seq: u64) = "thread={} seq={}";
}

const PER_ROUND: u64 = 2_000_000;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let cpu = ringtrace_ring::cpu::current_cpu();
    pin(cpu);
    let clock_name = std::env::var("CLOCK").unwrap_or_else(|_| "mono".into());
    let clock = clock_name
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let ring: &'static RingBuffer<_> = Box::leak(Box::new(
        RingBuffer::new(RingConfig::default().mode(Mode::Overwrite), clock).unwrap(),
    ));
    ringtrace_tracepoint::set_sink(ring).unwrap();
    ringtrace_tracepoint::registry::enable("bench:event").unwrap();
    let tid = ringtrace_tracepoint::thread_id();
    let (mut bare, mut fired) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        for seq in 0..PER_ROUND {
            let mut b = [0u8; 20];
            b[0..4].copy_from_slice(&7u32.to_le_bytes());
            b[4..8].copy_from_slice(&tid.to_le_bytes());
            b[8..12].copy_from_slice(&1u32.to_le_bytes());
            b[12..20].copy_from_slice(&black_box(seq).to_le_bytes());
            let _ = ring.write(&b);
        }
        bare.push(start.elapsed().as_nanos() as f64 / PER_ROUND as f64);
        let start = Instant::now();
        for seq in 0..PER_ROUND {
            ringtrace_tracepoint::trace!(event(1, black_box(seq)));
        }
        fired.push(start.elapsed().as_nanos() as f64 / PER_ROUND as f64);
    }
    println!(
        "clock {clock_name}, {} path: ring.write {:.1} ns, trace! {:.1} ns (medians of {rounds})",
        ring.write_path(),
        median(&mut bare),
        median(&mut fired)
    );
}
