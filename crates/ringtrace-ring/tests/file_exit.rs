//! A file ring still alive when its process exits normally is closed by
//! the exit handler: whatever else happens at that moment (rings made and
//! dropped on another thread), and only by the process that made it (a
//! forked child's exit leaves its parent's ring open).

mod file_support;

use file_support::{config, Scratch};
use ringtrace_clock::{AnyClock, Counter};
use ringtrace_ring::file::{self, WriterState};
use ringtrace_ring::{Mode, RingBuffer};
use std::path::Path;

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
fn a_ring_alive_at_exit_is_closed_while_other_rings_come_and_go() {
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
            "a_ring_alive_at_exit_is_closed_while_other_rings_come_and_go",
            "--exact",
            "--test-threads=1",
        ])
        .env(LEAKED, &leaked)
        .env(CHURN, &scratch.dir)
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let r = file::recover(&leaked).unwrap();
    assert_eq!(r.writer, WriterState::Closed);
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
