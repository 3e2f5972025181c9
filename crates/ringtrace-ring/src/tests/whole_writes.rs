//! Events written whole (and fast reservations) on the rseq path, read
//! back, recovered and written from another CPU.

use crate::{Mode, RingBuffer, RingConfig, WritePath};
use ringtrace_clock::{Clock, InlineRead, Tsc};

use crate::cpu::pin_for_test as pin;

/// A ring stamped by the TSC on the rseq path, and this thread pinned
/// to a CPU: the whole-event path's conditions. `None` where they
/// cannot be had.
fn tsc_rseq_ring(config: RingConfig) -> Option<(RingBuffer<Tsc>, usize)> {
    let tsc = Tsc::new().ok()?;
    assert_eq!(tsc.inline_read(), InlineRead::Rdtsc);
    let ring = RingBuffer::new(config.write_path(WritePath::Rseq), tsc).ok()?;
    let cpu = crate::cpu::current_cpu();
    pin(cpu).then_some((ring, cpu))
}

/// [`tsc_rseq_ring`] with pages of 256 bytes in 64 KiB, discarding
/// when full: a few dozen page switches in a thousand short events.
/// `None`, said, where the rseq path cannot be had.
fn small_pages_rseq_ring() -> Option<(RingBuffer<Tsc>, usize)> {
    let config = RingConfig::default()
        .page_size(256)
        .per_cpu_bytes(64 * 1024)
        .mode(Mode::Discard);
    let ring = tsc_rseq_ring(config);
    if ring.is_none() {
        eprintln!("skipped: {:?}", crate::rseq::unavailable());
    }
    ring
}

/// Flushes `ring` and reads `cpu`'s buffer empty: exactly `expected`,
/// in order, in time order.
fn assert_reads_back_in_order(ring: &RingBuffer<Tsc>, cpu: usize, expected: &[Vec<u8>]) {
    let b = ring.cpu_buffer(cpu).unwrap();
    ring.flush();
    let mut times = Vec::new();
    for (k, want) in expected.iter().enumerate() {
        let e = b.read_event().unwrap();
        assert_eq!(&e.payload, want, "event {k}");
        times.push(e.ts);
    }
    assert!(b.read_event().is_none());
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

fn payload(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 7 + j) as u8).collect()
}

#[test]
fn whole_writes_of_every_length_read_back_in_order_across_pages() {
    let Some((ring, cpu)) = small_pages_rseq_ring() else {
        return;
    };
    // Lengths 0 to 40: short events, long ones, and none; enough of
    // them to cross a few dozen pages.
    let n = 1_000u32;
    let mut last = 0;
    for i in 0..n {
        let ts = ring
            .cpu_writer(cpu)
            .write(&payload(i, i as usize % 41))
            .unwrap();
        assert!(ts >= last);
        last = ts;
    }
    let b = ring.cpu_buffer(cpu).unwrap();
    assert_eq!(b.remote_updates(), 0, "a pinned writer went remote");
    let s = ring.stats();
    assert_eq!((s.hit, s.ts_fixups), (u64::from(n), 0), "{s:?}");
    let expected: Vec<_> = (0..n).map(|i| payload(i, i as usize % 41)).collect();
    assert_reads_back_in_order(&ring, cpu, &expected);
}

