//! The CPU buffer's updates of its per-CPU words, on either write path
//! (see [`crate::rseq`]): the state's compare-and-swap, the commit word's
//! add, the `hit` count and a fixup's mark.
//!
//! On the CAS path each is the locked instruction it always was. On the
//! rseq path each is tried as a restartable sequence on the buffer's CPU
//! and, when the caller is elsewhere (or a remote update is under way),
//! done as a remote update: flag up, CPU fenced, the same locked
//! instruction. Either way the caller sees the semantics of the atomic
//! operation it asked for, with the orderings named at each call.

use super::step_over::late_commit;
use crate::order;
use crate::shared::SharedState;
#[cfg(ringtrace_rseq)]
use crate::sync::AtomicU64;
use crate::sync::Ordering;

/// Compare-and-swap of `state` from `expected` to `new`: AcqRel on
/// success, Acquire on failure, which returns the state found.
///
/// On the rseq path the section's 16-byte store is a Release store and
/// its loads are Acquire loads (x86_64 orders them so: TSO), and the
/// section is a compiler barrier; the failure's state is loaded with
/// Acquire. What a locked CAS adds beyond that, a full barrier, no step
/// relies on (the reserve steps in `write::reserve::reserve` say what each
/// ordering is for).
#[inline(always)]
pub(super) fn cas_state(
    s: &SharedState,
    expected: (u64, u64),
    new: (u64, u64),
) -> Result<(), (u64, u64)> {
    #[cfg(ringtrace_rseq)]
    if let Some(line) = s.path().fast() {
        return cas_state_on(s, line, expected, new);
    }
    s.hot().state.compare_exchange(
        expected,
        new,
        order::STATE_CAS,
        order::failure(order::STATE_CAS),
    )
}

/// `cas_state` on the rseq path, through the buffer's fast `line`.
#[cfg(ringtrace_rseq)]
#[inline(always)]
pub(super) fn cas_state_on(
    s: &SharedState,
    line: &crate::rseq::FastLine,
    expected: (u64, u64),
    new: (u64, u64),
) -> Result<(), (u64, u64)> {
    use crate::rseq::section::{cas_state, Outcome};
    // SAFETY: SSE2, which every x86_64 CPU has.
    let packed = unsafe { core::arch::x86_64::_mm_set_epi64x(new.1 as i64, new.0 as i64) };
    // SAFETY: `line` is this buffer's fast line on the rseq path, whose
    // state is this buffer's live, 16-byte aligned pair which, while
    // the gate is open, only this buffer's sections on its CPU store to
    // (every other update is a remote one, below); AVX was checked when
    // the path was chosen.
    let outcome = unsafe { cas_state(line, expected.0, expected.1, packed) };
    if outcome == Outcome::Done {
        return Ok(());
    }
    cas_state_rare(s, outcome, expected, new)
}

/// `cas_state` when its section did not commit: out of line, so that
/// the fast path stays small.
#[cfg(ringtrace_rseq)]
#[cold]
#[inline(never)]
pub(super) fn cas_state_rare(
    s: &SharedState,
    outcome: crate::rseq::section::Outcome,
    expected: (u64, u64),
    new: (u64, u64),
) -> Result<(), (u64, u64)> {
    use crate::rseq::section::{locked_cas_pair, Outcome};
    // Looked up again rather than passed: passing it made the fast
    // path store it to the stack before every section.
    let Some(line) = s.path().fast() else {
        return Err(s.hot().state.load(order::STATE_RELOAD));
    };
    let state = s.hot().state.as_ptr();
    if outcome == Outcome::Aborted {
        crate::rseq::section::count_abort();
    }
    let outcome = match outcome {
        // SAFETY: as in cas_state; a locked CAS on the CPU, atomic
        // against a remote's. After an abort too: it is as good as a
        // retry of the plain section, and keeps the retry out of line.
        Outcome::Gated | Outcome::Aborted => unsafe {
            locked_cas_pair(
                line.rseq_offset(),
                s.path().cpu(),
                state,
                expected.0,
                expected.1,
                new.0,
                new.1,
            )
        },
        other => other,
    };
    match outcome {
        Outcome::Done => Ok(()),
        Outcome::Refused => Err(s.hot().state.load(order::STATE_RELOAD)),
        Outcome::OffCpu | Outcome::Gated | Outcome::Aborted => {
            let _remote = s.path().remote();
            s.hot().state.compare_exchange(
                expected,
                new,
                order::STATE_CAS,
                order::failure(order::STATE_CAS),
            )
        }
    }
}

