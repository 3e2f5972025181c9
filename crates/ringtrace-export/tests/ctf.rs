//! `ringtrace export --format ctf`: ring files written with known events,
//! exported, and read back by babeltrace2, whose text output must show
//! every event with its name, fields, CPU, thread id, order and time, and
//! the events an overwriting ring lost.

mod common;

use common::TempDir;
use proptest::prelude::*;
use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use ringtrace_export::export::{export, ExportSummary, Format};
use ringtrace_export::text::utc_time;
use ringtrace_export::{Decoder, EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::file::{self, Recovery};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::{FieldKind, FieldValue};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A clock that reads what the test set last, described by `info`.
struct Script {
    now: AtomicU64,
    info: ClockInfo,
}

impl Clock for Script {
    fn read(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn info(&self) -> ClockInfo {
        self.info.clone()
    }
}

/// Nanosecond ticks.
fn ns_clock() -> ClockInfo {
    ClockInfo {
        name: "script".into(),
        frequency_hz: Some(1_000_000_000),
        ticks_are_ns: true,
        guarantee: Guarantee::Global,
        precision_ns: Some(1.0),
        conversion: Some(TickConversion::NANOSECONDS),
    }
}

/// Ticks that are not time.
fn counter_clock() -> ClockInfo {
    ClockInfo {
        name: "counter".into(),
        frequency_hz: None,
        ticks_are_ns: false,
        guarantee: Guarantee::Global,
        precision_ns: None,
        conversion: None,
    }
}

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

/// babeltrace2's stdout lines and its stderr, for `args` then `dir`.
fn babeltrace2(args: &[&str], dir: &Path) -> (Vec<String>, String) {
    let out = Command::new("babeltrace2")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "babeltrace2 failed:\n{stderr}");
    (stdout.lines().map(str::to_owned).collect(), stderr)
}

/// A ring file being written: two CPUs, ticks set per event.
struct Ring {
    path: PathBuf,
    clock: Arc<Script>,
    ring: RingBuffer<Arc<Script>>,
}

impl Ring {
    fn new(dir: &TempDir, info: ClockInfo, meta: &TraceMetadata, config: RingConfig) -> Ring {
        let path = dir.0.join("t.ring");
        let clock = Arc::new(Script {
            now: AtomicU64::new(1_000),
            info,
        });
        let ring = RingBuffer::new(
            config.cpus(2).file(&path).metadata(meta.to_bytes()),
            clock.clone(),
        )
        .unwrap();
        Ring { path, clock, ring }
    }

    fn write(&self, ts: u64, cpu: usize, payload: &[u8]) {
        self.clock.now.store(ts, Ordering::SeqCst);
        self.ring.cpu_writer(cpu).write(payload).unwrap();
    }

    fn export(&self, dir: &TempDir) -> (Recovery, PathBuf, ExportSummary) {
        let recovery = file::recover(&self.path).unwrap();
        let out = dir.0.join("ctf");
        let summary = export(&recovery, Format::Ctf, &out).unwrap();
        (recovery, out, summary)
    }
}

/// A tracepoint event's payload: id, tid, then `values` encoded as `kinds`.
fn payload(id: u32, tid: u32, kinds: &[FieldKind], values: &[FieldValue]) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    p.extend(fields(kinds, values));
    p
}

