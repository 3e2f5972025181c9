//! `--realtime`: the recorder under `SCHED_FIFO`, as `perf record -r`
//! runs perf's reader.
//!
//! A recorder that drains quickly still loses events in discard mode when
//! the scheduler keeps it off its CPU for longer than a buffer lasts: a
//! CPU shared with one other busy task gives each a slice of a few
//! milliseconds, and a 1 MiB buffer holds about 6 ms of events at 7
//! million a second. Under `SCHED_FIFO` the recorder runs as soon as it
//! wakes. It sleeps between rounds (see `ringtrace_session::Pacer`), so
//! it leaves the CPU to others; the kernel's real-time throttling
//! (`/proc/sys/kernel/sched_rt_runtime_us`) bounds it if it never did.
//!
//! The policy is set with `SCHED_RESET_ON_FORK`: the traced command and
//! anything else the recorder starts run under the normal policy.

/// The range `--realtime` takes: `SCHED_FIFO`'s priorities on Linux.
pub const PRIORITIES: std::ops::RangeInclusive<u8> = 1..=99;

/// Moves the calling thread (the recorder's only one) to `SCHED_FIFO` at
/// `priority`. The error says why it could not, and what would let it.
pub fn run_realtime(priority: u8) -> Result<(), String> {
    if !PRIORITIES.contains(&priority) {
        return Err(format!(
            "--realtime {priority}: a SCHED_FIFO priority is 1 to 99"
        ));
    }
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    let hint = if e.raw_os_error() == Some(libc::EPERM) {
        format!(
            ": it needs root, CAP_SYS_NICE, or a real-time priority limit of at least {priority} (`ulimit -r`)"
        )
    } else {
        String::new()
    };
    Err(format!(
        "--realtime {priority}: cannot run the recorder under SCHED_FIFO: {e}{hint}"
    ))
}

/// The calling thread's scheduling policy and priority, as `sched_getscheduler`
/// and `sched_getparam` give them (for tests and the recording's summary).
pub fn current_policy() -> (i32, i32) {
    // SAFETY: pid 0 is the calling thread; no pointers.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is ours to write.
    unsafe { libc::sched_getparam(0, &mut param) };
    (policy, param.sched_priority)
}
