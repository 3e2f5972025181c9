//! Reading the open page in place, event by event, while writers still
//! write it: a snapshot in which every reserved byte is committed, copied,
//! and each event consumed by a compare-and-swap on the slot word.

use super::count::loss_mark;
use super::state::{Found, InPlace, ReaderState, Source};
use crate::format::{self, Record, RecordCursor, PAGE_HEADER};
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta::{Commit, Slot};
use crate::shared::SharedState;
use crate::sync::Ordering;

/// Consumes events of page `seq` in place: a CAS of its slot word from
/// `slot` to the same page with `consumed` events consumed. False if the
/// slot moved meanwhile: a writer claimed the page (and counted its
/// unconsumed events as overrun), or another reader consumed.
pub(super) fn consume_to(s: &SharedState, seq: u64, slot: Slot, consumed: u32) -> bool {
    let after = Slot { consumed, ..slot };
    s.slot_of(seq)
        .compare_exchange(
            slot.pack(),
            after.pack(),
            order::IN_PLACE_CONSUME,
            order::failure(order::IN_PLACE_CONSUME),
        )
        .is_ok()
}

/// Reads the next event of the open page `seq` in place.
pub(super) fn next_in_place(
    s: &SharedState,
    st: &mut ReaderState,
    seq: u64,
    slot: Slot,
    consume: bool,
) -> Found {
    let page_size = s.page_size();
    let shift = s.geometry().page_shift();
    // A snapshot in which every reserved byte of the page is committed:
    // the commit word unchanged across a read of the state, and equal to
    // the state's offset in the page. Committed bytes never exceed
    // reserved ones, so equality means no reservation is open.
    //
    // On a weakly ordered CPU too: each load is Acquire, so none is
    // done before the one above it. If `c1` counts the commit of a
    // reservation made after the state value we then read, it
    // synchronizes with that commit's Release add, so that reservation's
    // CAS happens before our state load, which must then see it (or
    // later): the frontier would include it. So a `c1` equal to the
    // frontier counts only reservations below it, all of them, and
    // `c2 == c1` says the word did not move in between (within a
    // generation it only grows). The same Acquire makes the committed
    // records' stores visible to the copy below.
    let c1 = s.commit_word(slot.phys).load(order::IN_PLACE_LOAD);
    let (write, _) = s.hot().state.load(order::IN_PLACE_LOAD);
    let c2 = s.commit_word(slot.phys).load(order::IN_PLACE_LOAD);
    if c1 != c2 || write >> shift != seq {
        return Found::Empty;
    }
    let frontier = (write & (page_size as u64 - 1)) as usize;
    if Commit::unpack(c1).bytes != frontier || frontier < PAGE_HEADER {
        return Found::Empty;
    }
    if st
        .in_place
        .as_ref()
        .is_none_or(|ip| ip.seq != seq || ip.phys != slot.phys)
    {
        // (Re)start at the page's first record; events the slot says
        // were consumed are passed over without being handed out again.
        let base_ts = u64::from(s.words().load(slot.phys, format::header::BASE_TS))
            | (u64::from(s.words().load(slot.phys, format::header::BASE_TS + 4)) << 32);
        st.in_place = Some(InPlace {
            seq,
            phys: slot.phys,
            pos: PAGE_HEADER,
            ts: base_ts,
            copied: 0,
            passed: 0,
        });
        st.scratch.clear();
        st.scratch.resize(page_size, 0);
    }
    let first_of_page = st.last_page != Some(seq);
    let Some(ip) = st.in_place.as_mut() else {
        return Found::Empty;
    };
    // Copy what became committed since the last look.
    if ip.copied < frontier {
        s.words()
            .copy_to(slot.phys, ip.copied, frontier, &mut st.scratch, ip.copied);
    }
    ip.copied = ip.copied.max(frontier);
    let mut cursor = RecordCursor::resume(&st.scratch, ip.pos, ip.ts, frontier);
    loop {
        match cursor.next() {
            Some(Ok(Record::Event { ts, payload })) => {
                if ip.passed < slot.consumed {
                    ip.passed += 1;
                    ip.pos = cursor.position();
                    ip.ts = cursor.timestamp();
                    continue;
                }
                let start = payload.as_ptr() as usize - st.scratch.as_ptr() as usize;
                let range = start..start + payload.len();
                if !consume {
                    // A peek validates its copy as a read does: a writer
                    // that reused the page meanwhile may have put a newer
                    // generation's bytes in it, and its timestamp would
                    // be later than the event a read then returns. Our
                    // copies happen before the fence; the writer claimed
                    // the slot, then fenced with Release before its
                    // stores, so if we copied any of them this load sees
                    // the claim (Relaxed after the Acquire fence, as a
                    // seqlock reader's check).
                    order::IN_PLACE_FENCE.place();
                    if s.slot_of(seq).load(Ordering::Relaxed) != slot.pack() {
                        st.in_place = None;
                        return Found::Empty;
                    }
                    return Found::Event(ts, range, Source::Scratch, seq, 0);
                }
                // The first event handed out from this page reports the
                // losses before it: marked before the CAS that secures
                // it (see loss_mark).
                let mark = if first_of_page { loss_mark(s) } else { 0 };
                // Seqlock validation: our copies happen before this
                // fence; a writer reusing the page fenced with Release
                // after claiming it, so if we copied any of its bytes the
                // CAS below sees its claim and fails.
                order::IN_PLACE_FENCE.place();
                if !consume_to(s, seq, slot, slot.consumed + 1) {
                    // Overwritten (or taken) meanwhile: the writer that
                    // claimed it counted this event as overrun.
                    st.in_place = None;
                    return Found::Empty;
                }
                ip.pos = cursor.position();
                ip.ts = cursor.timestamp();
                ip.passed += 1;
                RareCounters::bump(&s.rare().read, 1);
                return Found::Event(ts, range, Source::Scratch, seq, mark);
            }
            Some(Ok(Record::Discard { .. })) => {
                ip.pos = cursor.position();
                ip.ts = cursor.timestamp();
            }
            Some(Err(_)) | None => {
                ip.pos = cursor.position();
                ip.ts = cursor.timestamp();
                return Found::Empty;
            }
        }
    }
}
