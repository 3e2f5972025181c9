//! `ringtrace clocks`: seed 004's trace_clock_local trade-off, measured for
//! every clock source under every protection.
//!
//! For each combination:
//! - `read_ns`: the median cost of one clock read;
//! - `record_ns`: the median cost of one recorded event (reserve, stamp,
//!   16-byte write, commit) on one CPU buffer;
//! - `inversions`: while a timer signal interrupts the writer at a high
//!   rate and its handler writes events too (the userspace interrupt),
//!   how many events' raw timestamps preceded the previous event in their
//!   buffer: the kernel's "seldom incorrect timestamp", counted before the
//!   ring's correction (its `ts_fixups`), out of `events`;
//! - `skew_ns`: the largest amount by which a read on one CPU was behind a
//!   read on another CPU that happened before it (two pinned threads taking
//!   turns); 0 for clocks that are monotonic across CPUs.

use crate::sched;
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer};
use ringtrace_clock::{measure_read_cost, AnyClock, Clock, ClockSpec, TickConversion};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One clock under one protection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockRow {
    /// The source (`tsc`, `global:mono`, ...).
    pub clock: String,
    /// The protection (`raw`, `preempt`, `irq-soft`, `irq-hard`).
    pub protection: String,
    /// Median ns per read.
    pub read_ns: f64,
    /// Median ns per recorded event.
    pub record_ns: f64,
    /// Raw timestamps that preceded their buffer's previous event.
    pub inversions: u64,
    /// Events recorded during the interrupted run.
    pub events: u64,
    /// Largest cross-CPU step back seen, in ns.
    pub skew_ns: f64,
}

/// A source that cannot work here, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unavailable {
    /// The clock name.
    pub clock: String,
    /// Why it cannot work here.
    pub reason: String,
}

/// How long each measurement runs.
#[derive(Debug, Clone, Copy)]
pub struct ClocksConfig {
    /// The interrupted-writer run per combination.
    pub anomaly_run: Duration,
    /// Timer signal period.
    pub interrupt_period: Duration,
    /// Turns of the cross-CPU ping-pong.
    pub skew_rounds: u32,
}

impl Default for ClocksConfig {
    fn default() -> Self {
        ClocksConfig {
            anomaly_run: Duration::from_millis(150),
            interrupt_period: Duration::from_micros(50),
            skew_rounds: 2000,
        }
    }
}

/// The ring the timer signal's handler writes to (null when none).
static HANDLER_RING: AtomicPtr<RingBuffer<AnyClock>> = AtomicPtr::new(std::ptr::null_mut());
static HANDLER_EVENTS: AtomicU64 = AtomicU64::new(0);

fn on_interrupt(_signal: i32) {
    // Acquire: pairs with the Release store of the ring's address.
    let ring = HANDLER_RING.load(Ordering::Acquire);
    // SAFETY: the pointer is either null or the address of a ring that
    // outlives the timer (stored before the timer starts, cleared after it
    // stops and before the ring is dropped).
    if let Some(ring) = unsafe { ring.as_ref() } {
        if ring.write_on(0, &[0x5A; 16]).is_ok() {
            HANDLER_EVENTS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn small_ring(clock: AnyClock) -> Result<RingBuffer<AnyClock>, ringtrace_ring::ConfigError> {
    RingBuffer::new(
        RingConfig::default()
            .cpus(2)
            .per_cpu_bytes(256 * 1024)
            .mode(Mode::Overwrite),
        clock,
    )
}

/// One recorded event through a call, as an instrumented program makes
/// it: inlined into the timing loop, the event and the loop interleave and
/// measure worse than either (docs/design.md, ring performance).
#[inline(never)]
fn record_once(ring: &RingBuffer<AnyClock>, payload: &[u8; 16]) {
    let _ = black_box(ring.write_on(0, payload));
}

/// Median ns per recorded event.
fn record_cost(ring: &RingBuffer<AnyClock>) -> f64 {
    let payload = [1u8; 16];
    let mut per: Vec<f64> = (0..101)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..256 {
                record_once(ring, black_box(&payload));
            }
            t.elapsed().as_nanos() as f64 / 256.0
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// Runs a writer interrupted by a timer whose handler writes too; returns
/// (inversions, events).
fn interrupted_run(
    spec: &ClockSpec,
    config: &ClocksConfig,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let ring = Box::new(small_ring(spec.build()?)?);
    let signal = libc::SIGRTMIN() + 10;
    interrupt::install_irq_handler(signal, on_interrupt)?;
    HANDLER_RING.store(&*ring as *const _ as *mut _, Ordering::Release);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = sched::pin_to_cpu(0);
            let timer = IrqTimer::start(current_thread_id(), signal, config.interrupt_period).ok();
            let t = Instant::now();
            let mut n = 0u64;
            while t.elapsed() < config.anomaly_run {
                for _ in 0..64 {
                    n += u64::from(ring.write_on(0, &[0xA5; 16]).is_ok());
                }
            }
            drop(timer);
            n
        });
    });
    HANDLER_RING.store(std::ptr::null_mut(), Ordering::Release);
    interrupt::uninstall_irq_handler(signal)?;
    let stats = ring.stats();
    Ok((stats.ts_fixups, stats.hit))
}

