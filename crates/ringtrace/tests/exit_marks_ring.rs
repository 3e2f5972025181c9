//! How a program ends is what `recover` says of its file ring: a program
//! that returns from `main` or calls `std::process::exit` with the ring
//! still held (a global `tracing` subscriber holds it to the end) leaves
//! it exited, with the time of its exit; one that aborts or is killed
//! while writing leaves it open with its process gone: died; one that
//! drops its tracer leaves it closed.
//!
//! Each test runs this binary again as the program, with its file ring in
//! a temporary directory, and reads the file once the program is gone.

use ringtrace::ring::file::{recover, Recovery, WriterState};
use ringtrace::Tracer;
use ringtrace_clock::{Clock, Mono};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
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
/// (`drop`: the tracer is dropped, never installed.)
fn program(how: &str, ring: &Path) {
    let tracer = Tracer::builder()
        .buffer_size(256 << 10)
        .file(ring)
        .build()
        .unwrap();
    if how == "drop" {
        let layer = tracer.layer();
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..EVENTS {
                tracing::info!(i, "before the end");
            }
        });
        drop(tracer);
        return;
    }
    tracing_subscriber::registry().with(tracer.layer()).init();
    for i in 0..EVENTS {
        tracing::info!(i, "before the end");
    }
    match how {
        // Writers that outlive the exit's mark: they go on until the
        // process is gone, and must corrupt nothing.
        "return" => {
            for _ in 0..LATE_WRITERS {
                std::thread::spawn(|| loop {
                    tracing::info!("after the close");
                    std::hint::spin_loop();
                });
            }
        }
        "exit" => std::process::exit(3),
        // Unwinds out of the test, and the harness exits with 101, as
        // Rust's `main` does after a panic.
        "panic" => panic!("the program panics"),
        "abort" => std::process::abort(),
        "kill" => loop {
            tracing::info!("until killed");
            std::thread::sleep(Duration::from_micros(50));
        },
        other => panic!("unknown ending {other}"),
    }
    // "return": the tracer is dropped here, but the subscriber keeps its
    // ring; the test function returns, and so does the test's `main`.
}

/// What the test saw of the program: how it ended, what recovery reads of
/// its ring, and readings of `mono` (the tracer's clock) and of the wall
/// clock before it started and after it ended.
struct Ended {
    status: ExitStatus,
    recovery: Recovery,
    mono: (u64, u64),
    wall: (u64, u64),
}

/// Runs `test` of this binary as the program ending by `how`, killing it
/// with SIGKILL once its ring holds events if `kill`.
fn run_program(test: &str, how: &str, kill: bool) -> Ended {
    let ring = ring_path(how);
    let clock = Mono::new();
    let ready = || recover(&ring).map_or(0, |r| r.totals().recovered) >= EVENTS;
    let life = ringtrace_testkit::run_child(
        test,
        &[(HOW, how.as_ref()), (RING, ring.as_os_str())],
        kill.then_some(&ready as &dyn Fn() -> bool),
        &|| clock.read(),
    );
    if !life.stderr.is_empty() {
        eprintln!(
            "the program said: {}",
            String::from_utf8_lossy(&life.stderr)
        );
    }
    let recovery = recover(&ring).unwrap();
    std::fs::remove_dir_all(ring.parent().unwrap()).unwrap();
    Ended {
        status: life.status,
        recovery,
        mono: life.clock,
        wall: life.wall,
    }
}

/// `ended`'s ring reads exited, at a time within the program's life (by
/// the tracer's clock and by the wall clock) and after its last event.
fn assert_exited_in_its_lifetime(ended: &Ended) {
    let WriterState::Exited(exit) = ended.recovery.writer else {
        panic!("not exited: {:?}", ended.recovery.writer);
    };
    let ticks = exit.ticks.expect("the tracer's clock read at the exit");
    let wall = exit.wall_ns.expect("the wall clock read at the exit");
    assert!(
        (ended.mono.0..=ended.mono.1).contains(&ticks),
        "exit at {ticks}, the program lived from {} to {}",
        ended.mono.0,
        ended.mono.1
    );
    assert!(
        (ended.wall.0..=ended.wall.1).contains(&wall),
        "exit at {wall} ns, the program lived from {} to {}",
        ended.wall.0,
        ended.wall.1
    );
    let first = ended.recovery.merged().first().unwrap().ts;
    assert!(ticks > first, "exit at {ticks}, the first event at {first}");
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
fn a_program_returning_from_main_with_the_layer_installed_leaves_its_ring_exited() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program(
        "a_program_returning_from_main_with_the_layer_installed_leaves_its_ring_exited",
        "return",
        false,
    );
    assert!(ended.status.success(), "{:?}", ended.status);
    assert_exited_in_its_lifetime(&ended);
    assert_eq!(exit_code(&ended), expected_code(0));
    // The late writers go on after the mark, until the process is gone.
    assert_whole(&ended.recovery, LATE_WRITERS);
}

