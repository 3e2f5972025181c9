//! Stress: more writer threads than CPUs, threads moved between CPUs while
//! they write, a timer signal whose handler writes too, nested inside the
//! interrupted thread's own writes, and (in one run) writers that die
//! between reserve and commit. A consumer reads throughout. At the end every
//! event is accounted for, every payload is intact (checksummed), nothing is
//! duplicated, and each CPU buffer's timestamps never decrease. A second
//! test has one writer and a reader alternating event and page reads, and
//! checks that each loss is reported exactly where it happened.
//!
//! Sized for a 2-core machine: a few seconds in a debug build.

mod common;

use common::{move_to_cpu, Shared};

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer};
use ringtrace_clock::ClockSpec;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const WRITERS: u32 = 4;
const EVENTS_PER_WRITER: u64 = 20_000;

/// How often a writer dies mid-event: every `n`th of its reservations is
/// forgotten (never committed nor dropped), if set.
type DeadEvery = Option<u64>;

fn stress(
    mode: Mode,
    shared: &'static OnceLock<Shared>,
    handler: fn(i32),
    signal: i32,
    dead_every: DeadEvery,
) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let config = RingConfig::default()
        .page_size(1024)
        .per_cpu_bytes(64 * 1024)
        .mode(mode)
        // With dead writers, the reader takes their pages out soon (and
        // with them, now and then, a live writer's that was preempted).
        // Without, it never does: a live writer stalled past any bound (it
        // happened under qemu-user on a loaded host: 500 ms between a
        // reservation and its commit) would otherwise count as dead, and
        // "nothing lost" could not be asserted exactly.
        .fixup_after(dead_every.map(|_| Duration::from_millis(2)));
    let clock = "local".parse::<ClockSpec>().unwrap().build().unwrap();
    let _ = shared.set(Shared::new(RingBuffer::new(config, clock).unwrap()));
    let s = shared.get().unwrap();
    interrupt::install_irq_handler(signal, handler).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || common::consume_until_done(&s.ring, &done))
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::thread::spawn(move || {
                let timer = (w == 0).then(|| {
                    IrqTimer::start(current_thread_id(), signal, Duration::from_micros(200))
                        .unwrap()
                });
                let (mut ok, mut dead) = (0u64, 0u64);
                for seq in 0..EVENTS_PER_WRITER {
                    if seq % 1000 == 0 {
                        move_to_cpu((seq / 1000 + u64::from(w)) as usize % cpus);
                    }
                    let p = common::payload(w, seq, 16 + (seq % 48) as usize);
                    let Ok(mut r) = s.ring.reserve(p.len()) else {
                        continue;
                    };
                    r.write(&p);
                    if dead_every.is_some_and(|n| seq % n == n - 1) {
                        std::mem::forget(r);
                        dead += 1;
                        continue;
                    }
                    r.commit();
                    ok += 1;
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
    interrupt::uninstall_irq_handler(signal).unwrap();

    let handler_ok = s.handler_ok.load(Ordering::Relaxed);
    assert!(
        s.handler_seq.load(Ordering::Relaxed) > 0,
        "the timer never fired"
    );
    let stats = s.ring.stats();
    // A dead writer's reservation never ended: it is in no count.
    assert_eq!(stats.hit, written + handler_ok, "{stats:?}");
    assert!(stats.pages_quarantined <= dead, "{stats:?}");
    assert_eq!(stats.fixups_refused, 0, "{stats:?}");
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
    assert_eq!(stats.entries, 0, "{stats:?}");

    common::check_seen(&seen, &stats, mode, dead);
}

static OVERWRITE: OnceLock<Shared> = OnceLock::new();
static DISCARD: OnceLock<Shared> = OnceLock::new();
static DEAD_WRITERS: OnceLock<Shared> = OnceLock::new();

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn overwrite_mode_accounts_for_every_event_under_migration_and_signals() {
    stress(
        Mode::Overwrite,
        &OVERWRITE,
        |_| common::on_tick(OVERWRITE.get().unwrap(), 24),
        libc::SIGRTMIN() + 7,
        None,
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn discard_mode_loses_nothing_accepted_under_migration_and_signals() {
    stress(
        Mode::Discard,
        &DISCARD,
        |_| common::on_tick(DISCARD.get().unwrap(), 24),
        libc::SIGRTMIN() + 8,
        None,
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn writers_dying_mid_event_neither_wedge_the_ring_nor_break_its_accounting() {
    stress(
        Mode::Overwrite,
        &DEAD_WRITERS,
        |_| common::on_tick(DEAD_WRITERS.get().unwrap(), 24),
        libc::SIGRTMIN() + 10,
        Some(2_500),
    );
}

fn id(payload: &[u8]) -> u64 {
    u64::from_le_bytes(payload[..8].try_into().unwrap())
}

#[test]
#[cfg_attr(miri, ignore = "threads at scale")]
fn a_concurrent_reader_learns_of_each_loss_exactly_where_it_happened() {
    // One writer thread, in order, so the gap between two ids read is
    // exactly what was lost between them; a reader alternating event and
    // page reads must be told exactly that, on the first event after it.
    let ring = Arc::new(
        RingBuffer::new(
            RingConfig::default()
                .cpus(1)
                .page_size(256)
                .per_cpu_bytes(1024)
                .fixup_after(None),
            ringtrace_clock::Counter::new(),
        )
        .unwrap(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (ring, done) = (Arc::clone(&ring), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut i = 0u64;
            let until = Instant::now() + Duration::from_millis(800);
            while Instant::now() < until {
                for _ in 0..64 {
                    ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
                    i += 1;
                }
            }
            done.store(true, Ordering::Release);
            i
        })
    };
    let b = ring.cpu_buffer(0).unwrap();
    let mut last: Option<u64> = None;
    let mut wrong = Vec::new();
    let mut reads = 0u64;
    let mut check = |got: u64, lost: u64| {
        let want = match last {
            Some(k) => got - k - 1,
            None => got,
        };
        if lost != want && wrong.len() < 10 {
            wrong.push((last, got, lost, want));
        }
        last = Some(got);
    };
    loop {
        let finished = done.load(Ordering::Acquire);
        if finished {
            ring.flush();
        }
        let mut got = 0;
        for _ in 0..8 {
            if let Some(e) = b.read_event() {
                check(id(&e.payload), e.lost_before);
                got += 1;
            }
        }
        if let Some(page) = b.read_page() {
            let lost = u64::from(page.header().lost);
            for (n, (_, p)) in page.events().enumerate() {
                check(id(p), if n == 0 { lost } else { 0 });
                got += 1;
            }
        }
        reads += got;
        if finished && got == 0 {
            break;
        }
    }
    let written = writer.join().unwrap();
    let s = ring.stats();
    assert!(wrong.is_empty(), "(last, got, lost_before, gap): {wrong:?}");
    assert_eq!(last, Some(written - 1));
    assert_eq!(s.read, reads);
    assert_eq!(s.read + s.overrun, written, "{s:?}");
}
