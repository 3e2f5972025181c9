//! A file ring still alive when its process exits normally is marked
//! exited by the exit handler, with the time of the exit: whatever else
//! happens at that moment (rings made and dropped on another thread), and
//! only by the process that made it (a forked child's exit leaves its
//! parent's ring open). A ring dropped reads closed; a process that ends
//! any other way (`abort()`, a fatal signal, `_exit`) leaves its ring
//! open, and recovery reads it as died.

mod file_support;

use file_support::{config, Scratch};
use ringtrace_clock::{AnyClock, Clock, Counter, Mono};
use ringtrace_ring::file::{self, layout, ExitTime, Recovery, WriterState};
use ringtrace_ring::{Mode, RingBuffer};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::OnceLock;
use std::time::Duration;

/// Set in the child: the ring file it leaks and exits with.
const LEAKED: &str = "RINGTRACE_FILE_EXIT_LEAKED";
/// Set in the child: the directory its other thread makes rings in.
const CHURN: &str = "RINGTRACE_FILE_EXIT_CHURN";

fn ring(path: &Path) -> RingBuffer<AnyClock> {
    RingBuffer::new(
        config(path, Mode::Overwrite, 2, 1024, 8),
        AnyClock::custom(Counter::new()),
    )
    .unwrap()
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn a_ring_alive_at_exit_is_marked_exited_while_other_rings_come_and_go() {
    if let (Some(leaked), Some(churn)) = (std::env::var_os(LEAKED), std::env::var_os(CHURN)) {
        // The child: one ring kept to the end, another thread making and
        // dropping rings as the process exits.
        let kept: &'static RingBuffer<AnyClock> = Box::leak(Box::new(ring(Path::new(&leaked))));
        kept.write(b"kept").unwrap();
        let churn = std::path::PathBuf::from(churn);
        let (made, ready) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for i in 0u64.. {
                let path = churn.join(format!("churn-{}.ring", i % 4));
                let _ = std::fs::remove_file(&path);
                if let Ok(r) = RingBuffer::new(
                    config(&path, Mode::Overwrite, 2, 1024, 8),
                    AnyClock::custom(Counter::new()),
                ) {
                    let _ = r.write(b"churn");
                }
                if i == 8 {
                    let _ = made.send(());
                }
            }
        });
        ready.recv().unwrap();
        std::process::exit(0);
    }
    let scratch = Scratch::new("file-exit");
    let leaked = scratch.path("leaked.ring");
    let status = ringtrace_testkit::self_command()
        .args([
            "a_ring_alive_at_exit_is_marked_exited_while_other_rings_come_and_go",
            "--exact",
            "--test-threads=1",
        ])
        .env(LEAKED, &leaked)
        .env(CHURN, &scratch.dir)
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let r = file::recover(&leaked).unwrap();
    assert!(matches!(r.writer, WriterState::Exited(_)), "{:?}", r.writer);
    assert_eq!(r.totals().recovered, 1);
}

#[test]
#[cfg_attr(miri, ignore = "fork")]
fn a_forked_childs_exit_leaves_the_parents_ring_open() {
    let scratch = Scratch::new("file-exit-fork");
    let path = scratch.path("parent.ring");
    let r = ring(&path);
    r.write(b"before the fork").unwrap();
    // SAFETY: the child only calls exit, which runs the exit handlers
    // (ringtrace's among them) and ends it; it touches no lock another
    // thread of the parent could have held at the fork but the rings'
    // registry, which nothing here holds.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: ends the child, running its exit handlers.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` is valid to write.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // The parent still has the ring: open, alive, live.
    assert_eq!(file::recover(&path).unwrap().writer, WriterState::Live);
    r.write(b"after the child").unwrap();
    drop(r);
    let after = file::recover(&path).unwrap();
    assert_eq!(after.writer, WriterState::Closed);
    assert_eq!(after.totals().recovered, 2);
}

