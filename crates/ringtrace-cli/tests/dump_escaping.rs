//! `ringtrace dump`, `export --format text` and `recover` on ring files
//! whose strings hold every byte: a field value, the writer's command
//! name, and the names and formats of the file's own metadata. Each event
//! stays on one line and no byte a terminal would obey is printed.
//!
//! This test process gives itself a command name with a newline, an ESC
//! and a bidi override (the ring file's header records it).

mod common;

use common::{ringtrace, TempDir};
use ringtrace::export::{EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace::ring::{RingBuffer, RingConfig};
use ringtrace::tracepoint::FieldKind;
use ringtrace::Tracer;
use ringtrace_testkit::{inert_text, shown_byte, shown_char};
use std::path::Path;
use tracing_subscriber::layer::SubscriberExt;

ringtrace::tracepoint! {
    /// Written raw by the tests, with any bytes in its string.
    pub fn cli_esc(s: &str) = "s={}";
}

/// The command name this process gives itself.
const COMM: &str = "a\nb\x1b[31m\u{202e}";

fn hostile_comm() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::fs::write("/proc/self/comm", COMM).unwrap());
}

/// `ringtrace ARGS`' standard output, which it must succeed in writing.
fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = ringtrace(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A closed ring file at `path` holding, from this program: a `tracing`
/// event per char below 256 (`s="a{c}b"`), then a `cli_esc` event per
/// byte (`s` the bytes `a`, the byte, `b`).
fn hostile_ring(path: &Path) {
    hostile_comm();
    let tracer = Tracer::builder()
        .clock("mono")
        .cpus(1)
        .buffer_size(256 << 10)
        .file(path)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(tracer.layer());
    tracing::subscriber::with_default(subscriber, || {
        for n in 0u32..256 {
            let s = format!("a{}b", char::from_u32(n).unwrap());
            tracing::info!(target: "esc", n, s = s.as_str());
        }
    });
    for b in 0u8..=255 {
        let mut p = cli_esc::TRACEPOINT.id.to_le_bytes().to_vec();
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&3u16.to_le_bytes());
        p.extend_from_slice(&[b'a', b, b'b']);
        tracer.write(&p).unwrap();
    }
    tracer.finish().unwrap();
}

/// The lines of `text` that are not `#` lines, the whole text checked
/// inert first (see `ringtrace_testkit::inert_text`).
fn checked_event_lines(text: &[u8]) -> Vec<String> {
    let text = inert_text(text);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn dump_and_text_export_show_fields_holding_any_byte_one_line_each() {
    let dir = TempDir::new("escape");
    let path = dir.file("h.ring");
    hostile_ring(Path::new(&path));

    let dump = stdout_of(&["dump", &path]);
    let lines = checked_event_lines(&dump);
    assert_eq!(lines.len(), 512, "{}", String::from_utf8_lossy(&dump));
    let comm = COMM.chars().map(shown_char).collect::<String>();
    for (n, line) in (0u32..256).zip(&lines) {
        let expected = format!(
            "tracing:event: INFO esc: n={n} s=a{}b",
            shown_char(char::from_u32(n).unwrap())
        );
        assert!(line.ends_with(&expected), "{line:?} for {n:#x}");
        assert!(line.trim_start().starts_with(&comm), "{line:?}");
    }
    for (b, line) in (0u8..=255).zip(&lines[256..]) {
        let expected = format!("cli_esc: s=a{}b", shown_byte(b));
        assert!(line.ends_with(&expected), "{line:?} for {b:#x}");
    }

    let out = dir.file("out.txt");
    stdout_of(&["export", "--format", "text", &path, "-o", &out]);
    let exported = std::fs::read(&out).unwrap();
    assert!(checked_event_lines(&exported) == lines);
    assert!(exported == dump, "the text export is the dump");
    let piped = stdout_of(&["export", "--format", "text", &path, "-o", "-"]);
    assert!(piped == dump, "the text export to stdout is the dump");
}

#[test]
fn json_dump_and_recover_keep_the_values_and_print_no_control() {
    let dir = TempDir::new("escape-json");
    let path = dir.file("h.ring");
    hostile_ring(Path::new(&path));

    let json = stdout_of(&["dump", "--json", &path]);
    let lines = checked_event_lines(&json);
    assert_eq!(lines.len(), 512);
    for (n, line) in (0u32..256).zip(&lines) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = format!("a{}b", char::from_u32(n).unwrap());
        assert_eq!(v["fields"]["s"], serde_json::Value::from(s), "{line}");
    }
    for (b, line) in (0u8..=255).zip(&lines[256..]) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        // JSON strings are Unicode: a byte that is not UTF-8 is U+FFFD.
        let s = String::from_utf8_lossy(&[b'a', b, b'b']).into_owned();
        assert_eq!(v["fields"]["s"], serde_json::Value::from(s), "{line}");
    }

    let text = stdout_of(&["recover", &path]);
    checked_event_lines(&text);
    let comm = COMM.chars().map(shown_char).collect::<String>();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(&format!("({comm})")), "{text}");
    let json = stdout_of(&["recover", "--json", &path]);
    checked_event_lines(&json);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["writer"]["comm"], COMM);
}

