//! Helpers shared by the command's tests.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the built `ringtrace` binary with `args`.
pub fn ringtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .output()
        .expect("the ringtrace binary runs")
}

/// Runs the built `ringtrace` binary with `args`, its stdout a pipe whose
/// reader is gone before it starts (`| true` that has already exited): so
/// every write to stdout fails with EPIPE, whatever the scheduling.
pub fn ringtrace_into_closed_pipe(args: &[&str]) -> Output {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are fresh and owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .stdout(std::process::Stdio::from(write))
        .output()
        .expect("the ringtrace binary runs")
}

/// The arguments of a short hammer at nice 0 (so that other work on the
/// machine does not starve it), running `seconds`.
pub fn short_hammer(seconds: &'static str) -> Vec<&'static str> {
    vec![
        "hammer",
        "--seconds",
        seconds,
        "--producer-nice",
        "0",
        "--consumer-nice",
        "0",
    ]
}

/// A short hammer (`seconds`) into the ring file `path`, with no
/// consumer so the file keeps all its 64 KiB per CPU hold; returns its
/// stdout.
pub fn hammer_file(path: &str, seconds: &str) -> String {
    let out = ringtrace(&[
        "hammer",
        "--seconds",
        seconds,
        "--disable-reader",
        "--producer-nice",
        "0",
        "--buffer-size",
        "65536",
        "--file",
        path,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[allow(unused_imports)] // not every test binary that includes this uses it
pub use ringtrace_testkit::TempDir;
