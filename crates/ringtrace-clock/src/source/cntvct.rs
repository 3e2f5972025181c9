//! `cntvct`: the ARMv8 generic timer's virtual count, `CNTVCT_EL0`.
//!
//! Read after an `isb`, as the kernel's `arch_timer_read_cntvct_el0()` does,
//! so the read is not hoisted above earlier instructions. The frequency is
//! what the firmware programmed into `CNTFRQ_EL0`. The generic timer is
//! architecturally synchronised across CPUs, so readings are monotonic
//! across them.

use crate::{ClockError, ClockInfo, Guarantee};

/// The ARMv8 generic timer's virtual counter.
///
/// ```
/// use ringtrace_clock::{Clock, Cntvct};
/// match Cntvct::new() {
///     Ok(c) => assert!(c.info().frequency_hz.unwrap() > 0),
///     Err(e) => assert!(e.to_string().contains("aarch64")),
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Cntvct {
    frequency_hz: u64,
}

impl Cntvct {
    /// The generic timer, on aarch64; a clear error elsewhere, never SIGILL.
    pub fn new() -> Result<Cntvct, ClockError> {
        #[cfg(target_arch = "aarch64")]
        {
            let frequency_hz = cntfrq();
            if frequency_hz == 0 {
                return Err(ClockError::Unavailable {
                    source_name: "cntvct",
                    reason: "CNTFRQ_EL0 reads 0: the firmware did not program the timer frequency"
                        .into(),
                });
            }
            Ok(Cntvct { frequency_hz })
        }
        #[cfg(not(target_arch = "aarch64"))]
        {
            Err(ClockError::Unavailable {
                source_name: "cntvct",
                reason: format!(
                    "CNTVCT_EL0 is the aarch64 generic timer and this is {}",
                    std::env::consts::ARCH
                ),
            })
        }
    }
}

#[cfg(target_arch = "aarch64")]
fn cntfrq() -> u64 {
    let frequency: u64;
    // SAFETY: Linux enables EL0 access to CNTFRQ_EL0 (CNTKCTL_EL1.EL0PCTEN
    // or EL0VCTEN), as the vDSO depends on it; the read has no side effects.
    unsafe {
        core::arch::asm!("mrs {}, cntfrq_el0", out(reg) frequency, options(nomem, nostack, preserves_flags))
    };
    frequency
}

impl crate::Clock for Cntvct {
    #[inline(always)]
    fn read(&self) -> u64 {
        #[cfg(target_arch = "aarch64")]
        {
            let ticks: u64;
            // SAFETY: Linux enables EL0 reads of CNTVCT_EL0 (the vDSO relies
            // on it); isb orders the read after earlier instructions. Neither
            // touches memory.
            unsafe {
                core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) ticks, options(nomem, nostack, preserves_flags))
            };
            ticks
        }
        #[cfg(not(target_arch = "aarch64"))]
        unreachable!("Cntvct::new fails off aarch64")
    }

    fn info(&self) -> ClockInfo {
        ClockInfo::counter("cntvct", Guarantee::Global, self.frequency_hz)
    }
}
