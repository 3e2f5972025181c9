//! The kernel's preemptirq tracepoints on the userspace irq/preempt
//! emulation of `ringtrace_clock::emulation`, under three instrumentation
//! strategies, so that one run compares what "tracing/preemptirq: Optimize
//! disabled tracepoint overhead" compared across three kernel builds.
//!
//! | strategy | kernel build | what a disable/enable pair runs |
//! |---|---|---|
//! | [`Baseline`] | `-master` (no TRACE_IRQFLAGS) | the emulation alone |
//! | [`CallAlways`] | `-master-trace` | an out-of-line call that checks the tracepoint key inside |
//! | [`EarlyKey`] | `-patched-trace` | the key checked inline; the call only when it is on |
//!
//! The tracepoints fire only on the outermost transition (irqs going from
//! on to off and back; the preempt count leaving and returning to zero), as
//! the kernel's do. Each records `ip`, where the call was made, and
//! `parent`, one level up: with the macros ([`local_irq_disable!`](crate::local_irq_disable) and the
//! rest) `ip` is the macro's line and `parent` is the `#[track_caller]`
//! location of the enclosing function, which is its caller when that
//! function is `#[track_caller]` (the kernel's `CALLER_ADDR1`) and the same
//! line otherwise.
//!
//! ```
//! use ringtrace_tracepoint::preemptirq::{self, EarlyKey, Soft};
//! preemptirq::local_irq_disable_at::<EarlyKey, Soft>(&ringtrace_tracepoint::here!(), std::panic::Location::caller());
//! assert!(ringtrace_clock::emulation::irqs_disabled());
//! preemptirq::local_irq_enable_at::<EarlyKey, Soft>(&ringtrace_tracepoint::here!(), std::panic::Location::caller());
//! ```

use crate::location::SourceLocation;
use ringtrace_clock::emulation::{hard_irq, preempt, soft_irq};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

crate::tracepoint! {
    system = preemptirq;
    /// Irqs went from enabled to disabled.
    pub fn irq_disable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
    /// Irqs went from disabled to enabled.
    pub fn irq_enable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
    /// The preempt count left zero.
    pub fn preempt_disable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
    /// The preempt count returned to zero.
    pub fn preempt_enable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
    /// Softirqs (bottom halves) went from enabled to disabled.
    pub fn softirqs_disable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
    /// Softirqs went from disabled to enabled.
    pub fn softirqs_enable(ip: SourceLocation, parent: SourceLocation) = "caller={} parent={}";
}

/// How irqs are masked: lazily ([`Soft`]) or with `pthread_sigmask` ([`Hard`]).
pub trait IrqMask {
    /// `soft` or `hard`.
    const NAME: &'static str;
    /// `raw_local_irq_disable()`.
    fn disable();
    /// `raw_local_irq_enable()`.
    fn enable();
    /// `raw_local_irq_save()`: whether irqs were disabled, and the state.
    fn save() -> (bool, SavedIrqs);
    /// `raw_local_irq_restore()`.
    fn restore(saved: SavedIrqs);
}

/// What an [`IrqMask`] saved.
#[derive(Clone, Copy)]
pub enum SavedIrqs {
    /// Saved by [`Soft`].
    Soft(soft_irq::SoftIrqFlags),
    /// Saved by [`Hard`].
    Hard(hard_irq::HardIrqFlags),
}

/// Lazy masking: a per-thread flag, deferred signals replayed.
#[derive(Debug, Clone, Copy)]
pub struct Soft;

/// `pthread_sigmask` blocking every asynchronous signal.
#[derive(Debug, Clone, Copy)]
pub struct Hard;

impl IrqMask for Soft {
    const NAME: &'static str = "soft";
    #[inline(always)]
    fn disable() {
        soft_irq::disable()
    }
    #[inline(always)]
    fn enable() {
        soft_irq::enable()
    }
    #[inline(always)]
    fn save() -> (bool, SavedIrqs) {
        let f = soft_irq::save();
        (f.was_masked(), SavedIrqs::Soft(f))
    }
    #[inline(always)]
    fn restore(saved: SavedIrqs) {
        if let SavedIrqs::Soft(f) = saved {
            soft_irq::restore(f)
        }
    }
}

