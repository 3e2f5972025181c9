//! loom models of the reserve/commit/read protocol on one CPU buffer.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p ringtrace-ring --test loom
//! --release` (scripts/test.sh does). Pages are tiny (64 bytes: the header
//! and four 8-byte events) so that page switches, wrap-around and
//! overwrite happen within a handful of operations.
#![cfg(loom)]

use loom::thread;
use ringtrace_clock::Counter;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::sync::Arc;

fn ring(mode: Mode, pages: usize) -> Arc<RingBuffer<Counter>> {
    // Three quarantine pages: few atomics for loom to track, and enough
    // for the fixup models.
    let config = RingConfig::default()
        .cpus(1)
        .page_size(64)
        .per_cpu_bytes(64 * pages)
        .quarantine_pages(3)
        .mode(mode);
    Arc::new(RingBuffer::new(config, Counter::new()).unwrap())
}

fn drain(ring: &RingBuffer<Counter>) -> Vec<(u64, u32)> {
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    std::iter::from_fn(|| b.read_event())
        .map(|e| (e.ts, u32::from_le_bytes(e.payload[..4].try_into().unwrap())))
        .collect()
}

fn check_order_and_accounting(ring: &RingBuffer<Counter>, read: &[(u64, u32)]) {
    assert!(
        read.windows(2).all(|w| w[0].0 <= w[1].0),
        "time went back: {read:?}"
    );
    let mut ids: Vec<u32> = read.iter().map(|r| r.1).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), read.len(), "an event was read twice: {read:?}");
    let s = ring.stats();
    assert_eq!(s.hit, s.accounted(), "{s:?}");
}

#[test]
fn two_writers_racing_for_one_buffer_lose_and_duplicate_nothing() {
    loom::model(|| {
        let ring = ring(Mode::Discard, 2);
        let handles: Vec<_> = (0..2u32)
            .map(|w| {
                let ring = Arc::clone(&ring);
                thread::spawn(move || {
                    for i in 0..2u32 {
                        ring.write_on(0, &(w * 10 + i).to_le_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let read = drain(&ring);
        assert_eq!(read.len(), 4, "{read:?}");
        check_order_and_accounting(&ring, &read);
        // Each writer's events in its program order.
        for w in 0..2u32 {
            let mine: Vec<u32> = read.iter().map(|r| r.1).filter(|id| id / 10 == w).collect();
            assert_eq!(mine, vec![w * 10, w * 10 + 1]);
        }
    });
}

#[test]
fn nested_write_with_non_lifo_commit_against_a_second_writer() {
    loom::model(|| {
        let ring = ring(Mode::Discard, 2);
        let other = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || ring.write_on(0, &100u32.to_le_bytes()).unwrap())
        };
        // A write, interrupted by a nested write (a signal handler), whose
        // commit comes after the nested one's: not LIFO.
        let mut outer = ring.reserve_on(0, 4).unwrap();
        outer.write(&1u32.to_le_bytes());
        let mut nested = ring.reserve_on(0, 4).unwrap();
        nested.write(&2u32.to_le_bytes());
        outer.commit();
        nested.commit();
        other.join().unwrap();
        let read = drain(&ring);
        let ids: Vec<u32> = read.iter().map(|r| r.1).collect();
        assert_eq!(ids.len(), 3, "{read:?}");
        let pos = |id| ids.iter().position(|&x| x == id).unwrap();
        assert!(pos(1) < pos(2), "reservation order lost: {ids:?}");
        check_order_and_accounting(&ring, &read);
    });
}

#[test]
fn reader_racing_writer_reads_each_event_once_in_order() {
    loom::model(|| {
        let ring = ring(Mode::Discard, 2);
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 0..3u32 {
                    ring.write_on(0, &i.to_le_bytes()).unwrap();
                }
            })
        };
        let b = ring.cpu_buffer(0).unwrap();
        let mut read: Vec<(u64, u32)> = Vec::new();
        for _ in 0..2 {
            if let Some(e) = b.read_event() {
                read.push((e.ts, u32::from_le_bytes(e.payload[..4].try_into().unwrap())));
            }
        }
        writer.join().unwrap();
        read.extend(drain(&ring));
        let ids: Vec<u32> = read.iter().map(|r| r.1).collect();
        assert_eq!(ids, vec![0, 1, 2]);
        check_order_and_accounting(&ring, &read);
    });
}

#[test]
fn overwrite_claim_and_in_place_read_count_each_event_once() {
    loom::model(|| {
        // Two pages of four events; the writer laps the ring while the
        // reader consumes in place: every event ends up read or overrun,
        // never both, never neither.
        let ring = ring(Mode::Overwrite, 2);
        for i in 0..4u32 {
            ring.write_on(0, &i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 4..9u32 {
                    ring.write_on(0, &i.to_le_bytes()).unwrap();
                }
            })
        };
        let b = ring.cpu_buffer(0).unwrap();
        let mut read: Vec<(u64, u32)> = Vec::new();
        if let Some(e) = b.read_event() {
            read.push((e.ts, u32::from_le_bytes(e.payload[..4].try_into().unwrap())));
        }
        writer.join().unwrap();
        read.extend(drain(&ring));
        check_order_and_accounting(&ring, &read);
        let s = ring.stats();
        assert_eq!(s.read + s.overrun, 9, "{s:?} {read:?}");
    });
}

