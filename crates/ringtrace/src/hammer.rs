//! `ringtrace hammer`: the kernel's kernel/trace/ring_buffer_benchmark.c in
//! userspace. Producers write 10-byte events in batches of
//! `write_iteration` between looks at the clock; a consumer reads them by
//! event or by page and checks every payload.

use crate::sched;
use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How the consumer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBy {
    /// `ring_buffer_consume`, one event at a time.
    Events,
    /// `ring_buffer_read_page`, a whole page swapped out at a time.
    Pages,
    /// Both, switching on every pass over the buffers, as the kernel's
    /// benchmark switches between runs when neither is asked for.
    Alternate,
}

impl ReadBy {
    /// `events` or `pages`.
    pub fn name(self) -> &'static str {
        match self {
            ReadBy::Events => "events",
            ReadBy::Pages => "pages",
            ReadBy::Alternate => "events and pages",
        }
    }
}

/// A hammer run's settings (the kernel module's parameters, and more).
#[derive(Debug, Clone)]
pub struct HammerConfig {
    /// How long the producers run.
    pub duration: Duration,
    /// Events written between looks at the clock (`write_iteration`, 50).
    pub write_iteration: u32,
    /// No consumer (`disable_reader`).
    pub disable_reader: bool,
    /// How the consumer reads.
    pub read_by: ReadBy,
    /// The producers' nice level (19).
    pub producer_nice: i32,
    /// The consumer's nice level (19).
    pub consumer_nice: i32,
    /// The producers' SCHED_FIFO priority (0: off).
    pub producer_fifo: u8,
    /// The consumer's SCHED_FIFO priority (0: off).
    pub consumer_fifo: u8,
    /// The clock events are stamped with.
    pub clock: ClockSpec,
    /// Overwrite or discard.
    pub mode: Mode,
    /// Bytes per CPU buffer (1,000,000).
    pub buffer_size: usize,
    /// Producer threads, pinned one per CPU.
    pub producers: usize,
}

impl Default for HammerConfig {
    fn default() -> Self {
        HammerConfig {
            duration: Duration::from_secs(10),
            write_iteration: 50,
            disable_reader: false,
            read_by: ReadBy::Alternate,
            producer_nice: 19,
            consumer_nice: 19,
            producer_fifo: 0,
            consumer_fifo: 0,
            clock: ClockSpec {
                source: ringtrace_clock::SourceName::Local,
                global: false,
                protection: ringtrace_clock::Protection::Raw,
            },
            mode: Mode::Overwrite,
            buffer_size: 1_000_000,
            producers: 1,
        }
    }
}

/// What a run measured: the kernel's output, as numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HammerResult {
    /// Wall time of the producers' run, in microseconds.
    pub time_us: u64,
    /// Events overwritten before they were read.
    pub overruns: u64,
    /// Events the consumer read (and checked).
    pub read: u64,
    /// Events still in the buffer at the end.
    pub entries: u64,
    /// entries + overruns + read.
    pub total: u64,
    /// Reservations that failed.
    pub missed: u64,
    /// Reservations that succeeded, counted by the producers.
    pub hit: u64,
    /// hit per millisecond.
    pub entries_per_ms: u64,
    /// Nanoseconds per hit.
    pub ns_per_entry: f64,
    /// The clock's name.
    pub clock: String,
    /// `overwrite` or `discard`.
    pub mode: String,
    /// Producer threads.
    pub producers: usize,
    /// How the consumer read (`events`, `pages`, or `disabled`).
    #[serde(skip)]
    pub read_by: String,
    /// Payloads that did not check out.
    #[serde(skip)]
    pub bad_payloads: u64,
    /// Scheduling requests that were refused, as messages.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Why a hammer run could not start.
