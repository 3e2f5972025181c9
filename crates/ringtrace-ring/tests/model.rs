//! A proptest state machine: random sequences of reserve, commit, abandon,
//! forget (a writer that dies), read, read-page, iterate (also with writes
//! in the middle of it), merged reads, peeks, fixups, flushes and clock
//! steps back or past `u64::MAX`, on one CPU buffer, in both modes, checked
//! against a plain model of what must come out.
//!
//! The model does not mimic page layout; it pins what any correct ring must
//! do with the operations: accepted events come out intact, once, in
//! reservation order; time never goes back; nothing is lost without being
//! counted, and each loss is reported on the first event after it, exactly;
//! discard mode loses nothing accepted; and the counters add up.

mod common;

use common::ManualClock;
use proptest::prelude::*;
use ringtrace_ring::{Mode, Reservation, ReserveError, RingBuffer, RingConfig};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Reserve {
        len: usize,
        tick: u64,
        how: Fill,
    },
    Commit(prop::sample::Index),
    Abandon(prop::sample::Index),
    Read,
    ReadPage,
    Iterate,
    Flush,
    /// One event through the merged reader (the peek-then-consume path).
    Merged,
    /// A peek, which must name the event the next read returns.
    Peek,
    /// An explicit fixup: takes a closed page still waiting for a commit.
    Fixup,
    /// An open reservation's writer dies: it never commits nor drops.
    Forget(prop::sample::Index),
    /// The clock is set: back, or to just below `u64::MAX` (then it wraps).
    SetClock(u64),
    /// An iterator, with an event written and committed after each of the
    /// first few events it yields.
    IterateWhileWriting,
}

/// How a reservation's payload is written.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// `write`, whole.
    Write,
    /// A `PayloadStream`, 3 bytes at a time.
    Stream,
    /// `write_at`, 4 bytes at a time.
    WriteAt,
    /// `write_at` of the id only: the rest must read back as zeros.
    IdOnly,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            0usize..40,
            prop_oneof![Just(0u64), 0u64..100, Just(1 << 27), Just(1 << 60)],
            prop_oneof![
                3 => Just(Fill::Write),
                1 => Just(Fill::Stream),
                1 => Just(Fill::WriteAt),
                1 => Just(Fill::IdOnly)
            ],
        )
            .prop_map(|(len, tick, how)| Op::Reserve { len, tick, how }),
        4 => any::<prop::sample::Index>().prop_map(Op::Commit),
        1 => any::<prop::sample::Index>().prop_map(Op::Abandon),
        3 => Just(Op::Read),
        1 => Just(Op::ReadPage),
        1 => Just(Op::Iterate),
        1 => Just(Op::Flush),
        1 => Just(Op::Merged),
        1 => Just(Op::Peek),
        1 => Just(Op::Fixup),
        1 => any::<prop::sample::Index>().prop_map(Op::Forget),
        1 => prop_oneof![0u64..1_000, (0u64..1_000).prop_map(|d| u64::MAX - d)]
            .prop_map(Op::SetClock),
        1 => Just(Op::IterateWhileWriting),
    ]
}

/// What the test knows about each reservation, by id.
#[derive(Default)]
struct Model {
    /// id -> payload of every committed event.
    committed: BTreeMap<u64, Vec<u8>>,
    /// Reservations that ended (committed or abandoned).
    hit: u64,
    /// Failed ones.
    missed: u64,
    abandoned: u64,
    /// Ids read so far, in read order.
    read: Vec<u64>,
    last_ts: u64,
    /// A fixup took a page: events may have been counted lost, and a late
    /// commit's loss is reported where the reader is when it lands.
    fixed_up: bool,
    /// Ids reserved: the next id to hand out.
    next_id: u64,
    /// Losses reported on a page that held no event to read (only discard
    /// records): they lie before the next event read.
    carried_loss: u64,
}