/// The largest step back between two pinned threads taking turns, in ticks.
fn skew(clock: &AnyClock, rounds: u32) -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return 0;
    }
    let baton = AtomicU64::new(0);
    let stamp = AtomicU64::new(0);
    let worst = AtomicU64::new(0);
    std::thread::scope(|s| {
        for side in 0..2u64 {
            let (baton, stamp, worst) = (&baton, &stamp, &worst);
            s.spawn(move || {
                let _ = sched::pin_to_cpu(side as usize);
                for turn in 0..u64::from(rounds) {
                    let mine = turn * 2 + side;
                    let deadline = Instant::now() + Duration::from_millis(50);
                    // Acquire: pairs with the other side's Release below, so
                    // its read happened before ours.
                    while baton.load(Ordering::Acquire) != mine {
                        if Instant::now() > deadline {
                            return;
                        }
                        std::hint::spin_loop();
                    }
                    let now = clock.read();
                    let theirs = stamp.load(Ordering::Relaxed);
                    if mine > 0 && theirs > now {
                        worst.fetch_max(theirs - now, Ordering::Relaxed);
                    }
                    stamp.store(now, Ordering::Relaxed);
                    baton.store(mine + 1, Ordering::Release);
                }
            });
        }
    });
    worst.load(Ordering::Relaxed)
}

/// Measures every available combination; lists the unavailable ones with
/// their reasons. `progress` is called after each combination.
pub fn run(config: &ClocksConfig, progress: &dyn Fn(&str)) -> (Vec<ClockRow>, Vec<Unavailable>) {
    let mut rows = Vec::new();
    let mut unavailable = Vec::new();
    for spec in ClockSpec::all() {
        let name = spec.to_string();
        let clock = match spec.build() {
            Ok(c) => c,
            Err(e) => {
                unavailable.push(Unavailable {
                    clock: name,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let conversion = clock
            .info()
            .conversion
            .unwrap_or(TickConversion::NANOSECONDS);
        let read_ns = measure_read_cost(&clock, 101, 256).median_ns;
        let skew_ns = conversion.ticks_to_ns(skew(&clock, config.skew_rounds)) as f64;
        let (record_ns, inversions, events) = match small_ring(clock) {
            Ok(ring) => {
                let record_ns = record_cost(&ring);
                let (inversions, events) = interrupted_run(&spec, config).unwrap_or((0, 0));
                (record_ns, inversions, events)
            }
            Err(_) => (0.0, 0, 0),
        };
        rows.push(ClockRow {
            clock: spec.source_label(),
            protection: spec.protection.to_string(),
            read_ns,
            record_ns,
            inversions,
            events,
            skew_ns,
        });
        progress(&name);
    }
    (rows, unavailable)
}

/// The table: one line per combination, then the unavailable sources.
pub fn text(rows: &[ClockRow], unavailable: &[Unavailable]) -> String {
    let mut out = format!(
        "{:<14} {:<10} {:>9} {:>10} {:>11} {:>9} {:>10}\n",
        "clock", "protection", "read_ns", "record_ns", "inversions", "events", "skew_ns"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<14} {:<10} {:>9.2} {:>10.2} {:>11} {:>9} {:>10.0}\n",
            r.clock, r.protection, r.read_ns, r.record_ns, r.inversions, r.events, r.skew_ns
        ));
    }
    for u in unavailable {
        out.push_str(&format!("{}: unavailable: {}\n", u.clock, u.reason));
    }
    out
}
