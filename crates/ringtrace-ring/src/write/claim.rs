//! The page claim: making the next page ready for writers (steps 1 to 3,
//! or a file ring's swap for a zeroed page), a page's opening and its
//! padded close, and the early close (`flush`).

use super::error::ReserveError;
use super::percpu::{add_to_line, cas_state};
use super::step_over::step_over;
use crate::config::Mode;
use crate::format::{self, TimePrefix, PAGE_HEADER};
use crate::order;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::shared::SharedState;
use crate::sync::{AtomicU64, Ordering};

/// The physical page of the open page `seq`, or `None` if the slot has
/// moved past it (the caller's view of `state` is stale).
#[inline(always)]
pub(super) fn current_phys(s: &SharedState, seq: u64) -> Option<usize> {
    // Relaxed: the entry's value is all that matters, and it is
    // immutable for its seq (see WriterHot::open_page). Ordering against
    // the page's claim comes through `state` (step D).
    let cached = s.hot().open_page.load(Ordering::Relaxed);
    if cached >> 16 == seq {
        return Some((cached & 0xFFFF) as usize);
    }
    slot_phys(s, seq)
}

#[cold]
pub(super) fn slot_phys(s: &SharedState, seq: u64) -> Option<usize> {
    // Acquire: more than enough. The state CAS that must succeed before
    // `phys` is used already orders the claim first (see `order::SLOT_PHYS_LOAD`).
    let slot = Slot::unpack(s.slot_of(seq).load(order::SLOT_PHYS_LOAD));
    if slot.gen != gen_of(seq, s.pages()) {
        return None;
    }
    // A miss (the entry overwritten by a slower writer's older page, or
    // emptied by an adoption) would send every writer of this page here,
    // past the fast path, which reads the entry only: refill it. The
    // pair is right for `seq` whenever `seq` is open, the only time a
    // writer's state (checked at its CAS) can be in it. Relaxed: as in
    // open_page.
    s.hot()
        .open_page
        .store((seq << 16) | slot.phys as u64, Ordering::Relaxed);
    s.path()
        .line()
        .store_open(seq << s.geometry().page_shift(), slot.phys);
    Some(slot.phys)
}

/// Makes page `seq` ready for writing: its slot at `seq`'s generation,
/// naming a physical page whose commit word counts from zero. Helps any
/// other writer's claim that is half done, so no writer waits on another.
///
/// A file ring with a pool of zeroed pages claims by one swap instead
/// (`swap_claim`); the steps below are a memory ring's claim (and a
/// file ring's without a pool, which zeroes between steps 2 and 3).
///
/// Claiming slot `s` for generation `g` from generation `g - 1` on
/// physical page `P`:
/// 1. CAS `P`'s commit word from "complete, tag g-1, e events" to
///    "OPENING, tag g, e events, 0 bytes". Only a complete page can be
///    claimed: a reservation still open in it would otherwise commit
///    into the new generation. Once OPENING, nobody else can claim it,
///    and readers know it is going.
/// 2. CAS the slot from (g-1, P, c) to (g, P, 0). Whoever wins (the
///    claimer or a helper) counts `e - c` unread events as overrun:
///    the reader's in-place consumption is a CAS on the same word, so
///    every event is either read or overrun, never both.
/// 3. CAS the commit word from OPENING to (tag g, 0 bytes, 0 events).
///    Only then may the state move into the page (our caller's D), so
///    every commit to the page lands on the fresh count.
pub(super) fn prepare_page(s: &SharedState, seq: u64) -> Result<usize, PrepareError> {
    let n = s.pages();
    let want = gen_of(seq, n);
    let slot_word = s.slot_of(seq);
    loop {
        // Acquire: see the commit word as the claimer or reader left it.
        let word = slot_word.load(order::CLAIM_LOAD);
        let slot = Slot::unpack(word);
        let commit_word = &s.commit_word(slot.phys);
        let commit = Commit::unpack(commit_word.load(order::CLAIM_LOAD));
        // A consistent pair: the slot unchanged across the commit load.
        // (Slot words never repeat, so equal means unchanged; the commit
        // word's own changes under a fixed slot are handled below.)
        if slot_word.load(order::CLAIM_LOAD) != word {
            continue;
        }
        if slot.gen == want {
            if commit.opening && commit.tag == tag_of(want) {
                if s.zero_on_claim() && !commit.zeroed {
                    // A file ring's claimer is zeroing the page (see
                    // `zero_claimed`). Only it may: a helper could
                    // still be storing zeros after writers came in.
                    return Err(PrepareError::Refused(ReserveError::Preparing));
                }
                // Step 3, ours or someone else's.
                let _ = commit_word.compare_exchange(
                    commit.pack(),
                    Commit::fresh(want).pack(),
                    order::CLAIM_STEP3,
                    order::failure(order::CLAIM_STEP3),
                );
                continue;
            }
            return Ok(slot.phys);
        }
        if slot.gen != want.wrapping_sub(1) {
            return Err(PrepareError::Stale);
        }
        if commit.opening && commit.tag == tag_of(want) {
            // Step 2, helping whoever did step 1.
            s.claim_slot(slot_word, word, commit);
            continue;
        }
        let complete =
            commit.tag == tag_of(slot.gen) && commit.bytes == s.page_size() && !commit.opening;
        // Discard mode: a page with events not yet read is the ring's
        // end, complete or not (a reader stops at a page a writer is
        // still filling, so the ring fills up behind it).
        if s.geometry().mode == Mode::Discard
            && commit.tag == tag_of(slot.gen)
            && commit.events > slot.consumed
        {
            return Err(PrepareError::Refused(ReserveError::Full));
        }
        if !complete {
            // A reservation in it is still open. Overwrite mode steps
            // over it (see `step_over`), with a spare page if one is
            // left; a page being claimed, or of another generation,
            // never gets here.
            let geometry = s.geometry();
            if geometry.mode == Mode::Overwrite
                && geometry.step_over
                && commit.tag == tag_of(slot.gen)
            {
                match step_over(s, slot_word, word, want) {
                    Ok(Some(phys)) => return Ok(phys),
                    Ok(None) => continue,
                    Err(()) => {}
                }
            }
            return Err(PrepareError::Refused(ReserveError::Busy));
        }
        if s.zero_on_claim() && s.zero_pool().usable() {
            // A file ring: the claim is one swap (see `swap_claim`); in a
            // child forked with it, which may not use the pool, in place.
            if let Some(phys) = swap_claim(s, slot_word, word, commit, want)? {
                return Ok(phys);
            }
            continue;
        }
        // Step 1. AcqRel, as every step; implied here (see `order::CLAIM_STEP1`).
        let opening = Commit::opening(want, commit.events, commit.header);
        let won = commit_word
            .compare_exchange(
                commit.pack(),
                opening.pack(),
                order::CLAIM_STEP1,
                order::failure(order::CLAIM_STEP1),
            )
            .is_ok();
        if won && s.zero_on_claim() {
            s.zero_claimed(slot_word, want, opening, slot.phys);
        }
    }
}

