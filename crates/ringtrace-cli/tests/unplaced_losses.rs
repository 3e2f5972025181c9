//! Losses no event carries (`CpuRecovery::unplaced`): a ring file's
//! refused writes, and a session's losses after a CPU's last event. Every
//! reader counts them: `stats`' total and each export's summary equal
//! the dump's, and events + losses are what was written.

mod common;

use ringtrace_clock::{Clock, ManualClock};
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_session::{LossCause, ProcessExit, ProcessInfo, SessionOptions, SessionWriter};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ringtrace-unplaced-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `stats --json`'s total of lost events.
fn stats_lost(input: &Path) -> u64 {
    let out = common::ringtrace(&["stats", "--json", input.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["losses_per_cpu_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lost"].as_u64().unwrap())
        .sum()
}

/// Each export's summary: (format, events, lost).
fn exports(input: &Path, dir: &Path) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    for format in ["text", "trace-cmd", "chrome", "ctf", "perfetto"] {
        let to = dir.join(format!("out.{format}"));
        let run = common::ringtrace(&[
            "export",
            "--format",
            format,
            "-o",
            to.to_str().unwrap(),
            input.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{format}: {err}");
        // `ringtrace export: N events (M marked lost) from ...`
        let line = err.lines().find(|l| l.contains(" marked lost)")).unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let events = words[2].parse().unwrap();
        let lost = words[4].trim_start_matches('(').parse().unwrap();
        out.push((format.to_owned(), events, lost));
    }
    out
}

fn dump(input: &Path) -> String {
    let out = common::ringtrace(&["dump", input.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_ring_files_refused_writes_are_counted_by_every_reader() {
    let dir = scratch("ring");
    let file = dir.join("discard.ring");
    let tracer = ringtrace::Tracer::builder()
        .file(&file)
        .cpus(1)
        .buffer_size(8192)
        .mode(ringtrace::Mode::Discard)
        .build()
        .unwrap();
    let written = 2000u64;
    for i in 0..written as u32 {
        let _ = tracer.write(&i.to_le_bytes());
    }
    drop(tracer.finish());
    let rec = ringtrace_ring::file::recover(&file).unwrap();
    let events = rec.totals().recovered;
    let refused = rec.file_stats().missed;
    assert!(refused > 0, "the ring refused nothing");
    assert_eq!(rec.cpus[0].unplaced().refused, refused);
    assert_eq!(events + refused, written);
    let text = dump(&file);
    assert!(
        text.contains(&format!(
            ", {refused} refused (writes the ring turned away)"
        )),
        "{text}"
    );
    let json = common::ringtrace(&["dump", file.to_str().unwrap(), "--json"]);
    let json = String::from_utf8(json.stdout).unwrap();
    assert!(
        json.lines().any(|l| l.contains(r#""kind":"lost""#)
            && l.contains(&format!(r#""lost":{refused},"#))
            && l.contains(r#""cause":"refused_time_unknown""#)),
        "{json}"
    );
    assert_eq!(stats_lost(&file), refused);
    for (format, e, lost) in exports(&file, &dir) {
        assert_eq!((e, lost), (events, refused), "{format}");
    }
    let chrome = std::fs::read_to_string(dir.join("out.chrome")).unwrap();
    assert!(chrome.contains("refused_time_unknown"), "{chrome}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session of one process, two CPUs: `n` events each, a loss before
/// the last event of CPU 0, and losses after each CPU's last event.
/// Returns (events written, losses).
fn session(dir: &Path, n: u32) -> (u64, u64) {
    let clock = ManualClock::ns(1_000_000);
    let config = RingConfig::default()
        .cpus(2)
        .page_size(4096)
        .per_cpu_bytes(64 * 1024);
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    // No tracepoints: the events are raw bytes, but trace-cmd needs
    // metadata to be there.
    let metadata = ringtrace_export::TraceMetadata::new(Vec::new()).to_bytes();
    let mut header = ring.snapshot(metadata.clone()).header;
    (header.pid, header.comm) = (4242, "app".into());
    let session = SessionWriter::create(dir, SessionOptions::default()).unwrap();
    let mut process = session
        .add_process(ProcessInfo {
            pid: 4242,
            start: 7,
            ppid: 1,
            comm: "app".into(),
            header,
            metadata,
        })
        .unwrap();
    let drain = |process: &mut ringtrace_session::ProcessWriter| {
        ring.flush();
        for cpu in 0..2 {
            let buffer = ring.cpu_buffer(cpu).unwrap();
            while let Some(page) = buffer.read_page() {
                process.append_page(cpu, &page.bytes).unwrap();
            }
        }
    };
    for i in 0..n {
        clock.advance(10);
        ring.cpu_writer((i % 2) as usize)
            .write(&i.to_le_bytes())
            .unwrap();
    }
    drain(&mut process);
    // Carried by the next event of CPU 0.
    process
        .append_loss(0, clock.read(), 2, LossCause::Refused)
        .unwrap();
    clock.advance(10);
    ring.cpu_writer(0).write(&n.to_le_bytes()).unwrap();
    drain(&mut process);
    // After each CPU's last event: carried by none.
    process
        .append_loss(0, clock.read(), 5, LossCause::Refused)
        .unwrap();
    process
        .append_loss(1, clock.read(), 3, LossCause::Overwritten)
        .unwrap();
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    (u64::from(n) + 1, 10)
}

#[test]
fn a_sessions_losses_after_a_cpus_last_event_are_counted_by_every_reader() {
    let dir = scratch("session");
    let trace = dir.join("trace");
    let (events, lost) = session(&trace, 400);
    let text = dump(&trace);
    assert!(
        text.contains("# lost on CPU 0: 7 refused (5 of them after its last event)"),
        "{text}"
    );
    assert!(
        text.contains("# lost on CPU 1: 3 overwritten (3 of them after its last event)"),
        "{text}"
    );
    // The JSON dump: an object per CPU and cause after the events.
    let out = common::ringtrace(&["dump", trace.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let carried: u64 = lines.iter().filter_map(|v| v["lost_before"].as_u64()).sum();
    let trailing: Vec<(u64, u64, &str)> = lines
        .iter()
        .filter(|v| v["kind"] == "lost")
        .map(|v| {
            (
                v["cpu"].as_u64().unwrap(),
                v["lost"].as_u64().unwrap(),
                v["cause"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        trailing,
        [(0, 5, "after_last_event"), (1, 3, "after_last_event")]
    );
    assert_eq!(carried + 8, lost);
    let last_ts = lines
        .iter()
        .filter(|v| v["kind"] != "lost" && v["cpu"] == 1)
        .map(|v| v["ts"].as_u64().unwrap())
        .max();
    let at = lines.iter().find(|v| v["kind"] == "lost" && v["cpu"] == 1);
    assert_eq!(
        at.unwrap()["ts"].as_u64(),
        last_ts,
        "at the CPU's last event"
    );
    let read = ringtrace_session::Session::open(&trace).unwrap();
    let r = &read.recoveries()[0];
    let unplaced: u64 = r.cpus.iter().map(|c| c.unplaced().total()).sum();
    assert_eq!(unplaced, 8);
    assert_eq!(stats_lost(&trace), lost);
    for (format, e, l) in exports(&trace, &dir) {
        assert_eq!((e, l), (events, lost), "{format}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
