//! The restartable sequences themselves: critical sections in `asm!`, each
//! of which checks that the thread is on the buffer's CPU and that no
//! remote update is under way (one compare of `cpu_id` with the buffer's
//! gate word, see [`super::remote`]), then ends in one committing store.
//!
//! The kernel restarts a section (jumps to its abort handler) when the
//! thread is preempted, migrated or sent a signal while its instruction
//! pointer is between the section's start and its commit. So a section
//! that got to its commit ran with nothing else on that CPU in between:
//! its loads and its store are atomic with respect to every other writer
//! on the CPU, as the kernel's `local_t` operations are with interrupts.
//! Writers on other CPUs never update these words while a section may run:
//! they go through [`super::remote`], which shuts the buffer's gate (every
//! section checks it) and fences the CPU with membarrier.
//!
//! The layout follows librseq's x86_64 macros: a 32-byte `struct rseq_cs`
//! descriptor in the `__rseq_cs` section (version 0, flags 0, start,
//! post-commit offset, abort address), its address stored into the
//! thread's `rseq_cs` field before the section starts, and an abort
//! handler in `__rseq_failure` preceded by the signature glibc registered
//! (`RSEQ_SIG`, 0x53053053, as the operand of a `ud1` so that a
//! disassembler shows an instruction). The handler jumps to a Rust label
//! that counts the abort and runs the section again.
//!
//! Labels are numbered 3 to 7: Intel syntax reads `1b` and `0b` as binary
//! numbers.

use super::fast_line::{self, FastLine};
use core::arch::asm;
use core::arch::x86_64::__m128i;
use std::cell::Cell;

/// The `struct rseq_cs` descriptor (label 3) of a section that starts at
/// label 4, commits before label 5 and aborts to label 6: version 0, flags
/// 0, start, post-commit offset, abort address, 32-byte aligned in
/// `__rseq_cs`. Every section's template starts with it.
macro_rules! rseq_descriptor {
    () => {
        concat!(
            ".pushsection __rseq_cs, \"aw\"\n",
            ".balign 32\n",
            "3:\n",
            ".long 0, 0\n",
            ".quad 4f, (5f - 4f), 6f\n",
            ".popsection",
        )
    };
}

/// The abort handler (label 6) in `__rseq_failure`, behind the signature
/// glibc registered (0x53053053, as a `ud1` operand); it runs `$teardown`
/// (undoing what the section set up before its start) and jumps to the
/// template's `abort` label.
macro_rules! rseq_abort_handler {
    ($teardown:literal) => {
        concat!(
            ".pushsection __rseq_failure, \"ax\"\n",
            ".byte 0x0f, 0xb9, 0x3d\n",
            ".long 0x53053053\n",
            "6:\n",
            $teardown,
            "jmp {abort}\n",
            ".popsection",
        )
    };
}

/// A section's descriptor (label 3), its address stored into the
/// thread's rseq area (the area at `fs` plus glibc's offset, loaded from
/// the fast line), and the section's start (label 4): the thread's
/// `cpu_id` compared with the buffer's gate, leaving to `gated` if they
/// differ. Operands: `line`, `off` and `tmp` (scratch), `RSEQ_OFFSET` and
/// `GATE` (the fast line's offsets), `gated`.
macro_rules! section_entry {
    () => {
        concat!(
            rseq_descriptor!(),
            "\n",
            "mov {off}, qword ptr [{line} + {RSEQ_OFFSET}]\n",
            "lea {tmp}, [rip + 3b]\n",
            "mov qword ptr fs:[{off} + 8], {tmp}\n",
            "4:\n",
            "mov {tmp:e}, dword ptr fs:[{off} + 4]\n",
            "cmp {tmp}, qword ptr [{line} + {GATE}]\n",
            "jne {gated}",
        )
    };
}

thread_local! {
    /// Sections of this thread that the kernel aborted. A const-initialised
    /// cell without Drop: no lazy registration, so it is safe to touch from
    /// a signal handler.
    static ABORTS: Cell<u64> = const { Cell::new(0) };
}

/// Sections the kernel aborted (preemption, migration, a signal) on this
/// thread since it started. Each abort handler adds one.
pub fn thread_aborts() -> u64 {
    ABORTS.with(Cell::get)
}