/// A file ring's claim, when it has a pool of zeroed pages
/// ([`crate::page::zero_pool`]): the slot whose word was `word` (generation
/// `want - 1` on a complete page whose commit word was `commit`) moves
/// to generation `want` on a zeroed page from the pool, in one CAS:
///
/// - Take a page `Z` from the pool (Acquire: its zeros are seen). None
///   there: every pool page is held by a claimer that sleeps while it
///   zeroes, or by a writer that sleeps in a page stepped over (see
///   `step_over`), and the claim is refused (Preparing).
/// - Store `Z`'s commit word fresh for `want` (tag, no bytes, no
///   events). Nobody else reads or writes it: `Z` is in no slot.
/// - CAS the slot from `word` to `(want, Z, 0)`, AcqRel: Release
///   publishes `Z`'s zeros and commit word to every writer that
///   Acquire-loads the slot and so may reserve in `Z`; Acquire orders
///   our reads of the old page after whatever its last committers and
///   the reader did. The old page was complete, so no reservation is
///   open in it and no commit can come to it; a reader or fixup that
///   takes it changes the slot word too, so one CAS wins. The winner
///   counts the unread events as overrun, bracketed for readers as step
///   2 of the in-place claim is (`overrun_claim`).
/// - Lost: `Z` goes back to the pool untouched (its commit word is
///   reset by whoever takes it next), and the caller looks again.
/// - Won: the old page is ours, out of every slot. A Release fence,
///   then its zeros (an iterator that copied it under the old slot word
///   and sees a zero sees the slot moved, and drops its copy: the
///   seqlock argument of `swap_in_spare`), then it goes to the pool.
///   Nobody waits for this: writers enter `Z` at once.
///
/// Returns the page now in the slot if ours won, `None` to look again.
pub(super) fn swap_claim(
    s: &SharedState,
    slot_word: &AtomicU64,
    word: u64,
    commit: Commit,
    want: u32,
) -> Result<Option<usize>, PrepareError> {
    let Some(zeroed) = s.zero_pool().take() else {
        return Err(PrepareError::Refused(ReserveError::Preparing));
    };
    // Relaxed: published by the slot CAS's Release below.
    s.commit_word(zeroed)
        .store(Commit::fresh(want).pack(), Ordering::Relaxed);
    let slot = Slot::unpack(word);
    let claimed = Slot {
        consumed: 0,
        phys: zeroed,
        gen: want,
    };
    let unread = commit.events.saturating_sub(slot.consumed);
    let won = if unread == 0 {
        slot_word
            .compare_exchange(
                word,
                claimed.pack(),
                order::CLAIM_STEP2,
                order::failure(order::CLAIM_STEP2),
            )
            .is_ok()
    } else {
        s.overrun_claim(slot_word, word, claimed, unread)
    };
    if !won {
        s.zero_pool().give(zeroed);
        return Ok(None);
    }
    order::ZEROING_FENCE.place();
    s.words().zero_page(slot.phys);
    s.zero_pool().give(slot.phys);
    Ok(Some(zeroed))
}

