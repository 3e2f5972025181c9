//! Ring files written through the facade and read back by `ringtrace dump`
//! and the trace_file module: decoded fields, ftrace's line shape, the
//! thread id each tracepoint event carries, and payloads that cannot be
//! decoded.

mod common;

use common::TempDir;

use ringtrace::clock::ClockSpec;
use ringtrace::export::{metadata_for_tracepoints, Dump, DumpOptions};
use ringtrace::ring::{file, RingBuffer, RingConfig};
use ringtrace::tracepoint::{registry, trace, tracepoint};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

tracepoint! {
    /// Fired by the dump test.
    pub fn tf_page_read(page: u64, hit: bool) = "page={} hit={}";
    /// Fired from two threads by the thread-id test.
    pub fn tf_marker(marker: u32, note: &str) = "marker={} note={}";
}

/// The sink's directory, removed when the test process exits.
static SINK_DIR: OnceLock<TempDir> = OnceLock::new();

extern "C" fn remove_sink_dir() {
    if let Some(dir) = SINK_DIR.get() {
        let _ = std::fs::remove_dir_all(&dir.0);
    }
}

/// The process's sink: a file ring carrying this program's tracepoints,
/// made once (the sink is process-wide, and outlives every test, so its
/// directory goes at exit), and a lock for the tests that fire into it.
fn sink() -> (&'static Path, MutexGuard<'static, ()>) {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let path = PATH.get_or_init(|| {
        let dir = SINK_DIR.get_or_init(|| TempDir::new("sink"));
        // SAFETY: registers a plain function with no arguments; it runs
        // once, at exit, after every test.
        assert_eq!(unsafe { libc::atexit(remove_sink_dir) }, 0);
        let path = dir.0.join("app.ring");
        let config = RingConfig::default()
            .cpus(ringtrace::ring::cpu::possible_cpus())
            .per_cpu_bytes(64 * 1024)
            .quarantine_pages(4)
            .file(&path)
            .metadata(metadata_for_tracepoints().unwrap().to_bytes());
        let clock = "mono".parse::<ClockSpec>().unwrap().build().unwrap();
        let ring = RingBuffer::new(config, clock).unwrap();
        ringtrace::tracepoint::set_sink(Box::leak(Box::new(ring)))
            .expect("the first sink of this process");
        path
    });
    (path, LOCK.lock().unwrap_or_else(|e| e.into_inner()))
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    u32::try_from(unsafe { libc::gettid() }).unwrap()
}

/// Splits an ftrace line `comm-tid [cpu] seconds: rest` into its parts,
/// checking the shape: the comm right-aligned in 16 columns, the tid
/// left-aligned in 7, a three-digit CPU, nine decimals.
fn ftrace_parts(line: &str) -> (String, u32, usize, String, String) {
    let (head, rest) = line
        .split_once("] ")
        .unwrap_or_else(|| panic!("no `] ` in {line:?}"));
    let (task, cpu) = head
        .rsplit_once(" [")
        .unwrap_or_else(|| panic!("no ` [` in {line:?}"));
    assert_eq!(cpu.len(), 3, "CPU not 3 digits: {line:?}");
    let (comm, tid) = task
        .rsplit_once('-')
        .unwrap_or_else(|| panic!("no comm-tid in {line:?}"));
    assert!(comm.len() >= 16, "comm not padded to 16: {line:?}");
    assert!(tid.len() >= 7, "tid not padded to 7: {line:?}");
    let (ts, event) = rest
        .split_once(": ")
        .unwrap_or_else(|| panic!("no timestamp in {line:?}"));
    let ts = ts.trim_start();
    let (secs, frac) = ts.split_once('.').unwrap();
    assert!(secs.parse::<u64>().is_ok() && frac.len() == 9, "{line:?}");
    (
        comm.trim_start().to_owned(),
        tid.trim_end().parse().unwrap(),
        cpu.parse().unwrap(),
        ts.to_owned(),
        event.to_owned(),
    )
}

