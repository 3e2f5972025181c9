//! `tsc` and `tsc-ordered`: the x86 time stamp counter.
//!
//! `tsc` is a bare `rdtsc`, the kernel's `x86-tsc` trace clock: the
//! cheapest read there is, but not ordered against surrounding
//! instructions, so it may execute early. `tsc-ordered` is the kernel's
//! `rdtsc_ordered()`: `rdtscp` where the CPU has it, `lfence; rdtsc`
//! otherwise, so the read happens after every earlier instruction.
//!
//! Both refuse to exist unless the TSC is invariant (constant rate across
//! P- and C-states, CPUID 0x80000007 EDX bit 8) and, when the kernel tells,
//! the kernel's own clocksource is `tsc`: a kernel that demoted the TSC
//! (to `hpet` or a hypervisor clock) has seen it misbehave here. The
//! frequency is calibrated once per process against `CLOCK_MONOTONIC_RAW`.

use crate::{ClockError, ClockInfo, Guarantee};
#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

/// Where the kernel names its clocksource.
#[cfg(target_arch = "x86_64")]
const CLOCKSOURCE_PATH: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// What the TSC on this machine is like; checked once per process.
#[derive(Debug, Clone)]
struct TscFacts {
    frequency_hz: u64,
    has_rdtscp: bool,
}

#[cfg(target_arch = "x86_64")]
fn cpuid(leaf: u32) -> core::arch::x86_64::CpuidResult {
    // SAFETY: cpuid exists on every x86_64 CPU; an unsupported leaf returns
    // zeros or the highest basic leaf, never faults, and callers check the
    // maximum leaf first.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::__cpuid(leaf)
    }
}

#[cfg(target_arch = "x86_64")]
fn check_tsc() -> Result<TscFacts, String> {
    let max_extended = cpuid(0x8000_0000).eax;
    if max_extended < 0x8000_0007 {
        return Err(
            "the CPU does not report whether its TSC is invariant (no CPUID leaf 0x80000007)"
                .into(),
        );
    }
    if cpuid(0x8000_0007).edx & (1 << 8) == 0 {
        return Err("the TSC is not invariant (CPUID 0x80000007 EDX bit 8 clear): its rate changes with P- and C-states".into());
    }
    if let Ok(source) = std::fs::read_to_string(CLOCKSOURCE_PATH) {
        let source = source.trim();
        if source != "tsc" {
            return Err(format!(
                "the kernel's clocksource is `{source}`, not `tsc` ({CLOCKSOURCE_PATH}): the kernel does not trust the TSC on this machine"
            ));
        }
    }
    let has_rdtscp = cpuid(0x8000_0001).edx & (1 << 27) != 0;
    let frequency_hz = crate::calibrate_frequency(&rdtsc, std::time::Duration::from_millis(20))
        .map_err(|e| e.to_string())?;
    Ok(TscFacts {
        frequency_hz,
        has_rdtscp,
    })
}

#[cfg(target_arch = "x86_64")]
fn facts(name: &'static str) -> Result<&'static TscFacts, ClockError> {
    static FACTS: OnceLock<Result<TscFacts, String>> = OnceLock::new();
    FACTS
        .get_or_init(check_tsc)
        .as_ref()
        .map_err(|reason| ClockError::Unavailable {
            source_name: name,
            reason: reason.clone(),
        })
}

#[cfg(not(target_arch = "x86_64"))]
fn facts(name: &'static str) -> Result<&'static TscFacts, ClockError> {
    Err(ClockError::Unavailable {
        source_name: name,
        reason: format!(
            "the TSC is an x86_64 counter and this is {}",
            std::env::consts::ARCH
        ),
    })
}

/// A bare `rdtsc`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: rdtsc exists on every x86_64 CPU and has no preconditions
    // (CR4.TSD is never set for Linux user processes).
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// The x86 time stamp counter, read with a bare `rdtsc`.
///
/// ```
/// use ringtrace_clock::{Clock, Tsc};
/// match Tsc::new() {
///     Ok(tsc) => assert!(tsc.read() > 0),
///     Err(e) => println!("no tsc here: {e}"),
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Tsc {
    frequency_hz: u64,
}

impl Tsc {
    /// The TSC, if this machine has a trustworthy one.
    pub fn new() -> Result<Tsc, ClockError> {
        facts("tsc").map(|f| Tsc {
            frequency_hz: f.frequency_hz,
        })
    }
}

impl crate::Clock for Tsc {
    #[inline(always)]
    fn read(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            rdtsc()
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("Tsc::new fails off x86_64")
    }

    fn info(&self) -> ClockInfo {
        ClockInfo::counter("tsc", Guarantee::PerCpu, self.frequency_hz)
    }

    fn inline_read(&self) -> crate::InlineRead {
        crate::InlineRead::Rdtsc
    }
}

/// The x86 time stamp counter, read in order: `rdtscp`, or `lfence; rdtsc`.
#[derive(Debug, Clone, Copy)]
pub struct TscOrdered {
    frequency_hz: u64,
    has_rdtscp: bool,
}

impl TscOrdered {
    /// The ordered TSC, if this machine has a trustworthy one.
    pub fn new() -> Result<TscOrdered, ClockError> {
        facts("tsc-ordered").map(|f| TscOrdered {
            frequency_hz: f.frequency_hz,
            has_rdtscp: f.has_rdtscp,
        })
    }

    /// The instruction sequence used: `rdtscp` or `lfence;rdtsc`.
    pub fn instruction(&self) -> &'static str {
        if self.has_rdtscp {
            "rdtscp"
        } else {
            "lfence;rdtsc"
        }
    }
}

impl crate::Clock for TscOrdered {
    #[inline(always)]
    fn read(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            if self.has_rdtscp {
                let mut aux = 0u32;
                // SAFETY: has_rdtscp came from CPUID 0x80000001 EDX bit 27,
                // so the instruction exists; `aux` is a valid u32 to write.
                #[allow(unused_unsafe)]
                unsafe {
                    core::arch::x86_64::__rdtscp(&mut aux)
                }
            } else {
                // SAFETY: lfence is part of SSE2, which every x86_64 CPU has.
                #[allow(unused_unsafe)]
                unsafe {
                    core::arch::x86_64::_mm_lfence()
                };
                rdtsc()
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("TscOrdered::new fails off x86_64")
    }

    fn info(&self) -> ClockInfo {
        // Ordered reads of a TSC the kernel uses as its clocksource (the
        // kernel checked the CPUs are synchronised) are monotonic across CPUs.
        ClockInfo::counter("tsc-ordered", Guarantee::Global, self.frequency_hz)
    }
}
