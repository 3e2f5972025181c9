//! The rseq path's fast way into the ring, for a ring whose clock is a
//! bare rdtsc: a whole event in one call, taken by
//! [`RingBuffer::write`](crate::RingBuffer::write) (and
//! [`CpuWriter::write`](crate::CpuWriter::write)), and the reserve that
//! [`RingBuffer::reserve`](crate::RingBuffer::reserve)
//! (and [`CpuWriter::reserve`](crate::CpuWriter::reserve)) hand a
//! `Reservation` from.
//!
//! Both are `write::reserve::reserve`'s fast path (steps A to F there), with
//! everything they read taken from the buffer's fast line
//! ([`crate::rseq::FastLine`]): one claim (steps A to E), then either the
//! payload copy and the commit with the payload known at the start (so
//! nothing between reserve and commit has to be kept), or the PENDING
//! header and a `Reservation`. They take only the common case (an event
//! that fits the open page, the clock not behind, the delta within the
//! header) and hand everything else, including a reserve section that
//! did not commit, to the general path, which re-checks everything; they
//! never retry themselves, so that no register is kept for a retry.

use super::error::ReserveError;
use super::percpu::add_to_line_rare;
use crate::format;
use crate::order;
use crate::page::meta;
use crate::rseq::section::{self, Outcome};
use crate::rseq::FastLine;
use crate::shared::SharedState;
use crate::sync::AtomicU32;
use ringtrace_clock::Clock;

/// Why the whole-event path did not write the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Not its case, or the state moved: the general path writes it.
    General,
    /// The kernel aborted the reserve section: the caller counts the abort
    /// (see `section::count_abort`) and the general path writes it.
    Aborted,
}

/// Marks the branch it is on as rare, so that the fast path is laid out
/// straight (`std::hint::cold_path` is newer than this crate's MSRV): a
/// call to a cold function is what LLVM weighs branches by, and inlined
/// it leaves no code.
#[cold]
#[inline(always)]
fn cold_path() {}

/// A record claimed on a page, not yet written: by the reserve section on
/// the open page (steps A to E of [`CpuBuffer::claim_whole`]) or by the
/// general loop (`write::whole::reserve_placed`).
///
/// The record's address rather than its words: the caller makes the words
/// from its own `len` ([`Claimed::words`]), which the compiler knows, so
/// that where a fast claim and a general one meet, the record's size and
/// the payload's layout still fold to constants for a constant length.
pub(crate) struct Claimed<'a> {
    /// The record's first word (its header), from the page's words (the
    /// address keeps their provenance); `format::event_size(len) / 4`
    /// words from here are the record's, and ours until its commit.
    pub(crate) record: *const AtomicU32,
    /// The page's commit word and hits.
    pub(crate) commit: &'a meta::CommitLine,
    /// The header the commit stores (without PENDING).
    pub(crate) header: u32,
    /// The event's time.
    pub(crate) ts: u64,
}

impl<'a> Claimed<'a> {
    /// The record's words: header, a long event's length, the payload.
    ///
    /// # Safety
    /// `len` is the payload length the record was claimed for.
    #[inline(always)]
    pub(crate) unsafe fn words(&self, len: usize) -> &'a [AtomicU32] {
        // SAFETY: a claim for `len` (the contract) is `event_size(len)`
        // bytes of one page, 4-aligned, live as the buffer is ('a) and
        // ours since the claim; the page's words are atomics, which is
        // what a concurrent iterator copying them reads.
        unsafe { core::slice::from_raw_parts(self.record, format::event_size(len) / 4) }
    }
}

