//! Tracepoints whose key checks are patched code (the `static-keys`
//! feature): keys are flipped at startup, before any other thread exists,
//! as the static-keys crate requires, and a flip with threads running is
//! refused with an error.
//!
//! `cargo run -p ringtrace-tracepoint --features static-keys --example patched_keys`

use ringtrace_clock::ClockSpec;
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracepoint::{registry, trace, tracepoint, TracepointError};

tracepoint! {
    /// Fired once per loop turn.
    pub fn turn(i: u32) = "i={}";
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = "counter".parse::<ClockSpec>()?.build()?;
    let ring = RingBuffer::new(
        RingConfig::default().cpus(1).per_cpu_bytes(64 * 1024),
        clock,
    )?;
    ringtrace_tracepoint::set_sink(Box::leak(Box::new(ring)))
        .expect("the first sink of this process");

    // Single-threaded here: the flip is allowed.
    let flipped = registry::enable("turn");
    for i in 0..3 {
        trace!(turn(i));
    }
    let recorded = ringtrace_tracepoint::sink().map_or(0, |r| r.merged().count());

    // With a second thread alive, patching must be refused.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || rx.recv());
    let refused = registry::disable("turn");
    drop(tx);
    let _ = other.join();

    println!("enable with one thread: {flipped:?}; events recorded: {recorded}");
    println!("disable with two threads: {refused:?}");
    if cfg!(feature = "static-keys") {
        assert_eq!(flipped, Ok(1));
        assert!(matches!(refused, Err(TracepointError::ThreadsRunning(_))));
    }
    assert_eq!(recorded, 3);
    Ok(())
}