#[test]
fn names_and_formats_from_the_files_metadata_are_escaped() {
    let dir = TempDir::new("escape-meta");
    let path = dir.0.join("m.ring");
    let id = 0x0102_0304u32;
    let meta = TraceMetadata::new(vec![TracepointDesc {
        name: "evil\n\x1b[2J\u{202e}".into(),
        id,
        fields: vec![FieldDesc::new("f\x1b\t", FieldKind::U32)],
        format: "x={}\r\u{85}".into(),
    }])
    .with_untagged(EventLayout {
        name: "u\x07".into(),
        fields: vec![FieldDesc::new("v", FieldKind::U8)],
        format: "v={}\x00".into(),
    });
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .quarantine_pages(1)
        .file(&path)
        .metadata(meta.to_bytes());
    let clock = "mono"
        .parse::<ringtrace::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let ring = RingBuffer::new(config, clock).unwrap();
    let mut event = id.to_le_bytes().to_vec();
    event.extend_from_slice(&7u32.to_le_bytes());
    event.extend_from_slice(&5u32.to_le_bytes());
    ring.write(&event).unwrap();
    ring.write(&[9]).unwrap();
    ring.write(&event[..10]).unwrap();
    drop(ring);
    let path = path.to_str().unwrap();

    let dump = stdout_of(&["dump", path]);
    let lines = checked_event_lines(&dump);
    let dump = String::from_utf8(dump).unwrap();
    assert!(
        dump.contains("# metadata: 1 tracepoint, untagged layout `u\\x07`"),
        "{dump}"
    );
    assert_eq!(lines.len(), 3, "{dump}");
    assert!(
        lines[0].ends_with(": evil\\n\\x1b[2J\\u{202e}: x=5\\r\\u{85}"),
        "{lines:?}"
    );
    assert!(lines[1].ends_with(": u\\x07: v=9\\x00"), "{lines:?}");
    assert!(
        lines[2].contains("(tracepoint `evil\\n\\x1b[2J\\u{202e}`: field `f\\x1b\\t` is cut off"),
        "{lines:?}"
    );
    let recovered = stdout_of(&["recover", path]);
    checked_event_lines(&recovered);
    let recovered = String::from_utf8(recovered).unwrap();
    assert!(
        recovered.contains("untagged layout `u\\x07`"),
        "{recovered}"
    );
}

#[test]
fn an_error_naming_a_hostile_file_name_prints_it_escaped() {
    let dir = TempDir::new("hostile-name");
    let name = "x\x1b[31m\u{202e}y\nz";
    let missing = dir.0.join(name);
    // A ring file that is not one, under the same name: its error names it.
    let garbage = dir.0.join(format!("{name}.ring"));
    std::fs::write(&garbage, b"not a ring").unwrap();
    let out = dir.0.join(format!("{name}.txt"));
    for args in [
        vec!["recover", missing.to_str().unwrap()],
        vec!["dump", garbage.to_str().unwrap()],
        vec![
            "export",
            garbage.to_str().unwrap(),
            "--format",
            "text",
            "-o",
            out.to_str().unwrap(),
        ],
    ] {
        let run = ringtrace(&args);
        assert!(!run.status.success(), "{args:?}");
        let stderr = String::from_utf8(run.stderr).unwrap();
        assert!(
            stderr.contains("x\\x1b[31m\\u{202e}y\\nz"),
            "{args:?}: the name is shown escaped: {stderr:?}"
        );
        assert!(
            !stderr.contains('\x1b') && !stderr.contains('\u{202e}'),
            "{args:?}: {stderr:?}"
        );
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
    }
}
