//! A trace is input from whoever wrote it: `Tracer::dump` and the text
//! export show every string in it escaped, one line per event, with no
//! byte a terminal would obey.

use ringtrace::{DumpOptions, ExportFormat, Tracer};
use ringtrace_testkit::{inert_text, shown_byte, shown_char};
#[cfg(feature = "tracing")]
use tracing_subscriber::layer::SubscriberExt;

ringtrace::tracepoint! {
    /// Written raw by the tests, with any bytes in its string.
    pub fn esc_bytes(s: &str) = "s={}";
    /// A format with a newline, an ESC and a bidi override in it.
    pub fn esc_format(n: u32) = "n={}\n\x1b[2J\u{202e}";
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-escape-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tracer() -> Tracer {
    Tracer::builder()
        .clock("mono")
        .cpus(1)
        .buffer_size(256 << 10)
        .build()
        .unwrap()
}

/// The lines of `text` that are not `#` lines, the whole text checked
/// inert first (see `ringtrace_testkit::inert_text`).
fn checked_event_lines(text: &[u8]) -> Vec<String> {
    let text = inert_text(text);
    assert!(text.ends_with('\n'));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
#[cfg(feature = "tracing")]
fn a_tracing_string_field_holding_any_char_below_256_stays_on_its_line() {
    let dir = temp_dir("tracing");
    let tracer = tracer();
    let subscriber = tracing_subscriber::registry().with(tracer.layer());
    tracing::subscriber::with_default(subscriber, || {
        for n in 0u32..256 {
            let s = format!("a{}b", char::from_u32(n).unwrap());
            tracing::info!(target: "esc", n, s = s.as_str());
        }
        let all: String = (0u32..256).filter_map(char::from_u32).collect();
        tracing::info!(target: "esc", "{all}");
    });
    let dump = tracer.dump(DumpOptions::default()).unwrap();
    let out = dir.join("text");
    tracer.export(ExportFormat::Text, &out).unwrap();
    let lines = checked_event_lines(dump.as_bytes());
    assert!(checked_event_lines(&std::fs::read(&out).unwrap()) == lines);
    assert_eq!(lines.len(), 257, "{dump}");
    for (n, line) in (0u32..256).zip(&lines) {
        let expected = format!(
            "tracing:event: INFO esc: n={n} s=a{}b",
            shown_char(char::from_u32(n).unwrap())
        );
        assert!(line.ends_with(&expected), "{line:?} for {n:#x}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_string_field_holding_any_byte_shows_the_bytes_that_are_not_utf8_as_hex() {
    let dir = temp_dir("bytes");
    let tracer = tracer();
    let event = |s: &[u8]| {
        let mut p = esc_bytes::TRACEPOINT.id.to_le_bytes().to_vec();
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&(s.len() as u16).to_le_bytes());
        p.extend_from_slice(s);
        tracer.write(&p).unwrap();
    };
    for b in 0u8..=255 {
        event(&[b'a', b, b'b']);
    }
    let all: Vec<u8> = (0u8..=255).collect();
    event(&all);
    let dump = tracer.dump(DumpOptions::default()).unwrap();
    let out = dir.join("text");
    tracer.export(ExportFormat::Text, &out).unwrap();
    let lines = checked_event_lines(dump.as_bytes());
    assert!(checked_event_lines(&std::fs::read(&out).unwrap()) == lines);
    assert_eq!(lines.len(), 257, "{dump}");
    for (b, line) in (0u8..=255).zip(&lines) {
        let expected = format!("esc_bytes: s=a{}b", shown_byte(b));
        assert!(line.ends_with(&expected), "{line:?} for {b:#x}");
    }
    // Every byte from 0x80 is alone, between bytes that are not its
    // continuation: none is UTF-8.
    let expected: String = (0u8..=255).map(shown_byte).collect();
    assert!(
        lines[256].ends_with(&format!("s={expected}")),
        "{}",
        lines[256]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg(feature = "tracing")]
fn names_targets_formats_and_spans_are_escaped_too() {
    let tracer = tracer();
    let subscriber = tracing_subscriber::registry().with(tracer.layer());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "t\x1b]0;x\x07\u{202e}", "span\n\x1b[1m");
        let _entered = span.enter();
        tracing::warn!(target: "t\r", { "k\x1b\n" = 1 }, "msg\u{9b}2J\\");
    });
    let mut p = esc_format::TRACEPOINT.id.to_le_bytes().to_vec();
    p.extend_from_slice(&7u32.to_le_bytes());
    p.extend_from_slice(&5u32.to_le_bytes());
    tracer.write(&p).unwrap();
    let dump = tracer.dump(DumpOptions::default()).unwrap();
    let lines = checked_event_lines(dump.as_bytes());
    // span_new, span_enter, the event, span_exit, span_close, the tracepoint.
    assert_eq!(lines.len(), 6, "{dump}");
    assert!(
        lines[0]
            .ends_with("tracing:span_new: INFO t\\x1b]0;x\\x07\\u{202e}: new span\\n\\x1b[1m#1"),
        "{lines:?}"
    );
    assert!(
        lines[2].ends_with("tracing:event: WARN t\\r: msg\\u{9b}2J\\\\ k\\x1b\\n=1"),
        "{lines:?}"
    );
    assert!(
        lines[5].ends_with("esc_format: n=5\\n\\x1b[2J\\u{202e}"),
        "{lines:?}"
    );
}

/// `trace-cmd report` and babeltrace2 show the generic `tracing` event's
/// strings (level, target, callsite name, text) as the dump escapes them:
/// their output is as inert as the dump's.
#[test]
#[cfg(feature = "tracing")]
fn the_trace_cmd_and_ctf_exports_show_tracing_strings_escaped() {
    let dir = temp_dir("tools");
    let tracer = tracer();
    let subscriber = tracing_subscriber::registry().with(tracer.layer());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "t\x1b]0;x\x07\u{202e}", "span\n\x1b[1m");
        let _entered = span.enter();
        tracing::warn!(target: "t\r", weird = "a\nb\x1b[31m\u{202e}", "msg\u{9b}2J");
    });
    let dat = dir.join("trace.dat");
    tracer.export(ExportFormat::TraceCmd, &dat).unwrap();
    let ctf = dir.join("ctf");
    tracer.export(ExportFormat::Ctf, &ctf).unwrap();
    let run = |tool: &str, args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(tool)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    if ringtrace_testkit::have_tool("trace-cmd") {
        let out = run(
            "trace-cmd",
            &["report".as_ref(), "-i".as_ref(), dat.as_os_str()],
        );
        let text = inert_text(&out);
        let event = text.lines().find(|l| l.contains("msg")).expect("the event");
        assert!(event.contains("weird=a\\nb\\x1b[31m\\u{202e}"), "{event}");
    }
    if ringtrace_testkit::have_tool("babeltrace2") {
        let out = run("babeltrace2", &[ctf.as_os_str()]);
        let text = inert_text(&out);
        // babeltrace2 shows a backslash in a string as two.
        assert!(text.contains(r"weird=a\\nb\\x1b[31m\\u{202e}"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
