//! The reader's own state, behind its lock: where it is, the page it
//! holds out of the ring, its free and quarantined pages, and what it has
//! reported; and how the reader passes pages writers overwrote.

use crate::order;
use crate::page::meta::{Commit, Slot};
use crate::shared::SharedState;
use std::time::Instant;

/// A page the reader took out of the ring.
#[derive(Debug)]
pub(super) struct Taken {
    pub(super) phys: usize,
    pub(super) seq: u64,
    pub(super) bytes: Vec<u8>,
    pub(super) pos: usize,
    pub(super) ts: u64,
    /// Events consumed in place before the page was taken, still to skip.
    pub(super) skip: u32,
    /// Events not yet handed out.
    pub(super) remaining: u32,
    /// Events the page holds (its commit word's count).
    pub(super) events: u32,
    /// The buffer's losses as counted just before the page was taken (see
    /// `loss_mark`): what its first event reports.
    pub(super) loss_mark: u64,
}

/// Progress through the open page, read in place.
#[derive(Debug)]
pub(super) struct InPlace {
    pub(super) seq: u64,
    pub(super) phys: usize,
    pub(super) pos: usize,
    pub(super) ts: u64,
    /// Bytes of the page copied into `scratch` so far.
    pub(super) copied: usize,
    /// Events passed so far; equals the slot's `consumed` once caught up.
    pub(super) passed: u32,
}

/// A closed page that is not complete: since when, to bound the wait.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stuck {
    pub(super) seq: u64,
    pub(super) phys: usize,
    pub(super) since: Instant,
}

/// The reader side of a CPU buffer, behind its reader lock.
#[derive(Debug)]
pub(crate) struct ReaderState {
    pub(super) free: Vec<usize>,
    pub(super) quarantine: Vec<usize>,
    pub(super) seq: u64,
    pub(super) taken: Option<Taken>,
    pub(super) in_place: Option<InPlace>,
    pub(super) stuck: Option<Stuck>,
    pub(super) scratch: Vec<u8>,
    /// The loss mark last reported (see `loss_mark`).
    pub(super) reported_losses: u64,
    /// The page of the last event handed out, to report losses at page
    /// boundaries.
    pub(super) last_page: Option<u64>,
    /// The stuck page whose fixup was last refused for a full quarantine,
    /// so that each such page is counted once.
    pub(super) refused: Option<(u64, usize)>,
}

impl ReaderState {
    pub(crate) fn new(free: Vec<usize>) -> Self {
        ReaderState {
            free,
            quarantine: Vec::new(),
            seq: 0,
            taken: None,
            in_place: None,
            stuck: None,
            scratch: Vec::new(),
            reported_losses: 0,
            last_page: None,
            refused: None,
        }
    }
}

/// The page the reader holds out of the ring, copied, and where the
/// reader is in it: an iterator starts there.
#[derive(Debug)]
pub(crate) struct TakenCopy {
    /// Its virtual page.
    pub seq: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The reader's byte position in it.
    pub pos: usize,
    /// The time at that position.
    pub ts: u64,
    /// Events before the position the slot counted as consumed.
    pub skip: u32,
}

impl ReaderState {
    /// A copy of the taken page, where the reader is in it, for an
    /// iterator.
    pub(crate) fn taken_copy(&self) -> Option<TakenCopy> {
        self.taken.as_ref().map(|t| TakenCopy {
            seq: t.seq,
            bytes: t.bytes.clone(),
            pos: t.pos,
            ts: t.ts,
            skip: t.skip,
        })
    }

    /// The next page the reader will consume.
    pub(crate) fn position(&self) -> u64 {
        self.seq
    }
}

/// What the reader found at its position.
pub(super) enum Found {
    /// An event: (timestamp, payload in the reader's buffer as a range,
    /// where that is, the page it is on, the loss mark to report if it is
    /// the first event handed out from that page).
    Event(u64, std::ops::Range<usize>, Source, u64, u64),
    /// Nothing readable now.
    Empty,
}

/// The page at the reader's position.
pub(super) enum Head {
    /// Not opened by a writer yet: nothing to read.
    NotOpened,
    /// Every byte committed: it can be taken whole.
    Complete(u64, Slot, Commit),
    /// Closed by writers but a commit is outstanding.
    Stuck(u64, Slot),
    /// Still being written: readable in place.
    Open(u64, Slot),
}

/// Which buffer an event's payload range points into.
#[derive(Clone, Copy)]
pub(super) enum Source {
    Taken,
    Scratch,
}

/// The losses to report with an event from `page`, whose loss mark is
/// `mark`: those counted before the page was secured and not yet reported,
/// on the first event handed out from a page; nothing on the others.
/// Losses are reported at page boundaries because pages are lost whole and
/// oldest first, so a loss lies between the last page read and this one.
pub(super) fn report_losses(st: &mut ReaderState, page: u64, mark: u64) -> u64 {
    if st.last_page == Some(page) {
        return 0;
    }
    st.last_page = Some(page);
    let lost = mark.saturating_sub(st.reported_losses);
    st.reported_losses = st.reported_losses.max(mark);
    lost
}

/// Moves `st.seq` past pages writers have overwritten (their events
/// were counted as overrun when they were claimed).
pub(super) fn skip_overwritten(s: &SharedState, st: &mut ReaderState) {
    let (write, _) = s.hot().state.load(order::READER_STATE_LOAD);
    let tail = s.tail_seq(write);
    let oldest = tail.saturating_sub(s.pages() as u64 - 1);
    if st.seq < oldest {
        st.seq = oldest;
        st.in_place = None;
        st.stuck = None;
    }
}
