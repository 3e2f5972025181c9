//! A killed writer, torn tails and damaged chunks: what can be read is,
//! what cannot is said, and nothing panics.

mod common;

use common::*;
use proptest::prelude::*;
use ringtrace_session::{Compression, ProcessExit, Session, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;
use std::path::Path;

/// A session of one process, one CPU: pages in two finished chunks and an
/// open one, the writer dropped unfinished (as if killed: every append is
/// one write, nothing is buffered). Returns the events written, per chunk.
fn killed_session(dir: &Path, compression: Compression) -> Vec<Vec<(u64, Vec<u8>)>> {
    let session = SessionWriter::create(
        dir,
        SessionOptions::default()
            .rotate_size(1000)
            .compression(compression),
    )
    .unwrap();
    let ring = ring(1);
    let mut process = session.add_process(info(&ring, 3, 4)).unwrap();
    let pages = pages(&ring, 0, &payloads(1, 110));
    assert!(pages.len() >= 10);
    let mut per_chunk = Vec::new();
    for chunk in pages[..10].chunks(4) {
        for p in chunk {
            process.append_page(0, &p.bytes).unwrap();
        }
        per_chunk.push(events_of(chunk));
    }
    process.append_metadata_record(b"one").unwrap();
    process.append_metadata_record(b"two").unwrap();
    std::mem::forget(process);
    std::mem::forget(session);
    per_chunk
}

fn events(read: &Session) -> Vec<(u64, Vec<u8>)> {
    read.recoveries()[0].cpus[0]
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect()
}

#[test]
fn a_killed_writers_session_reads_back_to_its_last_append() {
    let tmp = TempDir::new("session-killed");
    let dir = tmp.path().join("s");
    let per_chunk = killed_session(&dir, Compression::None);
    let cpu = dir.join("3-4/cpu0");
    assert!(cpu.join("00000002.open").exists());
    let read = Session::open(&dir).unwrap();
    assert!(!read.finished());
    assert_eq!(read.processes()[0].exit, None);
    assert_eq!(events(&read), per_chunk.concat());
    assert_eq!(
        read.recoveries()[0].metadata_records(),
        [b"one".to_vec(), b"two".to_vec()]
    );
    assert!(
        !read.has_problems(),
        "{:?}",
        read.recoveries()[0].cpus[0].problems
    );
}

#[test]
fn a_torn_open_chunk_reads_up_to_its_last_whole_entry() {
    let tmp = TempDir::new("session-torn-open");
    let dir = tmp.path().join("s");
    let per_chunk = killed_session(&dir, Compression::None);
    let open = dir.join("3-4/cpu0/00000002.open");
    let len = std::fs::metadata(&open).unwrap().len();
    // Two pages of 256 bytes and their prefixes in the open chunk; cut the
    // second in the middle.
    let f = std::fs::OpenOptions::new().write(true).open(&open).unwrap();
    f.set_len(len - 100).unwrap();
    let read = Session::open(&dir).unwrap();
    let got = events(&read);
    let want = per_chunk.concat();
    // The finished chunks and the open chunk's first page: not its second.
    assert!(got.len() > per_chunk[..2].concat().len());
    assert!(got.len() < want.len());
    assert_eq!(got, want[..got.len()]);
    assert!(!read.has_problems(), "a torn tail is not damage");
}

#[test]
fn a_truncated_annex_reads_its_whole_records() {
    let tmp = TempDir::new("session-torn-annex");
    let dir = tmp.path().join("s");
    killed_session(&dir, Compression::None);
    let annex = dir.join("3-4/annex");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&annex)
        .unwrap();
    f.set_len(4 + 3 + 4 + 1).unwrap();
    let read = Session::open(&dir).unwrap();
    assert_eq!(read.recoveries()[0].metadata_records(), [b"one".to_vec()]);
}

