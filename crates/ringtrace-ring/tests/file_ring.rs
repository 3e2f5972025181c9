//! The file backend's promises to a program that writes a ring file and to
//! whoever recovers it: how the file is made, when a path is refused,
//! appending, and that recovery gives back exactly what was committed,
//! with counts that agree with the file's own accounting words.

mod common;
mod file_support;

use common::ManualClock;
use file_support::{config, file_error, len_for, Scratch};
use ringtrace_clock::Counter;
use ringtrace_ring::file::{self, FileError, Recovery, WriterState};
use ringtrace_ring::{Mode, ReserveError, RingBuffer};
use std::os::unix::fs::PermissionsExt;

/// (timestamp, payload) of one event, as written and as recovered.
type Written = Vec<(u64, Vec<u8>)>;

/// Writes `count` checksummed events of `writer` on `cpu`, seqs from
/// `first`; returns them with their timestamps.
fn write_events(
    ring: &RingBuffer<Counter>,
    cpu: usize,
    writer: u32,
    first: u64,
    count: u64,
) -> Written {
    (first..first + count)
        .map(|seq| {
            let p = common::payload(writer, seq, len_for(writer, seq));
            let ts = ring.cpu_writer(cpu).write(&p).unwrap();
            (ts, p)
        })
        .collect()
}

/// The events recovered from `cpu`, as (timestamp, payload).
fn events_of(rec: &Recovery, cpu: usize) -> Written {
    rec.cpus[cpu]
        .events
        .iter()
        .map(|e| {
            assert_eq!(e.cpu, cpu, "an event names another CPU than its buffer's");
            (e.ts, e.payload.clone())
        })
        .collect()
}

