//! Seeds 001, 002 and 003: instrumentation that costs even when unused,
//! and per-CPU event counters.
//!
//! - **001, "Reducing local_bh_enable/disable overhead in irqtrace"** (Tim
//!   Chen, 2006): the irq tracing support turned `local_bh_disable()` /
//!   `local_bh_enable()` into functions that save and restore the irq
//!   flags, even with tracing off: 3% of UDP throughput on IA-64. Here: the
//!   bh pair without (`baseline`) and with (`call-always`) that irq
//!   save/restore, tracing off, ns per pair paired per round.
//! - **002, "locking/lock_events: Add locking events for rtmutex slow
//!   paths"** (Waiman Long, 2025): per-CPU event counters (`lockevent_inc`)
//!   summed when read. Here: two threads on two CPUs increment the same
//!   counter; the per-CPU sum must be exact, and an increment is compared
//!   with one on a single shared atomic, contended the same way.
//! - **003, "lib/Kconfig.debug: do not enable DEBUG_PREEMPT by default"**
//!   (Hyeonggon Yoo, 2023): DEBUG_PREEMPT's check in every `__this_cpu_*`
//!   operation cost about 10% of hackbench. Here: a counter-heavy loop
//!   (eight dependent multiply-adds and one per-CPU increment an
//!   iteration, inside a preempt-disabled section) with and without the
//!   check, which is out of line as the kernel's is.

use crate::sched as placement;
use crate::spread::{ns_per, paired, Paired};
use crossbeam_utils::CachePadded;
use ringtrace_clock::emulation::preempt;
use ringtrace_tracepoint::preemptirq::{Baseline, CallAlways, Soft};
use ringtrace_tracepoint::{local_bh_disable, local_bh_enable, EventCounters};
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Seed 001: the bh pair without and with the irq save/restore.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BhPair {
    /// ns per pair: a = without (baseline), b = with the save/restore.
    pub ns: Paired,
    /// The irq save/restore makes the pair cost more (ratio p10 above 1).
    pub reproduced: bool,
}

#[inline(never)]
fn bh_pair_plain() {
    local_bh_disable!(Baseline, Soft);
    local_bh_enable!(Baseline, Soft);
}

#[inline(never)]
fn bh_pair_saved() {
    local_bh_disable!(CallAlways, Soft);
    local_bh_enable!(CallAlways, Soft);
}

/// Measures seed 001 over `rounds` rounds of `iters` pairs a side.
pub fn bh_pair(rounds: usize, iters: u64) -> BhPair {
    let ns = paired(
        rounds,
        || ns_per(iters, bh_pair_plain),
        || ns_per(iters, bh_pair_saved),
    );
    BhPair {
        reproduced: ns.ratio.p10 > 1.0,
        ns,
    }
}

/// Seed 002: per-CPU counters under concurrency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counters {
    /// Threads incrementing at once.
    pub threads: usize,
    /// Increments per thread per round.
    pub per_thread: u64,
    /// Rounds whose per-CPU sum was exactly threads x per_thread.
    pub exact_rounds: usize,
    /// ns per increment: a = per-CPU counter, b = one shared atomic.
    pub ns: Paired,
    /// Every sum exact, and the shared atomic dearer (ratio p10 above 1).
    pub reproduced: bool,
}

/// `threads` threads, pinned one per CPU, each running `f(thread)` from
/// the same moment (a barrier, so that they really contend); the mean ns
/// per increment over the threads.
fn concurrently(threads: usize, per_thread: u64, f: &(dyn Fn(usize) + Sync)) -> f64 {
    let start = std::sync::Barrier::new(threads);
    let total: f64 = std::thread::scope(|s| {
        let start = &start;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let _ = placement::pin_to_cpu(t);
                    start.wait();
                    ns_per(1, || f(t)) / per_thread as f64
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).sum()
    });
    total / threads as f64
}

/// Measures seed 002 over `rounds` rounds.
pub fn counters(rounds: usize, per_thread: u64) -> Counters {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut exact_rounds = 0;
    let ns = paired(
        rounds,
        || {
            let counters = EventCounters::new(["lock"]);
            let ns = concurrently(threads, per_thread, &|_| {
                for _ in 0..per_thread {
                    counters.inc(black_box(0));
                }
            });
            if counters.sum(0) == threads as u64 * per_thread {
                exact_rounds += 1;
            }
            ns
        },
        || {
            let shared = CachePadded::new(AtomicU64::new(0));
            concurrently(threads, per_thread, &|_| {
                for _ in 0..per_thread {
                    // Relaxed: a statistic, as the per-CPU one is.
                    black_box(&shared).fetch_add(1, Ordering::Relaxed);
                }
            })
        },
    );
    Counters {
        threads,
        per_thread,
        reproduced: exact_rounds == ns.rounds && ns.ratio.p10 > 1.0,
        exact_rounds,
        ns,
    }
}

/// Seed 003: the DEBUG_PREEMPT check's share of a counter-heavy loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DebugPreempt {
    /// ns per loop iteration: a = plain increments, b = checked ones.
    pub ns: Paired,
    /// The share of the checked loop's time the check takes at the median
    /// ratio: `1 - 1/ratio`.
    pub share: f64,
    /// The seed's figure: about 10% of hackbench.
    pub seed_share: f64,
    /// The check adds a measurable share (ratio p10 above 1).
    pub reproduced: bool,
}

/// The counter-heavy loop, `iters` iterations: a dependent chain of eight
/// multiply-adds, then one increment, checked or not. One function per variant, not inlined,
/// so the two loops differ by the check and nothing else the optimiser
/// could do differently around them.
#[inline(never)]
fn counter_loop<const CHECKED: bool>(counters: &EventCounters<4>, iters: u64) -> f64 {
    let t = std::time::Instant::now();
    let mut x = 1u64;
    for n in 0..iters {
        // Work between increments (a dependent chain of multiply-adds),
        // as the kernel's callers do more than count.
        for _ in 0..8 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        let i = (n & 3) as usize;
        if CHECKED {
            counters.inc_checked(black_box(i));
        } else {
            counters.inc(black_box(i));
        }
    }
    black_box(x);
    t.elapsed().as_nanos() as f64 / iters.max(1) as f64
}

/// Measures seed 003 over `rounds` rounds of `iters` iterations a side.
pub fn debug_preempt(rounds: usize, iters: u64) -> DebugPreempt {
    let counters = EventCounters::new(["a", "b", "c", "d"]);
    preempt::preempt_disable_notrace();
    let ns = paired(
        rounds,
        || counter_loop::<false>(&counters, iters),
        || counter_loop::<true>(&counters, iters),
    );
    preempt::preempt_enable_notrace();
    let share = if ns.ratio.p50 > 0.0 {
        1.0 - 1.0 / ns.ratio.p50
    } else {
        0.0
    };
    DebugPreempt {
        reproduced: ns.ratio.p10 > 1.0,
        share,
        seed_share: 0.10,
        ns,
    }
}
