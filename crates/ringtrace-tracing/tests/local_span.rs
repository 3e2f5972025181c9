//! Local spans: recorded into the process's local-span ring without the
//! `tracing` dispatcher, each site described once, shown by the dump as
//! enter/exit and by the Chrome export as nested slices.

mod common;

use ringtrace_export::export::{export, Format};
use ringtrace_export::metadata_for_tracepoints;
use ringtrace_tracing::{local_span, local_span_stats, set_local_span_ring};

fn step(depth: u32) {
    let _span = local_span!("step");
    if depth > 0 {
        step(depth - 1);
    }
}

#[test]
fn local_spans_record_enter_and_exit_and_nest_in_the_chrome_export() {
    // Before a ring is set: nothing recorded, nothing described.
    {
        let _ignored = local_span!("before");
    }
    let ring = common::ring();
    set_local_span_ring(ring.clone()).unwrap();
    let again = set_local_span_ring(common::ring()).unwrap_err();
    assert!(again.to_string().contains("once per process"), "{again}");
    {
        let _outer = local_span!("outer");
        step(1);
    }
    assert_eq!(local_span_stats().sites_registered, 2);
    assert_eq!(ring.metadata_records().len(), 2);
    let lines: Vec<String> = common::dump_lines(&ring)
        .into_iter()
        .map(|l| {
            l.split_once("]")
                .unwrap()
                .1
                .split_once(": ")
                .unwrap()
                .1
                .to_owned()
        })
        .collect();
    assert_eq!(
        lines,
        [
            "tracing:local_enter: enter outer",
            "tracing:local_enter: enter step",
            "tracing:local_enter: enter step",
            "tracing:local_exit: exit step",
            "tracing:local_exit: exit step",
            "tracing:local_exit: exit outer",
        ]
    );
    let snapshot = ring.snapshot(metadata_for_tracepoints().to_bytes());
    let out = std::env::temp_dir().join(format!("ringtrace-local-{}.json", std::process::id()));
    export(&snapshot, Format::Chrome, &out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    let slices: Vec<String> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "B" || e["ph"] == "E")
        .map(|e| {
            format!(
                "{} {}",
                e["ph"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        slices,
        ["B outer", "B step", "B step", "E step", "E step", "E outer"]
    );
    assert_eq!(local_span_stats().dropped, 0);
}
