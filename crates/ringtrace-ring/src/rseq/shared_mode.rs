//! Shared mode: a buffer written from other CPUs often stops paying a
//! system call for each of those writes.
//!
//! Each remote update (see `remote`) raises the buffer's flag and fences
//! its CPU with `membarrier`: half a microsecond alone, ten or more when
//! several threads do it at once (the kernel serialises the fences). A
//! design that writes to other CPUs' buffers all the time would pay that
//! on every event. So when a buffer has made [`ENTER_UPDATES`] remote
//! updates within [`ENTER_WINDOW_NS`], the update that finds this raises
//! the flag once more, for good, and marks the buffer shared: from then
//! on the gate stays shut, every writer on the CPU takes the locked form
//! of its sections, and a remote update raises the flag, finds the mark
//! and skips the fence, as the CAS path would: locked instructions, no
//! system call.
//!
//! Why skipping is safe. The mark is set after a fence, by a thread whose
//! own raise was still up, and the lasting raise was added before that
//! one came down: the gate has been shut without a gap since a fence, so
//! no plain section has committed on the CPU since, and none can while it
//! stays shut. A remote updater raises its own flag first and then reads
//! the mark (both SeqCst); the mark is cleared (a SeqCst compare-exchange)
//! before the lasting raise is taken back (SeqCst). If the updater read
//! the mark set, its read precedes the clearing in the single order of
//! SeqCst operations, so its raise precedes the take-back: the gate stays
//! shut, without a gap, until the updater lowers its own flag, after its
//! update. If it read the mark clear, it fences as before.
//!
//! Leaving. Shared mode costs the CPU's own writers a locked instruction
//! for each update (the CAS path's cost), so it ends when remote use
//! stops: each page opened on the buffer looks at the count of remote
//! updates made in shared mode, and [`LEAVE_QUIET_PAGES`] pages in a row
//! over at least [`LEAVE_QUIET_NS`] with no new one clear the mark and
//! take the lasting raise back (any thread may: it is the end of a remote
//! update). The CPU's writers go back to plain sections.
//!
//! `tests/loom_rseq_protocol.rs` models entering, skipping and leaving
//! against a plain section, and shows that skipping the fence without the
//! mark loses an update.

// Counts only where there is no rseq path; their readers report 0.
#![cfg_attr(not(ringtrace_rseq), allow(dead_code))]

use crate::order;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a remote update adds to the gate word while it is under way: above
/// every CPU number (which `cpu_id` holds in 32 bits). The lasting raise
/// of shared mode is one more.
pub(crate) const REMOTE_ONE: u64 = 1 << 32;

/// Remote updates (with a fence) within [`ENTER_WINDOW_NS`] that make a
/// buffer shared.
pub(crate) const ENTER_UPDATES: u64 = 64;
/// The window, in ns of CLOCK_MONOTONIC: 64 in 10 ms is 6,400 system
/// calls a second, about 0.3% of a CPU alone and far more contended.
pub(crate) const ENTER_WINDOW_NS: u64 = 10_000_000;
/// Pages opened in a row without a remote update that end shared mode,
/// provided they took at least [`LEAVE_QUIET_NS`]: small pages open every
/// few events, and a count of pages alone would leave and enter again
/// between two bursts of remote writes.
pub(crate) const LEAVE_QUIET_PAGES: u64 = 16;
/// The time, in ns of CLOCK_MONOTONIC, with no remote update that ends
/// shared mode (with [`LEAVE_QUIET_PAGES`] pages opened).
pub(crate) const LEAVE_QUIET_NS: u64 = 50_000_000;

/// One buffer's remote-update counts and shared-mode state.
#[derive(Debug, Default)]
pub(crate) struct RemoteCounts {
    /// Remote updates made with a fence (each a system call).
    fenced: AtomicU64,
    /// Those made in shared mode (no system call).
    shared: AtomicU64,
    /// Set while the buffer is shared (see the module).
    mark: AtomicBool,
    /// Times the buffer became shared.
    entries: AtomicU64,
    /// The current window's start (CLOCK_MONOTONIC ns) and the fenced
    /// updates in it: a heuristic, so Relaxed and racy by design.
    window_start: AtomicU64,
    window_updates: AtomicU64,
    /// `shared` at the last page opened, and the pages opened since it
    /// last changed, and when (CLOCK_MONOTONIC ns) it last changed.
    seen_shared: AtomicU64,
    quiet_pages: AtomicU64,
    quiet_since: AtomicU64,
}

