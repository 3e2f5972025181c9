//! `TracerBuilder::stream_to`: a program's own ring streamed into a
//! session, finished by `finish`, or at a normal exit without it; and its
//! bad input.

use ringtrace::ring::file::WriterState;
use ringtrace::session::{ProcessExit, Session};
use ringtrace::{Mode, Tracer};
use ringtrace_testkit::{self_command, TempDir};
use std::time::Duration;

/// Set in the child: the session directory it streams into.
const DIR: &str = "RINGTRACE_STREAM_TEST_DIR";
const EVENTS: u32 = 50_000;

/// Set in the child: how it leaves its tracer (`installed`, `held`).
const HOW: &str = "RINGTRACE_STREAM_TEST_HOW";

/// The child: streams EVENTS events, then exits (code 3) without finishing its
/// tracer: installed (so never dropped), or dropped while a clone of its
/// ring lives on (as a layer's would); the exit handler drains and
/// finishes the session.
#[test]
fn child_entry() {
    let Ok(dir) = std::env::var(DIR) else {
        return;
    };
    match std::env::var(HOW).as_deref() {
        Ok("killed") => killed_with_its_ring_in_a_file(std::path::Path::new(&dir), false),
        Ok("killed-discard") => killed_with_its_ring_in_a_file(std::path::Path::new(&dir), true),
        Ok(how @ ("fork-finish" | "fork-exit")) => forks_while_streaming(&dir, how),
        _ => {}
    }
    let tracer = blocking_stream(&dir);
    for i in 0..EVENTS / 2 {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    if std::env::var(HOW).as_deref() == Ok("held") {
        let ring = tracer.shared_ring();
        drop(tracer);
        for i in EVENTS / 2..EVENTS {
            while ring.write(&i.to_le_bytes()).is_err() {
                std::thread::yield_now();
            }
        }
        std::mem::forget(ring);
    } else {
        for i in EVENTS / 2..EVENTS {
            tracer.write(&i.to_le_bytes()).unwrap();
        }
        tracer.install().unwrap();
    }
    std::process::exit(3);
}

/// A tracer streaming into `dir` in blocking mode (5 s), 64 KiB a CPU.
fn blocking_stream(dir: &str) -> Tracer {
    Tracer::builder()
        .blocking(Duration::from_secs(5))
        .buffer_size(64 * 1024)
        .stream_to(dir)
        .build()
        .unwrap()
}

/// The child, forking: streams EVENTS events from an in-memory ring,
/// forks, and its fork child writes more into its copy, then finishes the
/// tracer (`fork-finish`: refused, naming the fork) or exits at once
/// (`fork-exit`). Exits 3 when the fork child did as expected within a
/// second, 5 when it did not, 6 when it took longer.
fn forks_while_streaming(dir: &str, how: &str) -> ! {
    let tracer = blocking_stream(dir);
    for i in 0..EVENTS {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    let started = std::time::Instant::now();
    // SAFETY: this process's other threads (the stream's, the harness's)
    // are not needed in the child, which only writes, finishes and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        for i in EVENTS..EVENTS + 100 {
            let _ = tracer.write(&i.to_le_bytes());
        }
        if how == "fork-exit" {
            std::process::exit(0);
        }
        let code = match tracer.finish() {
            Err(ringtrace::TracerError::Stream(why)) if why.contains("forked") => 0,
            _ => 1,
        };
        // SAFETY: leaves without running the parent's exit handlers twice.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child, its status into a local.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let took = started.elapsed();
    tracer.finish().unwrap();
    let code = if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        5
    } else if took > Duration::from_secs(1) {
        6
    } else {
        3
    };
    std::process::exit(code);
}

/// The child, killed: its ring in a file beside the session, streamed;
/// EVENTS written (blocking, so none refused; or with `discard`, as fast
/// as it can into a small ring, so that some are), then SIGKILL, with
/// events still in the ring that the consumer has not drained.
fn killed_with_its_ring_in_a_file(dir: &std::path::Path, discard: bool) -> ! {
    let builder = if discard {
        Tracer::builder().mode(Mode::Discard).buffer_size(16 * 1024)
    } else {
        Tracer::builder()
            .blocking(Duration::from_secs(5))
            .buffer_size(256 * 1024)
    };
    let tracer = builder
        .file(dir.with_extension("ring"))
        .stream_to(dir)
        .build()
        .unwrap();
    for i in 0..EVENTS {
        // Refused in discard mode when the consumer is behind: the ring
        // counts it.
        let written = tracer.write(&i.to_le_bytes());
        assert!(discard || written.is_ok(), "{written:?}");
    }
    // SAFETY: raise has no preconditions; SIGKILL ends the process here.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned");
}

