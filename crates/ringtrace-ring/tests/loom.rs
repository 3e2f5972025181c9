//! loom models of the reserve/commit/read protocol on one CPU buffer.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p ringtrace-ring --test loom
//! --release` (scripts/test.sh does). Pages are tiny (64 bytes: the header
//! and four 8-byte events) so that page switches, wrap-around and
//! overwrite happen within a handful of operations.
//!
//! Most models have one thread store and another observe. loom's search
//! remembers only the last access to each atomic, so it does not try the
//! observer's loads after a store if the storing thread itself read that
//! atomic in between (a reader copies a page before it recycles it, a
//! writer loads a slot before it claims it). The observer therefore runs in
//! a spawned thread, which loom schedules after the main thread blocks in
//! `join`: its loads then come after every store, and loom tries each value
//! that the orderings allow them to return. Where a model needs its steps
//! in a fixed order without the threads synchronizing, a `Relaxed` step
//! counter orders them: it publishes nothing, so the only happens-before
//! edges are the ring's own.
//!
//! docs/verification.md lists, for each ordering on the reserve, commit,
//! claim and read paths, which model fails when it is weakened.
#![cfg(loom)]

use loom::sync::atomic::AtomicUsize;
use loom::thread;
use ringtrace_clock::Counter;
use ringtrace_ring::{Mode, RingBuffer, RingConfig, Stats};
use std::sync::atomic::Ordering::Relaxed;
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

/// A ring that threads can borrow for good (leaked: a few hundred bytes a
/// model iteration), so that a reservation or an iterator can move into a
/// spawned thread.
fn leaked_ring(mode: Mode, pages: usize) -> &'static RingBuffer<Counter> {
    let ring = Arc::into_inner(ring(mode, pages)).expect("no other handle yet");
    Box::leak(Box::new(ring))
}

/// Waits until `step` reaches `n`. Relaxed: the counter only orders the
/// model's steps; it publishes nothing (a writer's path has no Acquire fence
/// that could make it).
fn wait_for_step(step: &AtomicUsize, n: usize) {
    while step.load(Relaxed) != n {
        thread::yield_now();
    }
}

fn id_of(payload: &[u8]) -> u32 {
    u32::from_le_bytes(payload[..4].try_into().unwrap())
}

