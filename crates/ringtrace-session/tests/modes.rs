//! Modes: every file 0600, every directory 0700, whatever the umask. In
//! a test binary of its own, since the umask is the process's.

mod common;

use common::*;
use ringtrace_ring::file::WriterState;
use ringtrace_session::{ProcessExit, Session, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;

#[test]
fn every_file_is_0600_and_every_directory_0700_whatever_the_umask() {
    let tmp = TempDir::new("session-modes");
    let dir = tmp.path().join("s");
    // The umask is the process's: every file and directory made while it
    // is 0277 would be 0400 or 0500 if the writer left modes to it.
    let old = umask(0o277);
    let session = SessionWriter::create(&dir, SessionOptions::default().rotate_size(512)).unwrap();
    let ring = ring(2);
    let mut process = session.add_process(info(&ring, 9, 9)).unwrap();
    for p in pages(&ring, 1, &payloads(1, 40)) {
        process.append_page(1, &p.bytes).unwrap();
    }
    process.append_metadata_record(b"r").unwrap();
    process.finish(ProcessExit::Signaled(9)).unwrap();
    session.finish().unwrap();
    umask(old);
    assert_eq!(mode(&dir), 0o700);
    let all = walk(&dir);
    assert!(all
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "chunk")));
    for p in all {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&p), want, "{}", p.display());
    }
    assert!(dir.join("rings").is_dir());
    let read = Session::open(&dir).unwrap();
    assert_eq!(read.recoveries()[0].writer, WriterState::Died);
}

fn umask(mask: libc::mode_t) -> libc::mode_t {
    // SAFETY: umask only swaps the process's mask; it cannot fail.
    unsafe { libc::umask(mask) }
}
