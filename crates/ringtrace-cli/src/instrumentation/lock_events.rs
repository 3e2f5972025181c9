//! The lock_events patch: the rtmutex slow-path lock events, counted per CPU, and what
//! the counting primitives cost and lose.
//!
//! **what the patch claims** is that the new events count the slow paths of
//! `rt_mutex_slowlock()`. [`RtMutex`] is a userspace rtmutex whose slow path
//! follows `__rt_mutex_slowlock()` and `rt_mutex_slowlock_block()` of
//! kernel/locking/rtmutex.c as the patch changes it (v6.14 era), with the
//! patch's `lockevent_inc` calls where the same things happen here:
//!
//! | event | kernel place | here |
//! |---|---|---|
//! | `rtmutex_slowlock` | `__rt_mutex_slowlock()` entry, wait_lock held | [`RtMutex::lock`]'s slow path, wait_lock held |
//! | `rtmutex_slow_acq1` | `try_to_take_rt_mutex()` succeeds before queueing | same |
//! | `rtmutex_slow_block` | `rt_mutex_slowlock_block()` entry | same |
//! | `rtmutex_slow_acq3` | a try-take in the block loop succeeds | same |
//! | `rtmutex_slow_sleep` | no owner to spin on, or the spin gave up: `rt_mutex_schedule()` | `thread::park()` |
//! | `rtmutex_slow_acq2` | the block returned 0 | same |
//! | `rtmutex_slow_wake` | `!wake_q_empty()` on the way out | the unlock slow path wakes the top waiter (our wakes happen there) |
//! | `rtmutex_deadlock` | `rt_mutex_handle_deadlock()` | never: no deadlock detection here |
//!
//! plus `rtmutex_fastlock` (ours, not the patch's): the uncontended CAS.
//! Simplifications: no priorities or boosting; any thread under the
//! wait_lock may take a free lock (the kernel lets only the top waiter, or
//! a higher priority task, take it); spinning on the owner is bounded
//! instead of watching whether it runs.
//!
//! The events are counted with [`EventCounters::raw_cpu_inc`], which is what
//! `lockevent_inc` is (`raw_cpu_inc`, kernel/locking/lock_events.h): lossy
//! in general, exact here for every event counted while a lock serialises
//! it (all but `rtmutex_slow_sleep`, counted after the wait_lock is
//! dropped, as in the kernel). So their relations must hold exactly
//! ([`LockEventRun::relations`]).
//!
//! **The mechanism**: the cost per increment of `raw_cpu_inc` (a load, add
//! and store on the current CPU's row), `this_cpu_inc` (one non-locked add
//! on the row; see [`EventCounters::this_cpu_add`] for why that and not an
//! rseq section), and one shared atomic (`lock xadd`), one thread per CPU;
//! and the updates each loses when more threads than CPUs increment one
//! counter, so that preemption lands between load and store.

use crate::finding::{Finding, Verdict};
use crate::sched as placement;
use crate::spread::{ns_per, Paired, Spread};
use crossbeam_utils::CachePadded;
use ringtrace_tracepoint::EventCounters;
use serde::Serialize;
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::Thread;

/// The event names, the patch's first, in counter index order.
pub const EVENTS: [&str; 9] = [
    "rtmutex_slowlock",
    "rtmutex_slow_block",
    "rtmutex_slow_acq1",
    "rtmutex_slow_acq2",
    "rtmutex_slow_acq3",
    "rtmutex_slow_sleep",
    "rtmutex_slow_wake",
    "rtmutex_deadlock",
    "rtmutex_fastlock",
];
const SLOWLOCK: usize = 0;
const SLOW_BLOCK: usize = 1;
const ACQ1: usize = 2;
const ACQ2: usize = 3;
const ACQ3: usize = 4;
const SLOW_SLEEP: usize = 5;
const SLOW_WAKE: usize = 6;
const DEADLOCK: usize = 7;
const FASTLOCK: usize = 8;

/// Bit 0 of the lock word: waiters are queued, so unlock must take the slow
/// path (the kernel's `RT_MUTEX_HAS_WAITERS`).
const HAS_WAITERS: usize = 1;
/// Spins on an unchanged owner before sleeping.
const SPINS: u32 = 200;

