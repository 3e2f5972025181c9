//! A traced program for `ringtrace record`: THREADS threads each fire the
//! tracepoint `bench:event(thread, seq)` (a 16-byte event: its id, the
//! thread, the sequence number) at RATE events a second for SECONDS, into
//! the ring `Tracer::builder().from_env()` gives (the session's, under
//! `ringtrace record`), then print one JSON line:
//! `{"emitted":N,"refused":N,"cpu_ns":N}` (emitted: events the ring took;
//! refused: those it did not, `ringtrace::tracepoint::dropped()`; cpu_ns:
//! the writer threads' CPU time).
//!
//! ```text
//! cargo build --release --example paced -p ringtrace
//! ringtrace record -o trace -- target/release/examples/paced --rate 1000000 --threads 2 --seconds 2
//! ```
//!
//! A RATE of 0 writes as fast as it can.

use ringtrace::{trace, tracepoint};
use std::time::{Duration, Instant};

tracepoint! {
    system = bench;
    /// One paced event.
    pub fn event(thread: u32, seq: u64) = "thread={} seq={}";
}

fn arg(args: &[String], name: &str, default: f64) -> Result<f64, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{name} needs a number of 0 or more")),
    }
}

fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rate = arg(&args, "--rate", 100_000.0)?;
    let threads = arg(&args, "--threads", 1.0)? as usize;
    let seconds = arg(&args, "--seconds", 1.0)?;
    if !(1..=256).contains(&threads) || seconds <= 0.0 {
        return Err("--threads 1 to 256, --seconds more than 0".into());
    }
    let tracer = ringtrace::Tracer::builder().from_env().build()?;
    tracer.install()?;
    ringtrace::tracepoint::registry::enable("bench:event")?;
    let run = Duration::from_secs_f64(seconds);
    let workers: Vec<_> = (0..threads as u32)
        .map(|w| {
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut fired = 0u64;
                loop {
                    let elapsed = start.elapsed();
                    if elapsed >= run {
                        break;
                    }
                    // Paced in batches: as many as the rate allows by now.
                    let due = if rate == 0.0 {
                        fired + 256
                    } else {
                        (elapsed.as_secs_f64() * rate) as u64
                    };
                    if fired >= due {
                        std::hint::spin_loop();
                        continue;
                    }
                    for _ in 0..(due - fired).min(256) {
                        trace!(event(w, fired));
                        fired += 1;
                    }
                }
                (fired, thread_cpu_ns())
            })
        })
        .collect();
    let (mut fired, mut cpu) = (0, 0);
    for w in workers {
        let (f, c) = w.join().map_err(|_| "a writer panicked")?;
        fired += f;
        cpu += c;
    }
    let refused = ringtrace::tracepoint::dropped();
    let emitted = fired.saturating_sub(refused);
    println!("{{\"emitted\":{emitted},\"refused\":{refused},\"cpu_ns\":{cpu}}}");
    Ok(())
}