fn drain(ring: &RingBuffer<Counter>) -> Vec<(u64, u32)> {
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    std::iter::from_fn(|| b.read_event())
        .map(|e| (e.ts, id_of(&e.payload)))
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

/// Two writers on one CPU buffer, writer `w` writing `writes[w]` events,
/// then a drain: every event read once, each writer's in its order.
fn two_writers_race(writes: [u32; 2]) {
    let ring = ring(Mode::Discard, 2);
    let handles: Vec<_> = (0..2u32)
        .map(|w| {
            let ring = Arc::clone(&ring);
            let n = writes[w as usize];
            thread::spawn(move || {
                for i in 0..n {
                    ring.cpu_writer(0)
                        .write(&(w * 10 + i).to_le_bytes())
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let read = drain(&ring);
    assert_eq!(read.len() as u32, writes[0] + writes[1], "{read:?}");
    check_order_and_accounting(&ring, &read);
    // Each writer's events in its program order.
    for w in 0..2u32 {
        let mine: Vec<u32> = read.iter().map(|r| r.1).filter(|id| id / 10 == w).collect();
        let expected: Vec<u32> = (0..writes[w as usize]).map(|i| w * 10 + i).collect();
        assert_eq!(mine, expected);
    }
}

#[test]
fn two_writers_racing_for_one_buffer_lose_and_duplicate_nothing() {
    // One write racing two consecutive writes of the other writer, at the
    // suite's preemption bound.
    loom::model(|| two_writers_race([2, 1]));
}

#[test]
fn two_writers_of_two_events_each_lose_and_duplicate_nothing() {
    // Both writers on their second write after interleaving their first.
    // Bounded at one preemption: at two, loom explores this model for more
    // than ten minutes on two cores, and the model above covers a write
    // racing consecutive writes at two.
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(1, |b| b.min(1)));
    builder.check(|| two_writers_race([2, 2]));
}

#[test]
fn nested_write_with_non_lifo_commit_against_a_second_writer() {
    loom::model(|| {
        let ring = ring(Mode::Discard, 2);
        let other = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || ring.cpu_writer(0).write(&100u32.to_le_bytes()).unwrap())
        };
        // A write, interrupted by a nested write (a signal handler), whose
        // commit comes after the nested one's: not LIFO.
        let mut outer = ring.cpu_writer(0).reserve(4).unwrap();
        outer.write(&1u32.to_le_bytes());
        let mut nested = ring.cpu_writer(0).reserve(4).unwrap();
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

/// A 24-byte payload whose first word is `id` and whose other words are
/// 0xEE bytes, so that a record read over them decodes as garbage.
fn long_payload(id: u32) -> [u8; 24] {
    let mut payload = [0xEE; 24];
    payload[..4].copy_from_slice(&id.to_le_bytes());
    payload
}

/// A writer on the fast path writes over the previous lap's bytes, and
/// every reader sees its record, not what was there: its CAS on the state
/// acquires the page's claim, which acquired the previous lap's commits, so
/// its stores come after those bytes. Pins the fast path's AcqRel CAS
/// (docs/verification.md, W1).
#[test]
fn a_fast_path_write_over_the_previous_lap_reads_as_written() {
    loom::model(|| {
        // Page 0 holds id 0 with 0xEE bytes up to byte 60; the other
        // thread fills page 1 with id 1; id 2 opens page 2 in page 0's
        // memory at byte 32; then the other thread writes id 100 on the
        // fast path (its hints are fresh) at byte 40, over id 0's bytes.
        // The other thread has seen the state as it was when id 0 was
        // reserved, not id 0's bytes: only the fast path's CAS orders its
        // record after them.
        let ring = leaked_ring(Mode::Overwrite, 2);
        let step: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let other = thread::spawn(move || {
            wait_for_step(step, 1);
            let one = ring.cpu_writer(0).write(&long_payload(1));
            step.store(2, Relaxed);
            wait_for_step(step, 3);
            (one, ring.cpu_writer(0).write(&100u32.to_le_bytes()))
        });
        let zero = ring.cpu_writer(0).write(&long_payload(0));
        step.store(1, Relaxed);
        wait_for_step(step, 2);
        let two = ring.cpu_writer(0).write(&2u32.to_le_bytes());
        step.store(3, Relaxed);
        let (one, late) = other.join().unwrap();
        assert!(zero.is_ok(), "{zero:?}");
        let expected: Vec<(u64, u32)> = [(one, 1), (two, 2), (late, 100)]
            .into_iter()
            .map(|(ts, id)| (ts.expect("one writer at a time never fails"), id))
            .collect();
        assert_eq!(
            drain(ring),
            expected,
            "an event read back is not as written"
        );
    });
}

/// A reservation dropped last, completing its page, reads as a discard
/// record: the drop's commit publishes the discard header it wrote, so a
/// reader that finds the page complete skips the record and reads the
/// events after it, rather than stop at a header never written and count
/// them lost. Pins the Release of the drop's commit (W24).
#[test]
fn a_reservation_dropped_last_reads_as_a_discard() {
    loom::model(|| {
        let ring = ring(Mode::Discard, 2);
        // The first record of page 0 is held; ids 1..=3 fill the page.
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        for i in 1..=3u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let reader = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let b = ring.cpu_buffer(0).unwrap();
                std::iter::from_fn(|| b.read_event())
                    .map(|e| id_of(&e.payload))
                    .collect::<Vec<u32>>()
            })
        };
        drop(held);
        let mut ids = reader.join().unwrap();
        ids.extend(drain(&ring).iter().map(|r| r.1));
        assert_eq!(ids, vec![1, 2, 3], "{:?}", ring.stats());
        assert_eq!(ring.stats().lost, 0);
    });
}

/// A page closed by a flush is read whole up to its padding record: the
/// padding's commit publishes the padding header, so a reader that finds
/// the page complete never decodes what an earlier lap left after the last
/// event. Pins the Release of `commit_bytes` (W4), which the padding needs;
/// the page header's and a time prefix's commits are followed by the same
/// writer's event commit, whose Release covers them too.
#[test]
fn a_flushed_page_read_whole_ends_at_its_padding() {
    loom::model(|| {
        // Ids 0..=7 fill pages 0 and 1; id 8 opens page 2 in page 0's
        // memory, where lap 1's ids 1..=3 still follow it.
        let ring = ring(Mode::Overwrite, 2);
        for i in 0..=8u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let reader = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let b = ring.cpu_buffer(0).unwrap();
                (0..2)
                    .filter_map(|_| b.read_page())
                    .map(|page| page.events().map(|(_, p)| id_of(p)).collect::<Vec<u32>>())
                    .collect::<Vec<_>>()
            })
        };
        ring.flush();
        let pages = reader.join().unwrap();
        for ids in &pages {
            assert!(
                ids == &[4, 5, 6, 7] || ids == &[8],
                "a page read whole shows a record that is not its own: {pages:?}"
            );
        }
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
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
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
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 4..9u32 {
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
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
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                let mut long = [0u8; 12];
                long[..4].copy_from_slice(&3u32.to_le_bytes());
                ring.cpu_writer(0).write(&long).unwrap();
            })
        };
        ring.cpu_buffer(0).unwrap().fixup();
        writer.join().unwrap();
        // On until slot 0 is claimed again: the rest of page 1, page 2,
        // and the first event of page 3, which lives in slot 0.
        for i in 4..11u32 {
            ring.cpu_writer(0)
                .write(&i.to_le_bytes())
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
        let ring = leaked_ring(Mode::Overwrite, 2);
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        for i in 1..5u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap(); // 1..3 fill page 0
        }
        let writer = {
            thread::spawn(move || {
                let mut held = held;
                held.write(&0u32.to_le_bytes());
                held.commit();
                for i in 5..9u32 {
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap(); // into page 2 = slot 0
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
            stuck.push(ring.cpu_writer(0).reserve(4).unwrap());
            ring.flush();
            assert!(b.fixup(), "a physical page was stranded");
        }
        drop(stuck);
    });
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
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || ring.cpu_writer(0).write(&100u32.to_le_bytes()).unwrap())
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

/// An iterator copying a page while a writer laps onto it keeps the old
/// page only if it copied none of the new lap's bytes: a writer fences with
/// Release after the CAS that follows its claim (step E), the iterator with
/// Acquire after its copy, so a copy holding any new byte sees the slot
/// claimed and is thrown away. Pins the step E fences (W12) and the
/// iterator's fence (W23).
#[test]
fn iterator_racing_a_writer_that_laps_onto_its_page_yields_nothing_torn() {
    loom::model(|| {
        // Ids 0..=7 fill pages 0 and 1. The iterator starts at page 0;
        // then id 8 claims page 0's slot for page 2 and rewrites the
        // page's header (base time, sequence) and first record. A torn
        // copy gives lap 1's events the new base time, or id 8 a place
        // among them. The iterator stops after four events: page 0's, or
        // page 1's if it threw page 0 away.
        let ring = leaked_ring(Mode::Overwrite, 2);
        let mut stamps: Vec<u64> = (0..8u32)
            .map(|i| ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap())
            .collect();
        let iter = ring.iter(0).unwrap();
        let iterator = thread::spawn(move || {
            iter.take(4)
                .map(|e| (e.ts, id_of(&e.payload)))
                .collect::<Vec<_>>()
        });
        stamps.push(ring.cpu_writer(0).write(&8u32.to_le_bytes()).unwrap());
        let seen = iterator.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0].1 < w[1].1), "{seen:?}");
        for (ts, id) in &seen {
            assert_eq!(*ts, stamps[*id as usize], "event {id} torn: {seen:?}");
        }
    });
}

