//! An export that SIGINT, SIGTERM or SIGHUP interrupts leaves nothing
//! where its output was to go: neither the output nor the hidden
//! temporary file or directory it was being built in; the process still
//! ends as killed by the signal. A signal the process ignores (`nohup`'s
//! SIGHUP) is left ignored, and the export runs to the end.
//!
//! Each export runs until its temporary output is seen (polled), then is
//! signalled. One that ends before it is seen, or before the signal
//! arrives (a fast machine), is retried with a trace twice as large; a
//! debug build takes seconds over the first, so a retry is rare. One
//! export at a time: each is sized for 2 cores.

mod common;

use common::TempDir;
use ringtrace::ring::{RingBuffer, RingConfig};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Events of the first trace; doubled at each retry.
const FIRST_EVENTS: usize = 150_000;
/// Traces tried, each twice the last, before the test gives up.
const ATTEMPTS: usize = 4;
/// A hang detector, not a timing: a child that never gets there or never
/// ends is killed and the test fails saying so.
const HANG: Duration = Duration::from_secs(300);

/// A ring file at `path` of one CPU holding `events` events.
fn ring_of(path: &Path, events: usize) {
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes((events * 64).next_power_of_two())
        .file(path);
    let clock = "mono".parse::<ringtrace::ClockSpec>().unwrap();
    let ring = RingBuffer::new(config, clock.build().unwrap()).unwrap();
    for i in 0..events as u64 {
        ring.write(&i.to_le_bytes()).unwrap();
    }
}

/// The hidden entries of `dir` (temporary outputs), and whether one is a
/// directory with something in it yet.
fn hidden(dir: &Path) -> (Vec<String>, bool) {
    let mut names = Vec::new();
    let mut filled = false;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            let path = entry.path();
            filled |= std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some());
            names.push(name);
        }
    }
    (names, filled)
}

/// How an export under a signal ended.
enum Ended {
    /// Killed by the signal, its temporary output seen before.
    Killed,
    /// Done before its temporary output was seen, or the signal was sent:
    /// to be tried again with a larger trace.
    TooSoon,
    /// Ended otherwise: an exit status, with its stderr.
    Otherwise(ExitStatus, String),
}

