//! Everything at once, through the public API only, as an outside check
//! would do it: more writers than CPUs, each mixing reservations and
//! one-call writes (whole-event writes with the TSC on the rseq path), on
//! their own CPU's buffer and (with 64-byte pages) on others' (a `CpuWriter`
//! made per event or kept, writing whole or reserving, by CPU numbers past the buffer count too:
//! remote updates, and shared mode on the rseq path), migrations, a
//! timer signal whose handler writes inside the interrupted writer's
//! event, writers that die between reserve and commit, a thread flushing
//! pages early, a thread iterating without consuming, and a consumer that
//! mixes event reads, page reads, merged reads and peeks, on pages from 64
//! bytes to 4 KiB, in both modes.
//!
//! Checked: no reader or iterator ever yields a payload that was not
//! committed whole (every payload carries a checksum), nothing is read
//! twice, a CPU buffer's time never goes back for its consumer, and at the
//! end the accounting identity holds with every loss counted.

mod common;

use common::{move_to_cpu, Shared};

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const WRITERS: u32 = 6;
/// How long the writers write.
const RUN: Duration = Duration::from_millis(400);
const DEAD_EVERY: u64 = 1_500;

/// What the consumer saw: (writer, seq) of every event, per CPU in order.
type Seen = Vec<Vec<(u32, u64)>>;

fn consume(s: &'static Shared, done: &AtomicBool) -> Seen {
    let ring = &s.ring;
    let mut seen: Seen = vec![Vec::new(); ring.cpus()];
    let mut last_ts = vec![0u64; ring.cpus()];
    let mut record = |cpu: usize, ts: u64, p: &[u8], seen: &mut Seen| {
        let id = common::check(p).unwrap_or_else(|e| panic!("cpu {cpu}: torn event: {e}"));
        assert!(ts >= last_ts[cpu], "cpu {cpu}: time went back");
        last_ts[cpu] = ts;
        seen[cpu].push(id);
    };
    for round in 0u64.. {
        let finished = done.load(Ordering::Acquire);
        if finished {
            ring.flush();
        }
        let mut got = 0;
        for (cpu, b) in ring.cpu_buffers().iter().enumerate() {
            match round % 4 {
                0 => {
                    while let Some(e) = b.read_event() {
                        record(cpu, e.ts, &e.payload, &mut seen);
                        got += 1;
                    }
                }
                1 => {
                    while let Some(page) = b.read_page() {
                        for (ts, p) in page.events() {
                            record(cpu, ts, p, &mut seen);
                            got += 1;
                        }
                    }
                }
                2 => {
                    while let Some(ts) = b.peek_timestamp() {
                        let Some(e) = b.read_event() else { break };
                        // A writer may overwrite the peeked event first.
                        assert!(e.ts >= ts, "cpu {cpu}: read older than peeked");
                        record(cpu, e.ts, &e.payload, &mut seen);
                        got += 1;
                    }
                }
                _ => {}
            }
        }
        if round % 4 == 3 {
            for e in ring.merged().take(500) {
                record(e.cpu, e.ts, &e.payload, &mut seen);
                got += 1;
            }
        }
        if finished && got == 0 && !ring.cpu_buffers().iter().any(|b| b.fixup()) {
            return seen;
        }
        if got == 0 {
            std::thread::yield_now();
        }
    }
    unreachable!()
}

fn iterate(s: &'static Shared, done: &AtomicBool) -> u64 {
    let mut yielded = 0;
    while !done.load(Ordering::Acquire) {
        for cpu in 0..s.ring.cpus() {
            let mut last = 0;
            for e in s.ring.iter(cpu).unwrap() {
                common::check(&e.payload).unwrap_or_else(|err| {
                    panic!("cpu {cpu}: the iterator yielded a torn event: {err}")
                });
                assert!(e.ts >= last, "cpu {cpu}: the iterator's time went back");
                last = e.ts;
                yielded += 1;
            }
        }
        std::thread::yield_now();
    }
    yielded
}

