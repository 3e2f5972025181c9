//! `ringtrace recover`'s text and JSON: the metadata records a ring keeps
//! beside its metadata (its annex, appended at run time) are counted, and
//! damage to them is a problem; and how the writer ended, as `recover`
//! and `dump` say it: exited (with when), died or closed.

mod common;

use ringtrace_cli::recover::{recovery_json, recovery_text};
use ringtrace_clock::{Clock, Counter, Mono};
use ringtrace_ring::{file, RingBuffer, RingConfig};
use ringtrace_testkit::TempDir;
use std::os::unix::process::ExitStatusExt;
use std::sync::OnceLock;
use std::time::Duration;

fn records() -> Vec<Vec<u8>> {
    vec![b"callsite one".to_vec(), b"callsite two, longer".to_vec()]
}

/// A closed file ring holding `records()` and one event.
fn file_with_records(path: &str) {
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .quarantine_pages(1)
        .metadata_capacity(4096)
        .file(path);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    for r in records() {
        ring.append_metadata(&r).unwrap();
    }
    ring.cpu_writer(0).write(b"event").unwrap();
}

#[test]
fn a_files_records_are_counted_in_the_recover_summary() {
    let dir = TempDir::new("recover-records");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let rec = file::recover(&path).unwrap();
    let text = recovery_text(&rec);
    assert!(
        text.contains("records:   2 metadata records appended at run time (32 bytes)\n"),
        "{text}"
    );
    assert!(text.contains("writer:    closed: process "), "{text}");
    assert!(text.contains(") dropped the ring\n"), "{text}");
    let json = recovery_json(&rec);
    assert_eq!(json["metadata_records"]["count"], 2, "{json}");
    assert_eq!(json["metadata_records"]["bytes"], 32, "{json}");
    assert_eq!(json["metadata_records"]["annex_capacity"], 4096, "{json}");
    assert_eq!(json["writer"]["state"], "closed", "{json}");
    assert_eq!(json["writer"]["exit"], serde_json::Value::Null, "{json}");
    assert_eq!(json["has_problems"], false, "{json}");
}

