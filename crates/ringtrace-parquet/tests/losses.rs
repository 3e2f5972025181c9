//! The losses table counts what the Perfetto and Chrome exports count,
//! and names the cause where the recovery records one.

mod common;

use common::*;
use ringtrace_export::export::{export_trace, Format};
use ringtrace_export::{Alignment, Trace};
use ringtrace_parquet::{write_parquet, ParquetOptions};

#[test]
fn losses_sum_to_what_the_perfetto_and_chrome_exports_count() {
    let dir = TempDir::new("parquet-losses");
    let path = dir.path().join("small.ring");
    let config = config(1, 1024)
        .page_size(256)
        .per_cpu_bytes(1024)
        .quarantine_pages(2)
        .file(&path);
    let clock = NsClock::ns(1_000_000);
    let ring = ringtrace_ring::RingBuffer::new(config, clock.clone()).unwrap();
    for n in 0..300 {
        clock.advance(1237);
        ring.cpu_writer(0)
            .write(&page_read(100, n, "filler"))
            .unwrap();
    }
    drop(ring);
    let recovery = ringtrace_ring::file::recover(&path).unwrap();
    let trace = Trace::single(&recovery);
    let out = dir.path().join("out");
    let done = write_parquet(&trace, &out, &ParquetOptions::default()).unwrap();
    let perfetto = export_trace(&trace, Format::Perfetto, &dir.path().join("t.pftrace")).unwrap();
    let chrome = export_trace(&trace, Format::Chrome, &dir.path().join("t.json")).unwrap();
    assert!(done.lost > 200, "the ring wrapped: {}", done.lost);
    assert_eq!(done.lost, perfetto.lost);
    assert_eq!(done.lost, chrome.lost);

    let losses = read(&out, "losses").rows;
    let sum: i64 = losses.iter().map(|r| long(r, "count")).sum();
    assert_eq!(sum as u64, done.lost);
    assert!(losses
        .iter()
        .all(|r| string(r, "cause").as_deref() == Some("lost")));
    // Each loss is at the event that carries it.
    let events = read(&out, "events").rows;
    let carried: Vec<(i64, i64)> = events
        .iter()
        .filter(|r| long(r, "lost_before") > 0)
        .map(|r| (long(r, "time_ns"), long(r, "lost_before")))
        .collect();
    let rows: Vec<(i64, i64)> = losses
        .iter()
        .map(|r| (long(r, "time_ns"), long(r, "count")))
        .collect();
    assert_eq!(rows, carried);
    let processes = read(&out, "processes").rows;
    assert_eq!(long(&processes[0], "lost") as u64, done.lost);
}

#[test]
fn a_session_read_whole_gives_each_loss_its_recorded_cause() {
    let dir = TempDir::new("parquet-causes");
    let session_dir = dir.path().join("session");
    session(&session_dir, 10, true);
    let read_whole = ringtrace_session::Session::open(&session_dir).unwrap();
    let recoveries = read_whole.recoveries();
    let trace = Trace::new(&recoveries, Alignment::SharedClock).unwrap();
    let out = dir.path().join("out");
    let done = write_parquet(&trace, &out, &ParquetOptions::default()).unwrap();
    let perfetto = export_trace(&trace, Format::Perfetto, &dir.path().join("t.pftrace")).unwrap();
    assert_eq!((done.lost, perfetto.lost), (5, 5));
    let losses = read(&out, "losses").rows;
    let got: Vec<(i32, i64, String)> = losses
        .iter()
        .map(|r| (int(r, "cpu"), long(r, "count"), string(r, "cause").unwrap()))
        .collect();
    // The fillers alternate from CPU 0: its first comes 10 ns before CPU 1's.
    assert_eq!(
        got,
        [(0, 2, "overwritten".into()), (1, 3, "refused".into())]
    );
    assert_eq!(
        long(&losses[1], "time_ns") - long(&losses[0], "time_ns"),
        10
    );
    assert!(losses.iter().all(|r| long(r, "pid") == 4242));
}
