//! A writer killed with SIGKILL right after its appends returned: every
//! appended page reads back (each append is one write, which the page
//! cache keeps), and the lock is gone with it.

mod common;

use common::*;
use ringtrace_session::{LossCause, Session, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;

const CHILD: &str = "RINGTRACE_SESSION_KILLED_CHILD";

/// The child's part: runs only when started by the test below.
#[test]
fn child_writes_a_session_then_is_killed() {
    let Ok(dir) = std::env::var(CHILD) else {
        return;
    };
    let session = SessionWriter::create(&dir, SessionOptions::default().rotate_size(3000)).unwrap();
    let ring = ring(2);
    let mut process = session.add_process(info(&ring, 77, 1)).unwrap();
    for cpu in 0..2 {
        for p in pages(&ring, cpu, &payloads(cpu as u8, 100)) {
            process.append_page(cpu, &p.bytes).unwrap();
        }
        // The last entry: an open chunk is left, whatever the rotations.
        process
            .append_loss(cpu, u64::MAX, 1, LossCause::Refused)
            .unwrap();
    }
    process.append_metadata_record(b"before the kill").unwrap();
    // SAFETY: kill with this process's own pid; it does not return.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL");
}

#[test]
fn a_writer_killed_after_its_appends_loses_none_of_them() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = TempDir::new("session-sigkill");
    let dir = tmp.path().join("s");
    let status = ringtrace_testkit::self_command()
        .args([
            "--exact",
            "child_writes_a_session_then_is_killed",
            "--nocapture",
        ])
        .env(CHILD, &dir)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let read = Session::open(&dir).unwrap();
    assert!(!read.live() && !read.finished());
    let recovery = &read.recoveries()[0];
    for cpu in 0..2 {
        let got: Vec<Vec<u8>> = recovery.cpus[cpu]
            .events
            .iter()
            .map(|e| e.payload.clone())
            .collect();
        assert_eq!(got, payloads(cpu as u8, 100), "CPU {cpu}");
    }
    assert_eq!(recovery.metadata_records(), [b"before the kill".to_vec()]);
    assert!(!read.has_problems());
    assert_eq!(read.losses().len(), 2);
    assert!(walk(&dir)
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "open")));
    assert!(walk(&dir)
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "chunk")));
}