/// A userspace rtmutex with the patch's slow-path events.
///
/// The lock word: bits 1.. the owner's id (0: free), bit 0
/// `HAS_WAITERS`. The wait queue is under `wait_lock`, as the kernel's
/// waiter tree is under `lock->wait_lock`.
#[derive(Debug)]
pub struct RtMutex<'a> {
    word: AtomicUsize,
    wait_lock: Mutex<VecDeque<(usize, Thread)>>,
    events: &'a EventCounters<9>,
}

impl<'a> RtMutex<'a> {
    /// A free lock that counts its events in `events` (indexed as
    /// [`EVENTS`]).
    pub fn new(events: &'a EventCounters<9>) -> Self {
        RtMutex {
            word: AtomicUsize::new(0),
            wait_lock: Mutex::new(VecDeque::new()),
            events,
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<(usize, Thread)>> {
        self.wait_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lock as thread `me` (non-zero, unique among the lockers).
    pub fn lock(&self, me: usize) {
        let mine = me << 1;
        // Acquire: pairs with unlock's Release, so the last owner's critical
        // section happens-before ours.
        if self
            .word
            .compare_exchange(0, mine, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // Counted under the lock itself, which serialises it.
            self.events.raw_cpu_inc(FASTLOCK);
            return;
        }
        self.slowlock(me);
    }

    /// `try_to_take_rt_mutex()`, wait_lock held: takes a free lock, keeping
    /// the waiters bit.
    fn try_take(&self, mine: usize) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        if w >> 1 != 0 {
            return false;
        }
        // Acquire, as in lock. A fast-path CAS from 0 may beat us: then we
        // fail and go on as if the owner had been there.
        self.word
            .compare_exchange(
                w,
                mine | (w & HAS_WAITERS),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// `__rt_mutex_slowlock()` and `rt_mutex_slowlock_block()`.
    #[cold]
    fn slowlock(&self, me: usize) {
        let mine = me << 1;
        let mut queue = self.queue();
        self.events.raw_cpu_inc(SLOWLOCK);
        if self.try_take(mine) {
            self.events.raw_cpu_inc(ACQ1);
            return;
        }
        queue.push_back((me, std::thread::current()));
        // Relaxed: if the owner's fast unlock stored 0 before this, our
        // Acquire CAS in try_take reads this RMW, which continues that
        // Release store's release sequence; if after, the unlock CAS fails
        // and unlock takes the wait_lock, which orders it after us.
        self.word.fetch_or(HAS_WAITERS, Ordering::Relaxed);
        self.events.raw_cpu_inc(SLOW_BLOCK);
        loop {
            if self.try_take(mine) {
                self.events.raw_cpu_inc(ACQ3);
                break;
            }
            let top = queue.front().map(|(id, _)| *id) == Some(me);
            let owner = if top {
                self.word.load(Ordering::Relaxed) >> 1
            } else {
                0
            };
            drop(queue);
            if owner == 0 || !self.spin_on_owner(owner) {
                // After the wait_lock is dropped, as in the kernel: may lose
                // a count (raw_cpu_inc), and no relation relies on it.
                self.events.raw_cpu_inc(SLOW_SLEEP);
                std::thread::park();
            }
            queue = self.queue();
        }
        queue.retain(|(id, _)| *id != me);
        if queue.is_empty() {
            // We own the lock, and nobody else changes a non-zero word
            // without the wait_lock. Relaxed: unlock's Release publishes.
            self.word.store(mine, Ordering::Relaxed);
        }
        self.events.raw_cpu_inc(ACQ2);
    }

    /// `rtmutex_spin_on_owner()`: true when the owner let go (retry), false
    /// when the spin gave up (sleep).
    fn spin_on_owner(&self, owner: usize) -> bool {
        for _ in 0..SPINS {
            if self.word.load(Ordering::Relaxed) >> 1 != owner {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    /// Releases the lock held by `me`, waking the top waiter if any.
    pub fn unlock(&self, me: usize) {
        // Release: publishes the critical section to the next owner.
        if self
            .word
            .compare_exchange(me << 1, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        let queue = self.queue();
        // Waiters are queued (the bit is set only with the queue non-empty,
        // and cleared by the last waiter): free the lock, keep the bit.
        // Release, as above.
        self.word.store(HAS_WAITERS, Ordering::Release);
        if let Some((_, waiter)) = queue.front() {
            waiter.unpark();
            self.events.raw_cpu_inc(SLOW_WAKE);
        }
    }
}

/// One relation between event counts: `left` must equal `right`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Relation {
    /// The relation, in the event names.
    pub what: &'static str,
    /// Its left side's value.
    pub left: u64,
    /// Its right side's value.
    pub right: u64,
}

impl Relation {
    /// Whether it held.
    pub fn holds(&self) -> bool {
        self.left == self.right
    }
}

/// One lock event's count, summed over the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct EventCount {
    /// The event, one of [`EVENTS`].
    pub name: &'static str,
    /// Its per-CPU counters' sum.
    pub count: u64,
}

/// What one contended run counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LockEventRun {
    /// Threads taking the lock.
    pub threads: usize,
    /// Acquisitions per thread.
    pub per_thread: u64,
    /// Every event's per-CPU sum, in counter index order.
    pub counts: Vec<EventCount>,
    /// The relations the counts must satisfy.
    pub relations: Vec<Relation>,
}

impl LockEventRun {
    /// The sum of event `name` (0 for an unknown name).
    pub fn count(&self, name: &str) -> u64 {
        self.counts
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.count)
    }

    /// Whether every relation held.
    pub fn relations_hold(&self) -> bool {
        self.relations.iter().all(Relation::holds)
    }
}

/// `threads` threads (more than CPUs is fine: they are not pinned) each
/// take and release one [`RtMutex`] `per_thread` times around a short
/// critical section, then the events are summed over CPUs and checked.
pub fn contended_run(threads: usize, per_thread: u64) -> LockEventRun {
    let threads = threads.max(1);
    let events = EventCounters::new(EVENTS);
    let lock = RtMutex::new(&events);
    // Updated only inside the lock, with a load and a store: exclusion
    // failing would lose counts here.
    let protected = AtomicU64::new(0);
    // From the same moment, so that they really contend.
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (lock, protected, start) = (&lock, &protected, &start);
            s.spawn(move || {
                start.wait();
                for _ in 0..per_thread {
                    lock.lock(t + 1);
                    // Relaxed: the lock orders these accesses.
                    let v = protected.load(Ordering::Relaxed);
                    for k in 0..200u64 {
                        black_box(k);
                    }
                    protected.store(v + 1, Ordering::Relaxed);
                    lock.unlock(t + 1);
                }
            });
        }
    });
    let c = |i: usize| events.sum(i);
    let total = threads as u64 * per_thread;
    let relations = vec![
        Relation {
            what: "rtmutex_fastlock + rtmutex_slowlock = acquisitions",
            left: c(FASTLOCK) + c(SLOWLOCK),
            right: total,
        },
        Relation {
            what: "rtmutex_slowlock = rtmutex_slow_acq1 + rtmutex_slow_acq2 + rtmutex_deadlock",
            left: c(SLOWLOCK),
            right: c(ACQ1) + c(ACQ2) + c(DEADLOCK),
        },
        Relation {
            what: "rtmutex_slow_block = rtmutex_slowlock - rtmutex_slow_acq1",
            left: c(SLOW_BLOCK),
            right: c(SLOWLOCK).saturating_sub(c(ACQ1)),
        },
        Relation {
            what: "rtmutex_slow_acq3 = rtmutex_slow_acq2 (no timeouts or signals here)",
            left: c(ACQ3),
            right: c(ACQ2),
        },
        Relation {
            what: "critical sections run = acquisitions (exclusion held)",
            // Relaxed: the threads were joined, which orders their stores.
            left: protected.load(Ordering::Relaxed),
            right: total,
        },
    ];
    LockEventRun {
        threads,
        per_thread,
        counts: events
            .read()
            .iter()
            .map(|c| EventCount {
                name: c.name,
                count: c.sum,
            })
            .collect(),
        relations,
    }
}

/// Which increment a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Increment {
    /// [`EventCounters::raw_cpu_inc`]: load, add, store.
    RawCpuInc,
    /// [`EventCounters::this_cpu_inc`]: one non-locked add.
    ThisCpuInc,
    /// One shared atomic, `fetch_add` (`lock xadd`).
    SharedAtomic,
}