#[test]
fn a_program_calling_process_exit_leaves_its_ring_exited() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program(
        "a_program_calling_process_exit_leaves_its_ring_exited",
        "exit",
        false,
    );
    assert_eq!(ended.status.code(), Some(3), "{:?}", ended.status);
    assert_exited_in_its_lifetime(&ended);
    assert_eq!(exit_code(&ended), expected_code(3));
    let r = &ended.recovery;
    assert_whole(r, 0);
    // Nothing wrote after them: exactly the program's events, the open
    // pages' included, and none left being written.
    assert_eq!(r.totals().recovered, EVENTS, "{:?}", r.totals());
    assert_eq!(r.totals().skipped_pending, 0, "{:?}", r.totals());
    // Every event came before the exit.
    let WriterState::Exited(exit) = r.writer else {
        unreachable!()
    };
    let last = r.merged().last().unwrap().ts;
    assert!(
        exit.ticks.unwrap() >= last,
        "{exit:?}, last event at {last}"
    );
}

/// The exit code the ring's exit record holds.
fn exit_code(ended: &Ended) -> Option<u8> {
    match ended.recovery.writer {
        WriterState::Exited(exit) => exit.code,
        other => panic!("not exited: {other:?}"),
    }
}

/// What the exit record holds of `code`: glibc tells it, others do not.
fn expected_code(code: u8) -> Option<u8> {
    cfg!(target_env = "gnu").then_some(code)
}

#[test]
fn a_program_whose_panic_unwinds_out_leaves_its_ring_exited_with_code_101() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program(
        "a_program_whose_panic_unwinds_out_leaves_its_ring_exited_with_code_101",
        "panic",
        false,
    );
    assert_eq!(ended.status.code(), Some(101), "{:?}", ended.status);
    assert_exited_in_its_lifetime(&ended);
    assert_eq!(exit_code(&ended), expected_code(101));
    if cfg!(target_env = "gnu") {
        let words = ringtrace::export::text::writer_words(&ended.recovery);
        assert!(
            words.contains("exited with code 101") && words.contains("panic"),
            "{words}"
        );
    }
    assert_whole(&ended.recovery, 0);
}

#[test]
fn a_program_aborting_leaves_its_ring_died() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program("a_program_aborting_leaves_its_ring_died", "abort", false);
    assert_eq!(
        ended.status.signal(),
        Some(libc::SIGABRT),
        "{:?}",
        ended.status
    );
    assert_eq!(ended.recovery.writer, WriterState::Died);
    assert_whole(&ended.recovery, 0);
}

#[test]
fn a_program_killed_while_writing_leaves_its_ring_died() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program(
        "a_program_killed_while_writing_leaves_its_ring_died",
        "kill",
        true,
    );
    assert_eq!(
        ended.status.signal(),
        Some(libc::SIGKILL),
        "{:?}",
        ended.status
    );
    assert_eq!(ended.recovery.writer, WriterState::Died);
    assert!(
        ended.recovery.totals().recovered >= EVENTS,
        "{:?}",
        ended.recovery.totals()
    );
}

#[test]
fn a_program_dropping_its_tracer_leaves_its_ring_closed() {
    if let (Some(how), Some(ring)) = (std::env::var_os(HOW), std::env::var_os(RING)) {
        return program(how.to_str().unwrap(), Path::new(&ring));
    }
    let ended = run_program(
        "a_program_dropping_its_tracer_leaves_its_ring_closed",
        "drop",
        false,
    );
    assert!(ended.status.success(), "{:?}", ended.status);
    assert_eq!(ended.recovery.writer, WriterState::Closed);
    assert_whole(&ended.recovery, 0);
    assert_eq!(ended.recovery.totals().recovered, EVENTS);
}
