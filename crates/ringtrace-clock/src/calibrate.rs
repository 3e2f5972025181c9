//! Measuring a counter's frequency against `CLOCK_MONOTONIC_RAW`, off the
//! hot path.

use crate::ClockError;
use std::time::Duration;

/// `CLOCK_MONOTONIC_RAW` in nanoseconds: the reference, unaffected by NTP
/// slewing, against which counters are calibrated.
pub(crate) fn monotonic_raw_ns() -> u64 {
    posix_now_ns(libc::CLOCK_MONOTONIC_RAW)
}

/// `CLOCK_MONOTONIC` in nanoseconds: one vDSO read, async-signal-safe
/// (a signal handler may call it).
///
/// ```
/// let a = ringtrace_clock::monotonic_ns();
/// assert!(ringtrace_clock::monotonic_ns() >= a);
/// ```
#[inline]
pub fn monotonic_ns() -> u64 {
    posix_now_ns(libc::CLOCK_MONOTONIC)
}

/// `clock_gettime(id)` in nanoseconds.
#[inline]
pub(crate) fn posix_now_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; with a clock id checked by
    // the caller's constructor clock_gettime cannot fail.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// One paired reading: the counter bracketed by two reference reads, taken
/// at the midpoint. `width` is how far apart the reference reads were, the
/// uncertainty of the pairing.
#[derive(Clone, Copy)]
struct Pair {
    reference_ns: u64,
    ticks: u64,
    width: u64,
}

/// The tightest of several bracketed readings: a preemption or interrupt in
/// the middle of one widens it, and it loses to a clean one.
fn tightest_pair(read: &dyn Fn() -> u64) -> Pair {
    let mut best = Pair {
        reference_ns: 0,
        ticks: 0,
        width: u64::MAX,
    };
    for _ in 0..16 {
        let before = monotonic_raw_ns();
        let ticks = read();
        let after = monotonic_raw_ns();
        let width = after.saturating_sub(before);
        if width < best.width {
            best = Pair {
                reference_ns: before + width / 2,
                ticks,
                width,
            };
        }
    }
    best
}

/// Measures the frequency of the counter `read` over about `interval`, in Hz.
///
/// Each end of the interval is the tightest of sixteen bracketed readings,
/// so the error is about (bracket width) / `interval`: a few parts per
/// million over 20 ms.
///
/// ```
/// use ringtrace_clock::calibrate_frequency;
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// let micros = move || start.elapsed().as_micros() as u64;
/// let hz = calibrate_frequency(&micros, Duration::from_millis(20)).unwrap();
/// assert!((900_000..1_100_000).contains(&hz), "{hz}");
/// ```
pub fn calibrate_frequency(read: &dyn Fn() -> u64, interval: Duration) -> Result<u64, ClockError> {
    let start = tightest_pair(read);
    std::thread::sleep(interval);
    let end = tightest_pair(read);
    let ns = end.reference_ns.saturating_sub(start.reference_ns);
    let message = if end.ticks < start.ticks {
        Some(format!(
            "the counter went back from {} to {} in {ns} ns; it is not a running counter",
            start.ticks, end.ticks
        ))
    } else if ns == 0 || end.ticks == start.ticks {
        Some(format!(
            "the counter advanced {} ticks in {ns} ns; it is not a running counter",
            end.ticks - start.ticks
        ))
    } else {
        None
    };
    if let Some(message) = message {
        return Err(ClockError::Os {
            call: "calibration",
            message,
        });
    }
    let ticks = end.ticks - start.ticks;
    let hz = u128::from(ticks) * 1_000_000_000 / u128::from(ns);
    Ok(u64::try_from(hz).unwrap_or(u64::MAX))
}