/// Counts one abort on this thread.
#[cold]
#[inline(never)]
pub(crate) fn count_abort() {
    ABORTS.with(|a| a.set(a.get().wrapping_add(1)));
}

/// How a section ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The committing store was done.
    Done,
    /// The word did not hold what the section expects (a compare failed,
    /// or the page was reclaimed): nothing was stored.
    Refused,
    /// The thread is not on the buffer's CPU (or its rseq registration
    /// failed: `cpu_id` is negative): nothing was stored; the caller goes
    /// through [`super::remote`].
    OffCpu,
    /// The gate was shut: the thread is not on the buffer's CPU, or a
    /// remote update is under way. Nothing was stored; the caller tries the
    /// `locked_*` sections, which check the CPU only and whose locked
    /// instruction cannot lose a remote's, and goes through
    /// [`super::remote`] if they find it off the CPU.
    Gated,
    /// The kernel aborted the section (preemption, migration, a signal):
    /// nothing was stored. The caller counts it ([`count_abort`]) and tries
    /// again, out of the fast path's line: a retry loop inside it would
    /// keep the abort path's registers live on every event.
    Aborted,
}

/// Compare-and-swap of the buffer's `(write, last_ts)` state (at
/// `line`'s `state`) from `(lo, hi)` to `new`, as an rseq section ending in
/// one 16-byte `movdqa` store.
///
/// # Safety
/// `line` is a buffer's fast line on the rseq path: its rseq offset is
/// glibc's registered one, and its state a live, 16-byte aligned pair that,
/// while the gate is open (equal to the buffer's CPU), only sections on
/// that CPU store to. (The store is atomic for readers on other CPUs on
/// processors with AVX, which the path's probe checked.)
#[inline(always)]
pub(crate) unsafe fn cas_state(line: &FastLine, lo: u64, hi: u64, new: __m128i) -> Outcome {
    // SAFETY: see the function's contract. The section reads the rseq
    // area (fs-relative, registered by glibc for this thread), the
    // gate and the state, and stores only the state; the kernel
    // restarts it at label 6 if it is interrupted before label 5.
    unsafe {
        asm!(
            section_entry!(),
            // The offset's register holds the state's address from here:
            // a register fewer.
            "mov {off}, qword ptr [{line} + {STATE}]",
            "cmp qword ptr [{off}], {lo}",
            "jne {refused}",
            "cmp qword ptr [{off} + 8], {hi}",
            "jne {refused}",
            "movdqa xmmword ptr [{off}], {new}",
            "5:",
            rseq_abort_handler!(""),
            line = in(reg) line,
            lo = in(reg) lo,
            hi = in(reg) hi,
            new = in(xmm_reg) new,
            off = out(reg) _,
            tmp = out(reg) _,
            RSEQ_OFFSET = const fast_line::RSEQ_OFFSET,
            GATE = const fast_line::GATE,
            STATE = const fast_line::STATE,
            gated = label { return Outcome::Gated; },
            refused = label { return Outcome::Refused; },
            abort = label { return Outcome::Aborted; },
        );
    }
    Outcome::Done
}

/// Adds `value` to a commit line's word and `hits` to its hits, unless the
/// word has any bit of `refuse` set, as an rseq section ending in one
/// 16-byte `movdqa` store of both (a commit is then one section, not one
/// for the word and one for `hit`).
///
/// # Safety
/// `commit` is live; its word changes, while the gate is open, only by
/// sections on the buffer's CPU and by locked read-modify-writes that
/// cannot overlap a section's (see the caller); its hits only by sections
/// on the CPU; the rest as for [`cas_state`].
#[inline(always)]
pub(crate) unsafe fn add_pair_unless(
    line: &FastLine,
    commit: &crate::page::meta::CommitLine,
    value: u64,
    hits: u64,
    refuse: u64,
) -> Outcome {
    let commit = core::ptr::from_ref(commit);
    // SAFETY: SSE2, which every x86_64 CPU has.
    let add = unsafe { core::arch::x86_64::_mm_set_epi64x(hits as i64, value as i64) };
    // SAFETY: as in cas_state; the section loads the commit line
    // (16-aligned: CommitLine's repr) and stores only it.
    unsafe {
        asm!(
            section_entry!(),
            "test qword ptr [{commit}], {refuse}",
            "jnz {refused}",
            "movdqa {sum}, xmmword ptr [{commit}]",
            "paddq {sum}, {add}",
            "movdqa xmmword ptr [{commit}], {sum}",
            "5:",
            rseq_abort_handler!(""),
            line = in(reg) line,
            commit = in(reg) commit,
            add = in(xmm_reg) add,
            refuse = in(reg) refuse,
            off = out(reg) _,
            tmp = out(reg) _,
            sum = out(xmm_reg) _,
            RSEQ_OFFSET = const fast_line::RSEQ_OFFSET,
            GATE = const fast_line::GATE,
            gated = label { return Outcome::Gated; },
            refused = label { return Outcome::Refused; },
            abort = label { return Outcome::Aborted; },
        );
    }
    Outcome::Done
}