fn events(dir: &std::path::Path) -> Vec<u32> {
    let session = Session::open(dir).unwrap();
    let mut all: Vec<u32> = session
        .recoveries()
        .iter()
        .flat_map(|r| &r.cpus)
        .flat_map(|c| &c.events)
        .map(|e| u32::from_le_bytes(e.payload[..4].try_into().unwrap()))
        .collect();
    all.sort_unstable();
    all
}

/// Runs [`child_entry`] as `how`, streaming into `dir`; its exit status.
fn child(dir: &std::path::Path, how: &str) -> std::process::ExitStatus {
    self_command()
        .args(["--exact", "child_entry", "--test-threads=1"])
        .env(DIR, dir)
        .env(HOW, how)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
}

#[test]
fn a_program_that_exits_without_finishing_still_finishes_its_session() {
    for how in ["installed", "held"] {
        exits_without_finishing(how);
    }
}

fn exits_without_finishing(how: &str) {
    let tmp = TempDir::new("stream-exit");
    let dir = tmp.path().join("trace");
    let status = child(&dir, how);
    assert_eq!(status.code(), Some(3), "{how}");
    assert_eq!(events(&dir), (0..EVENTS).collect::<Vec<_>>());
    let session = Session::open(&dir).unwrap();
    // With the code it exited with (glibc's on_exit tells it).
    assert_eq!(session.processes()[0].exit, Some(ProcessExit::Exited(3)));
    // The exit handler noted when: the session reads exited, at a time
    // after the last event, by the ring's clock and by the wall clock.
    let recovery = &session.recoveries()[0];
    let WriterState::Exited(at) = recovery.writer else {
        panic!("not exited: {:?}", recovery.writer);
    };
    let last = recovery.merged().last().unwrap().ts;
    assert!(at.ticks.unwrap() >= last, "{at:?}, last event at {last}");
    let wall = at.wall_ns.unwrap();
    assert!(wall >= recovery.header.wall_ns, "{at:?}");
}

#[test]
fn a_fork_child_of_a_streaming_program_neither_waits_for_nor_finishes_its_parents_stream() {
    for how in ["fork-finish", "fork-exit"] {
        let tmp = TempDir::new("stream-fork");
        let dir = tmp.path().join("trace");
        let status = child(&dir, how);
        // 5: the fork child's finish was not refused; 6: it waited.
        assert_eq!(status.code(), Some(3), "{how}");
        // The parent's events, whole; the child's copy was its own.
        assert_eq!(events(&dir), (0..EVENTS).collect::<Vec<_>>(), "{how}");
    }
}

#[test]
fn finish_drains_the_stream_to_its_end() {
    let tmp = TempDir::new("stream-finish");
    let dir = tmp.path().join("trace");
    let tracer = Tracer::builder()
        .mode(Mode::Discard)
        .buffer_size(64 * 1024)
        .stream_to(&dir)
        .build()
        .unwrap();
    assert_eq!(tracer.stream_dir(), Some(dir.as_path()));
    let mut written = Vec::new();
    for i in 0..20_000u32 {
        if tracer.write(&i.to_le_bytes()).is_ok() {
            written.push(i);
        }
    }
    let summary = tracer.finish_stream().unwrap();
    assert_eq!(summary.processes[0].totals.events, written.len() as u64);
    assert!(tracer.finish_stream().is_err(), "finished twice");
    let stats = tracer.finish().unwrap();
    assert_eq!(stats.ring.hit, written.len() as u64);
    assert_eq!(events(&dir), written);
}