/// An iterator copying a page while the reader recycles its memory keeps
/// the copy only if it holds none of the rewrite: the reader fences with
/// Release before rewriting a page it took out of a slot earlier, so a copy
/// that holds any rewritten byte sees, after the iterator's Acquire fence,
/// that slot changed. Pins the fence in `swap_in_spare` (W16), which the
/// swap's own Release cannot give (it orders only what comes before it),
/// and the iterator's fence (W23).
#[test]
fn iterator_racing_a_reader_that_recycles_its_page_yields_nothing_torn() {
    loom::model(|| {
        // Pages 0 and 1 are complete and the iterator starts at page 0.
        // The reader takes page 0, gives its memory back, and takes page 1
        // by swapping that same memory, rewritten as an empty page, into
        // slot 1. A torn copy gives page 0's events the rewritten header's
        // base time (0).
        let ring = leaked_ring(Mode::Discard, 2);
        let stamps: Vec<u64> = (0..8u32)
            .map(|i| ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap())
            .collect();
        let iter = ring.iter(0).unwrap();
        let iterator =
            thread::spawn(move || iter.map(|e| (e.ts, id_of(&e.payload))).collect::<Vec<_>>());
        let b = ring.cpu_buffer(0).unwrap();
        let taken: Vec<usize> = (0..2)
            .filter_map(|_| b.read_page())
            .map(|page| page.events().count())
            .collect();
        assert_eq!(taken, vec![4, 4]);
        let seen = iterator.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0].1 < w[1].1), "{seen:?}");
        for (ts, id) in &seen {
            assert_eq!(*ts, stamps[*id as usize], "event {id} torn: {seen:?}");
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
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 4..9u32 {
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
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

/// A second writer racing a file ring's claim is never refused and never
/// gets its event wiped: the claim swaps a page zeroed ahead into the slot
/// in the CAS that moves it on, so writers enter at once, and the claimer
/// zeroes the page it took out only once it is in no slot. Every event is
/// read back as written.
#[test]
fn a_writer_racing_a_file_rings_claim_is_never_refused_nor_wiped() {
    loom::model(|| {
        let config = RingConfig::default()
            .cpus(1)
            .page_size(64)
            .per_cpu_bytes(128)
            .quarantine_pages(3)
            .mode(Mode::Overwrite)
            .file("modelled-in-memory.ring");
        let ring = Arc::new(RingBuffer::new(config, Counter::new()).unwrap());
        for i in 0..8u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let other = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || ring.cpu_writer(0).write(&100u32.to_le_bytes()).ok())
        };
        let mine = ring.cpu_writer(0).write(&8u32.to_le_bytes()).ok();
        let theirs = other.join().unwrap();
        let read = drain(&ring);
        let ids: Vec<u32> = read.iter().map(|r| r.1).collect();
        for (ts, id) in [(mine, 8u32), (theirs, 100)] {
            let ts = ts.unwrap_or_else(|| panic!("event {id} refused"));
            assert!(
                read.contains(&(ts, id)),
                "event {id} at {ts} lost: {read:?}"
            );
        }
        assert!(
            !ids.contains(&0),
            "a zeroed or stale payload was read: {read:?}"
        );
        check_order_and_accounting(&ring, &read);
    });
}