#[derive(Debug, Error)]
pub enum HammerError {
    /// The clock cannot be built here.
    #[error(transparent)]
    Clock(#[from] ringtrace_clock::ClockError),
    /// The ring configuration is invalid.
    #[error(transparent)]
    Config(#[from] ringtrace_ring::ConfigError),
    /// A setting is out of range.
    #[error("{0}")]
    Invalid(String),
    /// A producer or consumer thread could not be started.
    #[error("cannot start the {role} thread: {source}")]
    Spawn {
        /// "producer" or "consumer".
        role: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The most producer threads a run takes.
pub const MAX_PRODUCERS: usize = 1024;
/// The largest `--write-iteration`: a producer looks at the stop flag only
/// between batches, so a batch must stay short (a million events is some
/// tens of milliseconds).
pub const MAX_WRITE_ITERATION: u32 = 1_000_000;

const PAYLOAD: usize = 10;

/// The 10-byte payload: producer, sequence, and a check.
fn payload(producer: u16, seq: u32) -> [u8; PAYLOAD] {
    let mut p = [0u8; PAYLOAD];
    p[0..2].copy_from_slice(&producer.to_le_bytes());
    p[2..6].copy_from_slice(&seq.to_le_bytes());
    let check = (u32::from(producer) ^ seq).wrapping_mul(0x9E37_79B1);
    p[6..10].copy_from_slice(&check.to_le_bytes());
    p
}

fn payload_ok(p: &[u8]) -> bool {
    if p.len() != PAYLOAD {
        return false;
    }
    let producer = u16::from_le_bytes([p[0], p[1]]);
    let seq = u32::from_le_bytes([p[2], p[3], p[4], p[5]]);
    p == payload(producer, seq)
}

/// Runs the hammer.
pub fn run(config: &HammerConfig) -> Result<HammerResult, HammerError> {
    if !(1..=MAX_PRODUCERS).contains(&config.producers) {
        return Err(HammerError::Invalid(format!(
            "--producers {} is invalid: it must be from 1 to {MAX_PRODUCERS}",
            config.producers
        )));
    }
    if !(1..=MAX_WRITE_ITERATION).contains(&config.write_iteration) {
        return Err(HammerError::Invalid(format!(
            "--write-iteration {} is invalid: it must be from 1 to {MAX_WRITE_ITERATION}",
            config.write_iteration
        )));
    }
    for (flag, fifo) in [
        ("--producer-fifo", config.producer_fifo),
        ("--consumer-fifo", config.consumer_fifo),
    ] {
        if fifo > 2 {
            return Err(HammerError::Invalid(format!(
                "{flag} {fifo} is invalid: use 0, 1 or 2"
            )));
        }
    }
    for (flag, nice) in [
        ("--producer-nice", config.producer_nice),
        ("--consumer-nice", config.consumer_nice),
    ] {
        if !(-20..=19).contains(&nice) {
            return Err(HammerError::Invalid(format!(
                "{flag} {nice} is invalid: it must be from -20 to 19"
            )));
        }
    }
    let clock: AnyClock = config.clock.build()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ring_config = RingConfig::default()
        .per_cpu_bytes(config.buffer_size)
        .mode(config.mode)
        .cpus(ringtrace_ring::cpu::possible_cpus().max(cpus));
    let ring = RingBuffer::new(ring_config, clock)?;
    let running = AtomicBool::new(true);
    let producers_done = AtomicBool::new(false);
    let read = AtomicU64::new(0);
    let bad = AtomicU64::new(0);
    let warnings = std::sync::Mutex::new(Vec::new());
    // Producers wait for `go`, not a barrier, so that a thread that fails
    // to start can release the ones already waiting.
    let go = AtomicBool::new(false);
    let ready = std::sync::atomic::AtomicUsize::new(0);
    let warn = |w: Result<(), sched::SchedError>| {
        if let Err(e) = w {
            warnings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e.to_string());
        }
    };

    let (hit, missed, elapsed) = std::thread::scope(|s| {
        let consumer = if config.disable_reader {
            Ok(None)
        } else {
            std::thread::Builder::new()
                .name("consumer".into())
                .spawn_scoped(s, || {
                    warn(sched::set_nice(config.consumer_nice));
                    warn(sched::set_fifo(config.consumer_fifo));
                    consume(&ring, config.read_by, &producers_done, &read, &bad);
                })
                .map(Some)
                .map_err(|source| HammerError::Spawn {
                    role: "consumer",
                    source,
                })
        };
        let mut handles = Vec::with_capacity(config.producers);
        let mut failed = consumer.err();
        for p in 0..config.producers {
            if failed.is_some() {
                break;
            }
            let (ring, running, go, ready) = (&ring, &running, &go, &ready);
            let spawned = std::thread::Builder::new()
                .name(format!("producer-{p}"))
                .spawn_scoped(s, move || {
                    let cpu = p % cpus;
                    warn(sched::pin_to_cpu(cpu));
                    warn(sched::set_nice(config.producer_nice));
                    warn(sched::set_fifo(config.producer_fifo));
                    // Release: the main thread times the run from when
                    // every producer is set up.
                    ready.fetch_add(1, Ordering::Release);
                    // Acquire: pairs with the Release that starts the run.
                    while !go.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    produce(ring, cpu, p as u16, config.write_iteration, running)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(source) => {
                    failed = Some(HammerError::Spawn {
                        role: "producer",
                        source,
                    })
                }
            }
        }
        if failed.is_some() {
            // Release whoever started: they see `running` false at once.
            running.store(false, Ordering::Relaxed);
        } else {
            // Acquire: pairs with each producer's Release above.
            while ready.load(Ordering::Acquire) < handles.len() {
                std::thread::yield_now();
            }
        }
        // Release: the producers' setup above happens before they run.
        go.store(true, Ordering::Release);
        let t0 = Instant::now();
        while failed.is_none() && t0.elapsed() < config.duration {
            std::thread::sleep(Duration::from_millis(5).min(config.duration));
        }
        running.store(false, Ordering::Relaxed);
        let (hit, missed) = handles
            .into_iter()
            .map(|h| h.join().unwrap_or((0, 0)))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let elapsed = t0.elapsed();
        producers_done.store(true, Ordering::Release);
        match failed {
            Some(e) => Err(e),
            None => Ok((hit, missed, elapsed)),
        }
    })?;

    let stats = ring.stats();
    let read = read.load(Ordering::Relaxed);
    let entries = stats.entries;
    let overruns = stats.overrun;
    let time_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let time_ms = time_us / 1000;
    let entries_per_ms = hit.checked_div(time_ms).unwrap_or(0);
    Ok(HammerResult {
        time_us,
        overruns,
        read,
        entries,
        total: entries + overruns + read,
        missed,
        hit,
        entries_per_ms,
        ns_per_entry: if hit > 0 {
            elapsed.as_nanos() as f64 * config.producers as f64 / hit as f64
        } else {
            0.0
        },
        clock: config.clock.to_string(),
        mode: config.mode.to_string(),
        producers: config.producers,
        read_by: if config.disable_reader {
            "disabled".into()
        } else {
            config.read_by.name().into()
        },
        bad_payloads: bad.load(Ordering::Relaxed),
        warnings: warnings.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// One producer: batches of `write_iteration` events, then a look at the
/// stop flag. Returns (hit, missed).
fn produce(
    ring: &RingBuffer<AnyClock>,
    cpu: usize,
    id: u16,
    batch: u32,
    running: &AtomicBool,
) -> (u64, u64) {
    let (mut hit, mut missed, mut seq) = (0u64, 0u64, 0u32);
    // Relaxed: the flag only says "stop soon".
    while running.load(Ordering::Relaxed) {
        for _ in 0..batch {
            match ring.reserve_on(cpu, PAYLOAD) {
                Ok(mut r) => {
                    r.write(&payload(id, seq));
                    r.commit();
                    hit += 1;
                }
                Err(_) => missed += 1,
            }
            seq = seq.wrapping_add(1);
        }
    }
    (hit, missed)
}

/// The consumer: reads until the producers are done, checking payloads.
fn consume(
    ring: &RingBuffer<AnyClock>,
    by: ReadBy,
    done: &AtomicBool,
    read: &AtomicU64,
    bad: &AtomicU64,
) {
    let (mut n, mut wrong) = (0u64, 0u64);
    let mut pass = 0u64;
    // Acquire: pairs with the Release after the producers joined.
    while !done.load(Ordering::Acquire) {
        let mut got = false;
        pass += 1;
        let this_pass = match by {
            ReadBy::Alternate if pass % 2 == 0 => ReadBy::Pages,
            ReadBy::Alternate => ReadBy::Events,
            other => other,
        };
        for b in ring.cpu_buffers() {
            match this_pass {
                ReadBy::Events => {
                    while let Some(ok) = b.read_event_with(|_, p, _| payload_ok(p)) {
                        got = true;
                        n += 1;
                        wrong += u64::from(!ok);
                    }
                }
                ReadBy::Pages | ReadBy::Alternate => {
                    while let Some(page) = b.read_page() {
                        got = true;
                        for (_, p) in page.events() {
                            n += 1;
                            wrong += u64::from(!payload_ok(p));
                        }
                    }
                }
            }
        }
        if !got {
            std::thread::yield_now();
        }
    }
    read.store(n, Ordering::Relaxed);
    bad.store(wrong, Ordering::Relaxed);
}

impl HammerResult {
    /// The kernel's lines, in its order, plus one naming clock and mode.
    pub fn text(&self, config: &HammerConfig) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line("Starting ring buffer hammer".into());
        if !config.disable_reader {
            line(format!(
                "Running Consumer at nice: {}",
                config.consumer_nice
            ));
        }
        line(format!(
            "Running Producer at nice: {}",
            config.producer_nice
        ));
        for w in &self.warnings {
            line(format!("Warning: {w}"));
        }
        line("End ring buffer hammer".into());
        line(format!("Time:     {} (usecs)", self.time_us));
        line(format!("Overruns: {}", self.overruns));
        if self.read_by == "disabled" {
            line("Read:     (reader disabled)".into());
        } else {
            line(format!("Read:     {}  (by {})", self.read, self.read_by));
        }
        line(format!("Entries:  {}", self.entries));
        line(format!("Total:    {}", self.total));
        line(format!("Missed:   {}", self.missed));
        line(format!("Hit:      {}", self.hit));
        line(format!("Entries per millisec: {}", self.entries_per_ms));
        if self.hit > 0 {
            line(format!("{} ns per entry", self.ns_per_entry.round() as u64));
        }
        line(format!(
            "Clock: {}  Mode: {}  Producers: {}",
            self.clock, self.mode, self.producers
        ));
        if self.bad_payloads > 0 {
            line(format!(
                "[ERROR!] {} payloads did not match what was written",
                self.bad_payloads
            ));
        }
        out
    }
}
