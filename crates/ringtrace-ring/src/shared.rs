//! The state a CPU buffer's writers and readers share: its pages' slot
//! and commit words, the writers' hot line, its counters and its write
//! path. The fields are private; the protocol steps that both sides take
//! (a claim's step 2, a fixup's mark, the page lookups) are the methods
//! here, and everything else is in `write` (reserve, claim, commit) or
//! `read` (consume, fixup, iterate), which never see each other.
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

use crate::config::{ConfigError, Geometry};
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::hot::WriterHot;
use crate::page::memory::CpuMemory;
use crate::page::meta::{Commit, CommitLine, Slot};
use crate::page::words::PageWords;
use crate::page::zero_pool::ZeroPool;
use crate::page::zeroed::{ZeroedBox, ZeroedError, ZeroedSlice};
use crate::rseq::PerCpuPath;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// One CPU buffer's shared state.
#[derive(Debug)]
pub(crate) struct SharedState {
    cpu: usize,
    geometry: Geometry,
    hot: ZeroedBox<CachePadded<WriterHot>>,
    /// One word per ring slot; see [`crate::page::meta`].
    slots: ZeroedSlice<AtomicU64>,
    /// One commit word per physical page, each on its own cache line.
    /// Zeroed and mapped like the pages: a spare's is set when it enters a
    /// slot (the reader's spare swap), so the quarantine's cost nothing
    /// unused.
    commits: ZeroedSlice<CachePadded<CommitLine>>,
    words: PageWords,
    rare: ZeroedBox<CachePadded<RareCounters>>,
    /// A file ring: claims put a zeroed page in the slot (see the page
    /// claim in `write::claim`).
    zero_on_claim: bool,
    /// Spare pages for claims: a file ring's, zeroed ahead, for every
    /// claim; either ring's for a step-over (`write::step_over`). Empty
    /// when the quarantine is too small to lend it pages.
    zero_pool: ZeroPool,
    /// Which write path updates the per-CPU words (see [`crate::rseq`]);
    /// the CAS path until the ring chooses.
    path: PerCpuPath,
    /// Pages overwrite claims stepped over (`write::step_over`): the
    /// process's count, not the file's (the file's rare line is full).
    stepped_over: AtomicU64,
    /// Pages stepped over and not yet freed: each holds a spare out of
    /// the pool until its last commit lands, for ever if its writer died.
    /// A std atomic even under loom: a budget, which no ordering argument
    /// rests on (see `write::step_over::step_over_budget`).
    stepped_out: std::sync::atomic::AtomicUsize,
}

/// A new buffer's shared state, and the physical pages its reader starts
/// with (lowest last, to be used first).
#[derive(Debug)]
pub(crate) struct Fresh {
    pub state: SharedState,
    pub reader_pages: Vec<usize>,
}