/// What `read_committed` hands out from buffer 0 now, as (time, id).
fn drain_in_place(ring: &RingBuffer<Counter>) -> Vec<(u64, u32)> {
    ring.flush();
    let b = ring.cpu_buffer(0).unwrap();
    let mut read = Vec::new();
    while let Some(page) = b.read_committed() {
        read.extend(page.events().map(|(ts, p)| (ts, id_of(p))));
    }
    read
}

#[test]
fn a_drainer_racing_a_discard_writer_frees_pages_and_reads_each_event_once() {
    loom::model(|| {
        // Two pages of four events, seven written: the writer's second
        // event needs the first page back, which only the drainer's
        // consume CAS frees (it owns no page to swap in).
        let ring = ring(Mode::Discard, 2);
        for i in 0..7u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                (7..9u32)
                    .filter(|i| ring.cpu_writer(0).write(&i.to_le_bytes()).is_err())
                    .count() as u64
            })
        };
        let mut read = Vec::new();
        if let Some(page) = ring.cpu_buffer(0).unwrap().read_committed() {
            read.extend(page.events().map(|(ts, p)| (ts, id_of(p))));
        }
        let refused = writer.join().unwrap();
        read.extend(drain_in_place(&ring));
        let ids: Vec<u32> = read.iter().map(|r| r.1).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted, "out of order: {read:?}");
        check_order_and_accounting(&ring, &read);
        let s = ring.stats();
        assert_eq!(s.read + refused, 9, "{s:?} {read:?}");
        assert_eq!(s.missed, refused, "{s:?}");
    });
}