/// Counts made and counts found after one increment run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Increments made.
    pub expected: u64,
    /// What the counter summed to.
    pub summed: u64,
    /// `expected - summed`: updates lost.
    pub lost: u64,
}

impl Tally {
    /// The tally of `summed` against `expected`.
    pub fn new(expected: u64, summed: u64) -> Tally {
        Tally {
            expected,
            summed,
            lost: expected.saturating_sub(summed),
        }
    }

    fn plus(self, o: Tally) -> Tally {
        Tally::new(self.expected + o.expected, self.summed + o.summed)
    }
}

/// `threads` unpinned threads each add one `per_thread` times to one
/// counter with `how`, from the same moment; what the counter summed to.
pub fn lost_updates(how: Increment, threads: usize, per_thread: u64) -> Tally {
    let threads = threads.max(1);
    let counters = EventCounters::new(["events"]);
    let shared = CachePadded::new(AtomicU64::new(0));
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (counters, shared, start) = (&counters, &shared, &start);
            s.spawn(move || {
                start.wait();
                increments(how, counters, shared, per_thread);
            });
        }
    });
    let summed = match how {
        Increment::SharedAtomic => shared.load(Ordering::Relaxed),
        _ => counters.sum(0),
    };
    Tally::new(threads as u64 * per_thread, summed)
}

