//! The CPU buffer's updates of its per-CPU words, on either write path
//! (see [`crate::rseq`]): the state's compare-and-swap, the commit word's
//! add, the `hit` count and a fixup's mark.
//!
//! On the CAS path each is the locked instruction it always was. On the
//! rseq path each is tried as a restartable sequence on the buffer's CPU
//! and, when the caller is elsewhere (or a remote update is under way),
//! done as a remote update: flag up, CPU fenced, the same locked
//! instruction. Either way the caller sees the semantics of the atomic
//! operation it asked for, with the orderings named at each call.

use crate::cpu_buffer::CpuBuffer;
use crate::sync::{AtomicU64, Ordering};

impl CpuBuffer {
    /// Compare-and-swap of `state` from `expected` to `new`: AcqRel on
    /// success, Acquire on failure, which returns the state found.
    ///
    /// On the rseq path the section's 16-byte store is a Release store and
    /// its loads are Acquire loads (x86_64 orders them so: TSO), and the
    /// section is a compiler barrier; the failure's state is loaded with
    /// Acquire. What a locked CAS adds beyond that, a full barrier, no step
    /// relies on (the reserve steps in `CpuBuffer::reserve` say what each
    /// ordering is for).
    #[inline(always)]
    pub(crate) fn cas_state(
        &self,
        expected: (u64, u64),
        new: (u64, u64),
    ) -> Result<(), (u64, u64)> {
        #[cfg(ringtrace_rseq)]
        if let Some(line) = self.path.fast() {
            return self.cas_state_on(line, expected, new);
        }
        self.hot
            .state
            .compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// `cas_state` on the rseq path, through the buffer's fast `line`.
    #[cfg(ringtrace_rseq)]
    #[inline(always)]
    pub(crate) fn cas_state_on(
        &self,
        line: &crate::rseq::FastLine,
        expected: (u64, u64),
        new: (u64, u64),
    ) -> Result<(), (u64, u64)> {
        use crate::rseq::section::{cas_state, Outcome};
        // SAFETY: SSE2, which every x86_64 CPU has.
        let packed = unsafe { core::arch::x86_64::_mm_set_epi64x(new.1 as i64, new.0 as i64) };
        // SAFETY: `line` is this buffer's fast line on the rseq path, whose
        // state is this buffer's live, 16-byte aligned pair which, while
        // the gate is open, only this buffer's sections on its CPU store to
        // (every other update is a remote one, below); AVX was checked when
        // the path was chosen.
        let outcome = unsafe { cas_state(line, expected.0, expected.1, packed) };
        if outcome == Outcome::Done {
            return Ok(());
        }
        self.cas_state_rare(outcome, expected, new)
    }

    /// `cas_state` when its section did not commit: out of line, so that
    /// the fast path stays small.
    #[cfg(ringtrace_rseq)]
    #[cold]
    #[inline(never)]
    fn cas_state_rare(
        &self,
        outcome: crate::rseq::section::Outcome,
        expected: (u64, u64),
        new: (u64, u64),
    ) -> Result<(), (u64, u64)> {
        use crate::rseq::section::{locked_cas_pair, Outcome};
        // Looked up again rather than passed: passing it made the fast
        // path store it to the stack before every section.
        let Some(line) = self.path.fast() else {
            return Err(self.hot.state.load(Ordering::Acquire));
        };
        let state = self.hot.state.as_ptr();
        if outcome == Outcome::Aborted {
            crate::rseq::section::count_abort();
        }
        let outcome = match outcome {
            // SAFETY: as in cas_state; a locked CAS on the CPU, atomic
            // against a remote's. After an abort too: it is as good as a
            // retry of the plain section, and keeps the retry out of line.
            Outcome::Gated | Outcome::Aborted => unsafe {
                locked_cas_pair(
                    line.rseq_offset(),
                    self.path.cpu(),
                    state,
                    expected.0,
                    expected.1,
                    new.0,
                    new.1,
                )
            },
            other => other,
        };
        match outcome {
            Outcome::Done => Ok(()),
            Outcome::Refused => Err(self.hot.state.load(Ordering::Acquire)),
            Outcome::OffCpu | Outcome::Gated | Outcome::Aborted => {
                let _remote = self.path.remote();
                self.hot
                    .state
                    .compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire)
            }
        }
    }

