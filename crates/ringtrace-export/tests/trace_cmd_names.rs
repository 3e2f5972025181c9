//! `--format trace-cmd` with names from the trace's metadata that a
//! format file cannot hold as they are (spaces, `;`, `"`, newlines, an
//! empty name, a leading digit, duplicates, a common field's name): the
//! file's systems, events and fields are distinct C identifiers, the
//! export says which names it changed, and trace-cmd reads every event
//! back with its values.

mod common;

use common::TempDir;
use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use ringtrace_export::export::{export, ExportSummary, Format};
use ringtrace_export::{Decoder, EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::file::{self, Recovery};
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracepoint::{fnv1a, FieldKind, FieldValue};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A clock the test sets by hand, in ns.
#[derive(Debug, Clone)]
struct ManualClock(Arc<AtomicU64>);

impl Clock for ManualClock {
    fn read(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "mono".into(),
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee: Guarantee::Global,
            precision_ns: Some(1.0),
            conversion: Some(TickConversion::NANOSECONDS),
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

/// One field's bytes as ringtrace encodes it.
fn encode(kind: FieldKind, v: &FieldValue, out: &mut Vec<u8>) {
    match (kind, v) {
        (FieldKind::U8, FieldValue::Unsigned(n)) => out.push(*n as u8),
        (FieldKind::U16, FieldValue::Unsigned(n)) => {
            out.extend_from_slice(&(*n as u16).to_le_bytes())
        }
        (FieldKind::U32, FieldValue::Unsigned(n)) => {
            out.extend_from_slice(&(*n as u32).to_le_bytes())
        }
        (FieldKind::U64, FieldValue::Unsigned(n)) => out.extend_from_slice(&n.to_le_bytes()),
        (FieldKind::I32, FieldValue::Signed(n)) => {
            out.extend_from_slice(&(*n as i32).to_le_bytes())
        }
        (FieldKind::I64, FieldValue::Signed(n)) => out.extend_from_slice(&n.to_le_bytes()),
        (FieldKind::Bool, FieldValue::Bool(b)) => out.push(u8::from(*b)),
        (FieldKind::Str, FieldValue::Str(s)) => {
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        (k, v) => panic!("{v:?} is not a {k:?} (not one this test writes)"),
    }
}

/// An event of `meta`: a tracepoint's (by index) or, with `None`, the
/// untagged layout's.
fn payload(meta: &TraceMetadata, tp: Option<usize>, tid: u32, values: &[FieldValue]) -> Vec<u8> {
    let mut p = Vec::new();
    let fields = match tp {
        Some(i) => {
            let tp = &meta.tracepoints[i];
            p.extend_from_slice(&tp.id.to_le_bytes());
            p.extend_from_slice(&tid.to_le_bytes());
            &tp.fields
        }
        None => &meta.untagged.as_ref().unwrap().fields,
    };
    assert_eq!(fields.len(), values.len());
    for (f, v) in fields.iter().zip(values) {
        encode(f.kind, v, &mut p);
    }
    p
}

/// A one-CPU ring file of `events` (each a payload), 1 µs apart,
/// recovered.
fn ring_file(dir: &TempDir, meta: &TraceMetadata, events: &[Vec<u8>]) -> Recovery {
    let path = dir.0.join("t.ring");
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(256 * 1024)
        .quarantine_pages(1)
        .file(&path)
        .metadata(meta.to_bytes());
    let clock = ManualClock(Arc::new(AtomicU64::new(1)));
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    for (i, e) in events.iter().enumerate() {
        clock.0.store(1_000_000 + 1000 * i as u64, Ordering::SeqCst);
        ring.cpu_writer(0).write(e).unwrap();
    }
    drop(ring);
    let r = file::recover(&path).unwrap();
    assert_eq!(r.merged().len(), events.len());
    r
}

/// Exports `r` as a trace-cmd file in `dir`.
fn export_to(dir: &TempDir, r: &Recovery) -> (PathBuf, ExportSummary) {
    let out = dir.0.join("trace.dat");
    let done = export(r, Format::TraceCmd, &out).unwrap();
    assert_eq!(done.events as usize, r.merged().len(), "{done:?}");
    (out, done)
}

/// One event format of a trace-cmd file.
#[derive(Debug)]
struct FormatFile {
    system: String,
    text: String,
}

/// The event formats of a trace-cmd file (version 6), read from its
/// bytes as trace-cmd does.
fn format_files(path: &Path) -> Vec<FormatFile> {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    let mut take = |n: usize| {
        let s = &bytes[at..at + n];
        at += n;
        s
    };
    assert_eq!(take(12), b"\x17\x08\x44tracing6\0");
    take(6); // endian, long size, page size
    let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap()) as usize;
    let u64_at = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap()) as usize;
    assert_eq!(take(12), b"header_page\0");
    let n = u64_at(take(8));
    take(n);
    assert_eq!(take(13), b"header_event\0");
    let n = u64_at(take(8));
    take(n);
    assert_eq!(u32_at(take(4)), 0, "no ftrace formats");
    let systems = u32_at(take(4));
    let mut out = Vec::new();
    for _ in 0..systems {
        let mut name = Vec::new();
        loop {
            match take(1)[0] {
                0 => break,
                b => name.push(b),
            }
        }
        let system = String::from_utf8(name).unwrap();
        for _ in 0..u32_at(take(4)) {
            let n = u64_at(take(8));
            let text = String::from_utf8(take(n).to_vec()).unwrap();
            out.push(FormatFile {
                system: system.clone(),
                text,
            });
        }
    }
    out
}

/// Whether `name` is a C identifier: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks that every system, event and field name of the file's formats
/// is a C identifier, events distinct within their system, fields within
/// their event (the common fields included), and that the print fmt
/// names only the event's fields. Returns each event's (system, name)
/// and its own fields' names.
fn check_formats(path: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let mut events = BTreeMap::new();
    for f in format_files(path) {
        assert!(is_identifier(&f.system), "system {:?}", f.system);
        let mut lines = f.text.lines();
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("name: "))
            .unwrap_or_else(|| panic!("no name line in\n{}", f.text))
            .to_owned();
        assert!(is_identifier(&name), "event {name:?} in\n{}", f.text);
        let mut fields = Vec::new();
        let mut print = None;
        for l in lines {
            if let Some(decl) = l.trim_start().strip_prefix("field:") {
                let decl = decl.split(';').next().unwrap();
                let field = decl.rsplit(' ').next().unwrap().to_owned();
                assert!(is_identifier(&field), "field {field:?} in\n{}", f.text);
                fields.push(field);
            } else if let Some(p) = l.strip_prefix("print fmt: ") {
                print = Some(p.to_owned());
            }
        }
        let distinct: HashSet<&String> = fields.iter().collect();
        assert_eq!(distinct.len(), fields.len(), "fields of\n{}", f.text);
        let print = print.unwrap_or_else(|| panic!("no print fmt in\n{}", f.text));
        for (open, close) in [("REC->", None), ("__get_str(", Some(')'))] {
            for (i, _) in print.match_indices(open) {
                let rest = &print[i + open.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let used = &rest[..end];
                assert!(
                    fields.iter().any(|f| f == used),
                    "{used:?} is no field of\n{}",
                    f.text
                );
                if let Some(close) = close {
                    assert!(rest[end..].starts_with(close), "{print}");
                }
            }
        }
        let common = [
            "common_type",
            "common_flags",
            "common_preempt_count",
            "common_pid",
        ];
        assert_eq!(fields[..4], common, "{}", f.text);
        let own = fields[4..].to_vec();
        let was = events.insert((f.system, name.clone()), own);
        assert!(was.is_none(), "two events {name:?} in one system");
    }
    events
}

/// Whether trace-cmd can be run; without it the checks of its reading
/// are skipped (with a message), or fail when `RINGTRACE_REQUIRE_TOOLS`
/// is set.
fn have_trace_cmd() -> bool {
    let found = ringtrace_testkit::have_tool("trace-cmd");
    if !found {
        eprintln!(
            "skipped: reading the file back with `trace-cmd report` (trace-cmd is not installed)"
        );
    }
    found
}

/// `trace-cmd report -t` (`extra` arguments first) of `file`: its stdout,
/// after checking that it says nothing failed.
fn report(file: &Path, extra: &[&str]) -> String {
    let (stdout, stderr) = common::trace_cmd_report(file, extra);
    assert!(
        !stdout.contains("FAILED TO PARSE") && !stderr.contains("ailed"),
        "{stderr}\n{stdout}"
    );
    stdout
}

/// Each event line of a report as (event name, text): the line
/// `COMM-PID [CPU] SECS.NSECS: NAME: TEXT`.
fn report_events(report: &str) -> Vec<(String, String)> {
    report
        .lines()
        .filter(|l| !l.starts_with("cpus="))
        .map(|l| {
            let (_, rest) = l
                .split_once("] ")
                .unwrap_or_else(|| panic!("not an event line: {l:?}\n{report}"));
            let (_, rest) = rest.split_once(": ").unwrap();
            let (name, text) = rest.split_once(':').unwrap_or((rest, ""));
            (name.trim().to_owned(), text.trim().to_owned())
        })
        .collect()
}

/// What `trace-cmd report` should print for each event of `r`, in order,
/// given the file's name for each of ringtrace's: the name, and the text
/// as ringtrace renders it.
fn expected(r: &Recovery, meta: &TraceMetadata, named: &[(&str, &str)]) -> Vec<(String, String)> {
    let decoder = Decoder::new(meta);
    r.merged()
        .iter()
        .map(|e| {
            let d = decoder.decode(&e.payload);
            let name = d.name().unwrap();
            let file_name = named
                .iter()
                .find(|(ours, _)| *ours == name)
                .unwrap_or_else(|| panic!("no file name for {name:?}"))
                .1;
            (file_name.to_owned(), d.text())
        })
        .collect()
}

#[test]
fn event_names_trace_cmd_cannot_parse_become_distinct_identifiers_and_every_event_reads_back() {
    use FieldKind::*;
    let n = [("n", U32)];
    let meta = TraceMetadata::new(vec![
        tracepoint("app:ham mer", &n, "n={}"),
        tracepoint("app:ham;mer", &n, "n={}"),
        tracepoint("app:ham\"mer", &n, "n={}"),
        tracepoint("app:", &n, "n={}"),
        // Valid already: keeps its name, which the others step aside from.
        tracepoint("app:ham_mer", &n, "n={}"),
        tracepoint("my app:9lives", &[("s", Str)], "s={}"),
        tracepoint("plain", &n, "plain n={}"),
    ])
    .with_untagged(EventLayout {
        name: "ham mer".into(),
        fields: vec![
            FieldDesc::new("producer", U16),
            FieldDesc::new("seq", U32),
            FieldDesc::new("check", U32),
        ],
        format: "producer={} seq={} check={:#x}".into(),
    });
    let mut events = Vec::new();
    for round in 0..3u64 {
        for tp in 0..meta.tracepoints.len() {
            let value = if tp == 5 {
                FieldValue::Str(format!("nine lives {round}"))
            } else {
                FieldValue::Unsigned(100 * tp as u64 + round)
            };
            events.push(payload(&meta, Some(tp), 40 + tp as u32, &[value]));
        }
        events.push(payload(
            &meta,
            None,
            0,
            &[
                FieldValue::Unsigned(7),
                FieldValue::Unsigned(2_475_585 + round),
                FieldValue::Unsigned(0xdead_beef),
            ],
        ));
    }
    let dir = TempDir::new("tcmd-event-names");
    let r = ring_file(&dir, &meta, &events);
    let (out, done) = export_to(&dir, &r);
    assert_eq!(
        done.warnings,
        [
            "event \"app:ham mer\" is named app:ham_mer_2 in the trace-cmd file",
            "event \"app:ham;mer\" is named app:ham_mer_3 in the trace-cmd file",
            "event \"app:ham\\\"mer\" is named app:ham_mer_4 in the trace-cmd file",
            "event \"app:\" is named app:unnamed in the trace-cmd file",
            "event \"my app:9lives\" is named my_app:_9lives in the trace-cmd file",
            "event \"ham mer\" is named ham_mer in the trace-cmd file",
        ]
    );
    let formats = check_formats(&out);
    let names: Vec<(&str, &str)> = formats
        .keys()
        .map(|(s, e)| (s.as_str(), e.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("app", "ham_mer"),
            ("app", "ham_mer_2"),
            ("app", "ham_mer_3"),
            ("app", "ham_mer_4"),
            ("app", "unnamed"),
            ("my_app", "_9lives"),
            ("ringtrace", "ham_mer"),
            ("ringtrace", "plain"),
        ]
    );

    if !have_trace_cmd() {
        return;
    }
    let named = [
        ("app:ham mer", "ham_mer_2"),
        ("app:ham;mer", "ham_mer_3"),
        ("app:ham\"mer", "ham_mer_4"),
        ("app:", "unnamed"),
        ("app:ham_mer", "ham_mer"),
        ("my app:9lives", "_9lives"),
        ("plain", "plain"),
        ("ham mer", "ham_mer"),
    ];
    let text = report(&out, &[]);
    assert!(text.starts_with("cpus=1\n"), "{text}");
    let want = expected(&r, &meta, &named);
    assert_eq!(want.len(), events.len());
    let got = report_events(&text);
    assert_eq!(got, want, "{text}");
    // The untagged events, by hand.
    assert_eq!(
        got[7],
        (
            "ham_mer".to_owned(),
            "producer=7 seq=2475585 check=0xdeadbeef".to_owned()
        )
    );
    // Each event by its system and file name.
    let only = report_events(&report(&out, &["-F", "my_app/_9lives"]));
    assert_eq!(
        only,
        [0, 1, 2].map(|i| ("_9lives".to_owned(), format!("s=nine lives {i}")))
    );
    let only = report_events(&report(&out, &["-F", "app/ham_mer_3"]));
    assert_eq!(
        only,
        [0, 1, 2].map(|i| ("ham_mer_3".to_owned(), format!("n={}", 100 + i)))
    );
}

#[test]
fn field_names_trace_cmd_cannot_parse_or_that_repeat_become_distinct_identifiers_with_their_own_values(
) {
    use FieldKind::*;
    let meta = TraceMetadata::new(vec![tracepoint(
        "app:fields",
        &[
            ("pro duc;er", U32),
            ("", U16),
            ("a\nb", Str),
            ("common_pid", I32),
            ("x", U8),
            ("x", U64),
            ("x_2", U32),
            ("9", I64),
            ("é", Bool),
            ("semi;", U32),
            ("quo\"te", U32),
        ],
        "p={} e={} s={} c={} x={} x={:#x} x2={} nine={} b={} semi={} quote={}",
    )])
    .with_untagged(EventLayout {
        name: "hammer".into(),
        fields: vec![
            FieldDesc::new("producer", U16),
            FieldDesc::new("seq", U32),
            FieldDesc::new("producer", U32),
        ],
        format: "producer={} seq={} producer={:#x}".into(),
    });
    let mut events = Vec::new();
    for round in 0..3u64 {
        let values = [
            FieldValue::Unsigned(1000 + round),
            FieldValue::Unsigned(2000 + round),
            FieldValue::Str(format!("string {round}")),
            FieldValue::Signed(-3000 - round as i64),
            FieldValue::Unsigned(40 + round),
            FieldValue::Unsigned(0x5000_0000_0000 + round),
            FieldValue::Unsigned(6000 + round),
            FieldValue::Signed(-7_000_000_000 - round as i64),
            FieldValue::Bool(round % 2 == 1),
            FieldValue::Unsigned(8000 + round),
            FieldValue::Unsigned(9000 + round),
        ];
        events.push(payload(&meta, Some(0), 77, &values));
        events.push(payload(
            &meta,
            None,
            0,
            &[
                FieldValue::Unsigned(round),
                FieldValue::Unsigned(2_475_585 + round),
                FieldValue::Unsigned(0xdead),
            ],
        ));
    }
    let dir = TempDir::new("tcmd-field-names");
    let r = ring_file(&dir, &meta, &events);
    let (out, done) = export_to(&dir, &r);
    let field = |from: &str, event: &str, to: &str| {
        format!("field {from} of event \"{event}\" is named {to} in the trace-cmd file")
    };
    assert_eq!(
        done.warnings,
        [
            field("\"pro duc;er\"", "app:fields", "pro_duc_er"),
            field("\"\"", "app:fields", "unnamed"),
            field("\"a\\nb\"", "app:fields", "a_b"),
            field("\"common_pid\"", "app:fields", "common_pid_2"),
            // The second `x`: `x_2` is the name of another field.
            field("\"x\"", "app:fields", "x_3"),
            field("\"9\"", "app:fields", "_9"),
            field("\"é\"", "app:fields", "_"),
            field("\"semi;\"", "app:fields", "semi_"),
            field("\"quo\\\"te\"", "app:fields", "quo_te"),
            field("\"producer\"", "hammer", "producer_2"),
        ]
    );
    let formats = check_formats(&out);
    let fields =
        |system: &str, event: &str| formats[&(system.to_owned(), event.to_owned())].clone();
    assert_eq!(
        fields("app", "fields"),
        [
            "pro_duc_er",
            "unnamed",
            "a_b",
            "common_pid_2",
            "x",
            "x_3",
            "x_2",
            "_9",
            "_",
            "semi_",
            "quo_te"
        ]
    );
    assert_eq!(
        fields("ringtrace", "hammer"),
        ["producer", "seq", "producer_2"]
    );

    if !have_trace_cmd() {
        return;
    }
    let named = [("app:fields", "fields"), ("hammer", "hammer")];
    let text = report(&out, &[]);
    let got = report_events(&text);
    assert_eq!(got, expected(&r, &meta, &named), "{text}");
    // By hand: each `producer` its own value, and `seq` its own.
    assert_eq!(
        got[1],
        (
            "hammer".to_owned(),
            "producer=0 seq=2475585 producer=0xdead".to_owned()
        )
    );
    // The raw fields, by the file's names: each its own value.
    let raw = report_events(&report(&out, &["-R"]));
    let want_raw: Vec<(String, String)> = (0..3u64)
        .flat_map(|i| {
            [
                (
                    "fields".to_owned(),
                    format!(
                        "pro_duc_er={} unnamed={} a_b=string {i} common_pid_2={} x={} x_3={:#x} x_2={} _9={} _={} semi_={} quo_te={}",
                        1000 + i,
                        2000 + i,
                        -3000 - i as i64,
                        40 + i,
                        0x5000_0000_0000u64 + i,
                        6000 + i,
                        -7_000_000_000 - i as i64,
                        i % 2,
                        8000 + i,
                        9000 + i
                    ),
                ),
                (
                    "hammer".to_owned(),
                    format!("producer={i} seq={} producer_2=0xdead", 2_475_585 + i),
                ),
            ]
        })
        .collect();
    assert_eq!(raw, want_raw);
}

#[test]
fn valid_names_are_kept_as_they_are_and_no_change_is_said() {
    use FieldKind::*;
    let meta = TraceMetadata::new(vec![
        tracepoint("app:tc_request", &[("status", U16), ("path", Str)], "{} {}"),
        tracepoint("_private", &[("_x9", U32)], "x={:x}"),
    ])
    .with_untagged(EventLayout {
        name: "hammer".into(),
        fields: vec![FieldDesc::new("producer", U16)],
        format: "producer={}".into(),
    });
    let events = [
        payload(
            &meta,
            Some(0),
            1,
            &[FieldValue::Unsigned(200), FieldValue::Str("/".into())],
        ),
        payload(&meta, Some(1), 1, &[FieldValue::Unsigned(0xab)]),
    ];
    let dir = TempDir::new("tcmd-valid-names");
    let r = ring_file(&dir, &meta, &events);
    let (out, done) = export_to(&dir, &r);
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    let formats = check_formats(&out);
    let all: Vec<(&str, &str, Vec<String>)> = formats
        .iter()
        .map(|((s, e), f)| (s.as_str(), e.as_str(), f.clone()))
        .collect();
    assert_eq!(
        all,
        [
            (
                "app",
                "tc_request",
                vec!["status".to_owned(), "path".to_owned()]
            ),
            ("ringtrace", "_private", vec!["_x9".to_owned()]),
            ("ringtrace", "hammer", vec!["producer".to_owned()]),
        ]
    );
    let texts: Vec<String> = format_files(&out).into_iter().map(|f| f.text).collect();
    assert!(
        texts.iter().any(|t| t.contains(
            "\tfield:__data_loc char[] path;\toffset:12;\tsize:4;\tsigned:1;\n\nprint fmt: \"%hu %s\", REC->status, __get_str(path)\n"
        )),
        "{texts:?}"
    );
}

#[test]
fn many_changed_names_are_said_one_by_one_up_to_twenty_then_counted() {
    let tps: Vec<TracepointDesc> = (0..30)
        .map(|i| tracepoint(&format!("app:event {i}"), &[], ""))
        .collect();
    let meta = TraceMetadata::new(tps);
    let events = [payload(&meta, Some(29), 1, &[])];
    let dir = TempDir::new("tcmd-many-names");
    let r = ring_file(&dir, &meta, &events);
    let (out, done) = export_to(&dir, &r);
    assert_eq!(done.warnings.len(), 21, "{:?}", done.warnings);
    assert_eq!(
        done.warnings[0],
        "event \"app:event 0\" is named app:event_0 in the trace-cmd file"
    );
    assert!(
        done.warnings[20].starts_with(
            "10 more names of events and fields, or characters of their formats, were changed for the trace-cmd file"
        ),
        "{}",
        done.warnings[20]
    );
    assert_eq!(check_formats(&out).len(), 30);
    if !have_trace_cmd() {
        return;
    }
    assert_eq!(
        report_events(&report(&out, &[])),
        [("event_29".to_owned(), String::new())]
    );
}

#[test]
fn format_text_trace_cmd_cannot_print_is_question_marks_and_the_events_read_back() {
    use FieldKind::*;
    let meta = TraceMetadata::new(vec![
        tracepoint(
            "app:took",
            &[("n", U32)],
            "took {} \u{b5}s \u{1}\r\"\\%d\ttab",
        ),
        tracepoint("app:plain", &[("n", U32)], "n={} \"quoted\" 100%"),
    ]);
    let events = [
        payload(&meta, Some(0), 1, &[FieldValue::Unsigned(12)]),
        payload(&meta, Some(1), 1, &[FieldValue::Unsigned(34)]),
    ];
    let dir = TempDir::new("tcmd-format-text");
    let r = ring_file(&dir, &meta, &events);
    let (out, done) = export_to(&dir, &r);
    assert_eq!(
        done.warnings,
        ["the format of event \"app:took\" has 2 characters trace-cmd cannot print (only printable ASCII, tab, newline and carriage return): each is ? in the trace-cmd file"]
    );
    check_formats(&out);
    let texts: Vec<String> = format_files(&out).into_iter().map(|f| f.text).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("print fmt: \"took %u ?s ?\\r\\\"\\\\%%d\\ttab\", REC->n\n")),
        "{texts:?}"
    );
    if !have_trace_cmd() {
        return;
    }
    let got = report_events(&report(&out, &[]));
    assert_eq!(
        got,
        [
            ("took".to_owned(), "took 12 ?s ?\r\"\\%d\ttab".to_owned()),
            ("plain".to_owned(), "n=34 \"quoted\" 100%".to_owned()),
        ]
    );
}
