//! A blocking writer's wait for room (LTTng's blocking mode): a write
//! refused because its buffer is full, or because the page it needs is
//! still busy (another thread mid-reservation or zeroing it), tries
//! again, backing off, until a reader makes room, the other thread
//! finishes, or its wait runs out.
//!
//! In a ring configured to wait, the write path does not count a refusal
//! for a full buffer or a busy page: the wait counts the write's outcome
//! when it ends. A write that gets in counts in `blocked`; one that runs
//! out of time counts one refusal, in `missed` and `timed_out`; one that
//! may not wait (in a signal handler) one refusal of its cause, as in a
//! ring that does not wait. So `missed` never counts a write that is still
//! waiting and may yet get in: a reader that records the refusals as they
//! grow (a recorder's loss entries) never records one that did not
//! happen. Nothing here is on a write's path unless it was refused for a
//! full buffer or a busy page in a ring configured to wait.

use crate::page::counters::RareCounters;
use crate::write::error::ReserveError;
use std::cell::Cell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

thread_local! {
    /// Signal handlers the calling thread is in (see [`SignalScope`]).
    /// Const-initialised, no destructor: touching it allocates nothing,
    /// so it is async-signal-safe.
    static SIGNAL_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Marks the calling thread as running a signal handler while it lives,
/// so that a blocking ring ([`RingConfig::block_for`]) refuses the
/// handler's writes at once instead of waiting: a handler that waits for
/// the reader may have interrupted that very reader, or a writer holding
/// the page the reader waits for. Take one at the top of a handler that
/// records events. ringtrace's own emulated interrupts need none (they
/// are recognised by `ringtrace_clock`'s `in_irq`).
///
/// Async-signal-safe: it only changes a thread-local count.
///
/// ```
/// use ringtrace_ring::{Mode, ReserveError, RingBuffer, RingConfig, SignalScope};
/// use std::time::{Duration, Instant};
/// let config = RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(512)
///     .mode(Mode::Discard).blocking(Duration::from_secs(5));
/// let ring = RingBuffer::new(config, ringtrace_clock::Counter::new())?;
/// while ring.cpu_writer(0).write(&[0; 64]).is_ok() {}
/// // (that last write waited its 5 s: nothing reads this ring)
/// let start = Instant::now();
/// let in_handler = SignalScope::enter();
/// assert_eq!(ring.cpu_writer(0).write(&[0; 64]), Err(ReserveError::Full));
/// assert!(start.elapsed() < Duration::from_secs(1)); // refused at once
/// drop(in_handler);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`RingConfig::block_for`]: crate::RingConfig::block_for
#[derive(Debug)]
#[must_use = "the scope ends when this guard is dropped"]
pub struct SignalScope {
    /// Bound to the thread whose count it raised.
    _thread: PhantomData<*const ()>,
}

impl SignalScope {
    /// Enters a signal handler's scope on the calling thread.
    pub fn enter() -> SignalScope {
        SIGNAL_DEPTH.with(|d| d.set(d.get().saturating_add(1)));
        SignalScope {
            _thread: PhantomData,
        }
    }
}

impl Drop for SignalScope {
    fn drop(&mut self) {
        SIGNAL_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Whether the calling thread may wait for room: not in a signal handler
/// it declared, nor in an emulated interrupt.
fn may_wait() -> bool {
    SIGNAL_DEPTH.with(Cell::get) == 0 && !ringtrace_clock::emulation::interrupt::in_irq()
}

/// Counts a refusal for a full buffer, a page still being written or one
/// being prepared (`refusal`): in `missed`, and in `busy` or `preparing`.
#[inline]
pub(crate) fn count_refusal(rare: &RareCounters, refusal: ReserveError) {
    rare.refused(match refusal {
        ReserveError::Busy => Some(&rare.busy),
        ReserveError::Preparing => Some(&rare.preparing),
        ReserveError::TimedOut => Some(&rare.timed_out),
        _ => None,
    });
}

/// After a write was refused (`first`, not counted: see the module) for a
/// full buffer or for a busy page to reuse (a reservation still open in
/// it, a claimer still zeroing it: another thread that will finish once it
/// runs), tries `attempt` on the same buffer again, backing off, for up to
/// `wait`. A write that runs out of time counts one refusal, in `missed`
/// and `timed_out` (not in `busy`, whatever its last cause), and returns
/// [`ReserveError::TimedOut`]; one that may not wait counts `first` as
/// such.
#[cold]
#[inline(never)]
pub(crate) fn wait_for_room<T>(
    rare: &RareCounters,
    wait: Duration,
    first: ReserveError,
    mut attempt: impl FnMut() -> Result<T, ReserveError>,
) -> Result<T, ReserveError> {
    if !may_wait() {
        count_refusal(rare, first);
        return Err(first);
    }
    let deadline = Instant::now() + wait;
    let mut tries = 0u32;
    loop {
        back_off(tries, deadline);
        tries = tries.saturating_add(1);
        match attempt() {
            Err(ReserveError::Full | ReserveError::Busy | ReserveError::Preparing) => {
                // Not counted by the attempt: counted here, once, if the
                // wait is over.
                if Instant::now() >= deadline {
                    rare.refused(Some(&rare.timed_out));
                    return Err(ReserveError::TimedOut);
                }
            }
            other => {
                // In, or refused for another cause (counted as such).
                if other.is_ok() {
                    RareCounters::bump(&rare.blocked, 1);
                }
                return other;
            }
        }
    }
}

/// A refusal for a full buffer or a busy page (`refused`) of a write that
/// did not wait in a ring configured to wait (the calls that pick a
/// buffer by number): counted as such, as the waiting calls count theirs.
#[cold]
#[inline(never)]
pub(crate) fn unwaited<T>(rare: &RareCounters, refused: ReserveError) -> Result<T, ReserveError> {
    count_refusal(rare, refused);
    Err(refused)
}

/// Spins briefly, then yields, then sleeps up to a tenth of a
/// millisecond (never past `deadline`): a reader draining the ring frees
/// pages every few microseconds when it keeps up, and a waiting writer
/// should not take its CPU from it.
fn back_off(tries: u32, deadline: Instant) {
    if tries < 16 {
        std::hint::spin_loop();
    } else if tries < 64 {
        std::thread::yield_now();
    } else {
        let nap = Duration::from_micros(u64::from((tries - 63).min(100)));
        let until = (Instant::now() + nap).min(deadline);
        sleep_until(until);
    }
}

/// Sleeps until `until`. Against an absolute time: a relative sleep
/// interrupted by a signal starts again with what is left plus the
/// timer's slack (50 us by default), so under signals more frequent than
/// that (a 20 kHz profiling timer) it would never end, and with it the
/// wait's deadline.
fn sleep_until(until: Instant) {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        let left = until.saturating_duration_since(Instant::now());
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) } != 0 {
            return std::thread::sleep(left);
        }
        // `Instant` is CLOCK_MONOTONIC on Linux: the target on its clock.
        let nanos = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
        let target = libc::timespec {
            tv_sec: now.tv_sec
                + left.as_secs() as libc::time_t
                + (nanos / 1_000_000_000) as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        };
        loop {
            // SAFETY: the timespec is valid for the call; with
            // TIMER_ABSTIME the remainder pointer is unused (null).
            let rc = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &target,
                    std::ptr::null_mut(),
                )
            };
            // Interrupted: the same target again, nearer each time.
            if rc != libc::EINTR {
                return;
            }
        }
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}
