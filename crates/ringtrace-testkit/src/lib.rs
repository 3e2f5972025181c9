//! Test helpers shared by ringtrace's crates, for their tests only.
//!
//! - [`TempDir`]: a scratch directory of a test's own, removed when
//!   dropped.
//! - [`self_command`]: this test binary started again as a child (for
//!   tests that must crash, exit or be killed), directly or, when it was
//!   cross-built and runs under qemu-user, through the same runner as
//!   `.cargo/config.toml`'s.
//! - [`inert_text`], [`shown_char`], [`shown_byte`]: text output checked
//!   for what a terminal would obey, and the escapes the text output
//!   documents, written out here rather than taken from the library.
//! - [`perfetto`]: a Perfetto trace read back, every rule the trace
//!   processor relies on checked.

pub mod perfetto;

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

/// This test binary ([`self_command`]) running only the test `test`, on
/// one thread, its output not captured: a child whose role the test
/// `test` reads from the environment.
pub fn child_test(test: &str) -> Command {
    let mut c = self_command();
    c.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    c
}

/// The wall clock now, ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_nanos() as u64
}

/// How a child run by [`run_child`] ended, and when it lived.
#[derive(Debug)]
pub struct ChildLife {
    /// Its exit status.
    pub status: std::process::ExitStatus,
    /// What it printed on stderr.
    pub stderr: Vec<u8>,
    /// Its pid.
    pub pid: u32,
    /// The caller's clock just before the start and just after the end.
    pub clock: (u64, u64),
    /// The wall clock (ns since the epoch) at the same two moments.
    pub wall: (u64, u64),
}