fn fields(kinds: &[FieldKind], values: &[FieldValue]) -> Vec<u8> {
    let mut p = Vec::new();
    let str_ = |p: &mut Vec<u8>, s: &str| {
        p.extend_from_slice(&(s.len() as u16).to_le_bytes());
        p.extend_from_slice(s.as_bytes());
    };
    for (k, v) in kinds.iter().zip(values) {
        match (k, v) {
            (FieldKind::U8, FieldValue::Unsigned(n)) => p.push(*n as u8),
            (FieldKind::U16, FieldValue::Unsigned(n)) => {
                p.extend_from_slice(&(*n as u16).to_le_bytes())
            }
            (FieldKind::U32, FieldValue::Unsigned(n)) => {
                p.extend_from_slice(&(*n as u32).to_le_bytes())
            }
            (FieldKind::U64, FieldValue::Unsigned(n)) => p.extend_from_slice(&n.to_le_bytes()),
            (FieldKind::I8, FieldValue::Signed(n)) => p.push(*n as u8),
            (FieldKind::I16, FieldValue::Signed(n)) => {
                p.extend_from_slice(&(*n as i16).to_le_bytes())
            }
            (FieldKind::I32, FieldValue::Signed(n)) => {
                p.extend_from_slice(&(*n as i32).to_le_bytes())
            }
            (FieldKind::I64, FieldValue::Signed(n)) => p.extend_from_slice(&n.to_le_bytes()),
            (FieldKind::Bool, FieldValue::Bool(b)) => p.push(u8::from(*b)),
            (FieldKind::F64, FieldValue::Float(f)) => p.extend_from_slice(&f.to_le_bytes()),
            (FieldKind::Str, FieldValue::Str(s)) => str_(&mut p, s),
            (FieldKind::Location, FieldValue::Location { file, line, column }) => {
                str_(&mut p, file);
                p.extend_from_slice(&line.to_le_bytes());
                p.extend_from_slice(&column.to_le_bytes());
            }
            other => panic!("the test mixed up {other:?}"),
        }
    }
    p
}

/// A string as babeltrace2 prints it: quoted, C escapes, other control
/// characters as `\xNN`.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '?' => out.push_str("\\?"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A double as C's `%g` prints it (six significant digits).
fn g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    let e = format!("{v:.5e}");
    let (mantissa, exp) = e.split_once('e').unwrap();
    let x: i32 = exp.parse().unwrap();
    if !(-4..6).contains(&x) {
        let sign = if x < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), x.abs())
    } else {
        strip(&format!("{:.*}", (5 - x) as usize, v))
    }
}

/// A field value as babeltrace2 prints it.
fn shown(v: &FieldValue, hex: bool) -> String {
    match v {
        FieldValue::Unsigned(n) if hex => format!("0x{n:X}"),
        FieldValue::Unsigned(n) => n.to_string(),
        FieldValue::Signed(n) => n.to_string(),
        FieldValue::Bool(b) => u8::from(*b).to_string(),
        FieldValue::Float(f) => g(*f),
        FieldValue::Str(s) => quoted(s),
        FieldValue::Bytes(b) => quoted(&String::from_utf8_lossy(b)),
        FieldValue::Location { file, line, column } => format!(
            "{{ file = {}, line = {line}, column = {column} }}",
            quoted(file)
        ),
    }
}

/// `{ a = 1, b = 2 }`, or `{ }`.
fn payload_text(fields: &[(&str, String)]) -> String {
    if fields.is_empty() {
        return "{ }".into();
    }
    let inner: Vec<String> = fields.iter().map(|(n, v)| format!("{n} = {v}")).collect();
    format!("{{ {} }}", inner.join(", "))
}

/// One event as `babeltrace2 --clock-cycles --no-delta` prints it, after
/// its `[ticks] ` (`who` is the `host:comm:(pid) ` part).
fn event_text(who: &str, name: &str, cpu: usize, tid: u32, payload: &str) -> String {
    format!("{who}{name}: {{ cpu_id = {cpu} }}, {{ tid = {tid} }}, {payload}")
}

fn who(recovery: &Recovery, host: Option<&str>) -> String {
    let h = &recovery.header;
    match host {
        Some(host) => format!("{host}:{}:({}) ", h.comm, h.pid),
        None => format!("{}:({}) ", h.comm, h.pid),
    }
}

/// Splits `[stamp] rest`.
fn stamp(line: &str) -> (&str, &str) {
    let (stamp, rest) = line[1..].split_once("] ").unwrap();
    (stamp, rest)
}