/// A tracer dropped, as at the end of `main`, with nobody else holding
/// its ring: the drop drains the stream to its end and finishes the
/// session. Its ring is in discard mode, the mode not being chosen.
#[test]
fn a_dropped_tracer_finishes_its_stream() {
    let tmp = TempDir::new("stream-drop");
    let dir = tmp.path().join("trace");
    let tracer = Tracer::builder()
        .buffer_size(64 * 1024)
        .stream_to(&dir)
        .build()
        .unwrap();
    assert_eq!(tracer.ring().geometry().mode, Mode::Discard);
    let mut written = Vec::new();
    for i in 0..20_000u32 {
        if tracer.write(&i.to_le_bytes()).is_ok() {
            written.push(i);
        }
    }
    let stats = tracer.stats().ring;
    drop(tracer);
    assert_eq!(written.len() as u64 + stats.missed, 20_000);
    assert_eq!(events(&dir), written);
    let session = Session::open(&dir).unwrap();
    assert_eq!(session.processes()[0].exit, Some(ProcessExit::Closed));
    let overwritten = Tracer::builder()
        .mode(Mode::Overwrite)
        .stream_to(tmp.path().join("overwrite"))
        .build()
        .unwrap();
    assert_eq!(overwritten.ring().geometry().mode, Mode::Overwrite);
}

#[test]
fn a_stream_into_a_bad_directory_is_refused_naming_it() {
    let tmp = TempDir::new("stream-bad");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for bad in [tmp.path().join("no/such/parent"), file.clone()] {
        let err = Tracer::builder()
            .stream_to(&bad)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("stream: "), "{err}");
        assert!(
            err.contains(bad.to_str().unwrap()) || err.contains("no/such"),
            "{err}"
        );
    }
    let err = Tracer::builder()
        .stream_options(ringtrace::session::SessionOptions::default())
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("stream_to"), "{err}");
}

/// A streaming program killed by SIGKILL loses what its consumer had not
/// drained only if its ring was in memory: with its ring in a file, the
/// session holds what was drained and the ring file the rest, which
/// `recover` reads. No event is in both; every event written is in the
/// ring file, or counted there as read by the consumer (in the session,
/// or in its last round, read and not yet written when the kill came),
/// or as refused. Joined, whole or streamed, every write is an event or
/// counted lost once: refusals after the consumer's last round included.
#[test]
fn a_killed_streaming_program_leaves_its_undrained_events_in_its_ring_file() {
    for how in ["killed", "killed-discard"] {
        killed_streaming_program(how);
    }
}

fn killed_streaming_program(how: &str) {
    use std::os::unix::process::ExitStatusExt;
    let tmp = TempDir::new("stream-killed");
    let dir = tmp.path().join("trace");
    let status = child(&dir, how);
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{how}: {status:?}");
    let drained = events(&dir);
    let ring = ringtrace::ring::file::recover(dir.with_extension("ring")).unwrap();
    assert!(
        matches!(ring.writer, WriterState::Died),
        "{:?}",
        ring.writer
    );
    let mut left: Vec<u32> = ring
        .cpus
        .iter()
        .flat_map(|c| &c.events)
        .map(|e| u32::from_le_bytes(e.payload[..4].try_into().unwrap()))
        .collect();
    left.sort_unstable();
    let lost: u64 = ring
        .cpus
        .iter()
        .flat_map(|c| &c.events)
        .map(|e| e.lost_before)
        .sum::<u64>()
        + ring
            .cpus
            .iter()
            .flat_map(|c| &c.loss_notes)
            .filter(|n| n.before == usize::MAX)
            .map(|n| n.count)
            .sum::<u64>();
    let refused: u64 = ring.cpus.iter().map(|c| c.file_stats.missed).sum();
    let mut all = [drained.clone(), left.clone()].concat();
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    let twice = before - all.len();
    // What the consumer read: in the session, or read and not yet
    // written when the kill came (its last round's pages); the ring file
    // counts them all.
    let read: u64 = ring.cpus.iter().map(|c| c.file_stats.read).sum();
    let said = format!(
        "{how}: {} drained, {} left in the ring, {twice} in both, {read} read by the consumer, {lost} counted lost, {refused} refused, of {EVENTS}",
        drained.len(),
        left.len()
    );
    assert_eq!(twice, 0, "{said}");
    assert!(drained.len() as u64 <= read, "{said}");
    assert_eq!(
        left.len() as u64 + read + lost + refused,
        u64::from(EVENTS),
        "{said}"
    );
    assert!(all.iter().all(|&i| i < EVENTS));
    if how == "killed" {
        assert_eq!(refused, 0, "{said}");
    }
    // What the session holds, counted from its chunks, whatever its
    // index (last written before the kill) says.
    let session = Session::open(&dir).unwrap();
    let held = session.held(0);
    let held_events: u64 = held.iter().map(|h| h.events).sum();
    assert_eq!(held_events, drained.len() as u64, "{said}");
    // Joined, the two read as one process: every write once, as an event
    // or counted lost.
    let mut joined = session.recoveries().remove(0);
    let (j, _) = ringtrace::session::halves::join(&mut joined, &held, ring.clone(), false);
    let events: u64 = joined.cpus.iter().map(|c| c.events.len() as u64).sum();
    assert_eq!(j.unwritten, read - drained.len() as u64, "{said}");
    assert_eq!(events + losses(&joined), u64::from(EVENTS), "{said}");
    assert!(matches!(joined.writer, WriterState::Died));
    // The same, streamed: the session's events from its chunks, then the
    // file's, the file's losses in its batches.
    let streamed = Session::open_streamed(&dir).unwrap();
    let mut joined = streamed.recoveries().remove(0);
    let (js, tails) = ringtrace::session::halves::join(&mut joined, &held, ring, true);
    assert_eq!(js, j, "{said}");
    use ringtrace::ring::file::EventSource as _;
    let mut events = 0u64;
    let mut carried = 0u64;
    for (cpu, tail) in tails.into_iter().enumerate() {
        for batch in streamed.batches(0, cpu).chain(tail) {
            events += batch.events.len() as u64;
            carried += batch.events.iter().map(|e| e.lost_before).sum::<u64>();
        }
    }
    let unplaced: u64 = joined.cpus.iter().map(|c| c.unplaced().total()).sum();
    assert_eq!(events + carried + unplaced, u64::from(EVENTS), "{said}");
}

