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

use crate::cpu_buffer::CpuBuffer;
use crate::event::{Event, PageBuf};
use crate::format::{self, PageHeader, Record, RecordCursor, PAGE_HEADER};
use crate::meta::{gen_of, tag_of, Commit, Slot};
use crate::stats::{RareCounters, Stats};
use crate::sync::{fence, Ordering};
use std::time::{Duration, Instant};

/// A page the reader took out of the ring.
#[derive(Debug)]
struct Taken {
    phys: usize,
    seq: u64,
    bytes: Vec<u8>,
    pos: usize,
    ts: u64,
    /// Events consumed in place before the page was taken, still to skip.
    skip: u32,
    /// Events not yet handed out.
    remaining: u32,
    /// Events the page holds (its commit word's count).
    events: u32,
    /// The buffer's losses as counted just before the page was taken (see
    /// `loss_mark`): what its first event reports.
    loss_mark: u64,
}

/// Progress through the open page, read in place.
#[derive(Debug)]
struct InPlace {
    seq: u64,
    phys: usize,
    pos: usize,
    ts: u64,
    /// Bytes of the page copied into `scratch` so far.
    copied: usize,
    /// Events passed so far; equals the slot's `consumed` once caught up.
    passed: u32,
}

/// A closed page that is not complete: since when, to bound the wait.
#[derive(Debug, Clone, Copy)]
struct Stuck {
    seq: u64,
    phys: usize,
    since: Instant,
}

/// The reader side of a CPU buffer, behind its reader lock.
#[derive(Debug)]
pub(crate) struct ReaderState {
    free: Vec<usize>,
    quarantine: Vec<usize>,
    seq: u64,
    taken: Option<Taken>,
    in_place: Option<InPlace>,
    stuck: Option<Stuck>,
    scratch: Vec<u8>,
    /// The loss mark last reported (see `loss_mark`).
    reported_losses: u64,
    /// The page of the last event handed out, to report losses at page
    /// boundaries.
    last_page: Option<u64>,
    /// The stuck page whose fixup was last refused for a full quarantine,
    /// so that each such page is counted once.
    refused: Option<(u64, usize)>,
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

/// What the reader found at its position.
enum Found {
    /// An event: (timestamp, payload in the reader's buffer as a range,
    /// where that is, the page it is on, the loss mark to report if it is
    /// the first event handed out from that page).
    Event(u64, std::ops::Range<usize>, Source, u64, u64),
    /// Nothing readable now.
    Empty,
}

/// The page at the reader's position.
enum Head {
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
enum Source {
    Taken,
    Scratch,
}

/// How long a reader waits for an overrunning claim to finish counting
/// before it reports the losses it can see (see `CpuBuffer::loss_mark`).
const LOSS_MARK_WAIT: Duration = Duration::from_millis(20);

/// The losses to report with an event from `page`, whose loss mark is
/// `mark`: those counted before the page was secured and not yet reported,
/// on the first event handed out from a page; nothing on the others.
/// Losses are reported at page boundaries because pages are lost whole and
/// oldest first, so a loss lies between the last page read and this one.
fn report_losses(st: &mut ReaderState, page: u64, mark: u64) -> u64 {
    if st.last_page == Some(page) {
        return 0;
    }
    st.last_page = Some(page);
    let lost = mark.saturating_sub(st.reported_losses);
    st.reported_losses = st.reported_losses.max(mark);
    lost
}

/// How long a closed page may wait for its last commit before the reader
/// takes it out of the ring (a writer vanished between reserve and commit).
pub const DEFAULT_FIXUP_AFTER: Duration = Duration::from_millis(500);

impl CpuBuffer {
    /// Consumes the next event of this CPU buffer, if one is readable.
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// ring.write_on(0, b"abc").unwrap();
    /// let ev = ring.cpu_buffer(0).unwrap().read_event().unwrap();
    /// assert_eq!(ev.payload, b"abc");
    /// assert!(ring.cpu_buffer(0).unwrap().read_event().is_none());
    /// ```
    pub fn read_event(&self) -> Option<Event> {
        self.read_event_with(|ts, payload, lost_before| Event {
            cpu: self.cpu,
            ts,
            payload: payload.to_vec(),
            lost_before,
        })
    }

