//! The reserve: steps A to F of a writer's way into the ring, the fast
//! path and the general loop.

use super::claim::{current_phys, open_page, pad_tail, prepare_page, write_prefix, PrepareError};
use super::error::ReserveError;
use super::percpu::{cas_state, guess_state, keeps_hints};
use super::reservation::Reservation;
use crate::format::{self, TimePrefix, PAGE_HEADER};
use crate::order;
use crate::page::counters::RareCounters;
use crate::shared::SharedState;
use crate::sync::{AtomicU32, Ordering};
use ringtrace_clock::Clock;

/// Where the general reserve loop put an event and what its commit will
/// write, in two words so that it comes back in registers (rax:rdx). A
/// larger struct, or the `Result<Reservation, _>` itself, would be copied
/// through the stack where the fast and slow paths join, and reloading it
/// defeats store-to-load forwarding. The fast path never builds one: it
/// resolves the record's words before its CAS.
///
/// `head`: bits 0..16 physical page, 16..32 byte offset of the event header,
/// 32..64 the event header word the commit stores. `ts`: the event's time.
/// A long event's length word is written at reserve time, and so is any
/// time prefix (also committed then), so the commit needs nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    head: u64,
    pub ts: u64,
}

impl Placement {
    /// A failed reservation: `ts` holds a `FAIL_*` code.
    const FAILED: u64 = u64::MAX;

    #[inline(always)]
    fn new(phys: usize, event_at: usize, header: u32, ts: u64) -> Self {
        Placement {
            head: phys as u64 | ((event_at as u64) << 16) | (u64::from(header) << 32),
            ts,
        }
    }

    #[inline(always)]
    fn failed(code: u64) -> Self {
        Placement {
            head: Self::FAILED,
            ts: code,
        }
    }

    #[inline(always)]
    pub(crate) fn is_failed(&self) -> bool {
        self.head == Self::FAILED
    }

    #[inline(always)]
    pub(crate) fn phys(&self) -> usize {
        (self.head & 0xFFFF) as usize
    }

    #[inline(always)]
    pub(crate) fn event_at(&self) -> usize {
        ((self.head >> 16) & 0xFFFF) as usize
    }

    #[inline(always)]
    pub(crate) fn header(&self) -> u32 {
        (self.head >> 32) as u32
    }
}

/// `Placement::failed` codes.
const FAIL_FULL: u64 = 0;
const FAIL_BUSY: u64 = 1;
const FAIL_TOO_LARGE: u64 = 2;
const FAIL_PREPARING: u64 = 3;

/// The event header for a payload of `len` bytes with time delta `delta`.
#[inline(always)]
pub(super) fn event_header(len: usize, delta: u64) -> u32 {
    if format::is_short(len) {
        format::record_header((len / 4) as u32, delta)
    } else {
        format::record_header(format::TYPE_DATA_LONG, delta)
    }
}

