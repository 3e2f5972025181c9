//! The reads: `sched` (2009's `native_sched_clock()`, its two loads back
//! to back), `sched-wide` (the same data with the multiply between the
//! loads: an amplified window) and `sched-latch` (the seqcount latch the
//! kernel later put in front of the data).
//!
//! On x86_64 with the TSC, the unlatched reads are written in assembly, so
//! the window a tear needs (an update between the loads of the offset and
//! of the scale) is fixed in machine code, not left to the optimiser:
//!
//! ```text
//! sched (faithful)               sched-wide (amplified)
//!   rdtsc                          rdtsc
//!   shl  rdx, 32                   shl  rdx, 32
//!   or   rax, rdx                  or   rax, rdx
//!   mov  cyc, rax                  mov  cyc, rax
//!   mov  off, [w]      <- offset   mul  qword ptr [w+8]   <- scale
//!   mul  qword ptr [w+8] <- scale  shrd rax, rdx, 32
//!   shrd rax, rdx, 32              add  rax, [w]          <- offset
//!   add  rax, off
//! ```
//!
//! The faithful read's data loads are adjacent, as gcc compiled
//! `__cycles_2_ns()` (`ns = offset; ns += cyc * scale >> 10`: a load, then
//! an `imul` with the scale as its memory operand); between them an
//! interrupt has one instruction boundary and about one cycle.
//! [`SCHED_READ`] and [`SCHED_WIDE_READ`] are these listings, which the
//! assembly is built from and the tests check.
//! Elsewhere (no TSC, other architectures) the reads are Rust loads in the
//! same order, with compiler fences; their window is not pinned.

use super::data::{base, with_data, Base, Data, Words};
use crate::{Clock, ClockError, ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{compiler_fence, Ordering};

/// The faithful read's instructions: `(list)` expands to them as an
/// array, `(asm operands..)` to the `asm!` that runs them.
macro_rules! sched_read_asm {
    (list) => {
        [
            "rdtsc",
            "shl rdx, 32",
            "or rax, rdx",
            "mov {cyc}, rax",
            "mov {off}, qword ptr [{w}]",
            "mul qword ptr [{w} + 8]",
            "shrd rax, rdx, 32",
            "add rax, {off}",
        ]
    };
    (asm $($operands:tt)*) => {
        core::arch::asm!(
            "rdtsc",
            "shl rdx, 32",
            "or rax, rdx",
            "mov {cyc}, rax",
            "mov {off}, qword ptr [{w}]",
            "mul qword ptr [{w} + 8]",
            "shrd rax, rdx, 32",
            "add rax, {off}",
            $($operands)*
        )
    };
}

/// The amplified read's instructions, as [`sched_read_asm`].
macro_rules! sched_wide_read_asm {
    (list) => {
        [
            "rdtsc",
            "shl rdx, 32",
            "or rax, rdx",
            "mov {cyc}, rax",
            "mul qword ptr [{w} + 8]",
            "shrd rax, rdx, 32",
            "add rax, qword ptr [{w}]",
        ]
    };
    (asm $($operands:tt)*) => {
        core::arch::asm!(
            "rdtsc",
            "shl rdx, 32",
            "or rax, rdx",
            "mov {cyc}, rax",
            "mul qword ptr [{w} + 8]",
            "shrd rax, rdx, 32",
            "add rax, qword ptr [{w}]",
            $($operands)*
        )
    };
}

/// The faithful `sched` read on x86_64, instruction by instruction.
pub const SCHED_READ: [&str; 8] = sched_read_asm!(list);
/// The amplified `sched-wide` read on x86_64, instruction by instruction.
pub const SCHED_WIDE_READ: [&str; 7] = sched_wide_read_asm!(list);

/// Where a read's window lies, counted in a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Instructions after the counter read up to and including the last
    /// load of the conversion data.
    pub from_counter_to_last_load: usize,
    /// Instructions strictly between the first and the last load of the
    /// conversion data: where an update tears the reading.
    pub between_data_loads: usize,
}

/// The window of a listing such as [`SCHED_READ`]: the counter read is the
/// `rdtsc`, a data load is an instruction that reads memory at `{w}`.
///
/// ```
/// use ringtrace_clock::sched::{window, SCHED_READ, SCHED_WIDE_READ};
/// assert_eq!(window(&SCHED_READ).unwrap().between_data_loads, 0);
/// assert_eq!(window(&SCHED_WIDE_READ).unwrap().between_data_loads, 1);
/// ```
pub fn window(listing: &[&str]) -> Option<Window> {
    let counter = listing.iter().position(|i| *i == "rdtsc")?;
    let loads: Vec<usize> = listing
        .iter()
        .enumerate()
        .filter(|(_, i)| i.contains("[{w}"))
        .map(|(n, _)| n)
        .collect();
    let (first, last) = (*loads.first()?, *loads.last()?);
    Some(Window {
        from_counter_to_last_load: last - counter,
        between_data_loads: last - first - 1,
    })
}

