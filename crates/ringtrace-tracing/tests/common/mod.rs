//! What the tests share: a small ring, and its events as `ringtrace dump`
//! prints them.
#![allow(dead_code)] // each test file uses some

use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
use ringtrace_ring::{RingBuffer, RingConfig};
use std::sync::Arc;

/// An in-memory ring of 2 CPU buffers of 64 KiB on the `mono` clock.
pub fn ring() -> Arc<RingBuffer<AnyClock>> {
    ring_of(2, 64 * 1024)
}

/// An in-memory ring of `cpus` CPU buffers of `per_cpu` bytes on the
/// `mono` clock.
pub fn ring_of(cpus: usize, per_cpu: usize) -> Arc<RingBuffer<AnyClock>> {
    let clock = "mono".parse::<ClockSpec>().unwrap().build().unwrap();
    let config = RingConfig::default().cpus(cpus).per_cpu_bytes(per_cpu);
    Arc::new(RingBuffer::new(config, clock).unwrap())
}

/// The ring's events as dump lines (no `#` lines), in time order.
pub fn dump_lines(ring: &RingBuffer<AnyClock>) -> Vec<String> {
    ring.flush();
    let snapshot = ring.snapshot(metadata_for_tracepoints().unwrap().to_bytes());
    let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
    dump.events().into_iter().map(|e| dump.line(e)).collect()
}

/// The ring's events as dump JSON objects.
pub fn dump_json(ring: &RingBuffer<AnyClock>) -> Vec<serde_json::Value> {
    ring.flush();
    let snapshot = ring.snapshot(metadata_for_tracepoints().unwrap().to_bytes());
    let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
    dump.events().into_iter().map(|e| dump.json(e)).collect()
}
