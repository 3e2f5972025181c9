//! Behaviours of one CPU buffer, each pinned by a test.

mod common;

use common::ManualClock;
use ringtrace_clock::Counter;
use ringtrace_ring::{ConfigError, Mode, ReserveError, RingBuffer, RingConfig};

fn ring(mode: Mode, page: usize, pages: usize) -> RingBuffer<ManualClock> {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(page)
        .per_cpu_bytes(page * pages)
        .mode(mode);
    RingBuffer::new(config, ManualClock::at(1_000)).unwrap()
}

fn drain(ring: &RingBuffer<ManualClock>) -> Vec<Vec<u8>> {
    let b = ring.cpu_buffer(0).unwrap();
    std::iter::from_fn(|| b.read_event())
        .map(|e| e.payload)
        .collect()
}

#[test]
fn payloads_come_back_exactly_including_odd_lengths() {
    let ring = ring(Mode::Discard, 256, 4);
    let payloads: Vec<Vec<u8>> = (0..20).map(|n| (0..n as u8).collect()).collect();
    for p in &payloads {
        ring.cpu_writer(0).write(p).unwrap();
    }
    ring.flush();
    assert_eq!(drain(&ring), payloads);
}

#[test]
fn page_is_unreadable_by_page_until_every_reservation_in_it_commits() {
    let ring = ring(Mode::Discard, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    let mut first = ring.cpu_writer(0).reserve(8).unwrap();
    first.write(b"AAAAAAAA");
    ring.cpu_writer(0).write(b"BBBBBBBB").unwrap();
    b.flush();
    assert!(
        b.read_page().is_none(),
        "a page with an open reservation was handed out"
    );
    first.commit(); // committed after a later reservation: not LIFO
    let page = b.read_page().expect("complete page");
    let events: Vec<&[u8]> = page.events().map(|(_, p)| p).collect();
    assert_eq!(events, vec![&b"AAAAAAAA"[..], &b"BBBBBBBB"[..]]);
}

#[test]
fn dropped_reservation_becomes_a_discard_record_and_is_counted() {
    let ring = ring(Mode::Discard, 128, 4);
    {
        let mut r = ring.cpu_writer(0).reserve(12).unwrap();
        r.write(b"never seen!!");
        // dropped: an early return or a panic unwinding
    }
    ring.cpu_writer(0).write(b"seen").unwrap();
    ring.flush();
    assert_eq!(drain(&ring), vec![b"seen".to_vec()]);
    let s = ring.stats();
    assert_eq!((s.hit, s.discarded, s.read), (2, 1, 1));
    assert_eq!(s.hit, s.accounted());
}

#[test]
fn overwrite_mode_counts_every_dropped_event_as_overrun() {
    let ring = ring(Mode::Overwrite, 128, 2);
    for i in 0..100u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let read = drain(&ring);
    let s = ring.stats();
    assert!(s.overrun > 0);
    assert_eq!(s.read as usize, read.len());
    assert_eq!(s.hit, 100);
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    // What survives is the newest events, in order.
    let last: Vec<u32> = read
        .iter()
        .map(|p| u32::from_le_bytes(p[..4].try_into().unwrap()))
        .collect();
    assert_eq!(*last.last().unwrap(), 99);
    assert!(last.windows(2).all(|w| w[0] + 1 == w[1]));
}

#[test]
fn discard_mode_counts_failed_reservations_as_missed() {
    let ring = ring(Mode::Discard, 128, 2);
    let mut ok = 0u64;
    let mut failed = 0u64;
    for i in 0..100u32 {
        match ring.cpu_writer(0).write(&i.to_le_bytes()) {
            Ok(_) => ok += 1,
            Err(ReserveError::Full) => failed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let s = ring.stats();
    assert_eq!((s.hit, s.missed, s.overrun), (ok, failed, 0));
    assert!(failed > 0);
    let read = drain(&ring);
    // Nothing that was accepted is lost: the first `ok` events, in order.
    let got: Vec<u32> = read
        .iter()
        .map(|p| u32::from_le_bytes(p[..4].try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..ok as u32).collect::<Vec<_>>());
}

#[test]
fn timestamps_never_go_back_when_the_clock_does_and_each_fix_is_counted() {
    let ring = ring(Mode::Discard, 256, 4);
    let clock = ring.clock().clone();
    clock.set(5_000);
    ring.cpu_writer(0).write(b"t5000...").unwrap();
    clock.set(4_000); // the clock steps back
    ring.cpu_writer(0).write(b"t4000...").unwrap();
    clock.set(6_000);
    ring.cpu_writer(0).write(b"t6000...").unwrap();
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    let ts: Vec<u64> = std::iter::from_fn(|| b.read_event())
        .map(|e| e.ts)
        .collect();
    assert_eq!(ts, vec![5_000, 5_000, 6_000]);
    assert_eq!(ring.stats().ts_fixups, 1);
}

#[test]
fn large_time_gaps_are_carried_by_time_extend_records() {
    let ring = ring(Mode::Discard, 256, 4);
    let clock = ring.clock().clone();
    let gaps = [1u64, 1 << 27, (1 << 27) - 1, 1 << 40, (1 << 59) + 12345];
    let mut expect = Vec::new();
    ring.cpu_writer(0).write(b"zero").unwrap();
    expect.push(1_000);
    for gap in gaps {
        clock.advance(gap);
        ring.cpu_writer(0).write(b"next").unwrap();
        expect.push(clock.0.load(std::sync::atomic::Ordering::SeqCst));
    }
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    let ts: Vec<u64> = std::iter::from_fn(|| b.read_event())
        .map(|e| e.ts)
        .collect();
    assert_eq!(ts, expect);
}

#[test]
fn event_larger_than_a_page_is_an_error_not_a_panic() {
    let ring = ring(Mode::Discard, 128, 4);
    let err = ring.cpu_writer(0).reserve(4096).unwrap_err();
    assert!(
        matches!(err, ReserveError::TooLarge { len: 4096, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("4096"));
}

#[test]
fn lengths_near_usize_max_are_too_large_without_overflow_or_damage() {
    // Sizes computed from these wrap (or panic in a debug build) unless the
    // length is checked first; a wrapped size would pass the fits-the-page
    // test and move the write offset backwards.
    let ring = ring(Mode::Discard, 128, 4);
    ring.cpu_writer(0).write(b"before").unwrap();
    for len in [
        usize::MAX,
        usize::MAX - 3,
        usize::MAX - 11,
        usize::MAX - 64,
        u32::MAX as usize + 8,
    ] {
        let err = ring.cpu_writer(0).reserve(len).unwrap_err();
        assert!(
            matches!(err, ReserveError::TooLarge { len: l, .. } if l == len),
            "{len}: {err}"
        );
    }
    ring.cpu_writer(0).write(b"after").unwrap();
    ring.flush();
    assert_eq!(drain(&ring), vec![b"before".to_vec(), b"after".to_vec()]);
    let stats = ring.stats();
    // Each refusal counted, as too large.
    assert_eq!((stats.hit, stats.missed, stats.too_large), (2, 5, 5));
    assert_eq!(stats.hit, stats.accounted());
}

#[test]
fn bad_configuration_names_what_is_valid() {
    // Every dimension in range, but together about 8 TiB of pages: refused
    // before any allocation (not under Miri, which cannot ask the system).
    let huge = RingConfig::default()
        .cpus(4096)
        .page_size(65_536)
        .per_cpu_bytes(65_536 * 32_768);
    if !cfg!(miri) {
        let err = huge.validate().unwrap_err();
        assert!(err.to_string().contains("more than this machine"), "{err}");
    }
    let cases: [(RingConfig, &str); 4] = [
        (RingConfig::default().page_size(1000), "power of two"),
        (RingConfig::default().page_size(32), "from 64"),
        (
            RingConfig::default().page_size(4096).per_cpu_bytes(4096),
            "from 2",
        ),
        (RingConfig::default().cpus(0), "at least one"),
    ];
    for (config, says) in cases {
        let err: ConfigError = RingBuffer::new(config, Counter::new()).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn vanished_writer_page_is_skipped_by_fixup_and_its_events_counted_lost() {
    let ring = ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    ring.cpu_writer(0).write(b"before..").unwrap();
    let vanished = ring.cpu_writer(0).reserve(8).unwrap();
    std::mem::forget(vanished); // the writer died between reserve and commit
    for i in 0..15u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    // The reader cannot pass the stuck page...
    assert!(b.read_event().is_none());
    // ...until the fixup takes it out.
    assert!(b.fixup());
    let rest: Vec<Vec<u8>> = std::iter::from_fn(|| b.read_event())
        .map(|e| e.payload)
        .collect();
    assert!(!rest.is_empty());
    let s = ring.stats();
    assert_eq!(s.pages_reclaimed, 1);
    assert!(s.lost >= 1, "{s:?}");
    // The vanished reservation never ended: it is in no count, hit included.
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    assert_eq!(s.hit, 16, "{s:?}");
    assert_eq!(s.pages_quarantined, 1, "{s:?}");
}

#[test]
fn late_commit_after_fixup_counts_itself_lost() {
    let ring = ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    let mut slow = ring.cpu_writer(0).reserve(8).unwrap();
    slow.write(b"slowpoke");
    for i in 0..15u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    assert!(b.fixup());
    let lost_before = ring.stats().lost;
    slow.commit();
    let s = ring.stats();
    assert_eq!(s.lost, lost_before + 1);
    let _ = std::iter::from_fn(|| b.read_event()).count();
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
}

#[test]
fn lost_events_are_reported_where_they_happened() {
    let ring = ring(Mode::Overwrite, 128, 2);
    let b = ring.cpu_buffer(0).unwrap();
    ring.cpu_writer(0).write(b"first...").unwrap();
    assert_eq!(b.read_event().unwrap().lost_before, 0);
    for i in 0..50u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let next = b.read_event().unwrap();
    assert_eq!(next.lost_before, ring.stats().overrun);
    assert!(next.lost_before > 0);
}

#[test]
fn read_page_takes_whole_pages_that_decode_on_their_own() {
    let ring = ring(Mode::Discard, 128, 4);
    for i in 0..10u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    let mut seen = Vec::new();
    while let Some(page) = b.read_page() {
        let h = page.header();
        assert_eq!(h.events as usize, page.events().count());
        // Decode from the bytes alone, as a file reader would.
        let cursor = ringtrace_ring::format::RecordCursor::new(&page.bytes).unwrap();
        for r in cursor {
            if let ringtrace_ring::format::Record::Event { payload, .. } = r.unwrap() {
                seen.push(u32::from_le_bytes(payload.try_into().unwrap()));
            }
        }
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    assert_eq!(ring.stats().read, 10);
}

#[test]
fn iterator_does_not_consume_and_sees_what_a_reader_then_reads() {
    let ring = ring(Mode::Overwrite, 128, 4);
    for i in 0..15u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let b = ring.cpu_buffer(0).unwrap();
    let _ = b.read_event(); // part-consumed
    let iterated: Vec<Vec<u8>> = ring.iter(0).unwrap().map(|e| e.payload).collect();
    let read = drain(&ring);
    assert_eq!(iterated, read);
}

#[test]
fn stuck_page_is_taken_out_by_the_reader_after_the_bounded_wait() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(128)
        .per_cpu_bytes(128 * 4)
        .fixup_after(Some(std::time::Duration::from_millis(20)));
    let ring = RingBuffer::new(config, ManualClock::at(1)).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap()); // a writer that died
    for i in 0..15u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    assert!(
        b.read_event().is_none(),
        "read past a page with an open reservation"
    );
    std::thread::sleep(std::time::Duration::from_millis(40));
    let rest: Vec<u32> = std::iter::from_fn(|| b.read_event())
        .map(|e| u32::from_le_bytes(e.payload.try_into().unwrap()))
        .collect();
    assert!(
        !rest.is_empty(),
        "the reader never moved past the stuck page"
    );
    assert_eq!(ring.stats().pages_reclaimed, 1);
}

#[test]
fn no_fixup_happens_on_its_own_when_the_bound_is_off() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(128)
        .per_cpu_bytes(128 * 4)
        .fixup_after(None);
    let ring = RingBuffer::new(config, ManualClock::at(1)).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap());
    for i in 0..15u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    for _ in 0..3 {
        assert!(b.read_event().is_none());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(ring.stats().pages_reclaimed, 0);
    assert!(b.fixup(), "an explicit fixup still works");
}

#[test]
fn iterator_detects_pages_overwritten_under_it_and_yields_no_torn_event() {
    let ring = ring(Mode::Overwrite, 128, 2);
    for i in 0..20u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let mut it = ring.iter(0).unwrap();
    let first = it.next().unwrap();
    // Lap the ring twice while the iterator holds its place.
    for i in 100..160u32 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let rest: Vec<u32> = it
        .by_ref()
        .map(|e| u32::from_le_bytes(e.payload.try_into().unwrap()))
        .collect();
    assert!(it.overwritten_pages() > 0, "the overwrite went unnoticed");
    // Whatever it still yields is whole, in order, and newer than the first.
    let first = u32::from_le_bytes(first.payload.try_into().unwrap());
    assert!(
        rest.iter().all(|&v| v > first && !(20..100).contains(&v)),
        "{rest:?}"
    );
    assert!(rest.windows(2).all(|w| w[0] < w[1]), "{rest:?}");
}

#[test]
#[allow(deprecated)]
fn the_deprecated_write_on_and_reserve_on_still_write_to_the_chosen_cpu() {
    let ring = RingBuffer::new(
        RingConfig::default().cpus(2).per_cpu_bytes(16 * 1024),
        Counter::new(),
    )
    .unwrap();
    ring.write_on(1, b"whole").unwrap();
    let mut r = ring.reserve_on(3, 6).unwrap(); // 3 modulo 2: CPU 1
    r.write(b"pieces");
    r.commit();
    assert!(ring.cpu_buffer(0).unwrap().read_event().is_none());
    let b = ring.cpu_buffer(1).unwrap();
    assert_eq!(b.read_event().unwrap().payload, b"whole");
    assert_eq!(b.read_event().unwrap().payload, b"pieces");
}