/// A payload of exactly `len` (at least 9) bytes that names its id.
fn payload_for(id: u64, len: usize) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.resize(len - 1, (id as u8).wrapping_mul(31));
    p.push((id % 251) as u8);
    p
}

/// Writes `payload` into `r` the way `how` says; returns what the event
/// must read back as.
fn fill(r: &mut Reservation<'_>, payload: Vec<u8>, how: Fill) -> Vec<u8> {
    match how {
        Fill::Write => r.write(&payload),
        Fill::Stream => {
            let mut stream = r.stream();
            for piece in payload.chunks(3) {
                stream.put(piece);
            }
        }
        Fill::WriteAt => {
            for (i, piece) in payload.chunks(4).enumerate() {
                r.write_at(i * 4, piece);
            }
        }
        Fill::IdOnly => {
            r.write_at(0, &payload[..8]);
            let mut expect = payload[..8].to_vec();
            expect.resize(payload.len(), 0);
            return expect;
        }
    }
    payload
}

fn id_of(p: &[u8]) -> u64 {
    u64::from_le_bytes(p[..8].try_into().unwrap())
}

/// Checks an event a consuming reader returned, `lost` being the loss it
/// reported just before it.
fn see(model: &mut Model, ts: u64, payload: &[u8], lost: u64) -> Result<(), TestCaseError> {
    let id = id_of(payload);
    if !model.fixed_up {
        // Reads are in order, so every committed event between the last
        // one read and this one was lost, and must be reported here.
        let after = model.read.last().map_or(0, |&l| l + 1);
        let gap = model.committed.range(after..id).count() as u64;
        prop_assert_eq!(
            lost + model.carried_loss,
            gap,
            "loss reported before event {}",
            id
        );
    }
    model.carried_loss = 0;
    let want = model.committed.get(&id);
    prop_assert_eq!(
        Some(&payload.to_vec()),
        want,
        "event {} came out wrong or was never committed",
        id
    );
    prop_assert!(
        ts >= model.last_ts,
        "time went back: {} after {}",
        ts,
        model.last_ts
    );
    if let Some(&prev) = model.read.last() {
        prop_assert!(
            id > prev,
            "event {} read after {}: out of order or duplicated",
            id,
            prev
        );
    }
    model.last_ts = ts;
    model.read.push(id);
    Ok(())
}

