//! `ringtrace recover`'s text and JSON: the metadata records a ring keeps
//! beside its metadata (its annex, appended at run time) are counted, and
//! damage to them is a problem.

use ringtrace_cli::recover::{recovery_json, recovery_text};
use ringtrace_clock::Counter;
use ringtrace_ring::{file, RingBuffer, RingConfig};
use ringtrace_testkit::TempDir;

fn records() -> Vec<Vec<u8>> {
    vec![b"callsite one".to_vec(), b"callsite two, longer".to_vec()]
}

/// A closed file ring holding `records()` and one event.
fn file_with_records(path: &str) {
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .quarantine_pages(1)
        .metadata_capacity(4096)
        .file(path);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    for r in records() {
        ring.append_metadata(&r).unwrap();
    }
    ring.cpu_writer(0).write(b"event").unwrap();
}

#[test]
fn a_files_records_are_counted_in_the_recover_summary() {
    let dir = TempDir::new("recover-records");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let rec = file::recover(&path).unwrap();
    let text = recovery_text(&rec);
    assert!(
        text.contains("records:   2 metadata records appended at run time (32 bytes)\n"),
        "{text}"
    );
    assert!(text.contains("writer:    closed: "), "{text}");
    let json = recovery_json(&rec);
    assert_eq!(json["metadata_records"]["count"], 2, "{json}");
    assert_eq!(json["metadata_records"]["bytes"], 32, "{json}");
    assert_eq!(json["metadata_records"]["annex_capacity"], 4096, "{json}");
    assert_eq!(json["writer"]["state"], "closed", "{json}");
    assert_eq!(json["has_problems"], false, "{json}");
}

#[test]
fn damage_to_the_records_is_a_problem_in_the_recover_summary() {
    let dir = TempDir::new("recover-records-damage");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let at = file::recover(&path).unwrap().header.layout.annex_offset as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    // The second record's length, one more than there is.
    let second = at + 8 + 4 + records()[0].len();
    bytes[second..second + 4].copy_from_slice(&21u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let rec = file::recover(&path).unwrap();
    let text = recovery_text(&rec);
    assert!(
        text.contains("records:   1 metadata record appended"),
        "{text}"
    );
    assert!(
        text.contains("           problem: the metadata annex is damaged"),
        "{text}"
    );
    let json = recovery_json(&rec);
    assert_eq!(json["metadata_records"]["count"], 1, "{json}");
    assert_eq!(
        json["metadata_records"]["problems"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{json}"
    );
    assert_eq!(json["has_problems"], true, "{json}");
}
