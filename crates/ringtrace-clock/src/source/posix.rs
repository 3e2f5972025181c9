//! `mono`, `mono-raw` and `boot`: the POSIX clocks, through the vDSO.

use crate::calibrate::posix_now_ns;
use crate::{ClockError, ClockInfo, Guarantee};

/// A `clock_gettime` clock, in nanoseconds. See [`Mono`], [`MonoRaw`] and
/// [`Boot`].
#[derive(Debug, Clone, Copy)]
pub struct PosixClock<const ID: libc::clockid_t> {
    resolution_ns: f64,
}

/// `CLOCK_MONOTONIC`: NTP-slewed, stops in suspend. The kernel's `mono`.
pub type Mono = PosixClock<{ libc::CLOCK_MONOTONIC }>;
/// `CLOCK_MONOTONIC_RAW`: the hardware rate, never slewed. `mono_raw`.
pub type MonoRaw = PosixClock<{ libc::CLOCK_MONOTONIC_RAW }>;
/// `CLOCK_BOOTTIME`: monotonic, counts time in suspend. `boot`.
pub type Boot = PosixClock<{ libc::CLOCK_BOOTTIME }>;

impl<const ID: libc::clockid_t> PosixClock<ID> {
    /// The name this clock is selected by.
    pub const NAME: &'static str = match ID {
        libc::CLOCK_MONOTONIC => "mono",
        libc::CLOCK_MONOTONIC_RAW => "mono-raw",
        libc::CLOCK_BOOTTIME => "boot",
        _ => "posix",
    };

    /// The clock, if the kernel provides it (`clock_getres` succeeds).
    pub fn try_new() -> Result<Self, ClockError> {
        let mut res = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `res` is a valid, writable timespec.
        if unsafe { libc::clock_getres(ID, &mut res) } != 0 {
            return Err(ClockError::Unavailable {
                source_name: Self::NAME,
                reason: format!(
                    "clock_getres({ID}) failed: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        Ok(PosixClock {
            resolution_ns: res.tv_sec as f64 * 1e9 + res.tv_nsec as f64,
        })
    }
}

impl Mono {
    /// `CLOCK_MONOTONIC`, which every Linux has.
    pub fn new() -> Mono {
        // CLOCK_MONOTONIC exists on every kernel Rust's std supports (std's
        // Instant is built on it); fall back to a 1 ns resolution if getres
        // is somehow refused.
        Mono::try_new().unwrap_or(PosixClock { resolution_ns: 1.0 })
    }
}

impl Default for Mono {
    fn default() -> Self {
        Mono::new()
    }
}

impl<const ID: libc::clockid_t> crate::Clock for PosixClock<ID> {
    #[inline]
    fn read(&self) -> u64 {
        posix_now_ns(ID)
    }

    fn info(&self) -> ClockInfo {
        ClockInfo::nanosecond(Self::NAME, Guarantee::Global, self.resolution_ns)
    }
}
