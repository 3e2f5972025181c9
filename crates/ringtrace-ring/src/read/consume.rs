//! Consuming readers: by event and by page, and the fixup for a page whose
//! writer vanished.
//!
//! Readers of one CPU buffer serialise on its reader lock (the kernel's
//! `reader_lock`); writers never take it. The reader consumes virtual page
//! `seq` in one of two ways:
//!
//! - **Taken**: the page is complete. The reader swaps one of its own free
//!   physical pages into the slot (CAS on the slot word) and owns the full
//!   one outright: nothing writes it any more, so it is copied once and
//!   decoded at leisure. This is the kernel's reader-page swap.
//! - **In place**: the page is the open one, still being written. The reader
//!   takes a snapshot in which every reserved byte is committed, copies the
//!   records, and consumes each event by a CAS that bumps the slot word's
//!   `consumed` count while checking the slot still holds the same
//!   generation. A writer overwriting the page changes the generation with a
//!   CAS on the same word, so each event is either read or overrun, exactly
//!   once.

use super::count::loss_mark;
use super::fixup::wait_or_fixup;
use super::in_place::next_in_place;
use super::state::{report_losses, skip_overwritten, Found, Head, ReaderState, Source, Taken};
use super::swap::swap_in_spare;
use crate::event::PageBuf;
use crate::format::{PageHeader, Record, RecordCursor, PAGE_HEADER};
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::shared::SharedState;
use crate::sync::Ordering;

/// Consumes the next event and hands it to `f` as (timestamp, payload,
/// events lost just before it) without allocating.
pub(crate) fn read_event_with<R>(
    s: &SharedState,
    st: &mut ReaderState,
    f: impl FnOnce(u64, &[u8], u64) -> R,
) -> Option<R> {
    match next_event(s, st, true) {
        Found::Empty => None,
        Found::Event(ts, range, source, page, mark) => {
            let lost = report_losses(st, page, mark);
            let bytes = match source {
                Source::Taken => &st.taken.as_ref()?.bytes,
                Source::Scratch => &st.scratch,
            };
            Some(f(ts, &bytes[range], lost))
        }
    }
}

/// The timestamp of the event [`read_event`](CpuBuffer::read_event)
/// would return now, without consuming it. (A writer may overwrite that
/// event before it is read, in overwrite mode: the event read is then a
/// later one, never an earlier one. A peek that races a writer reusing
/// the open page returns `None`, as a read would at that moment.)
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// use ringtrace_clock::Counter;
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
/// let ring = RingBuffer::new(config, Counter::new()).unwrap();
/// let ts = ring.cpu_writer(0).write(b"abc").unwrap();
/// let b = ring.cpu_buffer(0).unwrap();
/// assert_eq!(b.peek_timestamp(), Some(ts));
/// assert_eq!(b.read_event().unwrap().ts, ts); // still there
/// assert_eq!(b.peek_timestamp(), None);
/// ```
pub(crate) fn peek_timestamp(s: &SharedState, st: &mut ReaderState) -> Option<u64> {
    match next_event(s, st, false) {
        Found::Empty => None,
        Found::Event(ts, ..) => Some(ts),
    }
}

/// Consumes a whole page: the oldest complete page, swapped out of the
/// ring, or what is left of a page already being read by event. `None`
/// when no complete page is ready; [`flush`](CpuBuffer::flush) closes the
/// open page early.
pub(crate) fn read_page(s: &SharedState, st: &mut ReaderState) -> Option<PageBuf> {
    if st.taken.is_none() {
        take_complete_page(s, st);
    }
    let taken = st.taken.take()?;
    note_reader_page(s, None);
    RareCounters::bump(&s.rare().read, u64::from(taken.remaining));
    // The rest of a page already read by event reports nothing: its
    // losses came with its first event, and those since lie after it.
    let lost = report_losses(st, taken.seq, taken.loss_mark);
    let mut bytes = taken.bytes;
    let total = count_events(&bytes) as u32;
    let mut header = PageHeader::parse(&bytes).ok()?;
    header.commit = data_end(&bytes) as u32;
    header.events = total;
    header.skip = total.saturating_sub(taken.remaining);
    header.lost = u32::try_from(lost).unwrap_or(u32::MAX);
    header.write_to(&mut bytes);
    st.free.push(taken.phys);
    // Never back: a fixup may have moved past meanwhile.
    st.seq = st.seq.max(taken.seq + 1);
    Some(PageBuf {
        cpu: s.cpu(),
        bytes,
    })
}