#[test]
fn fixup_racing_a_page_switch_never_wedges_the_buffer() {
    loom::model(|| {
        // Page 0 holds three 8-byte events, so a 16-byte one switches to
        // page 1 and pads page 0's last 8 bytes. A fixup in that window
        // (page 0 closed, its padding not yet committed) takes page 0 out;
        // the padding must still go to page 0, not to the spare now in its
        // slot, or that slot never completes and the ring refuses writes.
        let ring = ring(Mode::Overwrite, 3);
        for i in 0..3u32 {
            ring.write_on(0, &i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let mut long = [0u8; 12];
                long[..4].copy_from_slice(&3u32.to_le_bytes());
                ring.write_on(0, &long).unwrap();
            })
        };
        ring.cpu_buffer(0).unwrap().fixup();
        writer.join().unwrap();
        // On until slot 0 is claimed again: the rest of page 1, page 2,
        // and the first event of page 3, which lives in slot 0.
        for i in 4..11u32 {
            ring.write_on(0, &i.to_le_bytes())
                .expect("a page switch left a slot that never completes");
        }
        let read = drain(&ring);
        check_order_and_accounting(&ring, &read);
    });
}

#[test]
fn fixup_racing_a_claim_of_the_same_page_strands_no_page() {
    loom::model(|| {
        // Page 0 is stuck on a held reservation when the fixup looks at it;
        // meanwhile the holder commits, and a writer laps the ring and
        // claims page 0 for its next generation. Whichever way the fixup
        // and the claim interleave, no physical page may end up where
        // neither the ring nor the reader's free list can reach it.
        // Leaked, so that the held reservation can move to the writer.
        let ring: &'static RingBuffer<Counter> =
            Box::leak(Box::new(Arc::into_inner(ring(Mode::Overwrite, 2)).unwrap()));
        let held = ring.reserve_on(0, 4).unwrap();
        for i in 1..5u32 {
            ring.write_on(0, &i.to_le_bytes()).unwrap(); // 1..3 fill page 0
        }
        let writer = {
            thread::spawn(move || {
                let mut held = held;
                held.write(&0u32.to_le_bytes());
                held.commit();
                for i in 5..9u32 {
                    ring.write_on(0, &i.to_le_bytes()).unwrap(); // into page 2 = slot 0
                }
            })
        };
        let b = ring.cpu_buffer(0).unwrap();
        b.fixup();
        writer.join().unwrap();
        let read = drain(ring);
        check_order_and_accounting(ring, &read);
        // Four spare pages, one always kept back: three stuck pages in a
        // row can be taken out only if none was stranded.
        let mut stuck = Vec::new();
        for _ in 0..3 {
            stuck.push(ring.reserve_on(0, 4).unwrap());
            ring.flush();
            assert!(b.fixup(), "a physical page was stranded");
        }
        drop(stuck);
    });
}

fn id_of(payload: &[u8]) -> u32 {
    u32::from_le_bytes(payload[..4].try_into().unwrap())
}