/// Set in the child: how it ends (see [`ending_child`]).
const ENDING: &str = "RINGTRACE_FILE_EXIT_ENDING";
/// Set in the child: its ring file.
const ENDING_RING: &str = "RINGTRACE_FILE_EXIT_ENDING_RING";
/// Events the child writes before it ends.
const ENDING_EVENTS: u64 = 100;

/// The child's ring, held in a static as a program keeps one to its end
/// (never dropped).
static KEPT: OnceLock<RingBuffer<Mono>> = OnceLock::new();

/// Set in the child once its clock is to panic.
static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `mono`, until [`TOLD`]; then every read panics.
struct PanicsWhenTold(Mono);

impl Clock for PanicsWhenTold {
    fn read(&self) -> u64 {
        assert!(
            !TOLD.load(std::sync::atomic::Ordering::Relaxed),
            "the clock panics, as told"
        );
        self.0.read()
    }
    fn info(&self) -> ringtrace_clock::ClockInfo {
        self.0.info()
    }
}

/// The child's ring stamped by a clock that panics at the exit.
static PANICKING: OnceLock<RingBuffer<PanicsWhenTold>> = OnceLock::new();

/// The child: a file ring stamped by `mono` (so that its ticks can be
/// compared with the parent's readings), `ENDING_EVENTS` events, then the
/// end the parent asked for. A no-op in the parent's own run.
#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn ending_child() {
    let (Some(how), Some(path)) = (std::env::var_os(ENDING), std::env::var_os(ENDING_RING)) else {
        return;
    };
    let make = || {
        RingBuffer::new(
            config(Path::new(&path), Mode::Overwrite, 2, 1024, 8),
            Mono::new(),
        )
        .unwrap()
    };
    let write = |ring: &RingBuffer<Mono>| {
        for i in 0..ENDING_EVENTS {
            ring.write(&i.to_le_bytes()).unwrap();
        }
    };
    if how == "drop" {
        let ring = make();
        write(&ring);
        drop(ring);
        return;
    }
    if how == "panicking_clock" {
        // A clock that panics from now on: at the exit too.
        let ring = PANICKING.get_or_init(|| {
            RingBuffer::new(
                config(Path::new(&path), Mode::Overwrite, 2, 1024, 8),
                PanicsWhenTold(Mono::new()),
            )
            .unwrap()
        });
        for i in 0..ENDING_EVENTS {
            ring.write(&i.to_le_bytes()).unwrap();
        }
        TOLD.store(true, std::sync::atomic::Ordering::Relaxed);
        return;
    }
    let ring = KEPT.get_or_init(make);
    write(ring);
    match how.to_str().unwrap() {
        // The test returns, and so does the harness's `main`.
        "return" => {}
        "exit" => std::process::exit(3),
        "abort" => std::process::abort(),
        "segv" => {
            // std's handler for SIGSEGV (stack overflow detection) gives
            // a raised one back to the default action and returns; the
            // default, set here, ends the process as a fault would.
            // SAFETY: SIG_DFL is a valid disposition for SIGSEGV, and
            // raise only sends the signal to this thread.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
            unreachable!("SIGSEGV's default action ends the process");
        }
        // SAFETY: ends the process at once, running no exit handler.
        "_exit" => unsafe { libc::_exit(0) },
        "kill" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        other => panic!("unknown ending {other}"),
    }
}

/// What the parent saw of one child: its status, what recovery read of
/// its ring, and the readings of `mono` and of the wall clock taken
/// before the child started and after it ended.
struct Ended {
    status: ExitStatus,
    recovery: Recovery,
    /// The file's status word and exit record, as bytes.
    status_area: Vec<u8>,
    mono: (u64, u64),
    wall: (u64, u64),
}

