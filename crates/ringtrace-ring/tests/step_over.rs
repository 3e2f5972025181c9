//! Overwrite mode steps over a page whose writer has not committed (a
//! thread preempted between reserve and commit): the writers coming round
//! to it are not refused, and the sleeper's event, when it lands, counts
//! as overrun. Runs on both write paths (`RINGTRACE_WRITE_PATH`).

mod common;

use common::counter_ring;
use ringtrace_ring::{file, format::max_payload, Mode, ReserveError, RingBuffer, RingConfig};

const PAGE: usize = 256;

/// Writes `n` 16-byte events numbered from `first`; panics on a refusal.
fn write_all<C: ringtrace_clock::Clock>(ring: &RingBuffer<C>, first: u64, n: u64) {
    for i in first..first + n {
        let mut p = [0u8; 16];
        p[..8].copy_from_slice(&i.to_le_bytes());
        ring.cpu_writer(0)
            .write(&p)
            .unwrap_or_else(|e| panic!("event {i} refused: {e}"));
    }
}

/// The numbers of the events left in the ring, in the order read.
fn read_numbers<C: ringtrace_clock::Clock>(ring: &RingBuffer<C>) -> Vec<u64> {
    let b = ring.cpu_buffer(0).unwrap();
    std::iter::from_fn(|| b.read_event())
        .map(|e| u64::from_le_bytes(e.payload[..8].try_into().unwrap()))
        .collect()
}

#[test]
fn a_page_held_by_a_sleeping_writer_is_stepped_over_and_its_event_counts_as_overrun() {
    let ring = counter_ring(Mode::Overwrite, PAGE, 4);
    let mut held = ring.cpu_writer(0).reserve(16).unwrap();
    held.write(&u64::MAX.to_le_bytes());
    // Ten laps of a four-page ring, past the held page every lap.
    write_all(&ring, 0, 400);
    let s = ring.stats();
    assert_eq!((s.missed, s.busy, s.pages_stepped_over), (0, 0, 1), "{s:?}");
    held.commit();
    let s = ring.stats();
    // The sleeper's event is in `hit` and in `overrun`, nothing lost.
    assert_eq!((s.hit, s.lost), (401, 0), "{s:?}");
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    let left = read_numbers(&ring);
    assert!(!left.is_empty() && !left.contains(&u64::MAX));
    assert!(left.windows(2).all(|w| w[1] == w[0] + 1), "{left:?}");
    assert_eq!(*left.last().unwrap(), 399, "the newest events remain");
    assert_eq!(ring.stats().overrun, 401 - left.len() as u64);
}

#[test]
fn stepped_over_pages_come_back_once_their_last_commit_lands() {
    let ring = counter_ring(Mode::Overwrite, PAGE, 4);
    // More step-overs than the pool has spare pages (64; 8 under Miri):
    // each held page is committed before the next is held, so it must
    // have come back to the pool to be used again.
    let rounds = if cfg!(miri) { 12 } else { 200 };
    for round in 0..rounds {
        let held = ring.cpu_writer(0).reserve(16).unwrap();
        write_all(&ring, round * 100, 100);
        held.commit();
    }
    let s = ring.stats();
    assert_eq!((s.missed, s.pages_stepped_over), (0, rounds), "{s:?}");
    assert_eq!(s.hit, s.accounted(), "{s:?}");
}

#[test]
fn with_every_spare_page_held_a_claim_is_refused_busy_and_counted() {
    let ring = counter_ring(Mode::Overwrite, PAGE, 4);
    // Sleepers, each filling a page of its own, until a claim finds every
    // spare page held: the ring's four pages, then one per spare.
    let max = max_payload(PAGE);
    let mut held = Vec::new();
    let refusal = loop {
        match ring.cpu_writer(0).reserve(max) {
            Ok(r) => held.push(r),
            Err(e) => break e,
        }
        assert!(held.len() < 1000, "never refused");
    };
    assert_eq!(refusal, ReserveError::Busy);
    let s = ring.stats();
    let spares = held.len() as u64 - 4;
    assert!(spares > 0, "{s:?}");
    assert_eq!((s.missed, s.busy, s.pages_stepped_over), (1, 1, spares));
    for h in held {
        h.commit();
    }
    write_all(&ring, 1000, 100);
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
    assert_eq!(s.lost, 0, "{s:?}");
}

#[test]
fn a_reservation_dropped_in_a_stepped_over_page_counts_as_discarded() {
    let ring = counter_ring(Mode::Overwrite, PAGE, 4);
    let held = ring.cpu_writer(0).reserve(40).unwrap();
    write_all(&ring, 0, 200);
    drop(held);
    let s = ring.stats();
    assert_eq!((s.pages_stepped_over, s.discarded, s.lost), (1, 1, 0));
    assert_eq!(s.overrun, 200 - read_numbers(&ring).len() as u64);
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
}

#[test]
fn discard_mode_never_steps_over_a_page() {
    let ring = counter_ring(Mode::Discard, PAGE, 4);
    let held = ring.cpu_writer(0).reserve(16).unwrap();
    let refused = (0..100u64)
        .filter(|i| ring.cpu_writer(0).write(&i.to_le_bytes()).is_err())
        .count();
    assert!(refused > 0);
    assert_eq!(ring.stats().pages_stepped_over, 0);
    held.commit();
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_file_ring_steps_over_and_recovers_with_every_event_accounted() {
    let dir = std::env::temp_dir().join(format!("ringtrace-step-over-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stepped.ring");
    let config = RingConfig::default()
        .cpus(1)
        .page_size(PAGE)
        .per_cpu_bytes(4 * PAGE)
        .fixup_after(None)
        .file(&path);
    let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
    let held = ring.cpu_writer(0).reserve(16).unwrap();
    write_all(&ring, 0, 300);
    held.commit();
    // Past the freed page again: the file ring zeroed it before reuse.
    write_all(&ring, 300, 300);
    let live = ring.stats();
    assert_eq!(
        (live.missed, live.preparing, live.pages_stepped_over),
        (0, 0, 1)
    );
    drop(ring);
    let recovered = file::recover(&path).unwrap();
    let numbers: Vec<u64> = recovered
        .merged()
        .iter()
        .map(|e| u64::from_le_bytes(e.payload[..8].try_into().unwrap()))
        .collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    assert_eq!(numbers.last(), Some(&599));
    let s = recovered.file_stats();
    assert_eq!(s.hit, 601);
    assert_eq!(s.overrun + numbers.len() as u64, 601, "{s:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
