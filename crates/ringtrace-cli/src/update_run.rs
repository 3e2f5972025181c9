//! A writer under clock updates: trace_clock_local's "if a timer interrupt comes
//! in, sched_clock may report a wrong time", counted.
//!
//! A POSIX timer aims a signal at the writer thread at a rate the caller
//! sets: the emulated interrupt that, in 2009, delivered a frequency
//! change to `set_cyc2ns_scale()`. Its handler rewrites the thread's
//! `sched` clock data ([`ringtrace::clock::sched::update`]), and in
//! [`UpdateHandler::UpdateAndWrite`] mode also writes an event into the
//! buffer the writer is writing. The writer records events as fast as it
//! can; for the `sched` sources every reading the ring took, and every
//! timestamp it recorded, is checked against the exact reference
//! (`sched::check_since`):
//!
//! - a **torn reading**: the reading the ring took was wrong (an update
//!   landed between the loads of the data);
//! - a **flattened event**: the reading was right but the recorded
//!   timestamp was not, because the ring's monotonic fixup raised it to a
//!   torn reading ahead of it. One tear can flatten hundreds of events; they
//!   are counted apart, never as tears.
//!
//! The reference is per reading: the handler's own event reads the clock
//! under a [`SavedReading`], so the
//! interrupted writer's reference is never the handler's reading.
//!
//! Why the second mode hides tears: the handler's event moves the buffer's
//! state, so the interrupted writer's reservation fails and it reads the
//! clock again. A torn reading taken before the handler ran is thrown away
//! with the failed attempt.

use crate::sched as placement;
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, ThreadTimer};
use ringtrace_clock::sched::{self, SavedReading, Verdict, WrongReadings};
use ringtrace_clock::{AnyClock, ClockError, ClockSpec, SourceName};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// What the update's handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpdateHandler {
    /// Rewrites the clock data only, as `set_cyc2ns_scale()` did.
    Update,
    /// Rewrites the clock data and writes an event into the same buffer.
    UpdateAndWrite,
}

impl UpdateHandler {
    /// `update` or `update+write`.
    pub fn name(self) -> &'static str {
        match self {
            UpdateHandler::Update => "update",
            UpdateHandler::UpdateAndWrite => "update+write",
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
    /// (more than 63 updates between the write and its check).
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

/// One run of a writer under updates.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct UpdateRun {
    /// What the handler did.
    pub handler: UpdateHandler,
    /// Events the writer recorded.
    pub events: u64,
    /// Timestamps the ring raised to keep its time from going back.
    pub ts_fixups: u64,
    /// Torn readings: the ring's reading of the clock was wrong (`sched`
    /// sources only: other sources are single reads that cannot tear).
    pub wrong_readings: Option<Wrong>,
    /// Wrong timestamps recorded: the torn readings recorded, and the
    /// events flattened behind them (`sched` sources only).
    pub wrong_recorded: Option<Wrong>,
    /// Of the wrong recorded timestamps, those whose reading was right:
    /// events the monotonic fixup flattened behind a torn reading.
    pub flattened: Option<u64>,
    /// Updates that ran on the writer's thread.
    pub updates: u64,
    /// Of those, process-wide during the run, updates that arrived while
    /// irqs were masked and ran at the unmask (deferred).
    pub deferred: u64,
    /// Updates per second achieved.
    pub update_hz: f64,
    /// How long the writer ran, in seconds.
    pub seconds: f64,
}

/// The verdicts on one recorded event, for [`run_clock`]'s observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCheck {
    /// The reading the ring took; `None` when it could not be checked.
    pub reading: Option<Verdict>,
    /// The timestamp the ring recorded.
    pub recorded: Option<Verdict>,
}

/// The ring the handler writes to in `UpdateAndWrite` mode (null otherwise).
static HANDLER_RING: AtomicPtr<RingBuffer<AnyClock>> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the handler writes.
static HANDLER_WRITES: AtomicBool = AtomicBool::new(false);

fn on_update(_signal: i32) {
    sched::update();
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
        // The interrupted writer's reading stays its own.
        let _saved = SavedReading::save();
        // A failure (the buffer busy) only means no event this update.
        let _ = ring.cpu_writer(0).write(&[0x5A; 16]);
    }
}

/// The signal the update uses.
pub fn update_signal() -> i32 {
    libc::SIGRTMIN() + 10
}

/// Why a writer under clock updates could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum UpdateRunError {
    /// The clock, its update timer or the update's signal handler could
    /// not be set up; the clock crate's error names what and the valid
    /// values.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// The writer's ring could not be built.
    #[error("cannot build the writer's ring: {0}")]
    Ring(#[from] ringtrace_ring::ConfigError),
    /// The writer thread panicked; nothing it counted is known.
    #[error("the writer thread panicked")]
    WriterPanicked,
}