/// Runs the test `test` of this binary again ([`self_command`]) as a
/// child, alone, with `envs` set and stdout discarded. With `kill_when`,
/// the child is SIGKILLed as soon as it returns true (asked every 5 ms;
/// panics if the child ends first, or after 120 s: a hang detector, not a
/// timing). `clock` is read before the start and after the end, as is the
/// wall clock.
pub fn run_child(
    test: &str,
    envs: &[(&str, &std::ffi::OsStr)],
    kill_when: Option<&dyn Fn() -> bool>,
    clock: &dyn Fn() -> u64,
) -> ChildLife {
    let before = (clock(), wall_ns());
    let mut command = self_command();
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the test binary starts again");
    if let Some(ready) = kill_when {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !ready() {
            assert!(child.try_wait().unwrap().is_none(), "ended by itself");
            assert!(
                std::time::Instant::now() < deadline,
                "never became ready to be killed"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.kill().unwrap();
    }
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let after = (clock(), wall_ns());
    ChildLife {
        status: out.status,
        stderr: out.stderr,
        pid,
        clock: (before.0, after.0),
        wall: (before.1, after.1),
    }
}

/// Waits for `child` to end, for up to `within` (a hang detector, not a
/// timing); past that, kills and reaps it and panics saying `what`.
/// Returns its exit status; its output, if piped, is still to be read.
pub fn wait_within(
    child: &mut std::process::Child,
    within: std::time::Duration,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {within:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `text` checked as a terminal would get it: UTF-8, no control byte but
/// the newline, no C1 control, no bidi control or separator (U+061C,
/// U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069, U+2028, U+2029). Panics naming the first offending byte or character;
/// returns the text.
///
/// ```
/// assert_eq!(ringtrace_testkit::inert_text(b"a\\x1b\n"), "a\\x1b\n");
/// ```
pub fn inert_text(text: &[u8]) -> &str {
    for (i, &b) in text.iter().enumerate() {
        assert!(
            b == b'\n' || (b >= 0x20 && b != 0x7f),
            "byte {b:#04x} at {i} in {:?}",
            String::from_utf8_lossy(text)
        );
    }
    let text = std::str::from_utf8(text).expect("the text is UTF-8");
    for c in text.chars() {
        let n = c as u32;
        assert!(
            !(0x80..0xa0).contains(&n)
                && !matches!(n, 0x061c | 0x200e | 0x200f | 0x2028 | 0x2029)
                && !(0x202a..=0x202e).contains(&n)
                && !(0x2066..=0x2069).contains(&n),
            "{c:?} in {text}"
        );
    }
    text
}

/// How text output shows `c` in a string, by the documented rules
/// (docs/export.md): `\n`, `\t`, `\r`, `\\`; other C0 controls and DEL as
/// `\xNN`; C1 controls, bidi controls and the line and paragraph
/// separators as `\u{N}`; anything else as it is.
pub fn shown_char(c: char) -> String {
    let n = c as u32;
    match c {
        '\n' => "\\n".into(),
        '\t' => "\\t".into(),
        '\r' => "\\r".into(),
        '\\' => "\\\\".into(),
        _ if n < 0x20 || n == 0x7f => format!("\\x{n:02x}"),
        _ if (0x80..0xa0).contains(&n)
            || matches!(n, 0x061c | 0x200e | 0x200f | 0x2028 | 0x2029)
            || (0x202a..=0x202e).contains(&n)
            || (0x2066..=0x2069).contains(&n) =>
        {
            format!("\\u{{{n:x}}}")
        }
        _ => c.to_string(),
    }
}

/// How text output shows byte `b` alone in a string field: as a char
/// below 0x80, as `\xNN` from 0x80 (alone, it is not UTF-8).
pub fn shown_byte(b: u8) -> String {
    if b < 0x80 {
        shown_char(char::from(b))
    } else {
        format!("\\x{b:02x}")
    }
}

/// The seed of a randomized test: the environment variable `var` when it
/// is set (to repeat a failing run), else the clock's nanoseconds. It is
/// printed on stderr, named by `test`, with how to repeat the run.
///
/// ```
/// let seed = ringtrace_testkit::seed("RINGTRACE_DOC_SEED_UNSET", "doc");
/// std::env::set_var("RINGTRACE_DOC_SEED_SET", "42");
/// assert_eq!(ringtrace_testkit::seed("RINGTRACE_DOC_SEED_SET", "doc"), 42);
/// # let _ = seed;
/// ```
pub fn seed(var: &str, test: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    eprintln!("{test}: seed {seed} (set {var}={seed} to repeat)");
    seed
}

/// Whether `tool --version` runs (say, `trace-cmd` or `babeltrace2`): a
/// test that reads its output back with the tool skips that check when it
/// is missing, saying so, unless `RINGTRACE_REQUIRE_TOOLS` is set (CI),
/// where a missing tool fails the test.
pub fn have_tool(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stdout.is_empty());
    if !found {
        assert!(
            std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "{tool} is not installed and RINGTRACE_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: {tool} is not installed");
    }
    found
}

/// Mounts a tmpfs of `size` (e.g. "256k") at `dir`, with `options` added
/// (e.g. ",ro"); `Err` with the reason when this machine cannot (not
/// root, no `mount`).
pub fn mount_tmpfs(dir: &Path, size: &str, options: &str) -> Result<(), String> {
    let out = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0755{options}"),
            "tmpfs",
        ])
        .arg(dir)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mount -t tmpfs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Unmounts `dir`.
pub fn umount(dir: &Path) {
    let _ = Command::new("umount").arg(dir).status();
}

/// Runs `f` on a tmpfs of `size` mounted for it in a scratch directory
/// named after `label` (skipped, saying why, where this machine cannot
/// mount one), unmounted whatever `f` does, a failed assertion included.
pub fn on_tmpfs(label: &str, size: &str, f: impl FnOnce(&Path)) {
    let tmp = TempDir::new(label);
    let mount = tmp.path().join("small");
    std::fs::create_dir(&mount).expect("a directory to mount on");
    if let Err(why) = mount_tmpfs(&mount, size, "") {
        println!("skipped: a small file system is needed to fill, and {why}");
        return;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mount)));
    umount(&mount);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
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

    #[test]
    fn the_documented_escapes_are_as_written() {
        assert_eq!(shown_char('\n'), "\\n");
        assert_eq!(shown_char('\x1b'), "\\x1b");
        assert_eq!(shown_char('\u{85}'), "\\u{85}");
        assert_eq!(shown_char('\u{2067}'), "\\u{2067}");
        assert_eq!(shown_char('é'), "é");
        assert_eq!(shown_byte(0xff), "\\xff");
        assert_eq!(shown_byte(b'\\'), "\\\\");
    }

    #[test]
    #[should_panic(expected = "byte 0x1b")]
    fn an_escape_byte_is_not_inert() {
        inert_text(b"a\x1bb");
    }
}
