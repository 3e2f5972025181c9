//! A program that streamed its ring, kept in a file, into a session and
//! was killed: `dump` and `export` given the session and the ring file
//! read them as one process, the file's events after the session's, and
//! count what the consumer read and never wrote.

use ringtrace::Tracer;
use ringtrace_testkit::{self_command, TempDir};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Set in the child: the session directory; its ring file is beside it.
const DIR: &str = "RINGTRACE_HALVES_TEST_DIR";
const EVENTS: u32 = 30_000;

/// The child: streams EVENTS numbered events (blocking: none refused)
/// from a file ring, then dies by SIGKILL.
#[test]
fn child_entry() {
    let Ok(dir) = std::env::var(DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let tracer = Tracer::builder()
        .blocking(Duration::from_secs(5))
        .buffer_size(128 * 1024)
        .file(dir.with_extension("ring"))
        .stream_to(dir)
        .build()
        .unwrap();
    for i in 0..EVENTS {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    // SAFETY: raise has no preconditions; SIGKILL ends the process here.
    unsafe { libc::raise(libc::SIGKILL) };
}

fn ringtrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
}

/// Each event's number and the events lost before it, from `dump --json`.
fn dumped(inputs: &[&Path]) -> (Vec<u32>, u64, String) {
    let out = ringtrace()
        .arg("dump")
        .arg("--json")
        .args(inputs)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let mut numbers = Vec::new();
    let mut lost = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["kind"] == "lost" {
            // Losses after a CPU's last event: no event carries them.
            lost += v["lost"].as_u64().unwrap();
            continue;
        }
        lost += v["lost_before"].as_u64().unwrap();
        let raw = v["raw"].as_str().unwrap();
        let bytes: Vec<u8> = (0..4)
            .map(|i| u8::from_str_radix(&raw[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        numbers.push(u32::from_le_bytes(bytes.try_into().unwrap()));
    }
    (numbers, lost, said)
}

#[test]
fn a_session_and_its_killed_programs_ring_file_read_as_one_process() {
    let tmp = TempDir::new("halves");
    let dir = tmp.path().join("trace");
    let ring = dir.with_extension("ring");
    let status = self_command()
        .args(["--exact", "child_entry", "--test-threads=1"])
        .env(DIR, &dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "{status:?}");
    // Either order: the same process, every event once; what the
    // consumer read and never wrote is counted, not lost silently.
    for inputs in [[&dir, &ring], [&ring, &dir]] {
        let (mut numbers, lost, said) = dumped(&inputs.map(|p| p.as_path()));
        assert!(said.contains("is the rest of process"), "{said}");
        let n = numbers.len();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), n, "an event read twice");
        assert_eq!(n as u64 + lost, u64::from(EVENTS), "{said}");
        // In order per CPU: the file's events after the session's.
        let (alone, _, _) = dumped(&[&dir]);
        let (rest, _, _) = dumped(&[&ring]);
        assert_eq!(alone.len() + rest.len(), n);
    }
    // A copy of the ring file is still refused: the session joins once.
    let copy = tmp.path().join("copy.ring");
    std::fs::copy(&ring, &copy).unwrap();
    let out = ringtrace()
        .arg("dump")
        .args([&dir, &ring, &copy])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("a copy of it"), "{said}");
    // Export, which reads a session a chunk at a time: the same count.
    let json = tmp.path().join("t.json");
    let out = ringtrace()
        .arg("export")
        .args([&dir, &ring])
        .args(["--format", "chrome", "-o"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (numbers, _, _) = dumped(&[&dir, &ring]);
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] != "lost")
        .count();
    assert_eq!(events, numbers.len());
}
