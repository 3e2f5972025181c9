//! Draining without owning pages: what a reader in another process (a
//! recorder streaming a ring file to disk) or one that must never hold a
//! page out of the ring does. It copies the committed records it has not
//! consumed, of the oldest page that has any, and consumes them all with
//! one compare-and-swap of the slot's `consumed` count, the in-place
//! reader's step (see [`super::in_place`]) done for many events at once.
//!
//! It never swaps a page out, so it needs no spare page of its own: the
//! pages of a ring file belong to the writing process (its reader's spares,
//! its zeroed pool) and another process cannot know which are free. A
//! writer of a discard-mode ring may claim a page once its `consumed`
//! count reaches its events (`write::claim::prepare_page`), so draining in
//! place frees pages as a page swap does.
//!
//! What is handed out is page-shaped (docs/format.md): a header whose
//! `base_ts` is the time of the record just before the copied ones, whose
//! `commit` is where they end and whose `events` counts them, then the
//! records as the writers wrote them. A page drained while still open is
//! handed out in pieces, one per call that finds new records, each
//! carrying its page's `seq`.

use super::count::loss_mark;
use super::state::{report_losses, Head, InPlace, ReaderState};
use crate::event::{DrainedPage, PageBuf};
use crate::format::{PageHeader, RecordCursor, PAGE_HEADER};
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta::{Commit, Slot};
use crate::shared::SharedState;

/// The records of the oldest page with committed, unconsumed events,
/// consumed; `None` when no such records are readable now (none written,
/// or the oldest page waits for a commit: a writer inside its
/// reservation). Never fixes up a page, never waits.
pub(crate) fn read_committed(s: &SharedState, st: &mut ReaderState) -> Option<PageBuf> {
    let mut page = PageBuf {
        cpu: s.cpu(),
        bytes: Vec::new(),
    };
    read_committed_into(s, st, &mut page).map(|_| page)
}

/// [`read_committed`] into `into`'s buffer (its allocation kept), with
/// what the copy found of the page's events.
pub(crate) fn read_committed_into(
    s: &SharedState,
    st: &mut ReaderState,
    into: &mut PageBuf,
) -> Option<DrainedPage> {
    if st.taken.is_some() {
        // A page taken by an earlier read by event: its rest, whole.
        // Handed out unless it holds nothing: no event left and no loss
        // to report (its events all read by event already).
        if let Some(page) = super::consume::read_page(s, st) {
            let drained = DrainedPage::walk(&page.bytes).filter(|d| d.events > 0 || d.lost > 0);
            if drained.is_some() {
                into.cpu = page.cpu;
                into.bytes.clear();
                into.bytes.extend_from_slice(&page.bytes);
                return drained;
            }
        }
        if st.taken.is_some() {
            return None;
        }
    }
    loop {
        match super::consume::head_page(s, st) {
            Head::NotOpened | Head::Stuck(..) => return None,
            Head::Complete(seq, slot, commit) => {
                match copy_and_consume(s, st, seq, slot, s.page_size(), commit.events, into) {
                    Attempt::Page(page) => {
                        st.seq = st.seq.max(seq + 1);
                        st.in_place = None;
                        return Some(page);
                    }
                    Attempt::Nothing => {
                        // Every event was consumed before: on to the next.
                        st.seq = st.seq.max(seq + 1);
                        st.in_place = None;
                    }
                    Attempt::Raced => {}
                }
            }
            Head::Open(seq, slot) => {
                // A snapshot in which every reserved byte is committed, as
                // the in-place reader takes it (see its argument): the
                // commit word unchanged across a read of the state, and
                // equal to the state's offset in the page.
                let c1 = s.commit_word(slot.phys).load(order::IN_PLACE_LOAD);
                let (write, _) = s.hot().state.load(order::IN_PLACE_LOAD);
                let c2 = s.commit_word(slot.phys).load(order::IN_PLACE_LOAD);
                let shift = s.geometry().page_shift();
                let frontier = (write & (s.page_size() as u64 - 1)) as usize;
                let commit = Commit::unpack(c1);
                if c1 != c2
                    || write >> shift != seq
                    || commit.bytes != frontier
                    || frontier < PAGE_HEADER
                {
                    return None;
                }
                return match copy_and_consume(s, st, seq, slot, frontier, commit.events, into) {
                    Attempt::Page(page) => Some(page),
                    Attempt::Nothing | Attempt::Raced => None,
                };
            }
        }
    }
}

/// What one attempt at a page gave.
enum Attempt {
    /// Records, consumed, in the caller's buffer.
    Page(DrainedPage),
    /// Nothing past what was consumed before.
    Nothing,
    /// The slot moved (a writer claimed the page): look again.
    Raced,
}