/// What the page at the reader's position is now, after skipping pages
/// writers overwrote (their events were counted as overrun then).
pub(super) fn head_page(s: &SharedState, st: &mut ReaderState) -> Head {
    loop {
        skip_overwritten(s, st);
        let seq = st.seq;
        let want = gen_of(seq, s.pages());
        // Acquire: pairs with the Release CAS that last moved the slot
        // (a claim, a take, a fixup), so the commit word loaded next is
        // at least as new as the page that CAS put there, and a claim's
        // `overrun_claims_started` bump is seen (loss_mark).
        let slot = Slot::unpack(s.slot_of(seq).load(order::READER_SLOT_LOAD));
        if slot.gen != want {
            if slot.gen.wrapping_sub(want) as i32 > 0 {
                // Overwritten since we looked: on to the next page.
                st.seq += 1;
                st.in_place = None;
                continue;
            }
            return Head::NotOpened;
        }
        // Acquire: pairs with the committers' Release adds (one release
        // sequence), so a page found complete has every record's stores
        // visible to the copy `take` makes.
        let commit = Commit::unpack(s.commit_word(slot.phys).load(order::READER_COMMIT_LOAD));
        if commit.opening {
            if commit.tag == tag_of(want) {
                return Head::NotOpened; // being opened for this lap
            }
            // Being claimed for the next lap (step 1 done). Help the
            // claim's step 2 on, which counts this page's unread events
            // as overrun, before passing it: passed first, its loss
            // would miss the mark of the next page read (loss_mark).
            // Then look again: the slot has moved on.
            let word = slot.pack();
            let slot_word = s.slot_of(seq);
            if slot_word.load(order::READER_SLOT_LOAD) == word {
                s.claim_slot(slot_word, word, commit);
            }
            continue;
        }
        if commit.bytes == s.page_size() && commit.tag == tag_of(want) {
            return Head::Complete(seq, slot, commit);
        }
        if s.is_closed(seq) {
            return Head::Stuck(seq, slot); // a commit is outstanding
        }
        return Head::Open(seq, slot);
    }
}

/// The next event; consumed only if `consume` (a peek otherwise: the
/// reader may still take pages and skip overwritten ones, which consumes
/// nothing).
pub(super) fn next_event(s: &SharedState, st: &mut ReaderState, consume: bool) -> Found {
    loop {
        if let Some(found) = next_from_taken(s, st, consume) {
            return found;
        }
        match head_page(s, st) {
            Head::NotOpened => return Found::Empty,
            // Taken or not (the slot changed under us), look again.
            Head::Complete(seq, slot, commit) => {
                take(s, st, seq, slot, commit);
            }
            Head::Stuck(seq, slot) => {
                if !wait_or_fixup(s, st, seq, slot) {
                    return Found::Empty;
                }
            }
            Head::Open(seq, slot) => return next_in_place(s, st, seq, slot, consume),
        }
    }
}