/// Claims room for a payload of `len` bytes on the open page, stamped
/// by `clock`, or says why it did not (nothing was claimed then).
///
/// The steps, as in `write::reserve::reserve`:
///
/// - A: the state's two words by two plain loads, a guess that D checks.
/// - B: read the clock (after A: see `reserve`, B).
/// - C: the open page from the fast line's entry, `(first, phys)`, one
///   16-byte load. The event fits the open page if `rel = write -
///   first` is above 0 (a state at a page's first byte has not opened
///   it) and `rel + size <= page_size`, in wrapping arithmetic: an
///   entry of an older page leaves `rel` a page or more, one of a newer
///   page wraps it past 2^63, and an empty entry is out of range of
///   every offset (`fast_line::NO_OPEN_PAGE`). The clock must not be
///   behind `last_ts` and the delta must fit the header.
/// - D: the reserve section: on the buffer's CPU with the gate open,
///   `state` still equal to the guess, store the new pair. If it
///   commits, the state held `write` (inside page `first`) until now,
///   so that page is open and `phys` is its physical page (an entry is
///   right for its page whenever a state is inside it: see
///   `FastLine::open`), and the record's bytes are ours.
/// - E: the record's and commit line's addresses from `phys` (after D:
///   no register holds them across the section). The Release fence is
///   `reserve`'s, for an iterator copying the page (a compiler barrier
///   on x86_64).
///
/// Step F, the stores and the commit, is the caller's: `write_whole`
/// makes the whole event; `reserve_whole` stores the record's first
/// words and the ring hands out a `Reservation` of it.
///
/// `line` is this buffer's fast line, on the rseq path (the ring checked
/// the path once, when it chose it).
#[inline(always)]
pub(super) fn claim_whole<'a, C: Clock + Copy>(
    s: &'a SharedState,
    line: &FastLine,
    clock: C,
    len: usize,
) -> Result<Claimed<'a>, Miss> {
    debug_assert!(line.rseq_offset() != 0 && std::ptr::eq(line, s.path().line()));
    // No page holds an event this long (MAX_PAGE_SIZE); below it the
    // size cannot overflow. (On `len` itself, so that a constant length
    // folds the test away.)
    if len >= crate::config::MAX_PAGE_SIZE {
        cold_path();
        return Err(Miss::General);
    }
    let size = format::event_size(len) as u64;
    // A
    // SAFETY: the line's state is this buffer's live, 16-aligned pair.
    let (write, last_ts) = unsafe { section::load_halves(line.state()) };
    // B
    let now = clock.read();
    // C
    // SAFETY: this buffer's live fast line.
    let (first, phys) = unsafe { section::load_open(line) };
    let rel = write.wrapping_sub(first);
    let (delta, behind) = now.overflowing_sub(last_ts);
    if rel == 0 || rel.wrapping_add(size) > line.page_size() || behind || delta > format::MAX_DELTA
    {
        // Every page switch, a clock behind, a long gap: rare, and laid
        // out away from the fast path.
        cold_path();
        return Err(Miss::General);
    }
    // D
    // SAFETY: SSE2, which every x86_64 CPU has.
    let new =
        unsafe { core::arch::x86_64::_mm_set_epi64x(now as i64, write.wrapping_add(size) as i64) };
    // SAFETY: `line` is this buffer's fast line on the rseq path (see
    // `section::cas_state`; AVX was checked when the path was chosen).
    match unsafe { section::cas_state(line, write, last_ts, new) } {
        Outcome::Done => {}
        Outcome::Aborted => {
            cold_path();
            return Err(Miss::Aborted);
        }
        _ => {
            cold_path();
            return Err(Miss::General);
        }
    }
    // The event's time, `now`, made again from what the header needs
    // anyway, so that `now` itself is not kept across the section.
    let ts = section::opaque(last_ts).wrapping_add(delta);
    // E
    // SAFETY: `phys` is the open page's physical page (D), one of this
    // buffer's, and `rel` is inside it (C).
    let (record, commit) = unsafe { section::locate(line, phys, rel) };
    order::STEP_E_FENCE.place();
    // SAFETY: a live commit line of this buffer (D), so not null: said
    // to the compiler, which otherwise tests it where the `Result`
    // around `Claimed` is matched (a null `commit` is its `Err`).
    let commit = unsafe {
        core::hint::assert_unchecked(!commit.is_null());
        &*commit
    };
    // The record's `size` bytes are in page `phys` (C), 4-aligned (every
    // record's size and the page header's are multiples of 4), and ours
    // since D: what `Claimed::words` needs.
    Ok(Claimed {
        record: record.cast(),
        commit,
        header: crate::write::reserve::event_header(len, delta),
        ts,
    })
}