#[test]
fn a_corrupt_finished_chunk_is_a_problem_of_its_cpu_and_the_rest_reads() {
    for compression in [Compression::None, Compression::Zstd { level: 1 }] {
        if compression != Compression::None && !cfg!(feature = "zstd") {
            continue;
        }
        let tmp = TempDir::new("session-corrupt-chunk");
        let dir = tmp.path().join("s");
        let per_chunk = killed_session(&dir, compression);
        let chunk = dir.join("3-4/cpu0/00000000.chunk");
        let mut bytes = std::fs::read(&chunk).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&chunk, &bytes).unwrap();
        let read = Session::open(&dir).unwrap();
        assert_eq!(events(&read), per_chunk[1..].concat());
        let problems = &read.recoveries()[0].cpus[0].problems;
        assert!(
            problems.iter().any(|p| p.contains("00000000.chunk")),
            "{problems:?}"
        );
        assert!(read.has_problems());
        // Bad magic, and a chunk cut short: each said.
        std::fs::write(&chunk, b"nothing like a chunk").unwrap();
        let read = Session::open(&dir).unwrap();
        assert!(read.recoveries()[0].cpus[0].problems[0].contains("shorter than a chunk header"));
        let second = dir.join("3-4/cpu0/00000001.chunk");
        let bytes = std::fs::read(&second).unwrap();
        std::fs::write(&second, &bytes[..bytes.len() / 2]).unwrap();
        let read = Session::open(&dir).unwrap();
        assert_eq!(events(&read), per_chunk[2..].concat());
        assert_eq!(read.recoveries()[0].cpus[0].problems.len(), 2);
    }
}

#[test]
fn a_missing_or_corrupt_index_is_an_error_naming_it() {
    let tmp = TempDir::new("session-bad-index");
    let dir = tmp.path().join("s");
    killed_session(&dir, Compression::None);
    let index = dir.join("session");
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&index, &bytes).unwrap();
    let err = Session::open(&dir).unwrap_err();
    assert!(
        matches!(err, ringtrace_session::OpenError::CorruptIndex { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&index.display().to_string()));
    bytes[20] ^= 1;
    bytes[8] = 2;
    std::fs::write(&index, &bytes).unwrap();
    let err = Session::open(&dir).unwrap_err();
    assert!(
        matches!(
            err,
            ringtrace_session::OpenError::Version {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    std::fs::remove_file(&index).unwrap();
    let err = Session::open(&dir).unwrap_err();
    assert!(
        matches!(err, ringtrace_session::OpenError::NotASession { .. }),
        "{err}"
    );
}

#[test]
fn a_process_finished_after_a_crash_of_the_rest_reads() {
    // The writer finishes one process, the session is never finished.
    let tmp = TempDir::new("session-half-finished");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, SessionOptions::default()).unwrap();
    let ring = ring(1);
    let mut a = session.add_process(info(&ring, 1, 1)).unwrap();
    let mut b = session.add_process(info(&ring, 2, 2)).unwrap();
    let pages = pages(&ring, 0, &payloads(1, 10));
    a.append_page(0, &pages[0].bytes).unwrap();
    b.append_page(0, &pages[0].bytes).unwrap();
    a.finish(ProcessExit::DiedWithRing).unwrap();
    drop(b);
    drop(session);
    let read = Session::open(&dir).unwrap();
    assert_eq!(read.processes().len(), 2);
    assert_eq!(read.processes()[0].exit, Some(ProcessExit::DiedWithRing));
    assert_eq!(read.processes()[1].exit, None);
    for r in read.recoveries() {
        assert_eq!(r.cpus[0].events.len(), pages[0].events().count());
    }
}

fn fixture() -> (TempDir, Vec<u8>, Vec<u8>) {
    let tmp = TempDir::new("session-proptest");
    let dir = tmp.path().join("s");
    let compression = if cfg!(feature = "zstd") {
        Compression::Zstd { level: 1 }
    } else {
        Compression::None
    };
    killed_session(&dir, compression);
    let chunk = std::fs::read(dir.join("3-4/cpu0/00000000.chunk")).unwrap();
    let open = std::fs::read(dir.join("3-4/cpu0/00000002.open")).unwrap();
    (tmp, chunk, open)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn damaged_chunks_and_random_bytes_never_panic_the_reader(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..8),
        cut in any::<prop::sample::Index>(),
        cut_it in any::<bool>(),
        junk in proptest::collection::vec(any::<u8>(), 0..600),
        which in 0u8..3,
    ) {
        let (tmp, chunk, open) = fixture();
        let dir = tmp.path().join("s");
        let (name, mut bytes) = match which {
            0 => ("00000000.chunk", chunk),
            1 => ("00000002.open", open),
            _ => ("00000001.chunk", junk),
        };
        for (at, x) in &flips {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= x;
            }
        }
        if cut_it && !bytes.is_empty() {
            bytes.truncate(cut.index(bytes.len()));
        }
        std::fs::write(dir.join("3-4/cpu0").join(name), &bytes).unwrap();
        let read = Session::open(&dir).unwrap();
        let events = read.recoveries()[0].cpus[0].events.len();
        prop_assert!(events <= 110);
    }
}
