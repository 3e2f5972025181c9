//! The bh_irqsave patch: the bh pair with and without the irq flags save/restore that
//! irq tracing put into it.
//!
//! The model follows kernel/softirq.c of 2.6.18 (the file the patch
//! patches), with CONFIG_TRACE_IRQFLAGS on and tracing itself off:
//!
//! - `__local_bh_disable(ip)`: `WARN_ON_ONCE(in_irq())`,
//!   `raw_local_irq_save(flags)`, `add_preempt_count(SOFTIRQ_OFFSET)`, then
//!   `trace_softirqs_off(ip)` when `softirq_count() == SOFTIRQ_OFFSET` (the
//!   softirq count just became non-zero), `raw_local_irq_restore(flags)`.
//! - `local_bh_enable()`: `WARN_ON_ONCE(in_irq())`,
//!   `WARN_ON_ONCE(irqs_disabled())`, `local_irq_save(flags)`,
//!   `trace_softirqs_on(ip)` when `softirq_count() == SOFTIRQ_OFFSET`,
//!   `sub_preempt_count(SOFTIRQ_OFFSET - 1)` (preemption stays off while
//!   softirqs run), `do_softirq()` when `!in_interrupt() &&
//!   local_softirq_pending()`, `dec_preempt_count()`,
//!   `local_irq_restore(flags)`, `preempt_check_resched()`.
//!
//! Tim Chen's patch wraps the flags save/restore (and the in_irq warning of
//! local_bh_enable) in `#ifdef CONFIG_TRACE_IRQFLAGS`; what the patch
//! measured is the same out-of-line functions with and without
//! `raw_local_irq_save/restore`. So the body here is written once
//! (`bh_disable_body`, `bh_enable_body`) and compiled twice by a const
//! parameter: [`local_bh_disable`]/[`local_bh_enable`] without the save,
//! [`local_bh_disable_irqsave`]/[`local_bh_enable_irqsave`] with it. Both
//! keep every WARN check, so they differ by the save/restore alone.
//!
//! The save/restore is `ringtrace_clock::emulation::flags_irq`: on x86_64
//! the kernel's `pushf; pop` / `push; popf` round trip around the
//! emulation's soft irq mask (`cli` cannot run at user level, `popf` is the
//! dear half and runs); elsewhere the soft mask alone.
//!
//! The preempt count is the 2.6.18 layout (include/linux/hardirq.h:
//! PREEMPT_BITS 8, SOFTIRQ_BITS 8, HARDIRQ_BITS 12) in a thread-local word
//! of this module, apart from the emulation's preempt count, so that the bh
//! pair's arithmetic is the kernel's.

use crate::finding::{Finding, Verdict};
use crate::spread::{ns_per, paired, Paired};
use ringtrace_clock::emulation::{self, flags_irq};
use serde::Serialize;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// One softirq level in the preempt count (2.6.18: `1 << PREEMPT_SHIFT+8`).
pub const SOFTIRQ_OFFSET: u32 = 1 << 8;
/// One hardirq level in the preempt count.
pub const HARDIRQ_OFFSET: u32 = 1 << 16;
const SOFTIRQ_MASK: u32 = 0xff << 8;
const HARDIRQ_MASK: u32 = 0xfff << 16;

/// The calling thread's kernel-style state for the bh pair.
struct BhState {
    /// `preempt_count()`: bits 0-7 preemption, 8-15 softirq, 16-27 hardirq.
    count: AtomicU32,
    /// `local_softirq_pending()`.
    softirq_pending: AtomicU32,
    /// `TIF_NEED_RESCHED`.
    need_resched: AtomicBool,
    /// `WARN_ON_ONCE` conditions found true on this thread.
    warnings: AtomicU64,
}

thread_local! {
    static BH: BhState = const {
        BhState {
            count: AtomicU32::new(0),
            softirq_pending: AtomicU32::new(0),
            need_resched: AtomicBool::new(false),
            warnings: AtomicU64::new(0),
        }
    };
}