/// Compare-and-swap of the pair `target` from `(lo, hi)` to `(new_lo,
/// new_hi)` with `lock cmpxchg16b`, as the commit of a section that checks
/// only the CPU: while a remote update is under way, a writer on the CPU
/// cannot use the plain store, and must not pay a system call either (a
/// remote updater preempted with its flag up would otherwise turn every
/// event on the CPU into one). The locked instruction is atomic against
/// the remote's; the section keeps the thread from doing it after a
/// migration, when a plain section on the CPU could straddle it.
/// `Refused` if the pair held something else, `OffCpu` if not on the CPU.
///
/// `rbx`, which cmpxchg16b takes the new low half in, cannot be named as
/// an operand (LLVM may use it): it is swapped with the operand before the
/// section and swapped back on every way out (after the commit, and in the
/// abort handler, whose signature precedes it as in the other sections).
/// Every operand is in a named register, none of them rbx.
///
/// # Safety
/// `rseq_offset` is glibc's registered offset; `target` is a live,
/// 16-byte aligned pair of the buffer of `cpu`.
#[inline(always)]
pub(crate) unsafe fn locked_cas_pair(
    rseq_offset: isize,
    cpu: u32,
    target: *mut u128,
    lo: u64,
    hi: u64,
    new_lo: u64,
    new_hi: u64,
) -> Outcome {
    loop {
        // SAFETY: as in cas_state; rbx is restored on every path out.
        unsafe {
            asm!(
                rseq_descriptor!(),
                "xchg rbx, r9",
                "lea r10, [rip + 3b]",
                "mov qword ptr fs:[rsi + 8], r10",
                "4:",
                "cmp dword ptr fs:[rsi + 4], edi",
                "jne 7f",
                "lock cmpxchg16b xmmword ptr [r8]",
                "5:",
                "xchg rbx, r9",
                "jne {refused}",
                "jmp 8f",
                "7:",
                "xchg rbx, r9",
                "jmp {off_cpu}",
                rseq_abort_handler!("xchg rbx, r9\n"),
                "8:",
                // Named registers: a `reg` operand may be given rbx
                // itself, which the swap would then clobber.
                in("rsi") rseq_offset,
                in("rdi") cpu,
                in("r8") target,
                in("r9") new_lo,
                out("r10") _,
                inout("rax") lo => _,
                inout("rdx") hi => _,
                in("rcx") new_hi,
                off_cpu = label { return Outcome::OffCpu; },
                refused = label { return Outcome::Refused; },
                abort = label { count_abort(); continue; },
            );
        }
        return Outcome::Done;
    }
}

/// `lock xadd` of `value` to `word` as the commit of a section that checks
/// only the CPU (why: see [`locked_cas_pair`]); the word's value before the
/// add, or `None` if the thread is not on the CPU.
///
/// # Safety
/// `rseq_offset` is glibc's registered offset; `word` is a live word of the
/// buffer of `cpu`.
#[inline(always)]
pub(crate) unsafe fn locked_add(
    rseq_offset: isize,
    cpu: u32,
    word: *mut u64,
    value: u64,
) -> Option<u64> {
    let mut before = 0u64;
    loop {
        // SAFETY: as in cas_state; the section stores only `word` (its
        // commit) and, after it, `before`, a local.
        unsafe {
            asm!(
                rseq_descriptor!(),
                "lea {tmp}, [rip + 3b]",
                "mov qword ptr fs:[{off} + 8], {tmp}",
                "4:",
                "cmp dword ptr fs:[{off} + 4], {cpu:e}",
                "jne {off_cpu}",
                "mov {tmp}, {value}",
                "lock xadd qword ptr [{word}], {tmp}",
                "5:",
                "mov qword ptr [{before}], {tmp}",
                rseq_abort_handler!(""),
                off = in(reg) rseq_offset,
                cpu = in(reg) cpu,
                word = in(reg) word,
                value = in(reg) value,
                before = in(reg) &mut before,
                tmp = out(reg) _,
                off_cpu = label { return None; },
                abort = label { count_abort(); continue; },
            );
        }
        return Some(before);
    }
}

