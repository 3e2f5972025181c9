//! The fixup of a page whose writer vanished between reserve and commit:
//! after a bounded wait (or at once, asked), the reader swaps a free page
//! into its slot, counts its unread events lost and quarantines it until
//! its late commits land.

use super::state::{skip_overwritten, ReaderState, Stuck};
use super::swap::swap_in_spare;
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta::{gen_of, Commit, Slot};
use crate::shared::SharedState;
use std::time::Instant;

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
/// std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap()); // its writer dies
/// for i in 0..20u64 {
///     ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap(); // the page closes
/// }
/// let b = ring.cpu_buffer(0).unwrap();
/// assert!(b.fixup());
/// let next = b.read_event().unwrap();
/// assert_eq!(next.lost_before, 17); // the dead writer's page-mates
/// let s = ring.stats();
/// assert_eq!((s.pages_quarantined, s.hit), (1, s.accounted()));
/// ```
pub(crate) fn fixup(s: &SharedState, st: &mut ReaderState) -> bool {
    skip_overwritten(s, st);
    let seq = st.seq;
    let slot = Slot::unpack(s.slot_of(seq).load(order::READER_SLOT_LOAD));
    if slot.gen != gen_of(seq, s.pages()) || !s.is_closed(seq) {
        return false;
    }
    let commit = Commit::unpack(s.commit_word(slot.phys).load(order::READER_COMMIT_LOAD));
    if commit.opening || commit.bytes == s.page_size() {
        // Complete (nothing to fix), or being claimed for the next lap,
        // which only a complete page can be.
        return false;
    }
    reclaim(s, st, seq, slot)
}

/// A closed page is missing a commit. Waits (returns false) until the
/// bound passes, then takes the page out. Returns true if it did.
pub(super) fn wait_or_fixup(s: &SharedState, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
    let Some(bound) = s.geometry().fixup_after else {
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
    reclaim(s, st, seq, slot)
}

/// Replaces the stuck page in `seq`'s slot with a free page, counts its
/// unread committed events as lost and marks it RECLAIMED so that late
/// commits count themselves. The stuck page is quarantined until every
/// byte of it is committed, then reused.
pub(super) fn reclaim(s: &SharedState, st: &mut ReaderState, seq: u64, slot: Slot) -> bool {
    // Keep one page back for swaps; without a second, no fixup. Pages
    // whose late commits have all landed are free again first, whatever
    // way the reader reads (by event, by page or only by fixups).
    recycle_quarantine(s, st);
    if st.free.len() < 2 {
        // The quarantine is full: dead writers hold every page it had.
        // Counted once per stuck page; the reader waits here.
        if st.refused != Some((seq, slot.phys)) {
            st.refused = Some((seq, slot.phys));
            RareCounters::bump(&s.rare().fixups_refused, 1);
        }
        return false;
    }
    if !swap_in_spare(s, st, seq, slot) {
        return false;
    }
    let before =
        Commit::unpack(s.mark_commit(s.commit_word(slot.phys), crate::page::meta::RECLAIMED));
    let lost = before.events.saturating_sub(slot.consumed);
    RareCounters::bump(&s.rare().lost, u64::from(lost));
    RareCounters::bump(&s.rare().pages_reclaimed, 1);
    if before.opening || before.bytes == s.page_size() {
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
pub(super) fn recycle_quarantine(s: &SharedState, st: &mut ReaderState) {
    if st.quarantine.is_empty() {
        return;
    }
    let page_size = s.page_size();
    let commits = s.commit_lines();
    let (done, waiting): (Vec<usize>, Vec<usize>) = st.quarantine.iter().partition(|&&p| {
        Commit::unpack(commits[p].word.load(order::READER_COMMIT_LOAD)).bytes == page_size
    });
    if !done.is_empty() {
        st.free.extend(done);
        st.quarantine = waiting;
    }
}
