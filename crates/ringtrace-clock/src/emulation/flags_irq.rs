//! `local_irq_save()` at its kernel cost: the x86 flags round trip around
//! the lazy mask.
//!
//! On x86_64 the kernel's `local_irq_save()` is `pushf; pop; cli` and
//! `local_irq_restore()` is `push; popf`. At user level `cli` cannot run and
//! `popf` leaves the interrupt flag alone, but the flags round trip costs
//! what it costs in the kernel (`popf` is the expensive half). So this is
//! the soft mask ([`super::soft_irq`], which is what actually defers the
//! emulated interrupt) with `pushfq` before and `popfq` after: the masking
//! of the soft backend, the cost of the kernel's. On other architectures it
//! is the soft mask alone ([`HAS_FLAGS_ROUND_TRIP`] says which).
//!
//! ```
//! use ringtrace_clock::emulation::{flags_irq, soft_irq};
//! let flags = flags_irq::save();
//! assert!(soft_irq::is_masked());
//! flags_irq::restore(flags);
//! assert!(!soft_irq::is_masked());
//! ```

use super::soft_irq::{self, SoftIrqFlags};

/// Whether [`save`] and [`restore`] include the flags round trip here
/// (x86_64) or are the soft mask alone.
pub const HAS_FLAGS_ROUND_TRIP: bool = cfg!(target_arch = "x86_64");

/// What [`save`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "irq flags must be given back to restore()"]
pub struct FlagsIrqFlags {
    soft: SoftIrqFlags,
    rflags: u64,
}

impl FlagsIrqFlags {
    /// Whether irqs were (soft-)masked when the flags were saved.
    pub fn was_masked(&self) -> bool {
        self.soft.was_masked()
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_flags() -> u64 {
    let rflags: u64;
    // SAFETY: `pushfq; pop` moves RFLAGS to a register through the stack
    // slot it pushes and pops; the block may use the stack (no `nostack`,
    // so the compiler keeps the red zone clear) and touches no other
    // memory. It changes no flag.
    unsafe {
        core::arch::asm!("pushfq", "pop {}", out(reg) rflags, options(nomem, preserves_flags));
    }
    rflags
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn write_flags(rflags: u64) {
    // SAFETY: `push; popfq` loads RFLAGS from a value `read_flags` read on
    // this thread. At user level popf cannot change IF or IOPL; the other
    // flags go back to what they were at `save`, which the compiler allows
    // (the block does not claim to preserve flags). Stack as in read_flags.
    unsafe {
        core::arch::asm!("push {}", "popfq", in(reg) rflags, options(nomem));
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_flags() -> u64 {
    0
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn write_flags(_rflags: u64) {}

/// `local_irq_save()`: the flags, then the mask.
#[inline]
pub fn save() -> FlagsIrqFlags {
    let rflags = read_flags();
    let soft = soft_irq::save();
    FlagsIrqFlags { soft, rflags }
}

/// `local_irq_restore(flags)`: the mask back (replaying what is pending if
/// that unmasks), then the flags.
#[inline]
pub fn restore(flags: FlagsIrqFlags) {
    soft_irq::restore(flags.soft);
    write_flags(flags.rflags);
}
