//! One CPU's buffer: its pages, and the reserve/commit protocol.
//!
//! ```text
//!   virtual offsets:  | page seq 0 | page seq 1 | ... | page seq q | ...
//!   ring slots:       [ slot 0 ][ slot 1 ] ... [ slot N-1 ]   seq q -> slot q % N
//!   physical pages:   [ p0 ][ p1 ] ... [ pN-1 ][ reader ][ spares ]
//!                        ^ slot word names the physical page; the reader
//!                          swaps its own page in to take a full one out
//!
//!   state (128-bit): ( write = virtual byte offset of the next record,
//!                      last_ts = time of the record before it )
//! ```
//!
//! Writers claim space by compare-and-swap on `state` (LTTng-UST's
//! reservation), reading the clock after the position is known and before
//! the swap, so every record's time is known to its successor: its delta is
//! exact, never guessed. Commits add to the physical page's commit word in
//! any order (LTTng's per-sub-buffer commit counter); a page is readable as a
//! whole once its commit word counts every byte.

use crate::config::{ConfigError, Geometry, Mode};
use crate::format::{self, TimePrefix, PAGE_HEADER};
use crate::memory::CpuMemory;
use crate::meta::{gen_of, tag_of, Commit, Slot};
use crate::reservation::Reservation;
use crate::stats::RareCounters;
use crate::sync::{fence, AtomicPair, AtomicU32, AtomicU64, Ordering};
use crate::words::PageWords;
use crate::zeroed::{ZeroedBox, ZeroedError, ZeroedSlice};
use crossbeam_utils::CachePadded;
use ringtrace_clock::Clock;
use thiserror::Error;

/// Why a reservation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ReserveError {
    /// Discard mode, and the next page is not yet read.
    #[error("buffer full: the next page has not been read (discard mode)")]
    Full,
    /// The page to reuse is not free yet: it still holds a reservation that
    /// was never committed (overwrite mode; in discard mode a page with
    /// unread events is `Full`). In a file ring, also when every page of
    /// the buffer's pool of zeroed pages is held by a claimer that sleeps
    /// while it zeroes (16 at once), or, with fewer than two quarantine
    /// pages (no pool), while the writer that claimed the page zeroes it.
    #[error("the page to reuse is not free yet: it holds an uncommitted reservation, or (file ring) no zeroed page is ready for it")]
    Busy,
    /// The payload cannot fit in a page.
    #[error("an event of {len} bytes cannot fit in a page; the largest is {max} bytes")]
    TooLarge {
        /// The payload length asked for.
        len: usize,
        /// The largest payload a page holds.
        max: usize,
    },
}

/// The writers' hot cache line: one per CPU buffer, so writers on different
/// CPUs share no line on the fast path. In a file ring it lives in the
/// file (its order is the file format's: see `file::layout`).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct WriterHot {
    /// (write offset, last timestamp), changed together by CAS.
    pub state: AtomicPair,
    /// A recent `state`, read without a 128-bit load. Possibly stale or torn;
    /// a stale guess only costs a failed CAS, which returns the true value.
    pub write_hint: AtomicU64,
    pub ts_hint: AtomicU64,
    /// Reservations that ended (committed or dropped); bumped by the
    /// commit, as the kernel counts `entries`, so that a reservation whose
    /// writer died is in no count.
    pub hit: AtomicU64,
    /// The open page as `seq << 16 | phys`, so writers need not divide to
    /// find its slot. A page's physical index never changes while it is
    /// open (swaps need it complete, fixups need it closed), and seq is
    /// never reused, so a matching entry is right whenever it is read.
    pub open_page: AtomicU64,
}

// SAFETY: every field is an integer atomic (the pair a 128-bit one), valid
// for any bits, zero for `new(0)`, without Drop; repr(C) fixes the layout.
// (Under loom the pair is a model built only by `zero()`, for the boxed
// backing.)
unsafe impl crate::zeroed::Zeroable for WriterHot {
    fn zero() -> Self {
        WriterHot {
            state: AtomicPair::new(0, 0),
            write_hint: AtomicU64::new(0),
            ts_hint: AtomicU64::new(0),
            hit: AtomicU64::new(0),
            open_page: AtomicU64::new(0),
        }
    }
}