#[test]
fn overwrite_claim_and_drain_in_place_count_each_event_once() {
    loom::model(|| {
        // The writer laps onto the first page while the drainer consumes
        // it in place: every event ends up read or overrun, never both.
        let ring = ring(Mode::Overwrite, 2);
        for i in 0..7u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let writer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for i in 7..9u32 {
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
                }
            })
        };
        let mut read = Vec::new();
        if let Some(page) = ring.cpu_buffer(0).unwrap().read_committed() {
            read.extend(page.events().map(|(ts, p)| (ts, id_of(p))));
        }
        writer.join().unwrap();
        read.extend(drain_in_place(&ring));
        check_order_and_accounting(&ring, &read);
        let s = ring.stats();
        assert_eq!(s.read + s.overrun, 9, "{s:?} {read:?}");
    });
}

/// `loom::model` for a model whose steps after its threads join (stats,
/// which load every page's hits, and laps of writes) take more than loom's
/// default 1000 branches in one execution; LOOM_MAX_BRANCHES still
/// overrides.
fn model_long(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        builder.max_branches = 20_000;
    }
    builder.check(f);
}

/// A writer preempted between reserve and commit holds page 0 (its first
/// record, id 100) while another writer laps the ring onto it (ids 1..=3
/// fill page 0, 4..=7 page 1, and 8 claims page 0's slot for page 2): that
/// claim steps over the page with a spare rather than be refused, or, if
/// the commit landed first, claims it in place. Either way, and whichever
/// gives the page back (the stepper, the page complete at its mark, or the
/// late commit that completes it), nothing is refused or lost, the held
/// event is never read and counts as overrun with its page-mates, and each
/// other event is read once, in order. Then, one thread at a time, a second
/// step-over and the claims after it still go through with every event
/// accounted for. (A page given back twice would spin the second give for
/// ever, every other pool word being full; one never given back shows only
/// in a pool that runs dry, which the file ring models below check.)
#[test]
fn a_writer_lapping_onto_a_held_page_steps_over_it_and_loses_nothing() {
    model_long(|| {
        let ring = leaked_ring(Mode::Overwrite, 2);
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        let committer = thread::spawn(move || {
            let mut held = held;
            held.write(&100u32.to_le_bytes());
            held.commit();
        });
        let writer = thread::spawn(move || {
            (1..9u32)
                .map(|i| ring.cpu_writer(0).write(&i.to_le_bytes()))
                .collect::<Vec<_>>()
        });
        committer.join().unwrap();
        let written = writer.join().unwrap();
        let s = ring.stats();
        let stamps: Vec<u64> = written
            .iter()
            .enumerate()
            .map(|(i, r)| r.unwrap_or_else(|e| panic!("id {} refused: {e:?} {s:?}", i + 1)))
            .collect();
        // Page 0's four events (the held one too) overwritten, page 1's
        // and page 2's still there.
        let stepped = nothing_refused_or_lost(&s, (9, 4, 5));
        let read = drain(ring);
        let expected: Vec<(u64, u32)> = (4..9u32).map(|id| (stamps[id as usize - 1], id)).collect();
        assert_eq!(read, expected, "{s:?}");
        check_order_and_accounting(ring, &read);
        // Again, one thread at a time: a reservation held in page 3, and a
        // lap onto it (a step-over, with the spare the first one gave back
        // if it stepped), then its commit, and a lap past the page that
        // frees. Nothing refused, every event accounted for.
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        for i in 9..17u32 {
            ring.cpu_writer(0)
                .write(&i.to_le_bytes())
                .expect("a claim after the step-over was refused");
        }
        held.commit();
        for i in 17..25u32 {
            ring.cpu_writer(0)
                .write(&i.to_le_bytes())
                .expect("a claim after the step-over was refused");
        }
        let s = ring.stats();
        assert_eq!((s.missed, s.lost), (0, 0), "{s:?}");
        assert_eq!(s.pages_stepped_over, stepped + 1, "{s:?}");
        let read = drain(ring);
        check_order_and_accounting(ring, &read);
        assert_eq!(ring.stats().hit, 26, "{:?}", ring.stats());
    });
}

