//! Per-CPU counters sum exactly, and the DEBUG_PREEMPT check catches
//! preemptible use.

use ringtrace_clock::emulation::preempt;
use ringtrace_tracepoint::EventCounters;
use std::sync::Arc;

#[test]
fn counters_sum_exactly_under_more_threads_than_cpus() {
    let counters = Arc::new(EventCounters::new(["a", "b", "c"]));
    let threads = 8;
    let per_thread = 50_000u64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let c = Arc::clone(&counters);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    c.inc((t + i as usize) % 3);
                    if i % 1000 == 0 {
                        std::thread::yield_now(); // invite migrations
                    }
                }
                c.add(2, 7);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total: u64 = counters.read().iter().map(|c| c.sum).sum();
    assert_eq!(total, threads as u64 * (per_thread + 7));
    counters.reset();
    assert!(counters.read().iter().all(|c| c.sum == 0));
}

#[test]
fn checked_increment_counts_uses_while_preemptible_only() {
    let counters = EventCounters::new(["x"]);
    preempt::preempt_disable_notrace();
    counters.inc_checked(0);
    preempt::preempt_enable_notrace();
    assert_eq!(counters.preempt_violations().count, 0);
    let line = line!() + 1;
    counters.inc_checked(0);
    let violations = counters.preempt_violations();
    assert_eq!(violations.count, 1);
    assert_eq!(violations.first.unwrap().line(), line);
    assert_eq!(counters.sum(0), 2);
}

#[test]
fn unknown_counter_index_is_ignored() {
    let counters = EventCounters::new(["only"]);
    counters.inc(5);
    let read = counters.read();
    assert_eq!((read.len(), read[0].name, read[0].sum), (1, "only", 0));
    assert_eq!(counters.index("only"), Some(0));
    assert_eq!(counters.index("other"), None);
}