impl IrqMask for Hard {
    const NAME: &'static str = "hard";
    #[inline(always)]
    fn disable() {
        hard_irq::disable()
    }
    #[inline(always)]
    fn enable() {
        hard_irq::enable()
    }
    #[inline(always)]
    fn save() -> (bool, SavedIrqs) {
        let f = hard_irq::save();
        (f.was_disabled(), SavedIrqs::Hard(f))
    }
    #[inline(always)]
    fn restore(saved: SavedIrqs) {
        if let SavedIrqs::Hard(f) = saved {
            hard_irq::restore(f)
        }
    }
}

/// An instrumentation strategy: what runs around the emulation.
pub trait Strategy {
    /// `baseline`, `call-always` or `early-key`.
    const NAME: &'static str;
    /// After irqs were disabled from enabled.
    fn irqs_off(ip: &'static SourceLocation, parent: &'static Location<'static>);
    /// Before irqs are enabled.
    fn irqs_on(ip: &'static SourceLocation, parent: &'static Location<'static>);
    /// `preempt_disable()`.
    fn preempt_off(ip: &'static SourceLocation, parent: &'static Location<'static>);
    /// `preempt_enable()`.
    fn preempt_on(ip: &'static SourceLocation, parent: &'static Location<'static>);
    /// Whether softirq transitions are instrumented (and so pay the irq
    /// save/restore that TRACE_IRQFLAGS added to `local_bh_*`, "Reducing
    /// local_bh_enable/disable overhead in irqtrace").
    fn bh_traced() -> bool;
}

/// No tracepoint code at all: the `-master` build.
#[derive(Debug, Clone, Copy)]
pub struct Baseline;

/// An out-of-line call that checks the key inside: `-master-trace`.
#[derive(Debug, Clone, Copy)]
pub struct CallAlways;

/// The key checked inline before any call: `-patched-trace`.
#[derive(Debug, Clone, Copy)]
pub struct EarlyKey;

impl Strategy for Baseline {
    const NAME: &'static str = "baseline";
    #[inline(always)]
    fn irqs_off(_: &'static SourceLocation, _: &'static Location<'static>) {}
    #[inline(always)]
    fn irqs_on(_: &'static SourceLocation, _: &'static Location<'static>) {}
    #[inline(always)]
    fn preempt_off(_: &'static SourceLocation, _: &'static Location<'static>) {
        preempt::preempt_disable_notrace();
    }
    #[inline(always)]
    fn preempt_on(_: &'static SourceLocation, _: &'static Location<'static>) {
        preempt::preempt_enable_notrace();
    }
    #[inline(always)]
    fn bh_traced() -> bool {
        false
    }
}

impl Strategy for CallAlways {
    const NAME: &'static str = "call-always";
    #[inline(always)]
    fn irqs_off(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        trace_hardirqs_off(ip, parent);
    }
    #[inline(always)]
    fn irqs_on(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        trace_hardirqs_on(ip, parent);
    }
    #[inline(always)]
    fn preempt_off(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        preempt_count_add(ip, parent);
    }
    #[inline(always)]
    fn preempt_on(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        preempt_count_sub(ip, parent);
    }
    #[inline(always)]
    fn bh_traced() -> bool {
        true
    }
}

impl Strategy for EarlyKey {
    const NAME: &'static str = "early-key";
    #[inline(always)]
    fn irqs_off(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        if irq_disable::is_enabled() {
            trace_hardirqs_off(ip, parent);
        }
    }
    #[inline(always)]
    fn irqs_on(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        if irq_enable::is_enabled() {
            trace_hardirqs_on(ip, parent);
        }
    }
    #[inline(always)]
    fn preempt_off(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        // The count inline, as baseline does it; only the tracing behind
        // the key (an if/else around the whole operation measured 24 % over
        // baseline, from its layout).
        preempt::preempt_disable_notrace();
        if preempt_disable::is_enabled() {
            preempt_latency_start(ip, parent);
        }
    }
    #[inline(always)]
    fn preempt_on(ip: &'static SourceLocation, parent: &'static Location<'static>) {
        if preempt_enable::is_enabled() {
            preempt_latency_stop(ip, parent);
        }
        preempt::preempt_enable_notrace();
    }
    #[inline(always)]
    fn bh_traced() -> bool {
        softirqs_disable::is_enabled()
    }
}

thread_local! {
    /// The kernel's per-CPU `tracing_irq_cpu`: an irqs-off section has been
    /// traced as started on this thread.
    static TRACING_IRQ: AtomicBool = const { AtomicBool::new(false) };
    /// Softirq-disable nesting (the SOFTIRQ bits of the preempt count).
    static BH_COUNT: AtomicU32 = const { AtomicU32::new(0) };
}

/// `trace_hardirqs_off()`: out of line; checks the key inside; fires on
/// the outermost transition only.
#[inline(never)]
pub fn trace_hardirqs_off(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    // Relaxed load/store: per-thread state, touched only by this thread and
    // the signal handlers that interrupt it (see ringtrace_clock::emulation).
    let first = TRACING_IRQ.with(|t| {
        let was = t.load(Ordering::Relaxed);
        t.store(true, Ordering::Relaxed);
        !was
    });
    if first {
        crate::latency::section_start(crate::latency::Cause::Irqs, ip);
        crate::trace!(irq_disable(*ip, SourceLocation::from_location(parent)));
    }
}

/// `trace_hardirqs_on()`: out of line; fires when a traced section ends.
#[inline(never)]
pub fn trace_hardirqs_on(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    let last = TRACING_IRQ.with(|t| {
        let was = t.load(Ordering::Relaxed);
        t.store(false, Ordering::Relaxed);
        was
    });
    if last {
        crate::latency::section_end(crate::latency::Cause::Irqs, ip);
        crate::trace!(irq_enable(*ip, SourceLocation::from_location(parent)));
    }
}

/// `preempt_count_add(1)` with tracing: out of line, the tracepoint on the
/// count leaving zero. What `call-always` calls.
#[inline(never)]
pub fn preempt_count_add(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    preempt::preempt_disable_notrace();
    preempt_latency_start(ip, parent);
}

/// `preempt_count_sub(1)` with tracing: the tracepoint on the count
/// returning to zero, before it does (and before any reschedule).
#[inline(never)]
pub fn preempt_count_sub(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    preempt_latency_stop(ip, parent);
    preempt::preempt_enable_notrace();
}

/// The kernel's `preempt_latency_start()`: after the count went up, fires
/// when it left zero. Out of line; `early-key` calls it only with the key on,
/// after an inline count update, so its keys-off path is `baseline` plus
/// the key check.
#[inline(never)]
pub fn preempt_latency_start(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    if preempt::preempt_count() == 1 {
        crate::latency::section_start(crate::latency::Cause::Preempt, ip);
        crate::trace!(preempt_disable(*ip, SourceLocation::from_location(parent)));
    }
}

/// The kernel's `preempt_latency_stop()`: before the count goes down, fires
/// when it is about to return to zero.
#[inline(never)]
pub fn preempt_latency_stop(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    if preempt::preempt_count() == 1 {
        crate::latency::section_end(crate::latency::Cause::Preempt, ip);
        crate::trace!(preempt_enable(*ip, SourceLocation::from_location(parent)));
    }
}

/// `local_irq_disable()` under strategy `S` and mask `M`.
#[inline(always)]
pub fn local_irq_disable_at<S: Strategy, M: IrqMask>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    M::disable();
    S::irqs_off(ip, parent);
}

/// `local_irq_enable()` under strategy `S` and mask `M`.
#[inline(always)]
pub fn local_irq_enable_at<S: Strategy, M: IrqMask>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    S::irqs_on(ip, parent);
    M::enable();
}

/// What [`local_irq_save_at`] returns.
#[derive(Clone, Copy)]
#[must_use = "irq flags must be given back to local_irq_restore"]
pub struct IrqFlags {
    was_disabled: bool,
    saved: SavedIrqs,
}

impl IrqFlags {
    /// Whether irqs were disabled when saved.
    pub fn were_disabled(&self) -> bool {
        self.was_disabled
    }
}

/// `local_irq_save()` under strategy `S` and mask `M`.
#[inline(always)]
pub fn local_irq_save_at<S: Strategy, M: IrqMask>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) -> IrqFlags {
    let (was_disabled, saved) = M::save();
    if !was_disabled {
        S::irqs_off(ip, parent);
    }
    IrqFlags {
        was_disabled,
        saved,
    }
}

/// `local_irq_restore()` under strategy `S` and mask `M`.
#[inline(always)]
pub fn local_irq_restore_at<S: Strategy, M: IrqMask>(
    flags: IrqFlags,
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    if !flags.was_disabled {
        S::irqs_on(ip, parent);
    }
    M::restore(flags.saved);
}

/// `preempt_disable()` under strategy `S`.
#[inline(always)]
pub fn preempt_disable_at<S: Strategy>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    S::preempt_off(ip, parent);
}

/// `preempt_enable()` under strategy `S`.
#[inline(always)]
pub fn preempt_enable_at<S: Strategy>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    S::preempt_on(ip, parent);
}

/// `local_bh_disable()`: softirqs off. Instrumented, it runs under an irq
/// save/restore (mask `M`) as the kernel's did once TRACE_IRQFLAGS existed
/// (the local_bh irqtrace patch), and fires `softirqs_disable` on the outermost disable.
#[inline(always)]
pub fn local_bh_disable_at<S: Strategy, M: IrqMask>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    if S::bh_traced() {
        bh_disable_traced::<M>(ip, parent);
    } else {
        BH_COUNT.with(|c| c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed));
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
}

