//! What an event on another CPU's buffer costs, on each write path: a
//! thread pinned to CPU 0 writes 8-byte events with `cpu_writer(1).write(..)`,
//! then as `cpu_writer(1).reserve(..)`, write and commit, then with `cpu_writer(0).write(
//! ..)`, and prints ns per event, the remote updates (system calls) the
//! rseq path made, and whether buffer 1 went into shared mode (it does
//! after 64 of them within 10 ms: its remote updates then make none).
//!
//! `cargo run --release -p ringtrace-benches --example remote_write`

use ringtrace_benches::{pin, ring_on};
use ringtrace_clock::Tsc;
use ringtrace_ring::WritePath;
use std::time::Instant;

const EVENTS: u64 = 20_000;

fn main() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 || !pin(0) {
        eprintln!("remote_write: needs two CPUs and CPU 0 to pin to");
        std::process::exit(2);
    }
    let Ok(tsc) = Tsc::new() else {
        eprintln!("remote_write: no usable TSC here");
        std::process::exit(2);
    };
    for path in [WritePath::Rseq, WritePath::Cas] {
        let Some(ring) = ring_on(tsc, path) else {
            println!("{path:?}: not available here");
            continue;
        };
        let per_event = |cpu: usize| {
            let t = Instant::now();
            for i in 0..EVENTS {
                ring.cpu_writer(cpu)
                    .write(&i.to_le_bytes())
                    .expect("overwrite mode never refuses");
            }
            t.elapsed().as_nanos() as f64 / EVENTS as f64
        };
        let other = per_event(1);
        let updates = ring.remote_updates();
        let t = Instant::now();
        for i in 0..EVENTS {
            let mut r = ring
                .cpu_writer(1)
                .reserve(8)
                .expect("overwrite mode never refuses");
            r.write(&i.to_le_bytes());
            r.commit();
        }
        let reserved = t.elapsed().as_nanos() as f64 / EVENTS as f64;
        let reserved_updates = ring.remote_updates() - updates;
        let own = per_event(0);
        println!(
            "{path:?}: buffer 1 went into shared mode {} times; {} remote updates in it made no system call",
            ring.shared_mode_entries(),
            ring.shared_updates()
        );
        println!(
            "{path:?}: another CPU's buffer: write {other:.0} ns an event ({:.2} remote updates an event), reserve+write+commit {reserved:.0} ns ({:.2}); own CPU's buffer: write {own:.1} ns",
            updates as f64 / EVENTS as f64,
            reserved_updates as f64 / EVENTS as f64
        );
    }
}
