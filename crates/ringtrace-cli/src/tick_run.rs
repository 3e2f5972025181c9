//! A writer under a timer tick: seed 004's "if a timer interrupt comes in,
//! sched_clock may report a wrong time", counted.
//!
//! A POSIX timer aims a signal at the writer thread (the emulated timer
//! interrupt). Its handler does the tick's work on the thread's `sched`
//! clock data ([`ringtrace::clock::sched::tick`]), and in
//! [`TickHandler::TickAndWrite`] mode also writes an event into the buffer
//! the writer is writing. The writer records events as fast as it can; for
//! the `sched` sources every reading the ring took, and every timestamp it
//! recorded, is checked against the exact reference
//! (`sched::check`): wrong readings at the source, and wrong timestamps as
//! recorded (a reading raised by the ring's monotonic fixup, or the events
//! after a reading that was ahead, are wrong too if they differ from the
//! exact time), each in both directions.
//!
//! Why the second mode hides tears: the handler's event moves the buffer's
//! `(write, last_ts)` state, so the interrupted writer's compare-and-swap
//! fails and it reads the clock again. A torn reading taken before the
//! handler ran is thrown away with the failed swap.

use crate::sched as placement;
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, ThreadTimer};
use ringtrace_clock::sched::{self, WrongReadings};
use ringtrace_clock::{AnyClock, ClockSpec, SourceName};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};

/// What the tick's handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TickHandler {
    /// Updates the clock data only.
    Tick,
    /// Updates the clock data and writes an event into the same buffer.
    TickAndWrite,
}

impl TickHandler {
    /// `tick` or `tick+write`.
    pub fn name(self) -> &'static str {
        match self {
            TickHandler::Tick => "tick",
            TickHandler::TickAndWrite => "tick+write",
        }
    }
}

/// Wrong values in one direction and the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Wrong {
    /// Later than the exact time.
    pub ahead: u64,
    /// Earlier than the exact time.
    pub behind: u64,
    /// The largest error, in ns.
    pub max_error_ns: u64,
    /// Not checked: the generation the reading used had left the history
    /// (more than 63 ticks between the write and its check).
    pub unchecked: u64,
}

impl Wrong {
    /// Both directions.
    pub fn total(&self) -> u64 {
        self.ahead + self.behind
    }
}

impl From<WrongReadings> for Wrong {
    fn from(w: WrongReadings) -> Wrong {
        Wrong {
            ahead: w.ahead,
            behind: w.behind,
            max_error_ns: w.max_error_ns,
            unchecked: w.unchecked,
        }
    }
}

/// One run of a writer under the tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickRun {
    /// What the handler did.
    pub handler: TickHandler,
    /// Events the writer recorded.
    pub events: u64,
    /// Timestamps the ring raised to keep its time from going back.
    pub ts_fixups: u64,
    /// Wrong readings the ring took from the clock (`sched` sources only:
    /// other sources are single reads that cannot tear).
    pub wrong_readings: Option<Wrong>,
    /// Wrong timestamps recorded (`sched` sources only).
    pub wrong_recorded: Option<Wrong>,
    /// Ticks that ran on the writer's thread.
    pub ticks: u64,
    /// Of those, ticks that arrived while irqs were masked and ran at the
    /// unmask (deferred), process-wide during the run.
    pub deferred: u64,
    /// Ticks per second achieved.
    pub tick_hz: f64,
}

/// The ring the handler writes to in `TickAndWrite` mode (null otherwise).
static HANDLER_RING: AtomicPtr<RingBuffer<AnyClock>> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the handler writes.
static HANDLER_WRITES: AtomicBool = AtomicBool::new(false);