fn sample_metadata() -> TraceMetadata {
    TraceMetadata::new(vec![
        TracepointDesc {
            name: "app:net_send".into(),
            id: 0x1000_0001,
            fields: vec![
                FieldDesc::new("fd", FieldKind::I32),
                FieldDesc::new("len", FieldKind::U64),
                FieldDesc::new("dest", FieldKind::Str),
                FieldDesc::new("ok", FieldKind::Bool),
            ],
            format: "fd={} len={} dest={} ok={}".into(),
        },
        TracepointDesc {
            name: "app:sched_tick".into(),
            id: 0x2000_0002,
            fields: vec![
                FieldDesc::new("at", FieldKind::Location),
                FieldDesc::new("load", FieldKind::F64),
                FieldDesc::new("flags", FieldKind::U16),
                FieldDesc::new("string", FieldKind::I8),
            ],
            format: "at={} load={} flags={:#x} string={}".into(),
        },
    ])
    .with_untagged(EventLayout {
        name: "hammer".into(),
        fields: vec![
            FieldDesc::new("producer", FieldKind::U16),
            FieldDesc::new("seq", FieldKind::U32),
            FieldDesc::new("check", FieldKind::U32),
        ],
        format: "producer={} seq={} check={:#x}".into(),
    })
}

#[test]
fn babeltrace2_reads_every_event_with_its_fields_cpu_tid_order_and_time() {
    if !have_babeltrace2() {
        return;
    }
    let dir = TempDir::new("sample");
    let meta = sample_metadata();
    let ring = Ring::new(
        &dir,
        ns_clock(),
        &meta,
        RingConfig::default()
            .per_cpu_bytes(64 * 1024)
            .quarantine_pages(2),
    );
    let net = [
        FieldKind::I32,
        FieldKind::U64,
        FieldKind::Str,
        FieldKind::Bool,
    ];
    let tick = [
        FieldKind::Location,
        FieldKind::F64,
        FieldKind::U16,
        FieldKind::I8,
    ];
    let loc = |file: &str, line, column| FieldValue::Location {
        file: file.into(),
        line,
        column,
    };
    let s = |v: &str| FieldValue::Str(v.into());
    let net_send = |tid, fd: i64, len: u64, dest: &str, ok| {
        payload(
            0x1000_0001,
            tid,
            &net,
            &[
                FieldValue::Signed(fd),
                FieldValue::Unsigned(len),
                s(dest),
                FieldValue::Bool(ok),
            ],
        )
    };
    let sched_tick = |tid, at: FieldValue, load: f64, flags: u64, string: i64| {
        payload(
            0x2000_0002,
            tid,
            &tick,
            &[
                at,
                FieldValue::Float(load),
                FieldValue::Unsigned(flags),
                FieldValue::Signed(string),
            ],
        )
    };
    let mut hammer = 1u16.to_le_bytes().to_vec();
    hammer.extend_from_slice(&7u32.to_le_bytes());
    hammer.extend_from_slice(&0xdead_beefu32.to_le_bytes());
    // (ticks, CPU, payload), in time order.
    let writes: Vec<(u64, usize, Vec<u8>)> = vec![
        (5_000, 0, net_send(1001, 3, 1500, "10.0.0.1:80", true)),
        (
            5_100,
            1,
            sched_tick(1002, loc("src/main.rs", 42, 7), 0.75, 0x1f, -5),
        ),
        (5_200, 1, net_send(1002, -1, 0, "say \"hi\"\n", false)),
        (
            5_300,
            0,
            sched_tick(1001, loc("lib.rs", 1, 1), -2.5e-7, 0, 127),
        ),
        (5_400, 0, hammer),
        (5_500, 1, vec![9, 9, 9, 9, 0, 0, 0, 0]),
        (1_000_005_600, 1, net_send(1001, 4, u64::MAX, "", true)),
    ];
    for (ts, cpu, p) in &writes {
        ring.write(*ts, *cpu, p);
    }
    // The ring is still open: its writer is alive on this machine, whose
    // name the trace then carries.
    let (recovery, out, summary) = ring.export(&dir);
    assert_eq!((summary.events, summary.lost), (7, 0));
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["metadata", "stream_0", "stream_1"]);
    let metadata = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(metadata.starts_with("/* CTF 1.8 */\n"), "{metadata}");

    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let who = who(&recovery, Some(host.trim()));
    let pid = recovery.header.pid;
    let expected = [
        (
            5_000,
            event_text(
                &who,
                "app:net_send",
                0,
                1001,
                r#"{ fd = 3, len = 1500, dest = "10.0.0.1:80", ok = 1 }"#,
            ),
        ),
        (
            5_100,
            event_text(
                &who,
                "app:sched_tick",
                1,
                1002,
                r#"{ at = { file = "src/main.rs", line = 42, column = 7 }, load = 0.75, flags = 0x1F, string = -5 }"#,
            ),
        ),
        (
            5_200,
            event_text(
                &who,
                "app:net_send",
                1,
                1002,
                r#"{ fd = -1, len = 0, dest = "say \"hi\"\n", ok = 0 }"#,
            ),
        ),
        (
            5_300,
            event_text(
                &who,
                "app:sched_tick",
                0,
                1001,
                r#"{ at = { file = "lib.rs", line = 1, column = 1 }, load = -2.5e-07, flags = 0x0, string = 127 }"#,
            ),
        ),
        (
            5_400,
            event_text(
                &who,
                "hammer",
                0,
                pid,
                "{ producer = 1, seq = 7, check = 0xDEADBEEF }",
            ),
        ),
        (
            5_500,
            event_text(
                &who,
                "ringtrace:raw",
                1,
                pid,
                "{ why = \"no tracepoint in the file\\'s metadata has id 0x09090909; not the untagged `hammer` layout: field `check` is cut off\", length = 8, payload = [ [0] = 9, [1] = 9, [2] = 9, [3] = 9, [4] = 0, [5] = 0, [6] = 0, [7] = 0 ] }",
            ),
        ),
        (
            1_000_005_600,
            event_text(
                &who,
                "app:net_send",
                1,
                1001,
                r#"{ fd = 4, len = 18446744073709551615, dest = "", ok = 1 }"#,
            ),
        ),
    ];

    // Raw ticks, exactly.
    let (lines, stderr) = babeltrace2(&["--clock-cycles", "--no-delta"], &out);
    assert!(!stderr.contains("WARNING"), "{stderr}");
    let got: Vec<(u64, &str)> = lines
        .iter()
        .map(|l| {
            let (ts, rest) = stamp(l);
            (ts.parse().unwrap(), rest)
        })
        .collect();
    let want: Vec<(u64, &str)> = expected.iter().map(|(t, s)| (*t, s.as_str())).collect();
    assert_eq!(got, want);

    // Dates: the wall-clock time the file's anchor gives each tick.
    let (lines, _) = babeltrace2(&["--clock-date", "--clock-gmt", "--no-delta"], &out);
    assert_eq!(lines.len(), expected.len());
    for (line, (ticks, rest)) in lines.iter().zip(&expected) {
        let wall = recovery.header.wall_ns_at(*ticks).unwrap();
        let date = utc_time(wall).replace('T', " ").replace('Z', "");
        assert_eq!(stamp(line), (date.as_str(), rest.as_str()));
    }
    drop(ring);
}