/// Reserves room for `len` payload bytes, stamped by `clock`.
///
/// The steps, and what holds between them:
///
/// - A: take a guess at `state`: two plain loads, of the hints on the
///   CAS path, of the state's own two words on the rseq path (see
///   [`crate::rseq`]), where nothing else keeps the hints fresh.
/// - B: read the clock. If the CAS at D succeeds, `state` held the guess
///   from before A until D (the write offset only grows, so it cannot
///   have left and come back), so the clock was read while this writer's
///   position was the next one: no other record can fall between the
///   previous record's time and ours.
/// - C: work out the record: time `max(clock, last_ts)` (a backward step
///   of the clock, or a writer on another CPU with a skewed clock, is
///   raised and counted in `ts_fixups`), its delta from `last_ts` and
///   any TIME_EXTEND it needs; whether it fits this page or needs the
///   next. A next page is made ready here, before D, so that by the
///   time any writer can reserve in it the slot names it and its commit
///   word counts from zero (`prepare_page`).
/// - D: CAS `state` from the guess to (end of our record, our time).
///   Failure returns the true state: back to B with it. On the CAS path
///   a `lock cmpxchg16b`; on the rseq path a section on the buffer's
///   CPU that compares both words with the guess and ends in one
///   16-byte store of the new pair, which the kernel restarts if
///   anything else ran on the CPU in between (a preempting writer, a
///   signal handler that writes): a compare-and-swap by other means,
///   with the same failure, so B to F hold as written
///   (`write::percpu::cas_state`; off the CPU, a remote update).
/// - E: the space is ours. Refresh the hints (CAS path). If we moved
///   to a new page: pad the old page's tail and commit the padding, and
///   write and commit the new page's header.
/// - F: hand out the reservation; the caller writes the payload and
///   commits, in any order relative to other writers; the commit adds
///   to the page's commit word and counts the hit (two locked adds, or
///   two sections on the CPU). On the fast path the record's words and
///   commit word were resolved before D, because the locked CAS is a
///   full barrier on x86_64: a load after it waits for it, and it waits
///   for the clock read. Resolving them first keeps those loads out of
///   the barrier's shadow (docs/design.md, "Performance, and what is
///   left").
///
/// Between D and commit, a signal handler on this thread may reserve and
/// commit (its CAS sees our new state), and another thread may too: the
/// page only becomes complete when every byte is committed.
#[inline(always)]
pub(crate) fn reserve<C: Clock + Copy>(
    s: &SharedState,
    clock: C,
    len: usize,
) -> Result<Reservation<'_>, ReserveError> {
    // The common case, steps A to F with every rare branch taken out:
    // the event fits the open page, the clock has not gone back and the
    // delta fits the header. Anything else, or a lost CAS, goes to the
    // general loop below, which re-checks everything.
    let page_size = s.page_size() as u64;
    // A. Relaxed, on any CPU: only a guess, possibly stale or torn
    // across the two words; the CAS at D compares it with the true
    // state, and orders everything this writer does after D.
    let (write, last_ts) = guess_state(s);
    // B
    let now = clock.read();
    // C
    let pos = write & (page_size - 1);
    // A clock behind `last_ts` (stepped back, or wrapped past u64::MAX)
    // borrows: such a reading goes to the general loop, which raises
    // it to `last_ts` and counts the fixup. A wrapping difference alone
    // would take a wrap for a small step forward.
    let (delta, behind) = now.overflowing_sub(last_ts);
    let (record, commit_line, header, ts) = 'fast: {
        // A length of a page or more never fits, and is refused by the
        // general loop; below it the size cannot overflow. (Sized from
        // `len` itself, so that a constant length folds.)
        let size = if len < page_size as usize {
            format::event_size(len) as u64
        } else {
            u64::MAX
        };
        if size != u64::MAX
            && pos != 0
            && pos + size <= page_size
            && !behind
            && delta <= format::MAX_DELTA
        {
            // The open page from its cache entry only: on a miss the
            // general loop looks the slot up (a rare miss, and an
            // Option from a call here cost the fast path a merge).
            // Relaxed, as in current_phys.
            let open = s.hot().open_page.load(Ordering::Relaxed);
            if open >> 16 == write >> s.geometry().page_shift() {
                let phys = (open & 0xFFFF) as usize;
                // Resolved before D (see F): in the page, as checked.
                let record = s.words().words(phys, pos as usize, size as usize / 4);
                let commit_line = s.commit_line(phys);
                // D: AcqRel as in the general loop. Relaxed on failure:
                // the general loop starts again from a fresh guess.
                let new = (write + size, now);
                if cas_state(s, (write, last_ts), new).is_ok() {
                    // E (no page switch on this path). The Release fence
                    // is the seqlock's, as in the general loop: it orders
                    // the record's stores after D for an iterator that
                    // copies them (a compiler barrier on x86_64, `dmb
                    // ishst`-like on aarch64). The hints are guesses:
                    // Relaxed, as at A.
                    order::STEP_E_FENCE.place();
                    if keeps_hints(s) {
                        s.hot().write_hint.store(new.0, Ordering::Relaxed);
                        s.hot().ts_hint.store(now, Ordering::Relaxed);
                    }
                    // F: a long event's length word, then the PENDING
                    // header, the space being ours since D.
                    let header = event_header(len, delta);
                    crate::write::reservation::store_pending(record, len, header);
                    break 'fast (record, commit_line, header, now);
                }
            }
        }
        let p = reserve_slow(s, clock, len);
        if p.is_failed() {
            return Err(reserve_error(s, &p, len));
        }
        placed_parts(s, &p, len)
    };
    Ok(Reservation::new(s, record, commit_line, header, len, ts))
}