/// A guess at `state` for step A of a reservation: the hints on the CAS
/// path (a 128-bit load would be a locked instruction there), the state
/// itself on the rseq path, where nothing else keeps the hints fresh.
/// Possibly torn or stale: the CAS checks it.
#[inline(always)]
pub(super) fn guess_state(s: &SharedState) -> (u64, u64) {
    #[cfg(ringtrace_rseq)]
    if s.path().fast().is_some() {
        // SAFETY: the state is a live, 16-byte aligned pair.
        return unsafe { crate::rseq::section::load_halves(s.hot().state.as_ptr()) };
    }
    // Relaxed: only a guess (see `reserve`, step A).
    (
        s.hot().write_hint.load(Ordering::Relaxed),
        s.hot().ts_hint.load(Ordering::Relaxed),
    )
}

/// Whether the hints need refreshing after a successful CAS: only the
/// CAS path reads them.
#[inline(always)]
pub(super) fn keeps_hints(s: &SharedState) -> bool {
    #[cfg(ringtrace_rseq)]
    if s.path().fast().is_some() {
        return false;
    }
    #[cfg(not(ringtrace_rseq))]
    let _ = s;
    true
}

/// Adds `value` to `line`'s commit word and, for the end of a
/// reservation (`hits` 1: an event or a discard record), counts a hit;
/// `hits` 0 for a page's header or padding. Returns whether the page
/// had been reclaimed by a fixup before the add (a commit then counts
/// its event as lost); a commit into a page an overwrite-mode claim
/// stepped over is counted here, as overrun (`SharedState::late_commit`).
/// Release: see `write::claim::commit_bytes`.
///
/// On the CAS path the hit goes to the hot line's `hit` (Relaxed: a
/// statistic, see RareCounters::bump). On the rseq path one section
/// adds to the commit word and to the page's `hits` beside it in one
/// 16-byte store (see [`crate::page::meta::CommitLine`]): a commit is one
/// section, not two.
#[inline(always)]
pub(super) fn add_to_line(
    s: &SharedState,
    line: &crate::page::meta::CommitLine,
    value: u64,
    hits: u64,
) -> bool {
    #[cfg(ringtrace_rseq)]
    if let Some(fast) = s.path().fast() {
        use crate::rseq::section::{add_pair_unless, Outcome};
        // SAFETY: a commit line of this buffer, live as the buffer is,
        // 16-aligned (CommitLine's repr). While the gate is open its
        // word changes only by this buffer's sections on its CPU and by
        // claims' compare-and-swaps, which expect a complete or OPENING
        // page, and a page with an add pending is neither, so no claim
        // can land between a section's load and its store; a fixup's
        // or a step-over's mark is a remote update. Its hits change only
        // by this buffer's sections on its CPU. Refused when the page is
        // out of its slot (RECLAIMED, STEPPED): the add is then made by
        // the rare path, as such a page is rare.
        let outcome = unsafe { add_pair_unless(fast, line, value, hits, crate::page::meta::LATE) };
        if outcome == Outcome::Done {
            return false;
        }
        return add_to_line_rare(s, outcome, line, value, hits);
    }
    let before = line.word.fetch_add(value, order::COMMIT_ADD);
    if hits != 0 {
        s.hot().hit.fetch_add(hits, Ordering::Relaxed);
    }
    before & crate::page::meta::LATE != 0 && late_commit(s, line, before, value)
}