#[test]
fn overwritten_events_are_babeltrace2s_discarded_events_with_the_count() {
    if !have_babeltrace2() {
        return;
    }
    let dir = TempDir::new("overwrite");
    let meta = TraceMetadata::new(vec![TracepointDesc {
        name: "step".into(),
        id: 0x3000_0003,
        fields: vec![FieldDesc::new("n", FieldKind::U32)],
        format: "n={}".into(),
    }]);
    let ring = Ring::new(
        &dir,
        counter_clock(),
        &meta,
        RingConfig::default()
            .page_size(256)
            .per_cpu_bytes(1024)
            .quarantine_pages(1)
            .mode(Mode::Overwrite),
    );
    let step = |n: u64| {
        payload(
            0x3000_0003,
            1001,
            &[FieldKind::U32],
            &[FieldValue::Unsigned(n)],
        )
    };
    let written = 100u64;
    for n in 0..written {
        ring.write(2_000 + 10 * n, 0, &step(n));
    }
    ring.write(100_000, 1, &step(1_000));
    drop(ring.ring);
    let recovery = file::recover(&ring.path).unwrap();
    let out = dir.0.join("ctf");
    let summary = export(&recovery, Format::Ctf, &out).unwrap();
    let cpu0 = &recovery.cpus[0].events;
    let lost = cpu0[0].lost_before;
    assert!(lost > 0, "the ring wrapped");
    assert_eq!(cpu0.len() as u64 + lost, written);
    assert_eq!(summary.lost, lost);

    let (lines, stderr) = babeltrace2(&["--clock-cycles", "--no-delta"], &out);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("WARNING: Tracer discarded"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].starts_with(&format!("WARNING: Tracer discarded {lost} events between ")),
        "{stderr}"
    );
    assert!(warnings[0].contains("stream_0\""), "{stderr}");
    // From the ring's opening to the first event kept (the counter's
    // ticks shown as nanoseconds after midnight).
    let first = 2_000 + 10 * (written - cpu0.len() as u64);
    assert!(
        warnings[0].contains(&format!(
            "between [00:00:00.{:09}] and [00:00:00.{first:09}]",
            recovery.header.anchor_ticks
        )),
        "{stderr}"
    );
    let who = who(&recovery, None);
    let mut want: Vec<String> = (written - cpu0.len() as u64..written)
        .map(|n| {
            format!(
                "{:020}] {}",
                2_000 + 10 * n,
                event_text(&who, "step", 0, 1001, &format!("{{ n = {n} }}"))
            )
        })
        .collect();
    want.push(format!(
        "{:020}] {}",
        100_000,
        event_text(&who, "step", 1, 1001, "{ n = 1000 }")
    ));
    let got: Vec<&str> = lines.iter().map(|l| &l[1..]).collect();
    assert_eq!(got, want);

    // A counter's ticks are not time: they show as nanoseconds after the
    // epoch, and the clock says so.
    let (lines, _) = babeltrace2(&["--clock-date", "--clock-gmt", "--no-delta"], &out);
    assert!(
        lines[lines.len() - 1].starts_with("[1970-01-01 00:00:00.000100000] "),
        "{lines:?}"
    );
    let metadata = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(
        metadata.contains("times and dates are tick counts, not time"),
        "{metadata}"
    );
}