/// The faithful read: `(cycles, value)`.
#[inline(always)]
fn read_adjacent(b: &Base, w: &Words) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if b.is_tsc {
        let (cycles, value): (u64, u64);
        // SAFETY: rdtsc is available (the TSC backs `local`, which checked
        // for it); `w` points to a live `Words` (#[repr(C)]: offset at 0,
        // mult at 8, both 8-aligned AtomicU64) that this thread owns, read
        // here and written only by this thread and its signal handlers, so
        // plain loads are the Relaxed loads the rest of the module makes.
        // The block writes only the registers it names, and the flags.
        unsafe {
            sched_read_asm!(asm
                w = in(reg) w as *const Words,
                cyc = out(reg) cycles,
                off = out(reg) _,
                out("rax") value,
                out("rdx") _,
                options(nostack, readonly),
            );
        }
        return (cycles, value);
    }
    let cycles = b.counter.read();
    compiler_fence(Ordering::SeqCst);
    (cycles, w.load().ns(cycles))
}

/// The amplified read: the scale first, the multiply, then the offset.
#[inline(always)]
fn read_wide(b: &Base, w: &Words) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if b.is_tsc {
        let (cycles, value): (u64, u64);
        // SAFETY: as in `read_adjacent`: rdtsc exists, `w` points to this
        // thread's live #[repr(C)] words, read with plain loads.
        unsafe {
            sched_wide_read_asm!(asm
                w = in(reg) w as *const Words,
                cyc = out(reg) cycles,
                out("rax") value,
                out("rdx") _,
                options(nostack, readonly),
            );
        }
        return (cycles, value);
    }
    let cycles = b.counter.read();
    compiler_fence(Ordering::SeqCst);
    let mult = w.mult.load(Ordering::Relaxed);
    let scaled = Data { offset: 0, mult }.ns(cycles);
    compiler_fence(Ordering::SeqCst);
    let offset = w.offset.load(Ordering::Relaxed);
    (cycles, offset.wrapping_add(scaled))
}

fn info(name: &str, guarantee: Guarantee) -> ClockInfo {
    ClockInfo {
        name: name.to_owned(),
        frequency_hz: Some(1_000_000_000),
        ticks_are_ns: true,
        guarantee,
        precision_ns: Some(1.0),
        conversion: Some(TickConversion::NANOSECONDS),
    }
}

/// An unlatched `sched` clock type reading the live words with `$read`.
macro_rules! unlatched_source {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $read:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty {
            base: &'static Base,
        }

        impl $ty {
            #[doc = concat!("The `", $name, "` source, on the local counter; fails where `local` has no known frequency.")]
            pub fn new() -> Result<$ty, ClockError> {
                Ok($ty {
                    base: base($name)?,
                })
            }
        }

        impl Clock for $ty {
            #[inline]
            fn read(&self) -> u64 {
                let b = self.base;
                with_data(b, |t| {
                    let (cycles, value) = $read(b, &t.live);
                    t.record(cycles, value);
                    value
                })
            }

            fn info(&self) -> ClockInfo {
                info($name, Guarantee::None)
            }
        }
    };
}

unlatched_source!(
    /// `sched`: 2009's unlatched `sched_clock()`, its data loads back to
    /// back as the kernel compiled them; an update between them tears the
    /// reading.
    Sched,
    "sched",
    read_adjacent
);

unlatched_source!(
    /// `sched-wide`: the same data, the multiply between the loads of the
    /// scale and the offset. An amplified setting: its window is several
    /// cycles where the kernel's was about one, to show the mechanism in
    /// seconds; every figure it gives is labelled amplified.
    SchedWide,
    "sched-wide",
    read_wide
);

/// `sched-latch`: the same data behind a seqcount latch, as
/// `cyc2ns_read_begin()` later read it; never tears.
#[derive(Debug, Clone, Copy)]
pub struct SchedLatch {
    base: &'static Base,
}

impl SchedLatch {
    /// The `sched-latch` source, on the local counter.
    pub fn new() -> Result<SchedLatch, ClockError> {
        Ok(SchedLatch {
            base: base("sched-latch")?,
        })
    }
}

impl Clock for SchedLatch {
    #[inline]
    fn read(&self) -> u64 {
        let b = self.base;
        with_data(b, |t| loop {
            // cyc2ns_read_begin(): the copy the sequence points at, and
            // again if an update moved it meanwhile.
            let seq = t.latch_seq.load(Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            let cycles = b.counter.read();
            let value = t.latch[(seq & 1) as usize].load().ns(cycles);
            compiler_fence(Ordering::SeqCst);
            if t.latch_seq.load(Ordering::Relaxed) == seq {
                t.record(cycles, value);
                break value;
            }
        })
    }

    fn info(&self) -> ClockInfo {
        info("sched-latch", Guarantee::PerCpu)
    }
}
