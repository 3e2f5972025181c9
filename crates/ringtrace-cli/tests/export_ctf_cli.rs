//! `ringtrace export --format ctf` as a user runs it: a hammer's ring file
//! exported and read by babeltrace2, and an output it refuses.

mod common;

use common::TempDir;

use common::ringtrace;
use std::process::Command;

/// Whether babeltrace2 runs; when it does not, fails if
/// `RINGTRACE_REQUIRE_TOOLS` is set, else says the check is skipped.
fn have_babeltrace2() -> bool {
    let ok = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "babeltrace2 cannot be run, and RINGTRACE_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: babeltrace2 cannot be run (install it to read the CTF exports)");
    }
    ok
}

/// The `N` and `M` of `ringtrace export: N events (M marked lost) ...`.
fn counts(stderr: &str) -> (u64, u64) {
    let rest = stderr
        .strip_prefix("ringtrace export: ")
        .unwrap_or_else(|| panic!("{stderr}"));
    let (events, rest) = rest.split_once(" events (").unwrap();
    let (lost, _) = rest.split_once(" marked lost)").unwrap();
    (events.parse().unwrap(), lost.parse().unwrap())
}

#[test]
fn export_ctf_writes_a_trace_babeltrace2_reads_with_every_hammer_event_and_the_lost_ones() {
    if !have_babeltrace2() {
        return;
    }
    let dir = TempDir::new("export-ctf");
    let path = dir.file("h.ring");
    common::hammer_file(&path, "0.2");
    let ctf = dir.file("ctf");
    let out = ringtrace(&["export", &path, "--format", "ctf", "-o", &ctf]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let (events, lost) = counts(&err);
    assert!(events > 0, "{err}");

    let read = Command::new("babeltrace2").arg(&ctf).output().unwrap();
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert!(read.status.success(), "{stderr}");
    let stdout = String::from_utf8(read.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len() as u64, events);
    for l in &lines {
        assert!(
            l.contains(" hammer: { cpu_id = ") && l.contains("{ producer = "),
            "{l}"
        );
    }
    // Each discarded-events warning counts some of the lost events.
    let warned: u64 = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: Tracer discarded "))
        .map(|l| l.split_once(' ').unwrap().0.parse::<u64>().unwrap())
        .sum();
    assert_eq!(warned, lost, "{stderr}");

    // A second export over the first is refused, and leaves it whole.
    let out = ringtrace(&["export", &path, "--format", "ctf", "-o", &ctf]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cannot write {ctf}: the directory exists and is not empty"
        )),
        "{err}"
    );
    let again = Command::new("babeltrace2").arg(&ctf).output().unwrap();
    assert_eq!(again.stdout, stdout.as_bytes());
}