/// Softirq transitions traced (lockdep's `debug_locks` stands for it): off
/// in every measurement, so `trace_softirqs_off/on` return at once.
static SOFTIRQ_TRACING: AtomicBool = AtomicBool::new(false);
/// Softirq transitions recorded while [`SOFTIRQ_TRACING`] was on.
static TRACED: AtomicU64 = AtomicU64::new(0);

// Relaxed load and store on the thread's own word, not an RMW: only this
// thread touches it (no signal handler does), as the kernel's
// `preempt_count() += val` is a plain add on the task's own thread_info.
#[inline(always)]
fn add_preempt_count(val: u32) -> u32 {
    BH.with(|s| {
        let n = s.count.load(Ordering::Relaxed).wrapping_add(val);
        s.count.store(n, Ordering::Relaxed);
        n
    })
}

#[inline(always)]
fn sub_preempt_count(val: u32) {
    add_preempt_count(val.wrapping_neg());
}

#[inline(always)]
fn preempt_count() -> u32 {
    BH.with(|s| s.count.load(Ordering::Relaxed))
}

/// The calling thread's softirq count, in `SOFTIRQ_OFFSET` units times
/// `SOFTIRQ_OFFSET` (`softirq_count()`).
pub fn softirq_count() -> u32 {
    preempt_count() & SOFTIRQ_MASK
}

/// `WARN_ON_ONCE` conditions found true so far on the calling thread.
pub fn warnings() -> u64 {
    BH.with(|s| s.warnings.load(Ordering::Relaxed))
}

#[inline(always)]
fn warn_on_once(cond: bool) {
    if cond {
        warn();
    }
}

#[cold]
#[inline(never)]
fn warn() {
    // A load and store: only this thread touches its count.
    BH.with(|s| {
        s.warnings
            .store(s.warnings.load(Ordering::Relaxed) + 1, Ordering::Relaxed)
    });
}

/// lockdep's `trace_softirqs_off(ip)`: out of line, and returns at once
/// while tracing is off.
#[inline(never)]
fn trace_softirqs_off(ip: usize) {
    // Relaxed: a switch read on its own; nothing is published with it.
    if !SOFTIRQ_TRACING.load(Ordering::Relaxed) {
        return;
    }
    std::hint::black_box(ip);
    TRACED.fetch_add(1, Ordering::Relaxed);
}

/// lockdep's `trace_softirqs_on(ip)`.
#[inline(never)]
fn trace_softirqs_on(ip: usize) {
    // Relaxed: as in trace_softirqs_off.
    if !SOFTIRQ_TRACING.load(Ordering::Relaxed) {
        return;
    }
    std::hint::black_box(ip);
    TRACED.fetch_add(1, Ordering::Relaxed);
}

/// `do_softirq()`: runs (here: drops) what is pending.
#[cold]
#[inline(never)]
fn do_softirq() {
    BH.with(|s| s.softirq_pending.store(0, Ordering::Relaxed));
}

/// `preempt_check_resched()`.
#[inline(always)]
fn preempt_check_resched() {
    if BH.with(|s| s.need_resched.load(Ordering::Relaxed)) {
        preempt_schedule();
    }
}

#[cold]
#[inline(never)]
fn preempt_schedule() {
    BH.with(|s| s.need_resched.store(false, Ordering::Relaxed));
    std::thread::yield_now();
}

/// `raw_local_irq_save(flags)` when `IRQSAVE`, nothing otherwise.
#[inline(always)]
fn irq_save<const IRQSAVE: bool>() -> Option<flags_irq::FlagsIrqFlags> {
    if IRQSAVE {
        Some(flags_irq::save())
    } else {
        None
    }
}

#[inline(always)]
fn irq_restore(flags: Option<flags_irq::FlagsIrqFlags>) {
    if let Some(flags) = flags {
        flags_irq::restore(flags);
    }
}