/// Copies page `seq`'s committed bytes below `end` (all committed: the
/// caller checked), passes the events its slot counts consumed, and
/// consumes the rest (`events` in all) by one CAS of the slot word.
fn copy_and_consume(
    s: &SharedState,
    st: &mut ReaderState,
    seq: u64,
    slot: Slot,
    end: usize,
    events: u32,
    into: &mut PageBuf,
) -> Attempt {
    if events <= slot.consumed {
        return Attempt::Nothing;
    }
    // Where to start: where the last piece of this page ended, if this
    // reader made it and nobody consumed since; else the page's first
    // record, passing the events the slot says were consumed.
    let resume = st
        .in_place
        .as_ref()
        .filter(|ip| ip.seq == seq && ip.phys == slot.phys && ip.passed == slot.consumed)
        .map(|ip| (ip.pos, ip.ts));
    st.scratch.resize(s.page_size(), 0);
    let from = resume.map_or(0, |(pos, _)| pos);
    if from < end {
        s.words()
            .copy_to(slot.phys, from, end, &mut st.scratch, from);
    }
    let (start_pos, base_ts) = match resume {
        Some(at) => at,
        None => {
            let Some(base) = st
                .scratch
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
            else {
                return Attempt::Raced;
            };
            (PAGE_HEADER, base)
        }
    };
    let to_pass = if resume.is_some() { 0 } else { slot.consumed };
    let mut cursor = RecordCursor::resume(&st.scratch, start_pos, base_ts, end);
    // Past the events consumed before (a discard between them and the
    // first unconsumed event stays in the copy: its delta counts), then
    // over the rest. The commit word counted the page's events: never
    // hand out more, whatever else the bytes seem to hold.
    let passed = cursor.skip_events(to_pass);
    let (start, start_ts) = (cursor.position(), cursor.timestamp());
    let mut first_ts = start_ts;
    let found = if passed == to_pass && cursor.skip_events(1) == 1 {
        first_ts = cursor.timestamp();
        // `events > slot.consumed`, checked above: at least this one.
        1 + cursor.skip_events(events - slot.consumed - 1)
    } else {
        0
    };
    let (stop, stop_ts) = (cursor.position(), cursor.timestamp());
    // Bytes that do not decode to as many events as the commit word
    // counted (a copy that raced a reuse, which the CAS below rejects, or
    // damage): the missing ones are consumed all the same, or a discard
    // ring would never reuse the page, and counted lost.
    let missing = events - slot.consumed - found;
    if found == 0 && missing == 0 {
        return Attempt::Nothing;
    }
    // The first piece handed out from a page reports the losses before
    // it: marked before the CAS that secures it (see `loss_mark`).
    let first_of_page = st.last_page != Some(seq);
    let mark = if first_of_page { loss_mark(s) } else { 0 };
    // Seqlock validation, as the in-place reader's: our copies happen
    // before this fence; a writer reusing the page fenced with Release
    // after claiming it, so if we copied any of its bytes the CAS below
    // sees its claim and fails.
    order::IN_PLACE_FENCE.place();
    if !super::in_place::consume_to(s, seq, slot, events) {
        // Overwritten (its events counted overrun by the claimer), or
        // consumed by another reader: look again.
        st.in_place = None;
        return Attempt::Raced;
    }
    // The next piece of this page starts here.
    st.in_place = Some(InPlace {
        seq,
        phys: slot.phys,
        pos: stop,
        ts: stop_ts,
        copied: end,
        passed: events,
    });
    RareCounters::bump(&s.rare().read, u64::from(found));
    if missing > 0 {
        RareCounters::bump(&s.rare().lost, u64::from(missing));
    }
    if found == 0 {
        return Attempt::Nothing;
    }
    let lost = report_losses(st, seq, mark);
    let data = &st.scratch[start..stop];
    let commit = PAGE_HEADER + data.len();
    // Padded with zeros to a power of two, the decoder's page shape; only
    // the padding is zeroed, the rest written once.
    let len = commit
        .next_power_of_two()
        .clamp(crate::config::MIN_PAGE_SIZE, s.page_size());
    let header = PageHeader {
        base_ts: start_ts,
        seq,
        commit: commit as u32,
        events: found,
        skip: 0,
        lost: u32::try_from(lost).unwrap_or(u32::MAX),
    };
    into.cpu = s.cpu();
    let bytes = &mut into.bytes;
    bytes.clear();
    bytes.resize(PAGE_HEADER, 0);
    header.write_to(bytes);
    bytes.extend_from_slice(data);
    bytes.resize(len.max(commit), 0);
    debug_assert!(commit <= len);
    Attempt::Page(DrainedPage {
        events: found,
        first_ts,
        last_ts: stop_ts,
        lost: u64::from(header.lost),
    })
}
