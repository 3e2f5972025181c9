//! The ring's two performance bounds, as ratios of paired samples taken in
//! one run.
//!
//! `cargo bench -p ringtrace-benches --bench ring_ratio`
//!
//! - **write**: one reserve + 16-byte write + commit stamped by `tsc`
//!   (through a call, as an instrumented program makes it) against a bare
//!   `rdtsc` loop, both on one pinned CPU.
//! - **scaling**: two producers pinned to two CPUs, each on its own
//!   buffer, against one producer: events per second, two over one.
//! - **file**: the same write into a file ring (the flight recorder,
//!   `RingConfig::file`, in the temporary directory) against the anonymous
//!   ring: what laying the ring out in a shared file map costs a writer,
//!   page zeroing at each claim included.
//!
//! Why paired: these shared 2-core machines drift between fast and slow
//! phases that last seconds. Criterion measures one function for seconds
//! and then the next, so its two means can come from different phases.
//! Here each sample of one side is taken right after a sample of the
//! other, the ratio is taken per pair, and the median of those ratios is
//! the figure docs/results.md quotes, with its 10th and 90th percentiles.

use ringtrace_benches::{pin, record_16b, run_producers, tsc_file_ring, tsc_ring};
use ringtrace_clock::{Clock, Tsc};
use std::hint::black_box;
use std::time::Instant;

/// Iterations per write-path sample: about a millisecond each.
const WRITE_ITERS: u64 = 100_000;
/// Write-path pairs.
const WRITE_PAIRS: usize = 301;
/// Events per producer thread per scaling sample.
const SCALING_EVENTS: u64 = 2_000_000;
/// Scaling pairs.
const SCALING_PAIRS: usize = 31;

/// The 10th, 50th and 90th percentiles of `values`.
fn percentiles(mut values: Vec<f64>) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    [at(0.1), at(0.5), at(0.9)]
}

fn write_ratio(tsc: Tsc) {
    let cpu = ringtrace_ring::cpu::current_cpu();
    if !pin(cpu) {
        eprintln!("write: could not pin to CPU {cpu}; the pairs may migrate");
    }
    let r = tsc_ring(tsc);
    let payload = [0xA5u8; 16];
    let (mut bare, mut write, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..WRITE_PAIRS {
        let t = Instant::now();
        for _ in 0..WRITE_ITERS {
            black_box(tsc.read());
        }
        let b = t.elapsed().as_nanos() as f64 / WRITE_ITERS as f64;
        let t = Instant::now();
        for _ in 0..WRITE_ITERS {
            record_16b(&r, cpu, black_box(&payload));
        }
        let w = t.elapsed().as_nanos() as f64 / WRITE_ITERS as f64;
        bare.push(b);
        write.push(w);
        ratio.push(w / b);
    }
    let [b10, b50, b90] = percentiles(bare);
    let [w10, w50, w90] = percentiles(write);
    let [r10, r50, r90] = percentiles(ratio);
    println!("write path on CPU {cpu}, {WRITE_PAIRS} pairs of {WRITE_ITERS} iterations");
    println!("  bare rdtsc           ns  p10 {b10:6.2}  p50 {b50:6.2}  p90 {b90:6.2}");
    println!("  reserve+16B+commit   ns  p10 {w10:6.2}  p50 {w50:6.2}  p90 {w90:6.2}");
    println!("  ratio (paired)           p10 {r10:6.2}  p50 {r50:6.2}  p90 {r90:6.2}   bound 1.5");
}

fn scaling_ratio(tsc: Tsc, cpus: usize) {
    if cpus < 2 {
        println!("scaling: skipped, one CPU here");
        return;
    }
    let r = tsc_ring(tsc);
    let mut ratio = Vec::new();
    for _ in 0..SCALING_PAIRS {
        let one = run_producers(&r, 1, SCALING_EVENTS).as_secs_f64();
        let two = run_producers(&r, 2, SCALING_EVENTS).as_secs_f64();
        // Events per second, two producers over one: (2N / two) / (N / one).
        ratio.push(2.0 * one / two);
    }
    let [r10, r50, r90] = percentiles(ratio);
    println!("scaling, {SCALING_PAIRS} pairs of {SCALING_EVENTS} events per producer");
    println!("  two over one producer    p10 {r10:6.2}  p50 {r50:6.2}  p90 {r90:6.2}   bound 1.8");
}

/// File-ring pairs: fewer than the write pairs, each as long.
const FILE_PAIRS: usize = 101;

fn file_ratio(tsc: Tsc) {
    let cpu = ringtrace_ring::cpu::current_cpu();
    let anon = tsc_ring(tsc);
    let path = std::env::temp_dir().join(format!("ringtrace-bench-{}.ring", std::process::id()));
    let file = tsc_file_ring(tsc, &path);
    let payload = [0xA5u8; 16];
    let time = |r: &ringtrace_ring::RingBuffer<Tsc>| {
        let t = Instant::now();
        for _ in 0..WRITE_ITERS {
            record_16b(r, cpu, black_box(&payload));
        }
        t.elapsed().as_nanos() as f64 / WRITE_ITERS as f64
    };
    // A lap of each first, so that both rings' pages are touched (the
    // file's allocated in the page cache) before anything is timed.
    time(&anon);
    time(&file);
    let (mut a, mut f, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..FILE_PAIRS {
        let x = time(&anon);
        let y = time(&file);
        a.push(x);
        f.push(y);
        ratio.push(y / x);
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    let [a10, a50, a90] = percentiles(a);
    let [f10, f50, f90] = percentiles(f);
    let [r10, r50, r90] = percentiles(ratio);
    println!(
        "file ring against anonymous ring on CPU {cpu}, {FILE_PAIRS} pairs of {WRITE_ITERS} events"
    );
    println!("  anonymous ring       ns  p10 {a10:6.2}  p50 {a50:6.2}  p90 {a90:6.2}");
    println!("  file ring            ns  p10 {f10:6.2}  p50 {f50:6.2}  p90 {f90:6.2}");
    println!("  ratio (paired)           p10 {r10:6.2}  p50 {r50:6.2}  p90 {r90:6.2}");
}

fn main() {
    let Ok(tsc) = Tsc::new() else {
        eprintln!("tsc unavailable here; the ring ratios need it");
        return;
    };
    // Counted before the write pairs pin this thread to one CPU.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    write_ratio(tsc);
    file_ratio(tsc);
    scaling_ratio(tsc, cpus);
}