/// 2.6.18's `__local_bh_disable(ip)`, with the irq save/restore when
/// `IRQSAVE`.
#[inline(always)]
fn bh_disable_body<const IRQSAVE: bool>(ip: usize) {
    warn_on_once(preempt_count() & HARDIRQ_MASK != 0); // in_irq()
    let flags = irq_save::<IRQSAVE>();
    add_preempt_count(SOFTIRQ_OFFSET);
    // Were softirqs turned off above:
    if softirq_count() == SOFTIRQ_OFFSET {
        trace_softirqs_off(ip);
    }
    irq_restore(flags);
    // barrier(): the bh-disabled section may not move above the add.
    compiler_fence(Ordering::SeqCst);
}

/// 2.6.18's `local_bh_enable()`, with the irq save/restore when `IRQSAVE`.
#[inline(always)]
fn bh_enable_body<const IRQSAVE: bool>(ip: usize) {
    compiler_fence(Ordering::SeqCst);
    warn_on_once(preempt_count() & HARDIRQ_MASK != 0); // in_irq()
    warn_on_once(emulation::irqs_disabled());
    let flags = irq_save::<IRQSAVE>();
    // Are softirqs going to be turned on now:
    if softirq_count() == SOFTIRQ_OFFSET {
        trace_softirqs_on(ip);
    }
    // Keep preemption disabled until we are done with softirq processing:
    sub_preempt_count(SOFTIRQ_OFFSET - 1);
    let in_interrupt = preempt_count() & (SOFTIRQ_MASK | HARDIRQ_MASK) != 0;
    if !in_interrupt && BH.with(|s| s.softirq_pending.load(Ordering::Relaxed)) != 0 {
        do_softirq();
    }
    sub_preempt_count(1); // dec_preempt_count()
    irq_restore(flags);
    preempt_check_resched();
}

/// `local_bh_disable()` without the irq save/restore (the patch's patch,
/// CONFIG_TRACE_IRQFLAGS's flags code compiled out). Out of line, as the
/// kernel's is.
#[inline(never)]
pub fn local_bh_disable() {
    bh_disable_body::<false>(local_bh_disable as *const () as usize);
}

/// `local_bh_enable()` without the irq save/restore.
#[inline(never)]
pub fn local_bh_enable() {
    bh_enable_body::<false>(local_bh_enable as *const () as usize);
}

/// `local_bh_disable()` with `raw_local_irq_save/restore` around the body,
/// as 2.6.18 built it with CONFIG_TRACE_IRQFLAGS.
#[inline(never)]
pub fn local_bh_disable_irqsave() {
    bh_disable_body::<true>(local_bh_disable_irqsave as *const () as usize);
}

/// `local_bh_enable()` with `local_irq_save/restore` around the body.
#[inline(never)]
pub fn local_bh_enable_irqsave() {
    bh_enable_body::<true>(local_bh_enable_irqsave as *const () as usize);
}

/// The bh_irqsave patch: ns per bh pair without (a) and with (b) the irq save/restore.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BhPair {
    /// ns per disable/enable pair, paired per round: a = without the irq
    /// save/restore, b = with it; `ns.diff` is what the save/restore adds.
    pub ns: Paired,
    /// The verdict's rule held: `ns.diff.p10 > 0`.
    pub reproduced: bool,
}

/// The rule [`finding`] applies.
pub const RULE: &str = "reproduced when the difference (with minus without the irq \
     save/restore, ns per pair, per round) has p10 above 0; not measurable without rounds";

/// The method, in one phrase.
pub fn method() -> String {
    let save = if flags_irq::HAS_FLAGS_ROUND_TRIP {
        "pushf/popf round trip and soft irq mask"
    } else {
        "soft irq mask alone (no flags round trip on this architecture)"
    };
    format!(
        "paired rounds of one out-of-line bh disable/enable pair (kernel/softirq.c, 2.6.18) \
         compiled with and without the irq save/restore ({save}), tracing off"
    )
}

/// The verdict of [`RULE`] on `ns`.
pub fn verdict(ns: &Paired) -> Verdict {
    if ns.rounds == 0 || !ns.diff.p10.is_finite() || ns.a.p50 <= 0.0 {
        return Verdict::NotMeasurable("no timed rounds".into());
    }
    Verdict::from_bool(ns.diff.p10 > 0.0)
}

