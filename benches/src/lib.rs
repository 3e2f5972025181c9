//! Micro-benchmarks for ringtrace live in `benches/`. This library holds
//! what more than one of them runs: the write path as an instrumented
//! program calls it, and pinned producer threads.

use ringtrace_clock::Tsc;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod section_floor;
use std::time::{Duration, Instant};

/// A ring as the write-path benchmarks use it: default sizes, overwrite
/// mode (so a reservation never fails), stamped by `tsc`.
pub fn tsc_ring(clock: Tsc) -> RingBuffer<Tsc> {
    let config = RingConfig::default().mode(Mode::Overwrite);
    RingBuffer::new(config, clock).expect("default config is valid")
}

/// [`tsc_ring`] on a given write path (`Auto` is the default), stamped by
/// any clock: `None` if that path cannot be had here.
pub fn ring_on<C: ringtrace_clock::Clock>(
    clock: C,
    path: ringtrace_ring::WritePath,
) -> Option<RingBuffer<C>> {
    let config = RingConfig::default().mode(Mode::Overwrite).write_path(path);
    RingBuffer::new(config, clock).ok()
}

/// [`record_16b`] for a ring stamped by a clock built from its name.
#[inline(never)]
pub fn record_16b_any(r: &RingBuffer<ringtrace_clock::AnyClock>, cpu: usize, payload: &[u8; 16]) {
    let mut res = r
        .cpu_writer(cpu)
        .reserve(16)
        .expect("overwrite mode never refuses");
    res.write(payload);
    res.commit();
}

/// The same ring laid out in a file at `path` (the flight recorder),
/// created afresh: a file already there is removed first.
pub fn tsc_file_ring(clock: Tsc, path: &std::path::Path) -> RingBuffer<Tsc> {
    let _ = std::fs::remove_file(path);
    let config = RingConfig::default().mode(Mode::Overwrite).file(path);
    RingBuffer::new(config, clock).expect("a temporary file ring can be made")
}

/// One event as an instrumented program emits it: a call that reserves on
/// `cpu`'s buffer, writes 16 bytes and commits. Not inlined, so the loop
/// around it cannot hoist or merge anything across events.
#[inline(never)]
pub fn record_16b(r: &RingBuffer<Tsc>, cpu: usize, payload: &[u8; 16]) {
    let mut res = r
        .cpu_writer(cpu)
        .reserve(16)
        .expect("overwrite mode never refuses");
    res.write(payload);
    res.commit();
}

/// The same event in one call: `cpu_writer(cpu).write`, which on
/// the rseq path with a bare-rdtsc clock writes it whole.
#[inline(never)]
pub fn write_16b(r: &RingBuffer<Tsc>, cpu: usize, payload: &[u8; 16]) {
    r.cpu_writer(cpu)
        .write(payload)
        .expect("overwrite mode never refuses");
}

/// [`write_16b`] for a ring stamped by a clock built from its name.
#[inline(never)]
pub fn write_16b_any(r: &RingBuffer<ringtrace_clock::AnyClock>, cpu: usize, payload: &[u8; 16]) {
    r.cpu_writer(cpu)
        .write(payload)
        .expect("overwrite mode never refuses");
}

/// The same event through a writer bound to its CPU's buffer
/// ([`RingBuffer::cpu_writer`]).
#[inline(never)]
pub fn writer_16b<C: ringtrace_clock::Clock>(
    w: &ringtrace_ring::CpuWriter<'_, C>,
    payload: &[u8; 16],
) {
    w.write(payload).expect("overwrite mode never refuses");
}

/// Times `write` against a bare `read` of the TSC, paired: in each of 151
/// rounds 50,000 of one, then 50,000 of the other; returns the 10th, 50th
/// and 90th percentiles of the per-round ratio (the quick A/B examples'
/// measurement; `ring_ratio` is the full one).
pub fn ratio_to_rdtsc(tsc: &Tsc, mut write: impl FnMut()) -> [f64; 3] {
    use ringtrace_clock::Clock;
    let n = 50_000u32;
    let mut ratios = Vec::new();
    for _ in 0..151 {
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(tsc.read());
        }
        let bare = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        for _ in 0..n {
            write();
        }
        ratios.push(t.elapsed().as_nanos() as f64 / bare);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q) as usize];
    [at(0.1), at(0.5), at(0.9)]
}

/// Pins the calling thread to `cpu`; false if the kernel refused.
pub fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask, and the
    // call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Runs `producers` threads pinned one per CPU, each writing `per_thread`
/// events to its own CPU's buffer; returns the slowest thread's time.
pub fn run_producers(r: &RingBuffer<Tsc>, producers: usize, per_thread: u64) -> Duration {
    let payload = [0x5Au8; 16];
    let start = std::sync::Barrier::new(producers + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..producers)
            .map(|p| {
                let start = &start;
                s.spawn(move || {
                    pin(p);
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..per_thread {
                        record_16b(r, p, std::hint::black_box(&payload));
                    }
                    t.elapsed()
                })
            })
            .collect();
        start.wait();
        handles
            .into_iter()
            .map(|h| h.join().expect("a producer panicked"))
            .max()
            .unwrap_or_default()
    })
}

/// A ring of 4 MiB per CPU, overwrite mode, on the clock named `clock`
/// (`tsc` falls back to `mono` where there is no usable TSC): the ring
/// the `tracing` benches record into.
pub fn named_clock_ring(clock: &str) -> std::sync::Arc<RingBuffer<ringtrace_clock::AnyClock>> {
    let clock = clock
        .parse::<ringtrace_clock::ClockSpec>()
        .ok()
        .and_then(|spec| spec.build().ok())
        .or_else(|| {
            "mono"
                .parse::<ringtrace_clock::ClockSpec>()
                .ok()?
                .build()
                .ok()
        })
        .expect("the mono clock builds everywhere");
    let config = ringtrace_ring::RingConfig::default().per_cpu_bytes(4 << 20);
    std::sync::Arc::new(RingBuffer::new(config, clock).expect("a 4 MiB ring"))
}