/// What a reservation is made of, for an event the general loop placed:
/// its record's words, its page's commit word, the header its commit
/// stores and its time.
#[inline(always)]
pub(super) fn placed_parts<'a>(
    s: &'a SharedState,
    p: &Placement,
    len: usize,
) -> (&'a [AtomicU32], &'a crate::page::meta::CommitLine, u32, u64) {
    // A placed event fits its page, so `len` is small here.
    (
        s.words()
            .words(p.phys(), p.event_at(), format::event_size(len) / 4),
        s.commit_line(p.phys()),
        p.header(),
        p.ts,
    )
}

/// The general loop's claim for a payload of `len` bytes, for the rseq
/// path's fast reserve when it misses (`write::whole::reserve_whole`): the
/// record placed (its length word and PENDING header stored, as
/// `place` does), or why not.
/// Reserves through the general loop only, skipping the fast path: the
/// property test that the two agree on every clock sequence uses it.
#[cfg(test)]
pub(crate) fn reserve_general<C: Clock + Copy>(
    s: &SharedState,
    clock: C,
    len: usize,
) -> Result<Reservation<'_>, ReserveError> {
    let p = reserve_slow(s, clock, len);
    if p.is_failed() {
        return Err(reserve_error(s, &p, len));
    }
    let (record, commit_line, header, ts) = placed_parts(s, &p, len);
    Ok(Reservation::new(s, record, commit_line, header, len, ts))
}

/// Builds the placement of an event at `event_at`, writing a long
/// event's length word now (the space is ours since step D).
#[inline(always)]
pub(super) fn place(
    s: &SharedState,
    phys: usize,
    event_at: usize,
    len: usize,
    delta: u64,
    ts: u64,
) -> Placement {
    if !format::is_short(len) {
        s.words().store(phys, event_at + 4, len as u32);
    }
    let header = event_header(len, delta);
    // Release: for a crash, after the length word (as on the fast path).
    s.words()
        .word(phys, event_at)
        .store(header | format::PENDING, order::RECORD_HEADER);
    Placement::new(phys, event_at, header, ts)
}