/// Measures the bh_irqsave patch over `rounds` rounds of `iters` pairs a side.
pub fn bh_pair(rounds: usize, iters: u64) -> BhPair {
    let ns = paired(
        rounds,
        || {
            ns_per(iters, || {
                local_bh_disable();
                local_bh_enable();
            })
        },
        || {
            ns_per(iters, || {
                local_bh_disable_irqsave();
                local_bh_enable_irqsave();
            })
        },
    );
    BhPair {
        reproduced: verdict(&ns) == Verdict::Reproduced,
        ns,
    }
}

/// The bh_irqsave finding: ns per pair both ways, the difference in ns and in
/// TSC cycles (ns times the TSC frequency that `ringtrace_clock::Tsc`
/// calibrates once per process), and the ratio.
pub fn finding(b: &BhPair) -> Finding {
    let ns = &b.ns;
    let cycles = match super::tsc_ghz() {
        Some(ghz) => format!(
            " = {} TSC cycles (at {ghz:.2} GHz, calibrated against CLOCK_MONOTONIC_RAW)",
            super::spread_text(&super::scaled(&ns.diff, ghz), 1)
        ),
        None => " (no TSC here to count cycles)".to_owned(),
    };
    Finding {
        ours: format!(
            "ns per pair without the irq save/restore {}, with {}; difference {} ns{cycles}; \
             ratio {} over {} rounds",
            super::spread_text(&ns.a, 2),
            super::spread_text(&ns.b, 2),
            super::spread_text(&ns.diff, 2),
            super::spread_text(&ns.ratio, 2),
            ns.rounds
        ),
        method: method(),
        rule: RULE.to_owned(),
        verdict: verdict(ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spread::Paired;

    fn rounds(a: &[f64], b: &[f64]) -> Paired {
        Paired::from_rounds(a.to_vec(), b.to_vec())
    }

    #[test]
    fn rule_reproduces_when_every_round_pays_for_the_save() {
        let ns = rounds(&[5.0, 5.1, 5.2, 5.0], &[9.0, 9.2, 9.1, 9.3]);
        assert_eq!(verdict(&ns), Verdict::Reproduced);
    }

    #[test]
    fn rule_rejects_when_the_difference_straddles_zero() {
        let ns = rounds(&[5.0, 5.1, 5.2, 5.0, 5.1], &[4.8, 5.3, 5.1, 4.9, 5.2]);
        assert_eq!(verdict(&ns), Verdict::NotReproduced);
    }

    #[test]
    fn rule_is_not_measurable_without_rounds() {
        let ns = rounds(&[], &[]);
        assert!(matches!(verdict(&ns), Verdict::NotMeasurable(_)));
    }

    #[test]
    fn both_builds_leave_the_softirq_count_and_irqs_as_found() {
        let warned = warnings();
        local_bh_disable();
        assert_eq!(softirq_count(), SOFTIRQ_OFFSET);
        local_bh_disable_irqsave();
        assert_eq!(softirq_count(), 2 * SOFTIRQ_OFFSET);
        local_bh_enable_irqsave();
        local_bh_enable();
        assert_eq!(preempt_count(), 0);
        assert!(!emulation::irqs_disabled());
        assert_eq!(warnings(), warned, "a balanced pair must not warn");
    }

    #[test]
    fn enable_with_irqs_disabled_warns() {
        let warned = warnings();
        local_bh_disable();
        let flags = emulation::soft_irq::save();
        local_bh_enable();
        emulation::soft_irq::restore(flags);
        assert!(warnings() > warned);
    }

    #[test]
    fn finding_prints_the_rule_and_both_sides() {
        let b = bh_pair(2, 1_000);
        let f = finding(&b);
        assert_eq!(f.rule, RULE);
        assert!(f.ours.contains("without") && f.ours.contains("difference"));
    }
}
