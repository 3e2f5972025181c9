//! A periodic interrupt: a signal sent to one thread at a fixed rate.
//!
//! The kernel's timer interrupt lands on a CPU whatever that CPU is doing;
//! this lands a signal on one thread whatever it is doing, which is what the
//! tests and the `clocks` measurement need to provoke interrupted reads. A
//! helper thread sends the signal with `tgkill` and sleeps `period` between
//! sends, so it works the same natively and under qemu-user.

use crate::ClockError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Periods are capped here, a day, so that `Instant + period` cannot
/// overflow; a timer that slow sends nothing in any run anyway.
const MAX_PERIOD: Duration = Duration::from_secs(86_400);

/// The kernel id of the calling thread (`gettid`), a target for
/// [`IrqTimer::start`].
pub fn current_thread_id() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Sends a signal to one thread every period until dropped.
///
/// ```
/// use ringtrace_clock::emulation::{interrupt, timer::{self, IrqTimer}};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// static TICKS: AtomicU64 = AtomicU64::new(0);
/// interrupt::install_irq_handler(libc::SIGRTMIN() + 3, |_| {
///     TICKS.fetch_add(1, Ordering::Relaxed);
/// }).unwrap();
/// let t = IrqTimer::start(timer::current_thread_id(), libc::SIGRTMIN() + 3,
///                         Duration::from_micros(200)).unwrap();
/// while TICKS.load(Ordering::Relaxed) < 5 {
///     std::hint::spin_loop();
/// }
/// assert!(t.stop() >= 5);
/// ```
pub struct IrqTimer {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl IrqTimer {
    /// Starts sending `signal` to thread `tid` of this process every `period`.
    ///
    /// The signal must be one the irq emulation can route (not a fault
    /// signal, see [`ClockError::FaultSignal`]; not SIGKILL or SIGSTOP, see
    /// [`ClockError::BadSignal`]) with a handler installed (else
    /// [`ClockError::NoHandler`]: its default action would end the
    /// process), and `tid` a live thread of this process.
    pub fn start(tid: i32, signal: i32, period: Duration) -> Result<IrqTimer, ClockError> {
        super::signals::check_routable(signal)?;
        // SAFETY: getpid cannot fail; tgkill with signal 0 only checks that
        // the thread exists in this process and sends nothing.
        let alive = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) } == 0;
        if !alive {
            return Err(ClockError::Os {
                call: "tgkill",
                message: format!(
                    "thread {tid} is not a live thread of this process: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        super::signals::check_handled(signal)?;
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let thread = {
            let stop = Arc::clone(&stop);
            let sent = Arc::clone(&sent);
            std::thread::Builder::new()
                .name("ringtrace-irq-timer".into())
                .spawn(move || {
                    // SAFETY: getpid cannot fail.
                    let pid = unsafe { libc::getpid() };
                    // Relaxed: the flag carries no data, only "stop now".
                    while !stop.load(Ordering::Relaxed) {
                        // SAFETY: tgkill with this process's id; an exited
                        // target makes it fail with ESRCH, which ends the loop.
                        let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) };
                        if rc != 0 {
                            break;
                        }
                        // Relaxed: a statistic read after join.
                        sent.fetch_add(1, Ordering::Relaxed);
                        // Parked, not asleep, so that stop() wakes it at
                        // once whatever the period.
                        let deadline = Instant::now() + period.min(MAX_PERIOD);
                        while !stop.load(Ordering::Relaxed) {
                            let now = Instant::now();
                            if now >= deadline {
                                break;
                            }
                            std::thread::park_timeout(deadline - now);
                        }
                    }
                })
                .map_err(|e| ClockError::Os {
                    call: "thread spawn",
                    message: e.to_string(),
                })?
        };
        Ok(IrqTimer {
            stop,
            sent,
            thread: Some(thread),
        })
    }

    /// Stops the timer and returns how many signals it sent.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.sent.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // The sender loop cannot panic; a join error would only repeat
            // a panic message already printed.
            let _ = thread.join();
        }
    }
}

impl Drop for IrqTimer {
    fn drop(&mut self) {
        self.halt();
    }
}

/// A POSIX timer (`timer_create` on `CLOCK_MONOTONIC`) that delivers a
/// signal to one thread (`SIGEV_THREAD_ID`) every period: the kernel's
/// timer interrupt, aimed at a thread, at the rate asked for (the kernel
/// arms it; no sender thread competes for a CPU). Deleted on drop.
///
/// ```
/// use ringtrace_clock::emulation::{interrupt, timer::{self, ThreadTimer}};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// static TICKS: AtomicU64 = AtomicU64::new(0);
/// interrupt::install_irq_handler(libc::SIGRTMIN() + 4, |_| {
///     TICKS.fetch_add(1, Ordering::Relaxed);
/// }).unwrap();
/// let t = ThreadTimer::start(timer::current_thread_id(), libc::SIGRTMIN() + 4,
///                            Duration::from_micros(200)).unwrap();
/// while TICKS.load(Ordering::Relaxed) < 5 {
///     std::hint::spin_loop();
/// }
/// drop(t);
/// ```
#[derive(Debug)]
pub struct ThreadTimer {
    id: libc::timer_t,
    started: Instant,
}

// SAFETY: a timer id is a kernel handle, usable from any thread of the
// process; deleting it from another thread than the creator is allowed.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// Arms a timer sending `signal` to thread `tid` of this process every
    /// `period` (at least 1 µs; at most a day). The signal must be one the
    /// irq emulation can route (else [`ClockError::FaultSignal`] or
    /// [`ClockError::BadSignal`]) with a handler installed (else
    /// [`ClockError::NoHandler`]).
    pub fn start(tid: i32, signal: i32, period: Duration) -> Result<ThreadTimer, ClockError> {
        super::signals::check_routable(signal)?;
        super::signals::check_handled(signal)?;
        let period = period.clamp(Duration::from_micros(1), MAX_PERIOD);
        // SAFETY: a zeroed sigevent is valid; the fields set are the ones
        // SIGEV_THREAD_ID reads (notify, signal number, target thread).
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal;
        event.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to the event and to where the id goes; a
        // thread id that is not ours makes the call fail with EINVAL.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut id) } != 0 {
            return Err(ClockError::Os {
                call: "timer_create",
                message: format!(
                    "a timer for thread {tid}, signal {signal}: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        let interval = libc::timespec {
            tv_sec: period.as_secs() as libc::time_t,
            tv_nsec: period.subsec_nanos() as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: interval,
            it_value: interval,
        };
        // SAFETY: `id` is the timer just created; the spec is valid.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
            let err = ClockError::last_os("timer_settime");
            // SAFETY: deleting the timer we created, once.
            unsafe { libc::timer_delete(id) };
            return Err(err);
        }
        Ok(ThreadTimer {
            id,
            started: Instant::now(),
        })
    }

    /// How long the timer has been armed.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a timer this value created and nobody deleted.
        unsafe { libc::timer_delete(self.id) };
    }
}