/// The general reserve loop: every case of steps A to F.
#[cold]
#[inline(never)]
pub(super) fn reserve_slow<C: Clock + Copy>(s: &SharedState, clock: C, len: usize) -> Placement {
    let page_size = s.page_size();
    if len > format::max_payload(page_size) {
        s.rare().refused(Some(&s.rare().too_large));
        return Placement::failed(FAIL_TOO_LARGE);
    }
    let shift = s.geometry().page_shift();
    let mask = page_size as u64 - 1;
    let body = format::event_size(len);

    // A: a guess (the hints, or on the rseq path the state's halves);
    // the CAS validates it.
    let mut expected = guess_state(s);
    loop {
        // B
        let now = clock.read();
        // C
        let (write, last_ts) = expected;
        let ts = now.max(last_ts);
        let seq = write >> shift;
        let pos = (write & mask) as usize;
        let (target_seq, at, prefix, delta, new_write) = if pos == 0 {
            // Page `seq` was never opened (start, or after a flush).
            let at = PAGE_HEADER;
            (
                seq,
                at,
                TimePrefix::None,
                0,
                (seq << shift) + (at + body) as u64,
            )
        } else {
            let delta = ts - last_ts;
            let prefix = TimePrefix::for_delta(delta, ts);
            let need = prefix.size() + body;
            if pos + need <= page_size {
                (seq, pos, prefix, delta, write + need as u64)
            } else {
                let next = seq + 1;
                let at = PAGE_HEADER;
                (
                    next,
                    at,
                    TimePrefix::None,
                    0,
                    (next << shift) + (at + body) as u64,
                )
            }
        };
        // The page this reservation closes, if it moves to the next
        // one: looked up before D, while the state is still inside it,
        // so that no fixup can have taken it (a fixup takes only closed
        // pages, and closing it is our CAS). Looked up after D, the slot
        // could already name the fixup's spare, and padding it would
        // wedge that slot for good.
        let closing = if target_seq != seq && pos != 0 {
            match current_phys(s, seq) {
                Some(phys) => Some(phys),
                None => {
                    expected = s.hot().state.load(order::STATE_RELOAD);
                    continue;
                }
            }
        } else {
            None
        };
        let phys = if target_seq == seq && pos != 0 {
            match current_phys(s, seq) {
                Some(phys) => phys,
                None => {
                    // The guess is stale: the page has moved on.
                    expected = s.hot().state.load(order::STATE_RELOAD);
                    continue;
                }
            }
        } else {
            match prepare_page(s, target_seq) {
                Ok(phys) => phys,
                Err(PrepareError::Stale) => {
                    expected = s.hot().state.load(order::STATE_RELOAD);
                    continue;
                }
                Err(PrepareError::Refused(e)) => {
                    // The guess may be stale, in which case the refusal
                    // is about a page we would not have needed.
                    let actual = s.hot().state.load(order::STATE_RELOAD);
                    if actual != expected {
                        expected = actual;
                        continue;
                    }
                    // A ring that waits counts the write's outcome when
                    // the wait ends (`write::block`), not this attempt.
                    if s.geometry().block_for.is_none() {
                        crate::write::block::count_refusal(s.rare(), e);
                    }
                    return Placement::failed(match e {
                        ReserveError::Full => FAIL_FULL,
                        ReserveError::Preparing => FAIL_PREPARING,
                        _ => FAIL_BUSY,
                    });
                }
            }
        };
        // D. AcqRel on success: Acquire so that a writer who takes over
        // from a page switch sees the slot claimed by the switcher before
        // its own CAS (prepare_page), Release to publish ours the same way.
        match cas_state(s, expected, (new_write, ts)) {
            Ok(()) => {
                // E. The Release fence orders the payload and header
                // stores that follow after our view of the slot: a reader
                // that copies any of them and then fences with Acquire
                // sees the slot as we saw it (or later), which is how an
                // iterator or in-place reader detects a page reused under
                // it (the seqlock argument; a compiler barrier on x86).
                order::STEP_E_FENCE.place();
                if keeps_hints(s) {
                    s.hot().write_hint.store(new_write, Ordering::Relaxed);
                    s.hot().ts_hint.store(ts, Ordering::Relaxed);
                }
                if now < last_ts {
                    RareCounters::bump(&s.rare().ts_fixups, 1);
                }
                if target_seq != seq || pos == 0 {
                    if let Some(closing) = closing {
                        pad_tail(s, closing, pos);
                    }
                    open_page(s, target_seq, phys, ts);
                }
                if prefix != TimePrefix::None {
                    write_prefix(s, phys, at, prefix);
                }
                // F
                let event_delta = if prefix == TimePrefix::None { delta } else { 0 };
                return place(s, phys, at + prefix.size(), len, event_delta, ts);
            }
            Err(actual) => expected = actual,
        }
    }
}

/// The public error for a failed placement.
#[cold]
pub(super) fn reserve_error(s: &SharedState, p: &Placement, len: usize) -> ReserveError {
    match p.ts {
        FAIL_FULL => ReserveError::Full,
        FAIL_BUSY => ReserveError::Busy,
        FAIL_PREPARING => ReserveError::Preparing,
        _ => ReserveError::TooLarge {
            len,
            max: format::max_payload(s.page_size()),
        },
    }
}
