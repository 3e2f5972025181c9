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

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A fresh, empty directory named after `what`, this process and a
    /// counter.
    pub fn new(what: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ringtrace-test-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The path of `name` in it, as a string (for command lines).
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }

    /// The names of the entries in it, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
