//! Exporting a live ring of this process (`RingBuffer::snapshot`), as a
//! program does at exit: the same exporters as for a file, nothing
//! consumed from the ring.

use ringtrace_clock::Counter;
use ringtrace_export::export::{export, Format};
use ringtrace_export::{FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::FieldKind;

const PAGE_READ: u32 = 0x5151_0001;

fn metadata() -> Vec<u8> {
    TraceMetadata::new(vec![TracepointDesc {
        name: "app:page_read".into(),
        id: PAGE_READ,
        fields: vec![
            FieldDesc::new("page", FieldKind::U64),
            FieldDesc::new("hit", FieldKind::Bool),
        ],
        format: "page={} hit={}".into(),
    }])
    .to_bytes()
}

fn page_read(tid: u32, page: u64, hit: bool) -> Vec<u8> {
    let mut p = PAGE_READ.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    p.extend_from_slice(&page.to_le_bytes());
    p.push(u8::from(hit));
    p
}

#[test]
fn a_live_in_memory_ring_exports_as_text_and_chrome_without_being_consumed() {
    let config = RingConfig::default()
        .cpus(2)
        .page_size(256)
        .per_cpu_bytes(1024)
        .mode(Mode::Overwrite);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    // CPU 0 wraps (its oldest events are overwritten); CPU 1 does not.
    for page in 0..100u64 {
        ring.cpu_writer(0)
            .write(&page_read(7, page, page % 2 == 0))
            .unwrap();
    }
    ring.cpu_writer(1).write(&page_read(8, 1000, true)).unwrap();
    let before = ring.stats();
    let snapshot = ring.snapshot(metadata());
    assert_eq!(ring.stats(), before, "a snapshot consumes nothing");
    let kept = snapshot.cpus[0].events.len() as u64;
    assert_eq!(snapshot.cpus[0].events[0].lost_before, 100 - kept);
    assert_eq!(snapshot.cpus[1].events.len(), 1);

    let dir = std::env::temp_dir().join(format!("ringtrace-snapshot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("trace.txt");
    let done = export(&snapshot, Format::Text, &text).unwrap();
    assert_eq!(done.events, kept + 1);
    assert_eq!(done.lost, 100 - kept);
    let text = std::fs::read_to_string(&text).unwrap();
    assert!(text.contains("# writer: live"), "{text}");
    assert!(
        text.contains(&format!("CPU:0 [LOST {} EVENTS]", 100 - kept)),
        "{text}"
    );
    assert!(text.contains("[001]"), "{text}");
    assert!(
        text.contains(": app:page_read: page=1000 hit=true"),
        "{text}"
    );
    assert!(
        text.contains(": app:page_read: page=99 hit=false"),
        "{text}"
    );

    let chrome = dir.join("trace.json");
    export(&snapshot, Format::Chrome, &chrome).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&chrome).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["name"] == "app:page_read")
            .count() as u64,
        kept + 1
    );
    let lost: u64 = events
        .iter()
        .filter(|e| e["name"] == "lost")
        .map(|e| e["args"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(lost, 100 - kept);
    std::fs::remove_dir_all(&dir).unwrap();
}
