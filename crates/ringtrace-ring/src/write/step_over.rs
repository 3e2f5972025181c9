//! Stepping over a page a sleeping writer holds (overwrite mode), and the
//! late commits into such a page.
//!
//! An overwrite-mode claim needs the page a lap behind it: it will
//! overwrite it. If a writer reserved in that page and has not committed
//! (a userspace thread preempted between reserve and commit, which a
//! kernel writer never is), the page is not complete, and a claim in place
//! would let that commit land in the next lap's counts. The kernel refuses
//! (`commit_overrun`); so did this ring, and every writer of the CPU was
//! refused until the sleeper ran again, a scheduler time slice in which a
//! fast ring wraps many times. Instead the claim *steps over* the page:
//!
//! 1. Take a spare page `Z` from the buffer's pool (a memory ring's are
//!    spares, a file ring's are zeroed ahead: `page::zero_pool`). None
//!    there: every spare is held by a sleeper already, and the claim is
//!    refused (`Busy`, counted).
//! 2. Store `Z`'s commit word fresh for the new generation (`Z` is in no
//!    slot: nobody else reads or writes it).
//! 3. CAS the slot from the old generation on `P` to the new one on `Z`,
//!    bracketed as every overrunning claim is (`overrun_claim`), so that a
//!    reader's loss mark waits for the count below. A reader's take, an
//!    in-place consume, a fixup and other claims of the slot all change
//!    the slot word, so one CAS wins; a loser gives `Z` back and looks
//!    again.
//! 4. Mark `P`'s commit word STEPPED (a fetch-or, a remote update on the
//!    rseq path, as a fixup's mark is) and count the events it held then,
//!    less those the reader consumed in place (exact: the slot CAS fixed
//!    `consumed`), as overrun. A commit is in one modification order with
//!    the mark: one before it is in the events counted here; one after it
//!    sees the flag and counts its own event as overrun
//!    ([`late_commit`]). Each event exactly once, and as overrun, which is
//!    what it would have been had its writer not slept: its page was the
//!    oldest in the ring, and this claim overwrites it.
//! 5. Whoever completes `P` (the mark, if every commit had landed by then;
//!    else the late commit whose add fills it, exactly one) frees it: a
//!    file ring's is zeroed (after the seqlock's Release fence, as
//!    `swap_claim` zeroes), then it goes back to the pool.
//!
//! The sleeper's event is never lost: it is counted, as overrun, when it
//! lands. What a preempted writer costs is its own page out of the pool
//! for as long as it sleeps, never another writer's event.
//!
//! A writer that died in its reservation never commits, so its page never
//! comes back. Step-overs may hold at most [`step_over_budget`] pages out
//! of the pool at once: a file ring's claims need the pool too, and it
//! must never run dry for them. Past the budget a claim is refused `Busy`,
//! as without step-over, and the held page stays in its slot, where the
//! reader's fixup takes it out after `fixup_after`.

use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta::{self, Commit, CommitLine, Slot};
use crate::shared::SharedState;
use crate::sync::{AtomicU64, Ordering};

/// Steps over the page in the slot whose word is `word`, of the
/// generation before `want` and not complete (a reservation in it is
/// open): the slot moves to `want` on a spare page (see the module).
/// Returns the page now in the slot if ours won, `None` to look again,
/// `Err(())` if the pool is empty.
#[cold]
pub(super) fn step_over(
    s: &SharedState,
    slot_word: &AtomicU64,
    word: u64,
    want: u32,
) -> Result<Option<usize>, ()> {
    if !s.take_step_over_budget(step_over_budget(s)) {
        return Err(());
    }
    let Some(spare) = s.zero_pool().take() else {
        s.give_step_over_budget();
        return Err(());
    };
    // Relaxed: published by the slot CAS's Release below.
    s.commit_word(spare)
        .store(Commit::fresh(want).pack(), Ordering::Relaxed);
    let slot = Slot::unpack(word);
    let claimed = Slot {
        consumed: 0,
        phys: spare,
        gen: want,
    };
    // The bracket of `SharedState::overrun_claim`, held across the mark so
    // that the overrun it counts is in before a reader's loss mark.
    let won = s.bracketed_claim(slot_word, word, claimed, || {
        let before = Commit::unpack(s.mark_commit(s.commit_word(slot.phys), meta::STEPPED));
        s.count_stepped_over();
        if before.opening || before.bytes == s.page_size() {
            // Complete before the mark (an in-place claim may even have
            // done its step 1 since, which our slot CAS made fail): no
            // commit can come to it any more. The mark's AcqRel read the
            // last commit's add, so its stores happen before the reuse.
            free_page(s, slot.phys);
        }
        u64::from(before.events.saturating_sub(slot.consumed))
    });
    if !won {
        s.zero_pool().give(spare);
        s.give_step_over_budget();
        return Ok(None);
    }
    Ok(Some(spare))
}

/// How many pages step-overs may hold out of the pool at once: all of a
/// memory ring's (its claims never use the pool), half of a file ring's,
/// whose every claim swaps a page from it (`write::claim::swap_claim`),
/// so that writers that die in their reservations cannot leave its claims
/// none.
pub(crate) fn step_over_budget(s: &SharedState) -> usize {
    let pool = s.zero_pool().capacity();
    if s.zero_on_claim() {
        pool / 2
    } else {
        pool
    }
}

/// A commit whose add of `value` found `line`'s page out of its slot
/// (`before`, the word before the add, has RECLAIMED or STEPPED). Returns
/// whether its event counts as lost (a reader's fixup took the page, and
/// the caller counts it); a stepped-over page's events are counted here,
/// as overrun, and the commit that completes the page frees it.
#[cold]
#[inline(never)]
pub(crate) fn late_commit(s: &SharedState, line: &CommitLine, before: u64, value: u64) -> bool {
    if before & meta::STEPPED == 0 {
        return before & meta::RECLAIMED != 0;
    }
    let events = (value >> meta::EVENTS_SHIFT) & meta::EVENTS_MASK;
    if events != 0 {
        RareCounters::bump(&s.rare().overrun, events);
    }
    let bytes = (before & meta::BYTES_MASK) + (value & meta::BYTES_MASK);
    if bytes == s.page_size() as u64 {
        // Ours completed it: every other commit's stores to the page came
        // before its Release add, which ours read.
        order::STEPPED_FREE_FENCE.place();
        free_page(s, s.phys_of_line(line));
    }
    false
}

/// Gives back a stepped-over page whose last commit has landed: zeroed
/// first in a file ring, whose pool holds zeroed pages.
fn free_page(s: &SharedState, phys: usize) {
    if s.zero_on_claim() {
        // An iterator that copied the page under its old slot word and
        // sees a zero sees the slot moved (`swap_claim`'s argument).
        order::ZEROING_FENCE.place();
        s.words().zero_page(phys);
    }
    s.zero_pool().give(phys);
    s.give_step_over_budget();
}
