//! How a program ends is what `recover` says of its file ring: a program
//! that returns from `main` or calls `std::process::exit` with the ring
//! still held (a global `tracing` subscriber holds it to the end) leaves
//! it closed; one killed while writing leaves it open with its process
//! gone: died.
//!
//! Each test runs this binary again as the program, with its file ring in
//! a temporary directory, and reads the file once the program is gone.

use ringtrace::ring::file::{recover, Recovery, WriterState};
use ringtrace::Tracer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Set in the program: how it ends, and its ring file.
const HOW: &str = "RINGTRACE_EXIT_TEST_HOW";
const RING: &str = "RINGTRACE_EXIT_TEST_RING";

/// Events the program writes before it ends.
const EVENTS: u64 = 1000;

fn ring_path(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-exit-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("trace.ring")
}

/// The program: a file ring behind a global `tracing` subscriber, as the
/// README installs it, and `EVENTS` events; then it ends as `how` says.
fn program(how: &str, ring: &Path) {
    let tracer = Tracer::builder()
        .buffer_size(256 << 10)
        .file(ring)
        .build()
        .unwrap();
    tracing_subscriber::registry().with(tracer.layer()).init();
    for i in 0..EVENTS {
        tracing::info!(i, "before the end");
    }
    match how {
        // Writers that outlive the close: they go on until the process
        // is gone, and must corrupt nothing.
        "return" => {
            for _ in 0..LATE_WRITERS {
                std::thread::spawn(|| loop {
                    tracing::info!("after the close");
                    std::hint::spin_loop();
                });
            }
        }
        "exit" => std::process::exit(0),
        "kill" => loop {
            tracing::info!("until killed");
            std::thread::sleep(Duration::from_micros(50));
        },
        other => panic!("unknown ending {other}"),
    }
    // "return": the tracer is dropped here, but the subscriber keeps its
    // ring; the test function returns, and so does the test's `main`.
}

/// Runs `test` of this binary as the program ending by `how`, killing it
/// with SIGKILL once its ring holds events if `kill`; returns what
/// recovery reads of its ring.
fn run_program(test: &str, how: &str, kill: bool) -> Recovery {
    let ring = ring_path(how);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(HOW, how)
        .env(RING, &ring)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hang detector, not a timing.
    let deadline = Instant::now() + Duration::from_secs(120);
    if kill {
        loop {
            let written = recover(&ring).map_or(0, |r| r.totals().recovered);
            if written >= EVENTS {
                break;
            }
            assert!(child.try_wait().unwrap().is_none(), "ended by itself");
            assert!(Instant::now() < deadline, "never wrote its events");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    if !kill {
        assert!(
            out.status.success(),
            "{:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let recovery = recover(&ring).unwrap();
    std::fs::remove_dir_all(ring.parent().unwrap()).unwrap();
    recovery
}

/// Writer threads the "return" program leaves running at its end.
const LATE_WRITERS: u64 = 2;

/// Every event of the program is there, none torn; `late` writers still
/// running when the process ended may each have been stopped mid-event:
/// a reservation left pending, or a commit not yet counted (the accounting
/// then off by one), as after a crash. Nothing else may be wrong.
fn assert_whole(r: &Recovery, late: u64) {
    let t = r.totals();
    assert!(t.recovered >= EVENTS, "{t:?}");
    assert_eq!(
        (t.skipped_unreadable, t.changed_while_read),
        (0, 0),
        "{t:?}"
    );
    assert!(t.skipped_pending <= late, "{t:?}");
    for problem in r.cpus.iter().flat_map(|c| c.problems.iter()) {
        let off: u64 = problem
            .split_once("off by ")
            .and_then(|(_, n)| n.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX);
        assert!(
            off <= late && problem.contains("stopped between its commit and its count"),
            "{problem}"
        );
    }
}

#[test]
fn a_program_returning_from_main_with_the_layer_installed_leaves_its_ring_closed() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let r = run_program(
        "a_program_returning_from_main_with_the_layer_installed_leaves_its_ring_closed",
        "return",
        false,
    );
    assert_eq!(r.writer, WriterState::Closed);
    assert_whole(&r, LATE_WRITERS);
}

#[test]
fn a_program_calling_process_exit_leaves_its_ring_closed() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let r = run_program(
        "a_program_calling_process_exit_leaves_its_ring_closed",
        "exit",
        false,
    );
    assert_eq!(r.writer, WriterState::Closed);
    assert_whole(&r, 0);
    // Nothing wrote after them: exactly the program's events, the open
    // pages' included.
    assert_eq!(r.totals().recovered, EVENTS, "{:?}", r.totals());
}

#[test]
fn a_program_killed_while_writing_leaves_its_ring_died() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let r = run_program(
        "a_program_killed_while_writing_leaves_its_ring_died",
        "kill",
        true,
    );
    assert_eq!(r.writer, WriterState::Died);
    assert!(r.totals().recovered >= EVENTS, "{:?}", r.totals());
}