/// The two halves of a 16-byte pair, by two plain loads: a guess, possibly
/// torn, that a [`cas_state`] then checks.
///
/// # Safety
/// `target` is a live, 16-byte aligned pair.
#[inline(always)]
pub(crate) unsafe fn load_halves(target: *const u128) -> (u64, u64) {
    let (lo, hi): (u64, u64);
    // SAFETY: `target` is live and aligned (the contract); two aligned
    // 8-byte loads, each atomic. Done in asm so that the mixed-size access
    // to a word other CPUs change with 16-byte atomics stays outside the
    // Rust memory model, as a call into C would.
    unsafe {
        asm!(
            "mov {lo}, qword ptr [{p}]",
            "mov {hi}, qword ptr [{p} + 8]",
            p = in(reg) target,
            lo = out(reg) lo,
            hi = out(reg) hi,
            options(nostack, readonly, preserves_flags),
        );
    }
    (lo, hi)
}

/// The open-page entry of `line` as `(first, phys)`: one 16-byte load,
/// which does not tear on the CPUs the rseq path runs on (see
/// `FastLine::open`). SSE2 only.
///
/// # Safety
/// `line` is a live fast line.
#[inline(always)]
pub(crate) unsafe fn load_open(line: &FastLine) -> (u64, u64) {
    let (first, phys): (u64, u64);
    // SAFETY: the entry is 16-aligned (the line's layout) and accessed only
    // by single 16-byte moves in assembly, outside Rust's memory model.
    unsafe {
        asm!(
            "movdqa {x}, xmmword ptr [{open}]",
            "movq {first}, {x}",
            "punpckhqdq {x}, {x}",
            "movq {phys}, {x}",
            open = in(reg) line.open_ptr(),
            x = out(xmm_reg) _,
            first = out(reg) first,
            phys = out(reg) phys,
            options(nostack, readonly, preserves_flags),
        );
    }
    (first, phys)
}

/// The address of byte `rel` of physical page `phys`, and of that page's
/// commit line, from `line`'s bases. In assembly, so that the compiler
/// loads the bases here, after the reserve section, rather than holding
/// them in registers across it.
///
/// # Safety
/// `line` is a live fast line and `phys` one of its buffer's physical
/// pages (the caller checked `rel` is inside a page).
#[inline(always)]
pub(crate) unsafe fn locate(
    line: &FastLine,
    phys: u64,
    rel: u64,
) -> (*mut u8, *const crate::page::meta::CommitLine) {
    let (mut commit, mut record) = (phys, rel);
    // SAFETY: loads of the line's fields only; arithmetic on registers.
    unsafe {
        asm!(
            "mov {t}, qword ptr [{line} + {PAGE_SIZE}]",
            "imul {t}, {commit}",
            "add {record}, {t}",
            "add {record}, qword ptr [{line} + {PAGES}]",
            "shl {commit}, {SHIFT}",
            "add {commit}, qword ptr [{line} + {COMMITS}]",
            line = in(reg) line,
            commit = inout(reg) commit,
            record = inout(reg) record,
            t = out(reg) _,
            PAGE_SIZE = const fast_line::PAGE_SIZE,
            PAGES = const fast_line::PAGES,
            COMMITS = const fast_line::COMMITS,
            SHIFT = const fast_line::COMMIT_STRIDE_SHIFT,
            options(nostack, readonly),
        );
    }
    (
        record as *mut u8,
        commit as *const crate::page::meta::CommitLine,
    )
}

/// `x`, which the compiler can no longer see through: so that a value it
/// could recompute from others is recomputed, rather than kept in a
/// register across a section.
#[inline(always)]
pub(crate) fn opaque(mut x: u64) -> u64 {
    // SAFETY: an empty template; `x` stays as it is.
    unsafe { asm!("/* {x} */", x = inout(reg) x, options(pure, nomem, nostack, preserves_flags)) };
    x
}