/// After a model that may step over one page: nothing refused or lost,
/// and `(hit, overrun, entries)` as given. Returns the pages stepped over.
fn nothing_refused_or_lost(s: &Stats, (hit, overrun, entries): (u64, u64, u64)) -> u64 {
    assert!(s.pages_stepped_over <= 1, "{s:?}");
    assert_eq!(
        (s.missed, s.lost, s.hit, s.overrun, s.entries),
        (0, 0, hit, overrun, entries),
        "{s:?}"
    );
    s.pages_stepped_over
}

/// A file ring modelled in memory (its claims swap pages zeroed ahead from
/// a pool, here two pages), in overwrite mode, of two 64-byte pages.
fn leaked_file_ring() -> &'static RingBuffer<Counter> {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(64)
        .per_cpu_bytes(128)
        .quarantine_pages(3)
        .mode(Mode::Overwrite)
        .file("modelled-in-memory.ring");
    Box::leak(Box::new(RingBuffer::new(config, Counter::new()).unwrap()))
}

/// After a model that laps a file ring onto page 0, steps over it (or
/// claims it) and writes ids 8 and 9 into pages 2 and 3 (`stamps`, id 9
/// a `long_payload` written over page 0's old records, by its next writer
/// if it went back to the pool): checks that nothing was refused or lost,
/// that pages 0 and 1 were overwritten, the held event with them, and that
/// ids 8 and 9 read back as written.
///
/// Then, one thread at a time, that the page went back to the pool (its two
/// pages circulate: every claim takes one and gives one back): a
/// reservation held in page 4, a lap onto it (a step-over, which keeps a
/// pool page out until the commit), and the claim after it (a swap, which
/// needs the other). A page never given back leaves that claim none: it is
/// refused. Returns how many pages the model stepped over.
fn check_reuse_and_pool(ring: &RingBuffer<Counter>, stamps: [u64; 2]) -> u64 {
    let s = ring.stats();
    let stepped = nothing_refused_or_lost(&s, (10, 8, 2));
    let b = ring.cpu_buffer(0).unwrap();
    let read: Vec<(u64, Vec<u8>)> = std::iter::from_fn(|| b.read_event())
        .map(|e| (e.ts, e.payload))
        .collect();
    let expected = vec![
        (stamps[0], 8u32.to_le_bytes().to_vec()),
        (stamps[1], long_payload(9).to_vec()),
    ];
    assert_eq!(read, expected, "an old lap's bytes showed through: {s:?}");
    let held = ring.cpu_writer(0).reserve(4).unwrap();
    for i in 10..22u32 {
        ring.cpu_writer(0)
            .write(&i.to_le_bytes())
            .unwrap_or_else(|e| panic!("id {i} refused ({e:?}): a pool page was never given back"));
    }
    held.commit();
    let s = ring.stats();
    assert_eq!((s.missed, s.lost), (0, 0), "{s:?}");
    assert_eq!(s.pages_stepped_over, stepped + 1, "{s:?}");
    let read = drain(ring);
    check_order_and_accounting(ring, &read);
    assert_eq!(ring.stats().hit, 23, "{:?}", ring.stats());
    stepped
}

