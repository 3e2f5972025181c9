//! Local spans: recorded into the process's local-span ring without the
//! `tracing` dispatcher, one record per span written at its end, each site
//! described once, shown by the dump with how long each lasted and by the
//! Chrome export as nested slices.

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
fn local_spans_record_once_at_their_end_and_nest_in_the_chrome_export() {
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
    assert_eq!(ring.stats().hit, 3, "one record per span");
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
    // Innermost first: each is written when it ends.
    let spans: Vec<(&str, u64, u64)> = lines
        .iter()
        .map(|l| {
            let rest = l
                .strip_prefix("tracing:local_span: span ")
                .unwrap_or_else(|| panic!("{l}"));
            let (name, rest) = rest.split_once(" began=").unwrap();
            let (began, lasted) = rest.split_once(" lasted=").unwrap();
            let lasted = lasted.strip_suffix("ns").unwrap();
            (name, began.parse().unwrap(), lasted.parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.0).collect();
    assert_eq!(names, ["step", "step", "outer"]);
    // Each began no earlier than the span around it, and ended no later.
    let (inner, middle, outer) = (spans[0], spans[1], spans[2]);
    assert!(outer.1 <= middle.1 && middle.1 <= inner.1, "{spans:?}");
    assert!(inner.1 + inner.2 <= middle.1 + middle.2, "{spans:?}");
    assert!(middle.1 + middle.2 <= outer.1 + outer.2, "{spans:?}");
    let snapshot = ring.snapshot(metadata_for_tracepoints().unwrap().to_bytes());
    let out = std::env::temp_dir().join(format!("ringtrace-local-{}.json", std::process::id()));
    export(&snapshot, Format::Chrome, &out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    let mut slices: Vec<(f64, f64, String)> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
                e["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    slices.sort_by(|a, b| a.0.total_cmp(&b.0));
    let names: Vec<&str> = slices.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(names, ["outer", "step", "step"], "{slices:?}");
    for pair in slices.windows(2) {
        // Nested: each slice lies inside the one before it.
        let (outer, inner) = (&pair[0], &pair[1]);
        assert!(inner.0 + inner.1 <= outer.0 + outer.1, "{slices:?}");
    }
    assert_eq!(local_span_stats().dropped, 0);
}