#[test]
fn iterator_never_reads_an_open_reservation_as_committed() {
    loom::model(|| {
        // Ids 0..=8 fill pages 0 and 1 and put id 8 first on page 2, which
        // reuses page 0's memory: the record after it still holds lap 1's
        // header and id 1. A reservation held there, never written, is
        // followed by a writer's same-sized event. An iterator that read
        // the state before that event was reserved, and the commit word
        // after it was committed, found them equal and yielded lap 1's
        // bytes as an event.
        let ring = ring(Mode::Overwrite, 2);
        for i in 0..=8u32 {
            ring.write_on(0, &i.to_le_bytes()).unwrap();
        }
        let held = ring.reserve_on(0, 4).unwrap();
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || ring.write_on(0, &100u32.to_le_bytes()).unwrap())
        };
        let seen: Vec<u32> = ring.iter(0).unwrap().map(|e| id_of(&e.payload)).collect();
        writer.join().unwrap();
        drop(held);
        assert!(
            seen.iter().all(|id| [4, 5, 6, 7, 8, 100].contains(id)),
            "the iterator yielded an uncommitted or stale event: {seen:?}"
        );
    });
}

#[test]
fn iterator_racing_a_reader_that_recycles_its_page_yields_nothing_torn() {
    loom::model(|| {
        // Pages 0 and 1 are complete. The reader takes page 0, gives its
        // memory back, and takes page 1 by swapping that same memory, now
        // rewritten as an empty page, into slot 1. An iterator copying
        // page 0 meanwhile must either see the slot change and throw the
        // copy away, or have copied page 0 whole: never page 0's events
        // under the rewritten header (base time 0), which would give them
        // wrong timestamps. That needs the Release fence before the
        // rewrite; the swap's own Release does not order later stores.
        let ring = ring(Mode::Discard, 2);
        let stamps: Vec<u64> = (0..8u32)
            .map(|i| ring.write_on(0, &i.to_le_bytes()).unwrap())
            .collect();
        let reader = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let b = ring.cpu_buffer(0).unwrap();
                let first = b.read_page().unwrap();
                let second = b.read_page().unwrap();
                (first.events().count(), second.events().count())
            })
        };
        let seen: Vec<(u64, u32)> = ring
            .iter(0)
            .unwrap()
            .map(|e| (e.ts, id_of(&e.payload)))
            .collect();
        assert_eq!(reader.join().unwrap(), (4, 4));
        for (ts, id) in &seen {
            assert_eq!(
                *ts, stamps[*id as usize],
                "event {id} yielded with a torn page's time: {seen:?}"
            );
        }
    });
}

#[test]
fn a_reader_racing_an_overrunning_writer_reports_each_loss_where_it_happened() {
    loom::model(|| {
        // Page 0 holds ids 0..=3; the writer fills page 1 and, with id 8,
        // claims page 0's slot for the next lap, overrunning what the
        // reader has not read of it. Whatever the interleaving, the first
        // event the reader gets after a gap must report exactly the gap:
        // not before the claim's overrun is counted (the reader waits for
        // claims in flight), not after (it marks before securing a page).
        let ring = ring(Mode::Overwrite, 2);
        for i in 0..4u32 {
            ring.write_on(0, &i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 4..9u32 {
                    ring.write_on(0, &i.to_le_bytes()).unwrap();
                }
            })
        };
        let b = ring.cpu_buffer(0).unwrap();
        let mut read: Vec<(u32, u64)> = Vec::new();
        for _ in 0..2 {
            if let Some(e) = b.read_event() {
                read.push((id_of(&e.payload), e.lost_before));
            }
        }
        writer.join().unwrap();
        ring.flush();
        read.extend(
            std::iter::from_fn(|| b.read_event()).map(|e| (id_of(&e.payload), e.lost_before)),
        );
        let mut next = 0u32;
        for &(id, lost) in &read {
            assert_eq!(lost, u64::from(id - next), "loss before {id}: {read:?}");
            next = id + 1;
        }
        assert_eq!(next, 9, "{read:?}");
        let s = ring.stats();
        assert_eq!(s.read + s.overrun, 9, "{s:?}");
    });
}