#[inline(never)]
fn increments(how: Increment, counters: &EventCounters<1>, shared: &AtomicU64, n: u64) {
    match how {
        Increment::RawCpuInc => (0..n).for_each(|_| counters.raw_cpu_inc(black_box(0))),
        Increment::ThisCpuInc => (0..n).for_each(|_| counters.this_cpu_inc(black_box(0))),
        Increment::SharedAtomic => (0..n).for_each(|_| {
            // Relaxed: a statistic; the RMW alone makes it exact.
            black_box(shared).fetch_add(1, Ordering::Relaxed);
        }),
    }
}

/// `threads` threads, pinned one per CPU, each making `per_thread`
/// increments with `how` from the same moment; mean ns per increment.
fn cost_per_increment(how: Increment, threads: usize, per_thread: u64) -> f64 {
    let counters = EventCounters::new(["events"]);
    let shared = CachePadded::new(AtomicU64::new(0));
    let start = std::sync::Barrier::new(threads);
    let total: f64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (counters, shared, start) = (&counters, &shared, &start);
                s.spawn(move || {
                    let _ = placement::pin_to_cpu(t);
                    start.wait();
                    ns_per(1, || increments(how, counters, shared, per_thread))
                        / per_thread.max(1) as f64
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).sum()
    });
    total / threads as f64
}

/// Lost updates over every round, per increment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LostUpdates {
    /// Threads per run: more than CPUs, unpinned, so that preemption lands
    /// between a load and its store.
    pub threads: usize,
    /// Increments per thread per run.
    pub per_thread: u64,
    /// `raw_cpu_inc`, summed over rounds (it may lose: never exact).
    pub raw_cpu_inc: Tally,
    /// Lost per round by `raw_cpu_inc`.
    pub raw_lost_per_round: Spread,
    /// `this_cpu_inc`, summed over rounds (may lose only at a migration).
    pub this_cpu_inc: Tally,
    /// The shared atomic, summed over rounds (cannot lose).
    pub shared_atomic: Tally,
}

