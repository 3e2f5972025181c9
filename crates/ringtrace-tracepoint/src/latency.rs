//! Latency tracers: `irqsoff`, `preemptoff` and `preemptirqsoff`, fed by the
//! preemptirq hooks, as the kernel's trace_irqsoff.c is fed by its probes.
//!
//! A section starts on the outermost disable and ends on the outermost
//! enable (for `preemptirqsoff`, it lasts while either is off). In
//! [`LatencyMode::Max`] the worst section per CPU is kept, with a snapshot
//! of that CPU's events in the sink ring taken when it became the worst
//! (the kernel's max-trace buffer swap); in [`LatencyMode::Threshold`] every
//! section longer than the threshold (`tracing_thresh`) is reported.
//!
//! Starting a tracer turns on the tracepoints it hooks, as registering the
//! kernel's tracer turns on its probes' keys; only one tracer runs at a
//! time, as `current_tracer`.

use crate::location::SourceLocation;
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::{
    AnyClock, BaseSource, Clock, ClockSpec, Counter, Protected, Protection, Source, TickConversion,
};
use ringtrace_ring::Event;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Which sections a tracer measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tracer {
    /// Irqs disabled.
    IrqsOff,
    /// Preemption disabled.
    PreemptOff,
    /// Irqs or preemption disabled.
    PreemptIrqsOff,
}

impl Tracer {
    /// The kernel's name: `irqsoff`, `preemptoff`, `preemptirqsoff`.
    pub fn name(self) -> &'static str {
        match self {
            Tracer::IrqsOff => "irqsoff",
            Tracer::PreemptOff => "preemptoff",
            Tracer::PreemptIrqsOff => "preemptirqsoff",
        }
    }

    /// Parses a tracer name.
    pub fn parse(name: &str) -> Result<Tracer, crate::TracepointError> {
        [Tracer::IrqsOff, Tracer::PreemptOff, Tracer::PreemptIrqsOff]
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| crate::TracepointError::UnknownTracer {
                given: name.to_owned(),
                valid: "irqsoff, preemptoff, preemptirqsoff".to_owned(),
            })
    }

    fn bit(self) -> u8 {
        match self {
            Tracer::IrqsOff => 1,
            Tracer::PreemptOff => 2,
            Tracer::PreemptIrqsOff => 4,
        }
    }
}

/// Keep the worst section per CPU, or report every one over a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyMode {
    /// The worst per CPU, with a snapshot of that CPU's events.
    Max,
    /// Every section longer than this (`tracing_thresh`).
    Threshold(Duration),
}

/// One measured section.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LatencySection {
    /// The tracer that measured it.
    pub tracer: Tracer,
    /// The CPU it ended on.
    pub cpu: usize,
    /// How long it lasted.
    pub duration: Duration,
    /// Where it started (the outermost disable).
    pub start: SourceLocation,
    /// Where it ended (the outermost enable).
    pub end: SourceLocation,
    /// That CPU's events in the sink when this became the worst (max mode;
    /// empty in threshold mode or with no sink).
    pub snapshot: Vec<Event>,
}

/// What starts or ends a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    Irqs,
    Preempt,
}

/// Active tracers, as bits.
static ACTIVE: AtomicU8 = AtomicU8::new(0);
/// 0: max mode; otherwise the threshold in ns.
static THRESHOLD_NS: AtomicU64 = AtomicU64::new(0);

struct Results {
    max: Vec<Option<LatencySection>>,
    reports: Vec<LatencySection>,
}

fn results() -> &'static parking_lot::Mutex<Results> {
    static RESULTS: OnceLock<parking_lot::Mutex<Results>> = OnceLock::new();
    RESULTS.get_or_init(|| {
        parking_lot::Mutex::new(Results {
            max: vec![None; ringtrace_ring::cpu::possible_cpus().max(1)],
            reports: Vec::new(),
        })
    })
}

/// The clock sections are timed with: `local`, else `mono`, else the
/// counter (whose "nanoseconds" are then event counts).
fn clock() -> &'static (AnyClock, TickConversion) {
    static CLOCK: OnceLock<(AnyClock, TickConversion)> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let clock = ["local", "mono", "counter"]
            .iter()
            .find_map(|name| name.parse::<ClockSpec>().ok()?.build().ok())
            .unwrap_or_else(|| {
                let counter = Source::Base(BaseSource::Counter(Counter::new()));
                Protected::new(counter, Protection::Raw)
            });
        let conversion = clock
            .info()
            .conversion
            .unwrap_or(TickConversion::NANOSECONDS);
        (clock, conversion)
    })
}

/// At most this many threshold reports are kept; older ones go first.
const MAX_REPORTS: usize = 4096;

/// Starts `tracer` in `mode`, replacing any running tracer.
pub fn start(tracer: Tracer, mode: LatencyMode) -> Result<(), crate::TracepointError> {
    clock(); // calibrate now, not inside a section
    results();
    THRESHOLD_NS.store(
        match mode {
            LatencyMode::Max => 0,
            LatencyMode::Threshold(t) => u64::try_from(t.as_nanos()).unwrap_or(u64::MAX).max(1),
        },
        Ordering::Relaxed,
    );
    let irqs = matches!(tracer, Tracer::IrqsOff | Tracer::PreemptIrqsOff);
    let preempt = matches!(tracer, Tracer::PreemptOff | Tracer::PreemptIrqsOff);
    use crate::preemptirq::{irq_disable, irq_enable, preempt_disable, preempt_enable};
    irq_disable::TRACEPOINT.set_enabled(irqs)?;
    irq_enable::TRACEPOINT.set_enabled(irqs)?;
    preempt_disable::TRACEPOINT.set_enabled(preempt)?;
    preempt_enable::TRACEPOINT.set_enabled(preempt)?;
    // Relaxed: the hooks read this flag only to decide whether to measure.
    ACTIVE.store(tracer.bit(), Ordering::Relaxed);
    Ok(())
}

