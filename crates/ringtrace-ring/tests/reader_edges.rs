//! Readers at the edges: pages swapped out under an iterator, fixups while
//! a page is half read, merges dropped part-way, losses and where they are
//! reported, payloads not fully written, and fixups racing writers.

mod common;

use common::counter_ring as ring;
use ringtrace_clock::Counter;
use ringtrace_ring::format::{self, PageHeader};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn text(payload: &[u8]) -> String {
    String::from_utf8_lossy(payload).into_owned()
}

#[test]
fn a_payload_never_shows_an_older_laps_bytes_when_not_fully_written() {
    let ring = ring(Mode::Overwrite, 64, 2);
    let b = ring.cpu_buffer(0).unwrap();
    // Fill both pages a few times over with a recognisable payload.
    for _ in 0..21 {
        ring.cpu_writer(0).write(b"SECRET!!").unwrap();
    }
    while b.read_event().is_some() {}
    ring.cpu_writer(0).reserve(8).unwrap().commit(); // nothing written
    let mut part = ring.cpu_writer(0).reserve(8).unwrap();
    assert_eq!(part.write_at(0, b"ab"), 2); // a piece only
    part.commit();
    ring.flush();
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| b.read_event())
        .map(|e| e.payload)
        .collect();
    assert_eq!(got, vec![vec![0; 8], b"ab\0\0\0\0\0\0".to_vec()]);
}

#[test]
fn an_iterator_made_before_a_page_is_consumed_yields_nothing_stale() {
    let ring = ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    ring.cpu_writer(0).write(b"AAAA-old").unwrap();
    ring.cpu_writer(0).write(b"AAAA-two").unwrap();
    ring.flush();
    assert_eq!(b.read_page().unwrap().events().count(), 2);
    ring.cpu_writer(0).write(b"BBBB-new").unwrap();
    ring.flush();
    let iter = ring.iter(0).unwrap();
    // The page goes, and the slot gets a spare that once held AAAA events.
    let page = b.read_page().unwrap();
    let payloads: Vec<Vec<u8>> = page.events().map(|e| e.1.to_vec()).collect();
    assert_eq!(payloads, vec![b"BBBB-new".to_vec()]);
    let seen: Vec<String> = iter.map(|e| text(&e.payload)).collect();
    assert!(seen.is_empty(), "{seen:?}");
}

#[test]
fn a_fixup_while_a_page_is_half_read_reads_nothing_twice() {
    let ring = ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    // Two pages whose writer vanished: a fixup takes each; the late
    // commits then complete them (and count themselves lost).
    let mut held = Vec::new();
    for tag in ["OLD0", "OLD1"] {
        let r = ring.cpu_writer(0).reserve(8).unwrap();
        ring.cpu_writer(0)
            .write(format!("{tag}-aa").as_bytes())
            .unwrap();
        ring.cpu_writer(0)
            .write(format!("{tag}-bb").as_bytes())
            .unwrap();
        ring.flush();
        assert!(b.fixup());
        held.push(r);
    }
    for mut r in held {
        r.write(b"late....");
        r.commit();
    }
    // A page taken by the reader and read in part.
    for i in 0..3 {
        ring.cpu_writer(0)
            .write(format!("P2-{i}").as_bytes())
            .unwrap();
    }
    ring.flush();
    assert_eq!(text(&b.read_event().unwrap().payload), "P2-0");
    // Then a stuck page, and enough after it that the reader falls behind
    // and the fixup moves its position past the half-read page.
    let stuck = ring.cpu_writer(0).reserve(8).unwrap();
    ring.cpu_writer(0).write(b"P3-x").unwrap();
    ring.flush();
    for p in 4..7 {
        ring.cpu_writer(0)
            .write(format!("P{p}-x").as_bytes())
            .unwrap();
        ring.flush();
    }
    assert!(b.fixup());
    let rest: Vec<String> = std::iter::from_fn(|| b.read_event())
        .map(|e| text(&e.payload))
        .collect();
    drop(stuck);
    assert_eq!(rest, ["P2-1", "P2-2", "P4-x", "P5-x", "P6-x"]);
    let stats = ring.stats();
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
}