fn run(mode: Mode, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(128)
        .per_cpu_bytes(128 * 3)
        .mode(mode);
    let clock = ManualClock::at(1);
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    let buffer = ring.cpu_buffer(0).unwrap();
    let mut model = Model::default();
    let mut open: Vec<(u64, Reservation<'_>, Vec<u8>)> = Vec::new();

    for op in ops {
        match op {
            Op::Reserve { len, tick, how } => {
                clock.advance(tick);
                match ring.reserve_on(0, len + 9) {
                    Ok(mut r) => {
                        let id = model.next_id;
                        model.next_id += 1;
                        let expect = fill(&mut r, payload_for(id, len + 9), how);
                        open.push((id, r, expect));
                    }
                    Err(ReserveError::Full | ReserveError::Busy) => model.missed += 1,
                    Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
                }
            }
            Op::Commit(i) if !open.is_empty() => {
                let (id, r, expect) = open.remove(i.index(open.len()));
                model.committed.insert(id, expect);
                model.hit += 1;
                r.commit();
            }
            Op::Abandon(i) if !open.is_empty() => {
                drop(open.remove(i.index(open.len())));
                model.abandoned += 1;
                model.hit += 1;
            }
            Op::Forget(i) if !open.is_empty() => {
                std::mem::forget(open.remove(i.index(open.len())).1);
            }
            Op::Read => {
                if let Some(e) = buffer.read_event() {
                    see(&mut model, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::ReadPage => {
                if let Some(page) = buffer.read_page() {
                    let lost = u64::from(page.header().lost);
                    if page.events().next().is_none() {
                        model.carried_loss += lost;
                    }
                    for (n, (ts, p)) in page.events().enumerate() {
                        see(&mut model, ts, p, if n == 0 { lost } else { 0 })?;
                    }
                }
            }
            Op::SetClock(t) => clock.set(t),
            Op::IterateWhileWriting => {
                let mut last = model.read.last().copied();
                let mut it = ring.iter(0).unwrap();
                for n in 0.. {
                    let Some(e) = it.next() else { break };
                    let id = id_of(&e.payload);
                    prop_assert_eq!(Some(&e.payload), model.committed.get(&id));
                    prop_assert!(last.is_none_or(|l| id > l), "iterator out of order");
                    last = Some(id);
                    if n < 3 {
                        if let Ok(mut r) = ring.reserve_on(0, 12) {
                            let id = model.next_id;
                            model.next_id += 1;
                            let expect = fill(&mut r, payload_for(id, 12), Fill::Write);
                            model.committed.insert(id, expect);
                            model.hit += 1;
                            r.commit();
                        } else {
                            model.missed += 1;
                        }
                    }
                }
            }
            Op::Iterate => {
                // Non-consuming: whatever it yields is committed, intact, in
                // order, and after everything read so far.
                let mut last = model.read.last().copied();
                for e in ring.iter(0).unwrap() {
                    let id = id_of(&e.payload);
                    prop_assert_eq!(Some(&e.payload), model.committed.get(&id));
                    prop_assert!(last.is_none_or(|l| id > l), "iterator out of order");
                    last = Some(id);
                }
            }
            Op::Flush => {
                buffer.flush();
            }
            Op::Merged => {
                if let Some(e) = ring.merged().next() {
                    see(&mut model, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::Peek => {
                let peeked = buffer.peek_timestamp();
                let read = buffer.read_event();
                prop_assert_eq!(peeked, read.as_ref().map(|e| e.ts));
                if let Some(e) = read {
                    see(&mut model, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::Fixup => {
                model.fixed_up |= buffer.fixup();
            }
            _ => {}
        }
        let s = ring.stats();
        prop_assert_eq!(s.hit, model.hit);
        prop_assert_eq!(s.missed, model.missed);
        prop_assert_eq!(s.discarded, model.abandoned);
        if open.is_empty() {
            // Forgotten reservations never end, and are in no count.
            prop_assert_eq!(s.hit, s.accounted(), "{:?}", s);
        }
    }

    // Close everything and drain.
    for (id, r, expect) in open.drain(..) {
        model.committed.insert(id, expect);
        model.hit += 1;
        r.commit();
    }
    buffer.flush();
    // Past the pages dead writers left: fixups until none is needed.
    loop {
        while let Some(e) = buffer.read_event() {
            see(&mut model, e.ts, &e.payload, e.lost_before)?;
        }
        if !buffer.fixup() {
            break;
        }
        model.fixed_up = true;
    }
    let s = ring.stats();
    prop_assert_eq!(s.entries, 0);
    if !model.fixed_up {
        prop_assert_eq!(s.lost, 0);
    }
    prop_assert_eq!(s.hit, s.accounted(), "{:?}", s);
    prop_assert_eq!(s.read as usize, model.read.len());
    // Every committed event was read, overwritten, or lost to a fixup.
    prop_assert_eq!(
        s.read + s.overrun + s.lost,
        model.committed.len() as u64,
        "{:?}",
        s
    );
    match mode {
        Mode::Discard => {
            prop_assert_eq!(s.overrun, 0);
            if !model.fixed_up {
                let all: Vec<u64> = model.committed.keys().copied().collect();
                prop_assert_eq!(&model.read, &all, "discard mode lost accepted events");
            }
        }
        Mode::Overwrite => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn overwrite_mode_matches_the_model(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 200 })) {
        run(Mode::Overwrite, ops)?;
    }

    #[test]
    fn discard_mode_matches_the_model(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 200 })) {
        run(Mode::Discard, ops)?;
    }
}