fn on_tick(_signal: i32) {
    sched::tick();
    // Relaxed: set before the timer starts, which orders it (the timer's
    // signal is sent after timer_settime returns).
    if !HANDLER_WRITES.load(Ordering::Relaxed) {
        return;
    }
    // Acquire: pairs with the Release store of the ring's address.
    let ring = HANDLER_RING.load(Ordering::Acquire);
    // SAFETY: null, or the address of a ring that outlives the timer
    // (stored before the timer starts, cleared after it is deleted and
    // before the ring is dropped).
    if let Some(ring) = unsafe { ring.as_ref() } {
        // A failure (the buffer busy) only means no event this tick.
        let _ = ring.write_on(0, &[0x5A; 16]);
    }
}

/// The signal the tick uses.
fn tick_signal() -> i32 {
    libc::SIGRTMIN() + 10
}

/// Runs a writer with `spec`'s clock for `run` under a tick every
/// `period`, the handler doing what `handler` says.
pub fn run(
    spec: &ClockSpec,
    handler: TickHandler,
    run: Duration,
    period: Duration,
) -> Result<TickRun, Box<dyn std::error::Error>> {
    // One buffer per CPU, for the write path a program's ring gets; the
    // writer is pinned to CPU 0 and writes buffer 0.
    let ring = Box::new(RingBuffer::new(
        RingConfig::default()
            .cpus(ringtrace_ring::cpu::possible_cpus())
            .per_cpu_bytes(256 * 1024)
            .mode(Mode::Overwrite),
        spec.build()?,
    )?);
    let checks = matches!(spec.source, SourceName::Sched | SourceName::SchedLatch) && !spec.global;
    let signal = tick_signal();
    interrupt::install_irq_handler(signal, on_tick)?;
    HANDLER_WRITES.store(handler == TickHandler::TickAndWrite, Ordering::Relaxed);
    HANDLER_RING.store(&*ring as *const _ as *mut _, Ordering::Release);
    let before = interrupt::stats();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| writer(&ring, checks, signal, run, period))
            .join()
            .map_err(|_| "the writer thread panicked".to_string())?
    });
    let after = interrupt::stats();
    HANDLER_RING.store(std::ptr::null_mut(), Ordering::Release);
    interrupt::uninstall_irq_handler(signal)?;
    let (events, readings, recorded, ticks, elapsed) = outcome?;
    let stats = ring.stats();
    Ok(TickRun {
        handler,
        events,
        ts_fixups: stats.ts_fixups,
        wrong_readings: checks.then(|| readings.into()),
        wrong_recorded: checks.then(|| recorded.into()),
        ticks,
        deferred: after.deferred - before.deferred,
        tick_hz: ticks as f64 / elapsed.as_secs_f64(),
    })
}

/// What the writer thread found: events, wrong readings, wrong recorded
/// timestamps, ticks, and how long the timer ran.
type WriterOutcome = (u64, WrongReadings, WrongReadings, u64, Duration);

fn writer(
    ring: &RingBuffer<AnyClock>,
    checks: bool,
    signal: i32,
    run: Duration,
    period: Duration,
) -> Result<WriterOutcome, String> {
    let _ = placement::pin_to_cpu(0);
    let ticks_before = sched::ticks();
    let timer =
        ThreadTimer::start(current_thread_id(), signal, period).map_err(|e| e.to_string())?;
    let (mut readings, mut recorded) = (WrongReadings::default(), WrongReadings::default());
    let mut events = 0u64;
    let until = Instant::now() + run;
    while Instant::now() < until {
        for _ in 0..64 {
            let first = sched::ticks();
            let Ok(ts) = ring.write_on(0, &[0xA5; 16]) else {
                continue;
            };
            events += 1;
            if checks {
                // The reading the ring recorded is the thread's last one:
                // a retried swap read the clock again. It used one of the
                // generations since `first`.
                let (cycles, value) = sched::last_read();
                readings.count_checked(sched::check_since(first, cycles, value));
                recorded.count_checked(sched::check_since(first, cycles, ts));
            }
        }
    }
    let elapsed = timer.elapsed();
    drop(timer);
    Ok((
        events,
        readings,
        recorded,
        sched::ticks() - ticks_before,
        elapsed,
    ))
}
