//! `--format trace-cmd` read back by trace-cmd itself: every event's name,
//! fields, CPU, pid, order and timestamp as `trace-cmd report` prints
//! them; the lost-events line of an overwritten ring; a preemptirq event
//! with its caller; random events round-tripping.

mod common;

use common::TempDir;
use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use ringtrace_export::export::{export, Format};
use ringtrace_export::{Decoder, EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::file::{self, Recovery};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::{fnv1a, FieldKind, FieldValue};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Whether trace-cmd can be run; without it the checks are skipped, or
/// fail when `RINGTRACE_REQUIRE_TOOLS` is set (CI).
fn have_trace_cmd() -> bool {
    ringtrace_testkit::have_tool("trace-cmd")
}

/// A clock the test sets by hand: 3 GHz ticks, so that the export's
/// conversion to ns is not the identity.
#[derive(Debug, Clone)]
struct ManualClock(Arc<AtomicU64>, &'static str, Option<u64>);

impl ManualClock {
    fn new(name: &'static str, hz: Option<u64>) -> ManualClock {
        ManualClock(Arc::new(AtomicU64::new(1)), name, hz)
    }
    fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn read(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: self.1.into(),
            frequency_hz: self.2,
            ticks_are_ns: self.2 == Some(1_000_000_000),
            guarantee: Guarantee::PerCpu,
            precision_ns: self.2.map(|_| 1.0),
            conversion: self.2.and_then(TickConversion::from_frequency),
        }
    }
}

fn tracepoint(name: &str, fields: &[(&str, FieldKind)], format: &str) -> TracepointDesc {
    TracepointDesc {
        name: name.into(),
        id: fnv1a(name),
        fields: fields.iter().map(|(n, k)| FieldDesc::new(n, *k)).collect(),
        format: format.into(),
    }
}

/// The test's tracepoints: one of every field type, the kernel's
/// irq_disable, and the hammer's untagged layout.
fn metadata() -> TraceMetadata {
    use FieldKind::*;
    TraceMetadata::new(vec![
        tracepoint(
            "app:tc_request",
            &[
                ("status", U16),
                ("bytes", U64),
                ("delta", I32),
                ("ok", Bool),
                ("path", Str),
                ("site", Location),
            ],
            "status={} bytes={} delta={} ok={} path={} site={}",
        ),
        tracepoint(
            "app:tc_small",
            &[
                ("a", U8),
                ("b", I8),
                ("c", I16),
                ("d", U32),
                ("e", I64),
                ("f", F64),
            ],
            "a={} b={} c={} d={:#x} e={} f={}",
        ),
        tracepoint(
            "preemptirq:irq_disable",
            &[("ip", Location), ("parent", Location)],
            "caller={} parent={}",
        ),
    ])
    .with_untagged(EventLayout {
        name: "hammer".into(),
        fields: vec![
            FieldDesc::new("producer", U16),
            FieldDesc::new("seq", U32),
            FieldDesc::new("check", U32),
        ],
        format: "producer={} seq={} check={:#x}".into(),
    })
}

/// One field's bytes as ringtrace encodes it.
fn encode(kind: FieldKind, v: &FieldValue, out: &mut Vec<u8>) {
    let string = |s: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(&(s.len() as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    match (kind, v) {
        (FieldKind::U8, FieldValue::Unsigned(n)) => out.push(*n as u8),
        (FieldKind::U16, FieldValue::Unsigned(n)) => {
            out.extend_from_slice(&(*n as u16).to_le_bytes())
        }
        (FieldKind::U32, FieldValue::Unsigned(n)) => {
            out.extend_from_slice(&(*n as u32).to_le_bytes())
        }
        (FieldKind::U64, FieldValue::Unsigned(n)) => out.extend_from_slice(&n.to_le_bytes()),
        (FieldKind::I8, FieldValue::Signed(n)) => out.push(*n as u8),
        (FieldKind::I16, FieldValue::Signed(n)) => {
            out.extend_from_slice(&(*n as i16).to_le_bytes())
        }
        (FieldKind::I32, FieldValue::Signed(n)) => {
            out.extend_from_slice(&(*n as i32).to_le_bytes())
        }
        (FieldKind::I64, FieldValue::Signed(n)) => out.extend_from_slice(&n.to_le_bytes()),
        (FieldKind::Bool, FieldValue::Bool(b)) => out.push(u8::from(*b)),
        (FieldKind::F64, FieldValue::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (FieldKind::Str, FieldValue::Str(s)) => string(s, out),
        (FieldKind::Location, FieldValue::Location { file, line, column }) => {
            string(file, out);
            out.extend_from_slice(&line.to_le_bytes());
            out.extend_from_slice(&column.to_le_bytes());
        }
        (k, v) => panic!("{v:?} is not a {k:?}"),
    }
}

/// A tracepoint event's payload: id, tid, then the fields.
fn payload(tp: &TracepointDesc, tid: u32, values: &[FieldValue]) -> Vec<u8> {
    let mut p = tp.id.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    for (f, v) in tp.fields.iter().zip(values) {
        encode(f.kind, v, &mut p);
    }
    p
}

fn loc(file: &str, line: u32, column: u32) -> FieldValue {
    FieldValue::Location {
        file: file.into(),
        line,
        column,
    }
}

/// A ring file of `cpus` CPUs written by `write`, recovered.
fn ring_file(
    dir: &TempDir,
    clock: &ManualClock,
    config: RingConfig,
    meta: &TraceMetadata,
    write: impl FnOnce(&RingBuffer<ManualClock>),
) -> Recovery {
    let path = dir.0.join("t.ring");
    let config = config.file(&path).metadata(meta.to_bytes());
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    write(&ring);
    drop(ring);
    file::recover(&path).unwrap()
}

/// One event line of `trace-cmd report`.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    comm: String,
    pid: u32,
    cpu: usize,
    ns: u64,
    name: String,
    text: String,
}

/// Runs `trace-cmd report -t` (full ns timestamps) with `extra`
/// arguments; returns its stdout.
fn report(file: &Path, extra: &[&str]) -> String {
    common::trace_cmd_report(file, extra).0
}

/// Parses an event line: `COMM-PID [CPU] SECS.NSECS: NAME: TEXT`.
fn parse_line(line: &str) -> Option<Line> {
    let (head, rest) = line.split_once(": ")?;
    let (name, text) = rest.split_once(':').unwrap_or((rest, ""));
    // A count too wide for its column follows the `]` without a space.
    let (task, rest) = head.rsplit_once('[')?;
    let (cpu, ts) = rest.split_once(']')?;
    let (comm, pid) = task.trim().rsplit_once('-')?;
    let cpu = cpu.parse().ok()?;
    let ts = ts.trim();
    // Seconds with nine decimals, or a count when ticks are not time.
    let ts = ts.strip_suffix(':').unwrap_or(ts);
    let ns = match ts.split_once('.') {
        Some((secs, frac)) => {
            secs.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?
        }
        None => ts.parse().ok()?,
    };
    Some(Line {
        comm: comm.into(),
        pid: pid.parse().ok()?,
        cpu,
        ns,
        name: name.trim().into(),
        text: text.trim().into(),
    })
}

/// The event lines of a report, and its other lines.
fn parse_report(report: &str) -> (Vec<Line>, Vec<String>) {
    let mut events = Vec::new();
    let mut other = Vec::new();
    for l in report.lines() {
        match parse_line(l) {
            Some(e) if !l.starts_with("CPU") && !l.starts_with("cpus=") => events.push(e),
            _ => other.push(l.to_owned()),
        }
    }
    (events, other)
}

/// What `trace-cmd report` should print for each recovered event, in its
/// order: by time, ties by CPU. trace-cmd names an event without its
/// system.
fn expected(r: &Recovery, meta: &TraceMetadata) -> Vec<Line> {
    let decoder = Decoder::new(meta);
    let mut all: Vec<_> = r
        .cpus
        .iter()
        .flat_map(|c| c.events.iter().enumerate())
        .map(|(i, e)| {
            let d = decoder.decode(&e.payload);
            let ns = r.header.clock.ticks_to_ns(e.ts).unwrap_or(e.ts);
            let line = Line {
                comm: r.header.comm.clone(),
                pid: d.tid().unwrap_or(r.header.pid),
                cpu: e.cpu,
                ns,
                name: d.name().unwrap().rsplit(':').next().unwrap().to_owned(),
                text: d.text(),
            };
            ((ns, e.cpu, i), line)
        })
        .collect();
    all.sort_by_key(|(k, _)| *k);
    all.into_iter().map(|(_, l)| l).collect()
}

/// Exports `r` as a trace-cmd file in `dir`.
fn export_to(dir: &TempDir, r: &Recovery) -> PathBuf {
    let out = dir.0.join("trace.dat");
    let done = export(r, Format::TraceCmd, &out).unwrap();
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    out
}

fn request(tid: u32, status: u64, path: &str, ok: bool) -> (usize, u32, Vec<FieldValue>) {
    (
        0,
        tid,
        vec![
            FieldValue::Unsigned(status),
            FieldValue::Unsigned(status << 33),
            FieldValue::Signed(-(status as i64)),
            FieldValue::Bool(ok),
            FieldValue::Str(path.into()),
            loc("src/server.rs", status as u32, 7),
        ],
    )
}

fn small(tid: u32, n: i64) -> (usize, u32, Vec<FieldValue>) {
    (
        1,
        tid,
        vec![
            FieldValue::Unsigned(n as u64 & 0xff),
            FieldValue::Signed(-n % 128),
            FieldValue::Signed(n * 100),
            FieldValue::Unsigned(0xdead_0000 + n as u64),
            FieldValue::Signed(i64::MIN + n),
            FieldValue::Float(n as f64 / 4.0),
        ],
    )
}

#[test]
fn every_event_of_two_threads_on_two_cpus_reads_back_with_its_fields_cpu_pid_and_time() {
    if !have_trace_cmd() {
        return;
    }
    let dir = TempDir::new("two");
    let clock = ManualClock::new("tsc@irq", Some(3_000_000_000));
    let meta = metadata();
    let tps = meta.tracepoints.clone();
    // (CPU, ticks, event): two threads, 101 on CPU 0 and 102 on CPU 1,
    // then each on the other; equal times across CPUs; a gap of minutes
    // (a time extend); enough events to fill several pages.
    let base = 5_000_000_000_000u64;
    let mut script = vec![
        (0, base, request(101, 200, "/index.html", true)),
        (1, base, small(102, 1)),
        (1, base + 7, request(102, 404, "/missing page", false)),
        // Larger than a 4096-byte page: the file's pages grow.
        (1, base + 8, request(102, 301, &"/long".repeat(1500), true)),
        (0, base + 10, small(101, 2)),
        (0, base + 3_000_000_000 * 150, request(101, 500, "", true)),
        (1, base + 3_000_000_000 * 151, small(101, 3)),
        (0, base + 3_000_000_000 * 151 + 1, small(102, 4)),
    ];
    let mut t = base + 3_000_000_000 * 152;
    for i in 0..400 {
        t += 1 + i * 37;
        let cpu = (i % 3 == 0) as usize;
        let tid = 101 + (i % 2) as u32;
        let e = if i % 5 == 0 {
            request(tid, i, &"x".repeat(i as usize % 50), i % 2 == 0)
        } else {
            small(tid, i as i64)
        };
        script.push((cpu, t, e));
    }
    let r = ring_file(
        &dir,
        &clock,
        RingConfig::default()
            .cpus(2)
            .page_size(16 * 1024)
            .per_cpu_bytes(256 * 1024)
            .quarantine_pages(2),
        &meta,
        |ring| {
            for (cpu, ticks, (tp, tid, values)) in &script {
                clock.set(*ticks);
                ring.cpu_writer(*cpu)
                    .write(&payload(&tps[*tp], *tid, values))
                    .unwrap();
            }
        },
    );
    assert_eq!(r.merged().len(), script.len());
    let out = export_to(&dir, &r);
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..12], b"\x17\x08\x44tracing6\0");
    let page_size = u32::from_le_bytes(bytes[14..18].try_into().unwrap());
    assert_eq!(page_size, 8192, "the 7.5 KB event's page");

    let want = expected(&r, &meta);
    let (got, other) = parse_report(&report(&out, &[]));
    assert_eq!(other, ["cpus=2"]);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    // The first event, by hand: 5000 s of 3 GHz ticks is 1666.666666667
    // s, less the conversion's error (a 32-bit fixed-point multiplier:
    // under a part per billion).
    assert!(
        got[0].ns.abs_diff(1_666_666_666_667) < 1_000,
        "{}",
        got[0].ns
    );
    assert_eq!(
        got[0].text,
        "status=200 bytes=1717986918400 delta=-200 ok=true path=/index.html site=src/server.rs:200:7"
    );
    // One CPU at a time.
    for cpu in 0..2 {
        let (only, _) = parse_report(&report(&out, &["--cpu", &cpu.to_string()]));
        let want_cpu: Vec<_> = want.iter().filter(|l| l.cpu == cpu).cloned().collect();
        assert_eq!(only, want_cpu, "CPU {cpu}");
    }
    // Each tracepoint is in its own system: events/app/tc_request.
    let (only, _) = parse_report(&report(&out, &["-F", "app/tc_request"]));
    let want_requests: Vec<_> = want
        .iter()
        .filter(|l| l.name == "tc_request")
        .cloned()
        .collect();
    assert!(!want_requests.is_empty());
    assert_eq!(only, want_requests);
    // The raw fields: the kernel's types, strings after the fixed fields.
    let raw = report(&out, &["-R", "--cpu", "0"]);
    let first = raw.lines().find(|l| l.contains("tc_request")).unwrap();
    assert!(
        first.ends_with(
            "status=200 bytes=1717986918400 delta=-200 ok=1 path=/index.html site=src/server.rs:200:7"
        ),
        "{first}"
    );
}

#[test]
fn an_overwritten_ring_shows_trace_cmds_dropped_events_line_with_the_count() {
    if !have_trace_cmd() {
        return;
    }
    let dir = TempDir::new("lost");
    let clock = ManualClock::new("mono", Some(1_000_000_000));
    let meta = metadata();
    let tps = meta.tracepoints.clone();
    let r = ring_file(
        &dir,
        &clock,
        RingConfig::default()
            .cpus(2)
            .page_size(4096)
            .per_cpu_bytes(4 * 4096)
            .quarantine_pages(1)
            .mode(Mode::Overwrite),
        &meta,
        |ring| {
            for i in 0..2000u64 {
                clock.set(1_000_000 + i * 1000);
                let (tp, tid, values) = small(7, i as i64);
                ring.cpu_writer(0)
                    .write(&payload(&tps[tp], tid, &values))
                    .unwrap();
            }
            clock.set(9_000_000);
            let (tp, tid, values) = request(8, 201, "/", true);
            ring.cpu_writer(1)
                .write(&payload(&tps[tp], tid, &values))
                .unwrap();
        },
    );
    let lost = r.cpus[0].events[0].lost_before;
    assert!(lost > 0, "the ring wrapped");
    assert_eq!(lost + r.cpus[0].events.len() as u64, 2000);
    let out = dir.0.join("trace.dat");
    let done = export(&r, Format::TraceCmd, &out).unwrap();
    assert_eq!(done.lost, lost);
    let text = report(&out, &[]);
    let lines: Vec<&str> = text.lines().collect();
    // trace-cmd's words for the kernel's missed-events count (ftrace's own
    // text says `[LOST N EVENTS]`).
    let marker = format!("CPU:0 [{lost} EVENTS DROPPED]");
    let at = lines
        .iter()
        .position(|l| *l == marker)
        .unwrap_or_else(|| panic!("no `{marker}` in\n{text}"));
    // Just before the first event kept, and nowhere else.
    assert_eq!(at, 1, "{text}");
    assert_eq!(lines.iter().filter(|l| l.contains("DROPPED")).count(), 1);
    let (got, _) = parse_report(&text);
    assert_eq!(got, expected(&r, &meta));
}

#[test]
fn a_preemptirq_event_reads_as_preemptirq_irq_disable_with_its_caller() {
    if !have_trace_cmd() {
        return;
    }
    let dir = TempDir::new("irq");
    let clock = ManualClock::new("counter", None);
    let meta = metadata();
    let tps = meta.tracepoints.clone();
    let r = ring_file(
        &dir,
        &clock,
        RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(64 * 1024)
            .quarantine_pages(1),
        &meta,
        |ring| {
            for (i, (caller, parent)) in [
                (loc("src/lock.rs", 40, 9), loc("src/main.rs", 3, 1)),
                (loc("src/lock.rs", 52, 13), loc("src/lock.rs", 40, 9)),
            ]
            .into_iter()
            .enumerate()
            {
                clock.set(10 + i as u64);
                ring.cpu_writer(0)
                    .write(&payload(&tps[2], 55, &[caller, parent]))
                    .unwrap();
            }
        },
    );
    let out = export_to(&dir, &r);
    // Only the kernel's preemptirq:irq_disable events.
    let text = report(&out, &["-F", "preemptirq/irq_disable"]);
    let (got, _) = parse_report(&text);
    assert_eq!(got.len(), 2, "{text}");
    assert_eq!(got[0].name, "irq_disable");
    assert_eq!(
        got[0].text,
        "caller=src/lock.rs:40:9 parent=src/main.rs:3:1"
    );
    assert_eq!(
        got[1].text,
        "caller=src/lock.rs:52:13 parent=src/lock.rs:40:9"
    );
    // A counter's ticks are not time: the clock is `counter`, and
    // trace-cmd prints the ticks as they are.
    assert_eq!((got[0].ns, got[1].ns), (10, 11), "{text}");
    // The kernel's fields: s32 offsets from _stext.
    let raw = report(&out, &["-R"]);
    assert!(
        raw.contains("irq_disable:") && raw.contains("caller_offs=16 parent_offs=32"),
        "{raw}"
    );
    let formats = Command::new("trace-cmd")
        .args(["report", "--events", "-i"])
        .arg(&out)
        .output()
        .unwrap();
    let formats = String::from_utf8_lossy(&formats.stdout);
    assert!(formats.contains("system: preemptirq"), "{formats}");
    assert!(formats.contains("system: app"), "{formats}");
    assert!(formats.contains("field:s32 caller_offs;"), "{formats}");
}

mod random {
    use super::*;
    use proptest::prelude::*;

    fn location() -> impl Strategy<Value = FieldValue> {
        ("[a-z]{1,8}/[a-z_]{1,8}\\.rs", 0u32..5000, 0u32..120)
            .prop_map(|(file, line, column)| loc(&file, line, column))
    }

    /// One event: (tracepoint index, or 3 for the untagged layout, its
    /// values).
    fn event() -> impl Strategy<Value = (usize, Vec<FieldValue>)> {
        use FieldValue::*;
        prop_oneof![
            (
                any::<u16>(),
                any::<u64>(),
                any::<i32>(),
                any::<bool>(),
                "[a-zA-Z0-9/._-]{0,40}",
                location()
            )
                .prop_map(|(s, b, d, ok, p, site)| (
                    0,
                    vec![
                        Unsigned(s.into()),
                        Unsigned(b),
                        Signed(d.into()),
                        Bool(ok),
                        Str(p),
                        site
                    ]
                )),
            (
                any::<u8>(),
                any::<i8>(),
                any::<i16>(),
                any::<u32>(),
                any::<i64>(),
                any::<f64>()
            )
                .prop_map(|(a, b, c, d, e, f)| (
                    1,
                    vec![
                        Unsigned(a.into()),
                        Signed(b.into()),
                        Signed(c.into()),
                        Unsigned(d.into()),
                        Signed(e),
                        Float(f)
                    ]
                )),
            (location(), location()).prop_map(|(c, p)| (2, vec![c, p])),
            (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(p, s, c)| (
                3,
                vec![Unsigned(p.into()), Unsigned(s.into()), Unsigned(c.into())]
            )),
        ]
    }

    fn untagged(values: &[FieldValue]) -> Vec<u8> {
        let layout = metadata().untagged.unwrap();
        let mut p = Vec::new();
        for (f, v) in layout.fields.iter().zip(values) {
            encode(f.kind, v, &mut p);
        }
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        #[test]
        fn random_events_read_back_by_trace_cmd_as_ringtrace_decodes_them(
            clock_kind in 0usize..3,
            events in prop::collection::vec(
                (0usize..2, 0u64..(1 << 34), 1u32..100_000, event()),
                1..60,
            ),
        ) {
            if !have_trace_cmd() {
                return Ok(());
            }
            let dir = TempDir::new("random");
            let clock = match clock_kind {
                0 => ManualClock::new("tsc", Some(3_000_000_000)),
                1 => ManualClock::new("mono", Some(1_000_000_000)),
                _ => ManualClock::new("counter", None),
            };
            let meta = metadata();
            let tps = meta.tracepoints.clone();
            let r = ring_file(
                &dir,
                &clock,
                RingConfig::default().cpus(2).per_cpu_bytes(64 * 1024).quarantine_pages(1),
                &meta,
                |ring| {
                    let mut t = 1u64;
                    for (cpu, delta, tid, (tp, values)) in &events {
                        t += delta;
                        clock.set(t);
                        let p = match tp {
                            3 => untagged(values),
                            _ => payload(&tps[*tp], *tid, values),
                        };
                        ring.cpu_writer(*cpu).write(&p).unwrap();
                    }
                },
            );
            prop_assert_eq!(r.merged().len(), events.len());
            let out = export_to(&dir, &r);
            let (got, other) = parse_report(&report(&out, &[]));
            prop_assert_eq!(other, vec!["cpus=2".to_owned()]);
            prop_assert_eq!(got, expected(&r, &meta));
        }
    }
}

#[test]
fn undecodable_payloads_are_raw_events_with_a_warning_and_no_metadata_is_an_error() {
    let dir = TempDir::new("raw");
    let clock = ManualClock::new("mono", Some(1_000_000_000));
    let meta = metadata();
    let tps = meta.tracepoints.clone();
    let r = ring_file(
        &dir,
        &clock,
        RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(64 * 1024)
            .quarantine_pages(1),
        &meta,
        |ring| {
            for (i, p) in [
                payload(&tps[2], 3, &[loc("a.rs", 1, 1), loc("b.rs", 2, 2)]),
                vec![9, 9, 9],
                vec![0xff; 40],
            ]
            .iter()
            .enumerate()
            {
                clock.set(100 + i as u64);
                ring.cpu_writer(0).write(p).unwrap();
            }
        },
    );
    let out = dir.0.join("trace.dat");
    let done = export(&r, Format::TraceCmd, &out).unwrap();
    assert_eq!((done.events, done.lost), (3, 0));
    assert_eq!(done.warnings.len(), 1, "{:?}", done.warnings);
    assert!(
        done.warnings[0].starts_with("2 events no metadata of the file decodes")
            && done.warnings[0].contains("`ringtrace:raw`"),
        "{:?}",
        done.warnings
    );
    if have_trace_cmd() {
        let (got, _) = parse_report(&report(&out, &[]));
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].text, "caller=a.rs:1:1 parent=b.rs:2:2");
        assert_eq!(got[1].name, "raw");
        assert_eq!(got[1].text, "bytes=090909");
        assert_eq!(got[2].text, format!("bytes={}", "ff".repeat(40)));
    }

    // A loss recorded on an undecodable event stays on it.
    let mut moved = r.clone();
    let events = &mut moved.cpus[0].events;
    events[1].lost_before = 5;
    events.rotate_left(1);
    events[2].ts = 103;
    let done = export(&moved, Format::TraceCmd, &out).unwrap();
    assert_eq!(done.lost, 5);
    if have_trace_cmd() {
        let text = report(&out, &[]);
        assert!(text.contains("CPU:0 [5 EVENTS DROPPED]\n"), "{text}");
    }

    // Without metadata there are no formats: an error, and no file.
    let path = dir.0.join("bare.ring");
    let ring = RingBuffer::new(
        RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(16 * 1024)
            .quarantine_pages(1)
            .file(&path),
        clock.clone(),
    )
    .unwrap();
    ring.write(&[1, 2, 3]).unwrap();
    drop(ring);
    let bare = file::recover(&path).unwrap();
    let out = dir.0.join("bare.dat");
    let err = export(&bare, Format::TraceCmd, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("trace-cmd needs each event's format") && err.contains("no metadata"),
        "{err}"
    );
    assert!(!out.exists());
}
