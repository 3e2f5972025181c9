//! Regression tests for five ring defects an independent black-box check
//! found: a torn event from the non-consuming iterator, fixups that stop
//! working for a reader that only takes pages, a buffer wedged by dead
//! writers, losses reported on the wrong page, and a clock wrapping past
//! `u64::MAX`. Each test fails on the code before the fix; tests/stress.rs
//! pins the concurrent half of the loss reporting, tests/loom.rs models
//! the iterator and the loss reporting against a concurrent writer.

mod common;

use common::{counter_ring, ManualClock};
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer};
use ringtrace_clock::Counter;
use ringtrace_ring::{Mode, ReserveError, RingBuffer, RingConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn id(payload: &[u8]) -> u64 {
    u64::from_le_bytes(payload[..8].try_into().unwrap())
}

// 1. The iterator and an open reservation.

static TORN: OnceLock<RingBuffer<Counter>> = OnceLock::new();
static HANDLER_WRITES: AtomicU64 = AtomicU64::new(0);

#[test]
#[cfg_attr(miri, ignore = "signals and a timer thread")]
fn iterator_never_yields_a_reservation_that_is_still_open() {
    // The black-box setup: a 1-CPU overwrite ring of four 1 KiB pages,
    // filled over laps, so every page holds an older lap's headers. The
    // main thread holds a 60-byte reservation with only part of it
    // written and iterates; a timer signal's handler writes same-sized
    // events in the middle of the iteration, which is what makes the
    // committed count equal a frontier read before it.
    let ring = TORN.get_or_init(|| counter_ring(Mode::Overwrite, 1024, 4));
    for _ in 0..200 {
        ring.cpu_writer(0).write(&[0xAA; 60]).unwrap();
    }
    let signal = libc::SIGRTMIN() + 9;
    interrupt::install_irq_handler(signal, |_| {
        if let Some(ring) = TORN.get() {
            if ring.cpu_writer(0).write(&[0xBB; 60]).is_ok() {
                HANDLER_WRITES.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
    .unwrap();
    let timer = IrqTimer::start(current_thread_id(), signal, Duration::from_micros(23)).unwrap();
    let deadline =
        Instant::now() + Duration::from_millis(if cfg!(debug_assertions) { 1500 } else { 600 });
    let mut rounds = 0u64;
    let mut torn = None;
    while Instant::now() < deadline && torn.is_none() {
        let Ok(mut held) = ring.cpu_writer(0).reserve(60) else {
            // The held page of the last round is still being lapped onto.
            std::thread::yield_now();
            continue;
        };
        held.write_at(0, &[0xCC; 56]);
        let round_end = Instant::now() + Duration::from_micros(400);
        while Instant::now() < round_end && torn.is_none() {
            torn = ring.iter(0).unwrap().find(|e| e.payload.contains(&0xCC));
        }
        // Committed only now, and with other bytes: 0xCC never was.
        held.write(&[0xDD; 60]);
        held.commit();
        rounds += 1;
    }
    drop(timer);
    interrupt::uninstall_irq_handler(signal).unwrap();
    assert!(
        HANDLER_WRITES.load(Ordering::Relaxed) > 0,
        "the timer never fired"
    );
    assert!(rounds > 0);
    if let Some(e) = torn {
        panic!(
            "the iterator yielded an uncommitted reservation: {:02x?}",
            e.payload
        );
    }
}

// 2. Fixups for a reader that only takes pages.

#[test]
fn a_reader_that_only_takes_pages_keeps_recovering_from_fixups() {
    let ring = counter_ring(Mode::Discard, 256, 8);
    let b = ring.cpu_buffer(0).unwrap();
    for round in 0..12u64 {
        let held = ring.cpu_writer(0).reserve(8).unwrap();
        for i in 0..8u64 {
            ring.cpu_writer(0)
                .write(&(round * 100 + i).to_le_bytes())
                .unwrap();
        }
        ring.flush();
        while b.read_page().is_some() {}
        assert!(b.fixup(), "round {round}: the fixup found no page to use");
        // The late commit completes the quarantined page.
        held.commit();
        let s = ring.stats();
        assert_eq!(s.hit, s.accounted(), "round {round}: {s:?}");
    }
    assert_eq!(ring.stats().pages_quarantined, 0);
}

// 3. Dead writers.

/// Writes events until the state leaves the current page, then reads
/// everything readable.
fn fill_page_and_read(ring: &RingBuffer<Counter>, next: &mut u64, read: &mut Vec<u64>) {
    let b = ring.cpu_buffer(0).unwrap();
    for _ in 0..20 {
        ring.cpu_writer(0)
            .write(&next.to_le_bytes())
            .unwrap_or_else(|e| panic!("event {next}: {e}"));
        *next += 1;
    }
    while let Some(e) = b.read_event() {
        read.push(id(&e.payload));
    }
}

#[test]
fn writers_that_die_mid_event_never_wedge_a_buffer() {
    // 256-byte pages hold 18 events of 8 bytes, so each round's 20 events
    // close the page holding the dead reservation.
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .mode(Mode::Overwrite)
        // The default, except under Miri, where it is smaller.
        .quarantine_pages(64)
        .fixup_after(Some(Duration::from_millis(1)));
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    let (mut next, mut read) = (0u64, Vec::new());
    for dead in 0..40 {
        std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap()); // the writer dies
        fill_page_and_read(&ring, &mut next, &mut read);
        // The bounded wait passes; the reader takes the page out.
        std::thread::sleep(Duration::from_millis(2));
        while let Some(e) = b.read_event() {
            read.push(id(&e.payload));
        }
        let s = ring.stats();
        assert_eq!(s.pages_reclaimed, dead + 1, "dead writer {dead}: {s:?}");
        assert_eq!(s.hit, s.accounted(), "dead writer {dead}: {s:?}");
    }
    assert!(read.windows(2).all(|w| w[0] < w[1]), "out of order");
    let s = ring.stats();
    assert_eq!(s.missed, 0, "writes failed: {s:?}");
    assert_eq!(s.read + s.lost + s.overrun + s.entries, next, "{s:?}");
    assert_eq!(s.pages_quarantined, 40, "{s:?}");
}

#[test]
fn the_dead_writer_limit_is_configurable_reported_and_not_silent() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .quarantine_pages(2)
        .fixup_after(None)
        // Writers stop at the stuck page rather than step over it, so
        // that the limit shows to them too.
        .step_over(false);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    let (mut next, mut read) = (0u64, Vec::new());
    for dead in 0..2 {
        std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap());
        fill_page_and_read(&ring, &mut next, &mut read);
        assert!(b.fixup(), "dead writer {dead}");
    }
    std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap());
    fill_page_and_read(&ring, &mut next, &mut read);
    assert!(!b.fixup(), "a third page was quarantined past the limit");
    assert!(!b.fixup());
    let s = ring.stats();
    assert_eq!((s.pages_quarantined, s.fixups_refused), (2, 1), "{s:?}");
    // A reservation that cannot be placed says why.
    let busy = (0..100)
        .map(|_| ring.cpu_writer(0).reserve(8).map(|r| r.commit()))
        .find_map(Result::err);
    assert_eq!(busy, Some(ReserveError::Busy));
}

#[test]
fn a_late_commit_to_a_quarantined_page_releases_it() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .quarantine_pages(1)
        .fixup_after(None);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    let (mut next, mut read) = (0u64, Vec::new());
    for round in 0..10 {
        let slow = ring.cpu_writer(0).reserve(8).unwrap();
        fill_page_and_read(&ring, &mut next, &mut read);
        assert!(b.fixup(), "round {round}");
        assert_eq!(ring.stats().pages_quarantined, 1, "round {round}");
        slow.commit(); // counted lost, and the page comes back
        assert_eq!(ring.stats().pages_quarantined, 0, "round {round}");
    }
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    assert_eq!(s.fixups_refused, 0, "{s:?}");
}