/// `local_bh_enable()`: softirqs back on at the outermost enable, which is
/// also a preemption point.
#[inline(always)]
pub fn local_bh_enable_at<S: Strategy, M: IrqMask>(
    ip: &'static SourceLocation,
    parent: &'static Location<'static>,
) {
    if S::bh_traced() {
        bh_enable_traced::<M>(ip, parent);
    } else {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        BH_COUNT.with(|c| {
            c.store(
                c.load(Ordering::Relaxed).saturating_sub(1),
                Ordering::Relaxed,
            )
        });
    }
}

#[inline(never)]
fn bh_disable_traced<M: IrqMask>(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    let (_, saved) = M::save();
    let count = BH_COUNT.with(|c| {
        let n = c.load(Ordering::Relaxed) + 1;
        c.store(n, Ordering::Relaxed);
        n
    });
    if count == 1 {
        crate::trace!(softirqs_disable(*ip, SourceLocation::from_location(parent)));
    }
    M::restore(saved);
}

#[inline(never)]
fn bh_enable_traced<M: IrqMask>(ip: &'static SourceLocation, parent: &'static Location<'static>) {
    let (_, saved) = M::save();
    let count = BH_COUNT.with(|c| {
        let n = c.load(Ordering::Relaxed).saturating_sub(1);
        c.store(n, Ordering::Relaxed);
        n
    });
    if count == 0 {
        crate::trace!(softirqs_enable(*ip, SourceLocation::from_location(parent)));
    }
    M::restore(saved);
}