/// What a joined recovery counts lost: before an event, after a CPU's
/// last (no event left in the file to carry them), and refused at a time
/// unknown.
fn losses(joined: &ringtrace::ring::file::Recovery) -> u64 {
    joined
        .cpus
        .iter()
        .map(|c| {
            let before: u64 = c.events.iter().map(|e| e.lost_before).sum();
            let u = c.unplaced();
            before + u.after_last + u.refused
        })
        .sum()
}

/// A build whose stream cannot start leaves no ring file behind: the same
/// build, given a usable directory, then succeeds. A ring file inside the
/// session directory is refused before anything is made.
#[test]
fn a_failed_stream_build_leaves_no_ring_file_and_can_be_retried() {
    let tmp = TempDir::new("stream-retry");
    let busy = tmp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("x"), b"x").unwrap();
    let ring = tmp.path().join("r.ring");
    let build = |dir: &std::path::Path| {
        Tracer::builder()
            .buffer_size(64 * 1024)
            .file(&ring)
            .stream_to(dir)
            .build()
    };
    let err = build(&busy).unwrap_err().to_string();
    assert!(err.contains("not empty"), "{err}");
    assert!(!ring.exists(), "the failed build left {}", ring.display());
    let tracer = build(&tmp.path().join("fresh")).unwrap();
    tracer.write(b"ok").unwrap();
    tracer.finish().unwrap();
    // The ring file in (or at) the session directory: refused, nothing made.
    for dir in [ring.clone(), tmp.path().to_owned()] {
        let inside = Tracer::builder()
            .file(dir.join("in.ring"))
            .stream_to(&dir)
            .build()
            .unwrap_err()
            .to_string();
        assert!(inside.contains("put it outside"), "{inside}");
        assert!(!dir.join("in.ring").exists());
    }
}

/// A symbolic link to an empty directory, named as the session
/// directory, is followed (a session on another disk); a link to
/// nothing is not a directory.
#[test]
fn a_stream_into_a_link_to_an_empty_directory_is_written_there() {
    let tmp = TempDir::new("stream-link");
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let tracer = Tracer::builder().stream_to(&link).build().unwrap();
    tracer.write(&7u32.to_le_bytes()).unwrap();
    tracer.finish().unwrap();
    assert_eq!(events(&real), [7]);
    let dangling = tmp.path().join("dangling");
    std::os::unix::fs::symlink(tmp.path().join("nothing"), &dangling).unwrap();
    let err = Tracer::builder()
        .stream_to(&dangling)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a directory"), "{err}");
}