/// Runs [`ending_child`] ending by `how` (SIGKILLed once its events are
/// in, for `kill`) and recovers its ring.
fn run_child(how: &str) -> Ended {
    let scratch = Scratch::new(&format!("file-exit-{how}"));
    let path = scratch.path("child.ring");
    let clock = Mono::new();
    let ready = || file::recover(&path).map_or(0, |r| r.totals().recovered) >= ENDING_EVENTS;
    let life = ringtrace_testkit::run_child(
        "ending_child",
        &[(ENDING, how.as_ref()), (ENDING_RING, path.as_os_str())],
        (how == "kill").then_some(&ready as &dyn Fn() -> bool),
        &|| clock.read(),
    );
    let (status, (mono_before, mono_after), (wall_before, wall_after)) =
        (life.status, life.clock, life.wall);
    let child_id = life.pid;
    let recovery = file::recover(&path).unwrap();
    assert_eq!(recovery.header.pid, child_id, "the header names the child");
    assert_eq!(recovery.totals().recovered, ENDING_EVENTS, "{how}");
    let at = layout::STATUS_OFFSET;
    let status_area = std::fs::read(&path).unwrap()[at..at + 8 + 8 * layout::EXIT_WORDS].to_vec();
    Ended {
        status,
        recovery,
        status_area,
        mono: (mono_before, mono_after),
        wall: (wall_before, wall_after),
    }
}

