//! One CPU buffer's fast line: everything a writer on the rseq path reads,
//! in one cache line of process memory, reached from one pointer.
//!
//! The sections address the gate and glibc's rseq offset through it rather
//! than taking them as operands, and the whole-event write
//! (`write::whole::write_whole`) finds the open page, the state and the commit
//! lines through it, so that the fast path needs few registers: with the
//! fallback's own arguments live beside them, a fast path that needs more
//! than the caller-saved registers pushes callee-saved ones on every event,
//! a cost the size of the ring's own bookkeeping.
//!
//! | offset | field       | written                                          |
//! |--------|-------------|--------------------------------------------------|
//! | 0      | gate        | by remote updates (see `remote`)                 |
//! | 8      | page_size   | once, when the buffer is built                   |
//! | 16     | open        | by every writer that opens a page or refills the entry |
//! | 32     | rseq_offset | once, when the ring chooses its path (0: the CAS path) |
//! | 40     | state       | once: the address of the `(write, last_ts)` pair |
//! | 48     | pages       | once: the address of physical page 0             |
//! | 56     | commits     | once: the address of physical page 0's commit line |
//!
//! In process memory, not in a file ring's file: the addresses are this
//! process's, and another process that adopts the file builds its own.

// Off the rseq path's targets only the gate, the offset and the entry's
// stores are used.
#![cfg_attr(not(ringtrace_rseq), allow(dead_code))]

use crate::page::meta::CommitLine;
use std::cell::UnsafeCell;
use std::sync::atomic::AtomicU64;

/// The open-page entry's `first` when no page is open: no write offset is
/// within a page of it (the offset would have to pass 2^63 bytes), so the
/// fast path's range check refuses every offset against it.
pub(crate) const NO_OPEN_PAGE: u64 = 1 << 63;

/// See the [module](self) documentation.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct FastLine {
    /// The gate: the buffer's CPU while no remote update is under way, plus
    /// `remote::REMOTE_ONE` for each one that is.
    pub(crate) gate: AtomicU64,
    page_size: u64,
    /// The open page as `(first, phys)`: its first virtual byte (`seq <<
    /// page_shift`) and its physical page, accessed only as one 16-byte
    /// store or load (`store_open`, `section::load_open`), which do not
    /// tear on the CPUs the rseq path runs on (it needs AVX; Intel SDM
    /// 9.1.1, AMD APM 7.3.2). A page's physical index never changes while
    /// it is open (swaps need it complete, fixups need it closed) and a
    /// `seq` is never reused, so an entry is right for its page whenever a
    /// writer's state is inside that page, which the writer's section then
    /// checks. A slower writer may overwrite it with an older page's entry:
    /// that only sends later writers to the general path, which refills it.
    open: UnsafeCell<[u64; 2]>,
    rseq_offset: isize,
    state: *mut u128,
    pages: *mut u8,
    commits: *const CommitLine,
}

// SAFETY: the pointers are addresses of the buffer's own state, pages and
// commit lines, which live as long as the buffer and are shared between
// threads through atomics (or, for the pages, atomic words and the
// reservation protocol) wherever the buffer is; `open` is accessed only by
// single 16-byte loads and stores in assembly, atomic on every CPU that
// reads it (see the field).
unsafe impl Send for FastLine {}
// SAFETY: as for Send.
unsafe impl Sync for FastLine {}

/// Byte offsets of the fields the assembly addresses.
pub(crate) const GATE: usize = std::mem::offset_of!(FastLine, gate);
pub(crate) const PAGE_SIZE: usize = std::mem::offset_of!(FastLine, page_size);
pub(crate) const OPEN: usize = std::mem::offset_of!(FastLine, open);
pub(crate) const RSEQ_OFFSET: usize = std::mem::offset_of!(FastLine, rseq_offset);
pub(crate) const STATE: usize = std::mem::offset_of!(FastLine, state);
pub(crate) const PAGES: usize = std::mem::offset_of!(FastLine, pages);
pub(crate) const COMMITS: usize = std::mem::offset_of!(FastLine, commits);

