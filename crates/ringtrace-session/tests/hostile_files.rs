//! Something else in a session file's place: a FIFO, a device behind a
//! symbolic link, a file larger than its format allows. Each is a problem
//! naming the file, what it is and what was expected; none is waited on
//! or read, and the rest of the session reads as before.

mod common;

use common::*;
use ringtrace_ring::file::EventSource;
use ringtrace_session::{OpenError, Session, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A finished session of process 3-4 (three chunks on CPU 0: 4, 4 and 2
/// pages) and process 5-6 (one chunk), each with a metadata record.
/// Returns 3-4's events per chunk.
fn session(dir: &Path) -> Vec<Vec<(u64, Vec<u8>)>> {
    let session = SessionWriter::create(dir, SessionOptions::default().rotate_size(1000)).unwrap();
    let first = ring(1);
    let mut process = session.add_process(info(&first, 3, 4)).unwrap();
    let drained = pages(&first, 0, &payloads(1, 110));
    assert!(drained.len() >= 10);
    let mut per_chunk = Vec::new();
    for chunk in drained[..10].chunks(4) {
        for p in chunk {
            process.append_page(0, &p.bytes).unwrap();
        }
        per_chunk.push(events_of(chunk));
    }
    process.append_metadata_record(b"three").unwrap();
    process
        .finish(ringtrace_session::ProcessExit::Exited(0))
        .unwrap();
    let other = ring(1);
    let mut process = session.add_process(info(&other, 5, 6)).unwrap();
    for p in pages(&other, 0, &payloads(2, 20)) {
        process.append_page(0, &p.bytes).unwrap();
    }
    process.append_metadata_record(b"five").unwrap();
    process
        .finish(ringtrace_session::ProcessExit::Exited(0))
        .unwrap();
    session.finish().unwrap();
    assert!(dir.join("3-4/cpu0/00000002.chunk").exists());
    per_chunk
}

/// Runs `f` in a thread and returns what it returns, failing the test if
/// it takes more than 10 seconds (it waits on a FIFO).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} waited 10 s: it blocks on a file"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// Replaces `path` (if there) with a FIFO.
fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Replaces `path` (if there) with a symbolic link to `target`.
fn symlink(target: &Path, path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// 3-4's events (CPU 0) and its CPU's problems.
fn first_cpu(read: &Session) -> (Vec<(u64, Vec<u8>)>, Vec<String>) {
    let cpu = &read.recoveries()[0].cpus[0];
    let events = cpu
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect();
    (events, cpu.problems.clone())
}

/// Opens `dir` streamed and reads 3-4's CPU 0 a chunk at a time: its
/// events and the problems met.
fn streamed(dir: &Path) -> (Vec<(u64, Vec<u8>)>, Vec<String>) {
    let read = Session::open_streamed(dir).unwrap();
    let events = read
        .batches(0, 0)
        .flat_map(|b| b.events)
        .map(|e| (e.ts, e.payload))
        .collect();
    (events, read.stream_problems())
}

/// The peak resident memory of this process, in bytes (`VmHWM`).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[test]
fn a_fifo_chunk_is_reported_not_waited_on() {
    let tmp = TempDir::new("session-fifo-chunk");
    let dir = tmp.path().join("s");
    let per_chunk = session(&dir);
    let cpu = dir.join("3-4/cpu0");
    mkfifo(&cpu.join("00000000.chunk"));
    // The last chunk too, which a streamed open reads first (the losses
    // after the last event).
    mkfifo(&cpu.join("00000003.open"));
    let fifo = |name: &str| format!("{name} cannot be read: it is a FIFO, not a regular file");
    let d = dir.clone();
    let read = within("Session::open", move || Session::open(&d).unwrap());
    let (events, problems) = first_cpu(&read);
    assert_eq!(problems, [fifo("00000000.chunk"), fifo("00000003.open")]);
    assert_eq!(events, per_chunk[1..].concat(), "the other chunks read");
    assert_eq!(read.processes().len(), 2);
    assert!(!read.processes()[1].has_problems());
    let d = dir.clone();
    let (events, problems) = within("streaming", move || streamed(&d));
    assert_eq!(events, per_chunk[1..].concat());
    assert_eq!(
        problems,
        [
            format!("process 3, CPU 0: {}", fifo("00000000.chunk")),
            format!("process 3, CPU 0: {}", fifo("00000003.open")),
        ]
    );
}

#[test]
fn a_fifo_index_is_refused_not_waited_on() {
    let tmp = TempDir::new("session-fifo-index");
    let dir = tmp.path().join("s");
    session(&dir);
    mkfifo(&dir.join("session"));
    for streamed in [false, true] {
        let d = dir.clone();
        let err = within("Session::open", move || {
            if streamed {
                Session::open_streamed(&d).unwrap_err()
            } else {
                Session::open(&d).unwrap_err()
            }
        });
        assert!(matches!(err, OpenError::Io { op: "read", .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "cannot read {}: it is a FIFO, not a regular file",
                dir.join("session").display()
            )
        );
    }
}

#[test]
fn fifo_process_metadata_annex_and_lock_files_are_reported_not_waited_on() {
    let tmp = TempDir::new("session-fifo-process");
    let dir = tmp.path().join("s");
    session(&dir);
    let expected: Vec<Vec<u8>> = Session::open(&dir).unwrap().recoveries()[1].cpus[0]
        .events
        .iter()
        .map(|e| e.payload.clone())
        .collect();
    mkfifo(&dir.join("3-4/process"));
    mkfifo(&dir.join("5-6/metadata"));
    mkfifo(&dir.join("5-6/annex"));
    mkfifo(&dir.join("session.lock"));
    let d = dir.clone();
    let read = within("Session::open", move || Session::open(&d).unwrap());
    assert_eq!(
        read.problems(),
        ["3-4/process cannot be read, so neither can the process: it is a FIFO, not a regular file"]
    );
    assert!(!read.live(), "a FIFO holds no lock");
    let [five] = read.processes() else {
        panic!("{:?}", read.processes());
    };
    assert_eq!(
        five.problems,
        [
            "5-6/metadata cannot be read: it is a FIFO, not a regular file",
            "5-6/annex cannot be read: it is a FIFO, not a regular file",
        ]
    );
    assert!(five.recovery().metadata.is_err());
    assert!(five.recovery().metadata_records().is_empty());
    let got: Vec<Vec<u8>> = five.recovery().cpus[0]
        .events
        .iter()
        .map(|e| e.payload.clone())
        .collect();
    assert_eq!(got, expected, "its chunks read as before");
    let d = dir.clone();
    let streamed = within("Session::open_streamed", move || {
        Session::open_streamed(&d).unwrap().problems().to_vec()
    });
    assert_eq!(streamed, read.problems());
}

#[test]
fn a_symlink_to_dev_zero_as_a_chunk_is_reported_as_not_a_regular_file() {
    let tmp = TempDir::new("session-dev-zero");
    let dir = tmp.path().join("s");
    let per_chunk = session(&dir);
    let cpu = dir.join("3-4/cpu0");
    symlink(Path::new("/dev/zero"), &cpu.join("00000000.chunk"));
    symlink(Path::new("/dev/zero"), &cpu.join("00000099.open"));
    // A link to a regular file is read through.
    let moved = tmp.path().join("elsewhere.chunk");
    std::fs::rename(cpu.join("00000001.chunk"), &moved).unwrap();
    symlink(&moved, &cpu.join("00000001.chunk"));
    let d = dir.clone();
    let read = within("Session::open", move || Session::open(&d).unwrap());
    let (events, problems) = first_cpu(&read);
    assert_eq!(
        problems,
        [
            "00000000.chunk cannot be read: it is a character device, not a regular file",
            "00000099.open cannot be read: it is a character device, not a regular file",
        ]
    );
    assert_eq!(events, per_chunk[1..].concat());
    let d = dir.clone();
    let (events, problems) = within("streaming", move || streamed(&d));
    assert_eq!(events, per_chunk[1..].concat());
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn an_oversized_sparse_chunk_is_refused_with_its_size_unread() {
    let tmp = TempDir::new("session-sparse-chunk");
    let dir = tmp.path().join("s");
    let per_chunk = session(&dir);
    let chunk = dir.join("3-4/cpu0/00000000.chunk");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&chunk)
        .unwrap();
    f.set_len(4 << 30).unwrap(); // sparse: no block written
    drop(f);
    let d = dir.clone();
    let read = within("Session::open", move || Session::open(&d).unwrap());
    let (events, problems) = first_cpu(&read);
    let [problem] = problems.as_slice() else {
        panic!("{problems:?}");
    };
    let cap = problem
        .strip_prefix("00000000.chunk cannot be read: it is 4294967296 bytes, past the ")
        .and_then(|r| r.strip_suffix(" bytes a chunk can hold"))
        .unwrap_or_else(|| panic!("{problem}"));
    // Room for a body of the largest rotation size, and less than 2 GiB.
    let cap: u64 = cap.parse().unwrap();
    assert!(cap > 1 << 30 && cap < 2 << 30, "{cap}");
    assert_eq!(events, per_chunk[1..].concat(), "the other chunks read");
    let d = dir.clone();
    let (events, problems) = within("streaming", move || streamed(&d));
    assert_eq!(events, per_chunk[1..].concat());
    assert_eq!(problems, [format!("process 3, CPU 0: {problem}")]);
    if let Some(peak) = peak_rss() {
        assert!(peak < 1 << 30, "{peak} bytes resident: the chunk was read");
    }
}

#[test]
fn oversized_index_and_process_files_are_refused_with_their_size_unread() {
    let tmp = TempDir::new("session-sparse-small");
    let dir = tmp.path().join("s");
    session(&dir);
    let grow = |path: &Path, len: u64| {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_len(len).unwrap();
    };
    grow(&dir.join("3-4/process"), 1 << 30);
    grow(&dir.join("5-6/annex"), 1 << 30);
    let read = Session::open(&dir).unwrap();
    let [problem] = read.problems() else {
        panic!("{:?}", read.problems());
    };
    assert!(
        problem.starts_with(
            "3-4/process cannot be read, so neither can the process: it is 1073741824 bytes, past the "
        ) && problem.ends_with(" bytes a process description can hold"),
        "{problem}"
    );
    let [five] = read.processes() else {
        panic!("{:?}", read.processes());
    };
    assert_eq!(
        five.problems,
        ["5-6/annex cannot be read: it is 1073741824 bytes, past the 268435456 bytes an annex can hold"]
    );
    grow(&dir.join("session"), 1 << 30);
    let err = Session::open(&dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read {}: it is 1073741824 bytes, past the 268435456 bytes a session index can hold",
            dir.join("session").display()
        )
    );
}

#[test]
fn a_metadata_file_that_cannot_be_opened_is_reported_with_the_reason() {
    let tmp = TempDir::new("session-metadata-loop");
    let dir = tmp.path().join("s");
    session(&dir);
    let metadata = dir.join("5-6/metadata");
    std::fs::remove_file(&metadata).unwrap();
    // A link to itself: opening it fails with ELOOP, not "corrupt".
    symlink(Path::new("metadata"), &metadata);
    let read = Session::open(&dir).unwrap();
    let five = read.processes().iter().find(|p| p.pid == 5).unwrap();
    assert_eq!(five.problems.len(), 1, "{:?}", five.problems);
    assert!(
        five.problems[0].starts_with("5-6/metadata cannot be read: ")
            && five.problems[0].contains("symbolic links"),
        "{:?}",
        five.problems
    );
    assert!(five.recovery().metadata.is_err());
}
