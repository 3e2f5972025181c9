//! Per-CPU event counters, as the kernel's lock_events (seed 002), and the
//! preemption check DEBUG_PREEMPT adds to `this_cpu` operations (seed 003).

use crossbeam_utils::CachePadded;
use ringtrace_clock::emulation::preempt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Named counters, one row per CPU. An increment touches only the calling
/// CPU's row, on its own cache line; a read sums the rows.
///
/// ```
/// use ringtrace_tracepoint::EventCounters;
/// let counters = EventCounters::new(["lock_slowpath", "lock_pending"]);
/// counters.inc(0);
/// counters.add(1, 5);
/// assert_eq!(counters.read(), vec![("lock_slowpath", 1), ("lock_pending", 5)]);
/// ```
#[derive(Debug)]
pub struct EventCounters<const N: usize> {
    names: [&'static str; N],
    rows: Box<[CachePadded<[AtomicU64; N]>]>,
    violations: AtomicU64,
    first_violation: Mutex<Option<&'static Location<'static>>>,
}

impl<const N: usize> EventCounters<N> {
    /// Counters with these names, one row per possible CPU.
    pub fn new(names: [&'static str; N]) -> Self {
        let cpus = ringtrace_ring::cpu::possible_cpus().max(1);
        ringtrace_ring::cpu::init();
        EventCounters {
            names,
            rows: (0..cpus)
                .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            violations: AtomicU64::new(0),
            first_violation: Mutex::new(None),
        }
    }

    /// The counter names, in index order.
    pub fn names(&self) -> &[&'static str; N] {
        &self.names
    }

    /// The index of counter `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    #[inline(always)]
    fn row(&self) -> &[AtomicU64; N] {
        let cpu = ringtrace_ring::cpu::current_cpu();
        let n = self.rows.len();
        &self.rows[if cpu < n { cpu } else { cpu % n }]
    }

    /// Adds one to counter `i` on this CPU (`this_cpu_inc`). Out-of-range
    /// indices are ignored. With the `debug-preempt` feature it checks
    /// preemption like [`inc_checked`](Self::inc_checked).
    #[inline]
    #[track_caller]
    pub fn inc(&self, i: usize) {
        self.add(i, 1);
    }

    /// Adds `n` to counter `i` on this CPU.
    #[inline]
    #[track_caller]
    pub fn add(&self, i: usize, n: u64) {
        #[cfg(feature = "debug-preempt")]
        self.check_preemption_disabled();
        self.add_unchecked(i, n);
    }

    #[inline(always)]
    fn add_unchecked(&self, i: usize, n: u64) {
        if let Some(counter) = self.row().get(i) {
            // Relaxed: a statistic. An RMW, because threads sharing a CPU
            // (a preemption between load and store) would lose counts; it is
            // uncontended unless they do.
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// `this_cpu_inc` with DEBUG_PREEMPT's check: counts (and remembers the
    /// first place of) an increment made while preemptible, in the
    /// emulation's sense, where the CPU could change under it.
    #[inline]
    #[track_caller]
    pub fn inc_checked(&self, i: usize) {
        self.check_preemption_disabled();
        self.add_unchecked(i, 1);
    }

    /// Out of line, as the kernel's `__this_cpu_preempt_check()` is a call
    /// (a `noinstr` function in lib/smp_processor_id.c): what DEBUG_PREEMPT
    /// costs is that call in every `__this_cpu_*` operation.
    #[inline(never)]
    #[track_caller]
    fn check_preemption_disabled(&self) {
        if preempt::preemptible() {
            self.preemptible_use(Location::caller());
        }
    }

    #[cold]
    fn preemptible_use(&self, at: &'static Location<'static>) {
        // Relaxed: a statistic.
        self.violations.fetch_add(1, Ordering::Relaxed);
        let mut first = self
            .first_violation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(at);
    }

    /// Checked increments made while preemptible, and where the first was.
    pub fn preempt_violations(&self) -> (u64, Option<&'static Location<'static>>) {
        let first = *self
            .first_violation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        (self.violations.load(Ordering::Relaxed), first)
    }

    /// The sum of counter `i` over all CPUs.
    pub fn sum(&self, i: usize) -> u64 {
        self.rows
            .iter()
            .filter_map(|row| row.get(i))
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Every counter's name and sum.
    pub fn read(&self) -> Vec<(&'static str, u64)> {
        (0..N).map(|i| (self.names[i], self.sum(i))).collect()
    }

    /// Sets every counter to zero.
    pub fn reset(&self) {
        for row in self.rows.iter() {
            for c in row.iter() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }
}
