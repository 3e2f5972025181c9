//! bh_irqsave, lock_events and debug_preempt: what instrumentation and per-CPU counting cost,
//! each modelled on the kernel code of its patch's era.
//!
//! - [`bh`], **001, "Reducing local_bh_enable/disable overhead in
//!   irqtrace"** (Tim Chen, 2006): one out-of-line `local_bh_disable()` /
//!   `local_bh_enable()` pair after kernel/softirq.c of 2.6.18, built twice,
//!   identical but for the irq flags save/restore around the body.
//! - [`lock_events`], **002, "locking/lock_events: Add locking events for
//!   rtmutex slow paths"** (Waiman Long, 2025): the patch's rtmutex event
//!   names counted in a userspace rtmutex's slow path and checked against
//!   each other; and what the counting primitives cost (`raw_cpu_inc`,
//!   `this_cpu_inc`, one shared atomic) and lose.
//! - [`debug_preempt`](mod@debug_preempt), **003, "lib/Kconfig.debug: do not enable
//!   DEBUG_PREEMPT by default"** (Hyeonggon Yoo, 2023): the cost per call of
//!   lib/smp_processor_id.c's check on its two early exits.
//!
//! Each module has a `finding` that turns its result into the report's
//! [`Finding`](crate::finding::Finding), rule included.

pub mod bh;
pub mod debug_preempt;
pub mod lock_events;

pub use bh::{bh_pair, BhPair};
pub use debug_preempt::{debug_preempt, DebugPreempt};
pub use lock_events::{counters, Counters};

use crate::spread::Spread;

/// The TSC's frequency in GHz, calibrated once per process against
/// `CLOCK_MONOTONIC_RAW` by `ringtrace_clock::Tsc`; `None` without a
/// trustworthy TSC (not x86_64, not invariant, or not the kernel's
/// clocksource).
pub fn tsc_ghz() -> Option<f64> {
    use ringtrace_clock::Clock;
    let tsc = ringtrace_clock::Tsc::new().ok()?;
    tsc.info()
        .frequency_hz
        .map(|hz| hz as f64 / 1e9)
        .filter(|ghz| *ghz > 0.0)
}

/// A spread scaled by `k` (ns to cycles, say).
pub(crate) fn scaled(s: &Spread, k: f64) -> Spread {
    Spread {
        p10: s.p10 * k,
        p50: s.p50 * k,
        p90: s.p90 * k,
    }
}

/// `p50 (p10 .. p90)` with `digits` decimals.
pub(crate) fn spread_text(s: &Spread, digits: usize) -> String {
    format!("{:.d$} ({:.d$} .. {:.d$})", s.p50, s.p10, s.p90, d = digits)
}

#[cfg(test)]
mod tests {
    /// Prints the three findings; asserts nothing (timings never feed a
    /// test). Run with `cargo test --release -p ringtrace-cli
    /// prints_findings -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement to read, not a check"]
    fn prints_findings() {
        let b = super::bh_pair(10, 200_000);
        println!("001: {:#?}", super::bh::finding(&b));
        let c = super::counters(5, 2_000_000);
        println!("002: {:#?}", super::lock_events::finding(&c));
        let d = super::debug_preempt(10, 200_000);
        println!("003: {:#?}", super::debug_preempt::finding(&d));
    }
}
