//! The ring's write path against the clock it stamps with.
//!
//! `cargo bench -p ringtrace-benches --bench ring`
//!
//! - `write/bare_rdtsc`: the floor, one `rdtsc` per iteration.
//! - `write/reserve_commit_16B_tsc`: one reserve + 16-byte write + commit,
//!   stamped by `tsc`, single thread, overwrite mode (never full).
//! - `producers/1` and `producers/2`: events per second with one producer,
//!   and with two producers pinned to two CPUs, each on its own buffer.

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringtrace_benches::{record_16b, run_producers, tsc_ring};
use ringtrace_clock::{Clock, Tsc};
use ringtrace_ring::{RingBuffer, RingConfig};
use std::hint::black_box;

fn write_path(c: &mut Criterion) {
    let Ok(tsc) = Tsc::new() else {
        eprintln!("tsc unavailable here; the ring benchmarks need it");
        return;
    };
    let mut group = c.benchmark_group("write");
    group.bench_function("bare_rdtsc", |b| b.iter(|| black_box(tsc.read())));
    let r = tsc_ring(tsc);
    let payload = [0xA5u8; 16];
    group.bench_function("reserve_commit_16B_tsc", |b| {
        b.iter(|| record_16b(&r, 0, black_box(&payload)))
    });
    group.finish();
}

fn producers(c: &mut Criterion) {
    let Ok(tsc) = Tsc::new() else { return };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let r = tsc_ring(tsc);
    let mut group = c.benchmark_group("producers");
    for n in [1usize, 2].into_iter().filter(|&n| n <= cpus) {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(n.to_string(), |b| {
            // At least a million events per thread per sample, so that
            // waking the threads is noise next to the writing; the time is
            // scaled back to the iterations criterion asked for.
            b.iter_custom(|iters| {
                let per_thread = iters.max(1_000_000);
                run_producers(&r, n, per_thread).mul_f64(iters as f64 / per_thread as f64)
            })
        });
    }
    group.finish();
}

/// One recorded event (reserve, stamp, 16-byte write, commit) under every
/// clock and protection: the trace_clock_local patch's per-event cost.
fn record_per_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    for spec in ringtrace_clock::ClockSpec::all() {
        let Ok(clock) = spec.build() else { continue };
        let config = RingConfig::default().cpus(1).per_cpu_bytes(256 * 1024);
        let Ok(r) = RingBuffer::new(config, clock) else {
            continue;
        };
        let payload = [0x3Cu8; 16];
        group.bench_function(spec.to_string(), |b| {
            b.iter(|| {
                r.cpu_writer(0)
                    .write(black_box(&payload))
                    .expect("overwrite mode never refuses")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, write_path, producers, record_per_clock);
criterion_main!(benches);