    /// Consumes the next event and hands it to `f` as (timestamp, payload,
    /// events lost just before it) without allocating.
    pub fn read_event_with<R>(&self, f: impl FnOnce(u64, &[u8], u64) -> R) -> Option<R> {
        let mut st = self.reader.lock();
        match self.next_event(&mut st, true) {
            Found::Empty => None,
            Found::Event(ts, range, source, page, mark) => {
                let lost = report_losses(&mut st, page, mark);
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
    /// let ts = ring.write_on(0, b"abc").unwrap();
    /// let b = ring.cpu_buffer(0).unwrap();
    /// assert_eq!(b.peek_timestamp(), Some(ts));
    /// assert_eq!(b.read_event().unwrap().ts, ts); // still there
    /// assert_eq!(b.peek_timestamp(), None);
    /// ```
    pub fn peek_timestamp(&self) -> Option<u64> {
        let mut st = self.reader.lock();
        match self.next_event(&mut st, false) {
            Found::Empty => None,
            Found::Event(ts, ..) => Some(ts),
        }
    }

    /// Consumes a whole page: the oldest complete page, swapped out of the
    /// ring, or what is left of a page already being read by event. `None`
    /// when no complete page is ready; [`flush`](CpuBuffer::flush) closes the
    /// open page early.
    pub fn read_page(&self) -> Option<PageBuf> {
        let mut st = self.reader.lock();
        if st.taken.is_none() {
            self.take_complete_page(&mut st);
        }
        let taken = st.taken.take()?;
        self.note_reader_page(None);
        RareCounters::bump(&self.rare.read, u64::from(taken.remaining));
        // The rest of a page already read by event reports nothing: its
        // losses came with its first event, and those since lie after it.
        let lost = report_losses(&mut st, taken.seq, taken.loss_mark);
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
            cpu: self.cpu,
            bytes,
        })
    }

    /// Takes the oldest closed page that is waiting for a commit out of the
    /// ring now, instead of after the bounded wait: its committed, unread
    /// events are counted as lost, and later commits to it as well. The
    /// page is quarantined until those commits land (see
    /// [`RingConfig::quarantine_pages`](crate::RingConfig::quarantine_pages)).
    /// Returns whether a page was taken: false when none is stuck, and also
    /// when the quarantine is full, which
    /// [`Stats::fixups_refused`](crate::Stats::fixups_refused) counts.
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// std::mem::forget(ring.reserve_on(0, 8).unwrap()); // its writer dies
    /// for i in 0..20u64 {
    ///     ring.write_on(0, &i.to_le_bytes()).unwrap(); // the page closes
    /// }
    /// let b = ring.cpu_buffer(0).unwrap();
    /// assert!(b.fixup());
    /// let next = b.read_event().unwrap();
    /// assert_eq!(next.lost_before, 17); // the dead writer's page-mates
    /// let s = ring.stats();
    /// assert_eq!((s.pages_quarantined, s.hit), (1, s.accounted()));
    /// ```
    pub fn fixup(&self) -> bool {
        let mut st = self.reader.lock();
        self.skip_overwritten(&mut st);
        let seq = st.seq;
        let slot = Slot::unpack(self.slot_of(seq).load(Ordering::Acquire));
        if slot.gen != gen_of(seq, self.pages()) || !self.is_closed(seq) {
            return false;
        }
        let commit = Commit::unpack(self.commits[slot.phys].word.load(Ordering::Acquire));
        if commit.opening || commit.bytes == self.page_size() {
            // Complete (nothing to fix), or being claimed for the next lap,
            // which only a complete page can be.
            return false;
        }
        self.reclaim(&mut st, seq, slot)
    }

    /// This buffer's counters; `entries` is computed under the reader lock.
    pub fn stats(&self) -> Stats {
        let mut st = self.reader.lock();
        // So that `pages_quarantined` does not count pages whose late
        // commit has landed.
        self.recycle_quarantine(&mut st);
        let rare = &self.rare;
        // Relaxed: statistics; see RareCounters::bump.
        Stats {
            hit: self.hits(),
            missed: rare.missed.load(Ordering::Relaxed),
            busy: rare.busy.load(Ordering::Relaxed),
            too_large: rare.too_large.load(Ordering::Relaxed),
            overrun: rare.overrun.load(Ordering::Relaxed),
            read: rare.read.load(Ordering::Relaxed),
            entries: self.entries(&st),
            discarded: rare.discarded.load(Ordering::Relaxed),
            lost: rare.lost.load(Ordering::Relaxed),
            ts_fixups: rare.ts_fixups.load(Ordering::Relaxed),
            pages_reclaimed: rare.pages_reclaimed.load(Ordering::Relaxed),
            pages_quarantined: st.quarantine.len() as u64,
            fixups_refused: rare.fixups_refused.load(Ordering::Relaxed),
        }
    }

    /// `hit`: the hot line's count plus every page's `hits` (see
    /// [`crate::meta::CommitLine`]). Relaxed: a statistic, exact when no
    /// writer is active.
    fn hits(&self) -> u64 {
        self.commits
            .iter()
            .map(|line| line.hits.load(Ordering::Relaxed))
            .fold(self.hot.hit.load(Ordering::Relaxed), u64::wrapping_add)
    }

    /// Committed events not yet consumed: exact when no writer is active.
    fn entries(&self, st: &ReaderState) -> u64 {
        let (write, _) = self.hot.state.load(Ordering::Acquire);
        let tail = self.tail_seq(write);
        let n = self.pages() as u64;
        let first = st.seq.max(tail.saturating_sub(n - 1));
        let mut entries = st.taken.as_ref().map_or(0, |t| u64::from(t.remaining));
        let taken_seq = st.taken.as_ref().map(|t| t.seq);
        for seq in first..=tail {
            if Some(seq) == taken_seq {
                continue;
            }
            let slot = Slot::unpack(self.slot_of(seq).load(Ordering::Acquire));
            if slot.gen != gen_of(seq, self.pages()) {
                continue;
            }
            let commit = Commit::unpack(self.commits[slot.phys].word.load(Ordering::Acquire));
            if commit.opening || commit.tag != tag_of(slot.gen) {
                continue;
            }
            entries += u64::from(commit.events.saturating_sub(slot.consumed));
        }
        entries
    }

    /// The buffer's losses (overrun and lost) as counted now, for a reader
    /// about to secure page `X` (take it, or consume its first event in
    /// place) by a CAS on `X`'s slot word that it read before this call.
    ///
    /// If that CAS succeeds, the mark is exactly the losses of pages before
    /// `X`:
    ///
    /// - None after `X`: pages are overwritten in order, and `X` was not
    ///   overwritten before the CAS, so no page after it was before this
    ///   call either. (A late commit to a page taken out by a fixup is
    ///   counted when it lands: at the next page boundary after that.)
    /// - Every one before `X`: the reader reached `X` past those pages by
    ///   seeing their slots (or `state`) moved on by overrunning claims,
    ///   whose `overrun_claims_started` bump it therefore sees. It waits
    ///   until `done` (loaded first, Acquire) equals `started` (loaded last,
    ///   Acquire): then every claim it could have seen has finished, and
    ///   `done`'s Acquire makes their `overrun` bumps visible to the loads in
    ///   between. Each claim bumps `started` before `done`, so the equality
    ///   cannot come from claims that started after the `done` load.
    ///
    /// A claimer preempted inside its bracket is waited for a bounded time
    /// (the reader waits, writers never do); past it the mark is taken as
    /// it stands and that claim's loss is reported on the next page.
    fn loss_mark(&self) -> u64 {
        let rare = &self.rare;
        let deadline = Instant::now() + LOSS_MARK_WAIT;
        let mut spins = 0u32;
        loop {
            let done = rare.overrun_claims_done.load(Ordering::Acquire);
            let total = rare.overrun.load(Ordering::Acquire) + rare.lost.load(Ordering::Acquire);
            let started = rare.overrun_claims_started.load(Ordering::Acquire);
            if started == done {
                return total;
            }
            spins += 1;
            if spins >= 64 && !cfg!(loom) && Instant::now() >= deadline {
                return total;
            }
            crate::sync::spin_wait(spins);
        }
    }

    /// Whether the state has moved past page `seq` (it is closed).
    fn is_closed(&self, seq: u64) -> bool {
        let (write, _) = self.hot.state.load(Ordering::Acquire);
        write >> self.geometry.page_shift() > seq
    }

    /// Moves `st.seq` past pages writers have overwritten (their events
    /// were counted as overrun when they were claimed).
    fn skip_overwritten(&self, st: &mut ReaderState) {
        let (write, _) = self.hot.state.load(Ordering::Acquire);
        let tail = self.tail_seq(write);
        let oldest = tail.saturating_sub(self.pages() as u64 - 1);
        if st.seq < oldest {
            st.seq = oldest;
            st.in_place = None;
            st.stuck = None;
        }
    }

    /// What the page at the reader's position is now, after skipping pages
    /// writers overwrote (their events were counted as overrun then).
    fn head_page(&self, st: &mut ReaderState) -> Head {
        loop {
            self.skip_overwritten(st);
            let seq = st.seq;
            let want = gen_of(seq, self.pages());
            // Acquire: pairs with the Release CAS that last moved the slot
            // (a claim, a take, a fixup), so the commit word loaded next is
            // at least as new as the page that CAS put there, and a claim's
            // `overrun_claims_started` bump is seen (loss_mark).
            let slot = Slot::unpack(self.slot_of(seq).load(Ordering::Acquire));
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
            let commit = Commit::unpack(self.commits[slot.phys].word.load(Ordering::Acquire));
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
                let slot_word = self.slot_of(seq);
                if slot_word.load(Ordering::Acquire) == word {
                    self.claim_slot(slot_word, word, commit);
                }
                continue;
            }
            if commit.bytes == self.page_size() && commit.tag == tag_of(want) {
                return Head::Complete(seq, slot, commit);
            }
            if self.is_closed(seq) {
                return Head::Stuck(seq, slot); // a commit is outstanding
            }
            return Head::Open(seq, slot);
        }
    }

