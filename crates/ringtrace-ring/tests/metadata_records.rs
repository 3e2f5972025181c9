//! The metadata annex: records appended at run time
//! (`RingBuffer::append_metadata`) come back in order from the ring, from
//! a snapshot and from a recovered file, across runs appending to one
//! file; a record that does not fit is refused and the others kept; a
//! crash mid-append leaves the earlier records, and damage to the annex
//! is a reported problem, never a panic.

mod common;
mod file_support;

use file_support::{config, file_error, Scratch, ANNEX};
use ringtrace_clock::Counter;
use ringtrace_ring::file::{self, FileError, Recovery};
use ringtrace_ring::{AppendMetadataError, ConfigError, Mode, RingBuffer, RingConfig};
use std::path::Path;

/// Writer id of the records' checksummed payloads.
const RECORDS: u32 = 50;

/// Record `seq`: checksummed, 16 to 47 bytes.
fn record(seq: u64) -> Vec<u8> {
    common::payload(RECORDS, seq, 16 + (seq * 11 % 32) as usize)
}

/// Appends records `seqs` to `ring` and returns them.
fn append(ring: &RingBuffer<Counter>, seqs: std::ops::Range<u64>) -> Vec<Vec<u8>> {
    seqs.map(|seq| {
        let r = record(seq);
        ring.append_metadata(&r).unwrap();
        r
    })
    .collect()
}

fn recover_sound(path: &Path) -> Recovery {
    let rec = file::recover(path).unwrap();
    assert!(
        !rec.has_problems(),
        "annex: {:?}, cpus: {:?}",
        rec.annex_problems(),
        rec.cpus.iter().map(|c| &c.problems).collect::<Vec<_>>()
    );
    rec
}

/// The file offset of the annex's committed-length word, and its value.
fn committed(path: &Path) -> (usize, u64) {
    let l = file::recover(path).unwrap().header.layout;
    let bytes = std::fs::read(path).unwrap();
    let at = l.annex_offset as usize;
    (
        at,
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()),
    )
}