/// Ids 4..=7 and 8 written on `ring`, as in `lap_onto_page_0`, then page 2
/// closed early and id 9 (a `long_payload`) written at the start of page 3.
/// Returns the times of ids 8 and 9.
fn lap_and_open_page_3(ring: &RingBuffer<Counter>) -> [u64; 2] {
    let written: Vec<_> = (4..9u32)
        .map(|i| ring.cpu_writer(0).write(&i.to_le_bytes()))
        .collect();
    ring.flush();
    let nine = ring.cpu_writer(0).write(&long_payload(9));
    let refused = |id, e| panic!("id {id} refused: {e:?} {:?}", ring.stats());
    for (id, w) in (4u32..).zip(&written) {
        w.unwrap_or_else(|e| refused(id, e));
    }
    [
        written[4].unwrap_or_else(|e| refused(8, e)),
        nine.unwrap_or_else(|e| refused(9, e)),
    ]
}

/// A file ring's page stepped over goes back to its pool once, whoever
/// frees it, and the writer that takes it from the pool next writes over it
/// without any of its old lap's bytes showing through.
///
/// Page 0 holds id 100 (held, committed by another thread) and ids 1..=3,
/// the last reserved after both other threads start and committed after the
/// lapping writer may have started. The lapping writer laps onto page 0 (a
/// step-over if a commit is missing, a claim in place if not), and closes
/// page 2 early, so that id 9 claims slot 1 with the pool page a free gave
/// back, page 0's if it has been, and writes over page 0's old records: its
/// record covers the words of the held event and of id 3, whose writers
/// published them only through the commit word, so only the free orders
/// them before the reuse (the mark's Acquire when the stepper frees, both
/// commits in by its mark; the fence of the late commit that frees).
/// `check_reuse_and_pool` checks the rest. Pins the mark's AcqRel
/// (`fixup_mark`).
#[test]
fn a_file_rings_stepped_over_page_returns_to_its_pool_once_and_is_reused_clean() {
    model_long(|| {
        let ring = leaked_file_ring();
        let step: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        for i in 1..3u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let committer = thread::spawn(move || {
            let mut held = held;
            held.write(&100u32.to_le_bytes());
            held.commit();
        });
        let writer = thread::spawn(move || {
            wait_for_step(step, 1);
            lap_and_open_page_3(ring)
        });
        let mut three = ring.cpu_writer(0).reserve(4).unwrap();
        three.write(&3u32.to_le_bytes());
        step.store(1, Relaxed);
        three.commit();
        committer.join().unwrap();
        let stamps = writer.join().unwrap();
        check_reuse_and_pool(ring, stamps);
    });
}

/// Two commits land in a page after it was stepped over: each counts its
/// event as overrun, and only the one that completes the page frees it (the
/// first would hand it to the pool with the other's bytes still to come).
/// The page goes back to the pool once, and the writer that takes it from
/// there next writes over it without the other commit's bytes showing
/// through: only the freeing commit's fence orders them before the reuse.
///
/// Page 0 holds id 100 and id 3, both held, and ids 1 and 2; ids 4..=8 lap
/// onto it, stepping over it. Then one thread commits id 100, closes page
/// 2 and writes id 9 (a claim of slot 1 with the pool page a free gave
/// back, page 0's if the other commit landed first), while the main thread
/// commits id 3. `check_reuse_and_pool` checks the rest. Pins the fence of
/// the late commit that frees (`stepped_free_fence`).
#[test]
fn only_the_last_late_commit_into_a_stepped_over_page_frees_it() {
    model_long(|| {
        let ring = leaked_file_ring();
        let held = ring.cpu_writer(0).reserve(4).unwrap();
        for i in 1..3u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let mut three = ring.cpu_writer(0).reserve(4).unwrap();
        three.write(&3u32.to_le_bytes());
        let written: Vec<_> = (4..9u32)
            .map(|i| ring.cpu_writer(0).write(&i.to_le_bytes()))
            .collect();
        assert_eq!(ring.stats().pages_stepped_over, 1, "{:?}", ring.stats());
        let other = thread::spawn(move || {
            let mut held = held;
            held.write(&100u32.to_le_bytes());
            held.commit();
            ring.flush();
            ring.cpu_writer(0).write(&long_payload(9))
        });
        three.commit();
        let nine = other.join().unwrap();
        let refused = |id, e| panic!("id {id} refused: {e:?} {:?}", ring.stats());
        for (id, w) in (4u32..).zip(&written) {
            w.unwrap_or_else(|e| refused(id, e));
        }
        let stamps = [
            written[4].unwrap_or_else(|e| refused(8, e)),
            nine.unwrap_or_else(|e| refused(9, e)),
        ];
        assert_eq!(check_reuse_and_pool(ring, stamps), 1);
    });
}