    /// The next event; consumed only if `consume` (a peek otherwise: the
    /// reader may still take pages and skip overwritten ones, which consumes
    /// nothing).
    fn next_event(&self, st: &mut ReaderState, consume: bool) -> Found {
        loop {
            if let Some(found) = self.next_from_taken(st, consume) {
                return found;
            }
            match self.head_page(st) {
                Head::NotOpened => return Found::Empty,
                // Taken or not (the slot changed under us), look again.
                Head::Complete(seq, slot, commit) => {
                    self.take(st, seq, slot, commit);
                }
                Head::Stuck(seq, slot) => {
                    if !self.wait_or_fixup(st, seq, slot) {
                        return Found::Empty;
                    }
                }
                Head::Open(seq, slot) => return self.next_in_place(st, seq, slot, consume),
            }
        }
    }

    /// The next event of the taken page; `None` when there is no taken page
    /// or it is used up (then it goes back to the free list).
    fn next_from_taken(&self, st: &mut ReaderState, consume: bool) -> Option<Found> {
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
                        RareCounters::bump(&self.rare.read, 1);
                        self.note_reader_page(Some(taken));
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
                        RareCounters::bump(&self.rare.lost, u64::from(taken.remaining));
                    }
                    let (phys, seq) = (taken.phys, taken.seq);
                    st.taken = None;
                    self.note_reader_page(None);
                    st.free.push(phys);
                    // Never back: a fixup may have moved past meanwhile.
                    st.seq = st.seq.max(seq + 1);
                    return None;
                }
            }
        }
    }

    /// Finds the oldest complete page and takes it.
    fn take_complete_page(&self, st: &mut ReaderState) {
        loop {
            match self.head_page(st) {
                Head::Complete(seq, slot, commit) => {
                    if self.take(st, seq, slot, commit) {
                        return;
                    }
                }
                Head::Stuck(seq, slot) if self.wait_or_fixup(st, seq, slot) => {}
                _ => return,
            }
        }
    }

    /// Puts one of the reader's free pages into `seq`'s slot in place of
    /// `slot.phys`, complete and empty, so writers claim it like any page
    /// that was read. Returns false (and keeps the spare) if the slot
    /// changed meanwhile or the reader has no spare.
    fn swap_in_spare(&self, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
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
        fence(Ordering::Release);
        // The spare still holds the bytes of the page it was: make it an
        // empty page, so that nothing (an iterator, a reader that comes back
        // to this slot) decodes those as events. Nobody else writes it: it
        // is in no slot. Relaxed: published by the Release below.
        self.words.store_page_header(spare, seq, 0);
        self.words.store(
            spare,
            PAGE_HEADER,
            format::record_header(format::TYPE_PADDING, 0),
        );
        // Release; the slot CAS below publishes it too (verification.md, W17).
        self.commits[spare].word.store(
            Commit::complete(slot.gen, self.page_size(), 0, true).pack(),
            Ordering::Release,
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
        let swapped = self
            .slot_of(seq)
            .compare_exchange(
                slot.pack(),
                swapped.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if !swapped {
            st.free.push(spare);
        }
        swapped
    }

    /// Swaps a free page of the reader's into the slot of complete page
    /// `seq` and takes the full one. Returns false if the slot changed.
    fn take(&self, st: &mut ReaderState, seq: u64, slot: Slot, commit: Commit) -> bool {
        // Before the swap, so that nothing overwritten after this page is in
        // it (see loss_mark).
        let loss_mark = self.loss_mark();
        if !self.swap_in_spare(st, seq, slot) {
            return false;
        }
        let mut bytes = Vec::new();
        self.words
            .read_into(slot.phys, 0, self.page_size(), &mut bytes);
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
        self.note_reader_page(st.taken.as_ref());
        true
    }

    /// Records the page the reader holds out of the ring, and how far it
    /// has got, where a recovered file finds it (`RareCounters::
    /// reader_page`). Relaxed: only read after the process is gone, or by
    /// a live dump that checks it did not change while it read the page.
    fn note_reader_page(&self, taken: Option<&Taken>) {
        let word = taken.map_or(0, |t| {
            (t.phys as u64 + 1) | (u64::from(t.events.saturating_sub(t.remaining)) << 32)
        });
        self.rare.reader_page.store(word, Ordering::Relaxed);
    }

    /// Reads the next event of the open page `seq` in place.
    fn next_in_place(&self, st: &mut ReaderState, seq: u64, slot: Slot, consume: bool) -> Found {
        let page_size = self.page_size();
        let shift = self.geometry.page_shift();
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
        let c1 = self.commits[slot.phys].word.load(Ordering::Acquire);
        let (write, _) = self.hot.state.load(Ordering::Acquire);
        let c2 = self.commits[slot.phys].word.load(Ordering::Acquire);
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
            let base_ts = u64::from(self.words.load(slot.phys, format::header::BASE_TS))
                | (u64::from(self.words.load(slot.phys, format::header::BASE_TS + 4)) << 32);
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
        for off in (ip.copied..frontier).step_by(4) {
            let w = self.words.load(slot.phys, off).to_le_bytes();
            st.scratch[off..off + 4].copy_from_slice(&w);
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
                        fence(Ordering::Acquire);
                        if self.slot_of(seq).load(Ordering::Relaxed) != slot.pack() {
                            st.in_place = None;
                            return Found::Empty;
                        }
                        return Found::Event(ts, range, Source::Scratch, seq, 0);
                    }
                    // The first event handed out from this page reports the
                    // losses before it: marked before the CAS that secures
                    // it (see loss_mark).
                    let mark = if first_of_page { self.loss_mark() } else { 0 };
                    // Seqlock validation: our copies happen before this
                    // fence; a writer reusing the page fenced with Release
                    // after claiming it, so if we copied any of its bytes the
                    // CAS below sees its claim and fails.
                    fence(Ordering::Acquire);
                    let after = Slot {
                        consumed: slot.consumed + 1,
                        ..slot
                    };
                    let slot_word = self.slot_of(seq);
                    if slot_word
                        .compare_exchange(
                            slot.pack(),
                            after.pack(),
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_err()
                    {
                        // Overwritten (or taken) meanwhile: the writer that
                        // claimed it counted this event as overrun.
                        st.in_place = None;
                        return Found::Empty;
                    }
                    ip.pos = cursor.position();
                    ip.ts = cursor.timestamp();
                    ip.passed += 1;
                    RareCounters::bump(&self.rare.read, 1);
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

    /// A closed page is missing a commit. Waits (returns false) until the
    /// bound passes, then takes the page out. Returns true if it did.
    fn wait_or_fixup(&self, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
        let Some(bound) = self.geometry.fixup_after else {
            return false;
        };
        let now = Instant::now();
        match st.stuck {
            Some(s) if s.seq == seq && s.phys == slot.phys => {
                if now.duration_since(s.since) < bound {
                    return false;
                }
            }
            _ => {
                st.stuck = Some(Stuck {
                    seq,
                    phys: slot.phys,
                    since: now,
                });
                return false;
            }
        }
        self.reclaim(st, seq, slot)
    }

    /// Replaces the stuck page in `seq`'s slot with a free page, counts its
    /// unread committed events as lost and marks it RECLAIMED so that late
    /// commits count themselves. The stuck page is quarantined until every
    /// byte of it is committed, then reused.
    fn reclaim(&self, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
        // Keep one page back for swaps; without a second, no fixup. Pages
        // whose late commits have all landed are free again first, whatever
        // way the reader reads (by event, by page or only by fixups).
        self.recycle_quarantine(st);
        if st.free.len() < 2 {
            // The quarantine is full: dead writers hold every page it had.
            // Counted once per stuck page; the reader waits here.
            if st.refused != Some((seq, slot.phys)) {
                st.refused = Some((seq, slot.phys));
                RareCounters::bump(&self.rare.fixups_refused, 1);
            }
            return false;
        }
        if !self.swap_in_spare(st, seq, slot) {
            return false;
        }
        let before =
            Commit::unpack(self.mark_commit(&self.commits[slot.phys].word, crate::meta::RECLAIMED));
        let lost = before.events.saturating_sub(slot.consumed);
        RareCounters::bump(&self.rare.lost, u64::from(lost));
        RareCounters::bump(&self.rare.pages_reclaimed, 1);
        if before.opening || before.bytes == self.page_size() {
            // It completed after we looked (and may even have been claimed
            // for the next lap, a claim our swap has made fail): no commit
            // can come to it any more, so it is free now. Quarantined, an
            // opening page would never complete and never leave.
            st.free.push(slot.phys);
        } else {
            st.quarantine.push(slot.phys);
        }
        st.in_place = None;
        st.stuck = None;
        st.seq = seq + 1;
        true
    }

    /// Quarantined pages whose last commit has landed can be reused.
    fn recycle_quarantine(&self, st: &mut ReaderState) {
        if st.quarantine.is_empty() {
            return;
        }
        let page_size = self.page_size();
        let commits = &self.commits;
        let (done, waiting): (Vec<usize>, Vec<usize>) = st.quarantine.iter().partition(|&&p| {
            Commit::unpack(commits[p].word.load(Ordering::Acquire)).bytes == page_size
        });
        if !done.is_empty() {
            st.free.extend(done);
            st.quarantine = waiting;
        }
    }
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

impl ReaderState {
    /// A copy of the taken page for an iterator: (seq, bytes, pos, ts, skip).
    pub(crate) fn taken_copy(&self) -> Option<(u64, Vec<u8>, usize, u64, u32)> {
        self.taken
            .as_ref()
            .map(|t| (t.seq, t.bytes.clone(), t.pos, t.ts, t.skip))
    }

    /// The next page the reader will consume.
    pub(crate) fn position(&self) -> u64 {
        self.seq
    }
}