#[test]
fn a_forgotten_reservation_keeps_the_accounting_identity_after_the_fixup() {
    let ring = counter_ring(Mode::Overwrite, 128, 4);
    let b = ring.cpu_buffer(0).unwrap();
    ring.cpu_writer(0).write(b"before..").unwrap();
    std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap());
    for i in 0..15u64 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    assert!(b.fixup());
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    while b.read_event().is_some() {}
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    assert_eq!(s.hit, 16, "a reservation that never ended is not a hit");
}

// 4. Where losses are reported.

#[test]
fn read_page_reports_no_loss_on_the_rest_of_a_page_read_by_event() {
    // 256-byte pages of 18 eight-byte events; four pages.
    let ring = counter_ring(Mode::Overwrite, 256, 4);
    let b = ring.cpu_buffer(0).unwrap();
    for i in 0..72u64 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    ring.flush();
    let first = b.read_event().unwrap(); // takes page 0 whole
    assert_eq!((id(&first.payload), first.lost_before), (0, 0));
    // Lap the ring while page 0 is out: pages after it are overwritten.
    for i in 72..200u64 {
        ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
    }
    let page = b.read_page().unwrap();
    let rest: Vec<u64> = page.events().map(|(_, p)| id(p)).collect();
    assert_eq!(rest, (1..18).collect::<Vec<_>>());
    assert_eq!(page.header().lost, 0, "the loss lies after this page");
    let next = b.read_event().unwrap();
    assert_eq!(
        next.lost_before,
        id(&next.payload) - 18,
        "the loss is reported on the first event after it"
    );
    let s = ring.stats();
    assert_eq!(s.overrun, next.lost_before, "{s:?}");
}