    /// A guess at `state` for step A of a reservation: the hints on the CAS
    /// path (a 128-bit load would be a locked instruction there), the state
    /// itself on the rseq path, where nothing else keeps the hints fresh.
    /// Possibly torn or stale: the CAS checks it.
    #[inline(always)]
    pub(crate) fn guess_state(&self) -> (u64, u64) {
        #[cfg(ringtrace_rseq)]
        if self.path.fast().is_some() {
            // SAFETY: the state is a live, 16-byte aligned pair.
            return unsafe { crate::rseq::section::load_halves(self.hot.state.as_ptr()) };
        }
        // Relaxed: only a guess (see `reserve`, step A).
        (
            self.hot.write_hint.load(Ordering::Relaxed),
            self.hot.ts_hint.load(Ordering::Relaxed),
        )
    }

    /// Whether the hints need refreshing after a successful CAS: only the
    /// CAS path reads them.
    #[inline(always)]
    pub(crate) fn keeps_hints(&self) -> bool {
        #[cfg(ringtrace_rseq)]
        if self.path.fast().is_some() {
            return false;
        }
        true
    }

    /// Adds `value` to `line`'s commit word and, for the end of a
    /// reservation (`hits` 1: an event or a discard record), counts a hit;
    /// `hits` 0 for a page's header or padding. Returns whether the page
    /// had been reclaimed by a fixup before the add (a commit then counts
    /// its event as lost). Release: see `CpuBuffer::commit_bytes`.
    ///
    /// On the CAS path the hit goes to the hot line's `hit` (Relaxed: a
    /// statistic, see RareCounters::bump). On the rseq path one section
    /// adds to the commit word and to the page's `hits` beside it in one
    /// 16-byte store (see [`crate::meta::CommitLine`]): a commit is one
    /// section, not two.
    #[inline(always)]
    pub(crate) fn add_to_line(
        &self,
        line: &crate::meta::CommitLine,
        value: u64,
        hits: u64,
    ) -> bool {
        #[cfg(ringtrace_rseq)]
        if let Some(fast) = self.path.fast() {
            use crate::rseq::section::{add_pair_unless, Outcome};
            // SAFETY: a commit line of this buffer, live as the buffer is,
            // 16-aligned (CommitLine's repr). While the gate is open its
            // word changes only by this buffer's sections on its CPU and by
            // claims' compare-and-swaps, which expect a complete or OPENING
            // page, and a page with an add pending is neither, so no claim
            // can land between a section's load and its store; a fixup's
            // mark is a remote update. Its hits change only by this
            // buffer's sections on its CPU. Refused when the page is
            // RECLAIMED: the add is then made by the rare path, as a
            // fixup's page is rare.
            let outcome =
                unsafe { add_pair_unless(fast, line, value, hits, crate::meta::RECLAIMED) };
            if outcome == Outcome::Done {
                return false;
            }
            return self.add_to_line_rare(outcome, line, value, hits);
        }
        let before = line.word.fetch_add(value, Ordering::Release);
        if hits != 0 {
            self.hot.hit.fetch_add(hits, Ordering::Relaxed);
        }
        before & crate::meta::RECLAIMED != 0
    }

