//! A file ring keeps the callsite descriptions beside the events, so the
//! trace decodes when read back by another process; and the exporters
//! show the records: Chrome spans and instants, trace-cmd and CTF under
//! the generic `tracing` event.

mod common;

use ringtrace_export::export::{export, Format};
use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
use ringtrace_ring::{file, RingBuffer, RingConfig};
use ringtrace_tracing::RingLayer;
use std::path::PathBuf;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-tracing-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records a span around two events into a file ring at `path`, then
/// closes the ring.
fn record_into_file(path: &std::path::Path) {
    let clock = "mono"
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(64 * 1024)
        .quarantine_pages(2)
        .file(path)
        .metadata(metadata_for_tracepoints().unwrap().to_bytes());
    let ring = Arc::new(RingBuffer::new(config, clock).unwrap());
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let span = tracing::info_span!("checkout", cart = 12u64);
        span.in_scope(|| {
            tracing::info!(items = 3u64, "priced");
            tracing::warn!(target: "shop::pay", retry = true, "card declined");
        });
    });
    ring.flush();
    drop(ring);
}

#[test]
fn a_file_ring_read_back_decodes_by_its_own_callsite_records() {
    let dir = temp_dir("file");
    let path = dir.join("t.ring");
    record_into_file(&path);
    let recovery = file::recover(&path).unwrap();
    assert_eq!(recovery.metadata_records().len(), 3);
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let comments = dump.comments().join("\n");
    assert!(
        comments.contains("3 of them `tracing` callsites"),
        "{comments}"
    );
    let lines: Vec<String> = dump.events().into_iter().map(|e| dump.line(e)).collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(
        lines[0].contains("tracing:span_new: INFO file_ring: new checkout#"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(" cart=12"), "{}", lines[0]);
    assert!(
        lines[2].ends_with("tracing:event: INFO file_ring: priced items=3"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with("tracing:event: WARN shop::pay: card declined retry=true"),
        "{}",
        lines[3]
    );
    assert!(lines.iter().all(|l| !l.contains("raw")), "{lines:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_chrome_export_shows_spans_as_slices_and_events_as_instants() {
    let dir = temp_dir("chrome");
    let path = dir.join("t.ring");
    record_into_file(&path);
    let recovery = file::recover(&path).unwrap();
    let out = dir.join("t.json");
    export(&recovery, Format::Chrome, &out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events: Vec<&serde_json::Value> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .collect();
    let phases: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            ("B", "checkout"),
            ("i", "priced"),
            ("i", "card declined"),
            ("E", "checkout")
        ]
    );
    assert_eq!(events[0]["args"]["cart"], 12);
    assert_eq!(events[0]["args"]["level"], "INFO");
    assert_eq!(events[2]["args"]["target"], "shop::pay");
    assert_eq!(events[2]["args"]["retry"], true);
    let tid = u64::from(ringtrace_tracepoint::thread_id());
    assert!(events.iter().all(|e| e["tid"] == tid));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_cmd_and_ctf_exports_carry_every_record_as_the_generic_tracing_event() {
    let dir = temp_dir("binary");
    let path = dir.join("t.ring");
    record_into_file(&path);
    let recovery = file::recover(&path).unwrap();
    let dat = export(&recovery, Format::TraceCmd, &dir.join("trace.dat")).unwrap();
    assert_eq!(dat.events, 6);
    assert!(dat.warnings.is_empty(), "{:?}", dat.warnings);
    let bytes = std::fs::read(dir.join("trace.dat")).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("name: tracing"),
        "the generic event's format is declared"
    );
    assert!(
        text.contains("card declined"),
        "the text payload is in the data"
    );
    let ctf = export(&recovery, Format::Ctf, &dir.join("ctf")).unwrap();
    assert_eq!(ctf.events, 6);
    let tsdl = std::fs::read_to_string(dir.join("ctf").join("metadata")).unwrap();
    assert!(tsdl.contains("name = \"tracing\""), "{tsdl}");
    let stream = std::fs::read(dir.join("ctf").join("stream_0")).unwrap();
    assert!(String::from_utf8_lossy(&stream).contains("card declined retry=true"));
    std::fs::remove_dir_all(&dir).unwrap();
}
