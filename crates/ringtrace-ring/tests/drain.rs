//! Draining in place (`CpuBuffer::read_committed`), as a recorder does: in
//! this process beside the writers, and from another process over a ring
//! file (`file::LiveFile`). Every event comes out once, intact and in
//! order, or is counted; a discard ring drained as fast as it fills never
//! refuses; a child's ring is drained to its last event.

mod common;

use common::{check, check_seen, payload};
use ringtrace_clock::Counter;
use ringtrace_ring::file::{self, LiveFile, WriterState};
use ringtrace_ring::{Mode, PageBuf, ReserveError, RingBuffer, RingConfig, WritePath};
use ringtrace_testkit::{self_command, TempDir};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The events of a drained piece as (time, payload).
fn events_of(page: &PageBuf) -> Vec<(u64, Vec<u8>)> {
    page.events().map(|(ts, p)| (ts, p.to_vec())).collect()
}

fn paths() -> Vec<WritePath> {
    let mut paths = vec![WritePath::Cas];
    if ringtrace_ring::rseq::unavailable().is_none() {
        paths.push(WritePath::Rseq);
    }
    paths
}

#[test]
fn pieces_of_an_open_page_carry_each_event_once_with_its_time() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(512)
        .per_cpu_bytes(4096)
        .mode(Mode::Discard);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    let mut written = Vec::new();
    let mut drained = Vec::new();
    for i in 0..500u64 {
        let p = payload(1, i, 16 + (i % 40) as usize);
        let ts = ring.cpu_writer(0).write(&p).unwrap();
        written.push((ts, p));
        if i % 7 == 0 {
            while let Some(piece) = b.read_committed() {
                assert!(piece.bytes.len().is_power_of_two());
                assert!(piece.bytes.len() <= 512);
                drained.extend(events_of(&piece));
            }
        }
    }
    while let Some(piece) = b.read_committed() {
        drained.extend(events_of(&piece));
    }
    assert_eq!(drained, written);
    let s = ring.stats();
    assert_eq!((s.read, s.missed, s.entries), (500, 0, 0), "{s:?}");
}

#[test]
fn events_read_by_event_first_are_not_handed_out_again() {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(2048)
        .mode(Mode::Discard);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let b = ring.cpu_buffer(0).unwrap();
    for i in 0..20u64 {
        ring.cpu_writer(0).write(&payload(1, i, 16)).unwrap();
    }
    let mut seqs = Vec::new();
    for _ in 0..3 {
        seqs.push(check(&b.read_event().unwrap().payload).unwrap().1);
    }
    while let Some(piece) = b.read_committed() {
        seqs.extend(events_of(&piece).iter().map(|(_, p)| check(p).unwrap().1));
    }
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
}

/// Three writer threads on two CPU buffers (more threads than CPUs) and a
/// drainer: in discard mode every event is drained or refused and
/// counted, each writer's in order on each buffer; in overwrite mode,
/// drained or overrun.
#[test]
#[cfg_attr(miri, ignore = "threads at scale")]
fn a_drainer_beside_writers_reads_every_event_once_or_counts_it() {
    for path in paths() {
        for mode in [Mode::Discard, Mode::Overwrite] {
            let config = RingConfig::default()
                .cpus(2)
                .page_size(1024)
                .per_cpu_bytes(16 * 1024)
                .mode(mode)
                .write_path(path);
            let ring = Arc::new(RingBuffer::new(config, Counter::new()).unwrap());
            let done = Arc::new(AtomicBool::new(false));
            let writers: Vec<_> = (0..3u32)
                .map(|w| {
                    let ring = Arc::clone(&ring);
                    std::thread::spawn(move || {
                        let mut refused = 0u64;
                        for seq in 0..20_000u64 {
                            match ring.write(&payload(w, seq, 16 + (seq % 24) as usize)) {
                                Ok(_) => {}
                                Err(
                                    ReserveError::Full
                                    | ReserveError::Busy
                                    | ReserveError::Preparing,
                                ) => refused += 1,
                                Err(e) => panic!("{e}"),
                            }
                        }
                        refused
                    })
                })
                .collect();
            let drainer = {
                let ring = Arc::clone(&ring);
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let mut seen: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); 2];
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        let mut got = 0;
                        for (cpu, b) in ring.cpu_buffers().iter().enumerate() {
                            while let Some(piece) = b.read_committed() {
                                assert_eq!(piece.cpu, cpu);
                                seen[cpu].extend(events_of(&piece));
                                got += 1;
                            }
                        }
                        if finished && got == 0 {
                            return seen;
                        }
                        if got == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            };
            let refused: u64 = writers.into_iter().map(|t| t.join().unwrap()).sum();
            done.store(true, Ordering::Release);
            let seen = drainer.join().unwrap();
            let stats = ring.stats();
            check_seen(&seen, &stats, mode, 0);
            assert_eq!(stats.missed, refused, "{path:?} {mode:?}: {stats:?}");
            assert_eq!(stats.entries, 0, "{path:?} {mode:?}: {stats:?}");
        }
    }
}

