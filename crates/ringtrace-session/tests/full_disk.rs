//! A full file system: appends fail with a typed error, what could not be
//! written is counted (in the summary and the index), and what was
//! written before reads back.

mod common;

use common::*;
use ringtrace_session::{
    Compression, LossCause, ProcessExit, Session, SessionOptions, SessionWriter, WriteError,
};

#[test]
fn writing_past_a_full_disk_is_a_typed_error_and_counted() {
    ringtrace_testkit::on_tmpfs("session-full", "256k", fill);
}

/// A session in `mount/s` with one process of a one-CPU ring, rotating
/// every 16 KiB, uncompressed.
fn small_session(
    mount: &std::path::Path,
) -> (
    std::path::PathBuf,
    SessionWriter,
    ringtrace_ring::RingBuffer<ringtrace_clock::Counter>,
    ringtrace_session::ProcessWriter,
) {
    let dir = mount.join("s");
    let options = SessionOptions::default()
        .rotate_size(16 * 1024)
        .compression(Compression::None);
    let session = SessionWriter::create(&dir, options).unwrap();
    let ring = ring(1);
    let process = session.add_process(info(&ring, 8, 8)).unwrap();
    (dir, session, ring, process)
}

fn fill(mount: &std::path::Path) {
    let (dir, session, ring, mut process) = small_session(mount);
    let mut written = Vec::new();
    let mut failed_pages = 0u64;
    let mut failed_events = 0u64;
    let mut first_error = None;
    for round in 0..200u32 {
        let pages = pages(&ring, 0, &payloads(round as u8, 40));
        for p in &pages {
            match process.append_page(0, &p.bytes) {
                Ok(()) => written.extend(events_of(std::slice::from_ref(p))),
                Err(e) => {
                    failed_pages += 1;
                    failed_events += p.events().count() as u64;
                    first_error.get_or_insert(e);
                }
            }
        }
        if failed_pages > 20 {
            break;
        }
    }
    let Some(err) = first_error else {
        panic!("256 KiB never filled");
    };
    match &err {
        WriteError::NoSpace { path, unwritten } => {
            assert!(path.starts_with(&dir), "{}", path.display());
            assert_eq!(unwritten.pages, 1, "the first failure counts itself");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("no space left"), "{err}");
    // A loss entry and a record cannot be written either: counted.
    let loss = process.append_loss(0, 1, 2, LossCause::Refused);
    let record = process.append_metadata_record(&[1; 4096]);
    let summary = process.summary();
    assert_eq!(summary.totals.unwritten.pages, failed_pages);
    assert_eq!(summary.totals.unwritten.events, failed_events);
    assert_eq!(summary.totals.events, written.len() as u64);
    if loss.is_err() {
        assert_eq!(summary.totals.unwritten.losses, 1);
    }
    if record.is_err() {
        assert_eq!(summary.totals.unwritten.metadata_records, 1);
    }
    // Finishing may fail too (the last chunk cannot be built): its pages
    // stay in the open chunk.
    let _ = process.finish(ProcessExit::Exited(0));
    let _ = session.finish();
    let read = Session::open(&dir).unwrap();
    let got: Vec<_> = read.recoveries()[0].cpus[0]
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect();
    assert_eq!(got, written, "what was written before reads back");
    let counted = read.processes()[0].written_totals;
    assert_eq!(
        counted.unwritten.pages, failed_pages,
        "the index says what was not written"
    );
    assert_eq!(counted.unwritten.events, failed_events);
}

/// A drainer's batch that meets a full file system: the error names the
/// file, and every event it took from the ring is either written or
/// counted as unwritten, none lost without a count.
#[test]
fn a_drained_batch_past_a_full_disk_counts_every_event() {
    ringtrace_testkit::on_tmpfs("session-full-batch", "128k", fill_by_rounds);
}

fn fill_by_rounds(mount: &std::path::Path) {
    let (_dir, _session, ring, mut process) = small_session(mount);
    let mut drainer = ringtrace_session::Drainer::new(1);
    let (mut fired, mut full_at) = (0u64, None);
    for round in 0..200u32 {
        for p in payloads(round as u8, 100) {
            ring.cpu_writer(0).write(&p).unwrap();
            fired += 1;
        }
        ring.flush();
        // A full disk is no error: the round goes on, counting.
        let drained = drainer
            .round(ring.cpu_buffers(), &mut Vec::new(), &mut process, |_, _| {})
            .unwrap();
        if drained.no_space {
            full_at.get_or_insert(round);
        }
        // A few rounds past the first that found no room: each drains
        // and counts what it cannot write.
        if full_at.is_some_and(|at| round >= at + 3) {
            break;
        }
    }
    assert!(full_at.is_some(), "128 KiB never filled");
    // What the ring still holds was never taken from it.
    let left: u64 = std::iter::from_fn(|| ring.cpu_buffer(0).unwrap().read_page())
        .map(|p| p.events().count() as u64)
        .sum();
    let totals = process.summary().totals;
    assert!(totals.unwritten.pages > 0 && totals.unwritten.events > 0);
    assert_eq!(
        totals.events + totals.unwritten.events + left,
        fired,
        "every event fired is written, counted unwritten, or still in the ring"
    );
}
