//! The reader's page swap (the kernel's reader page): one of the reader's
//! free pages goes into a slot, empty and complete, in place of the page
//! it takes out.

use super::state::ReaderState;
use crate::format::{self, PAGE_HEADER};
use crate::order;
use crate::page::meta::{Commit, Slot};
use crate::shared::SharedState;

/// Puts one of the reader's free pages into `seq`'s slot in place of
/// `slot.phys`, complete and empty, so writers claim it like any page
/// that was read. Returns false (and keeps the spare) if the slot
/// changed meanwhile or the reader has no spare.
pub(super) fn swap_in_spare(s: &SharedState, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
    let Some(spare) = st.free.pop() else {
        return false; // cannot happen: the reader always holds a page
    };
    // The spare was taken out of a slot by an earlier CAS on that slot
    // (this thread's, or another reader's before the lock passed here).
    // An iterator may still be copying it under that slot's old word.
    // Release fence before rewriting it: an iterator whose copy sees any
    // of the stores below, and then fences with Acquire, also sees that
    // slot's CAS, so it throws the copy away (the seqlock argument, as
    // at step E of a writer's reserve). The CAS's own Release orders
    // only what came before it, and on a weakly ordered CPU these
    // stores could otherwise be seen first.
    order::SPARE_FENCE.place();
    // The spare still holds the bytes of the page it was: make it an
    // empty page, so that nothing (an iterator, a reader that comes back
    // to this slot) decodes those as events. Nobody else writes it: it
    // is in no slot. Relaxed: published by the Release below.
    s.words().store_page_header(spare, seq, 0);
    s.words().store(
        spare,
        PAGE_HEADER,
        format::record_header(format::TYPE_PADDING, 0),
    );
    // Release; the slot CAS below publishes it too (see `order::SPARE_COMMIT_STORE`).
    s.commit_word(spare).store(
        Commit::complete(slot.gen, s.page_size(), 0, true).pack(),
        order::SPARE_COMMIT_STORE,
    );
    let swapped = Slot {
        consumed: 0,
        phys: spare,
        gen: slot.gen,
    };
    // AcqRel: Acquire orders our later reads of the old page (its bytes
    // were published by the committers' Release adds, which we already
    // Acquire-loaded) after the swap; Release publishes the spare's
    // reset to whoever next reads the slot.
    let swapped = s
        .slot_of(seq)
        .compare_exchange(
            slot.pack(),
            swapped.pack(),
            order::SPARE_SWAP,
            order::failure(order::SPARE_SWAP),
        )
        .is_ok();
    if !swapped {
        st.free.push(spare);
    }
    swapped
}
