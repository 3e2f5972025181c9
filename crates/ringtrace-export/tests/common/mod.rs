//! Helpers shared by the exporters' tests.
#![allow(dead_code)]

#[allow(unused_imports)] // not every test binary that includes this uses it
pub use ringtrace_testkit::TempDir;

pub mod trace;

/// `trace-cmd report -t` (full ns timestamps; `extra` arguments first)
/// of `file`: its stdout and stderr, after checking that it succeeded.
pub fn trace_cmd_report(file: &std::path::Path, extra: &[&str]) -> (String, String) {
    let out = std::process::Command::new("trace-cmd")
        .args(["report", "-t"])
        .args(extra)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "trace-cmd report failed: {stderr}\n{stdout}"
    );
    (stdout, stderr)
}
