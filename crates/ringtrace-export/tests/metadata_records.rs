//! The metadata records a ring keeps beside its metadata (its annex,
//! appended at run time) reach whoever reads the trace: the decoder and
//! the dump, damage included (`ringtrace recover`'s text and JSON are
//! checked in ringtrace-cli's tests/recover.rs).

mod common;

use common::TempDir;
use ringtrace_clock::Counter;
use ringtrace_export::{metadata_decoder, Dump, DumpOptions};
use ringtrace_ring::{file, RingBuffer, RingConfig};

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
fn a_files_records_reach_the_decoder_and_the_dump() {
    let dir = TempDir::new("records");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let rec = file::recover(&path).unwrap();
    assert_eq!(metadata_decoder(&rec).decoder.metadata_records(), records());
    let dump = Dump::new(&rec, DumpOptions::default()).unwrap();
    assert_eq!(dump.metadata_records(), records());
    let comments = dump.comments().join("\n");
    assert!(
        comments.contains(
            "# metadata records: 2 appended at run time (32 bytes), 0 of them `tracing` callsites"
        ),
        "{comments}"
    );
}

#[test]
fn damage_to_the_records_is_a_problem_in_the_dump() {
    let dir = TempDir::new("records-damage");
    let path = dir.file("t.ring");
    file_with_records(&path);
    let at = file::recover(&path).unwrap().header.layout.annex_offset as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    // The second record's length, one more than there is.
    let second = at + 8 + 4 + records()[0].len();
    bytes[second..second + 4].copy_from_slice(&21u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let rec = file::recover(&path).unwrap();
    assert_eq!(rec.metadata_records(), &records()[..1]);
    let dump = Dump::new(&rec, DumpOptions::default()).unwrap();
    let comments = dump.comments().join("\n");
    assert!(
        comments.contains("# problem in the metadata records: the metadata annex is damaged at byte 16: a record of 21 bytes runs past the end at byte 40"),
        "{comments}"
    );
}

#[test]
fn a_snapshot_of_a_memory_ring_gives_the_decoder_its_records() {
    let ring = RingBuffer::new(
        RingConfig::default().cpus(1).per_cpu_bytes(8192),
        Counter::new(),
    )
    .unwrap();
    for r in records() {
        ring.append_metadata(&r).unwrap();
    }
    let snapshot = ring.snapshot(Vec::new());
    assert_eq!(
        metadata_decoder(&snapshot).decoder.metadata_records(),
        records()
    );
}