/// Exports `ring` as `format` to `out` in a fresh child (with `signal`
/// ignored in it if `ignored`), sends it `signal` once its temporary
/// output is seen (a directory with a file in it, for `directory`), and
/// waits for it.
fn export_signalled(
    ring: &Path,
    format: &str,
    out: &Path,
    signal: i32,
    ignored: bool,
    directory: bool,
) -> Ended {
    let parent = out.parent().unwrap();
    let stderr = parent.with_extension("stderr");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ringtrace"));
    command
        .arg("export")
        .arg(ring)
        .args(["--format", format, "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap());
    if ignored {
        // SAFETY: signal is async-signal-safe, as a pre_exec hook must be.
        unsafe {
            command.pre_exec(move || {
                libc::signal(signal, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + HANG;
    loop {
        if child.try_wait().unwrap().is_some() {
            return Ended::TooSoon;
        }
        let (names, filled) = hidden(parent);
        if !names.is_empty() && (filled || !directory) {
            break;
        }
        assert!(Instant::now() < deadline, "no temporary output appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: kill with the pid of a child not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = ringtrace_testkit::wait_within(
        &mut child,
        HANG,
        &format!("an export sent signal {signal}"),
    );
    let said = std::fs::read_to_string(&stderr).unwrap_or_default();
    // Done just before the signal came (the output renamed into place,
    // the process killed while it printed its summary, or not at all).
    let done = std::fs::symlink_metadata(out).is_ok() && hidden(parent).0.is_empty();
    match status.signal() {
        Some(s) if s == signal && !done => Ended::Killed,
        Some(s) if s == signal => Ended::TooSoon,
        None if status.success() && !ignored => Ended::TooSoon,
        _ => Ended::Otherwise(status, said),
    }
}

/// Signals an export as [`export_signalled`] does, on a larger trace
/// each time it ends too soon; returns how it ended and the directory
/// its output was to be in (`out` in it).
fn until_signalled(
    format: &str,
    signal: i32,
    ignored: bool,
    directory: bool,
) -> (TempDir, PathBuf, Ended) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new(&format!("export-interrupted-{format}"));
    let ring = dir.path().join("trace.ring");
    let parent = dir.path().join("outputs");
    let out = parent.join("out");
    let mut events = FIRST_EVENTS;
    for _ in 0..ATTEMPTS {
        let _ = std::fs::remove_dir_all(&parent);
        std::fs::create_dir(&parent).unwrap();
        let _ = std::fs::remove_file(&ring);
        ring_of(&ring, events);
        match export_signalled(&ring, format, &out, signal, ignored, directory) {
            Ended::TooSoon => {
                eprintln!("the {format} export of {events} events ended too soon; retrying larger");
                events *= 2;
            }
            ended => return (dir, parent, ended),
        }
    }
    panic!("every {format} export ended before it could be signalled, up to {events} events");
}

/// Asserts that the export was killed by the signal and left nothing in
/// its output's directory.
fn assert_killed_leaving_nothing(parent: &Path, ended: Ended) {
    if let Ended::Otherwise(status, said) = ended {
        panic!("not killed by the signal: {status}; {said}");
    }
    let left: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn sigint_during_a_file_export_removes_its_temporary_file_and_ends_by_sigint() {
    let (_dir, parent, ended) = until_signalled("chrome", libc::SIGINT, false, false);
    assert_killed_leaving_nothing(&parent, ended);
}

#[test]
fn sigterm_during_a_directory_export_removes_its_temporary_directory_and_files() {
    let (_dir, parent, ended) = until_signalled("ctf", libc::SIGTERM, false, true);
    assert_killed_leaving_nothing(&parent, ended);
}

#[cfg(feature = "parquet")]
#[test]
fn sighup_during_a_parquet_export_removes_its_temporary_tables_directory() {
    let (_dir, parent, ended) = until_signalled("parquet", libc::SIGHUP, false, true);
    assert_killed_leaving_nothing(&parent, ended);
}

#[test]
fn an_ignored_sighup_stays_ignored_and_the_export_completes() {
    let (_dir, parent, ended) = until_signalled("text", libc::SIGHUP, true, false);
    match ended {
        Ended::Otherwise(status, said) => assert!(status.success(), "{status}: {said}"),
        Ended::Killed | Ended::TooSoon => panic!("an ignored SIGHUP ended the export"),
    }
    let left: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["out"]);
    let text = std::fs::read_to_string(parent.join("out")).unwrap();
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("# ringtrace dump"), "{first}");
}

/// An export killed outright (SIGKILL: no handler runs) leaves its
/// temporary output; the next export to the same output removes it, and
/// leaves alone one whose process is alive and the temporaries of other
/// outputs.
#[test]
fn the_next_export_removes_what_a_killed_export_left() {
    let dir = TempDir::new("export-stale");
    let ring = dir.path().join("t.ring");
    ring_of(&ring, 100);
    // Pids never reach i32::MAX - 1: that process does not exist.
    let dead = i32::MAX - 1;
    let live = std::process::id();
    let left_file = dir.path().join(format!(".t.json.ringtrace-{dead}-3.tmp"));
    let live_file = dir.path().join(format!(".t.json.ringtrace-{live}-0.tmp"));
    let other = dir.path().join(format!(".u.json.ringtrace-{dead}-0.tmp"));
    let left_dir = dir.path().join(format!(".pq.tmp-{dead}"));
    for f in [&left_file, &live_file, &other] {
        std::fs::write(f, b"half").unwrap();
    }
    std::fs::create_dir(&left_dir).unwrap();
    std::fs::write(left_dir.join("events.parquet"), b"PAR1").unwrap();
    for (format, out) in [("chrome", "t.json"), ("parquet", "pq")] {
        let status = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .args(["export", "--format", format, "-o"])
            .arg(dir.path().join(out))
            .arg(&ring)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{format}: {status:?}");
    }
    assert!(!left_file.exists() && !left_dir.exists());
    assert!(live_file.exists() && other.exists());
}

/// The Parquet export makes its own directory, not those above it.
#[test]
fn a_parquet_export_under_a_missing_directory_names_that_directory() {
    let dir = TempDir::new("export-missing-parent");
    let ring = dir.path().join("t.ring");
    ring_of(&ring, 100);
    let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["export", "--format", "parquet", "-o"])
        .arg(dir.path().join("no/such/pq"))
        .arg(&ring)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("no/such is not a directory that exists"),
        "{said}"
    );
    assert!(!said.contains(".tmp-"), "{said}");
}