/// Stops the running tracer and turns its tracepoints off.
pub fn stop() -> Result<(), crate::TracepointError> {
    ACTIVE.store(0, Ordering::Relaxed);
    crate::preemptirq::set_tracepoints(false)
}

/// The worst section per CPU of the last max-mode run.
pub fn max_sections() -> Vec<LatencySection> {
    results().lock().max.iter().flatten().cloned().collect()
}

/// The sections over the threshold, oldest first.
pub fn threshold_reports() -> Vec<LatencySection> {
    results().lock().reports.clone()
}

/// Forgets every measured section.
pub fn reset() {
    let mut r = results().lock();
    r.max.iter_mut().for_each(|m| *m = None);
    r.reports.clear();
}

#[derive(Clone, Copy)]
struct Open {
    since: u64,
    at: SourceLocation,
}

thread_local! {
    static IRQS: Cell<Option<Open>> = const { Cell::new(None) };
    static PREEMPT: Cell<Option<Open>> = const { Cell::new(None) };
    static EITHER: Cell<Option<Open>> = const { Cell::new(None) };
}

/// A section of `cause` starts at `ip`.
#[inline(never)]
pub(crate) fn section_start(cause: Cause, ip: &'static SourceLocation) {
    let active = ACTIVE.load(Ordering::Relaxed);
    if active == 0 {
        return;
    }
    let open = Open {
        since: clock().0.read(),
        at: *ip,
    };
    match cause {
        Cause::Irqs => IRQS.with(|c| c.set(Some(open))),
        Cause::Preempt => PREEMPT.with(|c| c.set(Some(open))),
    }
    EITHER.with(|c| {
        if c.get().is_none() {
            c.set(Some(open));
        }
    });
}

/// A section of `cause` ends at `ip`.
#[inline(never)]
pub(crate) fn section_end(cause: Cause, ip: &'static SourceLocation) {
    let active = ACTIVE.load(Ordering::Relaxed);
    let own = match cause {
        Cause::Irqs => IRQS.with(|c| c.take()),
        Cause::Preempt => PREEMPT.with(|c| c.take()),
    };
    let still_off = match cause {
        Cause::Irqs => PREEMPT.with(|c| c.get().is_some()),
        Cause::Preempt => IRQS.with(|c| c.get().is_some()),
    };
    let either = if still_off {
        None
    } else {
        EITHER.with(|c| c.take())
    };
    if active == 0 {
        return;
    }
    let now = clock().0.read();
    let tracer = match cause {
        Cause::Irqs => Tracer::IrqsOff,
        Cause::Preempt => Tracer::PreemptOff,
    };
    if let Some(open) = own.filter(|_| active & tracer.bit() != 0) {
        record(tracer, open, now, *ip);
    }
    if let Some(open) = either.filter(|_| active & Tracer::PreemptIrqsOff.bit() != 0) {
        record(Tracer::PreemptIrqsOff, open, now, *ip);
    }
}

/// Sections that ended inside a signal handler and were not recorded.
static SKIPPED_IN_IRQ: AtomicU64 = AtomicU64::new(0);

/// Sections that ended inside a signal handler: counted, not recorded,
/// since recording may allocate or free, which a handler must not.
pub fn skipped_in_irq() -> u64 {
    SKIPPED_IN_IRQ.load(Ordering::Relaxed)
}

fn record(tracer: Tracer, open: Open, now: u64, end: SourceLocation) {
    if interrupt::in_irq() {
        // Relaxed: a statistic.
        SKIPPED_IN_IRQ.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let ns = clock().1.ticks_to_ns(now.saturating_sub(open.since));
    let threshold = THRESHOLD_NS.load(Ordering::Relaxed);
    let cpu = ringtrace_ring::cpu::current_cpu();
    // Another thread may be reading the results: try, and let that one
    // section go rather than make a traced section wait on a reader.
    let Some(mut results) = results().try_lock() else {
        return;
    };
    let section = |snapshot| LatencySection {
        tracer,
        cpu,
        duration: Duration::from_nanos(ns),
        start: open.at,
        end,
        snapshot,
    };
    if threshold != 0 {
        if ns > threshold {
            if results.reports.len() == MAX_REPORTS {
                results.reports.remove(0);
            }
            results.reports.push(section(Vec::new()));
        }
        return;
    }
    let slot = cpu % results.max.len();
    if results.max[slot]
        .as_ref()
        .is_some_and(|m| m.duration.as_nanos() >= u128::from(ns))
    {
        return;
    }
    // The snapshot allocates, which a signal handler must not.
    let snapshot = if interrupt::in_irq() {
        Vec::new()
    } else {
        snapshot_of(cpu)
    };
    results.max[slot] = Some(section(snapshot));
}

/// A copy of one CPU's unread events in the sink.
fn snapshot_of(cpu: usize) -> Vec<Event> {
    crate::sink()
        .and_then(|ring| ring.iter(cpu % ring.cpus()))
        .map(|it| it.collect())
        .unwrap_or_default()
}