    /// `add_to_line` when its section did not commit: on the CPU, the two
    /// adds one by one, each a locked section (a remote update for the
    /// second if the thread has moved since); off it, both adds under one
    /// remote update, so that a commit from another CPU costs one system
    /// call, not two.
    #[cfg(ringtrace_rseq)]
    #[cold]
    #[inline(never)]
    pub(crate) fn add_to_line_rare(
        &self,
        outcome: crate::rseq::section::Outcome,
        line: &crate::meta::CommitLine,
        value: u64,
        hits: u64,
    ) -> bool {
        use crate::rseq::section::Outcome;
        if outcome == Outcome::Aborted {
            crate::rseq::section::count_abort();
        }
        if let Some(before) = self.locked_add_on_cpu(&line.word, value) {
            if hits != 0 {
                self.add_rare(Outcome::Gated, &line.hits, hits, Ordering::Relaxed);
            }
            return before & crate::meta::RECLAIMED != 0;
        }
        // Release for the commit word, as the section's store; the hits
        // are a statistic. Both words are the buffer's, so one remote
        // update covers them.
        let _remote = self.path.remote();
        let before = line.word.fetch_add(value, Ordering::Release);
        if hits != 0 {
            line.hits.fetch_add(hits, Ordering::Relaxed);
        }
        before & crate::meta::RECLAIMED != 0
    }

    /// An add whose plain section did not commit (`outcome`: the gate shut
    /// (a remote update under way, or the thread off the CPU), a reclaimed
    /// page, or an abort, which is counted here): a locked add in a section
    /// on the CPU, else a remote update. Returns the word before.
    #[cfg(ringtrace_rseq)]
    #[cold]
    #[inline(never)]
    fn add_rare(
        &self,
        outcome: crate::rseq::section::Outcome,
        word: &AtomicU64,
        value: u64,
        order: Ordering,
    ) -> u64 {
        if outcome == crate::rseq::section::Outcome::Aborted {
            crate::rseq::section::count_abort();
        }
        if let Some(before) = self.locked_add_on_cpu(word, value) {
            return before;
        }
        let _remote = self.path.remote();
        word.fetch_add(value, order)
    }

    /// Adds `value` to `word`, one of this buffer's words, by a locked add
    /// in a section on the buffer's CPU; `None` if the thread is not on it
    /// (or the buffer is on the CAS path), nothing added then. Returns the
    /// word before.
    #[cfg(ringtrace_rseq)]
    fn locked_add_on_cpu(&self, word: &AtomicU64, value: u64) -> Option<u64> {
        let fast = self.path.fast()?;
        // SAFETY: `word` is a live word of this buffer; a locked add on
        // the CPU is atomic against a remote's and a plain section's.
        unsafe {
            crate::rseq::section::locked_add(
                fast.rseq_offset(),
                self.path.cpu(),
                word.as_ptr(),
                value,
            )
        }
    }

    /// For a whole event about to be written on this buffer: on the rseq
    /// path from a thread not on the buffer's CPU, one remote update held
    /// across its reserve and its commit, inside which their own remote
    /// updates make no system call (see `RemoteUpdate::begin`): one
    /// `membarrier` for the event, not two. `None` on the CPU (or on the
    /// CAS path), where the event makes no remote update unless the thread
    /// moves, and then makes its own.
    #[cfg(ringtrace_rseq)]
    pub(crate) fn remote_event(&self) -> Option<crate::rseq::remote::RemoteUpdate<'_>> {
        self.path.fast()?;
        (crate::cpu::current_cpu() != self.path.cpu() as usize).then(|| self.path.remote())
    }

    /// Sets `bits` in commit word `word` for a fixup; returns the word
    /// before. AcqRel, as the fixup needs (see `reclaim`). On the rseq path
    /// always a remote update: the fixup runs on the reader's CPU, and a
    /// late commit's section must not overwrite the mark.
    pub(crate) fn mark_commit(&self, word: &AtomicU64, bits: u64) -> u64 {
        #[cfg(ringtrace_rseq)]
        if self.path.fast().is_some() {
            let _remote = self.path.remote();
            return word.fetch_or(bits, Ordering::AcqRel);
        }
        word.fetch_or(bits, Ordering::AcqRel)
    }

    /// The write path this buffer's writers take.
    pub fn write_path(&self) -> crate::WritePath {
        self.path.path()
    }

    /// Updates of this buffer's per-CPU words that came from off its CPU
    /// on the rseq path (a writer that migrated between reserve and
    /// commit, `reserve_on` another CPU, a flush or fixup from a reader):
    /// each costs a membarrier system call. Always 0 on the CAS path.
    /// Those made in shared mode make none and are not counted here (see
    /// [`shared_updates`](Self::shared_updates)).
    pub fn remote_updates(&self) -> u64 {
        self.path.remote_updates()
    }

    /// Times this buffer went into shared mode on the rseq path: when it
    /// gets remote updates often (64 system calls within 10 ms), its gate
    /// is held shut, every writer on its CPU uses locked instructions (the
    /// CAS path's cost) and remote updates make no system call; it goes
    /// back once 16 pages in a row, over 50 ms or more, have opened without
    /// a remote update.
    /// So a design that writes to other CPUs' buffers all the time costs
    /// about what the CAS path costs, not a system call an event. Always 0
    /// on the CAS path.
    pub fn shared_mode_entries(&self) -> u64 {
        self.path.shared_mode_entries()
    }

    /// Remote updates made in shared mode (see
    /// [`shared_mode_entries`](Self::shared_mode_entries)), which made no
    /// system call.
    pub fn shared_updates(&self) -> u64 {
        self.path.shared_updates()
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    target_arch = "x86_64",
    not(loom),
    not(miri)
))]
mod tests {
    use crate::{RingBuffer, RingConfig, WritePath};
    use ringtrace_clock::Counter;