/// One CPU's ring of pages.
#[derive(Debug)]
pub struct CpuBuffer {
    pub(crate) cpu: usize,
    pub(crate) geometry: Geometry,
    pub(crate) hot: ZeroedBox<CachePadded<WriterHot>>,
    /// One word per ring slot; see [`crate::meta`].
    pub(crate) slots: ZeroedSlice<AtomicU64>,
    /// One commit word per physical page, each on its own cache line.
    /// Zeroed and mapped like the pages: a spare's is set when it enters a
    /// slot (`swap_in_spare`), so the quarantine's cost nothing unused.
    pub(crate) commits: ZeroedSlice<CachePadded<crate::meta::CommitLine>>,
    pub(crate) words: PageWords,
    pub(crate) rare: ZeroedBox<CachePadded<RareCounters>>,
    pub(crate) reader: crate::sync::Mutex<crate::reader::ReaderState>,
    /// A file ring: claims put a zeroed page in the slot (see
    /// `prepare_page`).
    pub(crate) zero_on_claim: bool,
    /// A file ring's pages zeroed ahead for its claims; empty for a memory
    /// ring, or a file ring with too small a quarantine to lend it pages.
    pub(crate) zero_pool: crate::zero_pool::ZeroPool,
    /// Which write path updates the per-CPU words (see [`crate::rseq`]);
    /// the CAS path until the ring chooses.
    pub(crate) path: crate::rseq::PerCpuPath,
}

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

/// The event header for a payload of `len` bytes with time delta `delta`.
#[inline(always)]
pub(crate) fn event_header(len: usize, delta: u64) -> u32 {
    if format::is_short(len) {
        format::record_header((len / 4) as u32, delta)
    } else {
        format::record_header(format::TYPE_DATA_LONG, delta)
    }
}