// 5. A clock that wraps.

#[test]
fn a_clock_that_wraps_past_u64_max_never_makes_time_go_back() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(1024);
    let clock = ManualClock::at(u64::MAX - 1000);
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    let mut stamps = vec![ring.cpu_writer(0).write(b"a").unwrap()];
    clock.set(u64::MAX);
    stamps.push(ring.cpu_writer(0).write(b"b").unwrap());
    clock.set(5);
    stamps.push(ring.cpu_writer(0).write(b"c").unwrap());
    assert_eq!(stamps, [u64::MAX - 1000, u64::MAX, u64::MAX]);
    assert_eq!(ring.stats().ts_fixups, 1);
    ring.flush();
    stamps.push(ring.cpu_writer(0).write(b"d").unwrap());
    let b = ring.cpu_buffer(0).unwrap();
    let read: Vec<u64> = std::iter::from_fn(|| b.read_event())
        .map(|e| e.ts)
        .collect();
    assert_eq!(read, [u64::MAX - 1000, u64::MAX, u64::MAX, u64::MAX]);
    assert_eq!(ring.stats().ts_fixups, 2);
}

#[test]
fn forgotten_reservations_in_discard_mode_keep_the_identity_at_every_step() {
    // Discard mode, reserve() on whatever CPU the thread is on, as the
    // issue's reproduction does: the identity holds after the forget,
    // after the fixup and after every read, and the forgotten
    // reservations are in no count at all.
    let config = RingConfig::default()
        .cpus(1)
        .mode(Mode::Discard)
        .page_size(128)
        .per_cpu_bytes(128 * 4)
        .fixup_after(None);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    let mut written = 0u64;
    for round in 0..3 {
        std::mem::forget(ring.reserve(8).unwrap());
        let s = ring.stats();
        assert_eq!(
            s.hit,
            s.accounted(),
            "round {round}, after the forget: {s:?}"
        );
        // Write until the page with the hole closes and the fixup takes it.
        let mut taken = false;
        for i in 0..64u64 {
            if ring.write(&i.to_le_bytes()).is_ok() {
                written += 1;
            }
            if b.fixup() {
                taken = true;
                break;
            }
        }
        assert!(
            taken,
            "round {round}: the page with the hole was never taken"
        );
        let s = ring.stats();
        assert_eq!(
            s.hit,
            s.accounted(),
            "round {round}, after the fixup: {s:?}"
        );
        while b.read_event().is_some() {
            let s = ring.stats();
            assert_eq!(s.hit, s.accounted(), "round {round}, while reading: {s:?}");
        }
    }
    let s = ring.stats();
    assert_eq!(s.hit, written, "a forgotten reservation was counted: {s:?}");
    assert_eq!(
        s.hit,
        s.read + s.lost,
        "everything ended read or lost: {s:?}"
    );
}