    use crate::cpu::pin_for_test as pin;

    fn rseq_ring() -> Option<RingBuffer<Counter>> {
        let config = RingConfig::default()
            .page_size(256)
            .per_cpu_bytes(64 * 1024)
            .write_path(WritePath::Rseq);
        RingBuffer::new(config, Counter::new()).ok()
    }

    #[test]
    fn with_the_remote_flag_up_writers_on_the_cpu_use_locked_sections_not_system_calls() {
        let Some(ring) = rseq_ring() else {
            eprintln!("skipped: {:?}", crate::rseq::unavailable());
            return;
        };
        let cpu = crate::cpu::current_cpu();
        if !pin(cpu) {
            return;
        }
        let b = ring.cpu_buffer(cpu).unwrap();
        b.path.hold_flag(true);
        // Enough events to cross pages: the slow path's CAS and commits too.
        for i in 0..2_000u32 {
            ring.write_on(cpu, &i.to_le_bytes()).unwrap();
        }
        b.path.hold_flag(false);
        assert_eq!(
            b.remote_updates(),
            0,
            "a flagged section made a system call"
        );
        for i in 0..2_000u32 {
            ring.write_on(cpu, &i.to_le_bytes()).unwrap();
        }
        assert_eq!(b.remote_updates(), 0);
        let s = ring.stats();
        assert_eq!(s.hit, 4_000);
        let mut n = 0u32;
        while let Some(e) = b.read_event() {
            assert_eq!(e.payload, (n % 2_000).to_le_bytes());
            n += 1;
        }
        assert_eq!(u64::from(n) + ring.stats().overrun, 4_000);
    }

    /// An rseq ring, this thread pinned to its CPU, and another CPU's
    /// number; `None` where that cannot be had.
    fn pinned_beside_another_cpu() -> Option<(RingBuffer<Counter>, usize)> {
        let ring = rseq_ring()?;
        let cpu = crate::cpu::current_cpu();
        if ring.cpus() < 2 || !pin(cpu) {
            return None;
        }
        let other = (cpu + 1) % ring.cpus();
        Some((ring, other))
    }

    #[test]
    fn writes_to_another_cpus_buffer_are_remote_updates_and_land_exactly() {
        let Some((ring, other)) = pinned_beside_another_cpu() else {
            return;
        };
        for i in 0..100u32 {
            ring.write_on(other, &i.to_le_bytes()).unwrap();
        }
        let b = ring.cpu_buffer(other).unwrap();
        // Reserve (state), then commit word and hit under one: two each,
        // and a few more as pages open (their headers' commits); the
        // buffer goes shared after 64 with a system call, and the rest
        // make none.
        let all = b.remote_updates() + b.shared_updates();
        assert!((200..220).contains(&all), "{all}");
        assert_eq!(b.shared_mode_entries(), 1);
        assert!(b.remote_updates() < 200, "{}", b.remote_updates());
        assert_eq!(b.stats().hit, 100);
        for i in 0..100u32 {
            assert_eq!(b.read_event().unwrap().payload, i.to_le_bytes());
        }
    }