impl CpuBuffer {
    /// A buffer in `memory`, which is all zero: sets up its slots and
    /// commit words.
    pub(crate) fn new(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Self {
        let n = geometry.pages_per_cpu;
        let phys_pages = geometry.physical_pages();
        let CpuMemory {
            hot,
            rare,
            slots,
            commits,
            words,
            zero_on_claim,
        } = memory;
        // Relaxed, here and below: the buffer is not shared yet.
        // Every slot starts at generation 0 ("never used") on its own page,
        // complete and empty, so the first writer claims it like any other.
        for (s, slot) in slots.iter().enumerate() {
            let word = Slot {
                consumed: 0,
                phys: s,
                gen: 0,
            };
            slot.store(word.pack(), Ordering::Relaxed);
        }
        for commit in commits.iter().take(n + 1) {
            commit.word.store(
                Commit::complete(0, geometry.page_size, 0, false).pack(),
                Ordering::Relaxed,
            );
        }
        hot.open_page.store(u64::MAX, Ordering::Relaxed);
        let path = crate::rseq::PerCpuPath::new(
            cpu,
            Self::fast_line(cpu, &geometry, &hot, &commits, &words),
        );
        // A file ring's pool takes the last quarantine pages, zero like
        // every page of a new file (or of new anonymous memory).
        let pooled = if zero_on_claim {
            crate::zero_pool::pool_pages(geometry.quarantine_pages)
        } else {
            0
        };
        let lent = phys_pages - pooled;
        CpuBuffer {
            cpu,
            geometry,
            hot,
            slots,
            commits,
            words,
            rare,
            // Lowest first off the stack: the quarantine's pages further
            // down are touched only when dead writers need them.
            reader: crate::sync::Mutex::new(crate::reader::ReaderState::new(
                (n..lent).rev().collect(),
            )),
            zero_on_claim,
            zero_pool: crate::zero_pool::ZeroPool::new(lent..phys_pages),
            path,
        }
    }

    /// The fast line of the buffer of `cpu` made of these parts.
    pub(crate) fn fast_line(
        cpu: usize,
        geometry: &Geometry,
        hot: &WriterHot,
        commits: &[CachePadded<crate::meta::CommitLine>],
        words: &PageWords,
    ) -> crate::rseq::FastLine {
        // Loom's model of the pair has no address: nothing reads it there.
        #[cfg(not(loom))]
        let state = hot.state.as_ptr();
        #[cfg(loom)]
        let state = {
            let _ = hot;
            std::ptr::null_mut()
        };
        crate::rseq::FastLine::new(
            cpu as u32,
            geometry.page_size,
            state,
            words.base_ptr(),
            commits.as_ptr().cast(),
        )
    }

    /// A buffer in anonymous memory; `zero_on_claim` as a file ring's
    /// (loom models a file ring so).
    pub(crate) fn anonymous(
        cpu: usize,
        geometry: Geometry,
        zero_on_claim: bool,
    ) -> Result<Self, ConfigError> {
        let mut memory =
            CpuMemory::anonymous(&geometry).map_err(|e: ZeroedError| ConfigError::Memory {
                bytes: e.bytes,
                reason: e.reason,
            })?;
        memory.zero_on_claim = zero_on_claim;
        Ok(Self::new(cpu, geometry, memory))
    }

    /// The CPU this buffer belongs to.
    #[inline]
    pub fn cpu(&self) -> usize {
        self.cpu
    }

    #[inline(always)]
    pub(crate) fn page_size(&self) -> usize {
        self.geometry.page_size
    }

    #[inline(always)]
    pub(crate) fn pages(&self) -> usize {
        self.geometry.pages_per_cpu
    }

    /// The newest page that may hold records: the state's page, or the one
    /// before when the state sits at a page boundary (not yet opened).
    pub(crate) fn tail_seq(&self, write: u64) -> u64 {
        let seq = write >> self.geometry.page_shift();
        if write & (self.page_size() as u64 - 1) == 0 {
            seq.saturating_sub(1)
        } else {
            seq
        }
    }

    #[inline(always)]
    pub(crate) fn slot_of(&self, seq: u64) -> &AtomicU64 {
        &self.slots[(seq % self.pages() as u64) as usize]
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
    ///   (`per_cpu_ops::cas_state`; off the CPU, a remote update).
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
        &self,
        clock: C,
        len: usize,
    ) -> Result<Reservation<'_>, ReserveError> {
        // The common case, steps A to F with every rare branch taken out:
        // the event fits the open page, the clock has not gone back and the
        // delta fits the header. Anything else, or a lost CAS, goes to the
        // general loop below, which re-checks everything.
        let page_size = self.page_size() as u64;
        // A. Relaxed, on any CPU: only a guess, possibly stale or torn
        // across the two words; the CAS at D compares it with the true
        // state, and orders everything this writer does after D.
        let (write, last_ts) = self.guess_state();
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
                let open = self.hot.open_page.load(Ordering::Relaxed);
                if open >> 16 == write >> self.geometry.page_shift() {
                    let phys = (open & 0xFFFF) as usize;
                    // Resolved before D (see F): in the page, as checked.
                    let record = self.words.words(phys, pos as usize, size as usize / 4);
                    let commit_line = self.commit_line(phys);
                    // D: AcqRel as in the general loop. Relaxed on failure:
                    // the general loop starts again from a fresh guess.
                    let new = (write + size, now);
                    if self.cas_state((write, last_ts), new).is_ok() {
                        // E (no page switch on this path). The Release fence
                        // is the seqlock's, as in the general loop: it orders
                        // the record's stores after D for an iterator that
                        // copies them (a compiler barrier on x86_64, `dmb
                        // ishst`-like on aarch64). The hints are guesses:
                        // Relaxed, as at A.
                        fence(Ordering::Release);
                        if self.keeps_hints() {
                            self.hot.write_hint.store(new.0, Ordering::Relaxed);
                            self.hot.ts_hint.store(now, Ordering::Relaxed);
                        }
                        // F: a long event's length word, then the PENDING
                        // header, the space being ours since D.
                        let header = event_header(len, delta);
                        crate::reservation::store_pending(record, len, header);
                        break 'fast (record, commit_line, header, now);
                    }
                }
            }
            let p = self.reserve_slow(clock, len);
            if p.is_failed() {
                return Err(self.reserve_error(&p, len));
            }
            self.placed_parts(&p, len)
        };
        Ok(Reservation::new(self, record, commit_line, header, len, ts))
    }

    /// What a reservation is made of, for an event the general loop placed:
    /// its record's words, its page's commit word, the header its commit
    /// stores and its time.
    #[inline(always)]
    fn placed_parts(
        &self,
        p: &Placement,
        len: usize,
    ) -> (&[AtomicU32], &crate::meta::CommitLine, u32, u64) {
        // A placed event fits its page, so `len` is small here.
        (
            self.words
                .words(p.phys(), p.event_at(), format::event_size(len) / 4),
            self.commit_line(p.phys()),
            p.header(),
            p.ts,
        )
    }

    /// The general loop's claim for a payload of `len` bytes, for the rseq
    /// path's fast reserve when it misses (`CpuBuffer::reserve_whole`): the
    /// record placed (its length word and PENDING header stored, as
    /// `place` does), or why not.
    #[cfg(ringtrace_rseq)]
    #[inline(always)]
    pub(crate) fn reserve_placed<C: Clock + Copy>(
        &self,
        clock: C,
        len: usize,
    ) -> Result<crate::write_whole::Claimed<'_>, ReserveError> {
        let p = self.reserve_slow(clock, len);
        if p.is_failed() {
            return Err(self.reserve_error(&p, len));
        }
        let (record, commit, header, ts) = self.placed_parts(&p, len);
        // `placed_parts` made the record's `event_size(len) / 4` words.
        Ok(crate::write_whole::Claimed {
            record: record.as_ptr(),
            commit,
            header,
            ts,
        })
    }

    /// Reserves through the general loop only, skipping the fast path: the
    /// property test that the two agree on every clock sequence uses it.
    #[cfg(test)]
    pub(crate) fn reserve_general<C: Clock + Copy>(
        &self,
        clock: C,
        len: usize,
    ) -> Result<Reservation<'_>, ReserveError> {
        let p = self.reserve_slow(clock, len);
        if p.is_failed() {
            return Err(self.reserve_error(&p, len));
        }
        let (record, commit_line, header, ts) = self.placed_parts(&p, len);
        Ok(Reservation::new(self, record, commit_line, header, len, ts))
    }

    /// Builds the placement of an event at `event_at`, writing a long
    /// event's length word now (the space is ours since step D).
    #[inline(always)]
    fn place(&self, phys: usize, event_at: usize, len: usize, delta: u64, ts: u64) -> Placement {
        if !format::is_short(len) {
            self.words.store(phys, event_at + 4, len as u32);
        }
        let header = event_header(len, delta);
        // Release: for a crash, after the length word (as on the fast path).
        self.words
            .word(phys, event_at)
            .store(header | format::PENDING, Ordering::Release);
        Placement::new(phys, event_at, header, ts)
    }

    /// The general reserve loop: every case of steps A to F.
    #[cold]
    #[inline(never)]
    fn reserve_slow<C: Clock + Copy>(&self, clock: C, len: usize) -> Placement {
        let page_size = self.page_size();
        if len > format::max_payload(page_size) {
            self.rare.refused(Some(&self.rare.too_large));
            return Placement::failed(FAIL_TOO_LARGE);
        }
        let shift = self.geometry.page_shift();
        let mask = page_size as u64 - 1;
        let body = format::event_size(len);

        // A: a guess (the hints, or on the rseq path the state's halves);
        // the CAS validates it.
        let mut expected = self.guess_state();
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
                match self.current_phys(seq) {
                    Some(phys) => Some(phys),
                    None => {
                        expected = self.hot.state.load(Ordering::Acquire);
                        continue;
                    }
                }
            } else {
                None
            };
            let phys = if target_seq == seq && pos != 0 {
                match self.current_phys(seq) {
                    Some(phys) => phys,
                    None => {
                        // The guess is stale: the page has moved on.
                        expected = self.hot.state.load(Ordering::Acquire);
                        continue;
                    }
                }
            } else {
                match self.prepare_page(target_seq) {
                    Ok(phys) => phys,
                    Err(PrepareError::Stale) => {
                        expected = self.hot.state.load(Ordering::Acquire);
                        continue;
                    }
                    Err(PrepareError::Refused(e)) => {
                        // The guess may be stale, in which case the refusal
                        // is about a page we would not have needed.
                        let actual = self.hot.state.load(Ordering::Acquire);
                        if actual != expected {
                            expected = actual;
                            continue;
                        }
                        return Placement::failed(match e {
                            ReserveError::Full => {
                                self.rare.refused(None);
                                FAIL_FULL
                            }
                            _ => {
                                self.rare.refused(Some(&self.rare.busy));
                                FAIL_BUSY
                            }
                        });
                    }
                }
            };
            // D. AcqRel on success: Acquire so that a writer who takes over
            // from a page switch sees the slot claimed by the switcher before
            // its own CAS (prepare_page), Release to publish ours the same way.
            match self.cas_state(expected, (new_write, ts)) {
                Ok(()) => {
                    // E. The Release fence orders the payload and header
                    // stores that follow after our view of the slot: a reader
                    // that copies any of them and then fences with Acquire
                    // sees the slot as we saw it (or later), which is how an
                    // iterator or in-place reader detects a page reused under
                    // it (the seqlock argument; a compiler barrier on x86).
                    fence(Ordering::Release);
                    if self.keeps_hints() {
                        self.hot.write_hint.store(new_write, Ordering::Relaxed);
                        self.hot.ts_hint.store(ts, Ordering::Relaxed);
                    }
                    if now < last_ts {
                        RareCounters::bump(&self.rare.ts_fixups, 1);
                    }
                    if target_seq != seq || pos == 0 {
                        if let Some(closing) = closing {
                            self.pad_tail(closing, pos);
                        }
                        self.open_page(target_seq, phys, ts);
                    }
                    if prefix != TimePrefix::None {
                        self.write_prefix(phys, at, prefix);
                    }
                    // F
                    let event_delta = if prefix == TimePrefix::None { delta } else { 0 };
                    return self.place(phys, at + prefix.size(), len, event_delta, ts);
                }
                Err(actual) => expected = actual,
            }
        }
    }

    /// The physical page of the open page `seq`, or `None` if the slot has
    /// moved past it (the caller's view of `state` is stale).
    #[inline(always)]
    fn current_phys(&self, seq: u64) -> Option<usize> {
        // Relaxed: the entry's value is all that matters, and it is
        // immutable for its seq (see WriterHot::open_page). Ordering against
        // the page's claim comes through `state` (step D).
        let cached = self.hot.open_page.load(Ordering::Relaxed);
        if cached >> 16 == seq {
            return Some((cached & 0xFFFF) as usize);
        }
        self.slot_phys(seq)
    }

    #[cold]
    fn slot_phys(&self, seq: u64) -> Option<usize> {
        // Acquire: more than enough. The state CAS that must succeed before
        // `phys` is used already orders the claim first (verification.md, W5).
        let slot = Slot::unpack(self.slot_of(seq).load(Ordering::Acquire));
        if slot.gen != gen_of(seq, self.pages()) {
            return None;
        }
        // A miss (the entry overwritten by a slower writer's older page, or
        // emptied by an adoption) would send every writer of this page here,
        // past the fast path, which reads the entry only: refill it. The
        // pair is right for `seq` whenever `seq` is open, the only time a
        // writer's state (checked at its CAS) can be in it. Relaxed: as in
        // open_page.
        self.hot
            .open_page
            .store((seq << 16) | slot.phys as u64, Ordering::Relaxed);
        self.path
            .line()
            .store_open(seq << self.geometry.page_shift(), slot.phys);
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
    fn prepare_page(&self, seq: u64) -> Result<usize, PrepareError> {
        let n = self.pages();
        let want = gen_of(seq, n);
        let slot_word = self.slot_of(seq);
        loop {
            // Acquire: see the commit word as the claimer or reader left it.
            let word = slot_word.load(Ordering::Acquire);
            let slot = Slot::unpack(word);
            let commit_word = &self.commits[slot.phys].word;
            let commit = Commit::unpack(commit_word.load(Ordering::Acquire));
            // A consistent pair: the slot unchanged across the commit load.
            // (Slot words never repeat, so equal means unchanged; the commit
            // word's own changes under a fixed slot are handled below.)
            if slot_word.load(Ordering::Acquire) != word {
                continue;
            }
            if slot.gen == want {
                if commit.opening && commit.tag == tag_of(want) {
                    if self.zero_on_claim && !commit.zeroed {
                        // A file ring's claimer is zeroing the page (see
                        // `zero_claimed`). Only it may: a helper could
                        // still be storing zeros after writers came in.
                        return Err(PrepareError::Refused(ReserveError::Busy));
                    }
                    // Step 3, ours or someone else's.
                    let _ = commit_word.compare_exchange(
                        commit.pack(),
                        Commit::fresh(want).pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
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
                self.claim_slot(slot_word, word, commit);
                continue;
            }
            let complete = commit.tag == tag_of(slot.gen)
                && commit.bytes == self.page_size()
                && !commit.opening;
            // Discard mode: a page with events not yet read is the ring's
            // end, complete or not (a reader stops at a page a writer is
            // still filling, so the ring fills up behind it).
            if self.geometry.mode == Mode::Discard
                && commit.tag == tag_of(slot.gen)
                && commit.events > slot.consumed
            {
                return Err(PrepareError::Refused(ReserveError::Full));
            }
            if !complete {
                return Err(PrepareError::Refused(ReserveError::Busy));
            }
            if self.zero_pool.capacity() != 0 {
                // A file ring: the claim is one swap (see `swap_claim`).
                if let Some(phys) = self.swap_claim(slot_word, word, commit, want)? {
                    return Ok(phys);
                }
                continue;
            }
            // Step 1. AcqRel, as every step; implied here (verification.md, W9).
            let opening = Commit::opening(want, commit.events, commit.header);
            let won = commit_word
                .compare_exchange(
                    commit.pack(),
                    opening.pack(),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok();
            if won && self.zero_on_claim {
                self.zero_claimed(slot_word, want, opening, slot.phys);
            }
        }
    }

    /// A file ring's claim, when it has a pool of zeroed pages
    /// ([`crate::zero_pool`]): the slot whose word was `word` (generation
    /// `want - 1` on a complete page whose commit word was `commit`) moves
    /// to generation `want` on a zeroed page from the pool, in one CAS:
    ///
    /// - Take a page `Z` from the pool (Acquire: its zeros are seen). None
    ///   there: every pool page is held by a claimer that sleeps while it
    ///   zeroes, and the claim is refused (Busy).
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
    fn swap_claim(
        &self,
        slot_word: &AtomicU64,
        word: u64,
        commit: Commit,
        want: u32,
    ) -> Result<Option<usize>, PrepareError> {
        let Some(zeroed) = self.zero_pool.take() else {
            return Err(PrepareError::Refused(ReserveError::Busy));
        };
        // Relaxed: published by the slot CAS's Release below.
        self.commit_word(zeroed)
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
                .compare_exchange(word, claimed.pack(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        } else {
            self.overrun_claim(slot_word, word, claimed, unread)
        };
        if !won {
            self.zero_pool.give(zeroed);
            return Ok(None);
        }
        fence(Ordering::Release);
        self.words.zero_page(slot.phys);
        self.zero_pool.give(slot.phys);
        Ok(Some(zeroed))
    }

    /// A file ring's claim of physical page `phys`, between its steps 1 and
    /// 3 (see `prepare_page`), by the writer that won step 1: the page is
    /// zeroed, so that a file recovered after a crash never shows an older
    /// lap's bytes where a reservation had not yet written its header.
    ///
    /// - Step 2 first (ours, or a helper's): until the slot has moved on,
    ///   an iterator may copy the page under the old generation and trust
    ///   the copy, so its bytes must not change before.
    /// - Release fence, then the zeros: an iterator that copies any zero and
    ///   then fences with Acquire sees the slot moved, and drops its copy
    ///   (the seqlock argument, as at step E of `reserve`).
    /// - The commit word goes from OPENING to OPENING | ZEROED, AcqRel:
    ///   whoever does step 3 Acquire-loads it, and every writer enters the
    ///   page after step 3, so all of them see the zeros.
    ///
    /// Until ZEROED, step 3 is refused to everyone else (Busy): a helper
    /// zeroing too could still be storing zeros after writers came in.
    #[cold]
    pub(crate) fn zero_claimed(
        &self,
        slot_word: &AtomicU64,
        want: u32,
        opening: Commit,
        phys: usize,
    ) {
        loop {
            // Acquire: see whoever moved the slot.
            let word = slot_word.load(Ordering::Acquire);
            let slot = Slot::unpack(word);
            if slot.phys != phys {
                // A fixup swapped the page out before step 2 (see
                // `reclaim`): the claim failed, and the page is the
                // reader's now. Not ours to zero.
                return;
            }
            if slot.gen == want {
                break;
            }
            if slot.gen != want.wrapping_sub(1) {
                debug_assert!(false, "an OPENING page's slot moved on");
                return;
            }
            // Still the old generation (its `consumed` may change under a
            // reader): step 2. Nothing else can move it: the page is
            // OPENING, so no reader takes it, no fixup touches it and no
            // writer opens it.
            self.claim_slot(slot_word, word, opening);
        }
        fence(Ordering::Release);
        self.words.zero_page(phys);
        let zeroed = Commit {
            zeroed: true,
            ..opening
        };
        let set = self.commit_word(phys).compare_exchange(
            opening.pack(),
            zeroed.pack(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        debug_assert!(
            set.is_ok(),
            "only the claimer changes an OPENING word before ZEROED"
        );
    }

    /// Step 2 of a claim (see `prepare_page`): moves the slot whose word
    /// was `word` to the next generation, given the commit word `commit` of
    /// its page, read after `word` and found OPENING for that generation.
    /// (Then the page was complete, so its `events` are final; and if the
    /// CAS succeeds the slot held `word` throughout, so `consumed` is
    /// exact.) Whoever wins the CAS counts the unread events as overrun. A
    /// writer or a reader may do it: a reader that finds a page being
    /// claimed helps the claim on rather than pass the page before its
    /// overrun is counted.
    pub(crate) fn claim_slot(&self, slot_word: &AtomicU64, word: u64, commit: Commit) {
        let slot = Slot::unpack(word);
        let claimed = Slot {
            consumed: 0,
            phys: slot.phys,
            gen: slot.gen.wrapping_add(1),
        };
        let unread = commit.events.saturating_sub(slot.consumed);
        if unread == 0 {
            // AcqRel: Acquire to see the claim's step 1 before step 3,
            // Release to publish this page's reset to the next reader of
            // the slot; on failure, Acquire sees whoever won.
            let _ = slot_word.compare_exchange(
                word,
                claimed.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        } else {
            self.overrun_claim(slot_word, word, claimed, unread);
        }
    }

    /// Step 2 of a claim that overruns `unread` events: the slot CAS,
    /// bracketed so that a reader never sees the slot moved on without also
    /// being able to see the overrun counted (see `loss_mark`, which waits
    /// while a bracket is open):
    ///
    /// - `overrun_claims_started` is bumped before the CAS. Relaxed: the
    ///   CAS's Release orders it, so whoever Acquire-loads the new slot word
    ///   (or a `state` that a writer moved after seeing it) sees it too.
    /// - On success, `overrun` is bumped; the winner of the slot CAS is the
    ///   only one whose snapshot of `consumed` was exact.
    /// - `overrun_claims_done` is bumped either way. Release: a reader that
    ///   Acquire-loads it and finds it equal to `started` sees the overrun.
    ///
    /// Returns whether the CAS won.
    #[cold]
    fn overrun_claim(&self, slot_word: &AtomicU64, word: u64, claimed: Slot, unread: u32) -> bool {
        let rare = &self.rare;
        rare.overrun_claims_started.fetch_add(1, Ordering::Relaxed);
        let won = slot_word
            .compare_exchange(word, claimed.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if won {
            RareCounters::bump(&rare.overrun, u64::from(unread));
        }
        rare.overrun_claims_done.fetch_add(1, Ordering::Release);
        won
    }

    /// Pads physical page `phys` from `pos` to its end and commits the
    /// padding. The caller closed the page with its CAS and looked `phys` up
    /// before it (see reserve_slow): a fixup may have taken the page since,
    /// in which case the commit lands on the quarantined page, where it
    /// counts towards its release.
    #[cold]
    fn pad_tail(&self, phys: usize, pos: usize) {
        let page_size = self.page_size();
        if pos < page_size {
            self.words
                .store(phys, pos, format::record_header(format::TYPE_PADDING, 0));
        }
        self.commit_bytes(phys, (page_size - pos) as u64);
    }

    /// Writes page `seq`'s header and commits its bytes.
    #[cold]
    fn open_page(&self, seq: u64, phys: usize, base_ts: u64) {
        // Relaxed: see current_phys. A slower writer may overwrite this
        // with an older page; that only sends later writers to the slot.
        self.hot
            .open_page
            .store((seq << 16) | phys as u64, Ordering::Relaxed);
        self.path
            .line()
            .store_open(seq << self.geometry.page_shift(), phys);
        self.words.store_page_header(phys, seq, base_ts);
        // With the HEADER flag: a recovered file trusts the page's base time
        // only when its header's own commit landed.
        self.commit_bytes(phys, PAGE_HEADER as u64 | crate::meta::HEADER);
        // Where shared mode, if on, looks whether remote use has stopped.
        self.path.page_opened();
    }

    /// Adds `value` to a commit word. Release: everything this writer wrote
    /// into the page is published to a reader that Acquire-loads the word
    /// and finds it complete (the RMWs of all committers form one release
    /// sequence; on the rseq path each add is a plain store after every
    /// store before it, and x86_64 keeps stores in order).
    #[inline(always)]
    pub(crate) fn commit_bytes(&self, phys: usize, value: u64) {
        self.add_to_line(self.commit_line(phys), value, 0);
    }

    /// Writes the record headers of `p` and commits it: as an event if
    /// `event`, as a discard record otherwise.
    /// The commit word of physical page `phys`.
    #[inline(always)]
    pub(crate) fn commit_word(&self, phys: usize) -> &AtomicU64 {
        &self.commit_line(phys).word
    }

    /// The commit word and hits of physical page `phys`.
    #[inline(always)]
    pub(crate) fn commit_line(&self, phys: usize) -> &crate::meta::CommitLine {
        debug_assert!(phys < self.commits.len());
        // SAFETY: `phys` comes from a slot word, the reader's free list or a
        // placement built from one; all are indices of pages this buffer
        // was built with, so it is within `commits`.
        unsafe { self.commits.get_unchecked(phys) }
    }

    /// Writes and commits the TIME_EXTEND or TIME_STAMP record at `at`.
    #[cold]
    fn write_prefix(&self, phys: usize, at: usize, prefix: TimePrefix) {
        // The header word last, Release: for a crash, so that a recovered
        // file never finds the header without the words it announces.
        let header = match prefix {
            TimePrefix::None => return,
            TimePrefix::Extend(delta) => {
                self.words
                    .store(phys, at + 4, (delta >> format::DELTA_BITS) as u32);
                format::record_header(format::TYPE_TIME_EXTEND, delta & format::MAX_DELTA)
            }
            TimePrefix::Stamp(ts) => {
                self.words.store_u64(phys, at + 4, ts);
                format::record_header(format::TYPE_TIME_STAMP, 0)
            }
        };
        self.words.word(phys, at).store(header, Ordering::Release);
        self.commit_bytes(phys, prefix.size() as u64);
    }

    /// The public error for a failed placement.
    #[cold]
    pub(crate) fn reserve_error(&self, p: &Placement, len: usize) -> ReserveError {
        match p.ts {
            FAIL_FULL => ReserveError::Full,
            FAIL_BUSY => ReserveError::Busy,
            _ => ReserveError::TooLarge {
                len,
                max: format::max_payload(self.page_size()),
            },
        }
    }

    /// Closes the current page early (the kernel's and LTTng's "switch"), so
    /// that its events become readable as a whole page once committed. A
    /// no-op on an empty or unopened page. Returns whether a page was closed.
    pub fn flush(&self) -> bool {
        let shift = self.geometry.page_shift();
        let mask = self.page_size() as u64 - 1;
        let mut state = self.hot.state.load(Ordering::Acquire);
        loop {
            let (write, last_ts) = state;
            let pos = (write & mask) as usize;
            if pos == 0 || pos == PAGE_HEADER {
                return false;
            }
            let seq = write >> shift;
            let next = (seq + 1) << shift;
            // Before the CAS, as in reserve_slow: the page we close.
            let Some(phys) = self.current_phys(seq) else {
                state = self.hot.state.load(Ordering::Acquire);
                continue;
            };
            match self.cas_state(state, (next, last_ts)) {
                Ok(()) => {
                    self.hot.write_hint.store(next, Ordering::Relaxed);
                    self.pad_tail(phys, pos);
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
    }
}

/// Why `prepare_page` did not make a page ready.
#[derive(Debug)]
enum PrepareError {
    /// The caller's view of the state is out of date.
    Stale,
    /// The page cannot be reused now.
    Refused(ReserveError),
}