/// The exit time of `ended`'s ring, checked: both readings taken, within
/// the child's life, and after its last event.
fn assert_exited_in_its_lifetime(ended: &Ended) -> ExitTime {
    let WriterState::Exited(exit) = ended.recovery.writer else {
        panic!("not exited: {:?}", ended.recovery.writer);
    };
    let ticks = exit.ticks.expect("the ring's clock read at the exit");
    let wall = exit.wall_ns.expect("the wall clock read at the exit");
    assert!(
        (ended.mono.0..=ended.mono.1).contains(&ticks),
        "exit at {ticks} ticks, the child lived from {} to {}",
        ended.mono.0,
        ended.mono.1
    );
    assert!(
        (ended.wall.0..=ended.wall.1).contains(&wall),
        "exit at {wall} ns, the child lived from {} to {}",
        ended.wall.0,
        ended.wall.1
    );
    let last = ended.recovery.merged().last().unwrap().ts;
    assert!(ticks >= last, "exit at {ticks}, its last event at {last}");
    // Nothing was being written as it ended.
    assert_eq!(ended.recovery.totals().skipped_pending, 0);
    exit
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn a_return_from_main_with_a_ring_in_a_static_reads_exited_at_its_time() {
    let ended = run_child("return");
    assert!(ended.status.success(), "{:?}", ended.status);
    let exit = assert_exited_in_its_lifetime(&ended);
    // The bytes as docs/format.md lays them out: the status word, then
    // ticks, wall-clock ns and what was read (both, and with glibc the
    // exit code, 0 in bits 8 to 15).
    let code = if cfg!(target_env = "gnu") {
        layout::EXIT_HAS_CODE
    } else {
        0
    };
    let word =
        |i: usize| u64::from_le_bytes(ended.status_area[8 * i..8 * i + 8].try_into().unwrap());
    assert_eq!(word(0), file::STATUS_EXITED);
    assert_eq!(word(0).to_be_bytes()[..6], *b"EXITED");
    assert_eq!(
        (Some(word(1)), Some(word(2)), word(3)),
        (
            exit.ticks,
            exit.wall_ns,
            layout::EXIT_HAS_TICKS | layout::EXIT_HAS_WALL | code
        )
    );
    assert_eq!(exit.code, (code != 0).then_some(0));
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn process_exit_with_a_ring_in_a_static_reads_exited_at_its_time() {
    let ended = run_child("exit");
    assert_eq!(ended.status.code(), Some(3), "{:?}", ended.status);
    assert_exited_in_its_lifetime(&ended);
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn a_clock_that_panics_at_the_exit_loses_the_ticks_not_the_exit() {
    let ended = run_child("panicking_clock");
    // The panic is caught in the exit handler: no abort.
    assert!(ended.status.success(), "{:?}", ended.status);
    let WriterState::Exited(exit) = ended.recovery.writer else {
        panic!("not exited: {:?}", ended.recovery.writer);
    };
    assert_eq!(exit.ticks, None, "{exit:?}");
    let wall = exit.wall_ns.expect("the wall clock read at the exit");
    assert!((ended.wall.0..=ended.wall.1).contains(&wall), "{exit:?}");
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn a_dropped_ring_reads_closed_not_exited() {
    let ended = run_child("drop");
    assert!(ended.status.success(), "{:?}", ended.status);
    assert_eq!(ended.recovery.writer, WriterState::Closed);
    assert!(
        ended.status_area[8..].iter().all(|&b| b == 0),
        "no exit record"
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn an_exited_file_appended_to_loses_its_exit_and_reads_as_the_new_run_ends() {
    let scratch = Scratch::new("file-exit-append");
    let path = scratch.path("child.ring");
    let status = ringtrace_testkit::self_command()
        .args(["ending_child", "--exact", "--test-threads=1"])
        .env(ENDING, "return")
        .env(ENDING_RING, &path)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(matches!(
        file::recover(&path).unwrap().writer,
        WriterState::Exited(_)
    ));
    let ring = RingBuffer::new(
        config(&path, Mode::Overwrite, 2, 1024, 8).append(true),
        Mono::new(),
    )
    .unwrap();
    // Open again, for this process: the old exit is gone from the file.
    assert_eq!(file::recover(&path).unwrap().writer, WriterState::Live);
    let at = layout::EXIT_OFFSET;
    let record = std::fs::read(&path).unwrap()[at..at + 8 * layout::EXIT_WORDS].to_vec();
    assert!(record.iter().all(|&b| b == 0), "{record:?}");
    ring.write(b"appended").unwrap();
    drop(ring);
    let after = file::recover(&path).unwrap();
    assert_eq!(after.writer, WriterState::Closed);
    assert_eq!(after.totals().recovered, ENDING_EVENTS + 1);
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn abort_a_fatal_signal_sigkill_and_underscore_exit_read_died() {
    for (how, signal) in [
        ("abort", Some(libc::SIGABRT)),
        ("segv", Some(libc::SIGSEGV)),
        ("kill", Some(libc::SIGKILL)),
        ("_exit", None),
    ] {
        let ended = run_child(how);
        assert_eq!(ended.status.signal(), signal, "{how}: {:?}", ended.status);
        assert_eq!(ended.recovery.writer, WriterState::Died, "{how}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn the_status_word_and_exit_record_read_as_the_format_says_old_files_included() {
    let scratch = Scratch::new("file-exit-bytes");
    let path = scratch.path("t.ring");
    let ring = ring(&path);
    ring.write(b"event").unwrap();
    drop(ring);
    let bytes = std::fs::read(&path).unwrap();
    let with = |words: &[(usize, u64)]| {
        let mut b = bytes.clone();
        for &(at, value) in words {
            b[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        file::recover_bytes("t", b).unwrap().writer
    };
    let (status, ticks, wall, read) = (
        layout::STATUS_OFFSET,
        layout::EXIT_OFFSET,
        layout::EXIT_OFFSET + 8,
        layout::EXIT_OFFSET + 16,
    );
    // As an older build left a ring it closed at a normal exit: closed,
    // and a record's bytes mean nothing unless the word says exited.
    assert_eq!(with(&[]), WriterState::Closed);
    assert_eq!(
        with(&[(ticks, 5), (wall, 6), (read, 3)]),
        WriterState::Closed
    );
    // Exited: each reading is there only if the record says it was read.
    let exited = |t, w, r| {
        with(&[
            (status, file::STATUS_EXITED),
            (ticks, t),
            (wall, w),
            (read, r),
        ])
    };
    assert_eq!(
        exited(5, 6, 3),
        WriterState::Exited(ExitTime::new(Some(5), Some(6)))
    );
    assert_eq!(
        exited(0, 6, 2),
        WriterState::Exited(ExitTime::new(None, Some(6)))
    );
    assert_eq!(
        exited(5, 0, 1),
        WriterState::Exited(ExitTime::new(Some(5), None))
    );
    assert_eq!(
        exited(5, 6, 0),
        WriterState::Exited(ExitTime::new(None, None))
    );
}