/// The calling thread's softirq-disable depth.
pub fn softirq_count() -> u32 {
    BH_COUNT.with(|c| c.load(Ordering::Relaxed))
}

/// The six preemptirq tracepoints, in system `preemptirq`.
pub fn tracepoints() -> [&'static crate::Tracepoint; 6] {
    [
        &irq_disable::TRACEPOINT,
        &irq_enable::TRACEPOINT,
        &preempt_disable::TRACEPOINT,
        &preempt_enable::TRACEPOINT,
        &softirqs_disable::TRACEPOINT,
        &softirqs_enable::TRACEPOINT,
    ]
}

/// Enables or disables all six preemptirq tracepoints.
pub fn set_tracepoints(on: bool) -> Result<(), crate::TracepointError> {
    for tp in tracepoints() {
        tp.set_enabled(on)?;
    }
    Ok(())
}

/// `local_irq_disable()` recording this line and the enclosing function's
/// `#[track_caller]` location. Defaults to [`EarlyKey`] and [`Soft`];
/// `local_irq_disable!(Strategy, Mask)` picks others.
#[macro_export]
macro_rules! local_irq_disable {
    () => {
        $crate::local_irq_disable!($crate::preemptirq::EarlyKey, $crate::preemptirq::Soft)
    };
    ($s:ty, $m:ty) => {
        $crate::preemptirq::local_irq_disable_at::<$s, $m>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `local_irq_enable()`; see [`local_irq_disable!`].
#[macro_export]
macro_rules! local_irq_enable {
    () => {
        $crate::local_irq_enable!($crate::preemptirq::EarlyKey, $crate::preemptirq::Soft)
    };
    ($s:ty, $m:ty) => {
        $crate::preemptirq::local_irq_enable_at::<$s, $m>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `local_irq_save()`; see [`local_irq_disable!`].
#[macro_export]
macro_rules! local_irq_save {
    () => {
        $crate::local_irq_save!($crate::preemptirq::EarlyKey, $crate::preemptirq::Soft)
    };
    ($s:ty, $m:ty) => {
        $crate::preemptirq::local_irq_save_at::<$s, $m>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `local_irq_restore(flags)`; see [`local_irq_disable!`].
#[macro_export]
macro_rules! local_irq_restore {
    ($flags:expr) => {
        $crate::local_irq_restore!(
            $flags,
            $crate::preemptirq::EarlyKey,
            $crate::preemptirq::Soft
        )
    };
    ($flags:expr, $s:ty, $m:ty) => {
        $crate::preemptirq::local_irq_restore_at::<$s, $m>(
            $flags,
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `preempt_disable()`; defaults to [`EarlyKey`].
#[macro_export]
macro_rules! preempt_disable {
    () => {
        $crate::preempt_disable!($crate::preemptirq::EarlyKey)
    };
    ($s:ty) => {
        $crate::preemptirq::preempt_disable_at::<$s>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `preempt_enable()`; defaults to [`EarlyKey`].
#[macro_export]
macro_rules! preempt_enable {
    () => {
        $crate::preempt_enable!($crate::preemptirq::EarlyKey)
    };
    ($s:ty) => {
        $crate::preemptirq::preempt_enable_at::<$s>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `local_bh_disable()`; defaults to [`EarlyKey`] and [`Soft`].
#[macro_export]
macro_rules! local_bh_disable {
    () => {
        $crate::local_bh_disable!($crate::preemptirq::EarlyKey, $crate::preemptirq::Soft)
    };
    ($s:ty, $m:ty) => {
        $crate::preemptirq::local_bh_disable_at::<$s, $m>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// `local_bh_enable()`; defaults to [`EarlyKey`] and [`Soft`].
#[macro_export]
macro_rules! local_bh_enable {
    () => {
        $crate::local_bh_enable!($crate::preemptirq::EarlyKey, $crate::preemptirq::Soft)
    };
    ($s:ty, $m:ty) => {
        $crate::preemptirq::local_bh_enable_at::<$s, $m>(
            &$crate::here!(),
            ::core::panic::Location::caller(),
        )
    };
}

/// A strategy chosen at run time (by a command line, say); a caller
/// matches on it once, outside any timed loop, and calls the generic
/// functions with the matching type.
///
/// ```
/// use ringtrace_tracepoint::preemptirq::StrategyKind;
/// assert_eq!(StrategyKind::parse("early-key").unwrap(), StrategyKind::EarlyKey);
/// let err = StrategyKind::parse("fast").unwrap_err().to_string();
/// assert!(err.contains("baseline, call-always, early-key"), "{err}");
/// assert!(err.contains("strategy"), "{err}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrategyKind {
    /// [`Baseline`].
    Baseline,
    /// [`CallAlways`].
    CallAlways,
    /// [`EarlyKey`].
    EarlyKey,
}

impl StrategyKind {
    /// All three, in the preemptirq patch's table order.
    pub const ALL: [StrategyKind; 3] = [
        StrategyKind::Baseline,
        StrategyKind::CallAlways,
        StrategyKind::EarlyKey,
    ];

    /// `baseline`, `call-always` or `early-key`.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Baseline => Baseline::NAME,
            StrategyKind::CallAlways => CallAlways::NAME,
            StrategyKind::EarlyKey => EarlyKey::NAME,
        }
    }

    /// Parses a strategy name.
    pub fn parse(name: &str) -> Result<StrategyKind, crate::TracepointError> {
        StrategyKind::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| crate::TracepointError::UnknownStrategy {
                given: name.to_owned(),
                valid: StrategyKind::ALL.map(StrategyKind::name).join(", "),
            })
    }
}