/// Writes `payload` as one event stamped by `clock` and returns its
/// time, or says why it did not (nothing was written then).
///
/// Steps A to E are [`claim_whole`](Self::claim_whole)'s; F: the header
/// with PENDING, the payload, the header (Release each, for a crash, as
/// in `reserve` and `Reservation::commit`), then the commit section:
/// the commit word and the page's hits in one store, refused on a page
/// out of its slot (RECLAIMED, STEPPED), whose late commit the rare path
/// counts as lost or overrun.
#[inline(always)]
pub(crate) fn write_whole<C: Clock + Copy>(
    s: &SharedState,
    line: &FastLine,
    clock: C,
    payload: &[u8],
) -> Result<u64, Miss> {
    let len = payload.len();
    let claimed = claim_whole(s, line, clock, len)?;
    // SAFETY: claimed for `len`.
    let words = unsafe { claimed.words(len) };
    let Claimed {
        commit, header, ts, ..
    } = claimed;
    // F
    let size = (words.len() * 4) as u64;
    let body = crate::write::reservation::store_pending(words, len, header);
    crate::write::reservation::store_bytes(body, payload);
    if let Some(head) = words.first() {
        // Release, for a crash, as in `Reservation::commit`: after the
        // payload in program order and for the compiler.
        head.store(header, order::RECORD_HEADER);
    }
    let add = size + meta::ONE_EVENT;
    // SAFETY: as for `write::percpu::add_to_line`'s section.
    let outcome = unsafe { section::add_pair_unless(line, commit, add, 1, meta::LATE) };
    if outcome != Outcome::Done {
        cold_path();
        // In tail position, `now` passed through: nothing stays live
        // across the call.
        return Ok(commit_whole_rare(s, outcome, commit, add, ts));
    }
    Ok(ts)
}

/// Claims room for a payload of `len` bytes stamped by `clock`, or
/// says why it did not (nothing was claimed then): `reserve`'s fast
/// path on the rseq path, steps A to E as
/// [`claim_whole`](Self::claim_whole) makes them and F's first half
/// (a long event's length word, then the PENDING header, as in
/// `reserve`). The ring makes the `Reservation` (`RingBuffer::reserve_in`),
/// whose writes and `Reservation::commit` end F.
#[inline(always)]
pub(crate) fn reserve_whole<'a, C: Clock + Copy>(
    s: &'a SharedState,
    line: &FastLine,
    clock: C,
    len: usize,
) -> Result<Claimed<'a>, Miss> {
    let claimed = claim_whole(s, line, clock, len)?;
    // SAFETY: claimed for `len`.
    let words = unsafe { claimed.words(len) };
    crate::write::reservation::store_pending(words, len, claimed.header);
    Ok(claimed)
}

/// The commit of a whole event whose section did not commit: the rare
/// path of `add_to_line`, and a late commit to a reclaimed page counts
/// its event as lost (as `Reservation::commit` does). Returns `ts`.
#[cold]
#[inline(never)]
pub(super) fn commit_whole_rare(
    s: &SharedState,
    outcome: Outcome,
    commit: &meta::CommitLine,
    add: u64,
    ts: u64,
) -> u64 {
    if add_to_line_rare(s, outcome, commit, add, 1) {
        crate::page::counters::RareCounters::bump(&s.rare().lost, 1);
    }
    ts
}

#[cfg(ringtrace_rseq)]
#[inline(always)]
pub(crate) fn reserve_placed<C: Clock + Copy>(
    s: &SharedState,
    clock: C,
    len: usize,
) -> Result<Claimed<'_>, ReserveError> {
    let p = crate::write::reserve::reserve_slow(s, clock, len);
    if p.is_failed() {
        return Err(crate::write::reserve::reserve_error(s, &p, len));
    }
    let (record, commit, header, ts) = crate::write::reserve::placed_parts(s, &p, len);
    // `placed_parts` made the record's `event_size(len) / 4` words.
    Ok(Claimed {
        record: record.as_ptr(),
        commit,
        header,
        ts,
    })
}