#[test]
fn damage_to_the_records_is_a_problem_in_the_recover_summary() {
    let dir = TempDir::new("recover-records-damage");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let at = file::recover(&path).unwrap().header.layout.annex_offset as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    // The second record's length, one more than there is.
    let second = at + 8 + 4 + records()[0].len();
    bytes[second..second + 4].copy_from_slice(&21u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let rec = file::recover(&path).unwrap();
    let text = recovery_text(&rec);
    assert!(
        text.contains("records:   1 metadata record appended"),
        "{text}"
    );
    assert!(
        text.contains("           problem: the metadata annex is damaged"),
        "{text}"
    );
    let json = recovery_json(&rec);
    assert_eq!(json["metadata_records"]["count"], 1, "{json}");
    assert_eq!(
        json["metadata_records"]["problems"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{json}"
    );
    assert_eq!(json["has_problems"], true, "{json}");
}

/// Set in the child: how it ends (see [`ending_child`]).
const ENDING: &str = "RINGTRACE_CLI_RECOVER_ENDING";
/// Set in the child: its ring file.
const ENDING_RING: &str = "RINGTRACE_CLI_RECOVER_RING";
/// Events the child writes before it ends.
const ENDING_EVENTS: u64 = 50;

/// The child's ring, held in a static as a program keeps one to its end.
static KEPT: OnceLock<RingBuffer<Mono>> = OnceLock::new();

/// The child: a file ring stamped by `mono`, `ENDING_EVENTS` events, then
/// the end the parent asked for. A no-op in the parent's own run.
#[test]
fn ending_child() {
    let (Some(how), Some(path)) = (std::env::var_os(ENDING), std::env::var_os(ENDING_RING)) else {
        return;
    };
    let make = || {
        let config = RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(8192)
            .quarantine_pages(1)
            .file(&path);
        RingBuffer::new(config, Mono::new()).unwrap()
    };
    let write = |ring: &RingBuffer<Mono>| {
        for i in 0..ENDING_EVENTS {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
    };
    if how == "drop" {
        let ring = make();
        write(&ring);
        return drop(ring);
    }
    let ring = KEPT.get_or_init(make);
    write(ring);
    match how.to_str().unwrap() {
        // The test returns, and so does the harness's `main`.
        "return" => {}
        "exit" => std::process::exit(EXIT_CODE.into()),
        "abort" => std::process::abort(),
        "kill" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        other => panic!("unknown ending {other}"),
    }
}

/// What `ringtrace recover`, `recover --json` and `dump` print of the ring
/// of a child ending by `how`, with the child's `process PID (COMM)` and
/// readings of `mono` and the wall clock around its life.
struct Said {
    text: String,
    json: serde_json::Value,
    dump: String,
    who: String,
    mono: (u64, u64),
    wall: (u64, u64),
}

fn said_after(dir: &TempDir, how: &str) -> Said {
    let path = dir.file(&format!("{how}.ring"));
    let ready = || file::recover(&path).map_or(0, |r| r.totals().recovered) >= ENDING_EVENTS;
    let clock = Mono::new();
    let life = ringtrace_testkit::run_child(
        "ending_child",
        &[(ENDING, how.as_ref()), (ENDING_RING, path.as_ref())],
        (how == "kill").then_some(&ready as &dyn Fn() -> bool),
        &|| clock.read(),
    );
    let status = life.status;
    let ((mono_before, mono_after), (wall_before, wall_after)) = (life.clock, life.wall);
    let want_status = match how {
        "return" | "drop" => Some(0),
        "exit" => Some(EXIT_CODE.into()),
        _ => None,
    };
    assert_eq!(status.code(), want_status, "{how}: {status:?}");
    let want_signal = match how {
        "abort" => Some(libc::SIGABRT),
        "kill" => Some(libc::SIGKILL),
        _ => None,
    };
    assert_eq!(status.signal(), want_signal, "{how}: {status:?}");
    let header = file::recover(&path).unwrap().header;
    assert_eq!(header.pid, life.pid);
    let run = |args: &[&str]| {
        let out = common::ringtrace(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    Said {
        text: run(&["recover", &path]),
        json: serde_json::from_str(&run(&["recover", "--json", &path])).unwrap(),
        dump: run(&["dump", &path]),
        who: format!("process {} ({})", header.pid, header.comm),
        mono: (mono_before, mono_after),
        wall: (wall_before, wall_after),
    }
}

/// The code the `exit` child exits with.
const EXIT_CODE: u8 = 3;

/// The one line that starts with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let found = lines
        .next()
        .unwrap_or_else(|| panic!("no {prefix:?} in:\n{text}"));
    assert!(lines.next().is_none(), "two {prefix:?} in:\n{text}");
    found
}

/// A normal exit, as `recover` and `dump` say it: exited, at a time in
/// the child's life, nothing left being written; and in the JSON, the
/// state's name and the time.
fn assert_said_exited(said: &Said, code: u8) {
    let writer = line(&said.text, "writer:    ");
    let words = writer.strip_prefix("writer:    ").unwrap();
    // glibc tells the exit handler the code; elsewhere it is unknown.
    let how = match code {
        0 => "exited normally".to_owned(),
        _ if !cfg!(target_env = "gnu") => "exited normally".to_owned(),
        code => format!("exited with code {code}"),
    };
    let at = words
        .strip_prefix(&format!("exited: {} {how} at ", said.who))
        .unwrap_or_else(|| panic!("{writer}"));
    let (time, rest) = at
        .split_once("Z (clock ticks ")
        .unwrap_or_else(|| panic!("{writer}"));
    assert!(time.starts_with("20") && time.len() == 29, "{writer}");
    let (ticks, rest) = rest.split_once(')').unwrap();
    assert_eq!(rest, "; 0 events were still being written", "{writer}");
    let ticks: u64 = ticks.parse().unwrap();
    assert!(
        (said.mono.0..=said.mono.1).contains(&ticks),
        "{writer}: {:?}",
        said.mono
    );
    assert_eq!(line(&said.dump, "# writer: "), format!("# writer: {words}"));
    let json = &said.json["writer"];
    assert_eq!(json["state"], "exited", "{json}");
    assert_eq!(json["exit"]["ticks"], ticks, "{json}");
    let wall = json["exit"]["wall_ns"].as_u64().unwrap();
    assert!(
        (said.wall.0..=said.wall.1).contains(&wall),
        "{json}: {:?}",
        said.wall
    );
    assert_eq!(json["exit"]["wall_time"], format!("{time}Z"), "{json}");
    if cfg!(target_env = "gnu") {
        assert_eq!(json["exit"]["code"], code, "{json}");
    }
    assert_eq!(json["words"], words, "{json}");
}

#[test]
fn a_return_from_main_is_said_exited_with_its_time() {
    let dir = TempDir::new("recover-return");
    assert_said_exited(&said_after(&dir, "return"), 0);
}

#[test]
fn process_exit_is_said_exited_with_its_time() {
    let dir = TempDir::new("recover-exit");
    assert_said_exited(&said_after(&dir, "exit"), EXIT_CODE);
}

#[test]
fn abort_and_sigkill_are_said_died_and_a_drop_closed() {
    let dir = TempDir::new("recover-died");
    for (how, state, words) in [
        (
            "abort",
            "died",
            "died: the ring was open and {} is gone (it crashed or was killed)",
        ),
        (
            "kill",
            "died",
            "died: the ring was open and {} is gone (it crashed or was killed)",
        ),
        ("drop", "closed", "closed: {} dropped the ring"),
    ] {
        let said = said_after(&dir, how);
        let words = words.replace("{}", &said.who);
        assert_eq!(
            line(&said.text, "writer:    "),
            format!("writer:    {words}"),
            "{how}"
        );
        assert_eq!(
            line(&said.dump, "# writer: "),
            format!("# writer: {words}"),
            "{how}"
        );
        assert_eq!(said.json["writer"]["state"], state, "{how}");
        assert_eq!(
            said.json["writer"]["exit"],
            serde_json::Value::Null,
            "{how}"
        );
    }
}
