//! A user-defined clock plugged in: a discrete-event simulation stamps its
//! trace with virtual time, so the trace reads in simulated nanoseconds
//! however fast or slow the simulation ran.
//!
//! `cargo run --example custom_clock`

use ringtrace::clock::{ClockInfo, Guarantee};
use ringtrace::{trace, tracepoint, AnyClock, Clock, DumpOptions, Tracer};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The simulation's virtual time in nanoseconds, advanced by the event
/// loop. Shared: the loop advances it, the tracer reads it.
struct SimTime(Arc<AtomicU64>);

impl Clock for SimTime {
    fn read(&self) -> u64 {
        // Relaxed: one thread advances and traces; the reading only has to
        // be the value that thread stored last, which program order gives.
        self.0.load(Ordering::Relaxed)
    }

    fn info(&self) -> ClockInfo {
        // Ticks are nanoseconds, never go back, and are exact.
        ClockInfo::nanosecond("sim-time", Guarantee::Global, 1.0)
    }
}

tracepoint! {
    /// A packet reached a node.
    pub fn packet_delivered(node: u32, bytes: u64) = "node={} bytes={}";
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let now = Arc::new(AtomicU64::new(0));
    let tracer = Tracer::builder()
        .clock(AnyClock::custom(SimTime(Arc::clone(&now))))
        .buffer_size(64 * 1024)
        .build()?;
    tracer.install()?;
    ringtrace::tracepoint::registry::enable("packet_delivered")?;

    // Three nodes pass packets round a ring; each hop takes a latency that
    // depends on the packet's size.
    let mut queue = BinaryHeap::new();
    queue.push(Reverse((0u64, 0u32, 1500u64)));
    let mut expected = Vec::new();
    while let Some(Reverse((at, node, bytes))) = queue.pop() {
        if expected.len() == 12 {
            break;
        }
        // Relaxed: see SimTime::read.
        now.store(at, Ordering::Relaxed);
        trace!(packet_delivered(node, bytes));
        expected.push(at);
        let next = (node + 1) % 3;
        queue.push(Reverse((at + 5_000 + bytes * 8, next, bytes / 2 + 64)));
    }

    // The dump shows virtual time; it reads without consuming.
    print!("{}", tracer.dump(DumpOptions::default())?);
    // Every event carries the virtual time at which it happened.
    let stamped: Vec<u64> = tracer.merged().map(|e| e.ts).collect();
    assert_eq!(stamped, expected, "events stamped with something else");
    let stats = tracer.finish()?;
    println!(
        "# {} events, virtual time {} ns",
        stats.ring.hit, expected[11]
    );
    Ok(())
}
