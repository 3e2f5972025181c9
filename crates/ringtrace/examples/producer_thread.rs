//! A producer and a consumer, as the kernel's ring_buffer_benchmark runs
//! them: one thread writes timestamped events as fast as it can, another
//! reads them as they come, and at the end every event is accounted for.
//!
//! `cargo run --release --example producer_thread`

use ringtrace::{Mode, Tracer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tracer = Tracer::builder()
        .clock("mono")
        .buffer_size(1 << 20)
        .mode(Mode::Overwrite)
        .build()?;
    let done = AtomicBool::new(false);
    let (written, read) = std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            let mut read = 0u64;
            // Acquire: once the flag is seen, every event the producer
            // committed before setting it is in the ring.
            while !done.load(Ordering::Acquire) {
                read += tracer.merged().count() as u64;
                std::thread::sleep(Duration::from_millis(1));
            }
            tracer.flush();
            read + tracer.merged().count() as u64
        });
        let (mut written, start) = (0u64, Instant::now());
        while start.elapsed() < Duration::from_millis(500) {
            if tracer.write(&written.to_le_bytes()).is_ok() {
                written += 1;
            }
        }
        // Release: pairs with the consumer's Acquire.
        done.store(true, Ordering::Release);
        (written, consumer.join().expect("the consumer panicked"))
    });
    let stats = tracer.finish()?.ring;
    println!(
        "written {written}, read {read}, overwritten {}, missed {}",
        stats.overrun, stats.missed
    );
    println!("{:.1} M events/s", written as f64 / 0.5 / 1e6);
    assert_eq!(stats.hit, written);
    assert_eq!(
        stats.hit,
        stats.read + stats.overrun + stats.lost + stats.entries + stats.discarded
    );
    Ok(())
}
