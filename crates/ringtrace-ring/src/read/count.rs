//! The buffer's counts as a reader sees them: the statistics, and the
//! loss mark an event reports its losses against.

use super::fixup::recycle_quarantine;
use super::state::ReaderState;
use crate::order;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::shared::SharedState;
use crate::stats::Stats;
use crate::sync::Ordering;
use std::time::{Duration, Instant};

/// How long a reader waits for an overrunning claim to finish counting
/// before it reports the losses it can see (see `read::count::loss_mark`).
const LOSS_MARK_WAIT: Duration = Duration::from_millis(20);

/// This buffer's counters; `entries` is computed under the reader lock.
pub(crate) fn stats(s: &SharedState, st: &mut ReaderState) -> Stats {
    // So that `pages_quarantined` does not count pages whose late
    // commit has landed.
    recycle_quarantine(s, st);
    let rare = s.rare();
    // Relaxed: statistics; see RareCounters::bump.
    Stats {
        hit: hits(s),
        missed: rare.missed.load(Ordering::Relaxed),
        busy: rare.busy.load(Ordering::Relaxed),
        too_large: rare.too_large.load(Ordering::Relaxed),
        overrun: rare.overrun.load(Ordering::Relaxed),
        read: rare.read.load(Ordering::Relaxed),
        entries: entries(s, st),
        discarded: rare.discarded.load(Ordering::Relaxed),
        lost: rare.lost.load(Ordering::Relaxed),
        ts_fixups: rare.ts_fixups.load(Ordering::Relaxed),
        pages_reclaimed: rare.pages_reclaimed.load(Ordering::Relaxed),
        pages_quarantined: st.quarantine.len() as u64,
        fixups_refused: rare.fixups_refused.load(Ordering::Relaxed),
        blocked: rare.blocked.load(Ordering::Relaxed),
        timed_out: rare.timed_out.load(Ordering::Relaxed),
        preparing: rare.preparing.load(Ordering::Relaxed),
        pages_stepped_over: s.stepped_over(),
    }
}

/// `hit`: the hot line's count plus every page's `hits` (see
/// [`crate::page::meta::CommitLine`]). Relaxed: a statistic, exact when no
/// writer is active.
pub(super) fn hits(s: &SharedState) -> u64 {
    s.commit_lines()
        .iter()
        .map(|line| line.hits.load(Ordering::Relaxed))
        .fold(s.hot().hit.load(Ordering::Relaxed), u64::wrapping_add)
}

/// Committed events not yet consumed: exact when no writer is active.
pub(super) fn entries(s: &SharedState, st: &ReaderState) -> u64 {
    let (write, _) = s.hot().state.load(order::READER_STATE_LOAD);
    let tail = s.tail_seq(write);
    let n = s.pages() as u64;
    let first = st.seq.max(tail.saturating_sub(n - 1));
    let mut entries = st.taken.as_ref().map_or(0, |t| u64::from(t.remaining));
    let taken_seq = st.taken.as_ref().map(|t| t.seq);
    for seq in first..=tail {
        if Some(seq) == taken_seq {
            continue;
        }
        let slot = Slot::unpack(s.slot_of(seq).load(order::READER_SLOT_LOAD));
        if slot.gen != gen_of(seq, s.pages()) {
            continue;
        }
        let commit = Commit::unpack(s.commit_word(slot.phys).load(order::READER_COMMIT_LOAD));
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
pub(super) fn loss_mark(s: &SharedState) -> u64 {
    let rare = s.rare();
    let deadline = Instant::now() + LOSS_MARK_WAIT;
    let mut spins = 0u32;
    loop {
        let done = rare.overrun_claims_done.load(order::LOSS_MARK_LOAD);
        let total =
            rare.overrun.load(order::LOSS_MARK_LOAD) + rare.lost.load(order::LOSS_MARK_LOAD);
        let started = rare.overrun_claims_started.load(order::LOSS_MARK_LOAD);
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