/// `add_to_line` when its section did not commit: on the CPU, the two
/// adds one by one, each a locked section (a remote update for the
/// second if the thread has moved since); off it, both adds under one
/// remote update, so that a commit from another CPU costs one system
/// call, not two.
#[cfg(ringtrace_rseq)]
#[cold]
#[inline(never)]
pub(super) fn add_to_line_rare(
    s: &SharedState,
    outcome: crate::rseq::section::Outcome,
    line: &crate::page::meta::CommitLine,
    value: u64,
    hits: u64,
) -> bool {
    use crate::rseq::section::Outcome;
    if outcome == Outcome::Aborted {
        crate::rseq::section::count_abort();
    }
    if let Some(before) = locked_add_on_cpu(s, &line.word, value) {
        if hits != 0 {
            add_rare(s, Outcome::Gated, &line.hits, hits, Ordering::Relaxed);
        }
        return before & crate::page::meta::LATE != 0 && late_commit(s, line, before, value);
    }
    // Release for the commit word, as the section's store; the hits
    // are a statistic. Both words are the buffer's, so one remote
    // update covers them.
    let remote = s.path().remote();
    let before = line.word.fetch_add(value, order::COMMIT_ADD);
    if hits != 0 {
        line.hits.fetch_add(hits, Ordering::Relaxed);
    }
    // The gate back down before a late commit frees its page.
    drop(remote);
    before & crate::page::meta::LATE != 0 && late_commit(s, line, before, value)
}

/// An add whose plain section did not commit (`outcome`: the gate shut
/// (a remote update under way, or the thread off the CPU), a reclaimed
/// page, or an abort, which is counted here): a locked add in a section
/// on the CPU, else a remote update. Returns the word before.
#[cfg(ringtrace_rseq)]
#[cold]
#[inline(never)]
pub(super) fn add_rare(
    s: &SharedState,
    outcome: crate::rseq::section::Outcome,
    word: &AtomicU64,
    value: u64,
    order: Ordering,
) -> u64 {
    if outcome == crate::rseq::section::Outcome::Aborted {
        crate::rseq::section::count_abort();
    }
    if let Some(before) = locked_add_on_cpu(s, word, value) {
        return before;
    }
    let _remote = s.path().remote();
    word.fetch_add(value, order)
}

/// Adds `value` to `word`, one of this buffer's words, by a locked add
/// in a section on the buffer's CPU; `None` if the thread is not on it
/// (or the buffer is on the CAS path), nothing added then. Returns the
/// word before.
#[cfg(ringtrace_rseq)]
pub(super) fn locked_add_on_cpu(s: &SharedState, word: &AtomicU64, value: u64) -> Option<u64> {
    let fast = s.path().fast()?;
    // SAFETY: `word` is a live word of this buffer; a locked add on
    // the CPU is atomic against a remote's and a plain section's.
    unsafe {
        crate::rseq::section::locked_add(fast.rseq_offset(), s.path().cpu(), word.as_ptr(), value)
    }
}

/// For a whole event about to be written on this buffer: on the rseq
/// path from a thread not on the buffer's CPU, one remote update held
/// across its reserve and its commit, inside which their own remote
/// updates make no system call (see `RemoteUpdate::begin`): one
/// `membarrier` for the event, not two. `None` on the CPU (or on the
/// CAS path), where the event makes no remote update unless the thread
/// moves, and then makes its own.
#[cfg(ringtrace_rseq)]
pub(crate) fn remote_event(s: &SharedState) -> Option<crate::rseq::remote::RemoteUpdate<'_>> {
    s.path().fast()?;
    (crate::cpu::current_cpu() != s.path().cpu() as usize).then(|| s.path().remote())
}
