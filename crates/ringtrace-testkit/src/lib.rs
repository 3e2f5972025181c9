//! Test helpers shared by ringtrace's crates, for their tests only.
//!
//! - [`TempDir`]: a scratch directory of a test's own, removed when
//!   dropped.
//! - [`self_command`]: this test binary started again as a child (for
//!   tests that must crash, exit or be killed), directly or, when it was
//!   cross-built and runs under qemu-user, through the same runner as
//!   `.cargo/config.toml`'s.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
///
/// ```
/// let dir = ringtrace_testkit::TempDir::new("doc");
/// std::fs::write(dir.path().join("a"), b"x").unwrap();
/// assert_eq!(dir.entries(), ["a"]);
/// let kept = dir.path().to_owned();
/// drop(dir);
/// assert!(!kept.exists());
/// ```
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

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

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
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

/// This test binary, to be started again as a child with the arguments
/// the caller adds (`--exact NAME`, ...).
///
/// Started directly where that works. A binary cross-built for aarch64 and
/// run under qemu-user cannot exec itself (the kernel has no interpreter
/// for it, or qemu's has no library path), so there the child goes through
/// `qemu-aarch64 -L /usr/aarch64-linux-gnu`, the runner
/// `.cargo/config.toml` names. `RINGTRACE_CHILD_RUNNER` (a command line,
/// split on spaces) overrides the choice.
pub fn self_command() -> Command {
    static RUNNER: OnceLock<Option<Vec<String>>> = OnceLock::new();
    let exe = std::env::current_exe().expect("the test binary's path");
    let runner = RUNNER.get_or_init(|| {
        if let Ok(r) = std::env::var("RINGTRACE_CHILD_RUNNER") {
            return Some(r.split_whitespace().map(str::to_owned).collect());
        }
        let direct = Command::new(&exe)
            .arg("--list")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if direct.is_ok_and(|s| s.success()) || !cfg!(target_arch = "aarch64") {
            None
        } else {
            Some(
                ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]
                    .map(str::to_owned)
                    .to_vec(),
            )
        }
    });
    match runner.as_deref() {
        Some([program, args @ ..]) => {
            let mut c = Command::new(program);
            c.args(args).arg(exe);
            c
        }
        _ => Command::new(exe),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_started_by_self_command_runs_this_binary() {
        let out = self_command().arg("--list").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let listed = String::from_utf8(out.stdout).unwrap();
        assert!(
            listed.contains("a_child_started_by_self_command_runs_this_binary"),
            "{listed}"
        );
    }
}