fn adversary(
    shared: &'static OnceLock<Shared>,
    handler: fn(i32),
    signal: i32,
    mode: Mode,
    page: usize,
    pages: usize,
    remote: bool,
) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let config = RingConfig::default()
        .cpus(2)
        .page_size(page)
        .per_cpu_bytes(page * pages)
        .mode(mode)
        .fixup_after(Some(Duration::from_millis(2)));
    let clock = common::tsc_or_local();
    let _ = shared.set(Shared::new(RingBuffer::new(config, clock).unwrap()));
    let s = shared.get().unwrap();
    interrupt::install_irq_handler(signal, handler).unwrap();
    let done: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let consumer = std::thread::spawn(move || consume(s, done));
    let iterator = std::thread::spawn(move || iterate(s, done));
    // Pages closed early, under the writers' feet.
    let flusher = std::thread::spawn(move || {
        while !done.load(Ordering::Acquire) {
            s.ring.flush();
            std::thread::sleep(Duration::from_micros(300));
        }
    });
    // 64-byte pages hold 24 payload bytes at most.
    let max_len = (page - 40).min(48);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::thread::spawn(move || {
                let timer = (w == 0).then(|| {
                    IrqTimer::start(current_thread_id(), signal, Duration::from_micros(150))
                        .unwrap()
                });
                let (mut ok, mut dead) = (0u64, 0u64);
                let until = Instant::now() + RUN;
                for seq in 0u64.. {
                    if seq % 64 == 0 && Instant::now() >= until {
                        break;
                    }
                    if seq % 500 == 0 {
                        move_to_cpu((seq / 500 + u64::from(w)) as usize % cpus);
                    }
                    let len = 16 + (seq as usize * 7) % (max_len - 15);
                    let p = common::payload(w, seq, len);
                    // With `remote`, another CPU's buffer now and then (a
                    // remote update on the rseq path, soon in shared mode),
                    // by a number at or past the buffer count too (taken
                    // modulo); else this CPU's, by number.
                    let target = if remote {
                        [0, 1, 7, usize::MAX][(seq as usize / 3 + w as usize) % 4]
                    } else {
                        ringtrace_ring::cpu::current_cpu()
                    };
                    let written = match seq % 6 {
                        // In one call (whole, where it can be).
                        1 => Some(s.ring.write(&p)),
                        3 => Some(s.ring.cpu_writer(target).write(&p)),
                        5 => Some(s.ring.cpu_writer(target).write(&p)),
                        _ => None,
                    };
                    if let Some(written) = written {
                        ok += u64::from(written.is_ok());
                        continue;
                    }
                    let reserved = match seq % 12 {
                        2 => s.ring.cpu_writer(target).reserve(p.len()),
                        4 => s.ring.cpu_writer(target).reserve(p.len()),
                        _ => s.ring.reserve(p.len()),
                    };
                    let Ok(mut r) = reserved else {
                        continue;
                    };
                    r.write(&p);
                    if seq % DEAD_EVERY == DEAD_EVERY - 1 {
                        std::mem::forget(r);
                        dead += 1;
                    } else {
                        r.commit();
                        ok += 1;
                    }
                }
                drop(timer);
                (ok, dead)
            })
        })
        .collect();
    let (mut written, mut dead) = (0, 0);
    for h in writers {
        let (ok, d) = h.join().unwrap();
        written += ok;
        dead += d;
    }
    done.store(true, Ordering::Release);
    let seen = consumer.join().unwrap();
    let yielded = iterator.join().unwrap();
    flusher.join().unwrap();
    interrupt::uninstall_irq_handler(signal).unwrap();

    let stats = s.ring.stats();
    let handler_ok = s.handler_ok.load(Ordering::Relaxed);
    assert_eq!(stats.hit, written + handler_ok, "{stats:?}");
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
    assert_eq!(stats.entries, 0, "{stats:?}");
    assert!(stats.pages_quarantined <= dead, "{stats:?}");
    let mut ids = HashSet::new();
    let mut total = 0;
    for events in &seen {
        for id in events {
            assert!(ids.insert(*id), "event {id:?} read twice");
            total += 1;
        }
    }
    assert_eq!(total, stats.read, "{stats:?}");
    if mode == Mode::Discard {
        assert_eq!(stats.overrun, 0, "{stats:?}");
    }
    let (fenced, shared) = (s.ring.remote_updates(), s.ring.shared_updates());
    eprintln!(
        "{mode:?} {page}: {stats:?} dead {dead} iterated {yielded} remote {fenced} shared {shared} ({} entries)",
        s.ring.shared_mode_entries()
    );
    // Writers wrote to the other CPU's buffer: on the rseq path those are
    // remote updates, with a fence and then in shared mode, so the run did
    // exercise both.
    if remote && cpus > 1 && s.ring.write_path() == ringtrace_ring::WritePath::Rseq {
        assert!(fenced > 0, "no remote update in the run");
        assert!(s.ring.shared_mode_entries() > 0, "no buffer went shared");
    }
    // Every dead writer's page was taken out by the end (the consumer's
    // last fixups), so the run did exercise the dead-writer path.
    assert!(dead == 0 || stats.pages_reclaimed > 0, "{stats:?}");
}

static SMALL_OVERWRITE: OnceLock<Shared> = OnceLock::new();
static SMALL_DISCARD: OnceLock<Shared> = OnceLock::new();
static PAGE_OVERWRITE: OnceLock<Shared> = OnceLock::new();

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn sixty_four_byte_pages_overwrite_mode_survive_everything_at_once() {
    adversary(
        &SMALL_OVERWRITE,
        |_| common::on_tick(SMALL_OVERWRITE.get().unwrap(), 16),
        libc::SIGRTMIN() + 11,
        Mode::Overwrite,
        64,
        8,
        true,
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn sixty_four_byte_pages_discard_mode_survive_everything_at_once() {
    adversary(
        &SMALL_DISCARD,
        |_| common::on_tick(SMALL_DISCARD.get().unwrap(), 16),
        libc::SIGRTMIN() + 12,
        Mode::Discard,
        64,
        16,
        true,
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn four_kib_pages_overwrite_mode_survive_everything_at_once() {
    adversary(
        &PAGE_OVERWRITE,
        |_| common::on_tick(PAGE_OVERWRITE.get().unwrap(), 16),
        libc::SIGRTMIN() + 13,
        Mode::Overwrite,
        4096,
        4,
        false,
    );
}