#[test]
fn babeltrace2_dates_follow_the_anchor_for_ticks_that_are_not_nanoseconds() {
    if !have_babeltrace2() {
        return;
    }
    let dir = TempDir::new("tsc");
    let hz = 2_400_000_000;
    let info = ClockInfo {
        name: "tsc@irq".into(),
        frequency_hz: Some(hz),
        ticks_are_ns: false,
        guarantee: Guarantee::PerCpu,
        precision_ns: Some(1.0 / 2.4),
        conversion: TickConversion::from_frequency(hz),
    };
    let meta = TraceMetadata::new(Vec::new());
    let ring = Ring::new(
        &dir,
        info,
        &meta,
        RingConfig::default()
            .per_cpu_bytes(8192)
            .quarantine_pages(1),
    );
    let ticks = [1_001, 2_400_001_000, 4_999_999_999_999, 9_000_000_000_123];
    for (i, t) in ticks.iter().enumerate() {
        ring.write(*t, i % 2, &[1, 2, 3]);
    }
    drop(ring.ring);
    let recovery = file::recover(&ring.path).unwrap();
    let out = dir.0.join("ctf");
    export(&recovery, Format::Ctf, &out).unwrap();
    let metadata = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(metadata.contains("\tname = tsc_irq;\n"), "{metadata}");
    assert!(metadata.contains("\tfreq = 2400000000;\n"), "{metadata}");

    let (lines, _) = babeltrace2(&["--clock-cycles", "--no-delta"], &out);
    let got: Vec<u64> = lines.iter().map(|l| stamp(l).0.parse().unwrap()).collect();
    assert_eq!(got, ticks);
    let (lines, _) = babeltrace2(&["--clock-date", "--clock-gmt", "--no-delta"], &out);
    assert_eq!(lines.len(), ticks.len());
    for (line, t) in lines.iter().zip(ticks) {
        // Within a part per billion of the time since the anchor, and two
        // nanoseconds: babeltrace2 converts by the frequency, the file by
        // its fixed-point multiplier, which is that close to it.
        let wall = recovery.header.wall_ns_at(t).unwrap();
        let shown = date_ns(stamp(line).0);
        let since = (u128::from(t.abs_diff(recovery.header.anchor_ticks)) * 1_000_000_000
            / u128::from(hz)) as u64;
        assert!(
            shown.abs_diff(wall) <= 2 + since / 1_000_000_000,
            "{line}: {shown} is not {wall}"
        );
    }
}

