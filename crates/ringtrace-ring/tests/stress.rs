//! Stress: more writer threads than CPUs, threads moved between CPUs while
//! they write, and a timer signal whose handler writes too, nested inside
//! the interrupted thread's own writes. A consumer reads throughout. At the
//! end every event is accounted for, every payload is intact (checksummed),
//! nothing is duplicated, and each CPU buffer's timestamps never decrease.
//!
//! Sized for a 2-core machine: a few seconds in a debug build.

mod common;

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer};
use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const WRITERS: u32 = 4;
const EVENTS_PER_WRITER: u64 = 20_000;
const HANDLER_WRITER: u32 = 99;

struct Shared {
    ring: RingBuffer<AnyClock>,
    handler_seq: AtomicU64,
    handler_ok: AtomicU64,
}

fn on_tick(shared: &Shared) {
    let seq = shared.handler_seq.fetch_add(1, Ordering::Relaxed);
    let p = common::payload(HANDLER_WRITER, seq, 24);
    if shared.ring.write(&p).is_ok() {
        shared.handler_ok.fetch_add(1, Ordering::Relaxed);
    }
}

fn move_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask; a CPU the
    // machine lacks only makes the call fail, which is fine for a hint.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn stress(mode: Mode, shared: &'static OnceLock<Shared>, handler: fn(i32), signal: i32) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let config = RingConfig::default()
        .page_size(1024)
        .per_cpu_bytes(64 * 1024)
        .mode(mode);
    let clock = "local".parse::<ClockSpec>().unwrap().build().unwrap();
    let _ = shared.set(Shared {
        ring: RingBuffer::new(config, clock).unwrap(),
        handler_seq: AtomicU64::new(0),
        handler_ok: AtomicU64::new(0),
    });
    let s = shared.get().unwrap();
    interrupt::install_irq_handler(signal, handler).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut seen: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); s.ring.cpus()];
            loop {
                let finished = done.load(Ordering::Acquire);
                if finished {
                    s.ring.flush();
                }
                let mut got = 0;
                for (cpu, b) in s.ring.cpu_buffers().iter().enumerate() {
                    while let Some(e) = b.read_event() {
                        seen[cpu].push((e.ts, e.payload));
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

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::thread::spawn(move || {
                let timer = (w == 0).then(|| {
                    IrqTimer::start(current_thread_id(), signal, Duration::from_micros(200))
                        .unwrap()
                });
                let mut ok = 0u64;
                for seq in 0..EVENTS_PER_WRITER {
                    if seq % 1000 == 0 {
                        move_to_cpu((seq / 1000 + u64::from(w)) as usize % cpus);
                    }
                    let p = common::payload(w, seq, 16 + (seq % 48) as usize);
                    let Ok(mut r) = s.ring.reserve(p.len()) else {
                        continue;
                    };
                    r.write(&p);
                    r.commit();
                    ok += 1;
                }
                drop(timer);
                ok
            })
        })
        .collect();
    let written: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
    done.store(true, Ordering::Release);
    let seen = consumer.join().unwrap();
    interrupt::uninstall_irq_handler(signal).unwrap();

    let handler_ok = s.handler_ok.load(Ordering::Relaxed);
    assert!(
        s.handler_seq.load(Ordering::Relaxed) > 0,
        "the timer never fired"
    );
    let stats = s.ring.stats();
    assert_eq!(stats.hit, written + handler_ok, "{stats:?}");
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
    assert_eq!(stats.entries, 0, "{stats:?}");

    let mut ids = HashSet::new();
    let mut total = 0u64;
    for (cpu, events) in seen.iter().enumerate() {
        let mut last_ts = 0;
        let mut last_seq: HashMap<u32, u64> = HashMap::new();
        for (ts, p) in events {
            let (w, seq) = common::check(p).unwrap_or_else(|e| panic!("cpu {cpu}: {e}"));
            assert!(
                *ts >= last_ts,
                "cpu {cpu}: time went back from {last_ts} to {ts}"
            );
            last_ts = *ts;
            assert!(ids.insert((w, seq)), "event ({w}, {seq}) read twice");
            if let Some(prev) = last_seq.insert(w, seq) {
                assert!(seq > prev, "cpu {cpu}: writer {w} event {seq} after {prev}");
            }
            total += 1;
        }
    }
    assert_eq!(total, stats.read);
    match mode {
        Mode::Discard => assert_eq!(total, stats.hit - stats.discarded, "{stats:?}"),
        Mode::Overwrite => assert_eq!(total + stats.overrun, stats.hit, "{stats:?}"),
    }
}

static OVERWRITE: OnceLock<Shared> = OnceLock::new();
static DISCARD: OnceLock<Shared> = OnceLock::new();

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn overwrite_mode_accounts_for_every_event_under_migration_and_signals() {
    stress(
        Mode::Overwrite,
        &OVERWRITE,
        |_| on_tick(OVERWRITE.get().unwrap()),
        libc::SIGRTMIN() + 7,
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads at scale")]
fn discard_mode_loses_nothing_accepted_under_migration_and_signals() {
    stress(
        Mode::Discard,
        &DISCARD,
        |_| on_tick(DISCARD.get().unwrap()),
        libc::SIGRTMIN() + 8,
    );
}