impl SharedState {
    /// A buffer in `memory`, which is all zero: sets up its slots and
    /// commit words.
    pub(crate) fn fresh(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Fresh {
        let n = geometry.pages_per_cpu;
        let phys_pages = geometry.physical_pages();
        // Relaxed, here and below: the buffer is not shared yet.
        // Every slot starts at generation 0 ("never used") on its own page,
        // complete and empty, so the first writer claims it like any other.
        for (s, slot) in memory.slots.iter().enumerate() {
            let word = Slot {
                consumed: 0,
                phys: s,
                gen: 0,
            };
            slot.store(word.pack(), Ordering::Relaxed);
        }
        for commit in memory.commits.iter().take(n + 1) {
            commit.word.store(
                Commit::complete(0, geometry.page_size, 0, false).pack(),
                Ordering::Relaxed,
            );
        }
        memory.hot.open_page.store(u64::MAX, Ordering::Relaxed);
        // A file ring's pool takes the last quarantine pages, zero like
        // every page of a new file, for its claims to swap in; a memory
        // ring's is the spare pages after the quarantine. Either ring's
        // overwrite claims step over a page a sleeping writer holds with
        // them.
        let (lent, pool) = if memory.zero_on_claim {
            let lent = phys_pages - crate::page::zero_pool::pool_pages(geometry.quarantine_pages);
            (lent, lent..phys_pages)
        } else {
            (phys_pages, phys_pages..memory.commits.len())
        };
        Fresh {
            state: Self::assemble(cpu, geometry, memory, ZeroPool::new(pool)),
            // Lowest first off the stack: the quarantine's pages further
            // down are touched only when dead writers need them.
            reader_pages: (n..lent).rev().collect(),
        }
    }

    /// A buffer in anonymous memory; `zero_on_claim` as a file ring's
    /// (loom models a file ring so).
    pub(crate) fn anonymous(
        cpu: usize,
        geometry: Geometry,
        zero_on_claim: bool,
    ) -> Result<Fresh, ConfigError> {
        let mut memory =
            CpuMemory::anonymous(&geometry).map_err(|e: ZeroedError| ConfigError::Memory {
                bytes: e.bytes,
                reason: e.reason,
            })?;
        memory.zero_on_claim = zero_on_claim;
        Ok(Self::fresh(cpu, geometry, memory))
    }

    /// The state over `memory` as it is (new, or a file's as checked),
    /// with `zero_pool` for its claims.
    pub(crate) fn assemble(
        cpu: usize,
        geometry: Geometry,
        memory: CpuMemory,
        zero_pool: ZeroPool,
    ) -> Self {
        let CpuMemory {
            hot,
            rare,
            slots,
            commits,
            words,
            zero_on_claim,
        } = memory;
        let path = PerCpuPath::new(cpu, Self::fast_line(cpu, &geometry, &hot, &commits, &words));
        SharedState {
            cpu,
            geometry,
            hot,
            slots,
            commits,
            words,
            rare,
            zero_on_claim,
            zero_pool,
            path,
            stepped_over: AtomicU64::new(0),
            stepped_out: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The CPU this buffer belongs to.
    #[inline(always)]
    pub(crate) fn cpu(&self) -> usize {
        self.cpu
    }

    /// The ring's geometry.
    #[inline(always)]
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The writers' hot line: the (write, last_ts) state, its hints, the
    /// open-page cache and the hit count of events written whole.
    #[inline(always)]
    pub(crate) fn hot(&self) -> &WriterHot {
        &self.hot
    }

    /// Every page's words.
    #[inline(always)]
    pub(crate) fn words(&self) -> &PageWords {
        &self.words
    }

    /// The counters off the write fast path.
    #[inline(always)]
    pub(crate) fn rare(&self) -> &RareCounters {
        &self.rare
    }

    /// Every slot word, in slot order.
    #[inline(always)]
    pub(crate) fn slots(&self) -> &[AtomicU64] {
        &self.slots
    }

    /// Every commit line, in physical page order.
    #[inline(always)]
    pub(crate) fn commit_lines(&self) -> &[CachePadded<CommitLine>] {
        &self.commits
    }

    /// A file ring: a claim must leave a zeroed page in the slot.
    #[inline(always)]
    pub(crate) fn zero_on_claim(&self) -> bool {
        self.zero_on_claim
    }

    /// A file ring's pages zeroed ahead for its claims.
    #[inline(always)]
    pub(crate) fn zero_pool(&self) -> &ZeroPool {
        &self.zero_pool
    }

    /// The write path that updates this buffer's per-CPU words.
    #[inline(always)]
    pub(crate) fn path(&self) -> &PerCpuPath {
        &self.path
    }

    /// The write path, to be chosen by the ring before it is shared.
    pub(crate) fn path_mut(&mut self) -> &mut PerCpuPath {
        &mut self.path
    }

    /// The fast line of the buffer of `cpu` made of these parts.
    pub(crate) fn fast_line(
        cpu: usize,
        geometry: &Geometry,
        hot: &WriterHot,
        commits: &[CachePadded<crate::page::meta::CommitLine>],
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

    /// The commit word of physical page `phys`.
    #[inline(always)]
    pub(crate) fn commit_word(&self, phys: usize) -> &AtomicU64 {
        &self.commit_line(phys).word
    }

    /// The commit word and hits of physical page `phys`.
    #[inline(always)]
    pub(crate) fn commit_line(&self, phys: usize) -> &crate::page::meta::CommitLine {
        debug_assert!(phys < self.commits.len());
        // SAFETY: `phys` comes from a slot word, the reader's free list or a
        // placement built from one; all are indices of pages this buffer
        // was built with, so it is within `commits`.
        unsafe { self.commits.get_unchecked(phys) }
    }

    /// The physical page whose commit line `line` is.
    pub(crate) fn phys_of_line(&self, line: &CommitLine) -> usize {
        let first = self.commits.as_ptr() as usize;
        let at = core::ptr::from_ref(line) as usize;
        debug_assert!(at >= first);
        (at - first) / std::mem::size_of::<CachePadded<CommitLine>>()
    }

    /// Counts a page stepped over (`write::step_over`). Relaxed: a
    /// statistic, as the rare counters are.
    pub(crate) fn count_stepped_over(&self) {
        self.stepped_over.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes one of the `budget` pages step-overs may hold out of the pool
    /// at once; false if they are all out. Relaxed: a count, and a
    /// step-over refused for it is refused `Busy`, as without step-over.
    pub(crate) fn take_step_over_budget(&self, budget: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.stepped_out.fetch_add(1, Relaxed) < budget {
            return true;
        }
        self.stepped_out.fetch_sub(1, Relaxed);
        false
    }

    /// Gives back a page of the step-over budget: its page was freed, or
    /// the step-over lost its slot CAS.
    pub(crate) fn give_step_over_budget(&self) {
        // Relaxed: a count, as in `take_step_over_budget`.
        self.stepped_out
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Pages stepped over by overwrite claims since the buffer was made
    /// in this process.
    pub(crate) fn stepped_over(&self) -> u64 {
        self.stepped_over.load(Ordering::Relaxed)
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
                order::CLAIM_STEP2,
                order::failure(order::CLAIM_STEP2),
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
    pub(crate) fn overrun_claim(
        &self,
        slot_word: &AtomicU64,
        word: u64,
        claimed: Slot,
        unread: u32,
    ) -> bool {
        self.bracketed_claim(slot_word, word, claimed, || u64::from(unread))
    }

    /// The bracketed slot CAS of [`overrun_claim`](Self::overrun_claim),
    /// with the overrun to count worked out by `count`, which runs only
    /// if the CAS won and before the bracket closes (a step-over marks the
    /// page it stepped over there, and counts what the mark found).
    pub(crate) fn bracketed_claim(
        &self,
        slot_word: &AtomicU64,
        word: u64,
        claimed: Slot,
        count: impl FnOnce() -> u64,
    ) -> bool {
        let rare = &self.rare;
        rare.overrun_claims_started.fetch_add(1, Ordering::Relaxed);
        let won = slot_word
            .compare_exchange(
                word,
                claimed.pack(),
                order::OVERRUN_CLAIM,
                order::failure(order::OVERRUN_CLAIM),
            )
            .is_ok();
        if won {
            RareCounters::bump(&rare.overrun, count());
        }
        rare.overrun_claims_done.fetch_add(1, order::OVERRUN_DONE);
        won
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
            let word = slot_word.load(order::CLAIM_LOAD);
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
        order::ZEROING_FENCE.place();
        self.words.zero_page(phys);
        let zeroed = Commit {
            zeroed: true,
            ..opening
        };
        let set = self.commit_word(phys).compare_exchange(
            opening.pack(),
            zeroed.pack(),
            order::ZEROED_MARK,
            order::failure(order::ZEROED_MARK),
        );
        debug_assert!(
            set.is_ok(),
            "only the claimer changes an OPENING word before ZEROED"
        );
    }

    /// Sets `bits` in commit word `word` for a fixup or a step-over;
    /// returns the word before. AcqRel, as both need (see `reclaim`,
    /// `write::step_over`). On the rseq path always a remote update: the
    /// fixup runs on the reader's CPU, and a late commit's section must not
    /// overwrite the mark.
    pub(crate) fn mark_commit(&self, word: &AtomicU64, bits: u64) -> u64 {
        #[cfg(ringtrace_rseq)]
        if self.path.fast().is_some() {
            let _remote = self.path.remote();
            return word.fetch_or(bits, order::FIXUP_MARK);
        }
        word.fetch_or(bits, order::FIXUP_MARK)
    }

    /// Whether the state has moved past page `seq` (it is closed).
    pub(crate) fn is_closed(&self, seq: u64) -> bool {
        let (write, _) = self.hot.state.load(order::READER_STATE_LOAD);
        write >> self.geometry.page_shift() > seq
    }
}