/// The lock_events patch: lock events and the counting primitives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Counters {
    /// Threads in the cost runs: one per CPU, pinned.
    pub threads: usize,
    /// Increments per thread per round in the cost and loss runs.
    pub per_thread: u64,
    /// Rounds whose contended lock run satisfied every lock-event relation.
    pub exact_rounds: usize,
    /// Rounds whose contended lock run took the slow path at least once.
    pub slow_path_rounds: usize,
    /// The last round's lock events.
    pub lock_events: LockEventRun,
    /// ns per increment, paired per round: a = `raw_cpu_inc`, b = one
    /// shared atomic (`lock xadd`).
    pub ns: Paired,
    /// ns per increment, paired per round: a = `raw_cpu_inc`, b =
    /// `this_cpu_inc`.
    pub this_cpu_ns: Paired,
    /// Updates lost under preemption.
    pub lost: LostUpdates,
    /// The verdict's rule held.
    pub reproduced: bool,
}

/// The rule [`finding`] applies.
pub const RULE: &str = "reproduced when some round's contended rtmutex run took the slow \
     path and every round's per-CPU event sums satisfied every relation (fastlock + slowlock = \
     acquisitions; slowlock = acq1 + acq2 + deadlock; slow_block = slowlock - acq1; acq3 = \
     acq2); not measurable when no round reached the slow path. Costs and lost updates are \
     reported, not judged";

/// The method, in one phrase.
pub const METHOD: &str = "the patch's rtmutex events counted with raw_cpu_inc in a userspace \
     rtmutex's slow path under contention, relations checked per round; raw_cpu_inc, \
     this_cpu_inc and a shared lock xadd timed one thread per CPU and run with more threads \
     than CPUs to count lost updates";

/// The verdict of [`RULE`].
pub fn verdict(rounds: usize, slow_path_rounds: usize, exact_rounds: usize) -> Verdict {
    if rounds == 0 || slow_path_rounds == 0 {
        return Verdict::NotMeasurable("no contended run reached the rtmutex slow path".into());
    }
    Verdict::from_bool(exact_rounds == rounds)
}

/// Measures the lock_events patch over `rounds` rounds, `per_thread` increments a thread
/// in the cost and loss runs.
pub fn counters(rounds: usize, per_thread: u64) -> Counters {
    let rounds = rounds.max(1);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cpus.clamp(1, 4);
    let loss_threads = 2 * cpus.min(8) + 1;
    let lock_threads = (2 * cpus).clamp(4, 8);
    let (mut raw, mut this, mut shared) = (Vec::new(), Vec::new(), Vec::new());
    let zero = Tally::new(0, 0);
    let (mut raw_t, mut this_t, mut shared_t) = (zero, zero, zero);
    let mut raw_lost = Vec::new();
    let (mut exact_rounds, mut slow_path_rounds) = (0, 0);
    let mut last = None;
    for round in 0..rounds {
        let order = [
            Increment::RawCpuInc,
            Increment::ThisCpuInc,
            Increment::SharedAtomic,
        ];
        for k in 0..3 {
            let how = order[(round + k) % 3];
            let ns = cost_per_increment(how, threads, per_thread);
            match how {
                Increment::RawCpuInc => raw.push(ns),
                Increment::ThisCpuInc => this.push(ns),
                Increment::SharedAtomic => shared.push(ns),
            }
        }
        let r = lost_updates(Increment::RawCpuInc, loss_threads, per_thread);
        raw_lost.push(r.lost as f64);
        raw_t = raw_t.plus(r);
        this_t = this_t.plus(lost_updates(
            Increment::ThisCpuInc,
            loss_threads,
            per_thread,
        ));
        shared_t = shared_t.plus(lost_updates(
            Increment::SharedAtomic,
            loss_threads,
            per_thread,
        ));
        let run = contended_run(lock_threads, 20_000);
        exact_rounds += usize::from(run.relations_hold());
        slow_path_rounds += usize::from(run.count("rtmutex_slowlock") > 0);
        last = Some(run);
    }
    let lock_events = last.unwrap_or_else(|| contended_run(lock_threads, 0));
    Counters {
        threads,
        per_thread,
        exact_rounds,
        slow_path_rounds,
        lock_events,
        ns: Paired::from_rounds(raw.clone(), shared),
        this_cpu_ns: Paired::from_rounds(raw, this),
        lost: LostUpdates {
            threads: loss_threads,
            per_thread,
            raw_cpu_inc: raw_t,
            raw_lost_per_round: Spread::of(raw_lost),
            this_cpu_inc: this_t,
            shared_atomic: shared_t,
        },
        reproduced: verdict(rounds, slow_path_rounds, exact_rounds) == Verdict::Reproduced,
    }
}

