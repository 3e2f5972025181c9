//! Per-CPU event counters, as the kernel's lock_events ("locking/lock_events: Add locking events
//! for rtmutex slow paths"), and the preemption check DEBUG_PREEMPT adds to
//! `this_cpu` operations ("lib/Kconfig.debug: do not enable DEBUG_PREEMPT by
//! default").

use crossbeam_utils::CachePadded;
use ringtrace_clock::emulation::preempt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One counter of [`EventCounters::read`]: its name and its sum over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSum {
    /// The counter's name.
    pub name: &'static str,
    /// Its sum over every CPU's row.
    pub sum: u64,
}

/// [`EventCounters::preempt_violations`]: checked increments
/// ([`inc_checked`](EventCounters::inc_checked)) made while preemptible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreemptViolations {
    /// How many.
    pub count: u64,
    /// Where the first was made; `None` when there was none.
    pub first: Option<&'static Location<'static>>,
}

/// Named counters, one row per CPU. An increment touches only the calling
/// CPU's row, on its own cache line; a read sums the rows.
///
/// ```
/// use ringtrace_tracepoint::EventCounters;
/// let counters = EventCounters::new(["lock_slowpath", "lock_pending"]);
/// counters.inc(0);
/// counters.add(1, 5);
/// let sums: Vec<(&str, u64)> = counters.read().iter().map(|c| (c.name, c.sum)).collect();
/// assert_eq!(sums, [("lock_slowpath", 1), ("lock_pending", 5)]);
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

    /// `raw_cpu_add`: a load, an add and a store on this CPU's row, as the
    /// kernel's generic `raw_cpu_add` is (lock_events.h's `lockevent_inc`
    /// is `raw_cpu_inc`). Nothing stops a preemption or a migration between
    /// the load and the store, so two threads on one row can lose updates:
    /// the kernel accepts that for statistics and calls it with preemption
    /// disabled where it needs the count. Use it where a lock already
    /// serialises every update of counter `i`, or where a lost count does
    /// not matter; never for an exact count. Out-of-range indices are
    /// ignored.
    ///
    /// ```
    /// use ringtrace_tracepoint::EventCounters;
    /// let counters = EventCounters::new(["rtmutex_slowlock"]);
    /// counters.raw_cpu_add(0, 2); // one thread: nothing to race with
    /// assert_eq!(counters.sum(0), 2);
    /// ```
    #[inline]
    pub fn raw_cpu_add(&self, i: usize, n: u64) {
        if let Some(counter) = self.row().get(i) {
            raw_add(counter, n);
        }
    }

    /// `raw_cpu_inc`: [`raw_cpu_add`](Self::raw_cpu_add) of one.
    #[inline]
    pub fn raw_cpu_inc(&self, i: usize) {
        self.raw_cpu_add(i, 1);
    }

    /// `this_cpu_add`: one read-modify-write instruction on this CPU's row
    /// (a non-locked `add` to memory on x86_64), which no interrupt or
    /// preemption of the thread can split, as the kernel's `%gs:`-relative
    /// `this_cpu_add` cannot be split on its CPU.
    ///
    /// The kernel picks the CPU and updates it in that same instruction; here
    /// the row is picked first (the rseq `cpu_id` read) and updated after, so
    /// a thread that migrates in between updates another CPU's row, and may
    /// race (without a lock prefix) with the thread now running there: a
    /// lost update is possible only at that migration, not at every
    /// preemption as with [`raw_cpu_add`](Self::raw_cpu_add). A restartable
    /// sequence would close that window too, at the cost of entering one;
    /// this is the one-instruction half of the kernel's guarantee, which is
    /// what makes `this_cpu_*` cheaper than a locked instruction. Elsewhere
    /// than x86_64 it is a relaxed `fetch_add` (atomic, so stronger).
    ///
    /// ```
    /// use ringtrace_tracepoint::EventCounters;
    /// let counters = EventCounters::new(["events"]);
    /// counters.this_cpu_inc(0);
    /// counters.this_cpu_add(0, 4);
    /// assert_eq!(counters.sum(0), 5);
    /// ```
    #[inline]
    pub fn this_cpu_add(&self, i: usize, n: u64) {
        if let Some(counter) = self.row().get(i) {
            one_instruction_add(counter, n);
        }
    }

    /// `this_cpu_inc`: [`this_cpu_add`](Self::this_cpu_add) of one.
    #[inline]
    pub fn this_cpu_inc(&self, i: usize) {
        self.this_cpu_add(i, 1);
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
    pub fn preempt_violations(&self) -> PreemptViolations {
        let first = *self
            .first_violation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Relaxed: a statistic.
        PreemptViolations {
            count: self.violations.load(Ordering::Relaxed),
            first,
        }
    }

    /// The sum of counter `i` over all CPUs.
    pub fn sum(&self, i: usize) -> u64 {
        self.rows
            .iter()
            .filter_map(|row| row.get(i))
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Every counter's name and sum, in the order of the names.
    pub fn read(&self) -> Vec<CounterSum> {
        (0..N)
            .map(|i| CounterSum {
                name: self.names[i],
                sum: self.sum(i),
            })
            .collect()
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

/// A load, an add and a store: three instructions, so that a preemption can
/// land between the load and the store (the point of `raw_cpu_add`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn raw_add(counter: &AtomicU64, n: u64) {
    // SAFETY: `counter` is a live, aligned AtomicU64. The block is an aligned
    // 8-byte load and an aligned 8-byte store of it, each single-copy atomic
    // on x86_64, so it is a relaxed load followed by a relaxed store: no data
    // race in the memory model's sense, only the lost update that a
    // load/store pair allows, which is the behaviour modelled.
    unsafe {
        core::arch::asm!(
            "mov {v}, qword ptr [{p}]",
            "add {v}, {n}",
            "mov qword ptr [{p}], {v}",
            p = in(reg) counter.as_ptr(),
            n = in(reg) n,
            v = out(reg) _,
            options(nostack),
        );
    }
}

/// Elsewhere: a relaxed load and store, kept apart by a compiler fence so
/// that they stay two instructions.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn raw_add(counter: &AtomicU64, n: u64) {
    // Relaxed: a statistic; the load/store pair may lose updates by design.
    let v = counter.load(Ordering::Relaxed);
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    counter.store(v.wrapping_add(n), Ordering::Relaxed);
}

/// One non-locked `add` to memory.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn one_instruction_add(counter: &AtomicU64, n: u64) {
    // SAFETY: `counter` is a live, aligned AtomicU64. A non-locked `add` to
    // memory reads and writes it with aligned 8-byte accesses, each
    // single-copy atomic on x86_64: a relaxed load and store in one
    // instruction, which a signal or preemption of this thread cannot split.
    unsafe {
        core::arch::asm!(
            "add qword ptr [{p}], {n}",
            p = in(reg) counter.as_ptr(),
            n = in(reg) n,
            options(nostack),
        );
    }
}

/// Elsewhere: a relaxed `fetch_add`, atomic (stronger than modelled).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn one_instruction_add(counter: &AtomicU64, n: u64) {
    // Relaxed: a statistic; only the count matters, not its order.
    counter.fetch_add(n, Ordering::Relaxed);
}
