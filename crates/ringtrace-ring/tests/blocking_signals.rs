//! A blocking writer keeps its deadline under a storm of signals: a
//! signal every 30 us (a profiling timer at 33 kHz) interrupts every sleep
//! of its wait, and the write still gives up once its wait has run out.
//!
//! The storm runs in a child process of this test binary.

use ringtrace_clock::Counter;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::time::{Duration, Instant};

/// Set in the child: run the storm.
const CHILD: &str = "RINGTRACE_TEST_BLOCKING_SIGNALS_CHILD";

extern "C" fn on_alarm(_: libc::c_int) {}

/// The child: a full one-CPU ring waiting 100 ms a write, its writer
/// signalled every 30 us; prints how long each of five refused writes
/// took.
#[test]
fn child_entry() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(512)
        .mode(Mode::Discard)
        .blocking(Duration::from_millis(100));
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    // SAFETY: an empty handler, installed before any signal is sent.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as *const () as usize;
        // As `signal(3)` installs a handler: interrupted calls restart.
        action.sa_flags = libc::SA_RESTART;
        assert_eq!(
            libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()),
            0
        );
    }
    // A process-wide timer's signal may go to any thread: this thread,
    // the writer, is signalled itself, every 30 us, by one that spins.
    // SAFETY: pthread_self has no preconditions.
    let writer = unsafe { libc::pthread_self() };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut next = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if Instant::now() >= next {
                    // SAFETY: the writer thread outlives this one (it
                    // joins it below).
                    unsafe { libc::pthread_kill(writer, libc::SIGALRM) };
                    next += Duration::from_micros(30);
                }
                std::hint::spin_loop();
            }
        })
    };
    let mut refused = 0;
    let mut seq = 0u64;
    while refused < 5 {
        let start = Instant::now();
        if ring.cpu_writer(0).write(&seq.to_le_bytes()).is_err() {
            refused += 1;
            println!("WAITED {}", start.elapsed().as_micros());
        }
        seq += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    storm.join().unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "processes and timers")]
fn a_blocking_write_gives_up_on_time_under_a_signal_storm() {
    let mut child = ringtrace_testkit::self_command()
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang detector, not a timing: five waits of 100 ms end in far less.
    let status = ringtrace_testkit::wait_within(
        &mut child,
        Duration::from_secs(30),
        "a blocking write under a signal storm that never gave up",
    );
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(status.success(), "{text}");
    let waits: Vec<u128> = text
        .lines()
        .filter_map(|l| l.split("WAITED ").nth(1)?.trim().parse().ok())
        .collect();
    assert_eq!(waits.len(), 5, "{text}");
    // Each refused write waited its whole 100 ms first.
    assert!(waits.iter().all(|&us| us >= 100_000), "{waits:?}");
}