/// The lock_events finding.
pub fn finding(c: &Counters) -> Finding {
    let rounds = c.ns.rounds;
    let e = &c.lock_events;
    let l = &c.lost;
    Finding {
        ours: format!(
            "last round, {} threads x {}: rtmutex_slowlock {} = acq1 {} + acq2 {} + deadlock {}; \
             slow_block {}, acq3 {}, slow_sleep {}, slow_wake {}, fastlock {}; relations held \
             in {} of {} rounds (slow path in {}). ns per increment, one thread per CPU: \
             raw_cpu_inc {}, this_cpu_inc {}, shared lock xadd {}. Lost with {} threads x {}: \
             raw_cpu_inc {} of {} (not an exact counter), this_cpu_inc {}, shared atomic {}",
            e.threads,
            e.per_thread,
            e.count("rtmutex_slowlock"),
            e.count("rtmutex_slow_acq1"),
            e.count("rtmutex_slow_acq2"),
            e.count("rtmutex_deadlock"),
            e.count("rtmutex_slow_block"),
            e.count("rtmutex_slow_acq3"),
            e.count("rtmutex_slow_sleep"),
            e.count("rtmutex_slow_wake"),
            e.count("rtmutex_fastlock"),
            c.exact_rounds,
            rounds,
            c.slow_path_rounds,
            super::spread_text(&c.ns.a, 2),
            super::spread_text(&c.this_cpu_ns.b, 2),
            super::spread_text(&c.ns.b, 2),
            l.threads,
            l.per_thread,
            l.raw_cpu_inc.lost,
            l.raw_cpu_inc.expected,
            l.this_cpu_inc.lost,
            l.shared_atomic.lost,
        ),
        method: METHOD.to_owned(),
        rule: RULE.to_owned(),
        verdict: verdict(rounds, c.slow_path_rounds, c.exact_rounds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_reproduces_when_every_round_held() {
        assert_eq!(verdict(5, 5, 5), Verdict::Reproduced);
    }

    #[test]
    fn rule_rejects_a_broken_relation() {
        assert_eq!(verdict(5, 5, 4), Verdict::NotReproduced);
        assert_eq!(
            verdict(5, 2, 5),
            Verdict::Reproduced,
            "an uncontended round is no failure"
        );
    }

    #[test]
    fn rule_is_not_measurable_without_the_slow_path() {
        assert!(matches!(verdict(5, 0, 5), Verdict::NotMeasurable(_)));
        assert!(matches!(verdict(0, 0, 0), Verdict::NotMeasurable(_)));
    }

    #[test]
    fn contended_rtmutex_events_satisfy_their_relations() {
        let run = contended_run(4, 5_000);
        for r in &run.relations {
            assert!(r.holds(), "{}: {} != {}", r.what, r.left, r.right);
        }
        assert!(run.count("rtmutex_slowlock") > 0, "{:?}", run.counts);
        assert_eq!(run.count("rtmutex_deadlock"), 0);
    }

    #[test]
    fn raw_add_lost_updates_are_expected_minus_summed() {
        let threads = 2 * std::thread::available_parallelism().map_or(1, |n| n.get()) + 1;
        let t = lost_updates(Increment::RawCpuInc, threads, 200_000);
        assert_eq!(t.expected, threads as u64 * 200_000);
        assert!(t.summed <= t.expected, "{t:?}");
        assert_eq!(t.lost, t.expected - t.summed);
    }

    #[test]
    fn shared_atomic_loses_nothing() {
        let t = lost_updates(Increment::SharedAtomic, 5, 100_000);
        assert_eq!(t, Tally::new(500_000, 500_000));
        assert_eq!(t.lost, 0);
    }
}
