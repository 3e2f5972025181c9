//! SIGINT during a long run: the first stops it gracefully, the ones that
//! follow at once (a double Ctrl-C, `timeout -s INT` signalling the
//! command and then its process group) are absorbed, and the partial
//! result is printed, and for `report` written to report.json.
//!
//! One child at a time (they use every CPU), each sized for 2 cores.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How the second SIGINT is sent.
#[derive(Clone, Copy)]
enum Second {
    /// To the process again: Ctrl-C twice.
    Process,
    /// To its process group, as `timeout -s INT` does after signalling the
    /// command itself.
    Group,
}

/// What a stopped child left.
struct Stopped {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-stop-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `pid` catches SIGINT yet (its handler is installed), from the
/// `SigCgt` mask in /proc.
fn catches_sigint(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Runs `ringtrace args` in its own process group, output into `dir`;
/// once it catches SIGINT and has run a little, sends SIGINT twice, the
/// second per `second`, and waits for it to end.
fn stop_twice(args: &[&str], dir: &Path, second: Second) -> Stopped {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Hang detectors, not timings: a child that never gets there or never
    // ends is killed and the test fails saying so.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !catches_sigint(child.id()) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before it caught SIGINT"
        );
        assert!(Instant::now() < deadline, "never caught SIGINT");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Into the run proper.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill with a pid we spawned (and its own group) and SIGINT.
    unsafe {
        assert_eq!(libc::kill(pid, libc::SIGINT), 0);
        let to = match second {
            Second::Process => pid,
            Second::Group => -pid,
        };
        assert_eq!(libc::kill(to, libc::SIGINT), 0);
    }
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!("did not end after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Stopped {
        code: status.code(),
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
    }
}

fn check_report(dir: &Path, s: &Stopped) {
    assert_eq!(s.code, Some(130), "{}", s.stderr);
    assert!(s.stderr.contains("interrupted"), "{}", s.stderr);
    assert!(!s.stderr.contains("panicked"), "{}", s.stderr);
    assert!(s.stdout.contains("Stopped before the end"), "{}", s.stdout);
    let json = std::fs::read_to_string(dir.join("report.json")).expect("report.json is written");
    let json: serde_json::Value = serde_json::from_str(&json).expect("report.json parses");
    assert_eq!(json["interrupted"], true, "{json}");
    assert!(dir.join("report.svg").exists());
}

#[test]
fn two_quick_sigints_still_write_the_partial_report() {
    let dir = temp_dir("report-twice");
    let s = stop_twice(
        &["report", "--quick", "--out", dir.to_str().unwrap()],
        &dir,
        Second::Process,
    );
    check_report(&dir, &s);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigint_to_the_process_then_its_group_still_writes_the_partial_report() {
    let dir = temp_dir("report-group");
    let s = stop_twice(
        &["report", "--quick", "--out", dir.to_str().unwrap()],
        &dir,
        Second::Group,
    );
    check_report(&dir, &s);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_quick_sigints_print_the_hammers_partial_result() {
    let dir = temp_dir("hammer");
    let s = stop_twice(
        &[
            "hammer",
            "--seconds",
            "600",
            "--producer-nice",
            "0",
            "--json",
        ],
        &dir,
        Second::Process,
    );
    assert_eq!(s.code, Some(130), "{}", s.stderr);
    let json: serde_json::Value = serde_json::from_str(&s.stdout).expect("the JSON parses");
    assert_eq!(json["interrupted"], true, "{json}");
    assert!(json["hit"].as_u64().unwrap() > 0, "{json}");
    assert!(s.stderr.contains("interrupted"), "{}", s.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stopped_hammer_of_both_write_paths_prints_an_array() {
    // Stopped during its first run: still the array `--write-path both`
    // prints, holding the one run made.
    let dir = temp_dir("hammer-both");
    let s = stop_twice(
        &[
            "hammer",
            "--seconds",
            "600",
            "--write-path",
            "both",
            "--json",
        ],
        &dir,
        Second::Process,
    );
    assert_eq!(s.code, Some(130), "{}", s.stderr);
    let json: serde_json::Value = serde_json::from_str(&s.stdout).expect("the JSON parses");
    let runs = json.as_array().expect("an array");
    assert_eq!(runs.len(), 1, "{json}");
    assert_eq!(runs[0]["interrupted"], true, "{json}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_quick_sigints_print_the_pairs_partial_result() {
    let dir = temp_dir("pairs");
    // Each pair takes seconds here; the stop comes between two.
    let s = stop_twice(
        &["pairs", "--cpus", "1", "--samples", "5000000"],
        &dir,
        Second::Group,
    );
    assert_eq!(s.code, Some(130), "{}", s.stderr);
    assert!(
        s.stdout.contains("Interrupted: stopped by a signal"),
        "{}",
        s.stdout
    );
    assert!(s.stderr.contains("interrupted"), "{}", s.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_quick_sigints_print_the_clocks_partial_result() {
    let dir = temp_dir("clocks");
    let s = stop_twice(&["clocks", "--json"], &dir, Second::Process);
    assert_eq!(s.code, Some(130), "{}", s.stderr);
    let json: serde_json::Value = serde_json::from_str(&s.stdout).expect("the JSON parses");
    assert_eq!(json["interrupted"], true, "{json}");
    assert!(s.stderr.contains("interrupted"), "{}", s.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}