    #[test]
    fn a_buffer_written_from_another_cpu_often_goes_shared_and_back_when_that_stops() {
        let Some((ring, other)) = pinned_beside_another_cpu() else {
            return;
        };
        let b = ring.cpu_buffer(other).unwrap();
        for i in 0..1_000u32 {
            ring.write_on(other, &i.to_le_bytes()).unwrap();
        }
        assert_eq!(b.shared_mode_entries(), 1);
        // Entered after 64 system calls (more only if this thread lost its
        // CPU for the 10 ms window); the rest of the 2,000 updates made
        // none.
        let fenced = b.remote_updates();
        assert!(fenced < 400, "{fenced}");
        assert!(b.shared_updates() > 1_600, "{}", b.shared_updates());
        // The CPU's own writers, with the gate shut, take the locked
        // sections: still exact.
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(pin(other));
                // 256-byte pages of 12-byte events: 17 pages and more
                // over 50 ms with no remote update end shared mode.
                for i in 1_000..1_250u32 {
                    ring.write_on(other, &i.to_le_bytes()).unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(60));
                for i in 1_250..1_500u32 {
                    ring.write_on(other, &i.to_le_bytes()).unwrap();
                }
            });
        });
        assert_eq!(b.remote_updates(), fenced, "on the CPU, no system call");
        // Back: a remote write fences again.
        ring.write_on(other, &1_500u32.to_le_bytes()).unwrap();
        assert!(b.remote_updates() > fenced);
        assert_eq!(b.shared_mode_entries(), 1);
        assert_eq!(b.stats().hit, 1_501);
        let mut next = 0u32;
        while let Some(e) = b.read_event() {
            let i = u32::from_le_bytes(e.payload.try_into().unwrap());
            assert!(i >= next, "{i} after {next}");
            next = i + 1;
        }
        assert_eq!(next, 1_501);
        assert_eq!(b.stats().hit, b.stats().accounted());
    }

    #[test]
    fn commits_on_the_cpu_count_hits_per_page_and_stats_and_recovery_sum_them() {
        let dir = std::env::temp_dir().join(format!("ringtrace-page-hits-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("hits.ring");
        let _ = std::fs::remove_file(&path);
        let config = RingConfig::default()
            .page_size(256)
            .per_cpu_bytes(16 * 1024)
            .write_path(WritePath::Rseq)
            .file(&path);
        let Ok(ring) = RingBuffer::new(config, Counter::new()) else {
            eprintln!("skipped: {:?}", crate::rseq::unavailable());
            return;
        };
        let cpu = crate::cpu::current_cpu();
        if !pin(cpu) {
            return;
        }
        for i in 0..300u32 {
            ring.write_on(cpu, &i.to_le_bytes()).unwrap();
        }
        // A dropped reservation ends too: a discard record, and a hit.
        drop(ring.reserve_on(cpu, 8).unwrap());
        let b = ring.cpu_buffer(cpu).unwrap();
        let on_pages: u64 = b
            .commits
            .iter()
            .map(|l| l.hits.load(std::sync::atomic::Ordering::Relaxed))
            .sum();
        let in_hot = b.hot.hit.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(b.remote_updates(), 0);
        assert_eq!(
            in_hot, 0,
            "a section commit counted its hit in the hot line"
        );
        assert_eq!(on_pages, 301);
        assert_eq!(b.stats().hit, 301);
        drop(ring);
        let rec = crate::file::recover(&path).unwrap();
        assert_eq!(rec.file_stats().hit, 301);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