impl RemoteCounts {
    /// Remote updates made with a fence (system calls).
    pub(crate) fn fenced(&self) -> u64 {
        // Relaxed: a statistic.
        self.fenced.load(Ordering::Relaxed)
    }

    /// Remote updates made in shared mode, without a system call.
    pub(crate) fn shared(&self) -> u64 {
        self.shared.load(Ordering::Relaxed)
    }

    /// Times the buffer became shared.
    pub(crate) fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// For a remote updater whose own raise of `flag` is up: whether the
    /// buffer is shared, so that the fence can be skipped (see the
    /// module; SeqCst, after the raise).
    pub(crate) fn skip_fence(&self) -> bool {
        if self.mark.load(order::SHARED_MARK) {
            // Relaxed: a statistic (and the leaving heuristic's, which
            // tolerates a late view).
            self.shared.fetch_add(1, Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// After a fenced remote update's fence, its raise of `flag` still
    /// up: counts it, and makes the buffer shared if they come often.
    pub(crate) fn fenced_update(&self, flag: &AtomicU64) {
        // Relaxed here and for the window: a statistic and a heuristic;
        // what must be ordered (the lasting raise, the mark) is SeqCst.
        self.fenced.fetch_add(1, Ordering::Relaxed);
        let now = ringtrace_clock::monotonic_ns();
        let start = self.window_start.load(Ordering::Relaxed);
        if now.wrapping_sub(start) > ENTER_WINDOW_NS {
            self.window_start.store(now, Ordering::Relaxed);
            self.window_updates.store(1, Ordering::Relaxed);
            return;
        }
        if self.window_updates.fetch_add(1, Ordering::Relaxed) + 1 < ENTER_UPDATES {
            return;
        }
        self.window_updates.store(0, Ordering::Relaxed);
        // The lasting raise first, while ours is still up (no gap since
        // our fence); then the mark. Another updater may enter at once:
        // the loser takes its raise back.
        flag.fetch_add(REMOTE_ONE, order::GATE_RAISE);
        if self
            .mark
            .compare_exchange(false, true, order::SHARED_MARK, order::SHARED_MARK)
            .is_ok()
        {
            // Relaxed: statistics and the leaving heuristic's start.
            self.entries.fetch_add(1, Ordering::Relaxed);
            self.seen_shared
                .store(self.shared.load(Ordering::Relaxed), Ordering::Relaxed);
            self.quiet_pages.store(0, Ordering::Relaxed);
            self.quiet_since.store(now, Ordering::Relaxed);
        } else {
            flag.fetch_sub(REMOTE_ONE, order::GATE_RAISE);
        }
    }

    /// A page was opened on the buffer: ends shared mode after
    /// [`LEAVE_QUIET_PAGES`] pages in a row and [`LEAVE_QUIET_NS`] with no
    /// remote update. (Relaxed throughout: a heuristic; leaving is safe
    /// whenever it happens.)
    pub(crate) fn page_opened(&self, flag: &AtomicU64) {
        if !self.mark.load(Ordering::Relaxed) {
            return;
        }
        let shared = self.shared.load(Ordering::Relaxed);
        let now = ringtrace_clock::monotonic_ns();
        if self.seen_shared.swap(shared, Ordering::Relaxed) != shared {
            self.quiet_pages.store(0, Ordering::Relaxed);
            self.quiet_since.store(now, Ordering::Relaxed);
            return;
        }
        if self.quiet_pages.fetch_add(1, Ordering::Relaxed) + 1 < LEAVE_QUIET_PAGES
            || now.wrapping_sub(self.quiet_since.load(Ordering::Relaxed)) < LEAVE_QUIET_NS
        {
            return;
        }
        self.leave(flag);
    }

    /// Clears the mark, then takes the lasting raise back (see the
    /// module); a no-op if another thread left first.
    pub(crate) fn leave(&self, flag: &AtomicU64) {
        if self
            .mark
            .compare_exchange(true, false, order::SHARED_MARK, order::SHARED_MARK)
            .is_ok()
        {
            flag.fetch_sub(REMOTE_ONE, order::GATE_RAISE);
        }
    }
}