/// log2 of the distance between two pages' commit lines (each is padded
/// to its own cache line pair).
pub(crate) const COMMIT_STRIDE_SHIFT: u32 =
    std::mem::size_of::<crossbeam_utils::CachePadded<CommitLine>>().trailing_zeros();

const _: () = {
    assert!(std::mem::size_of::<FastLine>() == 64, "one cache line");
    assert!(
        OPEN % 16 == 0,
        "the open entry is one aligned 16-byte access"
    );
    assert!(
        1 << COMMIT_STRIDE_SHIFT == std::mem::size_of::<crossbeam_utils::CachePadded<CommitLine>>()
    );
};

impl FastLine {
    /// The line of the buffer of `cpu` with pages of `page_size` bytes
    /// from `pages`, commit lines from `commits` and its state at `state`;
    /// on the CAS path until `choose` says otherwise.
    pub(crate) fn new(
        cpu: u32,
        page_size: usize,
        state: *mut u128,
        pages: *mut u8,
        commits: *const CommitLine,
    ) -> Self {
        FastLine {
            gate: AtomicU64::new(u64::from(cpu)),
            page_size: page_size as u64,
            open: UnsafeCell::new([NO_OPEN_PAGE, 0]),
            rseq_offset: 0,
            state,
            pages,
            commits,
        }
    }

    /// Sets glibc's rseq offset (the rseq path) or 0 (the CAS path), before
    /// the buffer is shared.
    pub(crate) fn set_rseq_offset(&mut self, offset: isize) {
        self.rseq_offset = offset;
    }

    /// glibc's `__rseq_offset` on the rseq path, 0 on the CAS path.
    #[inline(always)]
    pub(crate) fn rseq_offset(&self) -> isize {
        self.rseq_offset
    }

    /// The address of the buffer's `(write, last_ts)` state.
    #[inline(always)]
    pub(crate) fn state(&self) -> *const u128 {
        self.state
    }

    /// Bytes per page.
    #[inline(always)]
    pub(crate) fn page_size(&self) -> u64 {
        self.page_size
    }

    /// The address of the open-page entry, for its 16-byte accesses.
    #[inline(always)]
    pub(crate) fn open_ptr(&self) -> *mut [u64; 2] {
        self.open.get()
    }

    /// Records that virtual page `seq` (its first byte `first`) is open on
    /// physical page `phys`. One 16-byte store; a no-op where no rseq path
    /// can read it.
    #[inline]
    pub(crate) fn store_open(&self, first: u64, phys: usize) {
        #[cfg(ringtrace_rseq)]
        // SAFETY: `open` is 16-aligned and live; SSE2 only (every x86_64
        // CPU); one movdqa, whose 16 bytes
        // land together on the CPUs that read the entry (see the field).
        // In assembly: the entry is only ever accessed so, outside Rust's
        // memory model, as a call into C would be.
        unsafe {
            core::arch::asm!(
                "movq {x}, {first}",
                "movq {y}, {phys}",
                "punpcklqdq {x}, {y}",
                "movdqa xmmword ptr [{open}], {x}",
                open = in(reg) self.open.get(),
                first = in(reg) first,
                phys = in(reg) phys as u64,
                x = out(xmm_reg) _,
                y = out(xmm_reg) _,
                options(nostack, preserves_flags),
            );
        }
        #[cfg(not(ringtrace_rseq))]
        let _ = (first, phys);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_laid_out_as_the_assembly_addresses_it() {
        assert_eq!(
            (GATE, PAGE_SIZE, OPEN, RSEQ_OFFSET, STATE, PAGES, COMMITS),
            (0, 8, 16, 32, 40, 48, 56)
        );
        assert_eq!(std::mem::align_of::<FastLine>(), 64);
    }

    #[test]
    fn an_empty_entry_is_out_of_range_of_every_reachable_offset() {
        // The fast path's check: 0 < write - first and write - first +
        // size <= page_size, in wrapping arithmetic.
        for write in [0u64, 16, 4096, 1 << 40, (1 << 62) + 123] {
            let rel = write.wrapping_sub(NO_OPEN_PAGE);
            assert!(rel == 0 || rel.wrapping_add(20) > 1 << 20, "{write}");
        }
    }
}