/// `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` (UTC) as ns since the Unix epoch.
fn date_ns(date: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| date[r].parse::<u64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    secs * 1_000_000_000 + n(20..29)
}

#[test]
fn an_unwritable_output_is_an_error_naming_it_and_leaves_nothing_behind() {
    let dir = TempDir::new("unwritable");
    let ring = Ring::new(
        &dir,
        ns_clock(),
        &sample_metadata(),
        RingConfig::default()
            .per_cpu_bytes(8192)
            .quarantine_pages(1),
    );
    ring.write(2_000, 0, &[1, 2, 3]);
    drop(ring.ring);
    let recovery = file::recover(&ring.path).unwrap();

    let missing = dir.0.join("no/such/dir/ctf");
    let err = export(&recovery, Format::Ctf, &missing)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("cannot write {}: ", missing.display())),
        "{err}"
    );
    assert_eq!(dir.entries(), ["t.ring"]);

    let full = dir.0.join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("mine"), b"keep").unwrap();
    let err = export(&recovery, Format::Ctf, &full)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the directory exists and is not empty"),
        "{err}"
    );
    assert_eq!(dir.entries(), ["full", "t.ring"]);
    assert_eq!(std::fs::read(full.join("mine")).unwrap(), b"keep");

    let a_file = dir.0.join("notes.txt");
    std::fs::write(&a_file, b"keep").unwrap();
    let err = export(&recovery, Format::Ctf, &a_file)
        .unwrap_err()
        .to_string();
    assert!(err.contains("it exists and is not a directory"), "{err}");
    assert_eq!(dir.entries(), ["full", "notes.txt", "t.ring"]);
    std::fs::remove_file(&a_file).unwrap();
    // The ring file itself: refused before anything else is looked at.
    let err = export(&recovery, Format::Ctf, &dir.0.join("t.ring"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the ring file"), "{err}");
    assert_eq!(dir.entries(), ["full", "t.ring"]);

    // An empty directory is filled.
    let empty = dir.0.join("empty");
    std::fs::create_dir(&empty).unwrap();
    export(&recovery, Format::Ctf, &empty).unwrap();
    assert!(empty.join("metadata").is_file() && empty.join("stream_1").is_file());
}

/// One random event: a tracepoint's (index, tid, values) or a raw payload
/// too short for an id.
#[derive(Debug, Clone)]
enum RandomEvent {
    Tracepoint(usize, u32, Vec<FieldValue>),
    Raw(Vec<u8>),
}

fn kind() -> impl Strategy<Value = FieldKind> {
    prop_oneof![
        Just(FieldKind::U8),
        Just(FieldKind::U16),
        Just(FieldKind::U32),
        Just(FieldKind::U64),
        Just(FieldKind::I8),
        Just(FieldKind::I16),
        Just(FieldKind::I32),
        Just(FieldKind::I64),
        Just(FieldKind::Bool),
        Just(FieldKind::F64),
        Just(FieldKind::Str),
        Just(FieldKind::Location),
    ]
}

/// A string of 1 to 11 characters that babeltrace2 escapes or not.
///
/// Not empty: babeltrace2 2.0.4 may show an empty string field with the
/// text an earlier event's field had (its `bt_field_string_clear` leaves
/// the old bytes; fixed upstream since), whatever the stream holds.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            proptest::char::range('a', 'z'),
            Just(' '),
            Just('"'),
            Just('\\'),
            Just('\''),
            Just('?'),
            Just('\n'),
            Just('\t'),
            Just('\u{1}'),
            Just('é'),
            Just('→'),
        ],
        1..12,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn value(kind: FieldKind) -> BoxedStrategy<FieldValue> {
    use FieldValue::{Bool, Float, Location, Signed, Str, Unsigned};
    match kind {
        FieldKind::U8 => any::<u8>().prop_map(|n| Unsigned(n.into())).boxed(),
        FieldKind::U16 => any::<u16>().prop_map(|n| Unsigned(n.into())).boxed(),
        FieldKind::U32 => any::<u32>().prop_map(|n| Unsigned(n.into())).boxed(),
        FieldKind::U64 => any::<u64>().prop_map(Unsigned).boxed(),
        FieldKind::I8 => any::<i8>().prop_map(|n| Signed(n.into())).boxed(),
        FieldKind::I16 => any::<i16>().prop_map(|n| Signed(n.into())).boxed(),
        FieldKind::I32 => any::<i32>().prop_map(|n| Signed(n.into())).boxed(),
        FieldKind::I64 => any::<i64>().prop_map(Signed).boxed(),
        FieldKind::Bool => any::<bool>().prop_map(Bool).boxed(),
        FieldKind::F64 => {
            (proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::INFINITE)
                .prop_map(Float)
                .boxed()
        }
        FieldKind::Str => text().prop_map(Str).boxed(),
        FieldKind::Location => (text(), any::<u32>(), any::<u32>())
            .prop_map(|(file, line, column)| Location { file, line, column })
            .boxed(),
    }
}

