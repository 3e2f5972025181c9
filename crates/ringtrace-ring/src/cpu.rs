//! Which CPU the caller is on: the rseq area that glibc registers, or
//! `sched_getcpu` where there is none.
//!
//! The answer is only a hint. A thread can migrate right after reading it,
//! and several threads can share one CPU buffer; the reserve path is correct
//! for any buffer it is handed. The hint only makes writers on different
//! CPUs write to different cache lines.
//!
//! glibc 2.35 and later register an rseq area for every thread and export its
//! place as `__rseq_offset` from the thread pointer (and its size as
//! `__rseq_size`, 0 when registration was refused). The kernel keeps the
//! area's `cpu_id` field (bytes 4..8) current on every return to userspace,
//! so reading the CPU is one load, as the kernel's `raw_smp_processor_id()`.

use std::sync::atomic::{AtomicI64, Ordering};

/// `__rseq_offset` once looked up; `UNKNOWN` before, `NONE` when rseq is not
/// available and `sched_getcpu` is used.
static RSEQ_OFFSET: AtomicI64 = AtomicI64::new(UNKNOWN);
const UNKNOWN: i64 = i64::MIN;
const NONE: i64 = i64::MAX;

/// Looks up glibc's rseq registration. Not async-signal-safe (dlsym), so the
/// ring calls it when it is built, never on the write path.
pub fn init() {
    // Relaxed: the offset is a plain number, the same for every reader.
    if RSEQ_OFFSET.load(Ordering::Relaxed) == UNKNOWN {
        RSEQ_OFFSET.store(lookup_rseq_offset(), Ordering::Relaxed);
    }
}

/// glibc's `__rseq_offset`, if glibc registered an rseq area and this
/// thread's registration holds (its `cpu_id` is not negative).
#[cfg(all(not(miri), not(loom), target_arch = "x86_64"))]
pub(crate) fn rseq_offset() -> Option<isize> {
    init();
    let offset = RSEQ_OFFSET.load(Ordering::Relaxed);
    if offset == NONE || offset == UNKNOWN {
        return None;
    }
    let area = thread_pointer().wrapping_add(offset as usize);
    // SAFETY: as in current_cpu.
    let cpu = unsafe { std::ptr::read_volatile((area + 4) as *const i32) };
    (cpu >= 0).then_some(offset as isize)
}

/// Whether the CPU comes from the rseq area (true) or `sched_getcpu`.
pub fn uses_rseq() -> bool {
    init();
    let offset = RSEQ_OFFSET.load(Ordering::Relaxed);
    offset != NONE && offset != UNKNOWN
}

#[cfg(all(
    not(miri),
    not(loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn lookup_rseq_offset() -> i64 {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names has no
    // preconditions; a non-null result points at the named object, whose
    // types glibc documents (ptrdiff_t and unsigned int).
    unsafe {
        let offset = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
        if offset.is_null() || size.is_null() || *(size as *const u32) < 8 {
            return NONE;
        }
        let offset = *(offset as *const isize) as i64;
        // Registration can still have failed for this thread; cpu_id is
        // negative then, and current_cpu falls back per call.
        offset
    }
}

#[cfg(not(all(
    not(miri),
    not(loom),
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn lookup_rseq_offset() -> i64 {
    NONE
}

/// The thread pointer: the base of this thread's TLS block.
#[cfg(all(not(miri), not(loom), target_arch = "x86_64"))]
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: on x86_64 Linux, %fs:0 holds the thread control block's own
    // address (the TCB self-pointer), readable by every thread.
    unsafe {
        core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    tp
}

#[cfg(all(not(miri), not(loom), target_arch = "aarch64"))]
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: TPIDR_EL0 is the user-readable thread pointer register.
    unsafe {
        core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
    };
    tp
}

/// The CPU the caller is probably on.
#[inline(always)]
pub fn current_cpu() -> usize {
    #[cfg(all(
        not(miri),
        not(loom),
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        let offset = RSEQ_OFFSET.load(Ordering::Relaxed);
        if offset != NONE && offset != UNKNOWN {
            let area = thread_pointer().wrapping_add(offset as usize);
            // SAFETY: glibc registered an rseq area of at least 8 bytes at
            // thread pointer + __rseq_offset for every thread (checked in
            // lookup_rseq_offset); cpu_id at byte 4 is an aligned i32 the
            // kernel rewrites asynchronously, hence the volatile read.
            let cpu = unsafe { std::ptr::read_volatile((area + 4) as *const i32) };
            if cpu >= 0 {
                return cpu as usize;
            }
        }
        sched_getcpu()
    }
    #[cfg(not(all(
        not(miri),
        not(loom),
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        0
    }
}

#[cfg(all(not(miri), not(loom)))]
#[cold]
fn sched_getcpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions; it is a vDSO call.
    let cpu = unsafe { libc::sched_getcpu() };
    cpu.max(0) as usize
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`), or the
/// available parallelism when that cannot be read.
pub fn possible_cpus() -> usize {
    #[cfg(not(miri))]
    if let Ok(text) = std::fs::read_to_string("/sys/devices/system/cpu/possible") {
        if let Some(n) = parse_cpu_list_max(text.trim()) {
            return n + 1;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The largest CPU number in a kernel CPU list such as `0-3,8-11`. (Unused
/// under Miri, which cannot read sysfs; its unit test still runs there.)
#[cfg_attr(miri, allow(dead_code))]
fn parse_cpu_list_max(list: &str) -> Option<usize> {
    list.split(',')
        .filter_map(|range| range.rsplit('-').next()?.trim().parse::<usize>().ok())
        .max()
}

/// Pins the calling thread to `cpu`; false if the kernel refused. For the
/// crate's tests that need a thread to stay on one buffer's CPU.
#[cfg(all(
    test,
    target_os = "linux",
    target_arch = "x86_64",
    not(loom),
    not(miri)
))]
pub(crate) fn pin_for_test(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask, and the
    // call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_give_their_largest_cpu() {
        assert_eq!(parse_cpu_list_max("0-3,8-11"), Some(11));
        assert_eq!(parse_cpu_list_max("0"), Some(0));
        assert_eq!(parse_cpu_list_max(""), None);
    }

    #[cfg(not(miri))]
    #[test]
    fn current_cpu_agrees_with_sched_getcpu_when_pinned() {
        init();
        // Pin to one CPU so the two answers cannot differ by a migration.
        // SAFETY: the set is zeroed and then given one valid CPU.
        unsafe {
            let cpu = libc::sched_getcpu();
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            assert_eq!(current_cpu(), cpu as usize);
        }
    }
}