/// Asserts that every CPU's counts agree with its accounting words: what
/// recovery found is what `hit - read - overrun - lost - discarded` leaves.
fn assert_counts_agree(rec: &Recovery) {
    assert!(
        !rec.has_problems(),
        "problems: {:#?}",
        rec.cpus.iter().map(|c| &c.problems).collect::<Vec<_>>()
    );
    for c in &rec.cpus {
        let s = c.file_stats;
        let found = c.counts.recovered + c.counts.skipped_unreadable + c.counts.changed_while_read;
        assert_eq!(
            found, s.entries,
            "cpu {}: {:?} against {:?}",
            c.cpu, c.counts, s
        );
        assert_eq!(s.hit, s.accounted(), "cpu {}: {s:?}", c.cpu);
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn a_new_file_is_readable_and_writable_by_its_owner_only() {
    let scratch = Scratch::new("mode");
    let path = scratch.path("t.ring");
    // SAFETY: umask only sets the process's file mode creation mask.
    let old = unsafe { libc::umask(0o022) };
    let ring = RingBuffer::new(config(&path, Mode::Discard, 1, 1024, 4), Counter::new());
    // SAFETY: as above, putting back what was there.
    unsafe { libc::umask(old) };
    let ring = ring.unwrap();
    assert_eq!(ring.file_path(), Some(path.as_path()));
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o600,
        "mode {:o}",
        meta.permissions().mode()
    );
    drop(ring);
    let rec = file::recover(&path).unwrap();
    assert_eq!(
        meta.len(),
        rec.header.layout.file_len,
        "the file is as long as its header says"
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn an_empty_ring_recovers_no_events_and_says_whether_it_was_closed() {
    let scratch = Scratch::new("empty");
    for forget in [false, true] {
        let path = scratch.path(&format!("t-{forget}.ring"));
        let ring =
            RingBuffer::new(config(&path, Mode::Overwrite, 2, 1024, 4), Counter::new()).unwrap();
        if forget {
            std::mem::forget(ring);
        } else {
            drop(ring);
        }
        let rec = file::recover(&path).unwrap();
        // This process is alive: a ring it forgot is a live one as far as
        // the file can tell.
        let want = if forget {
            WriterState::Live
        } else {
            WriterState::Closed
        };
        assert_eq!(rec.writer, want);
        assert_eq!(rec.header.pid, std::process::id());
        assert_eq!(rec.cpus.len(), 2);
        assert!(rec.merged().is_empty());
        assert_eq!(rec.totals(), file::RecoveryCounts::default());
        assert_counts_agree(&rec);
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates symbolic links and files")]
fn a_symlink_at_the_path_is_refused_dangling_or_not_with_append_or_not() {
    let scratch = Scratch::new("symlink");
    let target = scratch.path("target");
    std::fs::write(&target, b"not to be touched").unwrap();
    let missing = scratch.path("missing");
    for (to, dangling) in [(&target, false), (&missing, true)] {
        for append in [false, true] {
            let link = scratch.path(&format!("link-{dangling}-{append}"));
            std::os::unix::fs::symlink(to, &link).unwrap();
            let made = RingBuffer::new(
                config(&link, Mode::Discard, 1, 1024, 4).append(append),
                Counter::new(),
            );
            assert_eq!(
                file_error(made),
                FileError::Symlink { path: link.clone() },
                "dangling {dangling}, append {append}"
            );
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"not to be touched");
    assert!(!missing.exists(), "a dangling link's target was created");
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn an_existing_file_is_refused_without_append_and_the_error_names_it() {
    let scratch = Scratch::new("exists");
    let plain = scratch.path("notes.txt");
    std::fs::write(&plain, b"precious").unwrap();
    let made = RingBuffer::new(config(&plain, Mode::Discard, 1, 1024, 4), Counter::new());
    let err = file_error(made);
    assert_eq!(
        err,
        FileError::Exists {
            path: plain.clone()
        }
    );
    assert!(
        err.to_string().contains(&plain.display().to_string()),
        "{err}"
    );
    assert_eq!(std::fs::read(&plain).unwrap(), b"precious");

    // A ring file too: appending is a choice, never a default.
    let ring_path = scratch.path("t.ring");
    let ring = RingBuffer::new(
        config(&ring_path, Mode::Discard, 1, 1024, 4),
        Counter::new(),
    )
    .unwrap();
    ring.cpu_writer(0).write(b"first run").unwrap();
    drop(ring);
    let before = std::fs::read(&ring_path).unwrap();
    let made = RingBuffer::new(
        config(&ring_path, Mode::Discard, 1, 1024, 4),
        Counter::new(),
    );
    assert_eq!(
        file_error(made),
        FileError::Exists {
            path: ring_path.clone()
        }
    );
    assert_eq!(
        std::fs::read(&ring_path).unwrap(),
        before,
        "a refused file was changed"
    );
}

/// Two runs on one file, the second appending: every event of both comes
/// back, the first run's first, exactly.
fn append_continues(forget_first: bool) {
    let scratch = Scratch::new("append");
    let path = scratch.path("t.ring");
    // One counter for both runs, as one clock would be: the second run's
    // times follow the first's.
    let clock = Counter::new();
    let ring = RingBuffer::new(config(&path, Mode::Discard, 2, 1024, 16), clock.clone()).unwrap();
    let mut want: Vec<Written> = (0..2)
        .map(|cpu| write_events(&ring, cpu, cpu as u32, 0, 30))
        .collect();
    let mut pending = 0;
    if forget_first {
        // The first run dies in the middle of an event, too.
        let mut r = ring.cpu_writer(1).reserve(64).unwrap();
        r.write_at(0, &[0xAB; 32]);
        std::mem::forget(r);
        pending = 1;
        want[1].extend(write_events(&ring, 1, 1, 30, 5));
        drop(ring); // a forgotten ring would keep the file open in this process
    } else {
        drop(ring);
    }
    let ring = RingBuffer::new(
        config(&path, Mode::Discard, 2, 1024, 16).append(true),
        clock,
    )
    .unwrap();
    for (cpu, w) in want.iter_mut().enumerate() {
        let next = w.len() as u64;
        w.extend(write_events(&ring, cpu, cpu as u32, next, 25));
    }
    drop(ring);
    let rec = file::recover(&path).unwrap();
    assert_eq!(rec.writer, WriterState::Closed);
    for (cpu, w) in want.iter().enumerate() {
        assert_eq!(events_of(&rec, cpu), *w, "cpu {cpu}");
    }
    // The append ended the dead reservation as a discard record.
    assert_eq!(rec.totals().skipped_pending, 0);
    assert_eq!(rec.file_stats().discarded, pending);
    assert_eq!(
        rec.totals().recovered,
        (want[0].len() + want[1].len()) as u64
    );
    assert_counts_agree(&rec);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_after_the_ring_was_dropped_continues_where_it_left_off() {
    append_continues(false);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_after_the_writer_vanished_mid_event_continues_where_it_left_off() {
    append_continues(true);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_in_overwrite_mode_wraps_over_the_earlier_run() {
    let scratch = Scratch::new("append-wrap");
    let path = scratch.path("t.ring");
    let clock = Counter::new();
    let mut all = Written::new();
    for run in 0..3u64 {
        let cfg = config(&path, Mode::Overwrite, 1, 256, 4).append(run > 0);
        let ring = RingBuffer::new(cfg, clock.clone()).unwrap();
        all.extend(write_events(&ring, 0, 0, run * 40, 40));
        if run == 1 {
            drop(ring); // a forgotten ring would keep the file open in this process
        }
    }
    let rec = file::recover(&path).unwrap();
    let got = events_of(&rec, 0);
    assert!(
        !got.is_empty() && got.len() < all.len(),
        "{} of {}",
        got.len(),
        all.len()
    );
    assert_eq!(
        got[..],
        all[all.len() - got.len()..],
        "not the newest events, in order"
    );
    let c = &rec.cpus[0];
    assert_eq!(c.file_stats.overrun + c.counts.recovered, all.len() as u64);
    assert_counts_agree(&rec);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_to_a_ring_of_another_shape_or_clock_is_a_mismatch_and_leaves_it_alone() {
    let scratch = Scratch::new("mismatch");
    let path = scratch.path("t.ring");
    let base = || config(&path, Mode::Discard, 2, 1024, 8).metadata(b"abc".to_vec());
    let ring = RingBuffer::new(base(), Counter::new()).unwrap();
    ring.cpu_writer(0).write(b"kept").unwrap();
    drop(ring);
    let before = std::fs::read(&path).unwrap();
    let abc = || b"abc".to_vec();
    let variants = [
        ("page size", config(&path, Mode::Discard, 2, 512, 16), abc()),
        (
            "pages per CPU",
            config(&path, Mode::Discard, 2, 1024, 16),
            abc(),
        ),
        ("CPUs", config(&path, Mode::Discard, 1, 1024, 8), abc()),
        ("mode", config(&path, Mode::Overwrite, 2, 1024, 8), abc()),
        (
            "quarantine",
            config(&path, Mode::Discard, 2, 1024, 8).quarantine_pages(3),
            abc(),
        ),
        (
            "metadata length",
            config(&path, Mode::Discard, 2, 1024, 8),
            vec![7; 5000],
        ),
    ];
    for (what, cfg, meta) in variants {
        let cfg = cfg.metadata(meta).append(true);
        match file_error(RingBuffer::new(cfg, Counter::new())) {
            FileError::Mismatch { path: p, what: why } => {
                assert_eq!(p, path, "{what}");
                assert!(!why.is_empty());
            }
            other => panic!("{what}: {other:?}"),
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{what}: a refused append changed the file"
        );
    }
    let other_clock = RingBuffer::new(base().append(true), ManualClock::at(5));
    match file_error(other_clock) {
        FileError::Mismatch { what, .. } => assert!(
            what.contains("counter") && what.contains("manual"),
            "{what}"
        ),
        other => panic!("clock: {other:?}"),
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "clock: a refused append changed the file"
    );
    // And the same shape and clock is taken.
    let ring = RingBuffer::new(base().append(true), Counter::new()).unwrap();
    drop(ring);
    let rec = file::recover(&path).unwrap();
    assert_eq!(rec.merged()[0].payload, b"kept");
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn recovery_after_the_writer_vanished_returns_every_committed_event_exactly() {
    let scratch = Scratch::new("exact");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(config(&path, Mode::Discard, 2, 1024, 16), Counter::new()).unwrap();
    // Every length from empty to a long event nearly a page long, odd ones
    // too, on both CPUs.
    let mut want: Vec<Written> = vec![Vec::new(), Vec::new()];
    for i in 0..60usize {
        for (cpu, w) in want.iter_mut().enumerate() {
            let len = (i * 37 + cpu * 11) % 301;
            let p: Vec<u8> = (0..len).map(|b| (b * 31 + i + cpu) as u8).collect();
            let ts = ring.cpu_writer(cpu).write(&p).unwrap();
            w.push((ts, p));
        }
    }
    std::mem::forget(ring); // as if the process died here
    let rec = file::recover(&path).unwrap();
    for (cpu, w) in want.iter().enumerate() {
        assert_eq!(events_of(&rec, cpu), *w, "cpu {cpu}");
    }
    let mut all: Vec<(u64, Vec<u8>)> = want.concat();
    all.sort();
    let merged: Vec<(u64, Vec<u8>)> = rec
        .merged()
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect();
    assert_eq!(merged, all, "merged is not every event in time order");
    let t = rec.totals();
    assert_eq!(
        (
            t.recovered,
            t.skipped_pending,
            t.skipped_unreadable,
            t.changed_while_read
        ),
        (120, 0, 0, 0)
    );
    assert_eq!(rec.file_stats().hit, 120);
    assert_counts_agree(&rec);
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn a_reservation_forgotten_mid_write_is_counted_pending_and_never_returned() {
    let scratch = Scratch::new("pending");
    // Short and long records; half written, or not written at all; with
    // the page going on after it, or moving to the next.
    for (len, written, after) in [
        (40, 20, 3),
        (200, 100, 3),
        (40, 0, 2),
        (200, 0, 60),
        (52, 24, 60),
    ] {
        let path = scratch.path(&format!("t-{len}-{written}-{after}.ring"));
        let ring =
            RingBuffer::new(config(&path, Mode::Discard, 1, 1024, 16), Counter::new()).unwrap();
        let mut want = write_events(&ring, 0, 0, 0, 2);
        let mut r = ring.cpu_writer(0).reserve(len).unwrap();
        if written > 0 {
            assert_eq!(r.write_at(0, &vec![0xEE; written]), written);
        }
        std::mem::forget(r);
        want.extend(write_events(&ring, 0, 0, 2, after));
        std::mem::forget(ring);
        let rec = file::recover(&path).unwrap();
        assert_eq!(
            events_of(&rec, 0),
            want,
            "len {len}, {written} written, {after} after"
        );
        assert_eq!(rec.totals().skipped_pending, 1, "len {len}");
        assert!(rec.merged().iter().all(|e| !e.payload.contains(&0xEE)));
        assert_eq!(
            rec.file_stats().hit,
            want.len() as u64,
            "the dead reservation is in no count"
        );
        assert_counts_agree(&rec);
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn overwrite_recovery_is_a_contiguous_suffix_and_overrun_accounts_for_the_rest() {
    let scratch = Scratch::new("overwrite");
    for (cpus, forget) in [(1, false), (1, true), (2, true)] {
        let path = scratch.path(&format!("t-{cpus}-{forget}.ring"));
        let ring =
            RingBuffer::new(config(&path, Mode::Overwrite, cpus, 256, 4), Counter::new()).unwrap();
        // Around the ring many times (4 pages of 256 bytes hold about 20).
        let want: Vec<Written> = (0..cpus)
            .map(|cpu| write_events(&ring, cpu, cpu as u32, 0, 500))
            .collect();
        if forget {
            std::mem::forget(ring);
        } else {
            drop(ring);
        }
        let rec = file::recover(&path).unwrap();
        for (cpu, w) in want.iter().enumerate() {
            let got = events_of(&rec, cpu);
            assert!(got.len() >= 3, "cpu {cpu}: only {} recovered", got.len());
            assert_eq!(
                got[..],
                w[w.len() - got.len()..],
                "cpu {cpu}: not a suffix of what was written"
            );
            let c = &rec.cpus[cpu];
            assert_eq!(
                c.file_stats.overrun + c.counts.recovered,
                500,
                "cpu {cpu}: {c:?}"
            );
            assert_eq!(c.file_stats.hit, 500);
        }
        assert_counts_agree(&rec);
    }
}

#[test]
#[cfg_attr(miri, ignore = "threads and a mapped file")]
fn recovery_leaves_out_what_a_reader_consumed_and_its_counts_agree() {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    let scratch = Scratch::new("consumed");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(config(&path, Mode::Discard, 2, 256, 8), Counter::new()).unwrap();
    let done = AtomicBool::new(false);
    let per_writer = 1500u64;
    let (read, dropped) = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let ring = &ring;
                s.spawn(move || {
                    let mut dropped = 0;
                    for seq in 0..per_writer {
                        let p = common::payload(w, seq, len_for(w, seq));
                        let cpu = (seq % 3 % 2) as usize; // both buffers, unevenly
                        loop {
                            match ring.cpu_writer(cpu).reserve(p.len()) {
                                Ok(mut r) => {
                                    r.write(&p);
                                    if seq % 97 == 0 {
                                        drop(r); // a discard record, counted
                                        dropped += 1;
                                    } else {
                                        r.commit();
                                    }
                                    break;
                                }
                                Err(
                                    ReserveError::Full
                                    | ReserveError::Busy
                                    | ReserveError::Preparing,
                                ) => std::thread::yield_now(),
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                    dropped
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut read = Vec::new();
            while !done.load(Ordering::Acquire) {
                let mut any = false;
                for b in ring.cpu_buffers() {
                    if let Some(e) = b.read_event() {
                        read.push(e.payload);
                        any = true;
                    }
                }
                if !any {
                    std::thread::yield_now();
                }
            }
            read
        });
        let dropped: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        done.store(true, Ordering::Release);
        (reader.join().unwrap(), dropped)
    });
    // A page taken by the reader and read in part, and one read whole.
    let mut read = read;
    for b in ring.cpu_buffers() {
        if let Some(page) = b.read_page() {
            read.extend(page.events().map(|(_, p)| p.to_vec()));
        }
        for _ in 0..3 {
            read.extend(b.read_event().map(|e| e.payload));
        }
    }
    let live = ring.stats();
    std::mem::forget(ring);
    let rec = file::recover(&path).unwrap();
    assert_counts_agree(&rec);
    let recovered: Vec<Vec<u8>> = rec
        .cpus
        .iter()
        .flat_map(|c| c.events.iter().map(|e| e.payload.clone()))
        .collect();
    let written: BTreeSet<Vec<u8>> = (0..2u32)
        .flat_map(|w| {
            (0..per_writer)
                .filter(|s| s % 97 != 0)
                .map(move |s| common::payload(w, s, len_for(w, s)))
        })
        .collect();
    let read_set: BTreeSet<Vec<u8>> = read.iter().cloned().collect();
    let rec_set: BTreeSet<Vec<u8>> = recovered.iter().cloned().collect();
    assert_eq!(read_set.len(), read.len(), "an event was read twice");
    assert_eq!(
        rec_set.len(),
        recovered.len(),
        "an event was recovered twice"
    );
    assert!(
        read_set.is_disjoint(&rec_set),
        "recovery returned an event the reader had consumed"
    );
    let union: BTreeSet<Vec<u8>> = read_set.union(&rec_set).cloned().collect();
    assert_eq!(
        union, written,
        "read and recovered are not every committed event"
    );
    let file_stats = rec.file_stats();
    assert_eq!(file_stats.discarded, dropped);
    assert_eq!((file_stats.hit, file_stats.read), (live.hit, live.read));
    assert_eq!(file_stats.entries, recovered.len() as u64);
    // Each buffer's events keep each writer's order.
    for c in &rec.cpus {
        let mut last = [None::<u64>; 2];
        for e in &c.events {
            let (w, seq) = common::check(&e.payload).unwrap();
            assert!(
                last[w as usize].is_none_or(|l| l < seq),
                "cpu {}: writer {w} out of order",
                c.cpu
            );
            last[w as usize] = Some(seq);
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn metadata_is_kept_with_the_header_whether_set_before_or_after_the_file() {
    let scratch = Scratch::new("metadata");
    let meta: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let after = scratch.path("after.ring");
    let before = scratch.path("before.ring");
    let cfgs = [
        (
            after.clone(),
            config(&after, Mode::Discard, 1, 1024, 4).metadata(meta.clone()),
        ),
        (
            before.clone(),
            ringtrace_ring::RingConfig::default()
                .cpus(1)
                .page_size(1024)
                .per_cpu_bytes(4096)
                .quarantine_pages(2)
                .metadata(meta.clone())
                .file(&before),
        ),
    ];
    for (path, cfg) in cfgs {
        let ring = RingBuffer::new(cfg, Counter::new()).unwrap();
        ring.cpu_writer(0).write(b"x").unwrap();
        drop(ring);
        let rec = file::recover(&path).unwrap();
        assert_eq!(rec.metadata.as_deref(), Ok(&meta[..]), "{}", path.display());
        assert_eq!(rec.header.layout.metadata_len, meta.len() as u64);
        assert!(rec.header.layout.data_offset >= 4096 + meta.len() as u64);
        assert_counts_agree(&rec);
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn recovery_starts_after_what_the_reader_consumed_in_place_or_by_page() {
    let scratch = Scratch::new("reader");
    // (events read one by one, then whole pages read, then events again)
    for (first, pages, then) in [
        (0, 0, 0),
        (3, 0, 0),
        (0, 1, 0),
        (2, 1, 3),
        (0, 2, 1),
        (7, 0, 0),
    ] {
        let path = scratch.path(&format!("t-{first}-{pages}-{then}.ring"));
        let ring =
            RingBuffer::new(config(&path, Mode::Discard, 1, 256, 8), Counter::new()).unwrap();
        let want = write_events(&ring, 0, 0, 0, 14);
        let b = ring.cpu_buffer(0).unwrap();
        let mut read = Written::new();
        let one = |read: &mut Written| {
            let e = b.read_event().unwrap();
            read.push((e.ts, e.payload));
        };
        for _ in 0..first {
            one(&mut read);
        }
        for _ in 0..pages {
            let page = b.read_page().unwrap();
            read.extend(page.events().map(|(ts, p)| (ts, p.to_vec())));
        }
        for _ in 0..then {
            one(&mut read);
        }
        assert_eq!(read[..], want[..read.len()]);
        std::mem::forget(ring);
        let rec = file::recover(&path).unwrap();
        assert_eq!(
            events_of(&rec, 0)[..],
            want[read.len()..],
            "read {first} + {pages} pages + {then}"
        );
        assert_eq!(rec.cpus[0].file_stats.read, read.len() as u64);
        assert_counts_agree(&rec);
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_after_a_reader_held_a_page_counts_its_unread_events_lost() {
    let scratch = Scratch::new("append-reader");
    let path = scratch.path("t.ring");
    let clock = Counter::new();
    let ring = RingBuffer::new(config(&path, Mode::Discard, 1, 256, 8), clock.clone()).unwrap();
    let first = write_events(&ring, 0, 0, 0, 14);
    let b = ring.cpu_buffer(0).unwrap();
    let read: Written = (0..2)
        .map(|_| b.read_event().map(|e| (e.ts, e.payload)).unwrap())
        .collect();
    assert_eq!(read[..], first[..2]);
    drop(ring); // the reader goes, holding its page
    let ring =
        RingBuffer::new(config(&path, Mode::Discard, 1, 256, 8).append(true), clock).unwrap();
    let second = write_events(&ring, 0, 0, 14, 3);
    drop(ring);
    let rec = file::recover(&path).unwrap();
    let got = events_of(&rec, 0);
    let c = &rec.cpus[0];
    // What the dead reader held and had not read is lost, and counted;
    // everything else unread comes back, in order.
    let lost = c.file_stats.lost as usize;
    assert!(lost > 0, "the reader held no page with unread events");
    assert_eq!(
        got[..got.len() - second.len()],
        first[2 + lost..],
        "lost {lost}"
    );
    assert_eq!(got[got.len() - second.len()..], second[..]);
    assert_eq!(c.file_stats.read, 2);
    assert_eq!(c.file_stats.hit, 17);
    assert_counts_agree(&rec);
}

#[test]
#[cfg_attr(miri, ignore = "threads and a mapped file")]
fn recovering_a_live_ring_and_reader_returns_only_whole_written_events_in_order() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let scratch = Scratch::new("live");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(config(&path, Mode::Overwrite, 2, 256, 8), Counter::new()).unwrap();
    ring.sync_file().unwrap();
    let stop = AtomicBool::new(false);
    let written = [AtomicU64::new(0), AtomicU64::new(0)];
    let (mut changed, mut recovered) = (0, 0);
    std::thread::scope(|s| {
        for w in 0..2u32 {
            let (ring, stop, written) = (&ring, &stop, &written[w as usize]);
            s.spawn(move || {
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    ring.cpu_writer(w as usize)
                        .write(&common::payload(w, seq, len_for(w, seq)))
                        .unwrap();
                    seq += 1;
                    written.store(seq, Ordering::Relaxed);
                }
            });
        }
        // And a reader, taking pages out of the ring and putting spares in.
        let (ring2, stop2) = (&ring, &stop);
        s.spawn(move || {
            let mut n = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                let b = ring2.cpu_buffer((n % 2) as usize).unwrap();
                if n % 3 == 0 {
                    let _ = b.read_page();
                } else {
                    let _ = b.read_event();
                }
                n += 1;
            }
        });
        // While both write, and have gone round the ring a few times.
        let start = std::time::Instant::now();
        while written.iter().any(|w| w.load(Ordering::Relaxed) < 100) {
            std::thread::yield_now();
        }
        let mut rounds = 0;
        while rounds < 300 && start.elapsed() < std::time::Duration::from_secs(2) {
            rounds += 1;
            let rec = file::recover(&path).unwrap();
            assert_eq!(rec.writer, WriterState::Live);
            for c in &rec.cpus {
                let mut last = None;
                for e in &c.events {
                    let (w, seq) = common::check(&e.payload)
                        .unwrap_or_else(|err| panic!("a torn event: {err}"));
                    assert_eq!((w as usize, e.payload.len()), (c.cpu, len_for(w, seq)));
                    assert!(
                        last.is_none_or(|l| l < seq),
                        "cpu {}: {last:?} then {seq}",
                        c.cpu
                    );
                    last = Some(seq);
                }
                changed += c.counts.changed_while_read;
                recovered += c.counts.recovered;
                // A live page mid-write is never mistaken for a damaged one.
                assert!(
                    !c.problems.iter().any(|p| p.contains("damaged")),
                    "cpu {}: {:?} {:?}",
                    c.cpu,
                    c.problems,
                    c.counts
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    drop(ring);
    let rec = file::recover(&path).unwrap();
    assert_eq!(rec.writer, WriterState::Closed);
    assert_counts_agree(&rec);
    let written: Vec<u64> = written.iter().map(|w| w.load(Ordering::Relaxed)).collect();
    eprintln!("{recovered} events recovered, {changed} on pages that changed while read, of {written:?} written");
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn a_second_ring_of_this_process_over_an_open_file_is_refused() {
    // Two rings over one file would share its words: refused while the
    // first lives (even leaked), accepted once it is dropped.
    let scratch = Scratch::new("twice");
    let path = scratch.path("t.ring");
    let first = RingBuffer::new(config(&path, Mode::Discard, 1, 1024, 4), Counter::new()).unwrap();
    let second = RingBuffer::new(
        config(&path, Mode::Discard, 1, 1024, 4).append(true),
        Counter::new(),
    );
    let err = second.unwrap_err().to_string();
    assert!(err.contains("this process has it open"), "{err}");
    drop(first);
    RingBuffer::new(
        config(&path, Mode::Discard, 1, 1024, 4).append(true),
        Counter::new(),
    )
    .unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn append_with_other_metadata_of_the_same_length_is_a_mismatch() {
    let scratch = Scratch::new("meta");
    let path = scratch.path("t.ring");
    let cfg = || config(&path, Mode::Discard, 1, 1024, 4);
    drop(RingBuffer::new(cfg().metadata(b"{\"a\":1}".to_vec()), Counter::new()).unwrap());
    let err = RingBuffer::new(
        cfg().metadata(b"{\"b\":2}".to_vec()).append(true),
        Counter::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("metadata"), "{err}");
}

#[test]
#[cfg_attr(miri, ignore = "threads and a mapped file")]
fn a_live_ring_written_whole_and_in_pieces_is_never_recovered_as_damaged() {
    // Writers on the TSC (the whole-event path on rseq) and reservations
    // written in two halves, so that recoveries find pages with records
    // reserved, half written, whole but uncommitted: none of that is
    // damage, and every event returned is whole.
    use std::sync::atomic::{AtomicBool, Ordering};
    let scratch = Scratch::new("live-whole");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(
        config(&path, Mode::Overwrite, 2, 256, 8),
        common::tsc_or_local(),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let (mut recovered, mut rounds) = (0u64, 0);
    std::thread::scope(|s| {
        for w in 0..2u32 {
            let (ring, stop) = (&ring, &stop);
            s.spawn(move || {
                common::move_to_cpu(w as usize);
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let p = common::payload(w, seq, len_for(w, seq));
                    if seq % 2 == 0 {
                        ring.cpu_writer(w as usize).write(&p).unwrap();
                    } else if let Ok(mut r) = ring.cpu_writer(w as usize).reserve(p.len()) {
                        let half = (p.len() / 2) & !3;
                        r.write_at(0, &p[..half]);
                        std::hint::spin_loop();
                        r.write_at(half, &p[half..]);
                        r.commit();
                    }
                    seq += 1;
                }
            });
        }
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(1500) {
            rounds += 1;
            let rec = file::recover(&path).unwrap();
            for c in &rec.cpus {
                assert!(
                    !c.problems.iter().any(|p| p.contains("damaged")),
                    "round {rounds}, cpu {}: {:?} {:?}",
                    c.cpu,
                    c.problems,
                    c.counts
                );
                for e in &c.events {
                    common::check(&e.payload).unwrap_or_else(|err| panic!("a torn event: {err}"));
                }
                recovered += c.counts.recovered;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(recovered > 0, "nothing recovered in {rounds} rounds");
    eprintln!("{rounds} live recoveries, {recovered} events");
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn laps_recover_the_newest_events_whether_claims_swap_or_zero_in_place() {
    // Without two quarantine pages a file ring has no pool of zeroed pages
    // and its claims zero in place; with them, claims swap a zeroed page
    // in. Either way every lap's pages must recover as written.
    for quarantine in [0, 1, 2, 8] {
        let scratch = Scratch::new("claim-kinds");
        let path = scratch.path("t.ring");
        let cfg = config(&path, Mode::Overwrite, 1, 256, 4).quarantine_pages(quarantine);
        let ring = RingBuffer::new(cfg, Counter::new()).unwrap();
        let all = write_events(&ring, 0, 0, 0, 400);
        drop(ring);
        let rec = file::recover(&path).unwrap();
        let got = events_of(&rec, 0);
        assert!(!got.is_empty(), "quarantine {quarantine}: none recovered");
        assert_eq!(
            got[..],
            all[all.len() - got.len()..],
            "quarantine {quarantine}: not the newest events, in order"
        );
        let c = &rec.cpus[0];
        assert_eq!(
            c.file_stats.overrun + c.counts.recovered,
            400,
            "quarantine {quarantine}"
        );
        assert_counts_agree(&rec);
    }
}