#[test]
fn fast_reservations_of_every_length_and_kind_read_back_in_order_across_pages() {
    let Some((ring, cpu)) = small_pages_rseq_ring() else {
        return;
    };
    // Lengths 0 to 40 (short and long encodings), written whole, in
    // word pieces, streamed, not written at all (zeroed at commit), or
    // dropped (a discard record): across a few dozen page switches,
    // each of which the fast reserve hands to the general loop.
    let n = 1_000u32;
    let mut expected = Vec::new();
    let mut last = 0;
    for i in 0..n {
        let len = i as usize % 41;
        let p = payload(i, len);
        let mut r = ring.cpu_writer(cpu).reserve(len).unwrap();
        assert_eq!((r.len(), r.cpu()), (len, cpu));
        assert!(r.timestamp() >= last);
        last = r.timestamp();
        match i % 5 {
            0 => r.write(&p),
            1 => {
                let half = (len / 2) & !3;
                r.write_at(0, &p[..half]);
                r.write_at(half, &p[half..]);
            }
            2 => {
                let mut s = r.stream();
                for b in p.chunks(3) {
                    s.put(b);
                }
            }
            3 => {
                // Not written: the payload reads as zeroes.
                r.commit();
                expected.push(vec![0; len]);
                continue;
            }
            _ => {
                drop(r);
                continue;
            }
        }
        r.commit();
        expected.push(p);
    }
    let b = ring.cpu_buffer(cpu).unwrap();
    assert_eq!(b.remote_updates(), 0, "a pinned writer went remote");
    let s = ring.stats();
    // A discard record is a hit too, and no entry.
    assert_eq!(
        (s.hit, s.entries, s.discarded, s.ts_fixups),
        (u64::from(n), u64::from(n - n / 5), u64::from(n / 5), 0),
        "{s:?}"
    );
    assert_reads_back_in_order(&ring, cpu, &expected);
}

#[test]
fn whole_writes_to_a_file_ring_recover_intact_with_their_hits() {
    let dir = std::env::temp_dir().join(format!("ringtrace-whole-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("whole.ring");
    let _ = std::fs::remove_file(&path);
    let config = RingConfig::default()
        .page_size(256)
        .per_cpu_bytes(16 * 1024)
        .mode(Mode::Discard)
        .file(&path);
    let Some((ring, cpu)) = tsc_rseq_ring(config) else {
        eprintln!("skipped: {:?}", crate::rseq::unavailable());
        return;
    };
    for i in 0..200u32 {
        ring.cpu_writer(cpu)
            .write(&payload(i, 8 + i as usize % 9))
            .unwrap();
    }
    assert_eq!(ring.stats().hit, 200);
    drop(ring);
    let rec = crate::file::recover(&path).unwrap();
    assert_eq!(rec.file_stats().hit, 200);
    let events = rec.merged();
    assert_eq!(events.len(), 200);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.payload, payload(i as u32, 8 + i % 9), "event {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_writer_bound_to_another_cpu_writes_there_remotely_and_exactly() {
    let config = RingConfig::default()
        .page_size(256)
        .per_cpu_bytes(16 * 1024);
    let Some((ring, cpu)) = tsc_rseq_ring(config) else {
        eprintln!("skipped: {:?}", crate::rseq::unavailable());
        return;
    };
    if ring.cpus() < 2 {
        return;
    }
    let here = ring.cpu_writer(cpu);
    let there = ring.cpu_writer(cpu + 1);
    assert_eq!((here.cpu(), there.cpu()), (cpu, (cpu + 1) % ring.cpus()));
    for i in 0..50u32 {
        here.write(&i.to_le_bytes()).unwrap();
        there.write(&i.to_le_bytes()).unwrap();
    }
    let (b_here, b_there) = (
        ring.cpu_buffer(cpu).unwrap(),
        ring.cpu_buffer(there.cpu()).unwrap(),
    );
    assert_eq!(b_here.remote_updates(), 0);
    // Off its CPU every update of the other buffer is remote: the
    // whole path's sections find the gate shut and leave, and the event
    // is written under one remote update, its reserve, commit and page
    // switches (50 events of 12 bytes fill two 256-byte pages) nested
    // in it without system calls of their own.
    assert_eq!(b_there.remote_updates(), 50);
    for b in [b_here, b_there] {
        assert_eq!(b.stats().hit, 50);
        for i in 0..50u32 {
            assert_eq!(b.read_event().unwrap().payload, i.to_le_bytes());
        }
    }
}