/// Set in the child: the ring file it records into.
const CHILD_RING: &str = "RINGTRACE_DRAIN_CHILD_RING";
/// Events per child thread.
const CHILD_EVENTS: u64 = 30_000;

/// The child: two threads write numbered events into a small discard
/// ring file, waiting (a blocking writer) whenever it is full, so that
/// every event gets in once the parent drains; then it exits without
/// dropping its ring.
#[test]
fn child_entry() {
    let Ok(path) = std::env::var(CHILD_RING) else {
        return;
    };
    let config = RingConfig::default()
        .cpus(2)
        .page_size(1024)
        .per_cpu_bytes(8 * 1024)
        .mode(Mode::Discard)
        .file(&path);
    let ring: &'static RingBuffer<Counter> =
        Box::leak(Box::new(RingBuffer::new(config, Counter::new()).unwrap()));
    let threads: Vec<_> = (0..2u32)
        .map(|w| {
            std::thread::spawn(move || {
                for seq in 0..CHILD_EVENTS {
                    let p = payload(w, seq, 20);
                    let deadline = Instant::now() + Duration::from_secs(30);
                    while ring.cpu_writer(w as usize).write(&p).is_err() {
                        assert!(Instant::now() < deadline, "nobody drained the ring");
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    std::process::exit(0);
}

#[test]
#[cfg_attr(miri, ignore = "processes and files")]
fn another_process_drains_a_live_ring_file_to_its_last_event() {
    let dir = TempDir::new("drain-child");
    let path = dir.path().join("child.ring");
    let mut child = self_command()
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD_RING, &path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let live = loop {
        match LiveFile::open(&path) {
            Ok(live) if live.writer() == WriterState::Live => break live,
            _ => {
                assert!(Instant::now() < deadline, "the child made no ring");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    };
    assert!(
        LiveFile::open(&path).is_err(),
        "a second drainer was let in"
    );
    let mut next: HashMap<u32, u64> = HashMap::new();
    let mut take = |page: PageBuf| {
        for (_, p) in events_of(&page) {
            let (w, seq) = check(&p).unwrap();
            let want = next.entry(w).or_insert(0);
            assert_eq!(seq, *want, "writer {w}: event {seq} after {}", *want);
            *want += 1;
        }
    };
    let status = loop {
        let mut got = false;
        for b in live.cpu_buffers() {
            while let Some(page) = b.read_committed() {
                take(page);
                got = true;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !got {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(Instant::now() < deadline, "the child did not finish");
    };
    assert!(status.success(), "child: {status}");
    for b in live.cpu_buffers() {
        while let Some(page) = b.read_committed() {
            take(page);
        }
    }
    // A normal exit marks the file exited; what a drainer left would be in
    // it.
    assert!(
        matches!(live.writer(), WriterState::Exited(_)),
        "{:?}",
        live.writer()
    );
    let left = file::recover(&path).unwrap();
    assert!(
        left.merged().is_empty(),
        "{} events left",
        left.merged().len()
    );
    assert_eq!(next.get(&0), Some(&CHILD_EVENTS));
    assert_eq!(next.get(&1), Some(&CHILD_EVENTS));
    let stats = live.stats();
    assert_eq!(stats.read, 2 * CHILD_EVENTS, "{stats:?}");
    assert_eq!(stats.lost, 0, "{stats:?}");
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn opening_what_is_not_a_live_ring_names_the_file_and_the_reason() {
    let dir = TempDir::new("drain-bad");
    let missing = dir.path().join("missing.ring");
    let err = LiveFile::open(&missing).unwrap_err().to_string();
    assert!(err.contains("missing.ring"), "{err}");
    let junk = dir.path().join("junk.ring");
    std::fs::write(&junk, vec![7u8; 9000]).unwrap();
    let err = LiveFile::open(&junk).unwrap_err().to_string();
    assert!(
        err.contains("junk.ring") && err.contains("not a ringtrace"),
        "{err}"
    );
    let short = dir.path().join("short.ring");
    {
        let config = RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(8192)
            .file(&short);
        let ring = RingBuffer::new(config, Counter::new()).unwrap();
        ring.write(b"x").unwrap();
    }
    let len = std::fs::metadata(&short).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&short)
        .unwrap()
        .set_len(len - 4096)
        .unwrap();
    let err = LiveFile::open(&short).unwrap_err().to_string();
    assert!(
        err.contains("short.ring") && err.contains("header says"),
        "{err}"
    );
}

/// A reader thread that drains buffer 0 of `ring`, sleeping `pause`
/// between passes, until `done` is set and a pass finds nothing; returns
/// the sequence numbers of the events `keep` accepts, in order.
fn spawn_drainer(
    ring: &Arc<RingBuffer<Counter>>,
    done: &Arc<AtomicBool>,
    pause: Duration,
    keep: fn(&[u8]) -> bool,
) -> std::thread::JoinHandle<Vec<u64>> {
    let (ring, done) = (Arc::clone(ring), Arc::clone(done));
    std::thread::spawn(move || {
        let mut seqs = Vec::new();
        loop {
            let finished = done.load(Ordering::Acquire);
            let mut got = false;
            while let Some(page) = ring.cpu_buffer(0).unwrap().read_committed() {
                seqs.extend(
                    events_of(&page)
                        .iter()
                        .filter(|(_, p)| keep(p))
                        .map(|(_, p)| check(p).unwrap().1),
                );
                got = true;
            }
            if finished && !got {
                return seqs;
            }
            std::thread::sleep(pause);
        }
    })
}

/// One CPU, four 256-byte pages, discard mode, writers waiting up to
/// `wait` on `path`.
fn small_blocking(path: WritePath, wait: Duration) -> RingConfig {
    RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(1024)
        .mode(Mode::Discard)
        .write_path(path)
        .blocking(wait)
}

/// A blocking ring drained by a slow reader: every write gets in, the
/// waits are counted in `blocked`, nothing in `missed`; with nobody
/// reading, a write gives up after its wait and counts in `timed_out`.
#[test]
#[cfg_attr(
    miri,
    ignore = "timing: only at native speed does the writer outrun a reader that sleeps 300 us"
)]
fn a_blocking_writer_waits_for_the_drainer_and_then_counts_what_timed_out() {
    for path in paths() {
        let config = small_blocking(path, Duration::from_secs(10));
        let ring = Arc::new(RingBuffer::new(config, Counter::new()).unwrap());
        let done = Arc::new(AtomicBool::new(false));
        // A slow reader: the writer fills the ring and waits.
        let drainer = spawn_drainer(&ring, &done, Duration::from_micros(300), |_| true);
        let writer = ring.cpu_writer(0);
        for seq in 0..2000u64 {
            writer.write(&payload(1, seq, 20)).unwrap();
        }
        done.store(true, Ordering::Release);
        assert_eq!(drainer.join().unwrap(), (0..2000).collect::<Vec<_>>());
        let s = ring.stats();
        assert_eq!(
            (s.missed, s.timed_out, s.read),
            (0, 0, 2000),
            "{path:?}: {s:?}"
        );
        assert!(s.blocked > 0, "{path:?}: no write waited: {s:?}");
    }
    let config = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(512)
        .mode(Mode::Discard)
        .blocking(Duration::from_millis(30));
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let mut refused = 0;
    let start = Instant::now();
    for seq in 0..20u64 {
        if let Err(e) = ring.cpu_writer(0).write(&payload(1, seq, 20)) {
            assert_eq!(e, ReserveError::TimedOut);
            refused += 1;
        }
    }
    assert!(start.elapsed() >= Duration::from_millis(30 * refused));
    let s = ring.stats();
    assert!(refused > 0);
    assert_eq!(
        (s.missed, s.timed_out, s.full()),
        (refused, refused, 0),
        "{s:?}"
    );
}

/// While a writer of a blocking ring waits for room, no refusal is
/// counted for it (a reader recording the refusals as they grow, as a
/// recorder's loss entries do, would record a loss that never happens);
/// once a reader makes room it gets in and counts in `blocked`. A write
/// through the calls that do not wait (`write_on`) is refused and counted
/// at once.
#[test]
#[cfg_attr(miri, ignore = "timing: a writer left waiting for 100 ms")]
fn a_waiting_writer_is_not_counted_refused_before_its_wait_ends() {
    for path in paths() {
        let config = small_blocking(path, Duration::from_secs(10));
        let ring = Arc::new(RingBuffer::new(config, Counter::new()).unwrap());
        let mut seq = 0u64;
        // Filled without waiting: `write_on` never waits.
        #[allow(deprecated)]
        while ring.write_on(0, &payload(1, seq, 20)).is_ok() {
            seq += 1;
        }
        let unwaited = ring.stats().missed;
        assert_eq!(unwaited, 1, "{path:?}: the refusal without a wait counts");
        let waiter = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || ring.cpu_writer(0).write(&payload(1, seq, 20)))
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(100) {
            assert_eq!(
                ring.stats().missed,
                unwaited,
                "{path:?}: a waiting write counted as refused"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!waiter.is_finished(), "{path:?}: the write did not wait");
        while ring.cpu_buffer(0).unwrap().read_committed().is_some() {}
        assert!(waiter.join().unwrap().is_ok(), "{path:?}");
        let s = ring.stats();
        assert_eq!(
            (s.missed, s.blocked, s.timed_out),
            (1, 1, 0),
            "{path:?}: {s:?}"
        );
    }
}

/// What `read_committed_into` says of each page it hands out (events,
/// first and last times, losses) is what the page's records say, for
/// whole pages, pieces of open ones and the rest of a page a read by event
/// took, with discarded reservations and long events among them, and
/// with overruns in overwrite mode.
#[test]
fn a_drained_page_reports_what_its_records_hold() {
    use ringtrace_ring::DrainedPage;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let rounds: u64 = if cfg!(miri) { 300 } else { 20_000 };
    for mode in [Mode::Discard, Mode::Overwrite] {
        let config = RingConfig::default()
            .cpus(1)
            .page_size(256)
            .per_cpu_bytes(1024)
            .mode(mode);
        let ring = RingBuffer::new(config, Counter::new()).unwrap();
        let b = ring.cpu_buffer(0).unwrap();
        let mut page = PageBuf {
            cpu: 7,
            bytes: vec![0xEE; 3],
        };
        let (mut handed, mut pages) = (0u64, 0u64);
        for _ in 0..rounds {
            match next() % 8 {
                0..=3 => {
                    let len = (next() % 40) as usize;
                    let _ = ring.cpu_writer(0).write(&vec![1; len]);
                }
                4 => {
                    // Dropped: a discard record among the events.
                    if let Ok(r) = ring.cpu_writer(0).reserve((next() % 24) as usize) {
                        drop(r);
                    }
                }
                5 => {
                    let _ = ring
                        .cpu_writer(0)
                        .write(&vec![2; 150 + (next() % 60) as usize]);
                }
                6 if next() % 4 == 0 => {
                    // A read by event: a page taken out, whose rest the
                    // next drain hands out whole.
                    if b.read_event().is_some() {
                        handed += 1;
                    }
                }
                _ => {
                    let before = page.clone();
                    match b.read_committed_into(&mut page) {
                        None => assert_eq!(page, before, "{mode:?}: left as it was"),
                        Some(found) => {
                            let events: Vec<u64> = page.events().map(|(ts, _)| ts).collect();
                            let base = page.header().base_ts;
                            let expect = (
                                events.len() as u32,
                                events.first().copied().unwrap_or(base),
                                events.last().copied().unwrap_or(base),
                                u64::from(page.header().lost),
                            );
                            let DrainedPage {
                                events: n,
                                first_ts,
                                last_ts,
                                lost,
                                ..
                            } = found;
                            assert_eq!((n, first_ts, last_ts, lost), expect, "{mode:?}");
                            assert_eq!(page.cpu, 0);
                            assert!(
                                n > 0 || lost > 0,
                                "{mode:?}: a page handed out holds events or losses"
                            );
                            handed += u64::from(n);
                            pages += 1;
                        }
                    }
                }
            }
        }
        let s = ring.stats();
        // About one round in five drains (a page or a piece of one).
        assert!(pages > rounds / 40, "{mode:?}: only {pages} pages");
        assert_eq!(handed, s.read, "{mode:?}: {s:?}");
    }
}

/// A blocking writer that comes round to a page another thread's open
/// reservation still holds (busy) waits for that commit, as it waits for
/// a reader, instead of losing the event; a writer that waits its whole
/// timeout on a busy page counts in `timed_out`, not in `busy`.
#[test]
#[cfg_attr(
    miri,
    ignore = "timing: a reservation held open for 150 ms by another thread"
)]
fn a_blocking_writer_waits_for_a_page_held_by_an_open_reservation() {
    use ringtrace_ring::format::max_payload;
    for path in paths() {
        let config = small_blocking(path, Duration::from_secs(10)).fixup_after(None);
        let ring = Arc::new(RingBuffer::new(config, Counter::new()).unwrap());
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                let mut r = ring.cpu_writer(0).reserve(max_payload(256)).unwrap();
                r.write(&[9; 8]);
                held_tx.send(Instant::now()).unwrap();
                std::thread::sleep(Duration::from_millis(150));
                r.commit();
            })
        };
        let held_at = held_rx.recv().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        // The held reservation's event (a page's whole payload) left out.
        let drainer = spawn_drainer(&ring, &done, Duration::from_micros(200), |p| {
            p.len() != max_payload(256)
        });
        // Three pages' worth and more: the writer comes round to the held
        // page while it is still held.
        let writer = ring.cpu_writer(0);
        for seq in 0..200u64 {
            writer.write(&payload(1, seq, 20)).unwrap();
        }
        let waited = held_at.elapsed();
        holder.join().unwrap();
        done.store(true, Ordering::Release);
        assert_eq!(drainer.join().unwrap(), (0..200).collect::<Vec<_>>());
        let s = ring.stats();
        assert_eq!(
            (s.missed, s.busy, s.timed_out),
            (0, 0, 0),
            "{path:?}: {s:?}"
        );
        assert!(s.blocked > 0, "{path:?}: no write waited: {s:?}");
        assert!(
            waited >= Duration::from_millis(140),
            "{path:?}: the writes ended {waited:?} after the page was held, before its commit"
        );
    }
    // Held for longer than the wait: one write gives up, in `timed_out`.
    let config = small_blocking(WritePath::Auto, Duration::from_millis(30)).fixup_after(None);
    let ring = RingBuffer::new(config, Counter::new()).unwrap();
    let held = ring.cpu_writer(0).reserve(max_payload(256)).unwrap();
    let mut refused = Vec::new();
    for seq in 0..40u64 {
        if let Err(e) = ring.cpu_writer(0).write(&payload(1, seq, 20)) {
            refused.push(e);
        }
    }
    assert!(!refused.is_empty());
    // Said as what it is counted as: not the last cause seen (busy).
    assert!(
        refused.iter().all(|e| *e == ReserveError::TimedOut),
        "{refused:?}"
    );
    let s = ring.stats();
    let n = refused.len() as u64;
    assert_eq!(
        (s.missed, s.timed_out, s.busy, s.full()),
        (n, n, 0, 0),
        "{s:?}"
    );
    held.commit();
}

/// Events re-encoded by `PageBuilder` (what a recorder does with a dead
/// writer's recovered events) read back exactly, whatever their sizes and
/// the gaps between their times.
#[test]
fn events_built_into_pages_read_back_exactly() {
    use ringtrace_ring::format::PageBuilder;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Miri reads every byte a thousand times slower.
    let count = if cfg!(miri) { 150 } else { 2000 };
    for page_size in [64usize, 256, 4096] {
        let mut events = Vec::new();
        let mut ts = next() % 1000;
        for _ in 0..count {
            ts = ts.saturating_add(match next() % 64 {
                0..=20 => 0,
                21..=50 => next() % 100,
                51..=62 => next() % (1 << 40),
                _ => next() % (1 << 59), // past a time extend: a stamp
            });
            let max = ringtrace_ring::format::max_payload(page_size).min(300);
            let len = (next() % (max as u64 + 1)) as usize;
            let payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            events.push((ts, payload));
        }
        let mut pages = Vec::new();
        let mut b = PageBuilder::new(page_size, 0);
        for (ts, p) in &events {
            if !b.push(*ts, p) {
                pages.push(
                    std::mem::replace(&mut b, PageBuilder::new(page_size, pages.len() as u64 + 1))
                        .finish(0),
                );
                assert!(
                    b.push(*ts, p),
                    "an event of {} bytes fits no {page_size}-byte page",
                    p.len()
                );
            }
        }
        pages.push(b.finish(0));
        let back: Vec<(u64, Vec<u8>)> = pages
            .into_iter()
            .flat_map(|bytes| {
                let page = PageBuf { cpu: 0, bytes };
                events_of(&page)
            })
            .collect();
        assert_eq!(back, events, "page size {page_size}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "files")]
fn a_drainer_sees_the_metadata_annex_grow_as_the_writer_appends() {
    let dir = TempDir::new("drain-annex");
    // A one-CPU discard ring in the file `name`, with `annex` bytes of
    // metadata annex.
    let ring_file = |name: &str, annex: usize| {
        let path = dir.path().join(name);
        let config = RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(16 * 1024)
            .metadata_capacity(annex)
            .mode(Mode::Discard)
            .file(&path);
        (RingBuffer::new(config, Counter::new()).unwrap(), path)
    };
    let (ring, path) = ring_file("app.ring", 4096);
    let live = LiveFile::open(&path).unwrap();
    assert_eq!(live.metadata_len(), 0);
    ring.append_metadata(b"callsite one").unwrap();
    let one = live.metadata_len();
    assert!(one > 0, "the first record's length is not seen");
    assert_eq!(
        live.metadata_records().unwrap().0,
        [b"callsite one".to_vec()]
    );
    ring.append_metadata(b"callsite two").unwrap();
    assert!(
        live.metadata_len() > one,
        "the second record's length is not seen"
    );
    assert_eq!(
        live.metadata_records().unwrap().0,
        [b"callsite one".to_vec(), b"callsite two".to_vec()]
    );
    // A file made without an annex has none to report.
    let (_bare_ring, bare) = ring_file("bare.ring", 0);
    assert_eq!(LiveFile::open(&bare).unwrap().metadata_len(), 0);
}