/// A reader consuming page 0 in place while a writer laps onto it and steps
/// over it (a reservation in it still open): each event is read once or
/// counted overrun, never both, never neither. The step-over counts page
/// 0's events less those the reader consumed, exact because its slot CAS
/// and the reader's consume CAS are on the same word; and each event the
/// reader gets reports the losses just before it, the step-over's count
/// included (the reader's loss mark waits for the claim's bracket). The
/// held event's own loss is counted when its commit lands, wherever the
/// reader is then: it is reported with the first page the reader secures
/// after that, or with none if none follows.
///
/// Ids 0..=2 are in page 0 when the reader starts; the writer reserves id 3
/// at its end (page 0 is complete only once it commits), laps the ring with
/// ids 4..=8, stepping over page 0, and then commits id 3.
#[test]
fn a_reader_consuming_a_page_in_place_while_it_is_stepped_over_counts_each_event_once() {
    model_long(|| {
        let ring = leaked_ring(Mode::Overwrite, 2);
        for i in 0..3u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        let b = ring.cpu_buffer(0).unwrap();
        let reader = thread::spawn(move || {
            (0..2)
                .filter_map(|_| b.read_event())
                .map(|e| (id_of(&e.payload), e.lost_before))
                .collect::<Vec<_>>()
        });
        let mut three = ring.cpu_writer(0).reserve(4).unwrap();
        three.write(&3u32.to_le_bytes());
        for i in 4..9u32 {
            ring.cpu_writer(0)
                .write(&i.to_le_bytes())
                .unwrap_or_else(|e| panic!("id {i} refused: {e:?} {:?}", ring.stats()));
        }
        three.commit();
        let mut read = reader.join().unwrap();
        ring.flush();
        read.extend(
            std::iter::from_fn(|| b.read_event()).map(|e| (id_of(&e.payload), e.lost_before)),
        );
        let s = ring.stats();
        assert_eq!((s.missed, s.lost, s.pages_stepped_over), (0, 0, 1), "{s:?}");
        assert_eq!(s.hit, s.accounted(), "{s:?}");
        assert_eq!((s.hit, s.read + s.overrun), (9, 9), "{s:?} {read:?}");
        assert_eq!(s.read, read.len() as u64, "{s:?} {read:?}");
        // In order, each once, the held event never (its page was
        // overwritten before it committed), the newest there.
        assert!(read.windows(2).all(|w| w[0].0 < w[1].0), "{read:?}");
        assert!(read.iter().all(|r| r.0 != 3), "{read:?}");
        assert_eq!(read.last().map(|r| r.0), Some(8), "{read:?}");
        // Each loss reported with the event it came before, once; id 3's
        // maybe later (`owed`: counted after the reader passed it).
        let (mut next, mut owed, mut reported) = (0u32, false, 0u64);
        for &(id, lost) in &read {
            let three_passed = next <= 3 && 3 < id;
            let gap = u64::from(id - next) - u64::from(three_passed);
            if owed || three_passed {
                assert!(lost == gap || lost == gap + 1, "loss before {id}: {read:?}");
                owed = lost == gap;
            } else {
                assert_eq!(lost, gap, "loss before {id}: {read:?}");
            }
            reported += lost;
            next = id + 1;
        }
        assert_eq!(reported + u64::from(owed), s.overrun, "{s:?} {read:?}");
    });
}