#[test]
fn a_merge_dropped_part_way_leaves_unyielded_events_in_their_buffers() {
    let config = RingConfig::default().cpus(2).per_cpu_bytes(16 * 1024);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    ring.cpu_writer(0).write(b"cpu0").unwrap();
    ring.cpu_writer(1).write(b"cpu1").unwrap();
    let first = ring.merged().next().unwrap();
    assert_eq!(first.payload, b"cpu0");
    let rest: Vec<Vec<u8>> = ring.merged().map(|e| e.payload).collect();
    assert_eq!(rest, vec![b"cpu1".to_vec()]);
    assert_eq!(ring.stats().read, 2);
}

#[test]
fn losses_are_reported_with_the_first_event_after_them() {
    let ring = ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    ring.cpu_writer(0).write(b"A1").unwrap();
    ring.cpu_writer(0).write(b"A2").unwrap();
    ring.flush();
    let a1 = b.read_event().unwrap(); // takes the page whole
    assert_eq!((text(&a1.payload).as_str(), a1.lost_before), ("A1", 0));
    // Five more pages: the fifth overwrites P1, the page after A's.
    for p in 1..=5 {
        ring.cpu_writer(0)
            .write(format!("P{p}").as_bytes())
            .unwrap();
        ring.flush();
    }
    let order: Vec<(String, u64)> = std::iter::from_fn(|| b.read_event())
        .map(|e| (text(&e.payload), e.lost_before))
        .collect();
    assert_eq!(
        order,
        [
            ("A2".to_owned(), 0),
            ("P2".to_owned(), 1),
            ("P3".to_owned(), 0),
            ("P4".to_owned(), 0),
            ("P5".to_owned(), 0)
        ]
    );
}

#[test]
fn page_helpers_take_any_size_without_panicking() {
    assert_eq!(format::max_payload(16), 0);
    assert_eq!(format::max_payload(4096), 4096 - 40);
    let header = PageHeader {
        base_ts: 1,
        seq: 2,
        commit: 0,
        events: 0,
        skip: 0,
        lost: 0,
    };
    assert!(!header.write_to(&mut [0u8; 16]));
    let mut page = [0u8; 64];
    assert!(header.write_to(&mut page));
    assert_eq!(PageHeader::parse(&page).unwrap().seq, 2);
}

#[test]
fn fixups_racing_a_writer_and_a_reader_keep_accounting_and_leak_no_page() {
    // One writer switching pages as fast as it can (64-byte pages), one
    // thread calling fixup and reading: a fixup can land between a page
    // switch's CAS and its padding, or on a page being claimed for the next
    // lap. Neither may wedge a slot or strand a page.
    let ring = ring(Mode::Overwrite, 64, 4);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
                i = i.wrapping_add(1);
            }
        });
        s.spawn(|| {
            let b = ring.cpu_buffer(0).unwrap();
            while !stop.load(Ordering::Relaxed) {
                b.fixup();
                let _ = b.read_event();
            }
        });
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(1500) {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let stats = ring.stats();
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
    // Still writable and readable.
    let b = ring.cpu_buffer(0).unwrap();
    for i in 0..1000u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        while b.read_event().is_some() {}
    }
    // No page stranded: three stuck pages in a row can still be taken out
    // (four spare pages, one always kept back).
    ring.flush();
    while b.read_event().is_some() {}
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(ring.cpu_writer(0).reserve(4).unwrap());
        ring.cpu_writer(0).write(b"zzzz").unwrap();
        ring.flush();
        while b.read_event().is_some() {}
        assert!(b.fixup(), "a spare page was lost");
    }
    drop(held);
    let stats = ring.stats();
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
}