#[test]
fn a_file_ring_written_through_the_facade_dumps_with_decoded_fields_in_ftrace_lines() {
    let (path, _only_writer) = sink();
    registry::enable("trace_file:tf_page_read").unwrap();
    trace!(tf_page_read(2, true));
    trace!(tf_page_read(3, false));
    registry::disable("tf_page_read").unwrap();

    let out = common::ringtrace(&["dump", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    let comment = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line in:\n{text}"))
    };
    // The test process is still writing: a live snapshot.
    assert!(comment("# writer: ").contains("live snapshot"), "{text}");
    assert!(comment("# live: ").contains("may miss"), "{text}");
    assert!(comment("# clock: ").starts_with("# clock: mono"), "{text}");
    assert!(comment("# wall-clock anchor: ").ends_with(char::is_numeric));
    assert!(comment("# wall-clock anchor: ").contains('T'), "{text}");
    assert!(comment("# metadata: ").contains("tracepoints"), "{text}");
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    let events: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(ftrace_parts)
        .filter(|p| p.4.starts_with("trace_file:tf_page_read: "))
        .collect();
    let shown: Vec<&str> = events.iter().map(|p| p.4.as_str()).collect();
    assert_eq!(
        shown,
        [
            "trace_file:tf_page_read: page=2 hit=true",
            "trace_file:tf_page_read: page=3 hit=false"
        ],
        "{text}"
    );
    for (c, tid, cpu, _, _) in &events {
        assert_eq!(c, comm.trim_end());
        assert_eq!(*tid, gettid());
        assert!(*cpu < ringtrace::ring::cpu::possible_cpus());
    }
    assert!(events[0].3 <= events[1].3, "time order: {text}");
}

#[test]
fn each_tracepoint_event_carries_the_gettid_of_the_thread_that_wrote_it() {
    let (path, _only_writer) = sink();
    registry::enable("tf_marker").unwrap();
    trace!(tf_marker(1, "main"));
    let other = std::thread::spawn(|| {
        trace!(tf_marker(2, "spawned"));
        gettid()
    })
    .join()
    .unwrap();
    registry::disable("tf_marker").unwrap();
    assert_ne!(other, gettid());

    // Read back from the file, by the file's metadata.
    let recovery = file::recover(path).unwrap();
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let mut got: Vec<(u64, u32)> = dump
        .events()
        .into_iter()
        .map(|e| dump.json(e))
        .filter(|j| j["event"] == "trace_file:tf_marker")
        .map(|j| {
            assert_eq!(j["kind"], "tracepoint");
            (
                j["fields"]["marker"].as_u64().unwrap(),
                j["tid"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, [(1, gettid()), (2, other)]);
}

/// A file ring of one CPU with `metadata` (or none), holding `payloads`,
/// closed.
fn closed_ring(dir: &TempDir, clock: &str, metadata: Option<&[u8]>, payloads: &[&[u8]]) -> PathBuf {
    let path = dir.0.join("ring");
    let mut config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .quarantine_pages(1)
        .file(&path);
    if let Some(m) = metadata {
        config = config.metadata(m.to_vec());
    }
    let ring =
        RingBuffer::new(config, clock.parse::<ClockSpec>().unwrap().build().unwrap()).unwrap();
    for p in payloads {
        ring.write(p).unwrap();
    }
    drop(ring);
    path
}

#[test]
fn payloads_that_cannot_be_decoded_print_as_hex_with_the_reason() {
    let dir = TempDir::new("raw");
    let mut cut = tf_page_read::TRACEPOINT.id.to_le_bytes().to_vec();
    cut.extend_from_slice(&[1, 0, 0, 0, 9]); // tid, then a u64 cut off
    let meta = metadata_for_tracepoints().unwrap().to_bytes();
    let path = closed_ring(&dir, "mono", Some(&meta), &[&[0xAB; 8], &cut]);
    let recovery = file::recover(&path).unwrap();
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let lines: Vec<String> = dump.events().into_iter().map(|e| dump.line(e)).collect();
    assert!(
        lines[0].ends_with(
            "raw: abababababababab (no tracepoint in the file's metadata has id 0xabababab)"
        ),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("(tracepoint `trace_file:tf_page_read`: field `page` is cut off)"),
        "{lines:?}"
    );
    // The writer's pid stands in for the thread id an event does not carry.
    assert!(
        lines[0].contains(&format!("-{:<7} [000]", std::process::id())),
        "{lines:?}"
    );
    let raw = Dump::new(&recovery, DumpOptions::default().raw(true)).unwrap();
    assert!(raw
        .line(raw.events()[1])
        .ends_with(&format!("raw: {}", ringtrace::export::text::hex(&cut))));
}

#[test]
fn a_file_without_usable_metadata_dumps_raw_and_says_why() {
    let dir = TempDir::new("nometa");
    let path = closed_ring(&dir, "mono", None, &[b"abc"]);
    let recovery = file::recover(&path).unwrap();
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let comments = dump.comments().join("\n");
    assert!(
        comments.contains("# metadata: none usable (the file carries no metadata"),
        "{comments}"
    );
    assert!(comments.contains("# writer: closed"), "{comments}");
    assert!(dump
        .line(dump.events()[0])
        .contains("raw: 616263 (the file carries no metadata"));

    let dir = TempDir::new("badmeta");
    let path = closed_ring(
        &dir,
        "mono",
        Some(br#"{"version": 1, "tracepoints": 5}"#),
        &[b"abc"],
    );
    let recovery = file::recover(&path).unwrap();
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let comments = dump.comments().join("\n");
    assert!(comments.contains("the metadata is not valid"), "{comments}");
}

#[test]
fn a_clock_whose_ticks_are_not_time_prints_raw_ticks_and_says_so() {
    let dir = TempDir::new("counter");
    let path = closed_ring(&dir, "counter", None, &[b"a", b"b"]);
    let recovery = file::recover(&path).unwrap();
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let comments = dump.comments().join("\n");
    assert!(
        comments.contains("# timestamps: raw ticks of clock `counter`, which are not time"),
        "{comments}"
    );
    let events = dump.events();
    let line = dump.line(events[1]);
    let ts = line.split("] ").nth(1).unwrap().split(':').next().unwrap();
    assert_eq!(ts.trim().parse::<u64>().unwrap(), events[1].ts, "{line}");
    assert_eq!(dump.json(events[1])["ns"], serde_json::Value::Null);
}