/// The next event of the taken page; `None` when there is no taken page
/// or it is used up (then it goes back to the free list).
pub(super) fn next_from_taken(
    s: &SharedState,
    st: &mut ReaderState,
    consume: bool,
) -> Option<Found> {
    let taken = st.taken.as_mut()?;
    let limit = taken.bytes.len();
    let mut cursor = RecordCursor::resume(&taken.bytes, taken.pos, taken.ts, limit);
    loop {
        // The commit word counted the page's events: never hand out
        // more, whatever else the bytes seem to hold.
        let next = if taken.remaining == 0 && taken.skip == 0 {
            None
        } else {
            cursor.next()
        };
        match next {
            Some(Ok(Record::Event { ts, payload })) => {
                let start = payload.as_ptr() as usize - taken.bytes.as_ptr() as usize;
                let range = start..start + payload.len();
                if taken.skip > 0 {
                    taken.pos = cursor.position();
                    taken.ts = cursor.timestamp();
                    taken.skip -= 1;
                    continue;
                }
                if consume {
                    taken.pos = cursor.position();
                    taken.ts = cursor.timestamp();
                    taken.remaining = taken.remaining.saturating_sub(1);
                    RareCounters::bump(&s.rare().read, 1);
                    note_reader_page(s, Some(taken));
                }
                return Some(Found::Event(
                    ts,
                    range,
                    Source::Taken,
                    taken.seq,
                    taken.loss_mark,
                ));
            }
            Some(Ok(Record::Discard { .. })) => continue,
            Some(Err(_)) | None => {
                // Used up (or, were our own page corrupt, counted lost).
                if taken.remaining > 0 {
                    RareCounters::bump(&s.rare().lost, u64::from(taken.remaining));
                }
                let (phys, seq) = (taken.phys, taken.seq);
                st.taken = None;
                note_reader_page(s, None);
                st.free.push(phys);
                // Never back: a fixup may have moved past meanwhile.
                st.seq = st.seq.max(seq + 1);
                return None;
            }
        }
    }
}

/// Finds the oldest complete page and takes it.
pub(super) fn take_complete_page(s: &SharedState, st: &mut ReaderState) {
    loop {
        match head_page(s, st) {
            Head::Complete(seq, slot, commit) => {
                if take(s, st, seq, slot, commit) {
                    return;
                }
            }
            Head::Stuck(seq, slot) if wait_or_fixup(s, st, seq, slot) => {}
            _ => return,
        }
    }
}

/// Swaps a free page of the reader's into the slot of complete page
/// `seq` and takes the full one. Returns false if the slot changed.
pub(super) fn take(
    s: &SharedState,
    st: &mut ReaderState,
    seq: u64,
    slot: Slot,
    commit: Commit,
) -> bool {
    // Before the swap, so that nothing overwritten after this page is in
    // it (see loss_mark).
    let loss_mark = loss_mark(s);
    if !swap_in_spare(s, st, seq, slot) {
        return false;
    }
    let mut bytes = Vec::new();
    s.words().read_into(slot.phys, 0, s.page_size(), &mut bytes);
    let base = PageHeader::parse(&bytes).map(|h| h.base_ts).unwrap_or(0);
    st.in_place = None;
    st.stuck = None;
    st.taken = Some(Taken {
        phys: slot.phys,
        seq,
        bytes,
        pos: PAGE_HEADER,
        ts: base,
        skip: slot.consumed,
        remaining: commit.events.saturating_sub(slot.consumed),
        events: commit.events,
        loss_mark,
    });
    note_reader_page(s, st.taken.as_ref());
    true
}

/// Records the page the reader holds out of the ring, and how far it
/// has got, where a recovered file finds it (`RareCounters::
/// reader_page`). Relaxed: only read after the process is gone, or by
/// a live dump that checks it did not change while it read the page.
pub(super) fn note_reader_page(s: &SharedState, taken: Option<&Taken>) {
    let word = taken.map_or(0, |t| {
        (t.phys as u64 + 1) | (u64::from(t.events.saturating_sub(t.remaining)) << 32)
    });
    s.rare().reader_page.store(word, Ordering::Relaxed);
}

/// Data events in a page (all of them, skipped or not).
fn count_events(page: &[u8]) -> usize {
    RecordCursor::new(page)
        .into_iter()
        .flatten()
        .map_while(Result::ok)
        .filter(|r| matches!(r, Record::Event { .. }))
        .count()
}

/// Where the records of a page end (at PADDING, or the page's end).
fn data_end(page: &[u8]) -> usize {
    let Ok(mut cursor) = RecordCursor::new(page) else {
        return PAGE_HEADER;
    };
    let mut end = PAGE_HEADER;
    while let Some(Ok(_)) = cursor.next() {
        end = cursor.position();
    }
    // A trailing extend/stamp without its event would be a writer bug;
    // the position after the last whole record is the data's end.
    end
}