/// Random tracepoints (field kinds, and whether each integer prints in
/// hex), and events of them on two CPUs, with the ticks between events.
#[allow(clippy::type_complexity)]
fn trace() -> impl Strategy<Value = (Vec<Vec<(FieldKind, bool)>>, Vec<(usize, u64, RandomEvent)>)> {
    proptest::collection::vec(
        proptest::collection::vec((kind(), any::<bool>()), 0..5),
        1..4,
    )
    .prop_flat_map(|tps| {
        let event = {
            let tps = tps.clone();
            (0..tps.len(), 1000u32..1004).prop_flat_map(move |(i, tid)| {
                let values: Vec<_> = tps[i].iter().map(|(k, _)| value(*k)).collect();
                values.prop_map(move |v| RandomEvent::Tracepoint(i, tid, v))
            })
        };
        let raw = proptest::collection::vec(any::<u8>(), 1..4).prop_map(RandomEvent::Raw);
        let events = proptest::collection::vec(
            (
                0..2usize,
                1..1_000_000u64,
                prop_oneof![8 => event, 1 => raw],
            ),
            0..40,
        );
        (Just(tps), events)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_events_round_trip_through_babeltrace2((tps, events) in trace()) {
        if !have_babeltrace2() {
            return Ok(());
        }
        let descs: Vec<TracepointDesc> = tps
            .iter()
            .enumerate()
            .map(|(i, fields)| TracepointDesc {
                name: format!("tp{i}"),
                id: 0x5000_0000 + i as u32,
                fields: fields
                    .iter()
                    .enumerate()
                    .map(|(j, (k, _))| FieldDesc::new(&format!("f{j}"), *k))
                    .collect(),
                format: fields
                    .iter()
                    .map(|(_, hex)| if *hex { "{:#x}" } else { "{}" })
                    .collect::<Vec<_>>()
                    .join(" "),
            })
            .collect();
        let meta = TraceMetadata::new(descs.clone());
        let dir = TempDir::new("prop");
        let ring = Ring::new(
            &dir,
            ns_clock(),
            &meta,
            RingConfig::default().per_cpu_bytes(64 * 1024).quarantine_pages(2),
        );
        let decoder = Decoder::new(&meta);
        let mut ts = 10_000u64;
        let mut want = Vec::new();
        let mut written = Vec::new();
        for (cpu, delta, e) in &events {
            ts += delta;
            let (bytes, name, tid, body) = match e {
                RandomEvent::Tracepoint(i, tid, values) => {
                    let kinds: Vec<FieldKind> = tps[*i].iter().map(|(k, _)| *k).collect();
                    let shown: Vec<(String, String)> = values
                        .iter()
                        .enumerate()
                        .map(|(j, v)| {
                            let unsigned = matches!(v, FieldValue::Unsigned(_));
                            (format!("f{j}"), shown(v, unsigned && tps[*i][j].1))
                        })
                        .collect();
                    let shown: Vec<(&str, String)> =
                        shown.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
                    (
                        payload(0x5000_0000 + *i as u32, *tid, &kinds, values),
                        format!("tp{i}"),
                        Some(*tid),
                        payload_text(&shown),
                    )
                }
                RandomEvent::Raw(bytes) => {
                    let ringtrace_export::Decoded::Raw { why } = decoder.decode(bytes) else {
                        panic!("{bytes:?} decoded");
                    };
                    let items: Vec<String> =
                        bytes.iter().enumerate().map(|(i, b)| format!("[{i}] = {b}")).collect();
                    let body = format!(
                        "{{ why = {}, length = {}, payload = [ {} ] }}",
                        quoted(&why),
                        bytes.len(),
                        items.join(", ")
                    );
                    (bytes.clone(), "ringtrace:raw".to_owned(), None, body)
                }
            };
            ring.write(ts, *cpu, &bytes);
            written.push((*cpu, ts, bytes.clone()));
            want.push((ts, name, *cpu, tid, body));
        }
        drop(ring.ring);
        let recovery = file::recover(&ring.path).unwrap();
        let read: Vec<(usize, u64, Vec<u8>)> = recovery
            .merged()
            .into_iter()
            .map(|e| (e.cpu, e.ts, e.payload.clone()))
            .collect();
        prop_assert_eq!(&read, &written, "the ring gives back what was written");
        let out = dir.0.join("ctf");
        let summary = export(&recovery, Format::Ctf, &out).unwrap();
        prop_assert_eq!(summary.events, events.len() as u64);
        let who = who(&recovery, None);
        let want: Vec<String> = want
            .into_iter()
            .map(|(ts, name, cpu, tid, body)| {
                let tid = tid.unwrap_or(recovery.header.pid);
                format!("[{ts:020}] {}", event_text(&who, &name, cpu, tid, &body))
            })
            .collect();
        let (lines, stderr) = babeltrace2(&["--clock-cycles", "--no-delta"], &out);
        prop_assert!(!stderr.contains("WARNING"), "{}", stderr);
        for (got, want) in lines.iter().zip(&want) {
            prop_assert_eq!(got, want);
        }
        prop_assert_eq!(lines.len(), want.len());
    }
}