/// Pads physical page `phys` from `pos` to its end and commits the
/// padding. The caller closed the page with its CAS and looked `phys` up
/// before it (see reserve_slow): a fixup may have taken the page since,
/// in which case the commit lands on the quarantined page, where it
/// counts towards its release.
#[cold]
pub(super) fn pad_tail(s: &SharedState, phys: usize, pos: usize) {
    let page_size = s.page_size();
    if pos < page_size {
        s.words()
            .store(phys, pos, format::record_header(format::TYPE_PADDING, 0));
    }
    commit_bytes(s, phys, (page_size - pos) as u64);
}

/// Writes page `seq`'s header and commits its bytes.
#[cold]
pub(super) fn open_page(s: &SharedState, seq: u64, phys: usize, base_ts: u64) {
    // Relaxed: see current_phys. A slower writer may overwrite this
    // with an older page; that only sends later writers to the slot.
    s.hot()
        .open_page
        .store((seq << 16) | phys as u64, Ordering::Relaxed);
    s.path()
        .line()
        .store_open(seq << s.geometry().page_shift(), phys);
    s.words().store_page_header(phys, seq, base_ts);
    // With the HEADER flag: a recovered file trusts the page's base time
    // only when its header's own commit landed.
    commit_bytes(s, phys, PAGE_HEADER as u64 | crate::page::meta::HEADER);
    // Where shared mode, if on, looks whether remote use has stopped.
    s.path().page_opened();
}

/// Writes and commits the TIME_EXTEND or TIME_STAMP record at `at`.
#[cold]
pub(super) fn write_prefix(s: &SharedState, phys: usize, at: usize, prefix: TimePrefix) {
    // The header word last, Release: for a crash, so that a recovered
    // file never finds the header without the words it announces.
    let header = match prefix {
        TimePrefix::None => return,
        TimePrefix::Extend(delta) => {
            s.words()
                .store(phys, at + 4, (delta >> format::DELTA_BITS) as u32);
            format::record_header(format::TYPE_TIME_EXTEND, delta & format::MAX_DELTA)
        }
        TimePrefix::Stamp(ts) => {
            s.words().store_u64(phys, at + 4, ts);
            format::record_header(format::TYPE_TIME_STAMP, 0)
        }
    };
    s.words().word(phys, at).store(header, order::RECORD_HEADER);
    commit_bytes(s, phys, prefix.size() as u64);
}

/// Adds `value` to a commit word. Release: everything this writer wrote
/// into the page is published to a reader that Acquire-loads the word
/// and finds it complete (the RMWs of all committers form one release
/// sequence; on the rseq path each add is a plain store after every
/// store before it, and x86_64 keeps stores in order).
#[inline(always)]
pub(super) fn commit_bytes(s: &SharedState, phys: usize, value: u64) {
    add_to_line(s, s.commit_line(phys), value, 0);
}

/// Closes the current page early (the kernel's and LTTng's "switch"), so
/// that its events become readable as a whole page once committed. A
/// no-op on an empty or unopened page. Returns whether a page was closed.
pub(crate) fn flush(s: &SharedState) -> bool {
    let shift = s.geometry().page_shift();
    let mask = s.page_size() as u64 - 1;
    let mut state = s.hot().state.load(order::STATE_RELOAD);
    loop {
        let (write, last_ts) = state;
        let pos = (write & mask) as usize;
        if pos == 0 || pos == PAGE_HEADER {
            return false;
        }
        let seq = write >> shift;
        let next = (seq + 1) << shift;
        // Before the CAS, as in reserve_slow: the page we close.
        let Some(phys) = current_phys(s, seq) else {
            state = s.hot().state.load(order::STATE_RELOAD);
            continue;
        };
        match cas_state(s, state, (next, last_ts)) {
            Ok(()) => {
                s.hot().write_hint.store(next, Ordering::Relaxed);
                pad_tail(s, phys, pos);
                return true;
            }
            Err(actual) => state = actual,
        }
    }
}

/// Why `prepare_page` did not make a page ready.
#[derive(Debug)]
pub(crate) enum PrepareError {
    /// The caller's view of the state is out of date.
    Stale,
    /// The page cannot be reused now.
    Refused(ReserveError),
}