/// A file ring of [`config`]'s shape with records `0..n` and an event,
/// dropped; returns them.
fn file_with_records(path: &Path, n: u64) -> Vec<Vec<u8>> {
    let ring = RingBuffer::new(config(path, Mode::Discard, 1, 1024, 4), Counter::new()).unwrap();
    let records = append(&ring, 0..n);
    ring.cpu_writer(0).write(b"event").unwrap();
    drop(ring);
    records
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn records_appended_to_a_file_ring_come_back_from_recover_in_order() {
    let scratch = Scratch::new("records");
    for forget in [false, true] {
        let path = scratch.path(&format!("t-{forget}.ring"));
        let ring = RingBuffer::new(
            config(&path, Mode::Overwrite, 2, 1024, 4).metadata_capacity(64 * 1024),
            Counter::new(),
        )
        .unwrap();
        let mut want = Vec::new();
        for seq in 0..300 {
            want.extend(append(&ring, seq..seq + 1));
            ring.cpu_writer(seq as usize % 2)
                .write(&seq.to_le_bytes())
                .unwrap();
        }
        assert_eq!(ring.metadata_records(), want);
        if forget {
            std::mem::forget(ring); // as if the process died here
        } else {
            drop(ring);
        }
        let rec = recover_sound(&path);
        assert_eq!(rec.metadata_records(), want, "forgotten: {forget}");
        assert!(!rec.merged().is_empty());
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn append_mode_keeps_the_first_runs_records_and_adds_the_second_runs_after_them() {
    let scratch = Scratch::new("records-append");
    let path = scratch.path("t.ring");
    let mut want = file_with_records(&path, 5);
    let cfg = || config(&path, Mode::Discard, 1, 1024, 4).append(true);
    // (A run that dies after its records: file_crash.rs, which kills
    // one; a ring forgotten here would keep the file open in this
    // process.)
    let ring = RingBuffer::new(cfg(), Counter::new()).unwrap();
    assert_eq!(ring.metadata_records(), want, "the first run's, at once");
    want.extend(append(&ring, 5..9));
    ring.cpu_writer(0).write(b"second").unwrap();
    drop(ring);
    // A third run goes on after both.
    let ring = RingBuffer::new(cfg(), Counter::new()).unwrap();
    assert_eq!(ring.metadata_records(), want);
    want.extend(append(&ring, 9..10));
    drop(ring);
    assert_eq!(recover_sound(&path).metadata_records(), want);
    assert_eq!(
        committed(&path).1,
        want.iter().map(|r| 4 + r.len() as u64).sum::<u64>()
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn append_with_another_annex_capacity_or_base_metadata_is_refused_and_leaves_the_file_alone() {
    let scratch = Scratch::new("records-mismatch");
    let path = scratch.path("t.ring");
    file_with_records(&path, 3);
    let before = std::fs::read(&path).unwrap();
    let cfg = || config(&path, Mode::Discard, 1, 1024, 4).append(true);
    let err = file_error(RingBuffer::new(
        cfg().metadata_capacity(2 * ANNEX),
        Counter::new(),
    ));
    let text = err.to_string();
    assert!(matches!(err, FileError::Mismatch { .. }), "{text}");
    assert!(
        text.contains(&format!("holds {ANNEX} bytes"))
            && text.contains(&format!("would hold {}", 2 * ANNEX))
            && text.contains("metadata_capacity"),
        "{text}"
    );
    // Records describe events against the file's base metadata: another
    // base is refused (as before the annex), the records kept as they are.
    let err = file_error(RingBuffer::new(
        cfg().metadata(b"{}".to_vec()),
        Counter::new(),
    ));
    assert!(err.to_string().contains("metadata"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn a_snapshot_carries_the_records_of_a_memory_ring_and_of_a_file_ring() {
    let memory = RingBuffer::new(
        RingConfig::default().cpus(1).per_cpu_bytes(8192),
        Counter::new(),
    )
    .unwrap();
    let scratch = Scratch::new("records-snapshot");
    let path = scratch.path("t.ring");
    let in_file =
        RingBuffer::new(config(&path, Mode::Discard, 1, 1024, 4), Counter::new()).unwrap();
    for ring in [&memory, &in_file] {
        let want = append(ring, 0..4);
        ring.cpu_writer(0).write(b"event").unwrap();
        let snapshot = ring.snapshot(b"{}".to_vec());
        assert_eq!(snapshot.metadata_records(), want);
        assert!(!snapshot.has_problems());
        assert_eq!(snapshot.merged()[0].payload, b"event");
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn a_full_annex_refuses_the_record_with_its_sizes_and_keeps_the_earlier_ones() {
    let scratch = Scratch::new("records-full");
    let path = scratch.path("t.ring");
    let memory = RingBuffer::new(
        RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(8192)
            .metadata_capacity(ANNEX),
        Counter::new(),
    )
    .unwrap();
    let in_file =
        RingBuffer::new(config(&path, Mode::Discard, 1, 1024, 4), Counter::new()).unwrap();
    for ring in [&memory, &in_file] {
        let mut kept = Vec::new();
        let mut used = 0;
        let mut seq = 0;
        let refused = loop {
            let r = record(seq);
            match ring.append_metadata(&r) {
                Ok(()) => {
                    used += 4 + r.len();
                    kept.push(r);
                }
                Err(e) => break (e, r),
            }
            seq += 1;
        };
        let (err, r) = refused;
        assert_eq!(
            err,
            AppendMetadataError::Full {
                needed: 4 + r.len(),
                free: ANNEX - used,
                capacity: ANNEX
            }
        );
        assert!(ANNEX - used < 4 + r.len());
        assert!(
            err.to_string()
                .contains("raise RingConfig::metadata_capacity"),
            "{err}"
        );
        // A record small enough for what is left still goes in, after.
        let small = vec![1u8; ANNEX - used - 4];
        if !small.is_empty() {
            ring.append_metadata(&small).unwrap();
            kept.push(small);
        }
        assert_eq!(ring.metadata_records(), kept);
        assert!(ring.append_metadata(b"x").is_err());
        assert_eq!(ring.metadata_records(), kept, "a refusal changes nothing");
    }
    let kept = in_file.metadata_records();
    drop(in_file);
    assert_eq!(recover_sound(&path).metadata_records(), kept);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn an_empty_record_is_refused_and_a_ring_without_an_annex_refuses_every_record() {
    let scratch = Scratch::new("records-none");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(
        config(&path, Mode::Discard, 1, 1024, 4).metadata_capacity(0),
        Counter::new(),
    )
    .unwrap();
    assert_eq!(ring.append_metadata(b""), Err(AppendMetadataError::Empty));
    let err = ring.append_metadata(b"callsite").unwrap_err();
    assert_eq!(
        err,
        AppendMetadataError::Full {
            needed: 12,
            free: 0,
            capacity: 0
        }
    );
    assert!(err.to_string().contains("no metadata annex"), "{err}");
    drop(ring);
    let rec = recover_sound(&path);
    assert_eq!(rec.header.layout.annex_capacity, 0);
    assert!(rec.metadata_records().is_empty());
}

#[test]
fn an_absurd_metadata_capacity_is_refused_naming_the_limit() {
    let max = ringtrace_ring::config::MAX_METADATA_CAPACITY;
    let err = RingConfig::default()
        .metadata_capacity(max + 1)
        .validate()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::MetadataCapacity {
            given: max + 1,
            max
        }
    );
    assert!(err.to_string().contains(&format!("at most {max} bytes")));
    assert!(RingConfig::default()
        .metadata_capacity(max)
        .validate()
        .is_ok());
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn record_bytes_written_without_their_committed_length_stay_unseen_and_are_written_over() {
    let scratch = Scratch::new("records-torn");
    for whole in [false, true] {
        let path = scratch.path(&format!("t-{whole}.ring"));
        let mut want = file_with_records(&path, 3);
        // A crash after the record's bytes (all, or its length and half of
        // them) and before the committed length.
        let (at, committed) = committed(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        let torn = record(99);
        let end = at + 8 + committed as usize;
        bytes[end..end + 4].copy_from_slice(&(torn.len() as u32).to_le_bytes());
        let written = if whole { torn.len() } else { torn.len() / 2 };
        bytes[end + 4..end + 4 + written].copy_from_slice(&torn[..written]);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(recover_sound(&path).metadata_records(), want);
        // The next run appends over the torn bytes.
        let ring = RingBuffer::new(
            config(&path, Mode::Discard, 1, 1024, 4).append(true),
            Counter::new(),
        )
        .unwrap();
        want.extend(append(&ring, 3..4));
        drop(ring);
        assert_eq!(recover_sound(&path).metadata_records(), want);
    }
}

/// Damage done to a file's bytes, given the annex's offset and
/// committed length.
type Damage = fn(&mut Vec<u8>, usize, u64);

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn a_corrupt_committed_length_or_record_length_is_a_problem_and_the_records_before_are_kept() {
    let scratch = Scratch::new("records-damage");
    let first = 4 + record(0).len(); // where record 1 starts
                                     // (what, damage, records kept, words the problem has)
    let cases: [(&str, Damage, usize, &str); 7] = [
        (
            "committed length past the capacity",
            |b, at, _| put(b, at, &(ANNEX as u64 + 1).to_le_bytes()),
            2,
            "past its capacity",
        ),
        (
            "committed length u64::MAX",
            |b, at, _| put(b, at, &u64::MAX.to_le_bytes()),
            2,
            "past its capacity",
        ),
        (
            "committed length inside record 1",
            |b, at, c| put(b, at, &(c - 3).to_le_bytes()),
            1,
            "runs past the end",
        ),
        (
            "record 1's length u32::MAX",
            |b, at, _| {
                let r1 = at + 8 + 4 + record(0).len();
                put(b, r1, &u32::MAX.to_le_bytes())
            },
            1,
            "runs past the end",
        ),
        (
            "record 1's length one more",
            |b, at, _| {
                let r1 = at + 8 + 4 + record(0).len();
                let len = u32::from_le_bytes(b[r1..r1 + 4].try_into().unwrap());
                put(b, r1, &(len + 1).to_le_bytes())
            },
            1,
            "runs past the end",
        ),
        (
            "record 0's length zero",
            |b, at, _| put(b, at + 8, &0u32.to_le_bytes()),
            0,
            "length 0",
        ),
        (
            "the file cut inside record 1",
            |b, at, _| b.truncate(at + 8 + 4 + record(0).len() + 6),
            1,
            "the file ends inside the metadata annex",
        ),
    ];
    for (i, (what, damage, kept, says)) in cases.into_iter().enumerate() {
        let path = scratch.path(&format!("t-{i}.ring"));
        let want = file_with_records(&path, 2);
        let (at, c) = committed(&path);
        assert_eq!(c as usize, first + 4 + record(1).len());
        let mut bytes = std::fs::read(&path).unwrap();
        damage(&mut bytes, at, c);
        std::fs::write(&path, &bytes).unwrap();
        let rec = file::recover(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(rec.metadata_records(), &want[..kept], "{what}");
        assert!(rec.has_problems(), "{what}: nothing said");
        let problems = rec.annex_problems().join("; ");
        assert!(problems.contains(says), "{what}: {problems}");
        if bytes.len() as u64 == rec.header.layout.file_len {
            // The next run refuses an annex it cannot trust.
            let err = file_error(RingBuffer::new(
                config(&path, Mode::Discard, 1, 1024, 4).append(true),
                Counter::new(),
            ));
            assert!(
                err.to_string().contains("metadata annex is damaged"),
                "{what}: {err}"
            );
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
fn concurrent_appends_from_two_threads_keep_every_record_whole() {
    let scratch = Scratch::new("records-threads");
    let path = scratch.path("t.ring");
    let per_thread = 400u64;
    let capacity = 64 * 1024;
    let memory = RingBuffer::new(
        RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(8192)
            .metadata_capacity(capacity),
        Counter::new(),
    )
    .unwrap();
    let in_file = RingBuffer::new(
        config(&path, Mode::Discard, 1, 1024, 4).metadata_capacity(capacity),
        Counter::new(),
    )
    .unwrap();
    for ring in [&memory, &in_file] {
        std::thread::scope(|s| {
            for writer in 0..2u32 {
                s.spawn(move || {
                    for seq in 0..per_thread {
                        let r = common::payload(writer, seq, 16 + (seq % 40) as usize);
                        ring.append_metadata(&r).unwrap();
                    }
                });
            }
        });
        check_interleaved(&ring.metadata_records(), per_thread);
    }
    drop(in_file);
    check_interleaved(recover_sound(&path).metadata_records(), per_thread);
}

/// Every record whole, each writer's `0..n` all there and in order.
fn check_interleaved(records: &[Vec<u8>], n: u64) {
    assert_eq!(records.len() as u64, 2 * n);
    let mut next = [0u64; 2];
    for r in records {
        let (writer, seq) = common::check(r).unwrap();
        assert_eq!(r.len(), 16 + (seq % 40) as usize);
        assert_eq!(seq, next[writer as usize], "writer {writer} out of order");
        next[writer as usize] += 1;
    }
}