/// Runs a writer with `spec`'s clock for `run` under an update every
/// `period`, the handler doing what `handler` says.
pub fn run(
    spec: &ClockSpec,
    handler: UpdateHandler,
    run: Duration,
    period: Duration,
) -> Result<UpdateRun, UpdateRunError> {
    let checks = matches!(
        spec.source,
        SourceName::Sched | SourceName::SchedLatch | SourceName::SchedWide
    ) && !spec.global;
    run_clock(
        spec.build()?,
        checks,
        handler,
        run,
        Some(period),
        &mut |_| {},
    )
}

/// Runs a writer with `clock` for `run`, under an update every `period`
/// (`None`: no timer; updates come only from whatever raises
/// [`update_signal`], a planted read say). `checks`: the clock is a
/// `sched` source, so every event is checked, and `observe` sees each
/// event's verdicts on the writer's thread right after its write. Runs
/// one at a time in a process (the update's signal and handler are
/// process-wide): a second caller waits for the first.
pub fn run_clock(
    clock: AnyClock,
    checks: bool,
    handler: UpdateHandler,
    run: Duration,
    period: Option<Duration>,
    observe: &mut (dyn FnMut(EventCheck) + Send),
) -> Result<UpdateRun, UpdateRunError> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // One buffer per CPU, for the write path a program's ring gets; the
    // writer is pinned to CPU 0 and writes buffer 0.
    let ring = Box::new(RingBuffer::new(
        RingConfig::default()
            .cpus(ringtrace_ring::cpu::possible_cpus())
            .per_cpu_bytes(256 * 1024)
            .mode(Mode::Overwrite),
        clock,
    )?);
    let signal = update_signal();
    interrupt::install_irq_handler(signal, on_update)?;
    HANDLER_WRITES.store(handler == UpdateHandler::UpdateAndWrite, Ordering::Relaxed);
    HANDLER_RING.store(&*ring as *const _ as *mut _, Ordering::Release);
    let before = interrupt::stats();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| writer(&ring, checks, signal, run, period, observe))
            .join()
            .map_err(|_| UpdateRunError::WriterPanicked)
    });
    let after = interrupt::stats();
    HANDLER_RING.store(std::ptr::null_mut(), Ordering::Release);
    interrupt::uninstall_irq_handler(signal)?;
    let found = outcome??;
    let stats = ring.stats();
    Ok(UpdateRun {
        handler,
        events: found.events,
        ts_fixups: stats.ts_fixups,
        wrong_readings: checks.then(|| found.readings.into()),
        wrong_recorded: checks.then(|| found.recorded.into()),
        flattened: checks.then_some(found.flattened),
        updates: found.updates,
        deferred: after.deferred - before.deferred,
        update_hz: found.updates as f64 / found.elapsed.as_secs_f64().max(1e-9),
        seconds: found.elapsed.as_secs_f64(),
    })
}

/// What the writer thread found.
struct WriterOutcome {
    events: u64,
    readings: WrongReadings,
    recorded: WrongReadings,
    flattened: u64,
    updates: u64,
    elapsed: Duration,
}

fn writer(
    ring: &RingBuffer<AnyClock>,
    checks: bool,
    signal: i32,
    run: Duration,
    period: Option<Duration>,
    observe: &mut (dyn FnMut(EventCheck) + Send),
) -> Result<WriterOutcome, ClockError> {
    let _ = placement::pin_to_cpu(0);
    let updates_before = sched::updates();
    let started = Instant::now();
    let timer = period
        .map(|p| ThreadTimer::start(current_thread_id(), signal, p))
        .transpose()?;
    let (mut readings, mut recorded) = (WrongReadings::default(), WrongReadings::default());
    let (mut events, mut flattened) = (0u64, 0u64);
    let until = started + run;
    while Instant::now() < until {
        for _ in 0..64 {
            let first = sched::updates();
            let Ok(ts) = ring.cpu_writer(0).write(&[0xA5; 16]) else {
                continue;
            };
            events += 1;
            if checks {
                // The reading the ring recorded is the thread's last one:
                // a retried reservation read the clock again. It used one
                // of the generations since `first`.
                let r = sched::last_reading();
                let check = EventCheck {
                    reading: sched::check_since(first, r.cycles, r.value),
                    recorded: sched::check_since(first, r.cycles, ts),
                };
                readings.count_checked(check.reading);
                recorded.count_checked(check.recorded);
                if check.reading.is_some_and(Verdict::is_right)
                    && check.recorded.is_some_and(|v| !v.is_right())
                {
                    flattened += 1;
                }
                observe(check);
            }
        }
    }
    let elapsed = timer.as_ref().map_or(started.elapsed(), |t| t.elapsed());
    drop(timer);
    Ok(WriterOutcome {
        events,
        readings,
        recorded,
        flattened,
        updates: sched::updates() - updates_before,
        elapsed,
    })
}
