//! Ordering guarantees of the sources, checked with proptest.

use proptest::prelude::*;
use ringtrace_clock::{Clock, ClockSpec, Counter, Global, Guarantee};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Every spec that can be built on this machine.
fn available() -> Vec<ClockSpec> {
    ClockSpec::all()
        .into_iter()
        .filter(|s| s.build().is_ok())
        .collect()
}

/// Pins the calling thread to the CPU it is on, so a per-CPU guarantee is
/// what is tested; returns false if pinning is not allowed.
fn pin_to_current_cpu() -> bool {
    // SAFETY: sched_getcpu has no preconditions; the set is zeroed then
    // filled by CPU_SET with a CPU number the kernel gave us.
    unsafe {
        let cpu = libc::sched_getcpu();
        if cpu < 0 {
            return false;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 48 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore = "reads the clocks and pins threads: system calls")]
    fn every_available_source_is_monotonic_per_thread(
        pick in any::<prop::sample::Index>(),
        reads in 1usize..20_000,
    ) {
        let specs = available();
        let spec = specs[pick.index(specs.len())];
        let clock = spec.build().unwrap();
        let per_cpu = clock.info().guarantee == Guarantee::PerCpu;
        // In a fresh thread, so pinning does not outlive the case.
        let result = std::thread::spawn(move || {
            if per_cpu && !pin_to_current_cpu() {
                return Ok(());
            }
            let mut last = clock.read();
            for i in 0..reads {
                let now = clock.read();
                if now < last {
                    return Err(format!("{spec}: read {i} went back from {last} to {now}"));
                }
                last = now;
            }
            Ok(())
        })
        .join()
        .unwrap();
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn counter_is_strictly_increasing_and_unique_across_threads(
        threads in 1usize..5,
        reads in 1usize..if cfg!(miri) { 50 } else { 5_000 },
    ) {
        let counter = Counter::new();
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let c = counter.clone();
                std::thread::spawn(move || (0..reads).map(|_| c.read()).collect::<Vec<u64>>())
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            let mine = h.join().unwrap();
            prop_assert!(mine.windows(2).all(|w| w[0] < w[1]), "not strictly increasing in a thread");
            all.extend(mine);
        }
        all.sort_unstable();
        let n = all.len();
        all.dedup();
        prop_assert_eq!(all.len(), n, "two reads returned the same value");
        prop_assert_eq!(*all.last().unwrap(), n as u64, "values skipped");
    }
}

/// A clock that is a different, fixed amount behind on each thread: the
/// worst case of per-CPU skew. Each thread sets its own lag. Its time is a
/// shared counter (1 µs a read), so it makes no system call and runs
/// under Miri.
#[derive(Clone)]
struct SkewedPerThread(Counter);

thread_local! {
    static SKEW: Cell<u64> = const { Cell::new(0) };
}

impl Clock for SkewedPerThread {
    fn read(&self) -> u64 {
        self.0.read() * 1_000 + 5_000_000 - SKEW.with(Cell::get)
    }
    fn info(&self) -> ringtrace_clock::ClockInfo {
        self.0.info()
    }
}

/// Threads read `clock` in strict turns, thread `i` lagging `i` quarter
/// milliseconds behind thread 0 (for [`SkewedPerThread`]); returns how often
/// a read was smaller than the largest before it. Strict turns, not just a
/// mutex: with a mutex alone one thread may do all its reads before the next
/// starts, and a skewed clock then need not go back at all.
fn backward_steps_across_threads<C: Clock + Clone + 'static>(clock: C) -> usize {
    const THREADS: usize = 4;
    const ROUNDS: usize = if cfg!(miri) { 10 } else { 300 };
    let turn = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(Mutex::new((0u64, 0usize)));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let (clock, last, turn) = (clock.clone(), Arc::clone(&last), Arc::clone(&turn));
            std::thread::spawn(move || {
                SKEW.with(|s| s.set(i as u64 * 250_000));
                for round in 0..ROUNDS {
                    // Acquire/Release: each read happens after the previous
                    // thread's, as the turn passes from one to the next.
                    while turn.load(Ordering::Acquire) != round * THREADS + i {
                        std::thread::yield_now();
                    }
                    let now = clock.read();
                    {
                        let mut guard = last.lock().unwrap();
                        if now < guard.0 {
                            guard.1 += 1;
                        }
                        guard.0 = guard.0.max(now);
                    }
                    turn.fetch_add(1, Ordering::Release);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let steps = last.lock().unwrap().1;
    steps
}

#[test]
fn skewed_clock_goes_back_across_threads_without_global() {
    // The control: the skew is real, so the next test can fail.
    assert!(backward_steps_across_threads(SkewedPerThread(Counter::new())) > 0);
}

#[test]
fn global_is_monotonic_across_threads_over_a_skewed_source() {
    assert_eq!(
        backward_steps_across_threads(Global::new(SkewedPerThread(Counter::new()))),
        0
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "the named global clock reads CLOCK_MONOTONIC: a system call"
)]
fn named_global_is_monotonic_across_threads() {
    let clock = "global".parse::<ClockSpec>().unwrap().build().unwrap();
    assert_eq!(backward_steps_across_threads(clock), 0);
}
